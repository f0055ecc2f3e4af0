# %% [markdown]
# # Step 59: Pooling
#
# A convolution finds *where* a pattern occurs. Often the exact position
# does not matter: a stroke of a "7" one pixel further right is still a
# stroke. **Pooling** summarises each small window of a feature map by one
# number, which
#
# * shrinks the map (a 2×2 window with stride 2 keeps a quarter of the
#   values), so later layers cost less and see a larger part of the image;
# * makes the result less sensitive to small shifts;
# * has **no parameters**: it works on each channel separately.
#
# *Max pooling* keeps the largest value of each window, *average pooling*
# the mean. The windows move exactly like a convolution's, so the output size
# is the same formula, $O = \lfloor (H + 2P - K)/S \rfloor + 1$; the stride
# defaults to the window size, so windows do not overlap.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions_conv` gains `Pooling`, `PoolingGrad`, `Pooling2DWithIndexes`,
# `pooling`, `max_pooling`, `AveragePooling`, `AveragePoolingGrad`, `average_pooling`,
# `pooling_simple`; `functions` gains `Max`, `Min`, `max`, `min`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Max pooling first, then average pooling, which shares its window helpers, then the reductions
# `max` and `min`. Backward needs one fact, which "Backward: where does the gradient go?" below
# shows in pictures: the derivative of a window's max is 1 for the element that won and 0 for the
# others, so forward records the winners. The examples and pictures come after these cells, at
# "Max and average on a 4×4 map".
#
# `_pool_geometry` turns the arguments into pairs, gives the stride its default (the kernel size,
# as above) and refuses a padding as large as the kernel, which would make a window of padding
# only.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.functions_conv import _check_geometry, pair


def _pool_geometry(name, x_shape, kernel_size, stride, pad):
    kernel_size = pair(kernel_size)
    stride = kernel_size if stride is None else pair(stride)
    pad = pair(pad)
    _check_geometry(name, x_shape, kernel_size, stride, pad)
    if pad[0] >= kernel_size[0] or pad[1] >= kernel_size[1]:
        raise ValueError(
            f"{name}: pad {pad} must be smaller than the kernel {kernel_size}, otherwise "
            "some windows would see only padding"
        )
    return kernel_size, stride, pad


# %% [markdown]
# Two helpers for pooling. `_window_offsets` yields, for each kernel offset `k`, the strided slice
# that holds element `k` of every window at once, the same slices im2col copies; `_padded` pads an
# input with a given value, and returns it unchanged when there is no padding.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda


def _window_offsets(pool):
    """``(k, index)`` for every kernel offset: ``padded[index]`` is element k of every window."""
    (KH, KW), (SH, SW) = pool.kernel_size, pool.stride
    OH, OW = pool.out_hw
    for i in range(KH):
        for j in range(KW):
            yield i * KW + j, (Ellipsis, slice(i, i + SH * OH, SH), slice(j, j + SW * OW, SW))


def _padded(x, pad, value):
    PH, PW = pad
    if not (PH or PW):
        return x
    xp = cuda.get_array_module(x)
    return xp.pad(x, ((0, 0), (0, 0), (PH, PH), (PW, PW)), mode="constant",
                  constant_values=value)


# %% [markdown]
# `_scatter_to_windows` builds an input-shaped gradient by adding a value into element `k` of every
# window, for each `k`: the pooling version of `col2im`, with no column array in between.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda


def _grad_dtype(pool, gy):
    """The input's dtype for its gradient; an integer image keeps the gradient's own."""
    return pool.dtype if pool.dtype.kind in "fc" else gy.dtype


def _scatter_to_windows(pool, values_at):
    """The input-shaped array that adds ``values_at(k)`` into element k of every window."""
    first = values_at(0)
    xp = cuda.get_array_module(first)
    N, C, H, W = pool.x_shape
    PH, PW = pool.pad
    SH, SW = pool.stride
    g = xp.zeros((N, C, H + 2 * PH + SH - 1, W + 2 * PW + SW - 1),
                 dtype=_grad_dtype(pool, first))
    for k, index in _window_offsets(pool):
        g[index] += values_at(k)
    return g[:, :, PH:PH + H, PW:PW + W]


# %% [markdown]
# `_Pool` is the base class of the pooling functions. `_setup` checks the geometry, keeps only the
# input's shape and dtype (no input array), computes the output size and sets `tiles` when the
# windows cover the image exactly once (stride equal to the kernel, no padding, sizes that
# divide).

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import Function
from dezero_like.functions_conv import get_conv_outsize


class _Pool(Function):
    def __init__(self, kernel_size, stride=None, pad=0):
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad

    def _setup(self, name, x):
        self.kernel_size, self.stride, self.pad = _pool_geometry(
            name, x.shape, self.kernel_size, self.stride, self.pad)
        self.retain_inputs(())
        self.x_shape = x.shape
        self.dtype = x.dtype
        H, W = x.shape[2:]
        (KH, KW), (SH, SW), (PH, PW) = self.kernel_size, self.stride, self.pad
        self.out_hw = (get_conv_outsize(H, KH, SH, PH), get_conv_outsize(W, KW, SW, PW))
        # windows that cover the image exactly once (stride = kernel, no padding, sizes
        # that divide), as in the common 2x2 pooling with stride 2
        self.tiles = (self.stride == self.kernel_size and self.pad == (0, 0)
                      and H % KH == 0 and W % KW == 0)


