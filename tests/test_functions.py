"""Every differentiable function: float64 gradient checks over several shapes,
second derivatives, dtype preservation, numerical stability, and (when PyTorch
is installed) values and gradients compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

SHAPES = [(), (3,), (2, 3), (1, 4, 1)]


def away_from(rng, shape, points=(0.0,), margin=0.1, scale=2.0):
    """Random float64 data that keeps ``margin`` away from the kinks in ``points``."""
    x = rng.uniform(-scale, scale, size=shape)
    for p in points:
        near = np.abs(x - p) < margin
        x = np.where(near, p + np.where(x >= p, margin, -margin) * 2, x)
    return np.asarray(x, dtype=np.float64)


def distinct(rng, shape):
    """float64 data without ties (for max/min)."""
    n = int(np.prod(shape)) if shape else 1
    return (rng.permutation(n).astype(np.float64) * 0.5 + rng.uniform(0, 0.1, n)).reshape(shape)


ELEMENTWISE = {
    "square": (F.square, lambda r, s: r.normal(size=s)),
    "exp": (F.exp, lambda r, s: r.normal(size=s)),
    "log": (F.log, lambda r, s: r.uniform(0.5, 2.0, size=s)),
    "sin": (F.sin, lambda r, s: r.normal(size=s)),
    "cos": (F.cos, lambda r, s: r.normal(size=s)),
    "tanh": (F.tanh, lambda r, s: r.normal(size=s)),
    "sigmoid": (F.sigmoid, lambda r, s: r.normal(size=s)),
    "relu": (F.relu, lambda r, s: away_from(r, s)),
    "clip": (lambda x: F.clip(x, -0.5, 0.8), lambda r, s: away_from(r, s, (-0.5, 0.8))),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_gradient_check(name, shape, rng):
    f, make = ELEMENTWISE[name]
    x = np.asarray(make(rng, shape), dtype=np.float64)
    assert gradient_check(f, x)


def second_derivative(f, weight):
    """x -> d/dx sum(weight * f(x)), built with create_graph so it can be differentiated."""

    def g(x):
        y = F.sum(f(x) * weight)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()  # gradient_check reads x.grad after differentiating gx
        return gx

    return g


@pytest.mark.parametrize("name", sorted(set(ELEMENTWISE) - {"relu", "clip"}))
def test_elementwise_second_derivative(name, rng):
    f, make = ELEMENTWISE[name]
    x = np.asarray(make(rng, (2, 3)), dtype=np.float64)
    assert gradient_check(second_derivative(f, rng.normal(size=(2, 3))), x)


def test_relu_second_derivative_is_zero(rng):
    x = dz.Variable(away_from(rng, (3, 4)))
    y = F.sum(F.relu(x) ** 2)  # relu(x)**2 has second derivative 2 where x > 0
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    F.sum(gx).backward()
    np.testing.assert_allclose(x.grad.data, 2.0 * (x.data > 0))


@pytest.mark.parametrize(
    "shape,new_shape", [((2, 3), (6,)), ((2, 3), (3, 2)), ((1, 4, 1), (4,)), ((6,), (1, 2, 3))]
)
def test_reshape(shape, new_shape, rng):
    x = rng.normal(size=shape)
    assert gradient_check(F.reshape, x, new_shape)
    assert gradient_check(lambda v: v.reshape(*new_shape), x)
    assert F.reshape(dz.Variable(x), new_shape).shape == new_shape


@pytest.mark.parametrize(
    "shape,axes", [((2, 3), None), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4), (2, 0, 1)),
                   ((1, 4, 1), (-1, 0, 1))]
)
def test_transpose(shape, axes, rng):
    x = rng.normal(size=shape)
    weight = rng.normal(size=np.transpose(x, axes).shape)  # makes the position of each grad matter
    assert gradient_check(lambda v: F.transpose(v, axes) * weight, x)


@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [((2, 3), None, False), ((2, 3), 0, False), ((2, 3), 1, True), ((2, 3, 4), (0, 2), False),
     ((2, 3, 4), -1, True), ((1, 4, 1), 0, False), ((), None, False)],
)
def test_sum(shape, axis, keepdims, rng):
    x = rng.normal(size=shape)
    y_shape = np.sum(x, axis=axis, keepdims=keepdims).shape
    weight = rng.normal(size=y_shape)
    assert gradient_check(lambda v: F.sum(v, axis, keepdims) * weight, x)
    np.testing.assert_allclose(F.sum(dz.Variable(x), axis, keepdims).data,
                               np.sum(x, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize(
    "shape,target", [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), (1, 3)), ((4, 1, 3), (1, 3)),
                     ((2, 3), ()), ((2, 3), (1, 1))]
)
def test_sum_to_and_broadcast_to_are_transposes(shape, target, rng):
    x = rng.normal(size=shape)
    weight = rng.normal(size=target)
    assert gradient_check(lambda v: F.sum_to(v, target) * weight, x)
    small = rng.normal(size=target)
    big_weight = rng.normal(size=shape)
    assert gradient_check(lambda v: F.broadcast_to(v, shape) * big_weight, small)
    ref = x.sum(axis=tuple(range(len(shape) - len(target))))
    ref = ref.sum(axis=tuple(i for i, s in enumerate(target) if s == 1), keepdims=True)
    np.testing.assert_allclose(F.sum_to(dz.Variable(x), target).data, ref)


@pytest.mark.parametrize(
    "s0,s1", [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((1, 3), (4, 1)), ((3,), ())]
)
@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
def test_broadcasting_operators_sum_grads_back(op, s0, s1, rng):
    a = rng.uniform(0.5, 2.0, size=s0)
    b = rng.uniform(0.5, 2.0, size=s1)
    fn = {"add": lambda u, v: u + v, "mul": lambda u, v: u * v,
          "sub": lambda u, v: u - v, "div": lambda u, v: u / v}[op]
    assert gradient_check(lambda u: fn(u, dz.Variable(b)), a)
    assert gradient_check(lambda v: fn(dz.Variable(a), v), b)
    x0, x1 = dz.Variable(a), dz.Variable(b)
    fn(x0, x1).backward()
    assert x0.grad.shape == s0 and x1.grad.shape == s1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=3), st.data())
def test_broadcast_grads_have_input_shapes(shape, data):
    """Property: for any shape and any broadcast-compatible partner, grads match input shapes."""
    partner = [data.draw(st.sampled_from([1, s])) for s in shape]
    partner = partner[data.draw(st.integers(0, len(partner))):]
    a = dz.Variable(np.ones(shape))
    b = dz.Variable(np.full(partner, 2.0))
    F.sum(a * b + b).backward()
    assert a.grad.shape == tuple(shape) and b.grad.shape == tuple(partner)
    np.testing.assert_allclose(a.grad.data, 2.0)
    n_copies = int(np.prod(shape)) // max(int(np.prod(partner)), 1)
    np.testing.assert_allclose(b.grad.data, 2.0 * n_copies)


@pytest.mark.parametrize("s0,s1", [((2, 3), (3, 4)), ((1, 3), (3, 1)), ((4, 1), (1, 5))])
def test_matmul(s0, s1, rng):
    a, b = rng.normal(size=s0), rng.normal(size=s1)
    assert gradient_check(lambda u: F.matmul(u, dz.Variable(b)), a)
    assert gradient_check(lambda v: F.matmul(dz.Variable(a), v), b)
    assert gradient_check(lambda u: u @ dz.Variable(b), a)
    np.testing.assert_allclose(F.matmul(a, dz.Variable(b)).data, a @ b)


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("n,i,o", [(4, 3, 2), (1, 5, 1), (3, 1, 4)])
def test_linear(n, i, o, with_bias, rng):
    x, W, b = rng.normal(size=(n, i)), rng.normal(size=(i, o)), rng.normal(size=(o,))
    bv = dz.Variable(b) if with_bias else None
    assert gradient_check(lambda u: F.linear(u, dz.Variable(W), bv), x)
    assert gradient_check(lambda w: F.linear(dz.Variable(x), w, bv), W)
    if with_bias:
        assert gradient_check(lambda c: F.linear(dz.Variable(x), dz.Variable(W), c), b)
    expected = x @ W + (b if with_bias else 0)
    np.testing.assert_allclose(F.linear(x, dz.Variable(W), bv).data, expected)
    assert gradient_check(second_derivative(lambda u: F.linear(u, dz.Variable(W), bv) ** 2,
                                            rng.normal(size=(n, o))), x)


def test_linear_keeps_only_what_backward_reads(rng):
    x = dz.Variable(rng.normal(size=(4, 3)))
    # W is a constant: its gradient (which would read h) is not needed, so the
    # intermediate h is not kept; W (a leaf) is kept for h's gradient.
    h = F.exp(x)
    y = F.linear(h, dz.Variable(rng.normal(size=(3, 2)), requires_grad=False))
    assert y.creator.inputs[0].data is None
    assert y.creator.inputs[1].data is not None
    # W needs a gradient: now h must be kept.
    h2 = F.exp(x)
    y2 = F.linear(h2, dz.Variable(rng.normal(size=(3, 2))))
    assert y2.creator.inputs[0].data is not None
    F.sum(y + y2).backward()
    assert x.grad.shape == (4, 3)


@pytest.mark.parametrize("bias", ["1-d", "0-d", "none", "constant"])
def test_linears_plain_backward_makes_no_functions_and_the_same_numbers(bias, rng, monkeypatch):
    """A plain backward computes linear's gradients from the arrays (five Function objects per
    layer before); create_graph and hooks still see the functions. The numbers are equal."""
    x, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    b = {"1-d": rng.normal(size=2), "0-d": np.array(0.5), "none": None,
         "constant": dz.Variable(rng.normal(size=2), requires_grad=False)}[bias]
    seed = rng.normal(size=(4, 2))
    grads = {}
    calls = []
    original = dz.Function.__call__

    def counted(self, *inputs):
        calls.append(type(self).__name__)
        return original(self, *inputs)

    for mode in ("plain", "graph"):
        vs = [dz.Variable(x), dz.Variable(W)] + ([] if b is None else [
            b if isinstance(b, dz.Variable) else dz.Variable(b)])
        y = F.linear(*vs)
        calls.clear()
        monkeypatch.setattr(dz.Function, "__call__", counted)
        y.backward(gradient=seed, create_graph=(mode == "graph"))
        monkeypatch.undo()
        assert (calls == []) == (mode == "plain"), calls
        grads[mode] = [None if v.grad is None else v.grad.data for v in vs]
    for plain, graph in zip(grads["plain"], grads["graph"]):
        assert (plain is None) == (graph is None)
        if plain is not None:
            assert plain.dtype == graph.dtype and plain.shape == graph.shape
            np.testing.assert_array_equal(plain, graph)


def test_flatten(rng):
    x = rng.normal(size=(2, 3, 4))
    assert F.flatten(dz.Variable(x)).shape == (2, 12)
    assert gradient_check(lambda v: F.flatten(v) * np.arange(24).reshape(2, 12), x)


@pytest.mark.parametrize(
    "shape,axis,keepdims", [((5,), None, False), ((2, 3), 0, False), ((2, 3), 1, True),
                            ((2, 3, 4), (0, 2), False), ((1, 4, 1), -2, True)]
)
@pytest.mark.parametrize("fn", [F.max, F.min])
def test_max_min(fn, shape, axis, keepdims, rng):
    x = distinct(rng, shape)
    ref = (np.max if fn is F.max else np.min)(x, axis=axis, keepdims=keepdims)
    y = fn(dz.Variable(x), axis, keepdims)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.data, ref)
    weight = rng.normal(size=ref.shape)
    assert gradient_check(lambda v: fn(v, axis, keepdims) * weight, x)


@pytest.mark.parametrize("shape,axis", [((2, 3), 1), ((4, 2), 0), ((2, 3, 4), -1), ((1, 5), 1)])
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_and_log_softmax(fn, shape, axis, rng):
    x = rng.normal(size=shape)
    weight = rng.normal(size=shape)  # a plain sum of softmax is constant: weight it
    assert gradient_check(lambda v: fn(v, axis) * weight, x)
    assert gradient_check(second_derivative(lambda v: fn(v, axis), weight), x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    p = e / e.sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(fn(dz.Variable(x), axis).data,
                               p if fn is F.softmax else np.log(p), rtol=1e-7)


@pytest.mark.parametrize("n,c", [(4, 3), (1, 5), (6, 2)])
def test_softmax_cross_entropy(n, c, rng):
    x = rng.normal(size=(n, c)) * 3
    t = rng.integers(0, c, size=n)
    assert gradient_check(F.softmax_cross_entropy, x, t)
    assert gradient_check(second_derivative(lambda v: F.softmax_cross_entropy(v, t), 1.0), x)
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    expected = -np.log(p[np.arange(n), t]).mean()
    np.testing.assert_allclose(F.softmax_cross_entropy(x, t).data, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_cross_entropy_is_finite_for_huge_logits(dtype):
    x = dz.Variable(np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4], [1e4, 1e4, 1e4]], dtype))
    t = np.array([0, 0, 2])
    loss = F.softmax_cross_entropy(x, t)
    loss.backward()
    assert np.isfinite(loss.data) and np.all(np.isfinite(x.grad.data))
    # row 0 is right with certainty (loss 0), row 1 is wrong by 2e4 (loss 2e4 + log 2),
    # row 2 is a three-way tie (loss log 3)
    np.testing.assert_allclose(loss.data, (0 + 2e4 + np.log(2) + np.log(3)) / 3, rtol=1e-6)
    assert np.all(np.isfinite(F.softmax(x).data))
    assert np.all(np.isfinite(F.log_softmax(x).data))


def test_softmax_cross_entropy_rejects_bad_labels():
    x = dz.Variable(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="integer labels"):
        F.softmax_cross_entropy(x, np.eye(3)[:2])
    with pytest.raises(ValueError, match=r"\(N, C\)"):
        F.softmax_cross_entropy(dz.Variable(np.zeros(3)), np.array([0]))


@pytest.mark.parametrize("shape", [(4,), (3, 2), (5, 1)])
def test_mean_squared_error(shape, rng):
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    assert gradient_check(lambda u: F.mean_squared_error(u, dz.Variable(b)), a)
    assert gradient_check(lambda v: F.mean_squared_error(dz.Variable(a), v), b)
    np.testing.assert_allclose(F.mean_squared_error(a, dz.Variable(b)).data,
                               ((a - b) ** 2).sum() / len(a))


def test_dropout_train_and_test_mode(rng):
    x = rng.normal(size=(50, 40))

    def f(v):
        np.random.seed(1)  # the same mask for every evaluation of the numerical gradient
        return F.dropout(v, 0.3)

    assert gradient_check(f, x)
    y = f(dz.Variable(x)).data
    kept = y != 0
    assert 0.6 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], x[kept] / 0.7)
    with dz.test_mode():
        v = dz.Variable(x)
        assert F.dropout(v, 0.3) is v
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="dropout_ratio"):
            F.dropout(v, bad)
    v = dz.Variable(x)
    y = F.dropout(v, 1.0)  # everything dropped: zeros and a zero gradient, as in PyTorch
    y.backward(gradient=np.ones_like(x))
    assert not y.data.any() and not v.grad.data.any()


def test_accuracy_is_a_constant_variable():
    y = dz.Variable(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], np.float32))
    acc = F.accuracy(y, np.array([1, 0, 0, 0]))
    assert isinstance(acc, dz.Variable) and not acc.requires_grad and acc.creator is None
    assert float(acc.data) == pytest.approx(0.75)
    assert acc.dtype == np.float32


# ---- get_item ----------------------------------------------------------------


@pytest.mark.parametrize(
    "shape,index",
    [((5,), 2), ((5,), slice(1, 4)), ((3, 4), (slice(None), 1)), ((3, 4), np.array([0, 2, 0])),
     ((3, 4), (np.array([0, 0, 2]), np.array([1, 1, 3]))), ((3, 4), np.array([True, False, True])),
     ((2, 3, 4), (Ellipsis, 2)), ((2, 3, 4), (1, None, slice(None, None, -1)))],
    ids=["int", "slice", "column", "rows-repeated", "pairs-repeated", "bool", "ellipsis",
         "newaxis-reverse"],
)
def test_get_item(shape, index, rng):
    x = rng.normal(size=shape)
    weight = rng.normal(size=x[index].shape)
    assert gradient_check(lambda v: F.get_item(v, index) * weight, x)
    assert gradient_check(lambda v: v[index] * weight, x)
    assert gradient_check(second_derivative(lambda v: F.get_item(v, index) ** 3, weight), x)
    np.testing.assert_array_equal(F.get_item(dz.Variable(x), index).data, x[index])


def test_get_item_repeated_indices_accumulate():
    x = dz.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = x[[0, 0, 3, 0]]  # row 0 used three times
    y.backward()
    np.testing.assert_array_equal(x.grad.data[:, 0], [3, 0, 0, 1])
    assert x.grad.dtype == np.float32
    naive = np.zeros((4, 3))
    naive[[0, 0, 3, 0]] += 1  # what a plain += would give: one count per row
    assert naive[0, 0] == 1


def test_get_item_double_backprop_symmetry(rng):
    """GetItemGrad's backward is get_item: index and scatter are each other's transpose."""
    x = dz.Variable(rng.normal(size=(5,)))
    idx = np.array([1, 1, 4])
    y = F.sum(x[idx] ** 2)  # dy/dx_i = 2 * count_i * x_i ; d2y/dx_i2 = 2 * count_i
    y.backward(create_graph=True)
    gx = x.grad
    assert isinstance(gx.creator, F.GetItemGrad)
    counts = np.bincount(idx, minlength=5)
    np.testing.assert_allclose(gx.data, 2 * counts * x.data)
    x.cleargrad()
    F.sum(gx).backward()
    np.testing.assert_allclose(x.grad.data, 2.0 * counts)
    ggy = dz.Variable(rng.normal(size=(3,)))
    g = F.GetItemGrad(idx, (5,))(ggy)
    back = dz.Variable(rng.normal(size=(5,)))
    # <scatter(ggy), back> == <ggy, gather(back)>
    np.testing.assert_allclose((g.data * back.data).sum(), (ggy.data * back.data[idx]).sum())


def test_get_item_accepts_variable_index():
    x = dz.Variable(np.arange(4.0))
    y = x[dz.Variable(np.array([3, 3]), requires_grad=False)]
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad.data, [0, 0, 0, 2])


# ---- dtypes ------------------------------------------------------------------

FLOAT32_CASES = {
    **{k: (lambda f: (lambda x: f(x)))(v[0]) for k, v in ELEMENTWISE.items() if k != "log"},
    "log": lambda x: F.log(F.exp(x)),
    "reshape": lambda x: F.reshape(x, (6,)),
    "transpose": lambda x: F.transpose(x),
    "sum": lambda x: F.sum(x, axis=0),
    "sum_to": lambda x: F.sum_to(x, (1, 3)),
    "broadcast_to": lambda x: F.broadcast_to(x, (4, 2, 3)),
    "matmul": lambda x: F.matmul(x, dz.Variable(np.ones((3, 2), np.float32))),
    "linear": lambda x: F.linear(x, dz.Variable(np.ones((3, 2), np.float32)),
                                 dz.Variable(np.ones(2, np.float32))),
    "max": lambda x: F.max(x, axis=1),
    "min": lambda x: F.min(x),
    "softmax": F.softmax,
    "log_softmax": F.log_softmax,
    "softmax_cross_entropy": lambda x: F.softmax_cross_entropy(x, np.array([0, 2])),
    "mean_squared_error": lambda x: F.mean_squared_error(x, np.zeros((2, 3), np.float32)),
    "mean_squared_error_simple": lambda x: F.mean_squared_error_simple(
        x, np.zeros((2, 3), np.float32)),
    "average": lambda x: F.average(x, axis=-1),
    "expand_dims": lambda x: F.expand_dims(x, 1),
    "linear_simple": lambda x: F.linear_simple(x, dz.Variable(np.ones((3, 2), np.float32)),
                                               dz.Variable(np.ones(2, np.float32))),
    "sigmoid_simple": F.sigmoid_simple,
    "sigmoid_cross_entropy": lambda x: F.sigmoid_cross_entropy(x, BINARY_TARGETS[:2]),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(F.sigmoid(x), BINARY_TARGETS[:2]),
    "dropout": lambda x: F.dropout(x, 0.5),
    "get_item": lambda x: x[[1, 1]],
    "scalar_ops": lambda x: 2.0 * x / 3 - 1 + x ** 2,
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_in_float32_out_and_grads(name, rng):
    x = dz.Variable(rng.normal(size=(2, 3)).astype(np.float32))
    y = FLOAT32_CASES[name](x)
    assert y.dtype == np.float32
    F.sum(y).backward(create_graph=True)
    assert x.grad.dtype == np.float32


# ---- PyTorch as an oracle ------------------------------------------------------


TORCH_CASES = {
    "sigmoid": (F.sigmoid, "sigmoid"),
    "relu": (F.relu, "relu"),
    "tanh": (F.tanh, "tanh"),
    "softmax": (lambda x: F.softmax(x, 1), lambda t, x: t.softmax(x, 1)),
    "log_softmax": (lambda x: F.log_softmax(x, 1), lambda t, x: t.log_softmax(x, 1)),
    "max": (lambda x: F.max(x, axis=0), lambda t, x: t.amax(x, 0)),
    "clip": (lambda x: F.clip(x, -0.5, 0.5), lambda t, x: t.clamp(x, -0.5, 0.5)),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_matches_torch(name, rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle to compare")
    ours, theirs = TORCH_CASES[name]
    if isinstance(theirs, str):
        theirs = getattr(torch, theirs)
    else:
        theirs = (lambda f: lambda x: f(torch, x))(theirs)
    data = distinct(rng, (4, 5)) - 5.0
    weight = rng.normal(size=(4, 5))
    x = dz.Variable(data)
    y = ours(x)
    F.sum(y * weight[: y.shape[0]].reshape(-1)[: y.size].reshape(y.shape)).backward()
    xt = torch.tensor(data, requires_grad=True)
    yt = theirs(xt)
    wt = torch.tensor(weight[: yt.shape[0]].reshape(-1)[: yt.numel()].reshape(yt.shape))
    (yt * wt).sum().backward()
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_and_linear_match_torch(rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle to compare")
    x, W, b = rng.normal(size=(6, 4)), rng.normal(size=(4, 3)), rng.normal(size=3)
    t = rng.integers(0, 3, size=6)
    xv, Wv, bv = dz.Variable(x), dz.Variable(W), dz.Variable(b)
    loss = F.softmax_cross_entropy(F.linear(xv, Wv, bv), t)
    loss.backward()
    xt, Wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, W, b))
    lt = torch.nn.functional.cross_entropy(xt @ Wt + bt, torch.tensor(t))
    lt.backward()
    np.testing.assert_allclose(loss.data, lt.item(), rtol=1e-10)
    for ours, theirs in ((xv, xt), (Wv, Wt), (bv, bt)):
        np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---- GPU (CuPy) ------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_matches_cpu_including_repeated_get_item():
    if not dz.cuda.gpu_available():
        pytest.skip("no CUDA GPU with CuPy on this machine")
    rng = np.random.default_rng(0)
    data = rng.normal(size=(6, 4)).astype(np.float32)
    W = rng.normal(size=(4, 3)).astype(np.float32)
    idx = np.array([0, 0, 5, 2, 0, 5])
    t = np.array([0, 1, 2, 0, 1, 2])

    def run(to_device):
        x, w = dz.Variable(to_device(data)), dz.Variable(to_device(W))
        h = F.sigmoid(F.linear(x[to_device(idx)], w))
        loss = F.softmax_cross_entropy(h, to_device(t)) + F.sum(F.relu(x) * F.softmax(x))
        loss.backward()
        return [dz.cuda.as_numpy(a) for a in (loss.data, x.grad.data, w.grad.data)]

    for cpu, gpu in zip(run(lambda a: a), run(dz.cuda.as_cupy)):
        assert gpu.dtype == cpu.dtype
        np.testing.assert_allclose(gpu, cpu, rtol=1e-5, atol=1e-6)


def test_mean_squared_error_of_a_0d_pair_and_of_an_empty_batch():
    """A 0-d pair is one example (PyTorch: 1.0 for 1 against 0); an empty batch gives nan
    and an empty gradient, not a ZeroDivisionError in backward."""
    a = dz.Variable(np.array(1.0))
    loss = F.mean_squared_error(a, np.array(0.0))
    loss.backward()
    assert float(loss.data) == 1.0 and float(a.grad.data) == 2.0
    b = dz.Variable(np.zeros((0, 2)))
    with np.errstate(invalid="ignore"):
        loss = F.mean_squared_error(b, np.zeros((0, 2)))
    loss.backward()
    assert np.isnan(loss.data) and b.grad.shape == (0, 2)


def test_power_zero_has_a_zero_gradient_and_array_exponents_are_refused():
    """x**0 is constant: its gradient is 0 even for an infinite upstream gradient (as in
    PyTorch; 0 * inf would be nan). An array exponent gets a clear TypeError."""
    x = dz.Variable(np.array([0.0, 2.0]))
    (x**0).backward(gradient=np.array([np.inf, 1.0]))
    assert np.array_equal(x.grad.data, [0.0, 0.0])
    with pytest.raises(TypeError, match="exponent of \\*\\* must be a number.*F.exp"):
        x ** np.array([1.0, 2.0])


def test_clip_with_one_side_open_and_its_errors():
    x = np.array([-2.0, 0.5, 3.0])
    assert np.array_equal(F.clip(x, None, 1.0).data, [-2.0, 0.5, 1.0])
    assert np.array_equal(F.clip(x, 0.0, None).data, [0.0, 0.5, 3.0])
    with pytest.raises(ValueError, match="x_min or x_max"):
        F.clip(x, None, None)
    with pytest.raises(ValueError, match="x_min <= x_max"):
        F.clip(x, 1.0, 0.0)


def test_accuracy_refuses_one_hot_labels_with_a_hint():
    y = np.eye(3)
    assert float(F.accuracy(y, np.arange(3)).data) == 1.0
    with pytest.raises(ValueError, match=r"one label per row.*t.argmax\(axis=1\)"):
        F.accuracy(y, np.eye(3))


@pytest.mark.parametrize("labels", [np.array(["0", "1", "2"]), ["0", "1", "2"],
                                    np.array([None, 1, 2], dtype=object)])
def test_accuracy_refuses_labels_that_are_not_numbers(labels):
    """Label strings (read from a CSV file, say) never equal an argmax: 0 with no error."""
    with pytest.raises(TypeError, match=r"class indices as numbers.*t\.astype\(int\)"):
        F.accuracy(np.eye(3), labels)
    assert float(F.accuracy(np.eye(3), np.array([0.0, 1.0, 2.0])).data) == 1.0  # floats count


@pytest.mark.parametrize("t, names", [
    (np.zeros((5, 1), int), r"t\.reshape\(-1\)"),
    (np.eye(5, 3), r"t\.argmax\(axis=1\)"),
    (np.zeros(3, int), r"transposed"),
    (np.zeros(5), r"t\.astype\(int\)"),
])
def test_softmax_cross_entropy_names_the_likely_label_mistake(t, names):
    x = dz.Variable(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"pass class indices, not one-hot vectors.*" + names):
        F.softmax_cross_entropy(x, t)


# ---- the book's names added in steps 39-49 -----------------------------------------


@pytest.mark.parametrize(
    "shape,axis,keepdims",
    [((2, 3), None, False), ((2, 3), 0, False), ((2, 3), -1, True), ((2, 3, 4), (0, 2), False),
     ((2, 3, 4), (-1, 0), True), ((1, 4, 1), [0, 2], False), ((), None, False)],
)
def test_average_is_the_sum_over_the_count(shape, axis, keepdims, rng):
    x = rng.normal(size=shape)
    ref = np.mean(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    y = F.average(dz.Variable(x), axis, keepdims)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.data, ref)
    weight = rng.normal(size=ref.shape)
    assert gradient_check(lambda v: F.average(v, axis, keepdims) * weight, x)
    assert gradient_check(second_derivative(lambda v: F.average(v, axis, keepdims) ** 3, weight),
                          x)


def test_mean_is_average_and_an_empty_axis_gives_nan_as_numpy():
    assert F.mean is F.average
    x = dz.Variable(np.zeros((0, 3)))
    with np.errstate(invalid="ignore", divide="ignore"):
        y = F.mean(x, axis=0)
    assert y.shape == (3,) and np.isnan(y.data).all()
    assert F.mean(x, axis=1).shape == (0,)
    assert F.mean(np.arange(6).reshape(2, 3), axis=1).dtype == np.float64  # integers: float64
    assert F.mean(np.ones(4, np.float32)).dtype == np.float32


@pytest.mark.parametrize("shape,axis", [((2, 3), 0), ((2, 3), 1), ((2, 3), 2), ((2, 3), -1),
                                        ((2, 3), -3), ((), 0), ((2, 3), (0, -1)),
                                        ((4,), (2, 0))])
def test_expand_dims_matches_numpy(shape, axis, rng):
    x = rng.normal(size=shape)
    ref = np.expand_dims(x, axis)
    y = F.expand_dims(dz.Variable(x), axis)
    assert y.shape == ref.shape
    np.testing.assert_array_equal(y.data, ref)
    weight = rng.normal(size=ref.shape)
    assert gradient_check(lambda v: F.expand_dims(v, axis) * weight, x)


@pytest.mark.parametrize("axis, message", [(3, "out of range"), (-4, "out of range"),
                                           ((0, 0), "repeated"), ((1, -3), "repeated"),
                                           (1.0, "out of range")])
def test_expand_dims_refuses_a_bad_axis(axis, message):
    with pytest.raises(ValueError, match=message):
        F.expand_dims(np.zeros((2, 3)), axis)


@pytest.mark.parametrize("shape", [(4,), (3, 2), (5, 1), ()])
def test_mean_squared_error_simple_is_mean_squared_error(shape, rng):
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    np.testing.assert_allclose(F.mean_squared_error_simple(a, b).data,
                               F.mean_squared_error(a, b).data)
    assert gradient_check(lambda u: F.mean_squared_error_simple(u, dz.Variable(b)), a)
    assert gradient_check(lambda v: F.mean_squared_error_simple(dz.Variable(a), v), b)
    with pytest.raises(ValueError, match=r"same shape.*t.reshape\(y.shape\)"):
        F.mean_squared_error_simple(np.zeros((3, 1)), np.zeros(3))
    e = dz.Variable(np.zeros((0, 2)))  # an empty batch: nan and an empty gradient, as the other
    with np.errstate(invalid="ignore", divide="ignore"):
        loss = F.mean_squared_error_simple(e, np.zeros((0, 2)))
        loss.backward()
    assert np.isnan(loss.data) and e.grad.shape == (0, 2)


@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_simple_and_sigmoid_simple_agree_with_the_one_function_versions(with_bias, rng):
    x, W, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    bv = dz.Variable(b) if with_bias else None
    np.testing.assert_allclose(F.linear_simple(x, dz.Variable(W), bv).data,
                               F.linear(x, dz.Variable(W), bv).data)
    assert gradient_check(lambda u: F.linear_simple(u, dz.Variable(W), bv), x)
    assert gradient_check(lambda w: F.linear_simple(dz.Variable(x), w, bv), W)
    if with_bias:
        assert gradient_check(lambda c: F.linear_simple(dz.Variable(x), dz.Variable(W), c), b)
    np.testing.assert_allclose(F.sigmoid_simple(x).data, F.sigmoid(x).data)
    assert gradient_check(F.sigmoid_simple, x)
    assert gradient_check(second_derivative(F.sigmoid_simple, rng.normal(size=(4, 3))), x)


def test_sigmoid_simple_overflows_where_sigmoid_does_not():
    """The composed sigmoid gets the value right at -1000 but its gradient is nan (0 * inf)."""
    x = dz.Variable(np.array([-1000.0, 0.0]))
    with np.errstate(over="ignore", invalid="ignore"):
        y = F.sigmoid_simple(x)
        y.backward(gradient=np.ones(2))
    np.testing.assert_array_equal(y.data, [0.0, 0.5])
    assert np.isnan(x.grad.data[0]) and x.grad.data[1] == 0.25
    x = dz.Variable(np.array([-1000.0, 0.0]))
    F.sigmoid(x).backward(gradient=np.ones(2))
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.25])


BINARY_TARGETS = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.5], [0.9, 1.0, 0.0], [0.0, 0.2, 1.0]])


@pytest.mark.parametrize("shape", [(4, 3), (4, 1), (5,), ()])
def test_sigmoid_cross_entropy(shape, rng):
    x = rng.normal(size=shape) * 3
    t = rng.uniform(size=shape)
    assert gradient_check(lambda v: F.sigmoid_cross_entropy(v, t), x)
    assert gradient_check(second_derivative(lambda v: F.sigmoid_cross_entropy(v, t), 1.0), x)
    p = 1 / (1 + np.exp(-x))
    n = len(x) if x.ndim else 1
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum() / n  # the book's reduction
    np.testing.assert_allclose(F.sigmoid_cross_entropy(x, t).data, expected)


@pytest.mark.parametrize("shape", [(4, 3), (4, 1), (5,), ()])
def test_binary_cross_entropy(shape, rng):
    p = rng.uniform(0.05, 0.95, size=shape)
    t = rng.uniform(size=shape)
    assert gradient_check(lambda v: F.binary_cross_entropy(v, t), p)
    assert gradient_check(second_derivative(lambda v: F.binary_cross_entropy(v, t), 1.0), p)
    n = len(p) if p.ndim else 1
    expected = -(t * np.log(p) + (1 - t) * np.log(1 - p)).sum() / n
    np.testing.assert_allclose(F.binary_cross_entropy(p, t).data, expected)
    # the same numbers as sigmoid_cross_entropy of the logits
    x = np.log(p / (1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy(p, t).data,
                               F.sigmoid_cross_entropy(x, t).data)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_cross_entropy_is_exact_for_logits_of_a_thousand(dtype):
    x = dz.Variable(np.array([[1000.0, -1000.0], [1000.0, -1000.0]], dtype))
    t = np.array([[1, 0], [0, 1]])  # integer targets are fine: computed in x's dtype
    loss = F.sigmoid_cross_entropy(x, t)
    loss.backward(create_graph=True)
    # certain and right: 0; certain and wrong: the margin, 1000; N = 2 rows
    assert loss.dtype == dtype and float(loss.data) == 1000.0
    assert x.grad.dtype == dtype
    np.testing.assert_array_equal(x.grad.data, [[0.0, 0.0], [0.5, -0.5]])
    gx = x.grad
    x.cleargrad()
    F.sum(gx).backward()  # the second derivative sigmoid'(x) / N is 0 this far out
    assert np.all(np.isfinite(x.grad.data)) and not x.grad.data.any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_cross_entropy_at_p_zero_and_one_clamps_the_logs_as_pytorch(dtype):
    p = dz.Variable(np.array([[0.0, 1.0], [1.0, 0.0]], dtype))
    t = np.array([[0.0, 1.0], [0.0, 1.0]])
    with np.errstate(all="raise"):  # no log(0) or 0 * inf reaches NumPy
        loss = F.binary_cross_entropy(p, t)
        loss.backward()
    # right and certain: 0; wrong and certain: log clamped at -100; N = 2 rows
    assert loss.dtype == dtype and float(loss.data) == 100.0
    # (p - t) / max(p (1 - p), 1e-12) / N
    np.testing.assert_allclose(p.grad.data, [[0.0, 0.0], [5e11, -5e11]], rtol=1e-6)
    assert p.grad.dtype == dtype


def test_binary_losses_at_the_edges_match_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle to compare")
    tF = torch.nn.functional
    t = np.array([[0.0, 1.0, 0.0, 1.0, 0.5]])
    for ours, theirs, data in [
        (F.sigmoid_cross_entropy, tF.binary_cross_entropy_with_logits,
         np.array([[1000.0, -1000.0, -1000.0, 1000.0, 0.0]])),
        (F.binary_cross_entropy, tF.binary_cross_entropy,
         np.array([[0.0, 0.0, 1.0, 1.0, 1e-20]])),
    ]:
        v = dz.Variable(data.copy())
        loss = ours(v, t)
        loss.backward()
        vt = torch.tensor(data, requires_grad=True)
        lt = theirs(vt, torch.tensor(t), reduction="sum") / len(data)
        lt.backward()
        np.testing.assert_allclose(loss.data, lt.item(), rtol=1e-12)
        # PyTorch's 1e-12 is a float32 constant, 1 - 4e-9 of ours
        np.testing.assert_allclose(v.grad.data, vt.grad.numpy(), rtol=1e-8)


@pytest.mark.parametrize("fn", [F.sigmoid_cross_entropy, F.binary_cross_entropy])
def test_binary_losses_of_an_empty_batch_are_nan_with_an_empty_gradient(fn):
    x = dz.Variable(np.zeros((0, 3)))
    with np.errstate(invalid="ignore"):
        loss = fn(x, np.zeros((0, 3)))
    loss.backward()
    assert np.isnan(loss.data) and x.grad.shape == (0, 3)


@pytest.mark.parametrize("fn", [F.sigmoid_cross_entropy, F.binary_cross_entropy])
def test_binary_losses_refuse_targets_of_another_shape(fn):
    with pytest.raises(ValueError, match=r"targets of the input's shape.*t.reshape\(x.shape\)"):
        fn(dz.Variable(np.full((4, 1), 0.5)), np.ones(4))


@pytest.mark.parametrize("p, t, what", [(np.array([0.5, 1.5]), np.ones(2), "probabilities p"),
                                        (np.array([0.5, -3.0]), np.ones(2), "probabilities p"),
                                        (np.array([0.5, 0.5]), np.array([0.0, 2.0]), "targets t")])
def test_binary_cross_entropy_refuses_values_outside_zero_one(p, t, what):
    with pytest.raises(ValueError, match=what + r" in \[0, 1\].*sigmoid_cross_entropy"):
        F.binary_cross_entropy(dz.Variable(p), t)


def test_accuracy_of_an_empty_batch_is_nan_without_numpys_warning():
    """PyTorch's (pred == t).float().mean() of no rows is nan, silently; NumPy's mean warned
    "Mean of empty slice" and "invalid value encountered" for the same nan."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in (np.float32, np.float64):
            acc = F.accuracy(np.zeros((0, 3), dtype), np.zeros(0, np.int64))
            assert np.isnan(acc.data) and acc.dtype == dtype
