"""Property-based sweep: random valid arguments for every public array function.

The oracle sweeps (``tests/test_oracle*.py``) compare hand-picked inputs. Here hypothesis
draws the arguments: shapes (0-d, size-1 axes, empty axes where the function allows them),
broadcast-compatible pairs, axes (``None``, ints, negative ints, tuples) with ``keepdims``,
float64 and float32 (integers and booleans where a function takes them), index kinds, the
targets of ``sum_to`` and ``broadcast_to``, and kernel, stride and padding of the
convolutions and poolings within their valid ranges. Each case checks

* the values against PyTorch's (NumPy's where PyTorch has no such function) with tight
  tolerances,
* the output's shape and dtype against PyTorch's, or the deviation ``docs/pytorch.md``
  documents (each restriction of a strategy names its row there),
* in float64, the gradients of ``sum(y * w)`` for a random ``w``, and the second derivatives
  (the gradient of ``sum(g * u)`` for those gradients ``g``), against PyTorch's autograd
  or, where PyTorch has no such function, against an exact NumPy formula or central
  differences (``utils.gradient_check``).

The arrays reach dezero_like in C order, Fortran order, reversed (negative strides) or
strided views. Hypothesis runs derandomized (its examples come from a fixed seed): 60
examples a test, 15 for each function of a table (``pytest.mark.parametrize``), so CI is
deterministic and the file takes about 10 seconds on one core. To search harder for a
while, raise ``max_examples`` and set ``derandomize=False`` locally.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as C
from dezero_like.utils import gradient_check

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the property sweep compares with it")
tF = torch.nn.functional

# warnings.simplefilter inside a test lasts until pytest restores the filters after it
SWEEP = settings(max_examples=60, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# a test run once per function (pytest.mark.parametrize) draws fewer examples for each
SWEEP_EACH = settings(SWEEP, max_examples=15)
FLOATS = st.sampled_from([np.float64, np.float32])
SEEDS = st.integers(0, 2**16)
# float64: only the order of a sum may differ; float32: a unit or two in the last place of
# exp/log/tanh, and sums in another order
TOL = {np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12),
       np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6)}

TORCH_DTYPES = {torch.float64: np.float64, torch.float32: np.float32, torch.float16: np.float16,
                torch.int64: np.int64,
                torch.int32: np.int32, torch.bool: np.bool_, torch.uint8: np.uint8}


def _grad_of_grad(v, y, rng):
    """Draw weights w (y's shape) and u (v's); backpropagate sum(y * w) with a graph, keep the
    first gradient g, then backpropagate sum(g * u): v.grad ends as the second derivative."""
    w = rng.uniform(0.5, 1.5, size=y.shape)
    u = rng.uniform(0.5, 1.5, size=v.shape)
    F.sum(y * dz.Variable(w)).backward(create_graph=True)
    g = v.grad
    v.cleargrad()
    F.sum(g * dz.Variable(u)).backward()
    return w, u, g


def _values(rng, shape, dtype, domain="any"):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return rng.integers(-5 if dtype.kind == "i" else 0, 6, size=shape).astype(dtype)
    low, high = {"any": (-2.0, 2.0), "positive": (0.3, 2.5), "prob": (0.05, 0.95)}[domain]
    return rng.uniform(low, high, size=shape).astype(dtype)


def _np(t):
    return t.detach().numpy()


LAYOUTS = ("C", "Fortran", "reversed", "strided")


def _laid_out(a, layout):
    """The values of ``a`` in a fresh array of the given memory layout: C order, Fortran order,
    a view with negative strides, or every other element of a larger array."""
    if layout == "Fortran":
        return np.asfortranarray(a.copy())
    if layout == "reversed" and a.ndim:
        return np.flip(np.flip(a).copy())
    if layout == "strided" and a.ndim:
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return wide[..., ::2]
    return a.copy()


def _compare(ours, theirs, arrays, *, grad=True, tol=None, dtype_of=None, layout=None):
    """Run ``ours`` on Variables and ``theirs`` on tensors of the same ``arrays``; compare the
    output's shape, dtype and values, then (float64 inputs) the gradients of sum(y * w).

    ``dtype_of``: the expected output dtype when docs/pytorch.md documents another than
    PyTorch's (the caller names the row). ``layout``: how the arrays handed to dezero_like lie
    in memory (``LAYOUTS``); by default one picked from the arrays' values, so the strategies'
    seeds vary it too."""
    if layout is None:
        layout = LAYOUTS[int(sum(a.size for a in arrays) + len(arrays)) % len(LAYOUTS)]
    xs = [dz.Variable(_laid_out(a, layout)) for a in arrays]
    diff = [a.dtype.kind == "f" for a in arrays]
    ts = [torch.tensor(a, requires_grad=d) for a, d in zip(arrays, diff)]
    y = ours(*xs)
    yt = theirs(*ts)
    expected_dtype = np.dtype(dtype_of if dtype_of is not None else TORCH_DTYPES[yt.dtype])
    assert y.shape == tuple(yt.shape), (y.shape, tuple(yt.shape))
    assert y.dtype == expected_dtype, (y.dtype, expected_dtype)
    tol = tol or TOL[np.dtype(y.dtype) if y.dtype.kind == "f" else np.dtype(np.float64)]
    np.testing.assert_allclose(y.data, _np(yt).astype(y.dtype), **tol)
    if not grad or not any(diff) or any(a.dtype != np.float64 for a, d in zip(arrays, diff) if d):
        return
    # the weights in y's dtype: a float64 w times a float32 y would be float64, and PyTorch
    # rounds a gradient to its tensor's dtype where dezero_like need not
    w = np.random.default_rng(y.size).uniform(0.5, 1.5, size=y.shape).astype(
        y.dtype if y.dtype.kind == "f" else np.float64)
    F.sum(y * dz.Variable(w)).backward(create_graph=True)
    used = [t for t, d in zip(ts, diff) if d]
    gts = torch.autograd.grad((yt * torch.tensor(w)).sum(), used, allow_unused=True,
                              create_graph=True)
    leaves = [x for x, d in zip(xs, diff) if d]
    for x, gt in zip(leaves, gts):
        expected = np.zeros(x.shape) if gt is None else _np(gt)
        got = np.zeros(x.shape) if x.grad is None else x.grad.data
        assert got.shape == x.shape and got.dtype == x.dtype, (got.shape, got.dtype, x.shape)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11)
    us = [np.random.default_rng(x.size + 7).uniform(0.5, 1.5, size=x.shape) for x in leaves]
    grads = [x.grad for x in leaves]
    for x in leaves:
        x.cleargrad()
    total = None
    for g, u in zip(grads, us):
        if g is not None:
            term = F.sum(g * dz.Variable(u))
            total = term if total is None else total + term
    pairs = [(gt * torch.tensor(u)).sum() for gt, u in zip(gts, us)
             if gt is not None and gt.requires_grad]
    if not pairs:  # linear in every input: no second derivative in PyTorch either
        return
    if total is not None and total.requires_grad:  # else a first gradient without a graph
        total.backward()
    ggts = torch.autograd.grad(sum(pairs), used, allow_unused=True)
    for x, ggt in zip(leaves, ggts):
        expected = np.zeros(x.shape) if ggt is None else _np(ggt)
        got = np.zeros(x.shape) if x.grad is None else x.grad.data
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10,
                                   err_msg="second derivative")


def _shapes(min_dims=0, max_dims=4, min_side=0, max_side=3):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


# ---- elementwise ---------------------------------------------------------------------------
UNARY = {
    "exp": (F.exp, torch.exp, "any"),
    "sin": (F.sin, torch.sin, "any"),
    "cos": (F.cos, torch.cos, "any"),
    "tanh": (F.tanh, torch.tanh, "any"),
    "log": (F.log, torch.log, "positive"),
    "square": (F.square, torch.square, "any"),
    "neg": (F.neg, torch.neg, "any"),
    "sigmoid": (F.sigmoid, torch.sigmoid, "any"),
    "sigmoid_simple": (F.sigmoid_simple, torch.sigmoid, "any"),
    "relu": (F.relu, torch.relu, "any"),
    "leaky_relu": (lambda x: F.leaky_relu(x, slope=0.13), lambda t: tF.leaky_relu(t, 0.13), "any"),
    "pow 3": (lambda x: x ** 3, lambda t: t ** 3, "any"),
    "pow 0.5": (lambda x: F.pow(x, 0.5), lambda t: t ** 0.5, "positive"),
    "pow -1.5": (lambda x: x ** -1.5, lambda t: t ** -1.5, "positive"),
    "clip": (lambda x: F.clip(x, -0.5, 0.7), lambda t: torch.clamp(t, -0.5, 0.7), "any"),
    "clip below": (lambda x: F.clip(x, None, 0.3), lambda t: torch.clamp(t, None, 0.3), "any"),
    "clip above": (lambda x: F.clip(x, -0.2, None), lambda t: torch.clamp(t, -0.2), "any"),
}
# integer inputs keep their dtype in both where the operation needs no fraction (a float
# bound or slope would make it float64 here, float32 there: docs/pytorch.md, "Arrays of two
# dtypes combine by NumPy's rules")
INTEGER_OK = {"square": UNARY["square"][:2], "neg": UNARY["neg"][:2], "relu": UNARY["relu"][:2],
              "pow 3": UNARY["pow 3"][:2],
              "clip": (lambda x: F.clip(x, -1, 2), lambda t: torch.clamp(t, -1, 2))}


@pytest.mark.parametrize("name", sorted(UNARY))
@SWEEP_EACH
@given(shape=_shapes(), dtype=FLOATS, seed=SEEDS)
def test_elementwise_functions_match_torch(name, shape, dtype, seed):
    ours, theirs, domain = UNARY[name]
    _compare(ours, theirs, [_values(np.random.default_rng(seed), shape, dtype, domain)])


@pytest.mark.parametrize("name", sorted(INTEGER_OK))
@SWEEP_EACH
@given(shape=_shapes(), seed=SEEDS,
       dtype=st.sampled_from([np.int64, np.int32]))
def test_elementwise_functions_of_integers_keep_their_dtype(name, shape, dtype, seed):
    ours, theirs = INTEGER_OK[name]
    _compare(ours, theirs, [_values(np.random.default_rng(seed), shape, dtype)])


BINARY = {
    "add": (F.add, torch.add), "sub": (F.sub, torch.sub), "mul": (F.mul, torch.mul),
    "div": (F.div, torch.div), "rsub": (F.rsub, lambda a, b: b - a),
    "rdiv": (F.rdiv, lambda a, b: b / a),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SWEEP_EACH
@given(dtype=FLOATS, seed=SEEDS,
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0,
                                                max_side=3))
def test_broadcasting_binary_operators_match_torch(name, shapes, dtype, seed):
    ours, theirs = BINARY[name]
    rng = np.random.default_rng(seed)
    domain = "positive" if name in ("div", "rdiv") else "any"  # no division by ~0
    a, b = (_values(rng, s, dtype, domain) for s in shapes.input_shapes)
    _compare(ours, theirs, [a, b])


@pytest.mark.parametrize("name", sorted(BINARY))
@SWEEP_EACH
@given(shape=_shapes(), dtype=FLOATS, seed=SEEDS,
       c=st.sampled_from([2, -3, 0.5, 1.25]), left=st.booleans())
def test_binary_operators_with_a_python_number_match_torch(name, shape, dtype, seed, c, left):
    ours, theirs = BINARY[name]
    x = _values(np.random.default_rng(seed), shape, dtype, "positive")
    if left:
        _compare(lambda v: ours(c, v), lambda t: theirs(c, t) if name not in ("rsub", "rdiv")
                 else {"rsub": t - c, "rdiv": t / c}[name], [x])
    else:
        _compare(lambda v: ours(v, c), lambda t: theirs(t, c), [x])


# ---- reductions ----------------------------------------------------------------------------
@st.composite
def _reduction(draw, min_side=0):
    shape = draw(_shapes(min_side=min_side))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"] if nd else ["none"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-nd, nd - 1))
    else:
        # F.sum(x, axis=()) reduces over nothing, PyTorch's over everything: docs/pytorch.md,
        # the row "F.sum(x, axis=()) ...": so a tuple holds at least one axis here
        picked = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        axis = tuple(a - nd if draw(st.booleans()) else a for a in picked)
    return shape, axis, draw(st.booleans())


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


REDUCTIONS = {
    "sum": (F.sum, lambda t, d, k: torch.sum(t, dim=d, keepdim=k)),
    "mean": (F.mean, lambda t, d, k: torch.mean(t, dim=d, keepdim=k)),
    "average": (F.average, lambda t, d, k: torch.mean(t, dim=d, keepdim=k)),
    "max": (F.max, lambda t, d, k: torch.amax(t, dim=d, keepdim=k)),
    "min": (F.min, lambda t, d, k: torch.amin(t, dim=d, keepdim=k)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SWEEP_EACH
@given(case=_reduction(), dtype=FLOATS, seed=SEEDS)
def test_reductions_match_torch(name, case, dtype, seed):
    shape, axis, keepdims = case
    ours, theirs = REDUCTIONS[name]
    dims = _dims(axis, len(shape))
    reduced = [shape[d] for d in ((dims,) if isinstance(dims, int) else dims)]
    if name in ("max", "min") and 0 in reduced:
        # no maximum of nothing: NumPy and PyTorch both refuse it
        reduced = []
        shape = tuple(max(s, 1) for s in shape)
    x = _values(np.random.default_rng(seed), shape, dtype)
    with warnings.catch_warnings():  # the mean of an empty axis is nan in both
        warnings.simplefilter("ignore", RuntimeWarning)
        _compare(lambda v: ours(v, axis=axis, keepdims=keepdims),
                 lambda t: theirs(t, dims, keepdims), [x])


@SWEEP
@given(case=_reduction(), seed=SEEDS,
       dtype=st.sampled_from([np.int32, np.int64, np.bool_, np.uint8]))
def test_sum_of_integers_and_booleans_is_int64_as_in_torch(case, dtype, seed):
    # docs/pytorch.md, "F.sum and sum_to of unsigned integers ... added up in int64"
    shape, axis, keepdims = case
    x = _values(np.random.default_rng(seed), shape, dtype)
    _compare(lambda v: F.sum(v, axis=axis, keepdims=keepdims),
             lambda t: torch.sum(t, dim=_dims(axis, len(shape)), keepdim=keepdims), [x])


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SWEEP_EACH
@given(case=_reduction(min_side=1), seed=SEEDS,
       dtype=st.sampled_from([np.int32, np.int64]))
def test_reductions_of_integers_match_torch(name, case, dtype, seed):
    # max, min and sum as PyTorch; the mean of integers is float64 (docs/pytorch.md, "Arrays
    # of two dtypes combine by NumPy's rules ...: F.exp and F.mean of integers give float64";
    # PyTorch refuses it), so it is compared with PyTorch's mean of the float64 values
    shape, axis, keepdims = case
    ours, theirs = REDUCTIONS[name]
    x = _values(np.random.default_rng(seed), shape, dtype)
    mean = name in ("mean", "average")
    _compare(lambda v: ours(v, axis=axis, keepdims=keepdims),
             lambda t: theirs(t.double() if mean else t, _dims(axis, len(shape)), keepdims), [x])


FLOAT_OF_INTEGERS = {
    "exp": (F.exp, torch.exp), "sin": (F.sin, torch.sin), "cos": (F.cos, torch.cos),
    "tanh": (F.tanh, torch.tanh), "sigmoid": (F.sigmoid, torch.sigmoid),
    "log": (F.log, torch.log),
    "leaky_relu": (lambda v: F.leaky_relu(v, slope=0.25), lambda t: tF.leaky_relu(t, 0.25)),
    "softmax": (lambda v: F.softmax(v, axis=-1), lambda t: torch.softmax(t, -1)),
    "log_softmax": (lambda v: F.log_softmax(v, axis=0), lambda t: torch.log_softmax(t, 0)),
}


@pytest.mark.parametrize("name", sorted(FLOAT_OF_INTEGERS))
@SWEEP_EACH
@given(shape=_shapes(min_dims=1),
       dtype=st.sampled_from([np.int32, np.int64, np.uint8]), seed=SEEDS)
def test_float_functions_of_integers_give_float64(name, shape, dtype, seed):
    # docs/pytorch.md, "... take integers to float64: ... F.exp ... of integers give float64"
    # (PyTorch: float32); the values are PyTorch's from the float64 of the same integers
    ours, theirs = FLOAT_OF_INTEGERS[name]
    x = np.random.default_rng(seed).integers(1, 6, size=shape).astype(dtype)
    _compare(ours, lambda t: theirs(t.double()), [x], dtype_of=np.float64)


@SWEEP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, min_side=0,
                                                max_side=3),
       dtype=FLOATS, seed=SEEDS)
def test_clip_with_array_bounds_matches_torch(shapes, dtype, seed):
    # the bounds broadcast to x's shape (clip keeps x's shape), so x takes the result's shape
    xs, lo_shape, hi_shape = shapes.input_shapes
    rng = np.random.default_rng(seed)
    x = _values(rng, shapes.result_shape, dtype)
    lo = rng.uniform(-1.5, 0, size=lo_shape).astype(dtype)
    hi = rng.uniform(0, 1.5, size=hi_shape).astype(dtype)
    _compare(lambda v: F.clip(v, lo, hi),
             lambda t: torch.clamp(t, torch.tensor(lo), torch.tensor(hi)), [x])


@SWEEP
@given(shape=_shapes(), slope=st.sampled_from([0.01, 0.2, 1.0, 1.5, -0.3, 0.0]),
       dtype=FLOATS, seed=SEEDS)
def test_leaky_relu_with_any_slope_matches_torch(shape, slope, dtype, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    _compare(lambda v: F.leaky_relu(v, slope=slope), lambda t: tF.leaky_relu(t, slope), [x])


@SWEEP
@given(shape=_shapes(), ratio=st.sampled_from([0.0, 0.1, 0.5, 0.9]), train=st.booleans(),
       dtype=FLOATS, seed=SEEDS)
def test_dropout_keeps_or_scales_each_element_and_routes_its_gradient(shape, ratio, train,
                                                                      dtype, seed):
    # random, so no oracle: each element is either 0 or x / (1 - ratio) in training, x in
    # evaluation, and the gradient is the same factor times gy
    x = _values(np.random.default_rng(seed), shape, dtype, "positive")
    v = dz.Variable(x.copy())
    with dz.using_config("train", train):
        y = F.dropout(v, ratio)
    assert y.shape == x.shape and y.dtype == x.dtype
    factor = y.data / x
    scale = np.asarray(1 / (1 - ratio), dtype=dtype) if train else np.asarray(1, dtype=dtype)
    kept = np.isclose(factor, scale, **TOL[np.dtype(dtype)])
    assert np.all(kept | (y.data == 0)), factor
    w = np.random.default_rng(seed).uniform(0.5, 1.5, size=shape).astype(dtype)
    F.sum(y * dz.Variable(w)).backward()
    np.testing.assert_allclose(v.grad.data, np.where(kept, scale * w, 0), **TOL[np.dtype(dtype)])


# ---- shapes --------------------------------------------------------------------------------
@SWEEP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0,
                                                max_side=3),
       dtype=FLOATS, seed=SEEDS)
def test_broadcast_to_and_sum_to_match_torch(shapes, dtype, seed):
    small = shapes.input_shapes[0]
    big = shapes.result_shape
    rng = np.random.default_rng(seed)
    _compare(lambda v: F.broadcast_to(v, big), lambda t: t.broadcast_to(big),
             [_values(rng, small, dtype)])
    _compare(lambda v: F.sum_to(v, small), lambda t: t.sum_to_size(small) if small else t.sum(),
             [_values(rng, big, dtype)])


@st.composite
def _reshape(draw):
    shape = draw(_shapes())
    size = int(np.prod(shape))
    dims = list(shape) + [1] * draw(st.integers(0, 2))
    dims = draw(st.permutations(dims))
    if draw(st.booleans()) and len(dims) >= 2:  # merge two neighbours
        i = draw(st.integers(0, len(dims) - 2))
        dims = dims[:i] + [dims[i] * dims[i + 1]] + dims[i + 2:]
    if size and dims and draw(st.booleans()):  # one axis left for reshape to solve
        dims[draw(st.integers(0, len(dims) - 1))] = -1
    return shape, tuple(dims)


@SWEEP
@given(case=_reshape(), dtype=FLOATS, seed=SEEDS)
def test_reshape_matches_torch(case, dtype, seed):
    shape, target = case
    x = _values(np.random.default_rng(seed), shape, dtype)
    _compare(lambda v: F.reshape(v, target), lambda t: t.reshape(target), [x])


@st.composite
def _transpose(draw):
    shape = draw(_shapes())
    nd = len(shape)
    if draw(st.booleans()):
        return shape, None
    perm = draw(st.permutations(range(nd)))
    return shape, tuple(a - nd if draw(st.booleans()) else a for a in perm)


@SWEEP
@given(case=_transpose(), dtype=FLOATS, seed=SEEDS)
def test_transpose_matches_torch(case, dtype, seed):
    shape, axes = case
    x = _values(np.random.default_rng(seed), shape, dtype)
    perm = tuple(reversed(range(len(shape)))) if axes is None else axes
    _compare(lambda v: F.transpose(v, axes), lambda t: t.permute(perm), [x])


@SWEEP
@given(shape=_shapes(), data=st.data(), dtype=FLOATS, seed=SEEDS)
def test_expand_dims_and_flatten_match_torch(shape, data, dtype, seed):
    x = _values(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _compare(lambda v: F.expand_dims(v, axis), lambda t: t.unsqueeze(axis), [x])
    if len(shape) >= 2:  # torch.flatten(t, 1) of a 1-d t has no axis 1
        _compare(F.flatten, lambda t: torch.flatten(t, 1), [x])


@st.composite
def _index(draw):
    shape = draw(_shapes(min_dims=0, min_side=0))
    kinds = ["basic", "array", "mask", "row mask", "mixed"] if shape else ["basic", "mask"]
    kind = draw(st.sampled_from(kinds))
    if kind == "basic":  # ints (negative too), slices with steps, None, Ellipsis
        index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True,
                                       allow_ellipsis=True))
    elif kind == "array" and shape[0]:  # integer arrays, with repeats and negatives
        index = draw(hnp.integer_array_indices(
            shape[:1], result_shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=4)))[0]
    elif kind == "mask":
        index = np.asarray(draw(hnp.arrays(np.bool_, shape)))
    elif kind == "row mask":
        index = np.asarray(draw(hnp.arrays(np.bool_, shape[:1])))
    else:  # a slice then a list of ints, when there is a second axis
        if len(shape) < 2 or not shape[1]:
            return shape, (slice(None, None, -1),)
        rows = draw(st.lists(st.integers(-shape[1], shape[1] - 1), min_size=1, max_size=4))
        index = (slice(None, None, draw(st.sampled_from([1, -1, 2]))), rows)
    return shape, index


@SWEEP
@given(case=_index(), dtype=FLOATS, seed=SEEDS)
def test_get_item_matches_numpy_and_adds_repeats_up(case, dtype, seed):
    # PyTorch refuses negative slice steps, so NumPy is the oracle: the value is x[index] and
    # the gradient of sum(y * w) is w added (np.add.at) back where each element came from
    shape, index = case
    x = _values(np.random.default_rng(seed), shape, dtype)
    v = dz.Variable(x.copy())
    y = F.get_item(v, index)
    expected = x[index]
    assert y.shape == expected.shape and y.dtype == expected.dtype
    np.testing.assert_array_equal(y.data, expected)
    w = np.random.default_rng(seed + 1).uniform(0.5, 1.5, size=y.shape).astype(dtype)
    F.sum(y * dz.Variable(w)).backward()
    g = np.zeros_like(x)
    np.add.at(g, index, w)
    assert v.grad.shape == x.shape and v.grad.dtype == x.dtype
    np.testing.assert_allclose(v.grad.data, g, **TOL[np.dtype(dtype)])


@SWEEP
@given(case=_index(), seed=SEEDS)
def test_get_item_second_derivative_scatters_back(case, seed):
    # y = x[index] ** 3: the first gradient is 3 x[index]**2 w added back where each element came
    # from (GetItemGrad), and the gradient of sum(g * u) through it is 6 x[index] w u[index]
    shape, index = case
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, np.float64)
    v = dz.Variable(x.copy())
    y = F.get_item(v, index) ** 3
    w, u, g = _grad_of_grad(v, y, rng)
    expected_g, expected_gg = np.zeros_like(x), np.zeros_like(x)
    np.add.at(expected_g, index, 3 * x[index] ** 2 * w)
    np.add.at(expected_gg, index, 6 * x[index] * w * u[index])
    np.testing.assert_allclose(g.data, expected_g, rtol=1e-12, atol=1e-14)
    got = np.zeros_like(x) if v.grad is None else v.grad.data  # nothing picked: no gradient
    np.testing.assert_allclose(got, expected_gg, rtol=1e-12, atol=1e-14)


# ---- matrix products -----------------------------------------------------------------------
@SWEEP
@given(shapes=hnp.mutually_broadcastable_shapes(signature="(m?,n),(n,p?)->(m?,p?)",
                                                max_dims=3, min_side=0, max_side=3),
       dtype=st.sampled_from([np.float64, np.float32, np.int64]), seed=SEEDS)
def test_matmul_matches_torch(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = (_values(rng, s, dtype) for s in shapes.input_shapes)
    _compare(F.matmul, torch.matmul, [a, b])


@SWEEP
@given(n=st.integers(0, 4), i=st.integers(0, 4), o=st.integers(0, 4), bias=st.booleans(),
       simple=st.booleans(), dtype=FLOATS, seed=SEEDS)
def test_linear_matches_torch(n, i, o, bias, simple, dtype, seed):
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, (n, i), dtype), _values(rng, (i, o), dtype)]
    if bias:
        arrays.append(_values(rng, (o,), dtype))
    fn = F.linear_simple if simple else F.linear
    _compare(lambda x, W, b=None: fn(x, W, b), lambda x, W, b=None: tF.linear(x, W.T, b), arrays)


# ---- softmax and losses --------------------------------------------------------------------
SOFTMAX = {"softmax": (F.softmax, torch.softmax), "log_softmax": (F.log_softmax,
                                                                   torch.log_softmax),
           "softmax_simple": (F.softmax_simple, torch.softmax)}


@pytest.mark.parametrize("name", sorted(SOFTMAX))
@SWEEP_EACH
@given(shape=_shapes(), data=st.data(), dtype=FLOATS,
       seed=SEEDS)
def test_softmax_along_any_axis_matches_torch(name, shape, data, dtype, seed):
    # a 0-d input takes axis 0 or -1 only: docs/pytorch.md, "softmax ... of a 0-d input"
    nd = max(len(shape), 1)
    axis = data.draw(st.integers(-nd, nd - 1))
    ours, theirs = SOFTMAX[name]
    x = _values(np.random.default_rng(seed), shape, dtype)
    _compare(lambda v: ours(v, axis=axis), lambda t: theirs(t, axis), [x])


@SWEEP
@given(n=st.integers(0, 5), c=st.integers(1, 4), simple=st.booleans(), dtype=FLOATS,
       seed=SEEDS)
def test_softmax_cross_entropy_matches_torch(n, c, simple, dtype, seed):
    rng = np.random.default_rng(seed)
    x = _values(rng, (n, c), dtype)
    t = rng.integers(0, c, size=n)
    fn = F.softmax_cross_entropy_simple if simple else F.softmax_cross_entropy
    warnings.simplefilter("ignore", RuntimeWarning)  # n = 0: 0 / 0, nan in both
    _compare(lambda v: fn(v, t), lambda u: tF.cross_entropy(u, torch.tensor(t)), [x])


@pytest.mark.parametrize("name", ["mean_squared_error", "mean_squared_error_simple",
                                  "sigmoid_cross_entropy", "binary_cross_entropy"])
@SWEEP_EACH
@given(shape=_shapes(min_dims=1), dtype=FLOATS, seed=SEEDS)
def test_losses_divided_by_the_batch_size_match_torch(shape, name, dtype, seed):
    # docs/pytorch.md, "mean_squared_error ... is sum((x0 - x1)**2) / len(x0)": PyTorch's
    # reduction="sum" divided by len(x), and the targets of the two cross entropies are
    # constants ("The targets of sigmoid_cross_entropy ... get no gradient")
    rng = np.random.default_rng(seed)
    n = shape[0]  # 0: an empty batch, nan in both (0 / 0)
    warnings.simplefilter("ignore", RuntimeWarning)
    if name.startswith("mean_squared"):
        fn = getattr(F, name)
        _compare(fn, lambda a, b: tF.mse_loss(a, b, reduction="sum") / n,
                 [_values(rng, shape, dtype), _values(rng, shape, dtype)])
        return
    t = (rng.random(shape) < 0.5).astype(dtype)
    if name == "sigmoid_cross_entropy":
        _compare(lambda v: F.sigmoid_cross_entropy(v, t),
                 lambda u: tF.binary_cross_entropy_with_logits(u, torch.tensor(t),
                                                               reduction="sum") / n,
                 [_values(rng, shape, dtype)])
    else:
        _compare(lambda v: F.binary_cross_entropy(v, t),
                 lambda u: tF.binary_cross_entropy(u, torch.tensor(t), reduction="sum") / n,
                 [_values(rng, shape, dtype, "prob")])


@SWEEP
@given(n=st.integers(1, 6), c=st.integers(2, 4), dtype=FLOATS, seed=SEEDS)
def test_accuracy_matches_numpy(n, c, dtype, seed):
    # one column (C = 1) is refused with a ValueError that names the binary comparison
    rng = np.random.default_rng(seed)
    y = _values(rng, (n, c), dtype)
    t = rng.integers(0, c, size=n)
    acc = F.accuracy(dz.Variable(y), t)
    assert acc.shape == () and acc.dtype == dtype  # the fraction in the scores' dtype
    np.testing.assert_allclose(acc.data, np.mean(y.argmax(axis=1) == t), **TOL[np.dtype(dtype)])


@SWEEP
@given(shape=_shapes(), src=st.sampled_from([np.float64, np.float32, np.int32]),
       dst=st.sampled_from([np.float64, np.float32, np.float16]), seed=SEEDS)
def test_astype_matches_torch(shape, src, dst, seed):
    x = _values(np.random.default_rng(seed), shape, src)
    _compare(lambda v: F.astype(v, dst), lambda t: t.to(getattr(torch, np.dtype(dst).name)), [x],
             tol=dict(rtol=0, atol=0))


# ---- convolutions and pooling --------------------------------------------------------------
@st.composite
def _window(draw, max_pad=None):
    """An image batch and a window that fits it: (N, C, H, W), kernel, stride, pad."""
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    top = max_pad or (lambda kk: kk + 1)  # convolutions take any padding, as PyTorch
    p = (draw(st.integers(0, top(k[0]))), draw(st.integers(0, top(k[1]))))
    hw = tuple(draw(st.integers(max(1, k[i] - 2 * p[i]), k[i] + 3)) for i in range(2))
    n, c = draw(st.integers(0, 2)), draw(st.integers(1, 3))  # an empty batch too
    plain = draw(st.booleans())  # ints when the two sides are equal, else pairs
    args = [v[0] if plain and v[0] == v[1] else v for v in (k, s, p)]
    return (n, c) + hw, k, s, p, args


@SWEEP
# at least one channel in and out: PyTorch refuses a weight of 0 output channels, and with 0
# input channels it returns 0 output channels, where the empty sum is 0 here
@given(case=_window(), oc=st.integers(1, 3), bias=st.booleans(), simple=st.booleans(),
       dtype=FLOATS, seed=SEEDS)
def test_conv2d_matches_torch(case, oc, bias, simple, dtype, seed):
    shape, k, s, p, (ka, sa, pa) = case
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, shape, dtype), _values(rng, (oc, shape[1]) + k, dtype)]
    if bias:
        arrays.append(_values(rng, (oc,), dtype))
    fn = C.conv2d_simple if simple else C.conv2d
    _compare(lambda x, W, b=None: fn(x, W, b, stride=sa, pad=pa),
             lambda x, W, b=None: tF.conv2d(x, W, b, stride=s, padding=p), arrays)


@SWEEP
@given(case=_window(), oc=st.integers(1, 3), bias=st.booleans(), extra=st.data(), dtype=FLOATS,
       seed=SEEDS)
def test_deconv2d_matches_torch(case, oc, bias, extra, dtype, seed):
    shape, k, s, p, (ka, sa, pa) = case
    out = [(shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(2)]
    while min(out) < 1:  # the padding would crop more than the whole output: a larger x
        shape = shape[:2] + tuple(shape[2 + i] + 1 for i in range(2))
        out = [(shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(2)]
    # outsize may ask for up to stride - 1 more rows and columns: PyTorch's output_padding
    more = tuple(extra.draw(st.integers(0, s[i] - 1)) for i in range(2))
    outsize = None if not any(more) and extra.draw(st.booleans()) else \
        tuple(o + m for o, m in zip(out, more))
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, shape, dtype), _values(rng, (shape[1], oc) + k, dtype)]
    if bias:
        arrays.append(_values(rng, (oc,), dtype))
    _compare(lambda x, W, b=None: C.deconv2d(x, W, b, stride=sa, pad=pa, outsize=outsize),
             lambda x, W, b=None: tF.conv_transpose2d(x, W, b, stride=s, padding=p,
                                                      output_padding=more), arrays)


@pytest.mark.parametrize("name", ["pooling", "pooling_simple", "average_pooling"])
@SWEEP_EACH
@given(case=_window(max_pad=lambda k: k // 2), default_stride=st.booleans(), dtype=FLOATS,
       seed=SEEDS)
def test_pooling_matches_torch(case, name, default_stride, dtype, seed):
    # padding up to kernel // 2, PyTorch's limit: docs/pytorch.md, "Pooling accepts padding
    # up to kernel - 1"; average pooling counts the padding (count_include_pad=True)
    shape, k, s, p, (ka, sa, pa) = case
    if default_stride:
        s, sa = k, None
    x = _values(np.random.default_rng(seed), shape, dtype)
    if name == "pooling_simple":
        # the book's pooling_simple pads with 0 (im2col), so padding can win a window of
        # negative values: docs/pytorch.md, "The book's softmax_simple, ... and pooling_simple"
        x = np.abs(x)
    fn = getattr(C, name)
    theirs = tF.avg_pool2d if name == "average_pooling" else tF.max_pool2d
    _compare(lambda v: fn(v, ka, sa, pa), lambda t: theirs(t, k, s, p), [x])


@SWEEP
@given(case=_window(), dtype=FLOATS, seed=SEEDS)
def test_im2col_and_col2im_match_torch_unfold_and_fold(case, dtype, seed):
    shape, k, s, p, (ka, sa, pa) = case
    n, c, h, w = shape
    oh, ow = ((h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1)
    rng = np.random.default_rng(seed)
    _compare(lambda v: F.reshape(C.im2col(v, ka, sa, pa, to_matrix=False),
                                 (n, c * k[0] * k[1], oh * ow)),
             lambda t: tF.unfold(t, k, stride=s, padding=p), [_values(rng, shape, dtype)])
    col = _values(rng, (n, c, k[0], k[1], oh, ow), dtype)
    _compare(lambda v: C.col2im(v, shape, ka, sa, pa, to_matrix=False),
             lambda t: tF.fold(t.reshape(n, c * k[0] * k[1], oh * ow), (h, w), k, stride=s,
                               padding=p), [col])


@SWEEP
@given(shape=st.sampled_from([(2, 3), (3, 1), (2, 2, 3, 2), (3, 1, 1, 2), (1, 2, 2, 1)]),
       simple=st.booleans(), decay=st.sampled_from([0.9, 0.5]), dtype=FLOATS, seed=SEEDS)
def test_batch_norm_in_training_matches_torch(shape, simple, decay, dtype, seed):
    rng = np.random.default_rng(seed)
    c = shape[1]
    mean, var = rng.uniform(-1, 1, c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype)
    ours_mean, ours_var = mean.copy(), var.copy()
    t_mean, t_var = torch.tensor(mean), torch.tensor(var)
    fn = C.batch_norm_simple if simple else C.batch_norm
    with dz.using_config("train", True):
        _compare(lambda x, g, b: fn(x, g, b, ours_mean, ours_var, decay=decay, eps=1e-3),
                 lambda x, g, b: tF.batch_norm(x, t_mean, t_var, g, b, training=True,
                                               momentum=1 - decay, eps=1e-3),
                 [_values(rng, shape, dtype), _values(rng, (c,), dtype),
                  _values(rng, (c,), dtype)])
    np.testing.assert_allclose(ours_mean, _np(t_mean), **TOL[np.dtype(dtype)])
    np.testing.assert_allclose(ours_var, _np(t_var), **TOL[np.dtype(dtype)])


@SWEEP
@given(shape=st.sampled_from([(2, 3), (0, 2), (2, 2, 3, 2), (1, 1, 1, 2)]), dtype=FLOATS,
       seed=SEEDS)
def test_batch_norm_in_evaluation_matches_torch(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    c = shape[1]
    mean, var = rng.uniform(-1, 1, c).astype(dtype), rng.uniform(0.5, 2, c).astype(dtype)
    with dz.using_config("train", False):
        _compare(lambda x, g, b: C.batch_norm(x, g, b, mean, var, eps=1e-3),
                 lambda x, g, b: tF.batch_norm(x, torch.tensor(mean), torch.tensor(var), g, b,
                                               training=False, eps=1e-3),
                 [_values(rng, shape, dtype), _values(rng, (c,), dtype),
                  _values(rng, (c,), dtype)])


@SWEEP
@given(ids=hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4),
       vocab=st.integers(1, 5), dim=st.integers(0, 3), dtype=FLOATS, seed=SEEDS)
def test_embed_id_matches_torch(ids, vocab, dim, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, size=ids)  # repeated ids add their gradients up
    _compare(lambda W: C.embed_id(x, W), lambda W: tF.embedding(torch.tensor(x), W),
             [_values(rng, (vocab, dim), dtype)])


# ---- central differences where the oracle above is not autograd ----------------------------
@SWEEP
@given(case=_index(), seed=SEEDS)
def test_get_item_gradient_matches_central_differences(case, seed):
    shape, index = case
    x = _values(np.random.default_rng(seed), shape, np.float64)
    assert gradient_check(lambda v: F.get_item(v, index), x)


@SWEEP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0,
                                                max_side=3), seed=SEEDS)
def test_sum_to_gradient_matches_central_differences(shapes, seed):
    small = shapes.input_shapes[0]
    x = _values(np.random.default_rng(seed), shapes.result_shape, np.float64)
    assert gradient_check(lambda v: F.sum_to(v, small), x)


# ---- ties and kinks ------------------------------------------------------------------------
TIES = {  # values drawn from a few whole numbers, so maxima tie and inputs sit on the kinks
    "max": (lambda v, a, k: F.max(v, axis=a, keepdims=k),
            lambda t, a, k: torch.amax(t, dim=_dims(a, t.ndim), keepdim=k)),
    "min": (lambda v, a, k: F.min(v, axis=a, keepdims=k),
            lambda t, a, k: torch.amin(t, dim=_dims(a, t.ndim), keepdim=k)),
    # docs/pytorch.md, "clip at exactly x_min or x_max ..., relu at 0 and -0": torch's rules
    "relu": (lambda v, a, k: F.relu(v), lambda t, a, k: torch.relu(t)),
    "clip": (lambda v, a, k: F.clip(v, -1.0, 1.0), lambda t, a, k: torch.clamp(t, -1.0, 1.0)),
    "clip to a point": (lambda v, a, k: F.clip(v, 0.0, 0.0),
                        lambda t, a, k: torch.clamp(t, 0.0, 0.0)),
}


@pytest.mark.parametrize("name", sorted(TIES))
@SWEEP_EACH
@given(case=_reduction(min_side=1), dtype=FLOATS,
       seed=SEEDS)
def test_ties_and_kinks_follow_torch(name, case, dtype, seed):
    # docs/pytorch.md, "F.max / F.min with ties": the tied elements share the gradient, as in
    # torch.amax and torch.amin
    shape, axis, keepdims = case
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([-1.0, -0.0, 0.0, 1.0], dtype=dtype), size=shape)
    ours, theirs = TIES[name]
    _compare(lambda v: ours(v, axis, keepdims), lambda t: theirs(t, axis, keepdims),
             [np.asarray(x)])


@SWEEP
@given(case=_window(max_pad=lambda k: k // 2), seed=SEEDS)
def test_max_pooling_ties_go_to_the_first_maximum_as_in_torch(case, seed):
    # docs/pytorch.md, "ties in max pooling": the first maximum in reading order wins
    shape, k, s, p, (ka, sa, pa) = case
    x = np.random.default_rng(seed).choice(np.array([0.0, 1.0]), size=shape)
    _compare(lambda v: C.pooling(v, ka, sa, pa), lambda t: tF.max_pool2d(t, k, s, p), [x])


# ---- two dtypes ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BINARY))
@SWEEP_EACH
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0,
                                                max_side=3),
       dtypes=st.tuples(*[st.sampled_from([np.float64, np.float32, np.float16, np.int32])] * 2)
       .filter(lambda d: np.float64 in d or np.float32 in d or np.float16 in d),
       seed=SEEDS)
def test_two_dtypes_combine_by_numpys_rules(name, shapes, dtypes, seed):
    # docs/pytorch.md, "Arrays of two dtypes combine by NumPy's rules, which count a 0-d array
    # as fully as any other and take integers to float64": the result has np.result_type's
    # dtype and PyTorch's values computed in that dtype; each leaf's gradient has its own dtype
    rng = np.random.default_rng(seed)
    a, b = (_values(rng, s, d, "positive") if np.dtype(d).kind == "f"
            else rng.integers(1, 4, size=s).astype(d) for s, d in zip(shapes.input_shapes, dtypes))
    ours, theirs = BINARY[name]
    out = np.result_type(a, b) if name not in ("div", "rdiv") else np.result_type(a, b, 1.0)
    xa, xb = dz.Variable(a.copy()), dz.Variable(b.copy())
    y = ours(xa, xb)
    assert y.dtype == out and y.shape == shapes.result_shape
    ta, tb = (torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in (a, b))
    yt = theirs(ta.to(getattr(torch, out.name)), tb.to(getattr(torch, out.name)))
    tol = TOL.get(out)
    if out == np.float16:  # one rounding to float16 in both; compare to its half unit
        tol = dict(rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(y.data.astype(np.float64), _np(yt).astype(np.float64), **tol)
    w = np.random.default_rng(seed).uniform(0.5, 1.5, size=y.shape).astype(out)
    F.sum(y * dz.Variable(w)).backward()
    diff = [(x, t) for x, t in ((xa, ta), (xb, tb)) if t.requires_grad]
    gts = torch.autograd.grad((yt * torch.tensor(w)).sum(), [t for _, t in diff])
    for (x, _), gt in zip(diff, gts):
        assert x.grad.dtype == x.dtype and x.grad.shape == x.shape
        loose = min(np.finfo(x.dtype).eps, np.finfo(out).eps) ** 0.5 if x.dtype != out else None
        gtol = tol if loose is None else dict(rtol=max(loose, 1e-6), atol=1e-6)
        np.testing.assert_allclose(x.grad.data.astype(np.float64), _np(gt).astype(np.float64),
                                   **gtol)


@SWEEP
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0,
                                                max_side=3),
       dtype=st.sampled_from([np.int32, np.int64, np.uint8, np.bool_]), seed=SEEDS)
def test_sum_to_of_integers_adds_up_in_int64_as_torch_does(shapes, dtype, seed):
    # docs/pytorch.md, "F.sum and sum_to of unsigned integers ... added up in int64"; a target
    # of x's own shape adds nothing and keeps x's dtype, as Tensor.sum_to_size does
    small = shapes.input_shapes[0]
    x = _values(np.random.default_rng(seed), shapes.result_shape, dtype)
    same = small == x.shape  # torch keeps the dtype then too, except for a 0-d x (int64)
    _compare(lambda v: F.sum_to(v, small), lambda t: t.sum_to_size(small), [x],
             dtype_of=x.dtype if same else None)


# ---- second derivatives --------------------------------------------------------------------
def _reversed(t):
    return t.permute(*reversed(range(t.ndim)))


SECOND = {name: (ours, theirs, domain) for name, (ours, theirs, domain) in UNARY.items()
          if not name.startswith(("relu", "leaky", "clip"))}  # piecewise linear: 0 both
SECOND.update({
    "softmax": (lambda v: F.softmax(v, axis=-1), lambda t: torch.softmax(t, -1), "any"),
    "log_softmax": (lambda v: F.log_softmax(v, axis=0), lambda t: torch.log_softmax(t, 0),
                    "any"),
    "sum": (lambda v: F.sum(v, axis=-1, keepdims=True) ** 2,
            lambda t: t.sum(-1, keepdim=True) ** 2, "any"),
    "broadcast": (lambda v: F.broadcast_to(v, (2,) + v.shape) ** 3,
                  lambda t: t.broadcast_to((2,) + t.shape) ** 3, "any"),
    "transpose": (lambda v: F.transpose(v) * F.sin(v.T),
                  lambda t: _reversed(t) * torch.sin(_reversed(t)), "any"),
    "get_item": (lambda v: F.get_item(v, (Ellipsis, [0, 0, -1])) ** 3,
                 lambda t: t[..., [0, 0, -1]] ** 3, "any"),
})


@pytest.mark.parametrize("name", sorted(SECOND))
@SWEEP_EACH
@given(shape=_shapes(min_dims=1, min_side=1),
       seed=SEEDS)
def test_second_derivatives_match_torch(name, shape, seed):
    # the gradient of sum(g * u) for the first gradient g of sum(y * w), in float64
    ours, theirs, domain = SECOND[name]
    rng = np.random.default_rng(seed)
    x = _values(rng, shape, np.float64, domain)
    v, t = dz.Variable(x.copy()), torch.tensor(x, requires_grad=True)
    y, yt = ours(v), theirs(t)
    w, u, g = _grad_of_grad(v, y, rng)
    (gt,) = torch.autograd.grad((yt * torch.tensor(w)).sum(), t, create_graph=True)
    if gt.requires_grad:
        (ggt,) = torch.autograd.grad((gt * torch.tensor(u)).sum(), t, allow_unused=True)
    ggt = np.zeros(x.shape) if not gt.requires_grad or ggt is None else _np(ggt)
    np.testing.assert_allclose(g.data, _np(gt), rtol=1e-9, atol=1e-11)
    got = np.zeros(x.shape) if v.grad is None else v.grad.data  # linear: no second derivative
    np.testing.assert_allclose(got, ggt, rtol=1e-9, atol=1e-11)


# ---- coverage ------------------------------------------------------------------------------
SWEPT = {  # public function -> the test above that draws its arguments
    **{name: "test_elementwise_functions_match_torch" for name in (
        "exp", "sin", "cos", "tanh", "log", "square", "neg", "sigmoid", "sigmoid_simple",
        "relu", "leaky_relu", "pow", "clip")},
    **{name: "test_broadcasting_binary_operators_match_torch" for name in BINARY},
    **{name: "test_reductions_match_torch" for name in REDUCTIONS},
    "broadcast_to": "test_broadcast_to_and_sum_to_match_torch",
    "sum_to": "test_broadcast_to_and_sum_to_match_torch",
    "reshape": "test_reshape_matches_torch", "transpose": "test_transpose_matches_torch",
    "expand_dims": "test_expand_dims_and_flatten_match_torch",
    "flatten": "test_expand_dims_and_flatten_match_torch",
    "get_item": "test_get_item_matches_numpy_and_adds_repeats_up",  # and its 2nd derivative
    "matmul": "test_matmul_matches_torch", "linear": "test_linear_matches_torch",
    "linear_simple": "test_linear_matches_torch",
    **{name: "test_softmax_along_any_axis_matches_torch" for name in SOFTMAX},
    "softmax_cross_entropy": "test_softmax_cross_entropy_matches_torch",
    "softmax_cross_entropy_simple": "test_softmax_cross_entropy_matches_torch",
    **{name: "test_losses_divided_by_the_batch_size_match_torch" for name in (
        "mean_squared_error", "mean_squared_error_simple", "sigmoid_cross_entropy",
        "binary_cross_entropy")},
    "accuracy": "test_accuracy_matches_numpy", "astype": "test_astype_matches_torch",
    "dropout": "test_dropout_keeps_or_scales_each_element_and_routes_its_gradient",
    "conv2d": "test_conv2d_matches_torch", "conv2d_simple": "test_conv2d_matches_torch",
    "deconv2d": "test_deconv2d_matches_torch",
    **{name: "test_pooling_matches_torch" for name in (
        "pooling", "pooling_simple", "average_pooling")},
    "im2col": "test_im2col_and_col2im_match_torch_unfold_and_fold",
    "col2im": "test_im2col_and_col2im_match_torch_unfold_and_fold",
    "batch_norm": "test_batch_norm_in_training_matches_torch",
    "batch_norm_simple": "test_batch_norm_in_training_matches_torch",
    "embed_id": "test_embed_id_matches_torch",
}
NOT_SWEPT = {  # public callables that take no array to differentiate, or are another's alias
    "as_variable", "forward_names", "pair", "get_conv_outsize", "get_deconv_outsize",
    "im2col_array", "col2im_array",  # the array helpers under im2col and col2im
}


def test_every_public_array_function_is_swept():
    public = set()
    for module in (F, C):
        for name in dir(module):
            obj = getattr(module, name)
            if not name.startswith("_") and callable(obj) and not isinstance(obj, type):
                public.add(name)
    aliases = {name for name in public - set(SWEPT)
               if any(getattr(F, name, getattr(C, name, None)) is getattr(F, other, getattr(
                   C, other, None)) for other in SWEPT)}
    missing = public - set(SWEPT) - NOT_SWEPT - aliases
    assert not missing, f"public functions without a property sweep here: {sorted(missing)}"
    assert all(callable(globals()[test]) for test in SWEPT.values())
