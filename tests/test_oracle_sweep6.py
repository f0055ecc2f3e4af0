"""A sixth sweep against PyTorch: edge cases the earlier sweeps left out.

Throwaway scripts compared values, gradients (both the plain backward and the one with
``create_graph``), second and third derivatives and dtypes with PyTorch for negative and
tuple axes, 0-d, empty and non-contiguous inputs, shape-1 broadcasting on both sides,
indexing (negative steps, repeated and boolean indices, ``...``, ``None``), ties, infinities
and extreme logits, convolution and pooling geometry, batch norm in both modes and the
recurrent cells. The first tests failed before the fix they name, or pin a difference that
``docs/pytorch.md`` lists; the rest keep the strongest of the cases that agreed.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the oracle tests need it (pip install torch)"
)
tF = torch.nn.functional

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])


# ---- fixed here ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["batch_norm", "batch_norm_simple"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "test"])
def test_batch_norm_eps_as_a_numpy_scalar_keeps_float32(fn, train):
    """eps is a setting, as PyTorch's (a Python float): a NumPy float64 eps made a float32
    batch float64 in test mode (and in batch_norm_simple), while the fused training path
    kept float32, so one model gave float32 in training and float64 in evaluation."""
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    one, zero = np.ones(3, np.float32), np.zeros(3, np.float32)
    v = dz.Variable(x.copy())
    with dz.using_config("train", train):
        y = getattr(F, fn)(v, one, zero, zero.copy(), one.copy(), eps=np.float64(1e-5))
    yt = tF.batch_norm(torch.tensor(x), torch.tensor(zero), torch.tensor(one),
                       training=train, eps=1e-5)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data, yt.numpy(), rtol=1e-5, atol=1e-5)
    F.sum(y * y).backward()
    assert v.grad.dtype == np.float32


def test_batch_norm_layer_eps_as_a_numpy_scalar_keeps_float32_in_evaluation():
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    layer = L.BatchNorm(eps=np.float64(1e-5))
    assert layer(x).dtype == np.float32
    with dz.test_mode():
        assert layer(x).dtype == np.float32


# ---- differences that docs/pytorch.md lists ----------------------------------------------------

TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, -1.0, 5.0, 5.0]])


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_ties_along_an_axis_share_the_gradient_as_torch_amax_not_torch_max_dim(reduce):
    """F.max(x, axis) is torch.amax(x, dim): the tied elements share the gradient.
    torch.max(x, dim) returns an index and sends all of it to the first maximum."""
    data = TIES if reduce == "max" else -TIES
    w = np.array([1.0, -2.0, 0.5])
    x = dz.Variable(data.copy())
    F.sum(getattr(F, reduce)(x, axis=-1) * w).backward()
    amax = torch.tensor(data, requires_grad=True)
    (getattr(torch, "a" + reduce)(amax, -1) * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, amax.grad.numpy())
    np.testing.assert_array_equal(x.grad.data[1], [-0.5] * 4)
    first = torch.tensor(data, requires_grad=True)
    (getattr(torch, reduce)(first, -1).values * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(first.grad.numpy()[1], [-2.0, 0.0, 0.0, 0.0])


def test_sum_over_no_axes_sums_nothing_as_numpy():
    """axis=() reduces over no axis (NumPy); PyTorch's sum(dim=()) sums everything."""
    a = np.arange(6.0).reshape(2, 3)
    x = dz.Variable(a.copy())
    y = F.sum(x, axis=())
    assert y.shape == (2, 3)
    np.testing.assert_array_equal(y.data, a)
    y.backward(gradient=np.full((2, 3), 2.0))
    np.testing.assert_array_equal(x.grad.data, np.full((2, 3), 2.0))
    assert torch.tensor(a).sum(()).shape == ()


