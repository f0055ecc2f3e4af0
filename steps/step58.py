# %% [markdown]
# # Step 58: `conv2d` via im2col
#
# The loop of step 57 visits every output pixel of every image and every
# filter from Python: millions of tiny operations for one batch of MNIST. The
# standard trick is to *rearrange the input* so that the whole convolution
# becomes **one matrix product**, which NumPy hands to an optimised BLAS
# routine. It was described by Chellapilla, Puri and Simard (2006, "High
# Performance Convolutional Neural Networks for Document Processing") and made
# widely known by Caffe (Jia et al., 2014); the name `im2col` is older, that
# of a MATLAB function that rearranges image blocks into columns. (It is not
# the only way: libraries such as cuDNN and oneDNN also convolve directly or
# with FFT and Winograd transforms, choosing per shape.)
#
# **im2col** ("image to columns") copies each window the kernel will visit
# into its own row: a window of $C \times K_H \times K_W$ values becomes a row
# of that length, and there is one row per output position. Flatten each
# filter the same way, and every output value is a row of windows times a
# column of weights:
#
# $$Y = \mathrm{col}\; W_{\mathrm{mat}}^\top,$$
#
# with `col` of shape $(N O_H O_W) \times (C K_H K_W)$, the flattened filters
# $W_{\mathrm{mat}}$ of shape $OC \times (C K_H K_W)$, and $Y$ of shape
# $(N O_H O_W) \times OC$: one row per output position, one column per filter.
#
# The price is memory: each input pixel is copied into up to $K_H K_W$ rows.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like.plot import output_dir, save_figure
from dezero_like.utils import gradient_check

out_dir = output_dir(58)  # every file this step writes goes here

# %% [markdown]
# ## im2col on a tiny image
#
# One 1-channel 4×4 image, a 3×3 kernel, stride 1, no padding: there are
# 2×2 = 4 windows, so 4 rows of 9 values each.

# %%
img = np.arange(16.0).reshape(1, 1, 4, 4)
print(img[0, 0])
col = Fc.im2col_array(img, kernel_size=3, stride=1, pad=0)
print("col", col.shape)
print(col)

# %% [markdown]
# The first row is the top-left window read row by row; the second is the
# window one column to the right, and so on. In colour, window by window:

# %%
colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
fig, (ax_img, ax_col) = plt.subplots(1, 2, figsize=(10, 3.2),
                                     gridspec_kw={"width_ratios": [1, 2.2]})
ax_img.imshow(img[0, 0], cmap="Greys", alpha=0.25)
for (r, c), v in np.ndenumerate(img[0, 0]):
    ax_img.text(c, r, f"{v:g}", ha="center", va="center")
for k, (r, c) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):  # window corners, row-major
    inset = 0.08 * (k + 1)
    ax_img.add_patch(plt.Rectangle((c - 0.5 + inset, r - 0.5 + inset), 3 - 2 * inset,
                                   3 - 2 * inset, fill=False, ec=colors[k], lw=2))
ax_img.set_title("4x4 image, the four 3x3 windows")
ax_img.axis("off")
ax_col.imshow(col, cmap="Greys", alpha=0.25, aspect="auto")
for (r, c), v in np.ndenumerate(col):
    ax_col.text(c, r, f"{v:g}", ha="center", va="center", color=colors[r])
ax_col.set_yticks(range(4), [f"window {k}" for k in range(4)])
ax_col.set_xticks(range(9), [f"({i},{j})" for i in range(3) for j in range(3)], fontsize=7)
ax_col.set_xlabel("kernel offset (i, j)")
ax_col.set_title("col: one row per window")
save_figure(fig, out_dir / "im2col_windows.png")

# %% [markdown]
# Each column of `col` holds one kernel offset across all windows: that is the
# strided slice the next paragraph uses.
#
# How is `col` built without a loop over windows? Look at it the other way
# round: for a fixed kernel offset $(i, j)$, the values that land in
# "position $(i, j)$ of every window" are the strided slice
# `x[:, :, i : i + S*OH : S, j : j + S*OW : S]` of the padded input. So
# `im2col_array` loops over only the $K_H K_W$ kernel offsets and copies one
# strided slice of the whole batch each time: 9 NumPy copies for a 3×3
# kernel, whatever the image and batch sizes.
#
# ## Convolution as a matrix product
#
# With `col` in hand, the convolution is a reshape, one `matmul` and a
# transpose back to channels-first. Every piece is a differentiable function
# of the package (`im2col`, `matmul`, `reshape`, `transpose`), so this
# convolution can already be trained:

# %%
def conv2d_simple(x, W, b=None, stride=1, pad=0):
    """Convolution from differentiable parts: im2col, one matmul, reshape, transpose."""
    N, C, H, Wd = x.shape
    OC, C, KH, KW = W.shape
    OH = Fc.get_conv_outsize(H, KH, stride, pad)
    OW = Fc.get_conv_outsize(Wd, KW, stride, pad)
    col = Fc.im2col(x, (KH, KW), stride, pad, to_matrix=True)  # (N*OH*OW, C*KH*KW)
    W_mat = W.reshape(OC, -1).T  # (C*KH*KW, OC)
    y = F.matmul(col, W_mat)  # (N*OH*OW, OC)
    if b is not None:
        y = y + b
    return y.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)


