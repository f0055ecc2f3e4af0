"""batch_norm as one Function (step 58) against its composed definition and PyTorch.

``Fc.batch_norm`` computes the gradient in closed form (on the arrays in a plain backward,
from differentiable functions when backward is recorded or a hook watches);
``Fc.batch_norm_simple`` gets it from the graph of about nine functions. Both must give the
same outputs, running statistics, first and second derivatives, and match
``torch.nn.functional.batch_norm`` in training and in evaluation.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions_conv as Fc
from dezero_like.hooks import FunctionHook

torch = pytest.importorskip("torch")
tF = torch.nn.functional

SHAPES = [(6, 3), (4, 3, 5, 5)]
TOL = {np.float64: dict(rtol=1e-10, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-4),
       np.float16: dict(rtol=1e-2, atol=1e-2)}


def _inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    C = shape[1]
    x = (rng.normal(loc=1.5, scale=2.0, size=shape)).astype(dtype)
    g, b = rng.normal(size=C).astype(dtype), rng.normal(size=C).astype(dtype)
    w = rng.normal(size=shape).astype(dtype)
    mean, var = rng.normal(size=C).astype(dtype), rng.uniform(0.5, 2, size=C).astype(dtype)
    return x, g, b, w, mean, var


def _ours(bn, x, g, b, w, mean, var, train, create_graph=False):
    """y, (dx, dgamma, dbeta) of sum(w * y), the running statistics after the call."""
    xv, gv, bv = dz.Variable(x), dz.Variable(g), dz.Variable(b)
    mean, var = mean.copy(), var.copy()
    with dz.using_config("train", train):
        y = bn(xv, gv, bv, mean, var, 0.8, 1e-5)
    (y * w).sum().backward(create_graph=create_graph)
    return [y.data, xv.grad.data, gv.grad.data, bv.grad.data, mean, var]


def _torch(x, g, b, w, mean, var, train):
    xt, gt, bt = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (x, g, b))
    mt, vt = torch.tensor(mean.astype(np.float64)), torch.tensor(var.astype(np.float64))
    y = tF.batch_norm(xt, mt, vt, gt, bt, training=train, momentum=0.2, eps=1e-5)
    (y * torch.tensor(w.astype(np.float64))).sum().backward()
    return [y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy(), bt.grad.numpy(),
            mt.numpy(), vt.numpy()]


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16],
                         ids=["f64", "f32", "f16"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fused_matches_composed_and_torch(shape, dtype, train):
    args = _inputs(shape, dtype)
    fused = _ours(Fc.batch_norm, *args, train)
    composed = _ours(Fc.batch_norm_simple, *args, train)
    theirs = _torch(*args, train)
    names = ["y", "dx", "dgamma", "dbeta", "running mean", "running var"]
    for name, a, c, t in zip(names, fused, composed, theirs):
        assert a.dtype == c.dtype == dtype, name
        np.testing.assert_allclose(a.astype(np.float64), c.astype(np.float64),
                                   **TOL[dtype], err_msg=f"{name}: fused vs composed")
        np.testing.assert_allclose(a.astype(np.float64), t, **TOL[dtype],
                                   err_msg=f"{name}: fused vs torch")


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_second_derivatives_match_composed_and_torch(shape, train):
    x, g, b, w, mean, var = _inputs(shape, np.float64, seed=1)

    def ours(bn):
        xv, gv, bv = dz.Variable(x), dz.Variable(g), dz.Variable(b)
        with dz.using_config("train", train):
            y = bn(xv, gv, bv, mean.copy(), var.copy(), 0.8, 1e-5)
        (y * y * w).sum().backward(create_graph=True)
        gx, gg = xv.grad, gv.grad
        for v in (xv, gv, bv):
            v.cleargrad()
        ((gx * gx).sum() + (gg * gg).sum()).backward()
        return [gx.data, gg.data, xv.grad.data, gv.grad.data, bv.grad.data]

    xt, gt, bt = (torch.tensor(a, requires_grad=True) for a in (x, g, b))
    y = tF.batch_norm(xt, torch.tensor(mean), torch.tensor(var), gt, bt, training=train,
                      momentum=0.2, eps=1e-5)
    gx, gg = torch.autograd.grad((y * y * torch.tensor(w)).sum(), (xt, gt), create_graph=True)
    ((gx * gx).sum() + (gg * gg).sum()).backward()
    theirs = [gx.detach().numpy(), gg.detach().numpy(), xt.grad.numpy(), gt.grad.numpy(),
              bt.grad.numpy()]
    for a, c, t in zip(ours(Fc.batch_norm), ours(Fc.batch_norm_simple), theirs):
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(a, t, rtol=1e-9, atol=1e-9)


def test_gradient_check_of_every_input_in_both_modes():
    from dezero_like.utils import gradient_check

    x, g, b, w, mean, var = _inputs((5, 2, 3, 3), np.float64, seed=2)
    for train in (True, False):
        with dz.using_config("train", train):
            gradient_check(lambda v: Fc.batch_norm(v, g, b, mean.copy(), var.copy()) * w, x)
            gradient_check(lambda v: Fc.batch_norm(x, v, b, mean.copy(), var.copy()) * w, g)
            gradient_check(lambda v: Fc.batch_norm(x, g, v, mean.copy(), var.copy()) * w, b)


def test_one_function_in_the_graph_and_only_the_gradients_asked_for():
    x, g, b, w, mean, var = _inputs((4, 3, 2, 2), np.float64)
    xv = dz.Variable(x)
    y = Fc.batch_norm(xv, g, b, mean, var)  # gamma and beta as arrays: constants
    assert isinstance(y.creator, Fc.BatchNorm)
    assert y.creator.needs_input_grad == (True, False, False)
    gxs = y.creator.backward(dz.Variable(w))
    assert gxs[1] is None and gxs[2] is None and gxs[0].shape == x.shape
    (y * w).sum().backward()
    assert y.creator.xhat is None  # released with the graph's arrays
    simple = dz.Variable(x)
    (Fc.batch_norm_simple(simple, g, b, _inputs((4, 3, 2, 2), np.float64)[4], var) * w) \
        .sum().backward()
    np.testing.assert_allclose(xv.grad.data, simple.grad.data, rtol=1e-10, atol=1e-12)


def test_a_watching_hook_sees_the_recorded_formula_and_the_same_gradient():
    x, g, b, w, mean, var = _inputs((6, 3), np.float64)
    seen = []

    class Names(FunctionHook):
        def forward_preprocess(self, function, in_data):
            seen.append(type(function).__name__)

    plain = _ours(Fc.batch_norm, x, g, b, w, mean, var, True)
    with Names():
        watched = _ours(Fc.batch_norm, x, g, b, w, mean, var, True)
    assert "BatchNorm" in seen and "Sum" in seen  # backward ran as functions
    for a, c in zip(plain, watched):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


def test_integer_input_and_mixed_dtypes_give_what_the_composed_version_gives():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 255, size=(4, 3), dtype=np.uint8)
    for gd, sd in ((np.float64, np.float64), (np.float32, np.float64), (np.float64, np.float32)):
        g, b = np.ones(3, gd), np.zeros(3, gd)
        for train in (True, False):
            outs = []
            for bn in (Fc.batch_norm, Fc.batch_norm_simple):
                mean, var = np.zeros(3, sd), np.ones(3, sd)
                with dz.using_config("train", train):
                    outs.append((bn(x, g, b, mean, var), mean))
            (y1, m1), (y2, m2) = outs
            assert y1.dtype == y2.dtype
            np.testing.assert_allclose(y1.data, y2.data, rtol=1e-6)
            np.testing.assert_allclose(m1, m2, rtol=1e-6)


def test_the_book_spelling_and_the_checks_are_kept():
    assert Fc.batch_nrom is Fc.batch_norm
    with pytest.raises(ValueError, match="more than one value per channel"):
        Fc.batch_norm(np.ones((1, 3)), np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="decay must be in"):
        Fc.BatchNorm(np.zeros(3), np.ones(3), decay=1.5)


@pytest.mark.parametrize("shape", [(0, 3, 2, 2), (0, 3, 4), (2, 0, 2, 2)], ids=str)
def test_an_empty_batch_in_test_mode_has_empty_gradients_as_in_the_composed_version(shape):
    # the per-channel sums as a batched matrix product reshaped to (N, C, 1, -1), which an
    # empty array cannot infer
    C = shape[1]
    grads = []
    for bn in (Fc.batch_norm, Fc.batch_norm_simple):
        xv, gv, bv = dz.Variable(np.zeros(shape)), dz.Variable(np.ones(C)), dz.Variable(np.zeros(C))
        with dz.test_mode():
            y = bn(xv, gv, bv, np.zeros(C), np.ones(C))
        (y * np.ones(shape)).sum().backward()  # a contiguous gradient
        grads.append([v.grad.data for v in (xv, gv, bv)])
    for a, c in zip(*grads):
        assert a.shape == c.shape
        np.testing.assert_array_equal(a, c)