# %% [markdown]
# The 2x2 window with stride 2 is the pooling nearly every CNN uses, and it has a fast path. A
# 2x2 maximum is a maximum of **pairs taken twice**: first the two elements of each row of a
# window, then the two row results. `_max_pool_2x2` first copies the four elements of every
# window into four separate planes, `q[i, j]` holding element `(i, j)` of each window, one
# contiguous array each. That one copy is the only strided pass: every comparison after it is a
# long NumPy loop over contiguous memory, the case NumPy's vectorised loops are built for
# (on strided pairs `np.maximum` runs several times slower).
#
# Backward needs to know which of each pair won. `_max_pairs` records it in one byte per pair:
# the second element wins when it is greater, so on a tie the first maximum in reading order
# wins, as in PyTorch. A `nan` also wins: a maximum over values one of which is `nan` is `nan`
# (as in `np.max` and PyTorch), and its gradient goes to that `nan`; a comparison alone would
# quietly skip it. Asking every pair "is the second one `nan`?" costs two more passes, and the
# answer is nearly always no. So the fast path compares only, then looks at the (four times
# smaller) result: a window holding a `nan` has a `nan` maximum, so no `nan` in `y` means no
# `nan` anywhere, and the masks are right. Only when there is one are both stages redone with
# the `nan` rule. The masks are then turned into -1 (**every bit set**) and 0, so that
# selecting is bit arithmetic on the floats' bit patterns, viewed as integers of the same width
# by `_bits`: `g & mask` is `g` where the mask is set and exactly `0.0` elsewhere, and
# `g ^ (g & mask)` is the other half. Unlike
# `g * mask`, this never turns an `inf` gradient into `nan` (`inf * 0`), and it is several times
# faster than `np.where` or `np.copyto(..., where=...)` on float arrays.

# %%
#| export dezero_like/functions_conv.py
import numpy as np


def _max_pairs(a, b, out, mask, nan_wins=True):
    """Write ``max(a, b)`` into ``out``, and into the boolean ``mask`` where ``b`` won.

    ``b`` wins when it is greater (so the first of equal values wins) or, with
    ``nan_wins``, ``nan`` (so a ``nan`` propagates and takes the gradient, as in PyTorch).
    """
    np.greater(b, a, out=mask)
    if nan_wins:
        np.logical_or(mask, np.isnan(b), out=mask)
    np.maximum(a, b, out=out)  # nan if either is