def _third_derivative(ours_or_theirs, fn, x0, w, u1, u2):
    """d/dx of (d/dx of (d/dx sum(f(x) w)) . u1) . u2, in either framework."""
    if ours_or_theirs == "ours":
        x = dz.Variable(x0.copy())
        F.sum(fn(x) * w).backward(create_graph=True)
        g = x.grad
        x.cleargrad()
        F.sum(g * u1).backward(create_graph=True)
        g2 = x.grad
        x.cleargrad()
        F.sum(g2 * u2).backward()
        return g2.data, x.grad.data
    x = torch.tensor(x0, requires_grad=True)
    (g,) = torch.autograd.grad((fn(x) * torch.tensor(w)).sum(), x, create_graph=True)
    (g2,) = torch.autograd.grad((g * torch.tensor(u1)).sum(), x, create_graph=True)
    (g3,) = torch.autograd.grad((g2 * torch.tensor(u2)).sum(), x)
    return g2.detach().numpy(), g3.numpy()


def _bn_composed(t):
    mu = t.mean(0, keepdim=True)
    return (t - mu) / torch.sqrt(((t - mu) ** 2).mean(0, keepdim=True) + 1e-5)


@pytest.mark.parametrize("fn", ["batch_norm", "batch_norm_simple"])
def test_batch_norm_third_derivative_is_that_of_its_definition(fn):
    """The third derivative of batch norm in training equals that of its definition written
    out in PyTorch (and central differences of the second). PyTorch's own batch_norm has
    the right first and second derivatives but not the third (docs/pytorch.md)."""
    rng = np.random.default_rng(10)
    x0, w, u1, u2 = (rng.standard_normal((4, 3)) for _ in range(4))
    ones, zeros = np.ones(3), np.zeros(3)
    ours = _third_derivative(
        "ours", lambda v: getattr(F, fn)(v, ones, zeros, zeros.copy(), ones.copy(), eps=1e-5),
        x0, w, u1, u2)
    composed = _third_derivative("theirs", _bn_composed, x0, w, u1, u2)
    np.testing.assert_allclose(ours[0], composed[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours[1], composed[1], rtol=1e-9, atol=1e-12)
    h = 1e-5  # central differences of the second derivative along each coordinate
    fd = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = h
        plus = _third_derivative("theirs", _bn_composed, x0 + e, w, u1, u2)[0]
        minus = _third_derivative("theirs", _bn_composed, x0 - e, w, u1, u2)[0]
        fd[i] = ((plus - minus) * u2).sum() / (2 * h)
    np.testing.assert_allclose(ours[1], fd, rtol=1e-6, atol=1e-6)
    fused = _third_derivative(
        "theirs", lambda t: tF.batch_norm(t, None, None, training=True, eps=1e-5), x0, w, u1, u2)
    np.testing.assert_allclose(fused[0], composed[0], rtol=1e-9, atol=1e-12)
    # PyTorch 2.13's fused batch_norm gives another third derivative (docs/pytorch.md); that
    # is not asserted, so that this test does not depend on which PyTorch is installed


def test_zero_to_the_x_has_second_derivative_zero_where_torch_gives_nan():
    """0 ** x is piecewise constant (1 at 0, 0 above, inf below): its gradient here is a
    constant (sweep 5), so its second derivative is 0; PyTorch's is nan or inf."""
    a = np.array([-1.0, 0.0, 2.0])
    x = dz.Variable(a.copy())
    with np.errstate(all="ignore"):
        F.sum(0.0 ** x).backward(create_graph=True)
    g = x.grad
    x.cleargrad()
    t = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad((0.0 ** t).sum(), t, create_graph=True)
    np.testing.assert_array_equal(g.data, gt.detach().numpy())
    assert not g.requires_grad  # a constant: nothing to differentiate again
    (ht,) = torch.autograd.grad(gt.sum(), t)
    assert not np.isfinite(ht.numpy()).any()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_books_simple_versions_overflow_where_the_fused_ones_do_not():
    """softmax_simple, softmax_cross_entropy_simple and sigmoid_simple are the book's
    definitions (docs/pytorch.md): exp(1000) overflows in them. The functions to train with
    match PyTorch there."""
    big = np.array([[1000.0, -1000.0, 0.0]])
    assert np.isnan(F.softmax_simple(big).data).any()
    np.testing.assert_allclose(F.softmax(big).data, [[1.0, 0.0, 0.0]])
    loss = F.softmax_cross_entropy(big, np.array([1])).data
    np.testing.assert_allclose(loss, tF.cross_entropy(torch.tensor(big), torch.tensor([1])))
    assert F.softmax_cross_entropy_simple(big, np.array([1])).data < 100  # log(p) clipped
    x = dz.Variable(np.array([-1000.0, 1000.0]))
    F.sum(F.sigmoid_simple(x)).backward()
    assert np.isnan(x.grad.data[0])
    x = dz.Variable(np.array([-1000.0, 1000.0]))
    F.sum(F.sigmoid(x)).backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0])


