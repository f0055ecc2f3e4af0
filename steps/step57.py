# %% [markdown]
# # Step 57: CNN mechanics: padding, stride and the output size
#
# A fully connected layer treats a 28×28 image as 784 unrelated numbers: it
# forgets which pixels are neighbours. A *convolutional* layer keeps the 2-d
# layout. It slides a small grid of weights, the **kernel** (or filter), over
# the image and, at every position, multiplies the kernel with the patch under
# it and sums the products. The same few weights are reused at every position,
# so a pattern the kernel detects (an edge, a stroke) is found wherever it
# appears, with far fewer parameters than a dense layer.
#
# This step works out the mechanics on small arrays, with plain loops, before
# the next step makes it fast.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like.functions_conv as Fc
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(57)  # every file this step writes goes here

# %% [markdown]
# ## One channel, one kernel
#
# For an image $x$ of size $H \times W$ and a kernel $k$ of size $K_H \times K_W$,
# the output at row $p$ and column $q$ is
#
# $$y_{p,q} = \sum_{i=0}^{K_H-1} \sum_{j=0}^{K_W-1} k_{i,j}\, x_{p+i,\,q+j}.$$
#
# (Mathematicians would flip the kernel and call this *cross-correlation*;
# every deep-learning framework computes it this way and calls it convolution.
# Since the kernel is learned, the flip makes no difference.)
#
# Below, a 6×6 image that is dark on the left and bright on the right, and a
# kernel that responds to a change from left to right. The loop is the
# formula, written out:

# %%
def correlate2d(x, k, stride=1, pad=0):
    """The formula above, one output element at a time (slow, but obviously right)."""
    x = np.pad(x, pad)  # `pad` rows/columns of zeros on every side
    KH, KW = k.shape
    OH = (x.shape[0] - KH) // stride + 1
    OW = (x.shape[1] - KW) // stride + 1
    y = np.zeros((OH, OW))
    for p in range(OH):
        for q in range(OW):
            patch = x[p * stride:p * stride + KH, q * stride:q * stride + KW]
            y[p, q] = (patch * k).sum()
    return y


image = np.zeros((6, 6))
image[:, 3:] = 1.0  # right half bright
edge = np.array([[-1.0, 0.0, 1.0]] * 3)  # "right minus left"
response = correlate2d(image, edge)
print("image:\n", image)
print("response (4x4):\n", response)

# %% [markdown]
# The output is zero over the flat regions and large where the window
# straddles the edge. It is also *smaller* than the input: a 3×3 window fits
# in only $6 - 3 + 1 = 4$ positions along each axis.
#
# ## Padding
#
# To keep the size, surround the image with a border of zeros first. With
# $P$ rows and columns of padding on each side, a 3×3 kernel and $P = 1$ gives
# back a 6×6 output ("same" padding). Padding also lets the border pixels sit
# in the middle of a window as often as the others do.

# %%
same = correlate2d(image, edge, pad=1)
print("with pad=1:", same.shape)
print(same)

# %% [markdown]
# The first and last columns now see the zero border: the bright right edge of
# the image looks like a fall from 1 to 0, so the response there is negative.
#
# ## Stride
#
# The **stride** $S$ is how far the window jumps between positions. Stride 2
# visits every other position and roughly halves each side: a cheap way to
# shrink feature maps as a network gets deeper.

# %%
strided = correlate2d(image, edge, stride=2, pad=1)
print("stride=2, pad=1:", strided.shape)
print(strided)

# %% [markdown]
# Where those windows sit: the padded 8×8 input (the zero border shaded), and
# the windows of the first output row, two columns apart:

# %%
padded = np.pad(image, 1)
fig, ax = plt.subplots(figsize=(4.5, 4.5))
ax.imshow(padded, cmap="Greys", vmin=-0.5, vmax=1.5)
for (r, c), v in np.ndenumerate(padded):
    border = r in (0, padded.shape[0] - 1) or c in (0, padded.shape[1] - 1)
    color = "tab:gray" if border else ("w" if v > 0.5 else "k")
    ax.text(c, r, f"{v:g}", ha="center", va="center", color=color)
for k, color in enumerate(["tab:blue", "tab:orange", "tab:green"]):
    inset = 0.06 * (k + 1)
    ax.add_patch(plt.Rectangle((2 * k - 0.5 + inset, -0.5 + inset), 3 - 2 * inset,
                               3 - 2 * inset, fill=False, ec=color, lw=2.5))
