"""A tenth sweep against PyTorch: the edges learners hit in indexing, shapes, reductions,
``clip``, ``pow``, the losses, ``embed_id``, ``accuracy`` and the operators' dtypes.

Throwaway scripts compared values, dtypes of results and of gradients, shapes, gradients (the
plain backward and the one with ``create_graph``), second derivatives and error-or-accept with
PyTorch for: indexing with boolean masks (full, per row, all False, a 0-d ``True``, a list of
bools), negative steps, ``None``/``np.newaxis``, ``...``, repeated integer arrays, 0-d results,
empty indices and slices, a Variable as the index; ``matmul`` with 1-d and 5-d operands;
``max``/``min`` over tuples and lists of axes, ties, infinities, 0-d and empty inputs;
``sum``/``mean`` over negative and tuple axes and of empty arrays; ``reshape`` (``-1``, to and
from 0-d), ``transpose``, ``expand_dims``, ``flatten``, ``broadcast_to``/``sum_to`` round trips;
``clip`` at and beyond its bounds; ``x ** c`` of negative bases for integer and fractional
``c``; ``log`` at 0; the losses at extreme logits and with wrong labels or shapes; ``embed_id``
with odd ids; ``accuracy`` with ties and ``nan``; and Python and NumPy numbers on either side of
the operators. Four disagreements, fixed in the steps and pinned first (clip's NumPy-number
bounds, two messages, float16 cross-entropy rounded twice); then the differences
``docs/pytorch.md`` lists (one new, float16 with a Python float rounds the number first,
since fixed by sweep 11); then
the strongest of the cases that agreed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the oracle tests need it (pip install torch)"
)
tF = torch.nn.functional

TOL = {np.float16: dict(rtol=1e-3, atol=1e-3), np.float32: dict(rtol=1e-5, atol=1e-6),
       np.float64: dict(rtol=1e-10, atol=1e-12)}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])


@pytest.fixture
def torch_float32_default():
    """PyTorch's default dtype decides what an integer tensor becomes; another test module
    changes it, so the dtype comparisons set it."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(default)


# ---- fixed here ------------------------------------------------------------------------------

@pytest.mark.parametrize("bound", [np.float64, np.float32, np.array, np.int64],
                         ids=["np.float64", "np.float32", "0-d array", "np.int64"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["f16", "f32"])
def test_clip_with_numpy_number_bounds_keeps_x_dtype_as_torch(bound, dtype):
    """The bounds are settings, as batch norm's eps: a NumPy float64 bound (a maximum read off
    the data, ``np.float64(1e-7)``) made a float32 x float64, where torch.clamp keeps float32
    for any number and for a 0-d tensor. Step 49 takes a 0-d NumPy bound as a Python number."""
    a = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], dtype)
    lo, hi = bound(-1), bound(1)
    x = dz.Variable(a.copy())
    y = F.clip(x, lo, hi)
    t = torch.tensor(a, requires_grad=True)
    yt = torch.clamp(t, torch.tensor(lo), torch.tensor(hi))  # 0-d tensors: t's dtype wins
    assert y.dtype == dtype and yt.dtype == t.dtype
    np.testing.assert_array_equal(y.data, yt.detach().numpy())
    gy = np.linspace(0.5, 1.5, a.size).astype(dtype)
    y.backward(gradient=dz.Variable(gy))
    yt.backward(torch.tensor(gy))
    assert x.grad.dtype == dtype
    np.testing.assert_array_equal(x.grad.data, t.grad.numpy())


def test_clip_with_array_bounds_still_follows_numpy():
    """Bounds with axes are data, not settings: they combine with x by NumPy's rules (float32
    x, float64 bounds: float64), as torch.clamp's tensors with dimensions promote too."""
    a = np.linspace(-2, 2, 4).astype(np.float32)
    lo, hi = np.full(4, -1.0), np.full(4, 1.0)
    assert F.clip(a, lo, hi).dtype == np.float64
    assert torch.clamp(torch.tensor(a), torch.tensor(lo), torch.tensor(hi)).dtype == torch.float64


def test_flatten_of_a_0d_input_says_what_to_write():
    """flatten keeps axis 0, which a 0-d input lacks: it raised "tuple index out of range";
    PyTorch's flatten(1) refuses it too ("Dimension out of range")."""
    with pytest.raises(IndexError):
        torch.flatten(torch.tensor(1.5), 1)
    with pytest.raises(ValueError, match=r"no axes.*reshape\(x, \(1, 1\)\)"):
        F.flatten(dz.Variable(np.array(1.5)))
    assert F.flatten(np.ones(4)).shape == (4, 1)  # one axis: N rows of one value each


