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
def pooling_simple(x, kernel_size, stride=None, pad=0):
    """Max pooling from im2col and F.max (pads with 0, so use it on non-negative maps)."""
    N, C, H, W = x.shape
    KH, KW = Fc.pair(kernel_size)
    SH, SW = Fc.pair(kernel_size if stride is None else stride)
    OH = Fc.get_conv_outsize(H, KH, SH, pad)
    OW = Fc.get_conv_outsize(W, KW, SW, pad)
    col = Fc.im2col(x, (KH, KW), (SH, SW), pad, to_matrix=True)  # (N*OH*OW, C*KH*KW)
    col = col.reshape(-1, KH * KW)  # one window of one channel per row
    y = F.max(col, axis=1)
    return y.reshape(N, OH, OW, C).transpose(0, 3, 1, 2)


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
# element won each window, which its backward needs.
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
#    side length? Set `side`.
# 2. Compute average pooling of `x` (the 4×4 map above) with 2×2 windows from
#    `Fc.im2col_array` and NumPy's `mean` only, as a (2, 2) array `avg`.

# %%
side = 7  # solution: 28 -> 14 -> 14 -> 7
cols = Fc.im2col_array(x, 2, 2, 0)  # solution: one 2x2 window per row
avg = cols.mean(axis=1).reshape(2, 2)  # solution
assert side == Fc.get_conv_outsize(Fc.get_conv_outsize(28, 2, 2, 0), 2, 2, 0), "side"
assert np.allclose(avg, Fc.average_pooling(x, 2).data[0, 0]), "avg"
print("self-check passed")
