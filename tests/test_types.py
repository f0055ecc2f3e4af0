"""Every value and gradient the package produces is an array of the right dtype.

NumPy hands back a scalar (``np.float64``) for arithmetic on 0-d arrays; the
package must never let one into ``.data`` or ``.grad.data`` (step 09 promises
that data is always an array). A leaf's gradient has the leaf's dtype, as in
PyTorch, and is an ordinary writable array.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import FunctionHook
from dezero_like.models import MLP
from dezero_like.optimizers import SGD, ClipGrad, WeightDecay

DTYPES = [np.float16, np.float32, np.float64]


def _graphs():
    """(name, build) pairs: build(x, w) -> output, for a leaf x and a second leaf w."""
    return [
        ("paths_meet", lambda x, w: x * x + x),  # two gradients of x are summed
        ("three_paths", lambda x, w: x * w + x * 2.0 + F.sin(x)),
        ("shared_intermediate", lambda x, w: (lambda h: h * h + h * w)(x * 3.0)),
        ("float64_constant", lambda x, w: x * np.float64(2.0) + w),
        ("python_numbers", lambda x, w: 2.0 * x / 3 - 1 + x**2 - w),
        ("reductions", lambda x, w: F.sum(x * w) + F.max(x) * 0.5),
        ("exp_log_tanh", lambda x, w: F.log(F.exp(x) + 1.0) * F.tanh(w)),
        ("power_zero", lambda x, w: x**0 + w),
    ]


def _walk(v, seen=None):
    """Every Variable reachable from ``v`` through creators (live outputs and inputs)."""
    seen = {} if seen is None else seen
    stack = [v]
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen[id(u)] = u
        if u.creator is not None:
            for ref in u.creator.outputs:
                y = ref()
                if y is not None:
                    stack.append(y)
            stack.extend(u.creator.inputs)
    return list(seen.values())


def _check(v, dtype, what):
    if v.data is not None:
        assert type(v.data) is np.ndarray, f"{what}: data is {type(v.data).__name__}"
    if v.grad is not None:
        g = v.grad.data
        assert type(g) is np.ndarray, f"{what}: grad.data is {type(g).__name__}"
        if v.creator is None:  # a leaf
            assert g.dtype == v.data.dtype, f"{what}: leaf {v.data.dtype} got {g.dtype} grad"
            assert g.flags.writeable, f"{what}: the gradient is a read-only array"


class _Counter(FunctionHook):
    def __init__(self):
        self.calls = 0

    def backward_postprocess(self, function, in_grads, out_grads):
        self.calls += 1


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=["0d", "1d", "2d"])
@pytest.mark.parametrize("mode", ["plain", "create_graph", "retain_grad", "loss_scale", "hook"])
@pytest.mark.parametrize("name,build", _graphs(), ids=[n for n, _ in _graphs()])
def test_values_and_gradients_are_arrays_of_the_right_dtype(name, build, mode, shape, dtype):
    rng = np.random.default_rng(0)
    x = dz.Variable(rng.uniform(0.5, 1.5, size=shape).astype(dtype))
    w = dz.Variable(rng.uniform(0.5, 1.5, size=shape).astype(dtype))
    hook = _Counter()
    if mode == "hook":
        with hook:
            y = build(x, w)
            F.sum(y).backward()
        assert hook.calls > 0
    else:
        y = build(x, w)
        loss = F.sum(y)
        kwargs = {
            "plain": {},
            "create_graph": {"create_graph": True},
            "retain_grad": {"retain_grad": True},
            "loss_scale": {"loss_scale": np.float64(1024)},
        }[mode]
        loss.backward(**kwargs)
        if mode == "loss_scale":
            assert x.loss_scale == 1024
    nodes = _walk(y) + [x, w]
    for v in nodes:
        _check(v, dtype, f"{name}/{mode}")
    assert x.grad is not None
    if mode == "create_graph" and x.grad.requires_grad:  # differentiate the gradient again
        gx = x.grad
        x.cleargrad()
        w.cleargrad()
        F.sum(gx * gx).backward()
        for v in _walk(gx) + [x, w]:
            _check(v, dtype, f"{name}/second order")


def test_rosenbrock_gradient_prints_arrays():
    """Step 28's first line: two 0-d leaves, each reached by two paths."""
    x0, x1 = dz.Variable(np.array(0.0)), dz.Variable(np.array(2.0))
    y = 100 * (x1 - x0**2) ** 2 + (x0 - 1) ** 2
    y.backward()
    assert type(x0.grad.data) is np.ndarray and type(x1.grad.data) is np.ndarray
    assert repr((x0.grad.data, x1.grad.data)) == "(array(-2.), array(400.))"