@DTYPES
def test_softmax_cross_entropy_of_one_unbatched_example_says_to_add_the_batch_axis(dtype):
    """PyTorch's cross_entropy takes one example's scores (C,) with a 0-d label; here the message
    said only "expects logits of shape (N, C)". It now writes out the batch of one, which gives
    PyTorch's loss and gradient."""
    x, label = np.array([0.5, -1.0, 2.0], dtype), 1
    with pytest.raises(ValueError, match=r"x\[None\].*np\.array\(\[t\]\)"):
        F.softmax_cross_entropy(dz.Variable(x.copy()), np.array(label))
    v = dz.Variable(x.copy())
    y = F.softmax_cross_entropy(v[None], np.array([label]))
    t = torch.tensor(x, requires_grad=True)
    yt = tF.cross_entropy(t, torch.tensor(label))
    y.backward()
    yt.backward()
    assert y.shape == tuple(yt.shape) == () and y.dtype == dtype and v.grad.dtype == dtype
    np.testing.assert_allclose(y.data, yt.item(), **TOL[dtype])
    np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **TOL[dtype])


def _ulps(a, exact):
    """The largest distance of float16 ``a`` from float64 ``exact``, in float16 spacings."""
    unit = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
    return np.max(np.abs(a.astype(np.float64) - exact) / unit)


def test_float16_cross_entropy_is_rounded_once_closer_than_torch():
    """Each row's loss was rounded to float16 before the float32 sum: up to 0.71 spacings from
    the exact mean over these 200 random batches (PyTorch's float16 cross_entropy: 2.13).
    Computed in float32 and rounded once (steps 49 and 71), it is within half a spacing (0.49),
    as PyTorch's float32 loss rounded to float16."""
    worst_ours = worst_torch = 0.0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n, c = rng.integers(1, 40), rng.integers(2, 50)
        x = (rng.normal(size=(n, c)) * 3).astype(np.float16)
        t = rng.integers(0, c, n)
        xf = x.astype(np.float64)
        exact = np.mean(np.log(np.exp(xf).sum(1)) - xf[np.arange(n), t])
        worst_ours = max(worst_ours, _ulps(F.softmax_cross_entropy(x, t).data, exact))
        worst_torch = max(worst_torch, _ulps(
            tF.cross_entropy(torch.tensor(x), torch.tensor(t)).numpy(), exact))
    assert worst_ours <= 0.5 < 2 < worst_torch


def test_float16_cross_entropy_shifts_huge_logits_in_float32():
    """x - max(x) of logits -4e4 and 4e4 is -8e4, past float16's 65504: the loss of a row whose
    label is the smallest logit was inf here, where the mean over the batch is finite."""
    x = np.array([[-4e4, 4e4], [0.0, 0.0], [0.0, 0.0]], np.float16)
    t = np.array([0, 0, 1])
    expected = tF.cross_entropy(torch.tensor(x).float(), torch.tensor(t)).half().numpy()
    assert np.isfinite(expected)
    v = dz.Variable(x)
    y = F.softmax_cross_entropy(v, t)
    np.testing.assert_array_equal(y.data, expected)
    y.backward()
    assert v.grad.dtype == np.float16 and np.isfinite(v.grad.data).all()


# ---- the differences docs/pytorch.md lists ---------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["f16", "f32"])
def test_clip_with_crossed_bounds_is_refused_as_docs_pytorch_md_says(dtype):
    """docs/pytorch.md: ``clip(x, x_min, x_max)`` with ``x_min > x_max`` is refused; clamp gives
    x_max everywhere."""
    a = np.array([-2.0, 0.0, 2.0], dtype)
    np.testing.assert_array_equal(torch.clamp(torch.tensor(a), 1.0, -1.0).numpy(), [-1, -1, -1])
    with pytest.raises(ValueError, match="x_min <= x_max"):
        F.clip(dz.Variable(a), 1.0, -1.0)


@pytest.mark.parametrize("shapes", [((4, 1), (4,)), ((4,), (4, 1)), ((4, 3), (3,))])
def test_mean_squared_error_of_two_shapes_is_refused_as_docs_pytorch_md_says(shapes):
    """docs/pytorch.md: mse_loss broadcasts two shapes (with a UserWarning): (N, 1) against (N,)
    is an N x N difference; mean_squared_error refuses them and names the reshape."""
    a, b = (np.ones(s) for s in shapes)
    with pytest.warns(UserWarning, match="broadcasting"):
        tF.mse_loss(torch.tensor(a), torch.tensor(b))
    with pytest.raises(ValueError, match="same shape.*Reshape"):
        F.mean_squared_error(dz.Variable(a), dz.Variable(b))
    with pytest.raises(ValueError, match="same shape"):
        F.mean_squared_error_simple(dz.Variable(a), dz.Variable(b))