def _max_pool_2x2(x, nan_wins=False):
    """2x2 max pooling with stride 2 of a NumPy ``x``: ``y`` and the masks of both stages."""
    N, C, H, W = x.shape
    R, Q = N * C * H // 2, W // 2  # rows of windows, windows per row
    q = np.empty((2, 2, R, Q), dtype=x.dtype)  # q[i, j]: element (i, j) of every window
    np.copyto(q, x.reshape(R, 2, Q, 2).transpose(1, 3, 0, 2))
    across = np.empty((2, R, Q), dtype=np.bool_)  # in row i of a window: did (i, 1) win?
    rows = np.empty((2, R, Q), dtype=x.dtype)
    for i in (0, 1):
        _max_pairs(q[i, 0], q[i, 1], rows[i], across[i], nan_wins)
    down = np.empty((R, Q), dtype=np.bool_)  # did the window's second row win?
    y = np.empty((R, Q), dtype=x.dtype)
    _max_pairs(rows[0], rows[1], y, down, nan_wins)
    if not nan_wins and y.dtype.kind == "f" and np.isnan(y).any():
        return _max_pool_2x2(x, nan_wins=True)  # a nan somewhere: redo with the nan rule
    # backward reads the row masks in the image's order: a window's two rows, one after the other
    across = np.ascontiguousarray(across.transpose(1, 0, 2))
    masks = across.reshape(-1).view(np.int8), down.view(np.int8)
    for mask in masks:
        np.negative(mask, out=mask)  # True is 1, and -1 has every bit set
    return y.reshape(N, C, H // 2, W // 2), masks


# the integer type of each width (a dtype object: NumPy would parse a name such as "i4" anew on
# every view); there is none of 16 bytes, so a longdouble or complex128 takes the general path
_INT_OF_WIDTH = {n: np.dtype(f"i{n}") for n in (1, 2, 4, 8)}


def _bits(a):
    """The same memory seen as integers of the same width: float32 -> int32, and so on."""
    return a.view(_INT_OF_WIDTH[a.dtype.itemsize])


def _pair_spread(g, mask, to_a, to_b):
    """Write ``g`` into ``to_b`` where ``mask`` is set, into ``to_a`` elsewhere; 0 in the other."""
    g, to_b = _bits(g), _bits(to_b)
    np.bitwise_and(g, mask, out=to_b)  # the int8 mask widens to -1 or 0
    np.bitwise_xor(g, to_b, out=_bits(to_a))


def _pair_pick(a, b, mask):
    """``b`` where ``mask`` is set, else ``a``: the winners that :func:`_max_pairs` recorded."""
    return (_bits(a) ^ ((_bits(a) ^ _bits(b)) & mask)).view(a.dtype)


# %% [markdown]
# For any other window, `_max_pool_windows` keeps a running maximum over the `KH * KW` slices of
# `_window_offsets`, one at a time, and records in `indexes` which element of each window won,
# with the same two rules: a later element must be strictly greater to win, and a `nan` always
# wins. (`candidate != candidate` is the array-module-neutral way to ask for `nan`.)

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like import cuda


def _max_pool_windows(pool, x):
    """Max pooling over any windows: ``y`` and the index (0 .. KH*KW-1) of each winner."""
    xp = cuda.get_array_module(x)
    kind = x.dtype.kind  # the padding is the lowest value of x's dtype (-inf for floats)
    low = -np.inf if kind in "fc" else np.iinfo(x.dtype).min if kind in "iu" else False
    padded = _padded(x, pool.pad, low)
    # with padding: which cells are the image's (the padding's -inf must not win a tie
    # with a real -inf, or that element's gradient would be lost)
    real = _padded(xp.ones(x.shape, dtype=bool), pool.pad, False) if any(pool.pad) else None
    y = indexes = won_real = None
    for k, index in _window_offsets(pool):
        candidate = padded[index]
        if y is None:
            y = candidate.copy()
            indexes = xp.zeros(y.shape, dtype=np.int32)
            won_real = None if real is None else real[index].copy()
            continue
        better = candidate > y  # strict: the first maximum wins ties
        better |= candidate != candidate  # and a nan wins, so it propagates
        if real is not None:
            is_real = real[index]
            better |= is_real & ~won_real  # an image cell beats the padding
            xp.copyto(won_real, is_real, where=better)
        xp.copyto(y, candidate, where=better)  # in place: no new arrays per offset
        xp.copyto(indexes, k, where=better)
    return y, indexes


# %% [markdown]
# `Pooling` takes the 2x2 fast path on NumPy arrays (`pair_masks` keeps its two masks) and the
# general one otherwise (`indexes`), also for elements of 16 bytes (`longdouble`, `complex128`):
# NumPy has no integer type that wide to see their bits as. Either way, what is recorded is
# all backward needs.

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like import cuda


class Pooling(_Pool):
    """Max pooling: ``y = max`` of each ``KH x KW`` window (padding counts as ``-inf``).

    The derivative is 1 for the element that won the max (the first one on ties;
    a ``nan`` wins and propagates, as in PyTorch) and 0 for the others, so
    backward routes ``gy`` to the winners (:class:`PoolingGrad`).
    """

    def forward(self, x):
        self._setup("pooling", x)
        xp = cuda.get_array_module(x)
        self.pair_masks = None
        if (self.tiles and self.kernel_size == (2, 2) and xp is np
                and x.dtype.itemsize in _INT_OF_WIDTH):  # max of pairs, twice
            y, self.pair_masks = _max_pool_2x2(x)
            return y
        y, self.indexes = _max_pool_windows(self, x)
        return y

    def backward(self, gy):
        return PoolingGrad(self)(gy)


# %% [markdown]
# `PoolingGrad` sends each output gradient to the winning element of its window and puts 0
# elsewhere. On the 2x2 path it undoes the two stages in reverse order: each gradient goes to the
# winning row, then to the winning element of that row (`_pair_spread`). Otherwise it adds
# through `_scatter_to_windows`, since windows may overlap.

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function


class PoolingGrad(Function):
    """Routes each output gradient to the input element that won the max.

    Linear in ``gy`` (for fixed winners); its backward picks the same winners
    out of ``ggx`` (:class:`Pooling2DWithIndexes`).
    """

    def __init__(self, pool):
        self.pool = pool

    def forward(self, gy):
        self.retain_inputs(())
        xp = cuda.get_array_module(gy)
        if self.pool.pair_masks is not None:  # the 2x2 path: undo its two stages
            across, down = self.pool.pair_masks
            N, C, H, W = self.pool.x_shape
            g = gy.astype(_grad_dtype(self.pool, gy), copy=False).reshape(-1, W // 2)
            rows = np.empty((len(g), 2, W // 2), dtype=g.dtype)
            _pair_spread(g, down, rows[:, 0], rows[:, 1])
            gx = np.empty((N * C * H * W // 2, 2), dtype=g.dtype)
            _pair_spread(rows.reshape(-1), across, gx[:, 0], gx[:, 1])
            return gx.reshape(N, C, H, W)
        idx = self.pool.indexes
        zero = gy.dtype.type(0)
        return _scatter_to_windows(self.pool, lambda k: xp.where(idx == k, gy, zero))

    def backward(self, ggx):
        return Pooling2DWithIndexes(self.pool)(ggx)


# %% [markdown]
# `Pooling2DWithIndexes` picks, in each window, the element at the recorded winning index. It is
# `PoolingGrad`'s transpose, so the two are each other's backward: second derivatives of max
# pooling use the same winners as the first.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda
from dezero_like.core import Function


class Pooling2DWithIndexes(Function):
    """Picks, in each window of its input, the element at the max pooling's winning index."""

    def __init__(self, pool):
        self.pool = pool

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        if self.pool.pair_masks is not None:  # the 2x2 path: pick in a row, then across rows
            across, down = self.pool.pair_masks
            N, C, H, W = x.shape
            p = x.astype(_grad_dtype(self.pool, x), copy=False).reshape(-1, 2)
            r = _pair_pick(p[:, 0], p[:, 1], across).reshape(-1, 2, W // 2)
            return _pair_pick(r[:, 0], r[:, 1], down).reshape(N, C, H // 2, W // 2)
        padded = _padded(x, self.pool.pad, 0)
        idx = self.pool.indexes
        y = xp.zeros(idx.shape, dtype=x.dtype)
        for k, index in _window_offsets(self.pool):
            y = xp.where(idx == k, padded[index], y)
        return y

    def backward(self, gy):
        return PoolingGrad(self.pool)(gy)


# %% [markdown]
# `pooling` is the function a model calls (also called `max_pooling`, the book's other name).

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import _refuse_keywords
from dezero_like.functions import _UNAVAILABLE
from dezero_like.functions_conv import _pad

_POOL_KEYWORDS = {  # PyTorch's F.max_pool2d(x, kernel_size, stride, padding, dilation, ...)
    "padding": _pad, "dilation": _UNAVAILABLE, "ceil_mode": _UNAVAILABLE,
    "return_indices": _UNAVAILABLE,
}


def pooling(x, kernel_size, stride=None, pad=0, **others):
    """Max pooling of ``x (N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Returns ``(N, C, OH, OW)``; ``pad`` must be smaller than the kernel.
    """
    if others:  # PyTorch's F.max_pool2d(x, 2, padding=1), say
        _refuse_keywords("F.pooling", others, _POOL_KEYWORDS)
    return Pooling(kernel_size, stride, pad)(x)


max_pooling = pooling


# %% [markdown]
# `AveragePooling` reuses `_Pool` and the window slices of max pooling: it adds the `KH * KW`
# slices and divides by their number. Padding counts as 0 and is still divided by the full
# window size. The sums are made in a dtype that can hold them: float64 for integer images
# (uint8 pixels would wrap around: 200 + 200 is 144 in uint8), float32 for float16.

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like.functions import _sum_dtype
from dezero_like.functions_conv import _Pool, _padded, _window_offsets


class AveragePooling(_Pool):
    """Average pooling: ``y = mean`` of each ``KH x KW`` window (padding counts as 0).

    Every element of a window gets ``gy / (KH*KW)``; the backward is
    :class:`AveragePoolingGrad`, whose own backward is average pooling again.
    """

    def forward(self, x):
        self._setup("average_pooling", x)
        padded = _padded(x, self.pad, 0)
        wide = _sum_dtype(x.dtype)  # uint8 pixels would wrap (200 + 200 is 144), float16 overflow
        y = None
        for _, index in _window_offsets(self):
            y = padded[index].astype(wide) if y is None else y + padded[index]
        KH, KW = self.kernel_size
        y = y / (KH * KW)
        return y.astype(np.float16) if x.dtype == np.float16 else y

    def backward(self, gy):
        return AveragePoolingGrad(self)(gy)


# %% [markdown]
# Every element of a window has derivative $1/(KH \cdot KW)$, so `AveragePoolingGrad` adds that
# share of `gy` into every element of the window. It is linear, and its backward is average pooling
# again.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import Function
from dezero_like.functions_conv import _scatter_to_windows


class AveragePoolingGrad(Function):
    """Spreads ``gy / (KH*KW)`` evenly over each window (linear; backward = average pooling)."""

    def __init__(self, pool):
        self.pool = pool

    def forward(self, gy):
        self.retain_inputs(())
        KH, KW = self.pool.kernel_size
        share = gy / (KH * KW)
        return _scatter_to_windows(self.pool, lambda k: share)

    def backward(self, ggx):
        p = self.pool
        return average_pooling(ggx, p.kernel_size, p.stride, p.pad)


# %% [markdown]
# `average_pooling` is the wrapper; as for max pooling, the stride defaults to the kernel size.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import _refuse_keywords

_AVERAGE_POOL_KEYWORDS = {  # PyTorch's F.avg_pool2d(x, kernel_size, stride, padding, ...)
    **_POOL_KEYWORDS,
    "count_include_pad": lambda v: "nothing to write: padding counts as 0 and each window is "
    "divided by its full size, PyTorch's default" if v else _UNAVAILABLE + " (padding counts)",
    "divisor_override": _UNAVAILABLE,
}


def average_pooling(x, kernel_size, stride=None, pad=0, **others):
    """Average pooling of ``x (N, C, H, W)``; ``stride`` defaults to ``kernel_size``."""
    if others:  # PyTorch's F.avg_pool2d(x, 2, padding=1), say
        _refuse_keywords("F.average_pooling", others, _AVERAGE_POOL_KEYWORDS)
    return AveragePooling(kernel_size, stride, pad)(x)


# %% [markdown]
# `pooling_simple`, further on, builds max pooling from `im2col` and a reduction along an axis:
# `max` (and `min`) of `functions`. Its ties follow `torch.max(x)` and share the gradient, where
# `Pooling` gives it all to the first tied value, as `max_pool2d` does: both are valid
# subgradients.
#
# `Max` keeps no input. Forward reduces with `keepdims=True` and compares, so `mask` is True where
# `x` equals the maximum of its group; backward reshapes `gy` to that kept shape, broadcasts it to
# the input's shape and multiplies by each element's share of it.
#
# Two details decide the numbers at the edges, and both follow PyTorch's `torch.max(x)`:
#
# * **Ties share the gradient.** When `k` elements tie for the maximum, each gets `gy / k`. Giving
#   each the full `gy` (what DeZero and Chainer do) is wrong where it shows: `max(a, a)` is `a`,
#   whose derivative is 1, but two full shares would make it 2.
# * **A `nan` is the maximum.** NumPy's `max` returns `nan` for a group holding one, and then no
#   element equals the result (`nan == nan` is False), so a plain comparison would give the
#   whole group a zero gradient. `x != x` marks the `nan`s instead, the elements the result came
#   from, and they share the gradient. (PyTorch's `amax` divides by the count of equal elements
#   here, 0, and gives the whole group `nan`.)

# %%
#| export dezero_like/functions.py
from dezero_like import utils
from dezero_like.core import Function
from dezero_like.functions import _float_dtype, broadcast_to


class Max(Function):
    """y = max of x over ``axis``; the gradient flows to the elements that were the maximum.

    Elements that tie for the maximum share the gradient equally, and a ``nan``
    is the maximum of its group (it propagates, and takes the gradient), both as
    in PyTorch's ``torch.max(x)``.
    """

    _reduce = "max"

    def __init__(self, axis=None, keepdims=False):
        self.axis = tuple(axis) if isinstance(axis, list) else axis  # NumPy takes a tuple
        if keepdims not in (True, False):  # forward always keeps them; any other value would too
            raise TypeError(f"{self._reduce}: keepdims must be True or False, got {keepdims!r}")
        self.keepdims = bool(keepdims)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        y = getattr(x, self._reduce)(axis=self.axis, keepdims=True)
        if self.needs_input_grad:
            # where the extreme value sits; in a group holding a nan, y is nan: its nans
            mask = (x == y) | (x != x)
            count = mask.sum(axis=self.axis, keepdims=True)
            if y.dtype.kind == "f" and y.dtype.itemsize >= 4:  # counts exact up to 2**24
                self.share = mask.astype(y.dtype) / count.astype(y.dtype)  # ties share equally
            else:  # in an integer, bool or float16 dtype the count would wrap or overflow
                self.share = (mask / count).astype(_float_dtype(y.dtype, complex_ok=False))
        if not self.keepdims:
            y = y.reshape(_reduced_shape(x.shape, self.axis))
        return y

    def backward(self, gy):
        gy = utils.reshape_sum_backward(gy, self.x_shape, self.axis, self.keepdims)
        return broadcast_to(gy, self.x_shape) * self.share


# %% [markdown]
# `Min` is `Max` with one attribute changed: `_reduce` names the array method forward calls, so the
# whole forward and backward are shared.

# %%
#| export dezero_like/functions.py
class Min(Max):
    """y = min of x over ``axis``; the gradient flows to the elements that were the minimum."""

    _reduce = "min"


# %% [markdown]
# `_reduced_shape` computes the shape `np.max` returns without `keepdims` (negative axes included),
# to reshape the kept result. `max` and `min` are the wrappers; they hide Python's built-ins inside
# `functions`, which is why the linter is told so.

# %%
#| export dezero_like/functions.py
from dezero_like.core import _AXIS_KEYWORDS, _refuse_keywords


def _reduced_shape(shape, axis):
    if axis is None:
        return ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes} if shape else set()  # NumPy takes axis 0 of a 0-d
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _extremum_keywords(arg):
    """PyTorch's names for F.max or F.min, whose indices are ``x.data.{arg}``."""
    return {**_AXIS_KEYWORDS, "dim": lambda v: (
        f"write axis={v!r} (NumPy's name); it gives the values only, not PyTorch's (values, "
        f"indices): x.data.{arg}(axis={v!r}) gives the indices")}


_MAX_KEYWORDS, _MIN_KEYWORDS = _extremum_keywords("argmax"), _extremum_keywords("argmin")


def max(x, axis=None, keepdims=False, **others):  # noqa: A001 - the book's name
    """Maximum over ``axis`` (all axes when None), like ``np.max``; see :class:`Max`."""
    if others:  # PyTorch's torch.max(x, dim=1), say
        _refuse_keywords("F.max", others, _MAX_KEYWORDS)
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False, **others):  # noqa: A001 - the book's name
    """Minimum over ``axis`` (all axes when None), like ``np.min``; see :class:`Min`."""
    if others:  # PyTorch's torch.min(x, dim=1), say
        _refuse_keywords("F.min", others, _MIN_KEYWORDS)
    return Min(axis, keepdims)(x)


# %%
# The cells above also defined `max`, `min` in this script, hiding Python's built-in
# of that name here: hand it back (the package keeps its own).
import builtins

max = builtins.max
min = builtins.min


# %%
import matplotlib.pyplot as plt
import numpy as np
import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like.plot import draw_arrow, draw_cells, output_dir, save_figure
from dezero_like.utils import gradient_check

out_dir = output_dir(59)  # every file this step writes goes here

# %% [markdown]
# ## Max and average on a 4×4 map

# %%
x = np.array([[1.0, 3.0, 2.0, 0.0],
              [4.0, 2.0, 1.0, 5.0],
              [0.0, 1.0, 7.0, 2.0],
              [3.0, 2.0, 1.0, 0.0]]).reshape(1, 1, 4, 4)
y_max = Fc.pooling(x, 2).data[0, 0]
y_avg = Fc.average_pooling(x, 2).data[0, 0]
print("max pooling 2x2:\n", y_max)
print("average pooling 2x2:\n", y_avg)
print("3x3 windows, stride 1:", Fc.pooling(x, 3, stride=1).shape)

# %% [markdown]
# The same 2×2 pooling in a picture. Each colour is one window of `x` and the output cell it
# becomes. Max pooling keeps the window's winner (dark, outlined) and forgets the other three;
# average pooling mixes all four, so no single cell of `x` stands behind its output.

# %%
light = np.array(["#cde", "#fdc", "#dfd", "#ecf"])  # one colour per 2x2 window
dark = np.array(["#8ac", "#e96", "#8c8", "#b8d"])  # the same colours, darker: a window's winner
window = np.arange(4)[:, None] // 2 * 2 + np.arange(4) // 2  # the window each cell of x is in
out_window = np.arange(4).reshape(2, 2)  # the window each output cell summarises
winner = x[0, 0] == y_max.repeat(2, axis=0).repeat(2, axis=1)  # equals its window's max


def outline(ax, mask, left, top):
    """A thick border round the cells where mask is True, of an array drawn at (left, top)."""
    for i, j in zip(*np.nonzero(mask)):
        ax.add_patch(plt.Rectangle((left + j, top - i - 1), 1, 1, fill=False, ec="k", lw=2.5))


def finish(ax, xlim, ylim, title):
    """Frame a panel of cells: limits, a title, square cells, no axes."""
    ax.set(xlim=xlim, ylim=ylim)
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.axis("off")


fig, ax = plt.subplots(figsize=(6.5, 4.2))
draw_cells(ax, x[0, 0], 0, 4, "x (4x4)", np.where(winner, dark[window], light[window]),
           fontsize=10)
outline(ax, winner, 0, 4)
draw_arrow(ax, (4.3, 3.0), (6.7, 3.5), "max")
draw_cells(ax, y_max, 7, 4.5, "max pooling (2x2)", dark[out_window], fontsize=10)
draw_arrow(ax, (4.3, 1.0), (6.7, 0.5), "mean")
draw_cells(ax, y_avg, 7, 1.3, "average pooling (2x2)", light[out_window], fontsize=10)
finish(ax, (-0.3, 9.8), (-0.9, 5.1), "2x2 windows, stride 2: one output per window")
save_figure(fig, out_dir / "pool_forward.png")
plt.show()

# %% [markdown]
# ## Pooling is im2col plus a reduction
#
# With the windows laid out as rows by `im2col`, pooling is just `max` (or
# `mean`) along each row. The matrix form of `im2col` puts the $C$ channels'
# windows side by side in one row, so reshape to one window per row first.
# Built from differentiable functions, this version trains as it is:

# %%
#| export dezero_like/functions_conv.py
from dezero_like import functions as F
from dezero_like.functions_conv import get_conv_outsize, im2col, pair


def pooling_simple(x, kernel_size, stride=None, pad=0):
    """Max pooling from im2col and F.max (pads with 0, so use it on non-negative maps)."""
    N, C, H, W = x.shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(kernel_size if stride is None else stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)
    col = im2col(x, (KH, KW), (SH, SW), pad, to_matrix=True)  # (N*OH*OW, C*KH*KW)
    col = col.reshape(-1, KH * KW)  # one window of one channel per row
    y = F.max(col, axis=1)
    return y.reshape(N, OH, OW, C).transpose(0, 3, 1, 2)


# %%
rng = np.random.default_rng(0)
maps = np.abs(rng.standard_normal((2, 3, 6, 6)))
print("pooling_simple == Fc.pooling:",
      np.allclose(pooling_simple(dz.Variable(maps), 2).data, Fc.pooling(maps, 2).data))

# %% [markdown]
# `Fc.pooling`, written at the start of this step, differs from `pooling_simple` in four ways,
# all met above. It pads with $-\infty$ instead of zero, so a window that overlaps the border
# never picks the padding, even when every real value in it is negative. It never builds `col`:
# it keeps a running maximum over the strided slices of `_window_offsets`, or, for the 2x2
# windows with stride 2 used here, takes maxima of pairs twice (`_max_pool_2x2`). It records
# which element won each window, which its backward needs. And on a tie its backward gives the
# whole gradient to the first of the equal values, as PyTorch's `max_pool2d` does, where `F.max`
# shares it equally among them: both are valid subgradients, and ties are common (a window of
# zeros after a ReLU).
#
# ## Backward: where does the gradient go?
#
# For max pooling, $y = \max_k x_k$ changes only when the winning element
# changes, so $\partial y / \partial x_k$ is 1 for the winner and 0 for the
# others: `PoolingGrad` *routes* the gradient to the winners. For average pooling
# every element of a window contributes $1/(K_H K_W)$ of the output, so
# `AveragePoolingGrad` spreads the gradient evenly.

# %%
xv = dz.Variable(x)
Fc.pooling(xv, 2).sum().backward()
print("max pooling: x.grad\n", xv.grad.data[0, 0])
xa = dz.Variable(x)
Fc.average_pooling(xa, 2).sum().backward()
print("average pooling: x.grad\n", xa.grad.data[0, 0])

# %% [markdown]
# After `.sum()` every window's upstream gradient is 1, so you cannot tell which 1 went where.
# The picture seeds backward with a different number per window, `gy`. Top: each number lands
# on the winner of its window (outlined, the cell the forward pass kept) and the three other
# cells get 0. Bottom: average pooling hands every cell of a window a quarter of its number.

# %%
gy = np.array([[4.0, 8.0], [12.0, 16.0]])  # the upstream gradient, one number per window
xv_gy, xa_gy = dz.Variable(x), dz.Variable(x)
Fc.pooling(xv_gy, 2).backward(gradient=gy.reshape(1, 1, 2, 2))
Fc.average_pooling(xa_gy, 2).backward(gradient=gy.reshape(1, 1, 2, 2))
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 5.6))
draw_cells(top, x[0, 0], 0, 4, "x, winners outlined",
           np.where(winner, dark[window], light[window]), fontsize=10)
outline(top, winner, 0, 4)
draw_cells(top, gy, 6, 3, "gy (2x2)", dark[out_window], fontsize=10)
draw_arrow(top, (8.3, 2), (10.7, 2), "to the winner")
draw_cells(top, xv_gy.grad.data[0, 0], 11, 4, "x.grad", light[window], fontsize=10)
outline(top, winner, 11, 4)
finish(top, (-0.3, 15.3), (-0.3, 4.7), "max pooling backward: routed")
draw_cells(bottom, gy, 6, 3, "gy (2x2)", light[out_window], fontsize=10)
draw_arrow(bottom, (8.3, 2), (10.7, 2), "1/4 to each")
draw_cells(bottom, xa_gy.grad.data[0, 0], 11, 4, "x.grad", light[window], fontsize=10)
finish(bottom, (-0.3, 15.3), (-0.3, 4.7), "average pooling backward: spread")
save_figure(fig, out_dir / "pool_backward.png")
plt.show()

# %% [markdown]
# Both backward passes are themselves differentiable functions (the max
# version picks the same winners again in its own backward), and the float64
# gradient check agrees. For max pooling the numerical gradient is only
# meaningful without ties, so the test values are all distinct:

# %%
distinct = rng.permutation(2 * 3 * 7 * 7).reshape(2, 3, 7, 7) / 10.0
print("gradient check max pooling:", gradient_check(lambda v: Fc.pooling(v, 3, 2, 1) ** 2,
                                                    distinct))
print("gradient check average pooling:",
      gradient_check(lambda v: Fc.average_pooling(v, 3, 2, 1) ** 2, distinct))

# %% [markdown]
# ## Less sensitive to small shifts
#
# Put a single detection (a 1) on an 8×8 map and move it one pixel to the
# right, for each of the 7 columns where that is possible. The raw map
# always changes. After 2×2 max pooling, the output stays the same whenever
# the detection moves *within* its window, which is every other time.

# %%
raw_same = pooled_same = 0
shifts = {}  # column -> the maps before and after, and both pooled (for the picture below)
for col in range(7):
    before = np.zeros((1, 1, 8, 8))
    before[0, 0, 3, col] = 1.0
    after = np.roll(before, 1, axis=3)
    pooled_before, pooled_after = Fc.pooling(before, 2).data, Fc.pooling(after, 2).data
    shifts[col] = (before[0, 0], after[0, 0], pooled_before[0, 0], pooled_after[0, 0])
    raw_same += int(np.array_equal(before, after))
    pooled_same += int(np.array_equal(pooled_before, pooled_after))
print(f"a detection moved one pixel right, 7 cases: raw map unchanged {raw_same} times, "
      f"pooled map unchanged {pooled_same} times")

# %% [markdown]
# Two of those cases, with the 2×2 windows shaded alternately (each window is one cell of the
# pooled map; columns count from 0, as in the loop). From column 2 to 3 the 1 stays inside its
# window, so the two pooled maps are identical; from column 3 to 4 it crosses into the next
# window, and the 1 of the pooled map moves one cell too.

# %%
shade = np.array(["#fff", "#dde", "#e96"])  # the two window shades, and the detection
checker = (np.arange(8)[:, None] // 2 + np.arange(8) // 2) % 2  # alternating 2x2 windows
fig, axes = plt.subplots(2, 1, figsize=(11, 6.8))
for ax, col in zip(axes, (2, 3)):
    before, after, pooled_before, pooled_after = shifts[col]
    for left, top_y, values, title, cells in (
            (0, 8, before, "map", checker),
            (9.5, 8, after, "shifted one pixel right", checker),
            (19.5, 6, pooled_before, "map, max-pooled", checker[::2, ::2]),
            (25, 6, pooled_after, "shifted, max-pooled", checker[::2, ::2])):
        draw_cells(ax, values, left, top_y, title, shade[np.where(values == 1, 2, cells)],
                   fontsize=8)
    same = np.array_equal(pooled_before, pooled_after)
    finish(ax, (-0.3, 30.3), (-0.3, 8.7),
           f"the 1 moves from column {col} to {col + 1}: the map changes, the pooled map "
           + ("stays the same" if same else "changes too"))
save_figure(fig, out_dir / "shift.png")
plt.show()

# %% [markdown]
# ## Exercise
# 1. A 28×28 map goes through 2×2 max pooling (stride 2), then a 3×3
#    convolution with padding 1, then 2×2 max pooling again. What is the final
#    side length? Set `side`. Then show that **average pooling is a
#    convolution with a fixed kernel**: build `avg_W`, a NumPy array in the
#    weight layout `(OC, C, KH, KW)` of `Fc.conv2d` (step 57), such that
#    `Fc.conv2d(maps, avg_W, stride=2)` is the 2×2 average pooling of every
#    channel of `maps`, the `(2, 3, 6, 6)` maps above. Decide what each weight of
#    a window must be for the output to be a mean, and remember that a
#    convolution adds up over *all* its input channels while pooling keeps each
#    channel to itself: which input channels may output channel `c` read?
# 2. **Implement then test: a smooth maximum of each row.** `F.max` sends a
#    row's whole gradient to its winner and nothing to a value just below it.
#    The *log-sum-exp* $\operatorname{lse}(x) = \log \sum_j e^{x_j}$ of a row of
#    $n$ values is a smooth maximum: it lies between $\max_j x_j$ and
#    $\max_j x_j + \log n$, and close to the max when one value stands out.
#    Write `RowLogSumExp`, a `Function` for a 2-D `x`: `forward` returns one
#    lse per row, as a 1-D array, and must stay finite for rows near $+1000$
#    (where $e^{x}$ overflows) and near $-2000$ (where every $e^{x}$ of the row
#    underflows to 0); step 49 met the same problem. For `backward`, work out
#    $\partial \operatorname{lse} / \partial x_k$ with the chain rule and
#    recognise a function you know (the self-check runs backward near $+1000$
#    too, so compute it without an exponent above 0, as that function does in
#    step 49); then, as for `Max`, `gy` has one number per
#    row and `x` a whole row, so give `gy` a shape that broadcasts along the rows
#    (step 41). Built from the functions of `F` on Variables, your backward can
#    itself be differentiated. The self-check compares with the formula
#    evaluated in NumPy, runs `gradient_check`, and tries rows near $+1000$ and
#    $-2000$.

# %%
#| exercise
side = ...  # the side length after pool 2x2 -> conv 3x3 pad 1 -> pool 2x2, from 28
avg_W = ...  # a weight (OC, C, KH, KW) for which conv2d with stride 2 is 2x2 average pooling

# %%
#| solution
side = 7  # 28 -> 14 -> 14 -> 7
avg_W = np.zeros((3, 3, 2, 2))  # 3 output channels, 3 input channels, 2x2 windows
for c in range(3):
    avg_W[c, c] = 1 / 4  # output channel c: the mean of the window of input channel c only

# %%
#| check
expected_side = Fc.get_conv_outsize(Fc.get_conv_outsize(28, 2, 2, 0), 2, 2, 0)
assert side == expected_side, (
    f"side = {side}: pooling halves 28 to 14, the padded 3x3 convolution keeps 14, "
    "the second pooling halves it again"
)
assert np.shape(avg_W) == (3, 3, 2, 2), (
    f"avg_W should have shape (3, 3, 2, 2), (output channels, input channels, KH, KW) for the "
    f"3 channels of maps and 2x2 windows; got {np.shape(avg_W)}"
)
# the reference, without im2col or conv: split each side of 6 into 3 windows of 2 and average
# over the two within-window axes
expected_avg = maps.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5))
got = Fc.conv2d(maps, np.asarray(avg_W, dtype=np.float64), stride=2).data
assert not np.allclose(got, expected_avg.sum(axis=1, keepdims=True)), (
    "every output channel of Fc.conv2d(maps, avg_W, stride=2) averages all three input channels "
    "and adds them up: pooling keeps the channels apart, so output channel c may read input "
    "channel c only, with weight 0 for the others"
)
assert not np.allclose(got, 4 * expected_avg), (
    "Fc.conv2d(maps, avg_W, stride=2) gives the sum of each 2x2 window, 4 times the mean: "
    "what must each of the 4 weights of a window be?"
)
assert np.allclose(got, expected_avg), (
    f"Fc.conv2d(maps, avg_W, stride=2)[0, 0] is {np.round(got[0, 0], 3).tolist()}, the 2x2 "
    f"average pooling of channel 0 is {np.round(expected_avg[0, 0], 3).tolist()}: does output "
    "channel c read input channel c alone, and do the weights of its window make a mean?"
)
print(f"self-check passed: side = {side}; conv2d with avg_W is 2x2 average pooling of maps")

# %%
#| exercise
class RowLogSumExp(Function):
    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 59): one log-sum-exp per row as a 1-D array, with no exp that "
            "overflows, and no row whose exps all underflow to 0"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 59): each row's gy times the derivative of that row's log-sum-exp "
            "with respect to each of its elements"
        )