# %% [markdown]
# Compare it with the direct definition, written as loops over every output
# element (the formula of step 57):

# %%
def conv2d_direct(x, W, b, stride, pad):
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH = Fc.get_conv_outsize(H, KH, stride, pad)
    OW = Fc.get_conv_outsize(Wd, KW, stride, pad)
    y = np.zeros((N, OC, OH, OW))
    for n in range(N):
        for o in range(OC):
            for p in range(OH):
                for q in range(OW):
                    window = xp[n, :, p * stride:p * stride + KH, q * stride:q * stride + KW]
                    y[n, o, p, q] = (window * W[o]).sum() + b[o]
    return y


rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3, 9, 9))
W = rng.standard_normal((5, 3, 3, 3))
b = rng.standard_normal(5)
ref = conv2d_direct(x, W, b, stride=2, pad=1)
y_simple = conv2d_simple(dz.Variable(x), dz.Variable(W), dz.Variable(b), stride=2, pad=1)
y_pkg = Fc.conv2d(x, W, b, stride=2, pad=1)
print("output", y_simple.shape)
print("im2col version == direct loops:", np.allclose(y_simple.data, ref))
print("package conv2d == direct loops:", np.allclose(y_pkg.data, ref))

# %% [markdown]
# ## The package's `conv2d` and its backward
#
# `Fc.conv2d` is the same idea written as one `Function`, with two changes
# for speed and memory:
#
# * it keeps `col` as an $(N, C K_H K_W, O_H O_W)$ array and computes
#   `W_mat @ col` for all images in one batched product, which lands directly
#   in the $(N, OC, O_H, O_W)$ layout (no transpose copy);
# * its backward is written with two other differentiable functions instead
#   of tracing back through a big `col`:
#   * $\partial L/\partial x$ is a **transposed convolution**, `deconv2d(gy, W)`:
#     each output gradient is spread back over its window with the filter's
#     weights (col2im adds the overlapping windows);
#   * $\partial L/\partial W$ correlates the input with the output gradient,
#     `Conv2DGradW(x, gy)`: $\sum_{n,p,q} g_{n,o,p,q}\, x_{n,c,pS+i,qS+j}$;
#   * $\partial L/\partial b_o = \sum_{n,p,q} g_{n,o,p,q}$.
#
# Because these are functions with their own backward, second derivatives
# through a CNN work as well. Both versions give the same gradients, and the
# float64 gradient check confirms them against central differences:

# %%
xv, Wv, bv = dz.Variable(x), dz.Variable(W), dz.Variable(b)
Fc.conv2d(xv, Wv, bv, 2, 1).sum().backward()
xs, Ws, bs = dz.Variable(x), dz.Variable(W), dz.Variable(b)
conv2d_simple(xs, Ws, bs, 2, 1).sum().backward()
print("same gradients (x, W, b):", all(
    np.allclose(a.grad.data, c.grad.data) for a, c in [(xv, xs), (Wv, Ws), (bv, bs)]))
sx, sW, sb = x[:2, :, :5, :5], W[:2], b[:2]
print("gradient check x:", gradient_check(lambda v: Fc.conv2d(v, sW, sb, 2, 1) ** 2, sx))
print("gradient check W:", gradient_check(lambda v: Fc.conv2d(sx, v, sb, 2, 1) ** 2, sW))

# %% [markdown]
# ## How much faster?
#
# A batch of 8 MNIST-sized images, 8 filters: the loop version runs
# $8 \cdot 8 \cdot 28 \cdot 28 \approx 50{,}000$ Python iterations, the im2col
# version 9 slice copies and one matrix product.

# %%
xb = rng.standard_normal((8, 1, 28, 28))
Wb = rng.standard_normal((8, 1, 3, 3))
bb = np.zeros(8)
t0 = time.perf_counter()
slow = conv2d_direct(xb, Wb, bb, 1, 1)
t1 = time.perf_counter()
fast = Fc.conv2d(xb, Wb, bb, 1, 1)
t2 = time.perf_counter()
loop_ms, im2col_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
print(f"loops: {loop_ms:.0f} ms, im2col: {im2col_ms:.2f} ms, same result: "
      f"{np.allclose(slow, fast.data)}")

# %% [markdown]
# ## Exercise
# `col2im` is the *transpose* of `im2col`: for any image `x` and any `c` of
# `col`'s shape, $\langle \mathrm{im2col}(x), c\rangle = \langle x, \mathrm{col2im}(c)\rangle$.
# That is why the gradient of one is the other. Compute both sides for the
# random `x2` and `c2` below (use `Fc.im2col_array` and `Fc.col2im_array`
# with kernel 3, stride 2, pad 1) and store them in `lhs` and `rhs`.

# %%
x2 = rng.standard_normal((2, 3, 7, 7))
c2 = rng.standard_normal(Fc.im2col_array(x2, 3, 2, 1).shape)
lhs = (Fc.im2col_array(x2, 3, 2, 1) * c2).sum()  # solution: replace with your own line
rhs = (x2 * Fc.col2im_array(c2, x2.shape, 3, 2, 1)).sum()  # solution: replace with your own line
assert np.isclose(lhs, rhs), "im2col and col2im should be each other's transpose"
print("self-check passed")