F64, I64 = torch.float64, torch.int64
NUMPY_ON_THE_LEFT = {  # here, in PyTorch (a 0-d tensor for a 0-d array), dtypes here and there
    "np.float64(2) * x": (lambda x: np.float64(2) * x, lambda t: np.float64(2) * t,
                          np.float64, torch.float32),
    "np.int64(2) * x": (lambda x: np.int64(2) * x, lambda t: np.int64(2) * t,
                        np.float64, torch.float32),
    "np.array(2.0) + x": (lambda x: np.array(2.0) + x, lambda t: torch.tensor(2.0, dtype=F64) + t,
                          np.float64, torch.float32),
    "np.array(2) * x": (lambda x: np.array(2) * x, lambda t: torch.tensor(2, dtype=I64) * t,
                        np.float64, torch.float32),
    "np.float32(2) - x": (lambda x: np.float32(2) - x, lambda t: np.float32(2) - t,
                          np.float32, torch.float32),
    "np.float32(2) / x": (lambda x: np.float32(2) / x, lambda t: np.float32(2) / t,
                          np.float32, torch.float32),
    "np.float32(2) ** x": (lambda x: np.float32(2) ** x, lambda t: np.float32(2) ** t,
                           np.float32, torch.float32),
    "x ** np.int64(2)": (lambda x: x ** np.int64(2), lambda t: t ** np.int64(2),
                         np.float64, torch.float32),
    "x / np.sqrt(4.0)": (lambda x: x / np.sqrt(4.0), lambda t: t / np.sqrt(4.0),
                         np.float64, torch.float32),
}


@pytest.mark.parametrize("name", sorted(NUMPY_ON_THE_LEFT))
def test_numpy_numbers_combine_by_numpys_rules_as_docs_pytorch_md_says(name):
    """docs/pytorch.md: a NumPy number or a 0-d array (on either side) counts as fully as an
    array of its dtype, so float64 and int64 ones make float32 data float64, where PyTorch takes
    NumPy numbers as Python ones and lets a 0-d tensor yield to one with axes. The result is a
    Variable in either order (NumPy defers to it), the values agree, and the float32 leaf still
    gets a float32 gradient."""
    ours_fn, theirs_fn, ours, theirs = NUMPY_ON_THE_LEFT[name]
    a = np.array([0.5, 1.0, 3.0], np.float32)
    x = dz.Variable(a.copy())
    y = ours_fn(x)
    t = torch.tensor(a, requires_grad=True)
    yt = theirs_fn(t)
    assert isinstance(y, dz.Variable) and y.dtype == ours and yt.dtype == theirs
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-6)
    y.backward(gradient=dz.Variable(np.array([0.5, 1.0, 1.5], ours)))
    yt.backward(torch.tensor([0.5, 1.0, 1.5]))
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-6)


def test_float16_cross_entropy_of_huge_logits_stays_finite_where_torchs_overflows():
    """docs/pytorch.md, float16 losses: computed in float32 and rounded once, a loss of 6e4 - 5
    is finite; PyTorch's CPU cross_entropy in float16 returns inf. The loss here is PyTorch's
    float32 one, rounded to float16."""
    x = np.array([[6e4, -6e4, 0.0], [-6e4, 6e4, 5.0], [0.0, 0.0, 6e4]], np.float16)
    labels = np.array([0, 2, 1])
    assert torch.isinf(tF.cross_entropy(torch.tensor(x), torch.tensor(labels)))
    expected = tF.cross_entropy(torch.tensor(x).float(), torch.tensor(labels)).half()
    y = F.softmax_cross_entropy(dz.Variable(x), labels)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.data, expected.numpy())


# ---- edges where the two agree ---------------------------------------------------------------

def _compare(ours, theirs, arrays, dtype, second=True):
    """Shape, dtype and values; gradients of a random upstream gradient (dtype too) by the plain
    backward and by the one with ``create_graph``; second derivatives where asked."""
    tol = TOL[dtype]
    arrays = [np.asarray(a, dtype) for a in arrays]
    rng = np.random.default_rng(0)
    ts = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    yt = theirs(*ts)
    expected = yt.detach().numpy()
    gy = rng.uniform(0.5, 1.5, expected.shape).astype(dtype)
    gts = torch.autograd.grad(yt, ts, torch.tensor(gy), create_graph=second, allow_unused=True)
    for create_graph in (False, True):
        vs = [dz.Variable(a.copy()) for a in arrays]
        y = ours(*vs)
        assert y.shape == expected.shape and y.dtype == expected.dtype == dtype
        np.testing.assert_allclose(y.data, expected, **tol)
        y.backward(gradient=dz.Variable(gy.copy()), create_graph=create_graph)
        for v, gt in zip(vs, gts):
            g = np.zeros_like(v.data) if gt is None else gt.detach().numpy()
            assert v.grad.dtype == dtype and v.grad.shape == v.shape
            np.testing.assert_allclose(v.grad.data, g, **tol)
    if not second:
        return
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