# ---- edges where the two agree ---------------------------------------------------------------

def _compare(ours, theirs, arrays, dtype):
    """Values, dtype, gradients of a random upstream gradient by the plain backward and by
    the one with ``create_graph`` (the two paths are separate code in several functions),
    and second derivatives (a Hessian-vector product) where PyTorch has them."""
    tol = TOL[dtype]
    arrays = [np.asarray(a) for a in arrays]
    rng = np.random.default_rng(0)
    ts = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    yt = theirs(*ts)
    expected = yt.detach().numpy()
    gy = rng.standard_normal(expected.shape).astype(dtype)
    gts = torch.autograd.grad(yt, ts, torch.tensor(gy), create_graph=True, allow_unused=True)
    for create_graph in (False, True):
        vs = [dz.Variable(a) for a in arrays]  # the arrays themselves: views stay views
        y = ours(*vs)
        assert y.shape == expected.shape and y.dtype == expected.dtype == dtype
        np.testing.assert_allclose(y.data, expected, **tol)
        y.backward(gradient=dz.Variable(gy.copy()), create_graph=create_graph)
        for v, gt in zip(vs, gts):
            g = np.zeros_like(v.data) if gt is None else gt.detach().numpy()
            assert v.grad.dtype == dtype, f"gradient {v.grad.dtype}, create_graph={create_graph}"
            np.testing.assert_allclose(v.grad.data, g, **tol)
    us = [rng.standard_normal(a.shape).astype(dtype) for a in arrays]
    terms = [(gt * torch.tensor(u)).sum() for gt, u in zip(gts, us)
             if gt is not None and gt.requires_grad]
    hts = torch.autograd.grad(sum(terms), ts, allow_unused=True) if terms else [None] * len(ts)
    grads = [v.grad for v in vs]
    for v in vs:
        v.cleargrad()
    total = None
    for g, u in zip(grads, us):
        total = F.sum(g * u) if total is None else total + F.sum(g * u)
    if total.requires_grad:
        total.backward()
    for v, ht in zip(vs, hts):
        h = np.zeros_like(v.data) if ht is None else ht.numpy()
        got = np.zeros_like(v.data) if v.grad is None else v.grad.data
        np.testing.assert_allclose(got, h, rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)


def _r(*shape):
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape)


NEG_INF = -np.inf
EXTREME_LOGITS = np.array([[NEG_INF, 0.0, 1.0], [NEG_INF, NEG_INF, 2.0], [3.0, 1e30, -2.0],
                           [1000.0, -1000.0, 0.0]])
LABELS = np.array([1, 2, 0, 0])
MASK = _r(5, 4, 3) > 0
NONCONTIG = _r(3, 4, 5).transpose(2, 0, 1)[:, ::-1]  # (5, 3, 4), reversed, not contiguous
WIDE = np.linspace(-1000, 1000, 7)


def _bn_eval(x, gamma, beta):
    mean, var = np.linspace(-1, 1, 3).astype(x.dtype), np.linspace(0.5, 2, 3).astype(x.dtype)
    with dz.test_mode():
        return F.batch_norm(x, gamma, beta, mean, var, eps=1e-5)


def _bn_eval_theirs(x, gamma, beta):
    mean, var = np.linspace(-1, 1, 3), np.linspace(0.5, 2, 3)
    return tF.batch_norm(x, torch.tensor(mean, dtype=x.dtype), torch.tensor(var, dtype=x.dtype),
                         gamma, beta, training=False, eps=1e-5)


