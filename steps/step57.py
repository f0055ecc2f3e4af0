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

# %% [markdown]
# ### The package code of this step
#
# In this step `functions_conv` gains `pair`, `get_conv_outsize`, `get_deconv_outsize`,
# `col2im_array`, `Conv2d`, `conv2d`, `Deconv2d`, `deconv2d`, `Conv2DGradW`; `utils` finds the
# first three too, as in the book; `functions` finds the convolution functions, and answers
# PyTorch's names for functions (`F.max_pool2d`) with what to write here.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# The convolution functions live in their own module, `functions_conv`. The `__getattr__` made by
# `forward_names` lets `functions` find them too (`F.conv2d`): the module listed for a name is
# imported the first time that name is asked for, so `functions` itself never imports it.
#
# The same `__getattr__` answers PyTorch's names for functions, which a reader coming from
# `torch.nn.functional` types first: `F.max_pool2d` says to write `F.pooling`, `F.cross_entropy`
# says `F.softmax_cross_entropy`, and a name with no function here (`F.sqrt`, `F.l1_loss`) says
# what expression to write instead. It stays an `AttributeError`, so `hasattr(F, "sqrt")` is
# still False.

# %%
#| export dezero_like/functions.py
from dezero_like.core import _ABS
from dezero_like.utils import forward_names

# PyTorch's name -> what to write here (F is dezero_like.functions)
_PYTORCH_NAMES = {
    "cross_entropy": "F.softmax_cross_entropy(y, t): the scores (logits) and integer labels, "
                     "as PyTorch's cross_entropy takes them",
    "nll_loss": "F.softmax_cross_entropy(y, t) on the scores, which is nll_loss of "
                "log_softmax(y); from log-probabilities p, -F.mean(p[np.arange(len(t)), t])",
    "mse_loss": "F.mean_squared_error(y, t), which divides the sum of squares by len(y) "
                "(PyTorch divides by the number of elements: F.mean((y - t) ** 2))",
    "l1_loss": "F.mean(d * np.sign(d.data)) with d = y - t: there is no l1_loss (the gradient "
               "of |d| is sign(d))",
    "binary_cross_entropy_with_logits": "F.sigmoid_cross_entropy(y, t), which sums over the "
                                        "elements and divides by len(y) (PyTorch takes the "
                                        "mean of every element)",
    "max_pool2d": "F.pooling(x, kernel_size, stride, pad) (the stride defaults to kernel_size, "
                  "as in PyTorch)",
    "avg_pool2d": "F.average_pooling(x, kernel_size, stride, pad) (the stride defaults to "
                  "kernel_size, as in PyTorch)",
    "adaptive_avg_pool2d": "F.mean(x, axis=(2, 3), keepdims=True) for an output of size 1 (for "
                           "k x k, F.average_pooling(x, (H // k, W // k)) when k divides H and W)",
    "conv_transpose2d": "F.deconv2d(x, W, b, stride, pad), W of shape (C, OC, KH, KW) as in "
                        "PyTorch",
    "embedding": "F.embed_id(ids, W): the rows of W picked by the integer ids",
    "one_hot": "np.eye(n)[t], an array of n columns (labels need no gradient)",
    "sqrt": "x ** 0.5: there is no sqrt function",
    "abs": _ABS + ": there is no abs function",
    "silu": "x * F.sigmoid(x): there is no silu function",
    "hardtanh": "F.clip(x, -1.0, 1.0)",
}


# average_pooling, batch_norm, col2im, conv2d, deconv2d, embed_id, im2col, pooling (and the
# book's conv2d_simple, pooling_simple, batch_nrom, BatchNorm, and batch_norm_simple): written
# in dezero_like/functions_conv.py (this step and the next two), found here too, as in the book
__getattr__ = forward_names(__name__, {
    "BatchNorm": "dezero_like.functions_conv",
    "average_pooling": "dezero_like.functions_conv",
    "batch_norm": "dezero_like.functions_conv",
    "batch_norm_simple": "dezero_like.functions_conv",
    "batch_nrom": "dezero_like.functions_conv",
    "col2im": "dezero_like.functions_conv",
    "conv2d": "dezero_like.functions_conv",
    "conv2d_simple": "dezero_like.functions_conv",
    "deconv2d": "dezero_like.functions_conv",
    "embed_id": "dezero_like.functions_conv",
    "im2col": "dezero_like.functions_conv",
    "pooling": "dezero_like.functions_conv",
    "pooling_simple": "dezero_like.functions_conv",
}, pytorch=_PYTORCH_NAMES)


# %% [markdown]
# `functions_conv` begins with `pair`, which turns the `kernel_size`, `stride` and `pad` arguments
# into a `(height, width)` pair, so a square kernel can be given as one int. Anything else is
# refused with a message, not left to fail later in the arithmetic.