X = _r(3, 4)
MASK = X > 0
A = _r(2, 3, 4)
NAN, INF = np.nan, np.inf
SIGNS = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [INF, INF, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
LABELS = np.array([0, 2, 1])
HUGE_LOGITS = np.array([[1e4, -1e4, 0.0], [-1e30, 1e30, 5.0], [0.0, 0.0, 1e38]])
TARGETS = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.0]])
IDX = lambda *i: dz.Variable(np.array(i))  # noqa: E731  an index held in a Variable


def _power(c):
    return lambda v: v**c


def _sigce_theirs(x):
    return tF.binary_cross_entropy_with_logits(x, torch.tensor(TARGETS, dtype=x.dtype),
                                               reduction="sum") / len(x)


EDGES = {
    # indexing: masks, steps, new axes, repeats, 0-d results, Variables as indices
    "mask_full": (lambda v: v[MASK], lambda t: t[torch.tensor(MASK)], [X]),
    "mask_rows": (lambda v: v[MASK[:, 0]], lambda t: t[torch.tensor(MASK[:, 0])], [X]),
    "mask_all_false": (lambda v: v[np.zeros(3, bool)], lambda t: t[torch.zeros(3, dtype=bool)],
                       [X]),
    "mask_0d_true": (lambda v: v[np.True_], lambda t: t[True], [X]),
    "mask_list_of_bools": (lambda v: v[[True, False, True]], lambda t: t[[True, False, True]],
                           [X]),
    "mask_and_int": (lambda v: v[MASK[:, 0], 1], lambda t: t[torch.tensor(MASK[:, 0]), 1], [X]),
    "negative_steps": (lambda v: v[::-1, ::-2], lambda t: t.flip(0).flip(1)[:, ::2], [X]),
    "newaxis_twice": (lambda v: v[np.newaxis, :, None], lambda t: t[None, :, None], [X]),
    "ellipsis_alone": (lambda v: v[...], lambda t: t[...], [X]),
    "int_pair_0d": (lambda v: v[1, 2], lambda t: t[1, 2], [X]),
    "negative_ints_0d": (lambda v: v[-1, -1], lambda t: t[-1, -1], [X]),
    "numpy_int": (lambda v: v[np.int64(1)], lambda t: t[1], [X]),
    "index_0d_array": (lambda v: v[np.array(1)], lambda t: t[torch.tensor(1)], [X]),
    "repeated_row": (lambda v: v[[2, 2, 2, 0]], lambda t: t[[2, 2, 2, 0]], [X]),
    "repeated_pairs": (lambda v: v[[0, 0], [1, 1]], lambda t: t[[0, 0], [1, 1]], [X]),
    "index_2d_array": (lambda v: v[np.array([[0, 1], [2, 2]]), :],
                       lambda t: t[torch.tensor([[0, 1], [2, 2]]), :], [X]),
    "empty_index": (lambda v: v[np.array([], np.int64)], lambda t: t[torch.tensor([], dtype=int)],
                    [X]),
    "slice_past_the_end": (lambda v: v[1:100], lambda t: t[1:100], [X]),
    "empty_slice": (lambda v: v[3:1], lambda t: t[3:1], [X]),
    "0d_by_empty_tuple": (lambda v: v[()], lambda t: t[()], [np.array(2.0)]),
    "0d_by_none": (lambda v: v[None], lambda t: t[None], [np.array(2.0)]),
    "variable_index": (lambda v: v[IDX(2, 0, 2)], lambda t: t[torch.tensor([2, 0, 2])], [X]),
    "variable_index_0d": (lambda v: v[dz.Variable(np.array(1))], lambda t: t[torch.tensor(1)],
                          [X]),
    "variable_mask": (lambda v: v[dz.Variable(MASK)], lambda t: t[torch.tensor(MASK)], [X]),
    # matmul with 1-d and 5-d operands, broadcasting on both sides, empty operands
    "matmul_vec_5d": (F.matmul, torch.matmul, [_r(3), _r(2, 1, 2, 3, 4)]),
    "matmul_5d_vec": (F.matmul, torch.matmul, [_r(2, 1, 2, 4, 3), _r(3)]),
    "matmul_broadcast_both": (F.matmul, torch.matmul, [_r(3, 1, 2, 5), _r(1, 4, 5, 2)]),
    "matmul_empty_batch": (F.matmul, torch.matmul, [np.ones((0, 2, 3)), _r(3, 4)]),
    "matmul_empty_vectors": (F.matmul, torch.matmul, [np.ones(0), np.ones(0)]),
    # max / min: tuples and lists of axes, ties (shared, as amax), infinities, 0-d
    "max_tuple": (lambda v: F.max(v, axis=(0, 2)), lambda t: t.amax((0, 2)), [A]),
    "min_tuple_keepdims": (lambda v: F.min(v, axis=(1, 2), keepdims=True),
                           lambda t: t.amin((1, 2), keepdim=True), [A]),
    "max_list_of_axes": (lambda v: F.max(v, axis=[0, 2]), lambda t: t.amax([0, 2]), [A]),
    "max_ties_and_inf": (lambda v: F.max(v, axis=1), lambda t: t.amax(1), [TIES]),
    "min_ties_and_inf": (lambda v: F.min(v, axis=0), lambda t: t.amin(0), [TIES]),
    "max_ties_tuple": (lambda v: F.max(v, axis=(0, 1)), lambda t: t.amax((0, 1)),
                       [np.ones((2, 2, 2))]),
    "max_0d": (F.max, torch.amax, [np.array(2.0)]),
    "max_0d_axis_0": (lambda v: F.max(v, axis=0), lambda t: t.amax(0), [np.array(2.0)]),
    # sum / mean: negative, tuple and list axes, 0-d, empty
    "mean_negative_tuple": (lambda v: F.mean(v, axis=(-1, -3), keepdims=True),
                            lambda t: t.mean((-1, -3), keepdim=True), [A]),
    "mean_list_of_axes": (lambda v: F.mean(v, axis=[0, 2]), lambda t: t.mean([0, 2]), [A]),
    "sum_numpy_int_axis": (lambda v: F.sum(v, axis=np.int64(1)), lambda t: t.sum(1), [A]),
    "variable_sum_tuple": (lambda v: v.sum(axis=(0, 2)), lambda t: t.sum((0, 2)), [A]),
    "sum_0d_axis_minus_1": (lambda v: F.sum(v, axis=-1), lambda t: t.sum(-1), [np.array(3.0)]),
    "mean_0d": (F.mean, torch.mean, [np.array(3.0)]),
    "sum_of_empty": (F.sum, torch.sum, [np.ones((0, 3))]),
    "mean_of_empty": (F.mean, torch.mean, [np.ones((0, 3))]),  # nan, as 0 / 0
    # shapes
    "reshape_minus_1": (lambda v: F.reshape(v, (2, -1, 2)), lambda t: t.reshape(2, -1, 2), [A]),
    "reshape_to_0d": (lambda v: F.reshape(v, ()), lambda t: t.reshape(()), [np.ones((1, 1))]),
    "reshape_0d_to_1x1": (lambda v: v.reshape(1, 1), lambda t: t.reshape(1, 1), [np.array(2.0)]),
    "transpose_negative": (lambda v: F.transpose(v, (-1, 0, -2)),
                           lambda t: t.permute(-1, 0, -2), [A]),
    "transpose_reversed": (F.transpose, lambda t: t.permute(2, 1, 0), [A]),
    "transpose_0d": (F.transpose, lambda t: t.permute(()), [np.array(1.0)]),
    "expand_dims_last": (lambda v: F.expand_dims(v, 3), lambda t: t.unsqueeze(3), [A]),
    "expand_dims_minus_4": (lambda v: F.expand_dims(v, -4), lambda t: t.unsqueeze(-4), [A]),
    "expand_dims_0d": (lambda v: F.expand_dims(v, 0), lambda t: t.unsqueeze(0), [np.array(1.5)]),
    "flatten_empty_batch": (F.flatten, lambda t: t.flatten(1), [np.ones((0, 2, 3))]),
    "broadcast_sum_to_round_trip": (lambda v: F.sum_to(F.broadcast_to(v, (2, 3, 4)), (3, 1)),
                                    lambda t: t.expand(2, 3, 4).sum((0, 2)).reshape(3, 1),
                                    [_r(3, 1)]),
    "broadcast_0d": (lambda v: F.broadcast_to(v, (2, 3)), lambda t: t.expand(2, 3),
                     [np.array(1.5)]),
    "broadcast_to_empty": (lambda v: F.broadcast_to(v, (0, 3)), lambda t: t.expand(0, 3),
                           [_r(1, 3)]),
    "sum_to_fewer_axes": (lambda v: F.sum_to(v, (3,)), lambda t: t.sum(0), [_r(2, 3)]),
    "sum_to_from_empty": (lambda v: F.sum_to(v, (1, 3)), lambda t: t.sum(0, keepdim=True),
                          [np.ones((0, 3))]),
    # clip at and beyond its bounds
    "clip_at_the_bounds": (lambda v: F.clip(v, -1.0, 1.0), lambda t: torch.clamp(t, -1.0, 1.0),
                           [SIGNS]),
    "clip_infinite_bounds": (lambda v: F.clip(v, -INF, INF), lambda t: torch.clamp(t, -INF, INF),
                             [SIGNS]),
    "clip_int_bounds": (lambda v: F.clip(v, -1, 1), lambda t: torch.clamp(t, -1, 1), [SIGNS]),
    "clip_array_bounds": (lambda v: F.clip(v, np.full(7, -1.0, v.dtype), np.full(7, 1.0, v.dtype)),
                          lambda t: torch.clamp(t, torch.full((7,), -1.0, dtype=t.dtype),
                                                torch.full((7,), 1.0, dtype=t.dtype)), [SIGNS]),
    # x ** c of negative bases: integer exponents are real there, fractional ones nan
    **{f"pow_{c}": (_power(c), _power(c), [SIGNS])
       for c in (2, 3, -1, -2, 0, 1, 2.0, 3.0, 0.5, 1.5, -0.5)},
    "F.pow_3": (lambda v: F.pow(v, 3), lambda t: torch.pow(t, 3), [SIGNS]),
    "rpow_negative_base": (lambda v: (-2.0) ** v, lambda t: (-2.0) ** t,
                           [np.array([1.0, 2.0, 0.5])]),
    # log and exp at their edges
    "log_at_zero": (F.log, torch.log, [np.array([0.0, -0.0, 1.0, -1.0, INF])]),
    "exp_overflow": (F.exp, torch.exp, [np.array([710.0, -800.0, 0.0])]),
    "tanh_infinite": (F.tanh, torch.tanh, [np.array([INF, -INF, 0.0])]),
    # losses at extreme logits
    "softmax_cross_entropy_huge": (lambda v: F.softmax_cross_entropy(v, LABELS),
                                   lambda t: tF.cross_entropy(t, torch.tensor(LABELS)),
                                   [HUGE_LOGITS]),
    "sigmoid_cross_entropy_huge": (lambda v: F.sigmoid_cross_entropy(v, TARGETS), _sigce_theirs,
                                   [np.array([[1e4, -1e4, 0.0], [-800.0, 800.0, 50.0]])]),
    "mean_squared_error_0d": (F.mean_squared_error, lambda a, b: (a - b) ** 2,
                              [np.array(1.0), np.array(3.0)]),
    # embed_id with odd ids: 0-d, none, a list, a Python int, uint8, a Variable
    "embed_id_0d": (lambda w: F.embed_id(np.array(2), w), lambda w: tF.embedding(
        torch.tensor(2), w), [_r(5, 3)]),
    "embed_id_no_ids": (lambda w: F.embed_id(np.zeros(0, int), w), lambda w: tF.embedding(
        torch.zeros(0, dtype=int), w), [_r(5, 3)]),
    "embed_id_list": (lambda w: F.embed_id([1, 1, 4], w), lambda w: tF.embedding(
        torch.tensor([1, 1, 4]), w), [_r(5, 3)]),
    "embed_id_int": (lambda w: F.embed_id(3, w), lambda w: tF.embedding(torch.tensor(3), w),
                     [_r(5, 3)]),
    "embed_id_uint8": (lambda w: F.embed_id(np.array([1, 4], np.uint8), w), lambda w: tF.embedding(
        torch.tensor([1, 4]), w), [_r(5, 3)]),
    "embed_id_variable": (lambda w: F.embed_id(IDX(1, 2, 1), w), lambda w: tF.embedding(
        torch.tensor([1, 2, 1]), w), [_r(5, 3)]),
}
FIRST_ORDER_ONLY = {  # PyTorch has no second derivative through these (or it is all nan)
    "log_at_zero", "exp_overflow", "softmax_cross_entropy_huge", "sigmoid_cross_entropy_huge",
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # log(0), exp(710), 0 / 0: as PyTorch's
@DTYPES
@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_matches_torch(name, dtype):
    ours, theirs, arrays = EDGES[name]
    if dtype == np.float32 and name in ("exp_overflow", "softmax_cross_entropy_huge"):
        arrays = [np.clip(a, -3e38, 3e38) for a in arrays]  # float32's own range
    _compare(ours, theirs, arrays, dtype, second=name not in FIRST_ORDER_ONLY)


@pytest.mark.parametrize("dtype", [np.float16, np.float32], ids=["f16", "f32"])
@pytest.mark.parametrize("name", ["mask_full", "repeated_row", "negative_steps",
                                  "max_ties_and_inf", "broadcast_sum_to_round_trip", "pow_3"])
def test_float16_and_float32_edges_keep_their_dtype_as_torch(name, dtype):
    ours, theirs, arrays = EDGES[name]
    _compare(ours, theirs, arrays, dtype, second=False)


REFUSED = {  # both refuse: what, ours, theirs, the input
    "float_index": (lambda v: v[np.array([1.0])], lambda t: t[torch.tensor([1.0])]),
    "int_out_of_range": (lambda v: v[5], lambda t: t[5]),
    "array_out_of_range": (lambda v: v[[0, 5]], lambda t: t[[0, 5]]),
    "negative_out_of_range": (lambda v: v[[-4]], lambda t: t[[-4]]),
    "float_variable_index": (lambda v: v[dz.Variable(np.array([1.0]))],
                             lambda t: t[torch.tensor([1.0])]),
    "matmul_inner_mismatch": (lambda v: F.matmul(v, np.ones((3, 2))), lambda t: t @ torch.ones(
        3, 2, dtype=t.dtype)),
    "matmul_batch_mismatch": (lambda v: F.matmul(v[None].reshape(1, 3, 4) * np.ones((2, 1, 1)),
                                                 np.ones((3, 4, 2))),
                              lambda t: (t[None] * torch.ones(2, 1, 1, dtype=t.dtype)) @ torch.ones(
                                  3, 4, 2, dtype=t.dtype)),
    "matmul_0d": (lambda v: F.matmul(v[0, 0], v[0]), lambda t: torch.matmul(t[0, 0], t[0])),
    "max_of_empty": (lambda v: F.max(v[:0]), lambda t: t[:0].amax()),
    "max_along_empty_axis": (lambda v: F.max(v[:0], axis=0), lambda t: t[:0].amax(0)),
    "max_axis_out_of_range": (lambda v: F.max(v, axis=2), lambda t: t.amax(2)),
    "sum_repeated_axes": (lambda v: F.sum(v, axis=(1, -1)), lambda t: t.sum((1, -1))),
    "mean_axis_out_of_range": (lambda v: F.mean(v, axis=-3), lambda t: t.mean(-3)),
    "reshape_wrong_size": (lambda v: F.reshape(v, (5, 5)), lambda t: t.reshape(5, 5)),
    "reshape_two_minus_1": (lambda v: F.reshape(v, (-1, -1)), lambda t: t.reshape(-1, -1)),
    "transpose_repeated_axis": (lambda v: F.transpose(v, (0, 0)), lambda t: t.permute(0, 0)),
    "expand_dims_out_of_range": (lambda v: F.expand_dims(v, 3), lambda t: t.unsqueeze(3)),
    "flatten_0d": (lambda v: F.flatten(v[0, 0]), lambda t: t[0, 0].flatten(1)),
    "broadcast_to_wrong_shape": (lambda v: F.broadcast_to(v, (3, 5)), lambda t: t.expand(3, 5)),
    "sum_to_wrong_shape": (lambda v: F.sum_to(v, (3,)), lambda t: t.sum_to_size(3)),
    "clip_without_bounds": (lambda v: F.clip(v, None, None), lambda t: torch.clamp(t)),
    "label_out_of_range": (lambda v: F.softmax_cross_entropy(v, np.array([0, 4, 1])),
                           lambda t: tF.cross_entropy(t, torch.tensor([0, 4, 1]))),
    "label_minus_1": (lambda v: F.softmax_cross_entropy(v, np.array([0, -1, 1])),
                      lambda t: tF.cross_entropy(t, torch.tensor([0, -1, 1]))),
    "float_labels": (lambda v: F.softmax_cross_entropy(v, np.array([0.0, 1.0, 1.0])),
                     lambda t: tF.cross_entropy(t, torch.tensor([0.0, 1.0, 1.0]))),
    "labels_n_by_1": (lambda v: F.softmax_cross_entropy(v, np.array([[0], [1], [1]])),
                      lambda t: tF.cross_entropy(t, torch.tensor([[0], [1], [1]]))),
    "too_few_labels": (lambda v: F.softmax_cross_entropy(v, np.array([0, 1])),
                       lambda t: tF.cross_entropy(t, torch.tensor([0, 1]))),
    "sigmoid_targets_n_by_1": (lambda v: F.sigmoid_cross_entropy(v[:, 0], np.ones((3, 1))),
                               lambda t: tF.binary_cross_entropy_with_logits(
                                   t[:, 0], torch.ones(3, 1, dtype=t.dtype))),
    "embed_id_out_of_range": (lambda v: F.embed_id(np.array([0, 3]), v),
                              lambda t: tF.embedding(torch.tensor([0, 3]), t)),
    "embed_id_minus_1": (lambda v: F.embed_id(np.array([0, -1]), v),
                         lambda t: tF.embedding(torch.tensor([0, -1]), t)),
    "embed_id_float_ids": (lambda v: F.embed_id(np.array([0.0, 1.0]), v),
                           lambda t: tF.embedding(torch.tensor([0.0, 1.0]), t)),
    "embed_id_bool_ids": (lambda v: F.embed_id(np.array([True, False]), v),
                          lambda t: tF.embedding(torch.tensor([True, False]), t)),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_both_refuse(name):
    """What PyTorch refuses is refused here too, with one of Python's errors for a wrong value,
    index or type (never a crash deeper in, nor a silent result)."""
    ours, theirs = REFUSED[name]
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)):
        theirs(torch.tensor(_r(3, 4)))
    with pytest.raises((IndexError, ValueError, TypeError)) as info:
        ours(dz.Variable(_r(3, 4)))
    assert "tuple index out of range" not in str(info.value)  # the message says what to write