# %%
#| solution
class RowLogSumExp(Function):
    def forward(self, x):
        self.retain_outputs((0,))
        m = x.max(axis=1, keepdims=True)  # each row's own max: every exponent below is <= 0
        y = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
        return y.reshape(-1)

    def backward(self, gy):
        (x,) = self.inputs
        (y,) = self.get_retained_outputs()
        p = F.exp(x - F.reshape(y, (-1, 1)))  # e^x / sum(e^x) = e^(x - lse): the row's softmax
        return F.reshape(gy, (-1, 1)) * p

# %%
#| check
rng = np.random.default_rng(0)
z = rng.normal(size=(4, 5)) * 3
w = rng.normal(size=4)


def lse_reference(x):
    """log(sum(exp(x))) of each row, literally in NumPy: exact for these moderate values."""
    return np.log(np.exp(x).sum(axis=1))


want = lse_reference(z)
mine = RowLogSumExp()(dz.Variable(z)).data
assert np.shape(mine) == (4,), (
    f"RowLogSumExp of a (4, 5) input should give one number per row, shape (4,); got "
    f"{np.shape(mine)}"
)
assert np.allclose(mine, want), (
    f"RowLogSumExp gives {np.round(mine, 4).tolist()}, expected {np.round(want, 4).tolist()}: "
    "the log of the sum of the exps of a row, a little above the row's max"
)
try:
    (RowLogSumExp()(dz.Variable(z)) * w).sum().backward()