def test_a_grad_can_be_edited_in_place():
    x = dz.Variable(np.ones((2, 3)))
    F.sum(x).backward()  # the backward of sum broadcasts: a read-only view before the fix
    x.grad.data *= 2
    assert np.array_equal(x.grad.data, np.full((2, 3), 2.0))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_float64_loss_scale_keeps_the_leaf_dtype(dtype):
    x = dz.Variable(np.ones(3, dtype))
    (x * 3.0).backward(gradient=np.ones(3, dtype), loss_scale=np.float64(1024))
    assert x.grad.dtype == dtype
    assert np.array_equal(x.grad.data, np.full(3, 3072, dtype))


def test_float64_constant_keeps_float32_gradient_with_create_graph():
    x = dz.Variable(np.array([1.0, 2.0], np.float32))
    y = F.sum(x * x * np.array([3.0, 4.0]))  # a float64 array promotes the product
    y.backward(create_graph=True)
    assert x.grad.dtype == np.float32
    gx = x.grad
    x.cleargrad()
    F.sum(gx * gx).backward()  # the cast back to float32 is differentiable
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.data, 8 * np.array([9.0, 16.0]) * x.data)


@pytest.mark.parametrize("shape", [(), (2, 2)])
def test_optimizer_hooks_keep_zero_d_gradients_arrays(shape):
    """Loss scaling, weight decay and clipping make new gradients: arrays, 0-d included."""
    model = MLP((1,))
    model(np.ones((1, 1), np.float32))
    opt = SGD(lr=0.1).setup(model)
    opt.add_hook(WeightDecay(1e-3))
    opt.add_hook(ClipGrad(1e-3))
    p = dz.Parameter(np.ones(shape, np.float32))
    model.extra = p
    (F.sum(p * 2.0) + F.sum(model(np.ones((1, 1), np.float32)))).backward(loss_scale=8.0)
    opt.update()
    for q in model.params():
        assert type(q.data) is np.ndarray and q.data.dtype == np.float32


@pytest.mark.parametrize("fn", [F.sigmoid, F.tanh, F.exp])
def test_integer_input_computes_in_float64_as_numpy_does(fn):
    """An integer array gives the float64 results NumPy's own ufuncs give (sigmoid computes in
    place, which an integer array cannot hold: it converts first, instead of failing)."""
    x = np.array([-2, 0, 3])
    y = fn(x)
    assert y.dtype == np.float64
    reference = {F.sigmoid: lambda a: 1 / (1 + np.exp(-a)), F.tanh: np.tanh, F.exp: np.exp}[fn]
    np.testing.assert_allclose(y.data, reference(x.astype(np.float64)), rtol=1e-15)


@pytest.mark.parametrize("build, expected", [
    (lambda x: x / 3, np.full(3, 1 / 3)),
    (lambda x: F.sum(F.sigmoid(x)), 1 / (1 + np.exp(-np.arange(1.0, 4.0))) ** 2
     * np.exp(-np.arange(1.0, 4.0))),
    (lambda x: F.sum(x * 2), np.full(3, 2)),
])
def test_an_integer_leaf_keeps_its_gradient_unrounded(build, expected):
    """Casting to the leaf's dtype would round 1/3 to 0: an integer leaf keeps its gradient's."""
    x = dz.Variable(np.array([1, 2, 3]))
    build(x).backward()
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)