# ---- accuracy ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=["f16", "f32", "f64"])
def test_accuracy_counts_ties_and_nan_as_argmax_does_in_torch(dtype):
    """A tie goes to the first maximum and a nan is the maximum, in NumPy's argmax and PyTorch's
    alike; the result has the scores' dtype (float64 when counted, rounded once)."""
    y = np.array([[0.1, 0.9, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [NAN, 0.0, 1.0],
                  [0.0, NAN, 1.0]], dtype)
    t = np.array([1, 1, 2, 0, 2])
    expected = (torch.tensor(y).argmax(1) == torch.tensor(t)).double().mean().item()
    acc = F.accuracy(dz.Variable(y), t)
    assert acc.dtype == dtype and acc.shape == () and not acc.requires_grad
    assert expected == 0.6 and float(acc.data) == np.asarray(expected, dtype)


# ---- Python numbers beside float16, float32 and integer Variables -----------------------------

OPERATORS = {
    "x + 2": lambda x: x + 2, "2 * x": lambda x: 2 * x, "x - 2": lambda x: x - 2,
    "2 - x": lambda x: 2 - x, "x / 2": lambda x: x / 2, "2 / x": lambda x: 2 / x,
    "x ** 2": lambda x: x**2, "2 ** x": lambda x: 2**x, "x * 2.5": lambda x: x * 2.5,
    "x + True": lambda x: x + True, "x + 1e5": lambda x: x + 1e5,
}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_python_numbers_are_weak_beside_a_variable_as_in_torch(op, dtype, torch_float32_default):
    """A Python int, float or bool never widens a Variable's dtype (float16 stays float16, and
    x + 1e5 overflows to inf there, as in PyTorch); an integer Variable stays an integer under
    + - * **. Dividing integers, or scaling them by a float, gives float64 here, PyTorch's
    default dtype there (docs/pytorch.md: integers go to float64)."""
    fn = OPERATORS[op]
    a = np.array([1, 2, 3], dtype)
    x = dz.Variable(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow, in both
        y = fn(x)
    t = torch.tensor(a, requires_grad=a.dtype.kind == "f")
    yt = fn(t)
    if dtype == np.int64 and op in ("x / 2", "2 / x", "x * 2.5", "x + 1e5"):
        assert y.dtype == np.float64 and yt.dtype == torch.float32
    else:
        assert str(yt.dtype) == f"torch.{y.dtype}", f"{op}: {y.dtype} here, {yt.dtype} in torch"
    np.testing.assert_allclose(y.data, yt.detach().numpy(), rtol=1e-3)
    if a.dtype.kind == "f":  # the leaf's gradient: its dtype and values
        gy = np.array([0.5, 1.0, 1.5], dtype)
        y.backward(gradient=dz.Variable(gy))
        yt.backward(torch.tensor(gy))
        assert x.grad.dtype == dtype
        np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-3)


def test_float16_times_a_python_float_rounds_once_as_torch():
    """Pinned as a difference in this sweep (NumPy rounded the number to float16 first, then
    the result: 701 of 2000 elements of x * 0.1 a unit off, x / 70000 all 0); sweep 11 made
    float16 * and / with a Python number compute in float32 and round once (step 67), so the
    values and the gradient gy * 0.1 agree with PyTorch's to the bit."""
    a = np.arange(1, 2001).astype(np.float16)
    exact = lambda f: f(a.astype(np.float64)).astype(np.float16)  # noqa: E731
    for f in (lambda v: v * 0.1, lambda v: v / 70000):
        np.testing.assert_array_equal(f(torch.tensor(a)).numpy(), exact(f))
        ours = f(dz.Variable(a)).data
        assert ours.dtype == np.float16
        np.testing.assert_array_equal(ours, exact(f))
    x = dz.Variable(np.ones_like(a))
    t = torch.ones(a.shape, dtype=torch.float16, requires_grad=True)
    (x * 0.1).backward(gradient=dz.Variable(a))  # the gradient gy * 0.1 likewise
    (t * 0.1).backward(torch.tensor(a))
    assert x.grad.dtype == np.float16
    np.testing.assert_array_equal(x.grad.data, t.grad.numpy())
    np.testing.assert_array_equal(t.grad.numpy(), exact(lambda v: v * 0.1))