except ValueError as e:
    if "broadcast" not in str(e):
        raise
    raise AssertionError(
        f"RowLogSumExp's backward failed ({e}): gy has one number per row, shape (4,), and x "
        "is (4, 5); reshape gy to a column, (4, 1), so that it broadcasts along each row "
        "(step 41)") from None
gradient_check(lambda v: RowLogSumExp()(v), z,
               hint="the gradient of RowLogSumExp is wrong. Differentiate log(sum_j exp(x_j)) "
                    "with respect to one x_k: every element of a row gets a share, the larger "
                    "ones more")
xv_z = dz.Variable(z)
(RowLogSumExp()(xv_z) * w).sum().backward()
xv_huge = dz.Variable(z + 1000.0)
try:
    with np.errstate(over="raise", invalid="raise"):
        y_huge = RowLogSumExp()(xv_huge)
        (y_huge * w).sum().backward()
except FloatingPointError as e:
    raise AssertionError(
        f"RowLogSumExp overflows on rows near 1000 ({e}): e^1000 is inf in float64, in forward "
        "and in backward alike, so no exponent may be above 0"
    ) from None
assert np.allclose(y_huge.data, want + 1000.0), (
    "RowLogSumExp(z + 1000) should be RowLogSumExp(z) + 1000: a constant added to a whole row "
    "moves its log-sum-exp by the same constant"
)
assert np.allclose(xv_huge.grad.data, xv_z.grad.data), (
    "the gradient of RowLogSumExp on z + 1000 differs from its gradient on z: a constant added "
    "to a whole row must not change how the row's gradient is shared out"
)
far_apart = np.concatenate([z[:2], z[2:] - 2000.0])  # two rows near 0, two near -2000
with np.errstate(all="ignore"):
    mine = RowLogSumExp()(dz.Variable(far_apart)).data
assert np.allclose(mine, np.concatenate([want[:2], want[2:] - 2000.0])), (
    f"RowLogSumExp gives {mine[2]} for a row near -2000: shift each row by its own max "
    "(an (N, 1) column), not by the largest value of the whole array"
)
print("self-check passed: RowLogSumExp matches log(sum(exp(x))) per row, passes the gradient "
      "check and stays finite near +1000 and -2000")