# %%
#| export dezero_like/functions_conv.py
"""Convolution and pooling: ``import dezero_like.functions_conv as Fc``.

Images are 4-d arrays ``(N, C, H, W)``: batch, channels, height, width.
Every function here rests on one idea, *im2col*: copy each ``KH x KW`` window
of the (padded) image into its own column, so that a convolution becomes one
big matrix product and pooling becomes a ``max`` or ``mean`` over an axis.
``col2im`` is the reverse move: it adds every column back into the window it
came from (overlapping windows add up). The two are each other's transpose,
which is why the backward of one is the other.

Only loops over the ``KH x KW`` kernel offsets appear in Python; each iteration
moves a whole strided slice of the batch, so the cost is ``KH*KW`` array copies
whatever the image and batch size. The same code runs on CuPy.

Shapes (``OH``, ``OW`` from :func:`get_conv_outsize`):

* ``conv2d``: ``x (N, C, H, W)``, ``W (OC, C, KH, KW)``, ``b (OC,)`` -> ``(N, OC, OH, OW)``
* ``deconv2d``: ``x (N, C, H, W)``, ``W (C, OC, KH, KW)``, ``b (OC,)`` -> ``(N, OC, OH, OW)``
  with ``OH = stride*(H-1) + KH - 2*pad`` (the transpose of ``conv2d``)
* ``pooling`` / ``average_pooling``: ``(N, C, H, W)`` -> ``(N, C, OH, OW)``
"""

import numbers


def pair(x):
    """``3 -> (3, 3)``; a pair ``(kh, kw)`` is returned as a tuple of ints."""
    # the usual cases first, quickly (a layer's pairs come back here): the checks below take ~1 us
    if type(x) is int:
        return (x, x)
    if type(x) is tuple and len(x) == 2 and type(x[0]) is int and type(x[1]) is int:
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):  # True is not a size
        return (int(x), int(x))
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in x
    ):
        return (int(x[0]), int(x[1]))
    raise TypeError(f"expected an int or a pair of ints (height, width), got {x!r}")


# %% [markdown]
# `get_conv_outsize` counts how many window positions fit: the window starts at `0, stride,
# 2*stride, ...` of the padded input and must end inside it. `get_deconv_outsize` runs that
# formula backwards. Because of the `//`, several input sizes give the same conv output size.

# %%
#| export dezero_like/functions_conv.py
def get_conv_outsize(input_size, kernel_size, stride, pad):
    """Output length of a convolution along one axis.

    ``OH = (H + 2*pad - KH) // stride + 1``: the window starts at ``0, stride,
    2*stride, ...`` of the padded input and must fit entirely inside it.
    """
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size, kernel_size, stride, pad):
    """Output length of a transposed convolution: ``stride*(size-1) + KH - 2*pad``."""
    return stride * (size - 1) + kernel_size - pad * 2


# %% [markdown]
# The book keeps `pair` and the two size formulas in `utils`, where its readers' own
# convolution code imports them from. `utils` finds them here, in `functions_conv`, the same
# way it finds the drawing functions in `graph` (step 25): this cell writes its `__getattr__`
# again, with the three new names added. It also answers three names of the book's `utils`
# that are left out here (`get_file`, `cache_dir`, `show_progress`: this package downloads only
# through `datasets.download`) with what to write instead, so that a book script that asks
# for one stops with that advice rather than a bare `AttributeError`.

# %%
#| export dezero_like/utils.py
from dezero_like.utils import forward_names


# get_dot_graph, plot_dot_graph: written in dezero_like/graph.py; pair, get_conv_outsize,
# get_deconv_outsize: in dezero_like/functions_conv.py. Found here too, as in the book
__getattr__ = forward_names(__name__, {
    "get_conv_outsize": "dezero_like.functions_conv",
    "get_deconv_outsize": "dezero_like.functions_conv",
    "get_dot_graph": "dezero_like.graph",
    "pair": "dezero_like.functions_conv",
    "plot_dot_graph": "dezero_like.graph",
}, book={
    "get_file": "download with dezero_like.datasets.download([url], path), which checks an "
                "md5= if you give one, and pass the path on (pretrained VGG16 weights: "
                "VGG16.pretrained_path() says where to put them)",
    "cache_dir": "files go under dezero_like.datasets.data_root() (set DEZERO_LIKE_DATA)",
    "show_progress": "dezero_like.datasets.download draws its own progress bar",
})


# %% [markdown]
# `_check_geometry` rejects, with a message, an input that is not 4-d, a stride or kernel below 1
# (`_check_sizes`, which the layers also ask when they are built), and a kernel larger than the
# padded image: errors that would otherwise appear as a strange shape deep inside the
# computation.

# %%
#| export dezero_like/functions_conv.py
def _check_sizes(name, kernel_size, stride, pad):
    """Refuse a kernel or stride below 1 and a negative pad (``kernel_size`` None: not known
    yet, as for a transposed convolution before it sees its weight)."""
    if min(kernel_size or (1,)) < 1 or min(stride) < 1 or min(pad) < 0:
        kernel = "" if kernel_size is None else f"kernel_size {kernel_size}, "
        raise ValueError(f"{name}: kernel_size and stride must be >= 1 and pad >= 0, got "
                         f"{kernel}stride {stride}, pad {pad}")


def _to_4d(ndim):
    """How to make an input of ``ndim`` axes the (N, C, H, W) a convolution takes, for each
    way of reading its shape (PyTorch also takes one image (C, H, W) unbatched)."""
    return {3: "a batch of one-channel images (N, H, W) needs its channel axis, "
               "x.reshape(N, 1, H, W); one image (C, H, W) needs its batch axis, x[None]",
            2: "rows of flattened images (N, C*H*W) need x.reshape(N, C, H, W); one image "
               "(H, W) needs both axes, x.reshape(1, 1, H, W)"}.get(
                   ndim, "reshape it to (N, C, H, W)")