ax.set_title(f"pad=1, stride=2: output {strided.shape[0]}x{strided.shape[1]}")
ax.set_xticks([])
ax.set_yticks([])
save_figure(fig, out_dir / "stride_windows.png")

# %% [markdown]
# ## The output size
#
# Along one axis, the window starts at $0, S, 2S, \dots$ in the padded input
# of length $H + 2P$, and must fit entirely: the last start is at most
# $H + 2P - K$. Counting the starts gives
#
# $$O = \left\lfloor \frac{H + 2P - K}{S} \right\rfloor + 1.$$
#
# The floor matters: when $S$ does not divide $H + 2P - K$, the last few
# rows are never covered. `dezero_like.functions_conv.get_conv_outsize` is this
# formula; here it is checked against the loop for a few settings:

# %%
print(f"{'H':>3} {'K':>3} {'S':>3} {'P':>3} {'formula':>8} {'loop':>5}")
for H, K, S, P in [(6, 3, 1, 0), (6, 3, 1, 1), (6, 3, 2, 1), (7, 3, 2, 0), (8, 3, 2, 0),
                   (28, 5, 1, 2), (28, 2, 2, 0)]:
    formula = Fc.get_conv_outsize(H, K, S, P)
    loop = correlate2d(np.zeros((H, H)), np.zeros((K, K)), S, P).shape[0]
    assert formula == loop
    print(f"{H:>3} {K:>3} {S:>3} {P:>3} {formula:>8} {loop:>5}")

# %% [markdown]
# Two lines of the table say the same thing: a 7×7 and an 8×8 input both give
# a 3×3 output with $K = 3$, $S = 2$: the eighth row is simply never read.
#
# ## Channels, filters and batches
#
# Real images have several **channels** (red, green, blue; or, deeper in a
# network, the feature maps of the previous layer). A filter then has one
# kernel slice per input channel, and the products are summed over the
# channels too: one filter gives one output map. A layer has $OC$ filters and
# so produces $OC$ output channels; a bias adds one number per output channel.
# With a batch of $N$ images the shapes are:
#
# | | shape |
# | --- | --- |
# | input $x$ | $(N, C, H, W)$ |
# | weights $W$ | $(OC, C, K_H, K_W)$ |
# | bias $b$ | $(OC,)$ |
# | output $y$ | $(N, OC, O_H, O_W)$ |
#
# $$y_{n,o,p,q} = b_o + \sum_{c}\sum_{i,j} W_{o,c,i,j}\; x_{n,c,\,pS+i,\,qS+j}.$$
#
# Each output channel is the sum of the single-channel correlations of every
# input channel with that filter's slice. The loop below builds a
# 2-image, 3-channel, 2-filter example from `correlate2d` and checks it against
# the package's `conv2d` (which the next step explains):

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3, 6, 6))
W = rng.standard_normal((2, 3, 3, 3))
b = np.array([0.5, -0.5])
y_loop = np.zeros((2, 2, 3, 3))
for n in range(2):
    for o in range(2):
        y_loop[n, o] = b[o] + sum(correlate2d(x[n, c], W[o, c], 2, 1) for c in range(3))
y = Fc.conv2d(x, W, b, stride=2, pad=1)
print("conv2d output shape:", y.shape)
print("loop and conv2d agree:", np.allclose(y.data, y_loop))
dense = 3 * 6 * 6 * 2 * 3 * 3 + 2 * 3 * 3
print(f"parameters: {W.size + b.size} (a dense layer from 3x6x6 to 2x3x3 needs {dense})")

# %% [markdown]
# ## Exercise
# 1. A 32×32 input goes through a 5×5 convolution with stride 2 and padding 1.
#    What is the output size? Work it out with the formula, then set `out`.
# 2. Which padding `same_pad` keeps a 28×28 input at 28×28 with a 5×5 kernel
#    and stride 1?

# %%
out = (32 + 2 * 1 - 5) // 2 + 1  # solution: replace with your own answer
same_pad = 2  # solution: replace with your own answer
assert out == Fc.get_conv_outsize(32, 5, 2, 1), "out: use O = (H + 2P - K) // S + 1"
assert Fc.get_conv_outsize(28, 5, 1, same_pad) == 28, "same_pad: solve 28 + 2P - 5 + 1 = 28"
print("self-check passed")