EDGES = {
    # broadcasting: shape-1 axes on both sides, a 0-d operand, an empty operand
    "add_both_sides_broadcast": (lambda a, b: a + b, lambda a, b: a + b,
                                 [_r(3, 1, 4), _r(1, 5, 1)]),
    "div_rank_and_ones": (lambda a, b: a / b, lambda a, b: a / b, [_r(4), _r(2, 1, 1) ** 2 + 0.5]),
    "mul_0d": (lambda a, b: a * b, lambda a, b: a * b, [np.array(0.7), _r(2, 3)]),
    "sub_empty_and_row": (lambda a, b: a - b, lambda a, b: a - b, [np.ones((0, 3)), _r(1, 3)]),
    # reductions: negative and tuple axes, keepdims, on a non-contiguous input
    "sum_negative_axes": (lambda v: F.sum(v, axis=(-1, 0), keepdims=True),
                          lambda t: t.sum((-1, 0), keepdim=True), [NONCONTIG]),
    "mean_negative_axes": (lambda v: F.mean(v, axis=(-3, -1)), lambda t: t.mean((-3, -1)),
                           [NONCONTIG]),
    "max_negative_axes": (lambda v: F.max(v, axis=(-3, -1), keepdims=True),
                          lambda t: t.amax((-3, -1), keepdim=True), [NONCONTIG]),
    "max_keepdims_all": (lambda v: F.max(v, keepdims=True),
                         lambda t: t.amax((0, 1, 2), keepdim=True), [NONCONTIG]),
    "sum_to_0d": (lambda v: F.sum_to(v, ()), torch.sum, [_r(2, 3)]),
    "sum_empty_axis": (lambda v: F.sum(v, axis=1, keepdims=True),
                       lambda t: t.sum(1, keepdim=True), [np.ones((2, 0, 3))]),
    # indexing: negative steps, Ellipsis, None, repeated and boolean indices
    "get_item_negative_step": (lambda v: v[::-2, 1:3], lambda t: t.flip(0)[::2, 1:3],
                               [_r(5, 4, 3)]),
    "get_item_ellipsis_none": (lambda v: v[None, ..., 1, None], lambda t: t[None, ..., 1, None],
                               [_r(5, 4, 3)]),
    "get_item_two_repeated_arrays": (lambda v: v[[0, 0, 4], [2, 2, 2]],
                                     lambda t: t[[0, 0, 4], [2, 2, 2]], [_r(5, 4, 3)]),
    "get_item_2d_repeated": (lambda v: v[np.array([[0, 0], [4, 0]])],
                             lambda t: t[torch.tensor([[0, 0], [4, 0]])], [_r(5, 4, 3)]),
    "get_item_negative_repeated": (lambda v: v[:, [-1, -1, 0]], lambda t: t[:, [-1, -1, 0]],
                                   [_r(5, 4, 3)]),
    "get_item_mask": (lambda v: v[MASK], lambda t: t[torch.tensor(MASK)], [_r(5, 4, 3)]),
    "get_item_mask_2d": (lambda v: v[MASK[:, :, 0]], lambda t: t[torch.tensor(MASK[:, :, 0])],
                         [_r(5, 4, 3)]),
    "get_item_noncontiguous": (lambda v: v[[1, 1, 0], 2:], lambda t: t[[1, 1, 0], 2:],
                               [NONCONTIG]),
    # infinities and extreme values
    "softmax_inf": (lambda v: F.softmax(v, axis=1), lambda t: torch.softmax(t, 1),
                    [EXTREME_LOGITS]),
    "log_softmax_inf": (lambda v: F.log_softmax(v, axis=1), lambda t: torch.log_softmax(t, 1),
                        [EXTREME_LOGITS]),
    "softmax_cross_entropy_inf": (lambda v: F.softmax_cross_entropy(v, LABELS),
                                  lambda t: tF.cross_entropy(t, torch.tensor(LABELS)),
                                  [EXTREME_LOGITS]),
    "log_softmax_all_neg_inf": (lambda v: F.log_softmax(v, axis=-1),
                                lambda t: torch.log_softmax(t, -1), [np.array([[NEG_INF] * 2])]),
    "sigmoid_wide": (F.sigmoid, torch.sigmoid, [WIDE]),
    "tanh_wide": (F.tanh, torch.tanh, [WIDE]),
    "sigmoid_cross_entropy_wide": (
        lambda v: F.sigmoid_cross_entropy(v, (WIDE[:, None] > 0).astype(v.dtype)[::-1]),
        lambda t: tF.binary_cross_entropy_with_logits(
            t, torch.tensor((WIDE[:, None] > 0)[::-1].copy(), dtype=t.dtype)),
        [WIDE[:, None]]),
    # kinks: exactly at a bound, at 0
    "clip_equal_bounds": (lambda v: F.clip(v, 0.5, 0.5), lambda t: torch.clamp(t, 0.5, 0.5),
                          [np.array([-1.0, 0.5, 0.5, 2.0])]),
    "clip_at_bounds": (lambda v: F.clip(v, -0.5, 0.5), lambda t: torch.clamp(t, -0.5, 0.5),
                       [np.array([-1.0, -0.5, 0.0, 0.5, 1.0])]),
    "relu_at_signed_zeros": (F.relu, torch.relu, [np.array([-0.0, 0.0, 1.0, -1.0])]),
    "sqrt_at_zero": (lambda v: v**0.5, lambda t: t**0.5, [np.array([0.0, 1.0, 4.0])]),
    "pow_1_5_at_zero": (lambda v: v**1.5, lambda t: t**1.5, [np.array([0.0, 1.0, 4.0])]),
    "reciprocal_at_zero": (lambda v: v**-1, lambda t: t**-1, [np.array([0.0, -0.5, 2.0])]),
    # matrix products with 1-d and broadcast stacks, non-contiguous operands
    "matmul_vec_stack4d": (F.matmul, torch.matmul, [_r(3), _r(2, 2, 3, 4)]),
    "matmul_stack4d_vec": (F.matmul, torch.matmul, [_r(2, 2, 4, 3), _r(3)]),
    "matmul_ones_both_sides": (F.matmul, torch.matmul, [_r(2, 1, 4, 3), _r(1, 5, 3, 2)]),
    "matmul_noncontiguous": (F.matmul, torch.matmul, [_r(4, 3).T, _r(5, 4)[::2].T]),
    "matmul_empty_inner": (F.matmul, torch.matmul, [np.ones((2, 0)), np.ones((0, 3))]),
    # convolution, pooling and batch norm geometry
    "conv2d_rect": (lambda x, W, b: F.conv2d(x, W, b, (1, 2), (2, 1)),
                    lambda x, W, b: tF.conv2d(x, W, b, (1, 2), (2, 1)),
                    [_r(2, 3, 5, 6), _r(2, 3, 4, 2), _r(2)]),
    "conv2d_pad_beyond_kernel": (lambda x, W: F.conv2d(x, W, None, 2, 3),
                                 lambda x, W: tF.conv2d(x, W, None, 2, 3),
                                 [_r(1, 2, 3, 4), _r(2, 2, 2, 2)]),
    "conv2d_noncontiguous": (lambda x, W: F.conv2d(x, W, None, 1, 1),
                             lambda x, W: tF.conv2d(x, W, None, 1, 1),
                             [_r(3, 2, 6, 5).transpose(1, 0, 2, 3), _r(3, 6, 3, 3)[:, ::2]]),
    "deconv2d_rect": (lambda x, W, b: F.deconv2d(x, W, b, (3, 2), (1, 2)),
                      lambda x, W, b: tF.conv_transpose2d(x, W, b, (3, 2), (1, 2)),
                      [_r(2, 3, 3, 4), _r(3, 2, 4, 5), _r(2)]),
    "deconv2d_stride_beyond_kernel": (lambda x, W: F.deconv2d(x, W, None, 3, 0),
                                      lambda x, W: tF.conv_transpose2d(x, W, None, 3),
                                      [_r(2, 3, 3, 3), _r(3, 2, 2, 2)]),
    "pooling_rect": (lambda x: F.pooling(x, (3, 2), (1, 2), (1, 1)),
                     lambda x: tF.max_pool2d(x, (3, 2), (1, 2), (1, 1)), [_r(2, 2, 5, 7)]),
    "average_pooling_rect_pad": (lambda x: F.average_pooling(x, (3, 2), (2, 1), (1, 1)),
                                 lambda x: tF.avg_pool2d(x, (3, 2), (2, 1), (1, 1)),
                                 [_r(2, 2, 5, 7)]),
    "pooling_empty_batch": (lambda x: F.pooling(x, 2), lambda x: tF.max_pool2d(x, 2),
                            [np.ones((0, 2, 4, 4))]),
    "batch_norm_eval_2d": (_bn_eval, _bn_eval_theirs, [_r(5, 3), _r(3), _r(3)]),
    "batch_norm_eval_4d": (_bn_eval, _bn_eval_theirs, [_r(2, 3, 2, 2), _r(3), _r(3)]),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in PyTorch's and ours
@DTYPES
@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_matches_torch(name, dtype):
    ours, theirs, arrays = EDGES[name]
    arrays = [a.astype(dtype, copy=False) for a in arrays]  # float64 views stay views
    if "noncontiguous" in name or "negative_axes" in name:
        assert not arrays[0].flags.c_contiguous
    _compare(ours, theirs, arrays, dtype)


# ---- recurrent cells with PyTorch's weights, ported as docs/pytorch.md says ------------------

def _port_lstm(layer, cell, H):
    """The recipe of docs/pytorch.md: PyTorch stacks the gates i, f, g (u here), o."""
    w, u = cell.weight_ih.detach().numpy(), cell.weight_hh.detach().numpy()
    b = (cell.bias_ih + cell.bias_hh).detach().numpy()
    for k, gate in enumerate("ifuo"):
        rows = slice(k * H, (k + 1) * H)
        getattr(layer, "x2" + gate).W.data = w[rows].T.copy()
        getattr(layer, "x2" + gate).b.data = b[rows].copy()
        getattr(layer, "h2" + gate).W.data = u[rows].T.copy()


@DTYPES
@pytest.mark.parametrize("kind", ["LSTM", "RNN"])
def test_recurrent_layers_match_torch_cells_over_three_steps(kind, dtype):
    """Values of h (and LSTM's c) and the weights' gradients after three steps, against
    nn.LSTMCell / nn.RNNCell with the same weights: the gate order and the summed biases."""
    torch.manual_seed(0)
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    I, H, N = 4, 3, 2
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((N, I)).astype(dtype) for _ in range(3)]
    if kind == "LSTM":
        cell, layer = torch.nn.LSTMCell(I, H, dtype=tdtype), L.LSTM(H, in_size=I)
        _port_lstm(layer, cell, H)
    else:
        cell, layer = torch.nn.RNNCell(I, H, dtype=tdtype), L.RNN(H, in_size=I)
        layer.x2h.W.data = cell.weight_ih.detach().numpy().T.copy()
        layer.x2h.b.data = (cell.bias_ih + cell.bias_hh).detach().numpy()
        layer.h2h.W.data = cell.weight_hh.detach().numpy().T.copy()
    state = None
    loss, tloss = 0, 0
    for k, x in enumerate(xs):
        h = layer(x)
        state = cell(torch.tensor(x), state)
        th = state[0] if kind == "LSTM" else state
        np.testing.assert_allclose(h.data, th.detach().numpy(), **TOL[dtype])
        loss = loss + F.sum(F.sin(h) * (k + 1))
        tloss = tloss + (torch.sin(th) * (k + 1)).sum()
    if kind == "LSTM":
        np.testing.assert_allclose(layer.c.data, state[1].detach().numpy(), **TOL[dtype])
    loss.backward()
    tloss.backward()
    tol = dict(rtol=TOL[dtype]["rtol"] * 10, atol=TOL[dtype]["atol"] * 10)
    if kind == "LSTM":
        for k, gate in enumerate("ifuo"):
            rows = slice(k * H, (k + 1) * H)
            x2, h2 = getattr(layer, "x2" + gate), getattr(layer, "h2" + gate)
            assert x2.W.grad.dtype == h2.W.grad.dtype == dtype
            np.testing.assert_allclose(x2.W.grad.data, cell.weight_ih.grad.numpy()[rows].T, **tol)
            np.testing.assert_allclose(h2.W.grad.data, cell.weight_hh.grad.numpy()[rows].T, **tol)
            np.testing.assert_allclose(x2.b.grad.data, cell.bias_ih.grad.numpy()[rows], **tol)
    else:
        assert layer.h2h.W.grad.dtype == dtype
        np.testing.assert_allclose(layer.x2h.W.grad.data, cell.weight_ih.grad.numpy().T, **tol)
        np.testing.assert_allclose(layer.h2h.W.grad.data, cell.weight_hh.grad.numpy().T, **tol)
        np.testing.assert_allclose(layer.x2h.b.grad.data, cell.bias_hh.grad.numpy(), **tol)