def _check_geometry(name, x_shape, kernel_size, stride, pad):
    if len(x_shape) != 4:
        raise ValueError(f"{name} expects a 4-d input (N, C, H, W), got shape "
                         f"{tuple(x_shape)}: {_to_4d(len(x_shape))}")
    _check_sizes(name, kernel_size, stride, pad)
    KH, KW = kernel_size
    PH, PW = pad
    H, W = x_shape[2:]
    if H + 2 * PH < KH or W + 2 * PW < KW:
        raise ValueError(
            f"{name}: a {KH}x{KW} kernel does not fit into a {H}x{W} input padded by "
            f"{pad}; use a smaller kernel or more padding"
        )


# %% [markdown]
# `_im2col_channels_first` is im2col: for each kernel offset `(i, j)` one strided slice of the
# padded batch is copied into `col[:, i, j]`. The Python loops run over the `KH * KW` offsets
# only, never over images or pixels. The layout `(C, KH, KW, N, OH, OW)` is chosen so that the
# matrix products below can reshape `col` without copying it.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda


def _im2col_channels_first(img, kernel_size, stride, pad):
    """im2col with the layout ``(C, KH, KW, N, OH, OW)``: the weight gradient's favourite.

    Reshaped to ``(C*KH*KW, N*OH*OW)`` it is contiguous, so the weight gradient
    is one matrix product with no copy of the (large) column array.
    """
    xp = cuda.get_array_module(img)
    N, C, H, W = img.shape
    KH, KW = kernel_size
    SH, SW = stride
    PH, PW = pad
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)
    if PH or PW:  # pad and move the channels first in one copy
        padded = xp.zeros((C, N, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
        padded[:, :, PH:PH + H, PW:PW + W] = img.transpose(1, 0, 2, 3)
        img = padded
    else:
        img = img.transpose(1, 0, 2, 3)
    col = xp.empty((C, KH, KW, N, OH, OW), dtype=img.dtype)
    for i in range(KH):
        for j in range(KW):
            col[:, i, j] = img[:, :, i:i + SH * OH:SH, j:j + SW * OW:SW]
    return col


# %% [markdown]
# `col2im_array` undoes the move with the same loop, but adds (`+=`) each slice into the image:
# where windows overlap, their contributions sum. The image is made with extra rows and columns so
# that every slice stays in range, and the padding is cut off at the end.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda


def col2im_array(col, img_shape, kernel_size, stride, pad, to_matrix=True):
    """Add every column back into its window: the transpose of :func:`im2col_array`.

    ``col`` is ``(N, C, KH, KW, OH, OW)`` (or the matrix form when
    ``to_matrix``); the result has ``img_shape = (N, C, H, W)``. Where windows
    overlap, their contributions add up; what fell on the padding is dropped.
    """
    xp = cuda.get_array_module(col)
    N, C, H, W = img_shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)
    if to_matrix:
        col = col.reshape(N, OH, OW, C, KH, KW).transpose((0, 3, 4, 5, 1, 2))
    # room for the padding, plus stride-1 rows so every slice end is in range
    img = xp.zeros((N, C, H + 2 * PH + SH - 1, W + 2 * PW + SW - 1), dtype=col.dtype)
    for i in range(KH):
        i_end = i + SH * OH
        for j in range(KW):
            j_end = j + SW * OW
            img[:, :, i:i_end:SH, j:j_end:SW] += col[:, :, i, j, :, :]
    return img[:, :, PH:H + PH, PW:W + PW]


# %% [markdown]
# Three small helpers shared by the convolutions: a check that `W` is 4-d and matches the input's
# channels, the bias added along the channel axis (`reshape((1, OC, 1, 1))` broadcasts it over
# batch and pixels), and the bias gradient, `gy` summed over every axis but the channel.

# %%
#| export dezero_like/functions_conv.py
import numpy as np

from dezero_like import cuda
from dezero_like import functions as F


def _check_conv_weight(name, x, W, c_axis, b=None):
    if W.ndim != 4:
        raise ValueError(f"{name}: W must be 4-d, got shape {W.shape}")
    if min(W.shape[2:]) < 1:
        raise ValueError(f"{name}: the kernel of W {W.shape} is empty; it needs at least 1x1")
    if b is not None and b.shape != (W.shape[1 - c_axis],):
        raise ValueError(
            f"{name}: the bias has shape {b.shape}, but W of shape {W.shape} makes "
            f"{W.shape[1 - c_axis]} output channels (axis {1 - c_axis} of W): b must have "
            f"shape ({W.shape[1 - c_axis]},)")
    if x.ndim == 4 and x.shape[1] != W.shape[c_axis]:
        hint = ""
        if x.shape[-1] == W.shape[c_axis] or (x.shape[-1] in (1, 3, 4) and
                                              x.shape[-1] < x.shape[1]):
            hint = ("; is the input channels-last (N, H, W, C)? The layout here is "
                    "(N, C, H, W): x.transpose(0, 3, 1, 2)")
        raise ValueError(
            f"{name}: the input has {x.shape[1]} channels but W of shape {W.shape} expects "
            f"{W.shape[c_axis]} (axis {c_axis} of W){hint}"
        )


def _bias(y, b):
    return y if b is None else F._add_bias(y, b.reshape((1, b.size, 1, 1)))


def _sum_bias_grad(gy):
    return F.sum(gy, axis=(0, 2, 3))


def _per_image(x, K):
    """Whether a convolution's product is better cut into one product per image.

    With few rows (``K = C*KH*KW``, 9 for an MNIST first layer) one long product
    has a tiny side that OpenBLAS handles several times more slowly than N
    shorter ones. Only for NumPy's BLAS dtypes: CuPy's kernels and float16 keep
    the long product (in float16 each image's product would also be rounded).
    """
    return K <= 64 and cuda.get_array_module(x) is np and x.dtype in (np.float32, np.float64)


# %% [markdown]
# `Conv2d` computes the whole batch with one matrix product, `W (OC, C*KH*KW) @ col`. Backward
# needs `W` only for the input's gradient and `x` only for the weight's, so forward keeps only
# what `needs_input_grad` asks for, and records the kernel size because `W` may not be kept. The
# three gradients are themselves functions (`deconv2d`, `Conv2DGradW`, a sum), so they can be
# differentiated again.
#
# The weight gradient needs the same columns `col` that forward built from `x`. Building them again
# in backward costs a second im2col; keeping them costs memory until backward: $K_H K_W$ times the
# input's with stride 1 and "same" padding, about $K_H K_W / S^2$ times with stride $S$. Chainer's
# first version and PyTorch's old CPU convolution kept them; Chainer from version 2 on (its
# `Convolution2DGradW`) and DeZero build them again. `Conv2d` keeps them when they
# fit in `keep_col_bytes` (64 MiB per layer by default; set it to 0 to never keep them) and
# `release` drops them with the rest of what
# backward needed.

# %%
#| export dezero_like/functions_conv.py
import numpy as np

from dezero_like import cuda
from dezero_like import functions as F
from dezero_like.core import Function


class Conv2d(Function):
    r"""2-d convolution (cross-correlation, as in every DL framework).

    $y_{n,o,p,q} = b_o + \sum_{c,i,j} W_{o,c,i,j}\, \tilde x_{n,c,pS_H+i,qS_W+j}$
    with $\tilde x$ the zero-padded input. Computed as one matrix product for
    the whole batch, ``W (OC, C*KH*KW) @ col (C*KH*KW, N*OH*OW)`` (one per image
    for a layer with few rows, see ``_per_image``).

    Gradients: ``gx = deconv2d(gy, W)`` (the transposed convolution),
    ``gW = Conv2DGradW(x, gy)`` (correlate the input with the output gradient),
    ``gb = sum of gy over (N, OH, OW)``. All three are differentiable.

    Forward keeps its column array for ``gW`` when it takes at most
    ``Conv2d.keep_col_bytes`` (a class attribute; 0 never keeps it).
    """

    keep_col_bytes = 64 * 2**20  # keep forward's columns for gW when at most this big
    col = None

    def __init__(self, stride=1, pad=0):
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, W, b=None):
        _check_conv_weight("conv2d", x, W, 1, b)
        KH, KW = W.shape[2:]
        _check_geometry("conv2d", x.shape, (KH, KW), self.stride, self.pad)
        needs = self.needs_input_grad or (True, True, True)
        # x is read only to compute gW; W only to compute gx
        self.retain_inputs(((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
        self.x_shape = x.shape
        self.kernel_size = (KH, KW)  # W itself may not be kept (only x is, for gW)
        xp = cuda.get_array_module(x)
        N = x.shape[0]
        OC = W.shape[0]
        # One matrix product for the whole batch: W (OC, C*KH*KW) @ col (C*KH*KW, N*OH*OW).
        # (One small product per image, as a batched matmul, is several times slower,
        # except for layers with few rows: see _per_image.)
        col = _im2col_channels_first(x, (KH, KW), self.stride, self.pad)
        if self.needs_input_grad and needs[1] and col.nbytes <= self.keep_col_bytes:
            self.col = col  # the weight gradient's operand: saves an im2col in backward
        OH, OW = col.shape[4:]
        K = col.shape[0] * KH * KW
        if _per_image(x, K):  # each image's product lands in (N, OC, OH*OW): C-ordered
            y = W.reshape(OC, K) @ col.reshape(K, N, OH * OW).transpose(1, 0, 2)
            y = y.reshape(N, OC, OH, OW)
        elif b is not None and x.dtype.char == W.dtype.char == "e":  # float16: b, then one rounding
            y = W.reshape(OC, K).astype(np.float32) @ col.reshape(K, N * OH * OW).astype(
                np.float32)
            y = y.reshape(OC, N, OH, OW).transpose(1, 0, 2, 3)
            return xp.ascontiguousarray(F._float16_plus_bias(y, b.reshape(1, OC, 1, 1)))
        else:
            y = W.reshape(OC, K) @ col.reshape(K, N * OH * OW)
            y = y.reshape(OC, N, OH, OW).transpose(1, 0, 2, 3)  # a view: (N, OC, OH, OW)
        if b is None:
            return xp.ascontiguousarray(y)  # a copy only for the transposed view
        # the bias (and any copy) in one pass, into a C-ordered array (left to itself, NumPy
        # would lay the sum out like a transposed input); y is the product's own new memory,
        # so when it is C-ordered already the bias is added in place
        dtype = xp.result_type(y.dtype, b.dtype)
        in_place = y.flags.c_contiguous and y.dtype == dtype
        out = y if in_place else xp.empty(y.shape, dtype=dtype)
        return xp.add(y, b.reshape(1, OC, 1, 1), out=out)

    def backward(self, gy):
        x, W = self.inputs[:2]
        needs = self.needs_input_grad
        gx = gW = gb = None
        if needs[0]:
            gx = deconv2d(gy, W, None, self.stride, self.pad, outsize=self.x_shape[2:])
        if needs[1]:
            gW = Conv2DGradW(self.kernel_size, self.stride, self.pad, self.col)(x, gy)
        if len(needs) == 3 and needs[2]:
            gb = _sum_bias_grad(gy)
        return (gx, gW) if len(needs) == 2 else (gx, gW, gb)

    def release(self):
        super().release()
        self.col = None


# %% [markdown]
# `conv2d` passes `b` only when there is one, so `Conv2d` sees two inputs and returns two gradients
# in that case.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import _REQUIRED, _refuse_keywords
from dezero_like.functions import _UNAVAILABLE


def _pad(padding):
    """What to write for PyTorch's ``padding=``."""
    if isinstance(padding, str):  # "same", "valid"
        return ("write pad=0" if padding == "valid" else
                "write pad=kernel_size // 2, which keeps the size for an odd kernel and stride 1")
    return f"write pad={padding!r}"


_CONV_KEYWORDS = {  # PyTorch's F.conv2d(x, weight, bias, stride, padding, dilation, groups)
    "weight": "write W=, of shape (OC, C, KH, KW) as PyTorch's weight",
    "bias": "write b=",
    "padding": _pad, "dilation": _UNAVAILABLE, "groups": _UNAVAILABLE,
}


def conv2d(x, W=_REQUIRED, b=None, stride=1, pad=0, **others):
    """Convolve ``x (N, C, H, W)`` with filters ``W (OC, C, KH, KW)`` plus bias ``b (OC,)``.

    ``stride`` and ``pad`` are an int or a pair ``(height, width)``. The output
    is ``(N, OC, OH, OW)`` with ``OH = (H + 2*pad - KH) // stride + 1``.
    """
    if others or W is _REQUIRED:  # PyTorch's F.conv2d(x, w, padding=1), say
        _refuse_keywords("F.conv2d", others, _CONV_KEYWORDS, W=W)
    if b is None:
        return Conv2d(stride, pad)(x, W)
    return Conv2d(stride, pad)(x, W, b)


# %% [markdown]
# With stride 1 (the input gradient of every stride-1 convolution is one), there is a faster way
# that needs no column array at all. Lay every image on the grid of the full output, `Hq x Wq`
# with `Hq = H + KH - 1` and `Wq = W + KW - 1`, zeros beyond its `H` rows and `W` columns, and
# put the images of the batch one after the other: one long row of numbers per channel. Kernel
# tap `(i, j)` then contributes `W[:, :, i, j]^T @ x`, a product for the whole batch that lands
# in the output shifted by `i * Wq + j` elements: **one add per tap, along the whole batch**.
# `col2im_array` adds row by row instead (14 numbers at a time in a 14x14 feature map, and
# NumPy's cost per row is larger than per number). The zeros are what make one long add
# correct: a shifted run spills past the end of a row, or of an image, only from zeros (times
# finite weights: an infinite weight makes $0 \cdot \infty$, nan, there).
#
# The products of all the taps are one matrix product: stack the taps' `W[:, :, i, j]^T` into one
# `(KH*KW*OC, C)` matrix, and each block of `OC` rows of the result is one tap's contribution.
# On the 2-core Xeon this was measured on, one tall product ran faster than nine short ones
# (1.3 against 2.3 ms: OpenBLAS did little there with 16 rows at a time). But for a whole
# batch its result is large (9 x 16 x 25,600 numbers, 15 MB, in the benchmark's layer), and a
# new large array on every call can cost more in page faults than the product itself
# (`docs/performance.md`). So the product is made for a **run of whole images** at a time, into
# one buffer, `part`, of at most about 2 MiB, reused by every run (14 images of that layer);
# the shifted adds of a run spill past its last image only from zeros, as above. When a single
# image's stacked products are already larger than that (large images, large kernels), the
# taps go one at a time along the whole batch, into a buffer of the output's size: runs shorter
# than an image would multiply the adds, `KH*KW` per run.
#
# On a 2-core Xeon the long adds made a small CNN's training step about a tenth faster than the
# same products added image by image, row by row, and the stacked product took the second conv
# layer's input gradient (16 -> 32 channels on 14x14 maps) from 4.3 to about 3 ms.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda


def _deconv_stride1(x, W, out_hw, pad, part_bytes=2 * 2**20):
    """``deconv2d`` with stride 1: per kernel tap, one shifted add along the whole batch.

    The taps' products are computed for a run of whole images at a time, all taps in
    one matrix product, into one buffer of at most about ``part_bytes``. When one image's
    products alone are larger, each tap's product is made along the whole batch instead,
    into a buffer of the output's size.
    Returns a view ``(N, OC, OH, OW)`` of the full output cropped by ``pad``.
    """
    xp = cuda.get_array_module(x)
    N, C, H, Wd = x.shape
    OC, KH, KW = W.shape[1:]
    Hq, Wq = H + KH - 1, Wd + KW - 1  # the output before the padding is cropped
    plane = N * Hq * Wq  # the whole batch, image after image, each on the output's grid
    xq = xp.zeros((C, N, Hq, Wq), dtype=x.dtype)
    xq[:, :, :H, :Wd] = x.transpose(1, 0, 2, 3)
    xq = xq.reshape(C, plane)
    dtype = xp.result_type(x.dtype, W.dtype)  # as W.T @ x would have it
    # room past the end for the largest shift, (KH - 1) * Wq + KW - 1
    y = xp.zeros((OC, plane + (KH - 1) * Wq + KW - 1), dtype=dtype)
    taps = W.transpose(2, 3, 1, 0).reshape(KH * KW * OC, C)  # row (i, j, o): W[:, o, i, j]
    image_bytes = KH * KW * OC * Hq * Wq * np.dtype(dtype).itemsize
    if image_bytes <= part_bytes:  # all taps in one product, for a run of whole images
        group, run = KH * KW, part_bytes // max(1, image_bytes) * max(1, Hq * Wq)
    else:  # one image's products alone are larger: tap by tap along the whole batch
        group, run = 1, max(1, plane)  # (an empty batch: one empty run)
    part = xp.empty(group * OC * min(run, plane), dtype=dtype)  # reused by every product
    for start in range(0, plane, run):
        n = min(run, plane - start)  # the last run may be shorter
        out = part[:group * OC * n].reshape(group * OC, n)
        for first in range(0, KH * KW, group):
            rows = taps[first * OC:(first + group) * OC]
            xp.matmul(rows, xq[:, start:start + n], out=out)  # (group*OC, C) @ (C, n)
            for k in range(first, first + group):
                at = start + (k // KW) * Wq + k % KW  # tap (i, j) lands i rows and j columns on
                y[:, at:at + n] += out[(k - first) * OC:(k - first + 1) * OC]
    (OH, OW), (PH, PW) = out_hw, pad
    y = y[:, :plane].reshape(OC, N, Hq, Wq)[:, :, PH:PH + OH, PW:PW + OW]
    return y.transpose(1, 0, 2, 3)


# %% [markdown]
# `Deconv2d` is the transposed convolution: `W^T @ x` gives one column per input pixel, and
# `col2im_array` adds those columns into the output. It keeps its inputs in the same way as
# `Conv2d`, and its gradients are `Conv2d`'s with the roles swapped: `gx` is a convolution of
# `gy`. `outsize` picks one of the input sizes a strided convolution maps to the same size.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda
from dezero_like.core import Function


class Deconv2d(Function):
    r"""Transposed convolution: the linear map whose matrix is conv2d's transposed.

    Every input pixel scatters a weighted copy of the kernel into the output:
    ``col = W^T x`` then ``y = col2im(col)``. ``W`` has shape ``(C, OC, KH, KW)``
    (input channels first). Gradients: ``gx = conv2d(gy, W)``,
    ``gW = Conv2DGradW(gy, x)``, ``gb = sum of gy over (N, OH, OW)``.
    """

    def __init__(self, stride=1, pad=0, outsize=None):
        self.stride = pair(stride)
        self.pad = pair(pad)
        _check_sizes("deconv2d", None, self.stride, self.pad)  # no input to check them against
        self.outsize = None if outsize is None else pair(tuple(outsize))

    def forward(self, x, W, b=None):
        _check_conv_weight("deconv2d", x, W, 0, b)
        if x.ndim != 4:
            raise ValueError(f"deconv2d expects a 4-d input (N, C, H, W), got shape {x.shape}")
        needs = self.needs_input_grad or (True, True, True)
        self.retain_inputs(((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
        C, OC, KH, KW = W.shape
        self.kernel_size = (KH, KW)  # W itself may not be kept (only x is, for gW)
        N, _, H, Wd = x.shape
        SH, SW = self.stride
        PH, PW = self.pad
        if self.outsize is None:
            OH = get_deconv_outsize(H, KH, SH, PH)
            OW = get_deconv_outsize(Wd, KW, SW, PW)
        else:
            OH, OW = self.outsize
            if (get_conv_outsize(OH, KH, SH, PH), get_conv_outsize(OW, KW, SW, PW)) != (H, Wd):
                raise ValueError(
                    f"deconv2d: outsize {self.outsize} is inconsistent with an input of "
                    f"{H}x{Wd}, kernel {KH}x{KW}, stride {self.stride}, pad {self.pad}"
                )
        if OH < 1 or OW < 1:
            raise ValueError(f"deconv2d: the output would be {OH}x{OW}; reduce pad")
        if self.stride == (1, 1):  # long runs instead of short rows
            y = _deconv_stride1(x, W, (OH, OW), self.pad)
            return _bias(cuda.get_array_module(y).ascontiguousarray(y), b)
        # One matrix product for the whole batch: W^T (OC*KH*KW, C) @ x (C, N*H*W) gives
        # every column of the output; viewed as (N, OC, KH, KW, H, W) it is col2im's input.
        xt = x.transpose(1, 0, 2, 3).reshape(C, N * H * Wd)
        col = (W.reshape(C, -1).T @ xt).reshape(OC, KH, KW, N, H, Wd)
        col = col.transpose(3, 0, 1, 2, 4, 5)
        y = col2im_array(col, (N, OC, OH, OW), (KH, KW), self.stride, self.pad,
                         to_matrix=False)
        return _bias(y, b)

    def backward(self, gy):
        x, W = self.inputs[:2]
        needs = self.needs_input_grad
        gx = gW = gb = None
        if needs[0]:
            gx = conv2d(gy, W, None, self.stride, self.pad)
        if needs[1]:
            gW = Conv2DGradW(self.kernel_size, self.stride, self.pad)(gy, x)
        if len(needs) == 3 and needs[2]:
            gb = _sum_bias_grad(gy)
        return (gx, gW) if len(needs) == 2 else (gx, gW, gb)


# %% [markdown]
# `deconv2d` is the wrapper; `Conv2d.backward` calls it with `outsize` set to the input's size.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import _REQUIRED, _refuse_keywords

_DECONV_KEYWORDS = {  # PyTorch's F.conv_transpose2d(x, weight, bias, stride, padding, ...)
    **_CONV_KEYWORDS,
    "weight": "write W=, of shape (C, OC, KH, KW) as PyTorch's weight",
    "output_padding": "write outsize=(OH, OW), the output's size: PyTorch's output_padding "
                      "adds to stride*(H-1) + KH - 2*pad",
}


def deconv2d(x, W=_REQUIRED, b=None, stride=1, pad=0, outsize=None, **others):
    """Transposed convolution of ``x (N, C, H, W)`` with ``W (C, OC, KH, KW)``.

    Output ``(N, OC, OH, OW)`` with ``OH = stride*(H-1) + KH - 2*pad`` unless
    ``outsize=(OH, OW)`` picks one of the sizes a strided conv2d maps back to ``H``.
    """
    if others or W is _REQUIRED:  # PyTorch's F.conv_transpose2d(x, w, padding=1), say
        _refuse_keywords("F.deconv2d", others, _DECONV_KEYWORDS, W=W)
    if b is None:
        return Deconv2d(stride, pad, outsize)(x, W)
    return Deconv2d(stride, pad, outsize)(x, W, b)


# %% [markdown]
# `Conv2DGradW` is the weight gradient of a convolution, computed as one matrix product of `gy`
# and the im2col of `x` (the columns `Conv2d`'s forward kept, when it kept them). It is linear
# in each of its two inputs, so its backward is two convolutions; being a `Function`, it lets
# second derivatives pass through a convolution.
#
# The same product can be cut differently: a sum over the batch of one small product per image.
# Which is faster depends on the shapes and the BLAS library. With OpenBLAS a first layer
# (`C*KH*KW` = 9 rows on MNIST) is 4-5x faster cut per image; wider layers are as fast or faster
# as one product, so NumPy takes the per-image sum only for few rows.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import Function


class Conv2DGradW(Function):
    r"""The weight gradient of conv2d: ``gW[o,c,i,j] = sum_{n,p,q} gy[n,o,p,q] * col[n,c,i,j,p,q]``.

    It is bilinear in ``(x, gy)``, so its own backward is two convolutions:
    ``d/dx = deconv2d(gy, ggW)`` and ``d/dgy = conv2d(x, ggW)``. That is what
    makes second derivatives through a CNN work.
    """

    def __init__(self, kernel_size, stride, pad, col=None):
        self.kernel_size = pair(tuple(kernel_size))
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.col = col  # x's columns, when the convolution's forward kept them

    def forward(self, x, gy):
        self.x_shape = x.shape
        N, C = x.shape[:2]
        KH, KW = self.kernel_size
        OC, OH, OW = gy.shape[1:]
        col = self.col
        if col is None:
            col = _im2col_channels_first(x, self.kernel_size, self.stride, self.pad)
        self.col = None  # its own backward needs only x and gy
        K = C * KH * KW
        if _per_image(x, K):
            # Few rows (a first layer: K = 9 on MNIST). One long product would make a tiny
            # (K, OC) result out of sums of N*OH*OW terms, a shape OpenBLAS runs 4-5x slower
            # than this sum of N per-image products (K, OH*OW) @ (OH*OW, OC).
            per_image = (col.reshape(K, N, OH * OW).transpose(1, 0, 2)
                         @ gy.reshape(N, OC, OH * OW).transpose(0, 2, 1))
            return per_image.sum(axis=0).T.reshape(OC, C, KH, KW)
        # one matrix product, (C*KH*KW, N*OH*OW) @ (N*OH*OW, OC), with no copy of col; in
        # this order OpenBLAS is up to 1.8x faster than for the transposed product
        gy_mat = gy.transpose(1, 0, 2, 3).reshape(OC, -1)
        if cuda.get_array_module(gy_mat) is not np:
            # on a GPU the transposed product (OC, N*OH*OW) @ (N*OH*OW, C*KH*KW): cuBLAS reads
            # a transposed operand in place, and gW comes out C-ordered, the layout in which
            # an optimizer updates it together with other parameters (step 71)
            return (gy_mat @ col.reshape(K, -1).T).reshape(OC, C, KH, KW)
        gW = col.reshape(K, -1) @ gy_mat.T
        return gW.T.reshape(OC, C, KH, KW)

    def backward(self, ggW):
        x, gy = self.inputs
        n0, n1 = self.needs_input_grad
        gx = ggy = None
        if n0:
            gx = deconv2d(gy, ggW, None, self.stride, self.pad, outsize=self.x_shape[2:])
        if n1:
            ggy = conv2d(x, ggW, None, self.stride, self.pad)
        return gx, ggy


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
# (Mathematicians call this formula, with no flip, *cross-correlation*; their
# convolution flips the kernel first. Every deep-learning framework computes
# the unflipped version and calls it convolution. Since the kernel is learned,
# the flip makes no difference.)
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
#    Which padding `same_pad` keeps a 28×28 input at 28×28 with a 5×5 kernel
#    and stride 1?
# 2. **Implement then test: the bias of a convolution.** `Conv2d` adds one
#    number per output channel to a `(N, OC, OH, OW)` map. Write `AddBias`, a
#    `Function` of the map `y` and the bias `b` of shape `(OC,)`. In `forward`,
#    give `b` a 4-d shape whose only axis longer than 1 is the channel axis,
#    so that NumPy broadcasts it over the samples and positions and each
#    channel's number reaches all of them (the broadcasting rules of step
#    41). In `backward`, the map's gradient passes through; each bias element
#    was used at every sample and position of its channel, so its gradient
#    gathers `gy` from all of them (step 40's `sum`, the reverse of a
#    broadcast) and has shape `(OC,)`. The self-check runs `gradient_check`
#    on `b` and compares with the bias gradient of `Fc.conv2d`.

# %%
#| exercise
out = ...  # output size of a 32x32 input, 5x5 kernel, stride 2, padding 1
same_pad = ...  # the padding that keeps 28x28 at 28x28 with a 5x5 kernel, stride 1

# %%
#| solution
out = (32 + 2 * 1 - 5) // 2 + 1
same_pad = 2

# %%
#| check
assert out == Fc.get_conv_outsize(32, 5, 2, 1), (
    f"out is {out}: use O = (H + 2P - K) // S + 1 (the floor matters)"
)
assert isinstance(same_pad, int) and Fc.get_conv_outsize(28, 5, 1, same_pad) == 28, (
    f"same_pad = {same_pad} does not keep 28x28: solve 28 + 2P - 5 + 1 = 28"
)
print(f"self-check passed: out = {out}, same_pad = {same_pad}")

# %%
#| exercise
import dezero_like as dz  # noqa: E402
import dezero_like.functions as F  # noqa: E402
from dezero_like.core import Function  # noqa: E402
from dezero_like.utils import gradient_check  # noqa: E402


class AddBias(Function):
    def forward(self, y, b):
        raise NotImplementedError(
            "Exercise (step 57): add b to every sample and position of its channel"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 57): one gradient for y (shape of gy), one for b (shape (OC,))"
        )

# %%
#| solution
import dezero_like as dz  # noqa: E402
import dezero_like.functions as F  # noqa: E402
from dezero_like.core import Function  # noqa: E402
from dezero_like.utils import gradient_check  # noqa: E402


class AddBias(Function):
    def forward(self, y, b):
        return y + b.reshape(1, -1, 1, 1)

    def backward(self, gy):
        return gy, F.sum(gy, axis=(0, 2, 3))

# %%
#| check
rng = np.random.default_rng(0)
maps = rng.standard_normal((2, 3, 4, 5))
bias = rng.standard_normal(3)
weights = rng.standard_normal((2, 3, 4, 5))  # makes every gradient element different
x_in = rng.standard_normal((2, 2, 5, 6))
W_in = rng.standard_normal((3, 2, 3, 3))
b_mine = dz.Variable(bias.copy())
b_pkg = dz.Variable(bias.copy())
y_nob = Fc.conv2d(x_in, W_in, None, stride=1, pad=0).data
y_mine = AddBias()(y_nob, b_mine)
y_pkg = Fc.conv2d(x_in, W_in, b_pkg, stride=1, pad=0)
assert y_mine.shape == y_pkg.shape and np.allclose(y_mine.data, y_pkg.data), (
    "the forward differs from conv2d's with its bias: channel c of every sample and position "
    "gets b[c] added (b needs a 4-d shape whose only axis longer than 1 is the channel axis)"
)
F.sum(y_mine * weights[:, :, :3, :4]).backward()
F.sum(y_pkg * weights[:, :, :3, :4]).backward()
assert np.shape(b_mine.grad.data) == (3,) and np.allclose(b_mine.grad.data, b_pkg.grad.data), (
    f"bias gradient {b_mine.grad.data} differs from conv2d's {b_pkg.grad.data}: "
    "each bias element should gather gy from every sample and position of its channel"
)
gradient_check(lambda bb: AddBias()(maps, bb), bias)
gradient_check(lambda yy: AddBias()(yy, bias), maps)
print("self-check passed: AddBias passes the gradient check and matches conv2d's bias gradient")
