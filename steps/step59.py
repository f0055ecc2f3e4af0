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
# In this step `functions` gains `Max`, `Min`, `max`, `min`; `functions_conv` gains
# `AveragePooling`, `AveragePoolingGrad`, `average_pooling`, `pooling_simple`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
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
from dezero_like.functions import broadcast_to


class Max(Function):
    """y = max of x over ``axis``; the gradient flows to the elements that were the maximum.

    Elements that tie for the maximum share the gradient equally, and a ``nan``
    is the maximum of its group (it propagates, and takes the gradient), both as
    in PyTorch's ``torch.max(x)``.
    """

    _reduce = "max"

    def __init__(self, axis=None, keepdims=False):
        self.axis = tuple(axis) if isinstance(axis, list) else axis  # NumPy takes a tuple
        self.keepdims = keepdims

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
                self.share = (mask / count).astype(y.dtype if y.dtype.kind == "f" else "f8")
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
def _reduced_shape(shape, axis):
    if axis is None:
        return ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes} if shape else set()  # NumPy takes axis 0 of a 0-d
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def max(x, axis=None, keepdims=False):  # noqa: A001 - the book's name
    """Maximum over ``axis`` (all axes when None), like ``np.max``; see :class:`Max`."""
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False):  # noqa: A001 - the book's name
    """Minimum over ``axis`` (all axes when None), like ``np.min``; see :class:`Min`."""
    return Min(axis, keepdims)(x)


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
def average_pooling(x, kernel_size, stride=None, pad=0):
    """Average pooling of ``x (N, C, H, W)``; ``stride`` defaults to ``kernel_size``."""
    return AveragePooling(kernel_size, stride, pad)(x)


# %%
# The cells above also defined `max`, `min` in this script, hiding Python's built-in
# of that name here: hand it back (the package keeps its own).
import builtins

max = builtins.max
min = builtins.min


# %%
import numpy as np
import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like.utils import gradient_check

# %% [markdown]
# ## Max and average on a 4×4 map

# %%
x = np.array([[1.0, 3.0, 2.0, 0.0],
              [4.0, 2.0, 1.0, 5.0],
              [0.0, 1.0, 7.0, 2.0],
              [3.0, 2.0, 1.0, 0.0]]).reshape(1, 1, 4, 4)
print("max pooling 2x2:\n", Fc.pooling(x, 2).data[0, 0])
print("average pooling 2x2:\n", Fc.average_pooling(x, 2).data[0, 0])
print("3x3 windows, stride 1:", Fc.pooling(x, 3, stride=1).shape)

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
# The package's `Fc.pooling` differs in three ways. It pads with $-\infty$
# instead of zero, so a window that overlaps the border never picks the
# padding, even when every real value in it is negative. It never builds
# `col`: for each of the $K_H K_W$ kernel offsets it takes the strided slice
# of the input that holds that element of every window and keeps a running
# maximum, which saves the memory of the copies. And it remembers *which*
# element won each window, which its backward needs. (That is its general path;
# the 2x2 windows with stride 2 used here take step 58's faster path, a maximum of
# pairs taken twice, which keeps two masks instead of one index per window.)
#
# ## Backward: where does the gradient go?
#
# For max pooling, $y = \max_k x_k$ changes only when the winning element
# changes, so $\partial y / \partial x_k$ is 1 for the winner and 0 for the
# others: the gradient is *routed* to the winners. For average pooling
# every element of a window contributes $1/(K_H K_W)$ of the output, so the
# gradient is spread evenly.

# %%
xv = dz.Variable(x)
Fc.pooling(xv, 2).sum().backward()
print("max pooling: x.grad\n", xv.grad.data[0, 0])
xa = dz.Variable(x)
Fc.average_pooling(xa, 2).sum().backward()
print("average pooling: x.grad\n", xa.grad.data[0, 0])

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
for col in range(7):
    before = np.zeros((1, 1, 8, 8))
    before[0, 0, 3, col] = 1.0
    after = np.roll(before, 1, axis=3)
    raw_same += int(np.array_equal(before, after))
    pooled_same += int(np.array_equal(Fc.pooling(before, 2).data, Fc.pooling(after, 2).data))
print(f"a detection moved one pixel right, 7 cases: raw map unchanged {raw_same} times, "
      f"pooled map unchanged {pooled_same} times")

# %% [markdown]
# ## Exercise
# 1. A 28×28 map goes through 2×2 max pooling (stride 2), then a 3×3
#    convolution with padding 1, then 2×2 max pooling again. What is the final
#    side length? Set `side`. Then compute average pooling of `x` (the 4×4 map
#    above) with 2×2 windows from `Fc.im2col_array` and NumPy's `mean` only, as
#    a (2, 2) array `avg`.
# 2. **Implement then test: the max of each row.** Write `RowMax`, the
#    `Function` behind `F.max(x, axis=1)` for a 2-D `x`: `forward` returns one
#    maximum per row, as a 1-D array, and keeps for `backward` where each row's
#    maximum sits (the idea of max pooling's backward above). `backward` sends
#    each row's gradient to that place only, zero elsewhere: `gy` has one
#    number per row and `x` a whole row, so give `gy` a shape that broadcasts
#    along the rows (step 41). The self-check runs `gradient_check` on inputs
#    without ties and compares with `F.max`.

# %%
#| exercise
side = ...  # the side length after pool 2x2 -> conv 3x3 pad 1 -> pool 2x2, from 28
avg = ...  # 2x2 average pooling of x (2x2 windows, stride 2), as a (2, 2) array

# %%
#| solution
side = 7  # 28 -> 14 -> 14 -> 7
cols = Fc.im2col_array(x, 2, 2, 0)  # one 2x2 window per row
avg = cols.mean(axis=1).reshape(2, 2)

# %%
#| check
expected_side = Fc.get_conv_outsize(Fc.get_conv_outsize(28, 2, 2, 0), 2, 2, 0)
assert side == expected_side, (
    f"side = {side}: pooling halves 28 to 14, the padded 3x3 convolution keeps 14, "
    "the second pooling halves it again"
)
assert np.shape(avg) == (2, 2), f"avg should have shape (2, 2), got {np.shape(avg)}"
assert np.allclose(avg, Fc.average_pooling(x, 2).data[0, 0]), (
    "avg differs from Fc.average_pooling: does each value average the four numbers of one "
    "window (one row of the im2col matrix), laid out as the windows are?"
)
print(f"self-check passed: side = {side}, avg =", avg.tolist())

# %%
#| exercise
class RowMax(Function):
    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 59): one maximum per row; keep where each one sits"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 59): each row's gradient to where its maximum was, zero elsewhere"
        )

# %%
#| solution
class RowMax(Function):
    def forward(self, x):
        m = x.max(axis=1, keepdims=True)
        self.mask = x == m
        return m.reshape(-1)

    def backward(self, gy):
        return F.reshape(gy, (-1, 1)) * self.mask

# %%
#| check
rng = np.random.default_rng(0)
z = rng.permutation(20).reshape(4, 5) / 7.0  # distinct values: no ties
w = rng.normal(size=4)
gradient_check(lambda v: RowMax()(v) * w, z)
assert np.allclose(RowMax()(z).data, F.max(z, axis=1).data), (
    "the forward differs from F.max(x, axis=1): return one maximum per row, as a 1-D array"
)
print("self-check passed: RowMax passes the gradient check and matches F.max(x, axis=1)")
