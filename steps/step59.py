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
# The package's `Fc.pooling` differs in four ways. It pads with $-\infty$
# instead of zero, so a window that overlaps the border never picks the
# padding, even when every real value in it is negative. It never builds
# `col`: for each of the $K_H K_W$ kernel offsets it takes the strided slice
# of the input that holds that element of every window and keeps a running
# maximum, which saves the memory of the copies. And it remembers *which*
# element won each window, which its backward needs. (That is its general path;
# the 2x2 windows with stride 2 used here take step 58's faster path, a maximum of
# pairs taken twice, which keeps two masks instead of one index per window.)
# And on a tie its backward gives the whole gradient to the first of the equal
# values, as PyTorch does, where `F.max` shares it equally among them: both are
# valid subgradients, and ties are common (a window of zeros after a ReLU).
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


def weighted_lse(v):
    return RowLogSumExp()(v) * w


try:
    gradient_check(weighted_lse, z)
except AssertionError as e:
    raise AssertionError(
        f"the gradient of RowLogSumExp is wrong: {e}. Differentiate log(sum_j exp(x_j)) with "
        "respect to one x_k: every element of a row gets a share, the larger ones more"
    ) from None
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
