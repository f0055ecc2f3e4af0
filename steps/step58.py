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

# %% [markdown]
# ### The package code of this step
#
# In this step `functions_conv` gains `im2col_array`, `Im2col`, `im2col`, `Col2im`,
# `col2im`, `batch_norm_simple`, `BatchNorm`, `batch_norm` (with the book's spelling
# `batch_nrom`), `embed_id`, `conv2d_simple`;
# `layers_conv` gains `Conv2d`, `Deconv2d`, `BatchNorm`, `EmbedID`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# As in `functions`, `layers` gains a `__getattr__` that finds the new layer classes in
# `layers_conv`, so `L.Conv2d` works as well as `Lc.Conv2d`.

# %%
#| export dezero_like/layers.py
from dezero_like.utils import forward_names


# BatchNorm, Conv2d, Deconv2d, EmbedID (this step), RNN (step 61) and LSTM (step 62): written in
# dezero_like/layers_conv.py, found here too, as in the book
__getattr__ = forward_names(__name__, {
    "BatchNorm": "dezero_like.layers_conv",
    "Conv2d": "dezero_like.layers_conv",
    "Deconv2d": "dezero_like.layers_conv",
    "EmbedID": "dezero_like.layers_conv",
    "LSTM": "dezero_like.layers_conv",
    "RNN": "dezero_like.layers_conv",
})


# %% [markdown]
# `im2col_array` is the public im2col on raw arrays, with the layout `(N, C, KH, KW, OH, OW)` and,
# with `to_matrix=True`, one row per window. `pad_value` sets what the border is filled with: 0
# for a convolution; a max over windows would want $-\infty$, so that padding never wins (step
# 59's max pooling pads that way, without im2col).

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda
from dezero_like.functions_conv import get_conv_outsize, pair


def im2col_array(img, kernel_size, stride, pad, to_matrix=True, pad_value=0):
    """Copy every window of ``img`` into a column (arrays in, array out).

    Returns ``col`` of shape ``(N, C, KH, KW, OH, OW)`` where
    ``col[n, c, i, j, oh, ow] = padded[n, c, oh*SH + i, ow*SW + j]``, or with
    ``to_matrix=True`` the matrix ``(N*OH*OW, C*KH*KW)``: one row per window.
    ``pad_value`` fills the border (0 for a convolution; ``-inf`` for a max).
    """
    xp = cuda.get_array_module(img)
    N, C, H, W = img.shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)
    if PH or PW:
        img = xp.pad(img, ((0, 0), (0, 0), (PH, PH), (PW, PW)), mode="constant",
                     constant_values=pad_value)
    col = xp.empty((N, C, KH, KW, OH, OW), dtype=img.dtype)
    for i in range(KH):  # loops over kernel offsets only: each step copies one
        i_end = i + SH * OH  # strided slice of the whole batch
        for j in range(KW):
            j_end = j + SW * OW
            col[:, :, i, j, :, :] = img[:, :, i:i_end:SH, j:j_end:SW]
    if to_matrix:
        col = col.transpose((0, 4, 5, 1, 2, 3)).reshape(N * OH * OW, C * KH * KW)
    return col


# %% [markdown]
# `Im2col` makes im2col a function of the graph. It only copies values, so it is linear and its
# gradient is its transpose, `col2im`; backward needs the input's shape but not its values, hence
# `retain_inputs(())`.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import Function
from dezero_like.functions_conv import _check_geometry, pair


class Im2col(Function):
    """``col = im2col(x)``; linear, so the gradient is ``col2im(gcol)`` (its transpose)."""

    def __init__(self, kernel_size, stride, pad, to_matrix):
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.to_matrix = to_matrix

    def forward(self, x):
        _check_geometry("im2col", x.shape, self.kernel_size, self.stride, self.pad)
        self.retain_inputs(())
        self.input_shape = x.shape
        return im2col_array(x, self.kernel_size, self.stride, self.pad, self.to_matrix)

    def backward(self, gy):
        return col2im(gy, self.input_shape, self.kernel_size, self.stride, self.pad,
                      self.to_matrix)


# %%
#| export dezero_like/functions_conv.py
def im2col(x, kernel_size, stride=1, pad=0, to_matrix=True):
    """Windows of ``x (N, C, H, W)`` as columns (see :func:`im2col_array`); differentiable."""
    return Im2col(kernel_size, stride, pad, to_matrix)(x)


# %% [markdown]
# `Col2im` is the same pair read the other way: its forward adds columns into an image, its backward
# is `im2col`. Each of the two is the other's backward, so derivatives of any order pass through
# them.

# %%
#| export dezero_like/functions_conv.py
from dezero_like.core import Function
from dezero_like.functions_conv import _check_geometry, col2im_array, get_conv_outsize, pair


class Col2im(Function):
    """``x = col2im(col)``; linear, so the gradient is ``im2col(gx)`` (its transpose).

    ``col`` must have exactly the shape im2col makes for ``input_shape``: any other array of
    the same size would be read in the wrong order without a word.
    """

    def __init__(self, input_shape, kernel_size, stride, pad, to_matrix):
        self.input_shape = tuple(input_shape)
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.to_matrix = to_matrix

    def forward(self, col):
        _check_geometry("col2im", self.input_shape, self.kernel_size, self.stride, self.pad)
        N, C, H, W = self.input_shape
        (KH, KW), (SH, SW), (PH, PW) = self.kernel_size, self.stride, self.pad
        OH, OW = get_conv_outsize(H, KH, SH, PH), get_conv_outsize(W, KW, SW, PW)
        shape = (N * OH * OW, C * KH * KW) if self.to_matrix else (N, C, KH, KW, OH, OW)
        if col.shape != shape:
            raise ValueError(
                f"col2im: for input_shape {self.input_shape}, kernel {self.kernel_size}, "
                f"stride {self.stride} and pad {self.pad}, col must have shape {shape} (as "
                f"im2col makes it, to_matrix={self.to_matrix}), got {col.shape}. (PyTorch's "
                "fold takes (N, C*KH*KW, L) instead)")
        self.retain_inputs(())
        return col2im_array(col, self.input_shape, self.kernel_size, self.stride, self.pad,
                            self.to_matrix)

    def backward(self, gx):
        return im2col(gx, self.kernel_size, self.stride, self.pad, self.to_matrix)


# %%
#| export dezero_like/functions_conv.py
def col2im(col, input_shape, kernel_size, stride=1, pad=0, to_matrix=True):
    """Sum columns back into an image of ``input_shape``; differentiable."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(col)


# %% [markdown]
# The cells from here to the `EmbedID` layer write the rest of the toolkit that later steps use:
# batch normalisation, the embedding lookup, and the layers `Conv2d`, `Deconv2d`, `BatchNorm` and
# `EmbedID`, with a short demonstration after each of the last two ("Batch normalisation at
# work" and "One function for batch norm", "The embedding at work"). Max pooling, the other
# piece a CNN needs, is written in step 59, whose subject it is. The im2col convolution itself
# resumes at "im2col on a tiny image" below.
#
# `_bn_axes` gives the axes batch norm averages over, the batch for `(N, C)` data and the batch
# and pixels for images, and the shape that broadcasts a per-channel array against the input.

# %%
#| export dezero_like/functions_conv.py
def _bn_axes(x):
    """The axes batch norm averages over (all but the channel axis 1), and the shape that
    lines a per-channel array up with ``x``: (N, C), (N, C, L), (N, C, H, W), ..."""
    if x.ndim < 2:
        raise ValueError(
            f"batch_norm expects (N, C) input, or (N, C, ...) such as (N, C, H, W), got shape "
            f"{tuple(x.shape)}")
    return (0,) + tuple(range(2, x.ndim)), (1, x.shape[1]) + (1,) * (x.ndim - 2)


# %% [markdown]
# Batch normalisation (Ioffe and Szegedy, 2015) standardises each channel over the batch,
# $\hat x = (x - \mu)/\sqrt{\sigma^2 + \epsilon}$, then scales and shifts it with learned
# $\gamma$ and $\beta$: $y = \gamma \hat x + \beta$.
# `batch_norm_simple` is that definition built from differentiable functions (`F.sum`, `-`, `*`,
# `**`), with no backward of its own: the gradients through the batch mean and variance come from
# the graph. In training, it also updates the running `mean` and `var` in place, as raw arrays
# outside the graph (the variance with the unbiased factor $m/(m-1)$). In test mode it uses them
# instead of the batch's statistics, and so does an empty batch in training (no examples: no
# statistics to take), which comes back empty and leaves them as they were, as in PyTorch. A
# single value per channel is refused: its variance is 0. `_bn_settings` refuses a `decay`
# outside $[0, 1)$ and an `eps` that is not positive: the running statistics move by
# `decay * old + (1 - decay) * new`, where PyTorch writes `momentum` for the weight of the new
# value (its `momentum=0.1` is `decay=0.9`). `_bn_checked` holds the checks on the arguments
# that the package's `batch_norm`, below, shares.

# %%
#| export dezero_like/functions_conv.py
import numbers

import numpy as np
from dezero_like import cuda
from dezero_like import functions as F
from dezero_like.core import Config, Variable, as_variable


def _bn_settings(owner, decay, eps):
    """Refuse a ``decay`` that is not a real number in [0, 1) and an ``eps`` that is not > 0.

    ``L.BatchNorm(16)``, PyTorch's ``BatchNorm1d(16)``, would make 16 the decay: the running
    statistics then grow without bound and evaluation gives nan.
    """
    hint = ("decay is the weight of the old running mean and variance in their update: "
            "PyTorch's momentum=0.1 is decay=0.9")
    if owner == "BatchNorm":
        hint = ("the number of channels is not an argument here: BatchNorm takes it from the "
                "first batch, so PyTorch's BatchNorm1d(16) is L.BatchNorm(); " + hint)
    eps_hint = "eps keeps 1 / sqrt(var + eps) finite for a channel of constant values"
    if owner == "batch_norm" and isinstance(decay, (bool, np.bool_)):
        hint = ("PyTorch's F.batch_norm takes training as its sixth argument; here it is "
                "decay, and training is the mode: dezero_like.test_mode() for evaluation. " + hint)
    for name, value, why in (("decay", decay, hint), ("eps", eps, eps_hint)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{owner}: {name} must be a number, got {value!r} "
                            f"({type(value).__name__}); " + why)
    if not 0 <= decay < 1:  # nan fails too
        raise ValueError(f"{owner}: decay must be in [0, 1), got {decay!r}; " + hint)
    if not 0 < eps < float("inf"):
        raise ValueError(f"{owner}: eps must be > 0 (and finite), got {eps!r}; " + eps_hint)


def _bn_checked(x, mean, var, decay, eps):
    """The checks of batch_norm's arguments; ``x`` as a Variable, the axes and the shape."""
    _bn_settings("batch_norm", decay, eps)
    for name, stat in (("mean", mean), ("var", var)):
        if isinstance(stat, Variable):  # mean *= decay would make a new Variable, and the
            raise TypeError(            # caller's statistics would never move
                f"batch_norm: the running {name} must be an array, updated in place, got a "
                "Variable. The order is the book's, batch_norm(x, gamma, beta, mean, var); "
                "PyTorch's F.batch_norm(x, running_mean, running_var, weight, bias) puts the "
                f"running statistics first. If it is your running {name}, pass {name}.data "
                "(the BatchNorm layer passes its own arrays)")
    x = as_variable(x)
    axes, shape = _bn_axes(x)
    xp = cuda.get_array_module(x)
    if any(cuda.get_array_module(a) is not xp for a in (mean, var)):
        where = "the GPU" if xp is not np else "the CPU"
        raise TypeError(
            f"batch_norm: x is on {where} but the running statistics mean/var are not; "
            "put them on the same device (cuda.as_cupy / cuda.as_numpy; the BatchNorm "
            "layer's to_gpu() moves its own)")
    if Config.train and x.dtype != np.float16:  # float16 comes back in float32 (_bn_float16)
        F._training_without_graph(
            "batch_norm", "it normalises with this batch's statistics and moves its running "
            "mean and variance towards this data")
        if x.shape[1] == 0:  # m = x.size // C would divide by zero
            raise ValueError(
                f"batch_norm in training got an input with no channels (axis 1 has length 0), "
                f"shape {tuple(x.shape)}: there are no batch statistics to take; the layer "
                "before it must give at least one channel")
        m = x.size // x.shape[1]
        if m == 1:  # the variance of one value is 0: y would be beta, whatever x is
            raise ValueError(
                f"batch_norm in training needs more than one value per channel, got input "
                f"of shape {tuple(x.shape)}; use a batch of at least 2 (a DataLoader's last "
                "batch holds what is left over: len(dataset) % batch_size examples, here "
                "perhaps 1; choose a batch size that leaves 0 or at least 2), or evaluate a "
                "single example under dezero_like.test_mode() (the running statistics)")
    return x, axes, shape


def _bn_float16(bn, x, gamma, beta, mean, var, decay, eps):
    """``bn`` (batch_norm or batch_norm_simple) of float16 ``x`` in float32, as PyTorch: a
    deviation of 256 squares to inf in float16. The result is rounded back to float16."""
    mean32, var32 = mean.astype(np.float32), var.astype(np.float32)
    y = bn(F.astype(x, np.float32), F.astype(as_variable(gamma), np.float32),
           F.astype(as_variable(beta), np.float32), mean32, var32, decay, eps)
    if Config.train:  # the running statistics moved; in test mode they did not
        mean[...], var[...] = mean32, var32
    return F.astype(y, np.float16)


def _bn_batch_stats(x, axes, m, eps):
    """The batch's per-channel mean and biased variance, 1/sqrt(var + eps) and xhat, each a
    Variable computed with differentiable functions from the Variable ``x``."""
    mu = F.sum(x, axis=axes, keepdims=True) / m
    xc = x - mu
    var_b = F.sum(xc * xc, axis=axes, keepdims=True) / m
    inv_std = (var_b + eps) ** -0.5
    return mu, var_b, inv_std, xc * inv_std


def _bn_move_running(mean, var, mu, var_b, m, decay):
    """Move the running ``mean`` and ``var`` (arrays, in place) towards the batch's ``mu`` and
    ``var_b`` (arrays): ``decay * old + (1 - decay) * new``, the variance made unbiased."""
    mean *= decay
    mean += (1 - decay) * mu.reshape(mean.shape)
    var *= decay
    var += (1 - decay) * (m / (m - 1)) * var_b.reshape(var.shape)


def batch_norm_simple(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    r"""Batch normalisation composed of differentiable functions: the definition.

    In training (``Config.train``), $\mu$ and $\sigma^2$ are the batch's mean
    and (biased) variance per channel (axis 1; also over the axes after it, H and W for
    images, L for sequences),
    and the running statistics ``mean`` and ``var`` (arrays, updated in place)
    move towards them: ``mean = decay*mean + (1-decay)*mu`` (the running variance
    uses the unbiased estimate). In test mode the running statistics are used
    instead, so one example's output does not depend on the rest of its batch.

    Written with sum, ``-``, ``*`` and ``**``, so its gradient - including the terms that
    flow through $\mu$ and $\sigma^2$ - and its second derivatives come out of backprop.
    :func:`batch_norm` gives the same numbers as one function.
    """
    x, axes, shape = _bn_checked(x, mean, var, decay, eps)
    eps = float(eps)  # a setting, as PyTorch's: a NumPy float64 eps would make float32 float64
    if x.dtype == np.float16:
        return _bn_float16(batch_norm_simple, x, gamma, beta, mean, var, decay, eps)
    gamma = F.reshape(as_variable(gamma), shape)
    beta = F.reshape(as_variable(beta), shape)
    if Config.train and x.size:  # an empty batch, as PyTorch's: no statistics to take or move
        m = x.size // x.shape[1]
        mu, var_b, _, xhat = _bn_batch_stats(x, axes, m, eps)
        _bn_move_running(mean, var, mu.data, var_b.data, m, decay)
    else:
        inv_std = (var + eps) ** -0.5
        xhat = (x - mean.reshape(shape)) * inv_std.reshape(shape)
    return xhat * gamma + beta


# %% [markdown]
# Those nine or so functions each make an array and keep what their backward reads, and
# backward walks through all of them. `batch_norm`, the one the package and the `BatchNorm`
# layer use, is the same forward as one `Function`, `BatchNorm` (the book's name), whose
# backward is the gradient worked out by hand ("One function for batch norm", below, derives
# it and checks it against `batch_norm_simple`). As in `Linear` of step 44, a plain backward
# computes it on the arrays, and only what `needs_input_grad` asks for. When backward itself is
# recorded (`create_graph=True`) or a hook watches, it computes the same formula from the
# input Variables with differentiable functions, recomputing $\hat x$ from `x`, so that second
# derivatives still come out right.

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like import cuda
from dezero_like import functions as F
from dezero_like.core import Config, Function, Variable, _global_hooks, as_variable
from dezero_like.functions import _add_bias
from dezero_like.core import _REQUIRED, _refuse_keywords
from dezero_like.functions_conv import (_bn_axes, _bn_batch_stats, _bn_checked, _bn_float16,
                                      _bn_move_running, _bn_settings)


def _bn_sum_of_products(a, b, axes):
    """``(a * b).sum(axis=axes, keepdims=True)`` for batch norm's per-channel sums; for
    (N, C, ...) arrays as one batched matrix product, without the array ``a * b``."""
    if a.ndim < 3 or a.size == 0 or not (a.flags.c_contiguous and b.flags.c_contiguous):
        # (an empty batch: reshape(N, C, 1, -1) cannot infer the -1 of an empty array)
        return (a * b).sum(axis=axes, keepdims=True)
    N, C = a.shape[:2]  # N*C dot products of length H*W, added over the batch
    dots = a.reshape(N, C, 1, -1) @ b.reshape(N, C, -1, 1)
    return dots.sum(axis=0).reshape((1, C) + (1,) * (a.ndim - 2))


class BatchNorm(Function):
    r"""``y = gamma * xhat + beta`` for inputs ``(x, gamma, beta)``; the running ``mean`` and
    ``var`` (arrays) are updated in place in training. One function with its gradient in
    closed form, $m$ the number of values per channel and sums over them:
    ``dbeta = sum(gy)``, ``dgamma = sum(gy * xhat)`` and
    ``dx = gamma * inv_std * (gy - dbeta / m - xhat * dgamma / m)`` (in test mode
    ``dx = gamma * inv_std * gy``). :func:`batch_norm` checks the arguments and calls it.
    """

    def __init__(self, mean, var, decay=0.9, eps=2e-5):
        _bn_settings("batch_norm", decay, eps)
        # eps as a Python float, as batch_norm_simple: a NumPy float64 eps would make
        # var + eps, and so a float32 batch, float64 in test mode
        self.avg_mean, self.avg_var, self.decay, self.eps = mean, var, decay, float(eps)

    def forward(self, x, gamma, beta):
        self.retain_inputs((0, 1))  # x for a recorded backward, gamma for dx; not beta
        axes, shape = _bn_axes(x)
        # an empty batch takes the test-mode path, as in PyTorch: it comes back empty, the
        # running statistics stay (0 / 0 would make them nan) and gamma and beta get zeros
        self.axes, self.shape, self.train = axes, shape, Config.train and x.size > 0
        self.gamma_shape, self.beta_shape = gamma.shape, beta.shape
        if x.dtype.kind in "biu":  # integer pixels are normalised in float64
            x = x.astype(np.float64)
        mean, var = self.avg_mean, self.avg_var
        if self.train:
            m = self.m = x.size // x.shape[1]
            mu = x.sum(axis=axes, keepdims=True) / m
            xc = x - mu
            var_b = _bn_sum_of_products(xc, xc, axes) / m
            inv_std = (var_b + self.eps) ** -0.5
            xhat = xc
            xhat *= inv_std  # xc is not needed again: scaled in place
            _bn_move_running(mean, var, mu, var_b, m, self.decay)
        else:
            self.mean = mean.reshape(shape).copy()  # a later training call may move mean
            inv_std = ((var + self.eps) ** -0.5).reshape(shape)
            xhat = (x - self.mean) * inv_std
        self.xhat, self.inv_std = xhat, inv_std
        return _add_bias(xhat * gamma.reshape(shape), beta.reshape(shape))

    def backward(self, gy):
        needs = self.needs_input_grad
        if not Config.enable_backprop and not _global_hooks:  # a plain backward
            return self._backward_arrays(gy.data, needs)
        x, gamma = self.inputs[0], F.reshape(self.inputs[1], self.shape)
        if self.train:  # xhat and inv_std again, as functions of x (batch_norm_simple's way)
            m = self.m
            _, _, inv_std, xhat = _bn_batch_stats(x, self.axes, m, self.eps)
        else:
            inv_std = self.inv_std  # a constant of x in test mode
            xhat = (x - self.mean) * inv_std
        sums = needs[0] and self.train  # dx needs both sums in training, neither in test mode
        gbeta = F.sum(gy, axis=self.axes, keepdims=True) if sums or needs[2] else None
        ggamma = F.sum(gy * xhat, axis=self.axes, keepdims=True) if sums or needs[1] else None
        gx = None
        if needs[0]:
            gx = gamma * inv_std * ((gy - gbeta / m - xhat * ggamma / m) if self.train else gy)
        return (gx, F.reshape(ggamma, self.gamma_shape) if needs[1] else None,
                F.reshape(gbeta, self.beta_shape) if needs[2] else None)

    def _backward_arrays(self, g, needs):
        """``backward`` on the arrays, when nothing records or watches."""
        axes, xhat, sums = self.axes, self.xhat, needs[0] and self.train
        gbeta = g.sum(axis=axes, keepdims=True) if sums or needs[2] else None
        ggamma = _bn_sum_of_products(g, xhat, axes) if sums or needs[1] else None
        gx = None
        if needs[0]:
            k = self.inputs[1].data.reshape(self.shape) * self.inv_std  # gamma * inv_std
            if self.train:  # (gy - xhat * ggamma/m - gbeta/m) * k, in one new array
                gx = xhat * (ggamma / self.m)
                if np.result_type(g.dtype, gx.dtype) == gx.dtype:
                    cuda.get_array_module(g).subtract(g, gx, out=gx)  # no temporary
                else:
                    gx = g - gx
                gx -= gbeta / self.m
                gx *= k
            else:
                gx = g * k
        return tuple(None if a is None else Variable(a.reshape(s), requires_grad=False)
                     for a, s in ((gx, g.shape), (ggamma, self.gamma_shape),
                                  (gbeta, self.beta_shape)))

    def release(self):
        super().release()
        self.xhat = self.inv_std = None


def _momentum(momentum):
    """What to write for PyTorch's batch norm ``momentum=``."""
    if not isinstance(momentum, (int, float)):
        return "decay = 1 - momentum"
    return (f"write decay={round(1 - momentum, 12)!r}: decay is the weight of the old running "
            "statistics, PyTorch's momentum that of the new batch")


_BATCH_NORM_KEYWORDS = {  # PyTorch's F.batch_norm(x, running_mean, running_var, weight, bias, ...)
    "weight": "write gamma= (the scale)", "bias": "write beta= (the shift)",
    "running_mean": "write mean=", "running_var": "write var=", "momentum": _momentum,
    "training": lambda v: "nothing to write: batch norm reads the mode, training by default" if v
    else "evaluate inside with dz.test_mode(): (batch norm then uses mean and var)",
}


def batch_norm(x, gamma=_REQUIRED, beta=_REQUIRED, mean=_REQUIRED, var=_REQUIRED, decay=0.9,
               eps=2e-5, **others):
    r"""Batch normalisation: $y=\gamma\hat x+\beta$, $\hat x = (x-\mu)/\sqrt{\sigma^2+\epsilon}$.

    The same numbers as :func:`batch_norm_simple` (its docstring has the details: batch
    statistics in training, running ones in test mode, the in-place update of ``mean`` and
    ``var``), as one function, :class:`BatchNorm`, whose gradient is written in closed form;
    a backward with ``create_graph`` is built from differentiable functions, so second
    derivatives work. float16 input is normalised in float32 and the result rounded back,
    as PyTorch does. The order is the book's: PyTorch's ``F.batch_norm(x, running_mean,
    running_var, weight, bias)`` puts the running statistics first.
    """
    if others or any(a is _REQUIRED for a in (gamma, beta, mean, var)):  # PyTorch's names
        _refuse_keywords("F.batch_norm", others, _BATCH_NORM_KEYWORDS, gamma=gamma, beta=beta,
                         mean=mean, var=var)
    x, _, _ = _bn_checked(x, mean, var, decay, eps)
    if x.dtype == np.float16:
        return _bn_float16(batch_norm, x, gamma, beta, mean, var, decay, eps)
    return BatchNorm(mean, var, decay, eps)(x, gamma, beta)


batch_nrom = batch_norm  # the book's DeZero spells it so: its readers' code keeps working


# %% [markdown]
# An embedding turns integer ids (a word's index in a vocabulary, say) into learned vectors: row
# `i` of a table `W` is the vector of id `i`.
# `embed_id` checks that the ids are integers on the device of `W`, and returns `W[x]`: the
# indexing of step 48 already has the right gradient, rows added into the rows they came from,
# repeated ids accumulating. The range of the ids matters most on a GPU, where CuPy's indexing
# wraps an id out of range around to another row instead of failing. On the CPU such an id is an
# `IndexError`. On a GPU, checking would mean reading a value back, and so waiting for the device
# on every forward (an RNN language model would wait once per time step); instead the row of a
# wrong id comes out as NaN, never as another row, and its gradient is NaN too, so the loss shows
# the mistake the next time it is read (step 71 treats a wrong label of `softmax_cross_entropy` on
# a GPU the same way).

# %%
#| export dezero_like/functions_conv.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import (_REQUIRED, Variable, _is_array, _on_two_devices, _refuse_keywords,
                              as_variable)
from dezero_like.functions import _UNAVAILABLE


def embed_id(x, W=_REQUIRED, **others):
    """Rows of ``W (vocab, dim)`` picked by the integer ids ``x``: ``y = W[x]``.

    The gradient adds each output row's gradient into the row it came from
    (repeated ids accumulate) - exactly the backward of ``W[x]`` indexing.

    An id outside ``[0, vocab)`` is an IndexError on the CPU. On a GPU nothing is read back
    (that would wait for the device on every call): the row of such an id is NaN, and so is
    its gradient, instead of the row CuPy's indexing would wrap the id around to. A table of
    a dtype without NaN (integers) is checked as on the CPU, which waits for the device.
    """
    if others or W is _REQUIRED:  # PyTorch's F.embedding(ids, weight=W), say
        _refuse_keywords("F.embed_id", others, {"weight": "write W=, the table (vocab, dim)",
                                                "padding_idx": _UNAVAILABLE}, W=W)
    W = as_variable(W)
    if W.ndim != 2:
        raise ValueError(f"embed_id needs a 2-d table W (vocab, dim), got shape {W.shape}")
    if isinstance(x, Variable):
        x = x.data
    xp = cuda.get_array_module(W)
    apart = _on_two_devices(x, W.data) if _is_array(x) else None
    if apart:
        ids_on, w_on = apart
        raise TypeError(
            f"embed_id: the ids are on the {ids_on} but W is on the {w_on}; put both on one "
            "device (cuda.as_cupy(ids) or cuda.as_numpy(ids))")
    x = xp.asarray(x)  # a list of ids goes to W's device
    if x.dtype.kind not in "iu":
        raise TypeError(f"embed_id needs integer ids, got dtype {x.dtype}")
    if xp is not np and W.dtype.kind in "fc":  # on a GPU: NaN rows, nothing read back
        bad = (x < 0) | (x >= W.shape[0])
        mask = xp.where(bad, W.dtype.type(np.nan), W.dtype.type(1))
        return W[x] * mask.reshape(x.shape + (1,) * (W.ndim - 1))  # exact 1 * row elsewhere
    # one test, so that on a GPU one number comes back (the device is waited for once)
    if x.size and bool(((x < 0) | (x >= W.shape[0])).any()):
        raise IndexError(
            f"embed_id: ids must be in [0, {W.shape[0]}), got min {int(x.min())}, "
            f"max {int(x.max())}"
        )
    return W[x]


# %% [markdown]
# The new module `layers_conv` starts with `_to_device_of`: a layer that creates its weight on the
# first call makes it on the input's device, and this moves the bias, made earlier on the CPU, to
# the GPU to match.

# %%
#| export dezero_like/layers_conv.py
"""Convolutional, normalisation, embedding and recurrent layers.

``import dezero_like.layers_conv as Lc``. Every class is a
:class:`~dezero_like.layers.Layer`: its Parameters are registered when
assigned, so ``params()``, optimizers and ``save_weights``/``load_weights``
see them. Layers whose weight shape depends on the input (``in_channels``,
``in_size`` left as ``None``) create their weights on the first call.
"""

import numpy as np
from dezero_like import cuda


def _to_device_of(param, x):
    """Move an already-created parameter to the device of ``x`` (a lazy layer's bias)."""
    if param is not None and param.data is not None:
        if cuda.get_array_module(x) is not np and isinstance(param.data, np.ndarray):
            param.to_gpu()


# %% [markdown]
# The `Conv2d` layer registers `W` and `b` by assigning Parameters. `W` starts as
# `Parameter(None)` when `in_channels` is not given, and `_lazy_init` fills it on the first call
# from the input's channel count. The scale $\sqrt{1/(C \cdot KH \cdot KW)}$ uses the number of
# inputs each output sums over. Only the output channels and the kernel size are taken by
# position; `stride`, `pad` and the rest go by name, because `Conv2d(1, 16, 3)`, PyTorch's
# order (in, out, kernel), would otherwise build one output channel with a 16x16 kernel. A
# first batch shaped like channels-last images, `(N, H, H, 3)`, gets a warning
# (`_warn_channels_last`, which `BatchNorm` calls too).

# %%
#| export dezero_like/layers_conv.py
import warnings

import numpy as np
import dezero_like.functions_conv as Fc
from dezero_like import cuda
from dezero_like.core import Parameter, as_variable
from dezero_like.layers import Layer, _weight_dtype


def _warn_channels_last(layer, x, stacklevel):
    """Warn when a first batch of 4-d images looks channels-last, (N, H, W, C)."""
    if x.ndim != 4:
        return
    H, W, C = x.shape[1:]  # as they would be in the mistaken (N, H, W, C)
    if (C in (1, 3, 4) and H == W > C) or (C in (3, 4) and min(H, W) > 4 * C):
        warnings.warn(
            f"{type(layer).__name__} takes its {x.shape[1]} channels from axis 1 of the first "
            f"batch {x.shape}, whose last axis looks like colour channels; the layout here is "
            "(N, C, H, W): x.transpose(0, 3, 1, 2) if they are", stacklevel=stacklevel + 1)


class Conv2d(Layer):
    """2-d convolution layer: ``y = conv2d(x, W, b, stride, pad)``.

    ``W`` has shape ``(out_channels, in_channels, KH, KW)`` and is initialised
    with ``randn * sqrt(1 / (in_channels * KH * KW))`` (the number of inputs
    each output sums over), ``b`` with zeros. Without ``in_channels``, ``W`` is
    created on the first call from ``x.shape[1]``.
    """

    def __init__(self, out_channels, kernel_size, *args, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None):
        super().__init__()
        if args:  # Conv2d(1, 16, 3) is PyTorch's (in, out, kernel): here it would be 1 output
            name = type(self).__name__
            torch_name = "ConvTranspose2d" if name == "Deconv2d" else name
            raise TypeError(
                f"{name} takes two numbers, {name}(out_channels, kernel_size), and the rest by "
                f"name (stride=, pad=, in_channels=), unlike the book's DeZero, which also took "
                f"stride and pad by position; got {2 + len(args)} numbers. PyTorch's "
                f"{torch_name}(in, out, kernel) is written {name}(out, kernel, in_channels=in)"
            )
        name = type(self).__name__
        for what, size in (("out_channels", out_channels), ("in_channels", in_channels)):
            if size is not None and not (isinstance(size, (int, np.integer))
                                         and not isinstance(size, bool) and size >= 1):
                raise ValueError(f"{name}: {what} must be a positive integer, got {size!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = Fc.pair(kernel_size)
        self.stride = Fc.pair(stride)
        self.pad = Fc.pair(pad)
        Fc._check_sizes(name, self.kernel_size, self.stride, self.pad)
        self.dtype = _weight_dtype(name, dtype)
        self.W = Parameter(None, name="W")
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_channels, self.dtype), name="b")

    def _w_shape(self):
        return (self.out_channels, self.in_channels) + self.kernel_size

    def _lazy_shape(self, name):  # for load_weights before the first call (step 55)
        return self._w_shape() if name == "W" else None  # in_channels is still None

    def _took_shape(self, name, shape):
        if name == "W":
            self.in_channels = shape[self._w_shape().index(None)]

    def _init_W(self, xp=np):
        KH, KW = self.kernel_size
        scale = (1.0 / (self.in_channels * KH * KW)) ** 0.5
        self.W.data = (xp.random.randn(*self._w_shape()) * scale).astype(self.dtype)

    def _lazy_init(self, x):
        """Create ``W`` from the first input's channel count (and put ``b`` on its device)."""
        if self.W.data is not None:
            return
        x = as_variable(x)  # a list gets as_variable's clear error, not an AttributeError
        if x.ndim != 4:
            raise ValueError(
                f"{type(self).__name__} expects a batch of images (N, C, H, W), got shape "
                f"{x.shape}: {Fc._to_4d(x.ndim)}"
            )
        _warn_channels_last(self, x, stacklevel=4)  # 4: the caller of the layer
        self.in_channels = x.shape[1]
        self._init_W(self._creation_xp(x))  # on x's device, which must be the layer's
        _to_device_of(self.b, x)

    def forward(self, x):
        self._lazy_init(x)
        return Fc.conv2d(x, self.W, self.b, self.stride, self.pad)

    def __repr__(self):
        return (f"{type(self).__name__}({self.in_channels}->{self.out_channels}, "
                f"kernel={self.kernel_size}, stride={self.stride}, pad={self.pad})")


# %% [markdown]
# `Deconv2d` reuses all of `Conv2d` and changes two things: the weight shape, input channels first
# (`_w_shape`), and the function called in `forward`.

# %%
#| export dezero_like/layers_conv.py
import numpy as np
import dezero_like.functions_conv as Fc


class Deconv2d(Conv2d):
    """Transposed convolution layer: ``y = deconv2d(x, W, b, stride, pad)`` (upsampling).

    ``W`` has shape ``(in_channels, out_channels, KH, KW)``. The output side is
    ``stride*(H-1) + KH - 2*pad``; ``outsize`` fixes it when several are possible.
    """

    def __init__(self, out_channels, kernel_size, *args, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None, outsize=None):
        self.outsize = outsize
        super().__init__(out_channels, kernel_size, *args, stride=stride, pad=pad,
                         nobias=nobias, dtype=dtype, in_channels=in_channels)

    def _w_shape(self):
        return (self.in_channels, self.out_channels) + self.kernel_size

    def forward(self, x):
        self._lazy_init(x)
        return Fc.deconv2d(x, self.W, self.b, self.stride, self.pad, self.outsize)


# %% [markdown]
# `BatchNorm` keeps its running statistics as Parameters too, so that `save_weights` and `to_gpu`
# carry them; they never receive a gradient, so optimizers skip them. All four arrays are made on
# the first call, when the number of channels is known (weights loaded before it must give all four
# the same length: `_lazy_shape`). The running statistics are passed as `.data`, the arrays
# `batch_norm` updates in place. Images with their channels last, `(N, H, W, C)`, would be
# normalised per row; a first batch that looks like that gets `Conv2d`'s warning. The number of
# channels is no argument (it comes from the first batch): PyTorch's `BatchNorm1d(16)` is
# `L.BatchNorm()` here, and `L.BatchNorm(16)`, which would make 16 the `decay` (and evaluation
# give nan), is refused.

# %%
#| export dezero_like/layers_conv.py
import numpy as np

import dezero_like.functions_conv as Fc
from dezero_like.core import Parameter
from dezero_like.functions import _float_dtype
from dezero_like.layers import Layer


class BatchNorm(Layer):
    """Batch normalisation over the batch (and spatial) axes, per channel (axis 1).

    Training (``Config.train``): normalise with the batch's statistics and
    update the running averages ``avg_mean``/``avg_var``. Test mode
    (``with dz.test_mode():``): use the running averages. ``gamma`` (ones) and
    ``beta`` (zeros) are learned; all four are created on the first call and
    saved with the weights. Formula and gradients: :func:`functions_conv.batch_norm`.

    The number of channels is not an argument: it comes from the first batch (PyTorch's
    ``BatchNorm1d(16)`` is ``BatchNorm()``). ``decay`` in [0, 1) is the weight of the old
    running statistics (PyTorch's ``momentum=0.1`` is ``decay=0.9``); ``eps`` > 0.
    """

    def __init__(self, decay=0.9, eps=2e-5):
        super().__init__()
        Fc._bn_settings("BatchNorm", decay, eps)  # L.BatchNorm(16), PyTorch's habit, is refused
        self.decay = decay
        self.eps = eps
        # running statistics are Parameters so that save/load and to_gpu carry
        # them; they never get a gradient, so optimizers leave them alone
        self.avg_mean = Parameter(None, name="avg_mean")
        self.avg_var = Parameter(None, name="avg_var")
        self.gamma = Parameter(None, name="gamma")
        self.beta = Parameter(None, name="beta")

    def _lazy_shape(self, name):  # for load_weights before the first call (step 55)
        return ("C",)  # each of the four arrays has one element per channel

    def forward(self, x):
        if x.ndim < 2:
            raise ValueError(
                f"BatchNorm normalises each channel (axis 1) over a batch, got input of shape "
                f"{tuple(x.shape)}; pass a batch of shape (N, C), (N, C, L) or (N, C, H, W)")
        if self.avg_mean.data is None:
            _warn_channels_last(self, x, stacklevel=3)  # (N, H, W, C) would give H channels
            xp = self._creation_xp(x)
            C = x.shape[1]
            # integer input (uint8 pixels) is normalised in float64, as batch_norm computes it
            dtype = _float_dtype(x.dtype, complex_ok=False)
            self.avg_mean.data = xp.zeros(C, dtype=dtype)
            self.avg_var.data = xp.ones(C, dtype=dtype)
            self.gamma.data = xp.ones(C, dtype=dtype)
            self.beta.data = xp.zeros(C, dtype=dtype)
        elif x.shape[1] != len(self.avg_mean.data):
            raise ValueError(
                f"BatchNorm was built for {len(self.avg_mean.data)} channels (axis 1), got "
                f"input of shape {tuple(x.shape)}; use one BatchNorm layer per feature size")
        return Fc.batch_norm(x, self.gamma, self.beta, self.avg_mean.data, self.avg_var.data,
                             self.decay, self.eps)


# %% [markdown]
# ## Batch normalisation at work
#
# Before the export cells that remain, a look at what `BatchNorm` does. From here on the step
# uses the package, imported once for the rest of the step:

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
from dezero_like.plot import output_dir, save_figure
from dezero_like.utils import gradient_check

out_dir = output_dir(58)  # every file this step writes goes here


def rounded(v):
    """``v`` rounded to 2 decimals for printing (``+ 0.0`` prints a ``-0.0`` as ``0.0``)."""
    return np.round(v, 2) + 0.0


# %% [markdown]
# A batch of 16 images of 3 channels, 5x5 pixels each, where every channel has its own centre
# and spread, as the outputs of a convolution might. In training mode (the default) `BatchNorm`
# standardises each channel with the mean and variance of its $16 \cdot 5 \cdot 5 = 400$ values,
# taken over the batch and the pixels:

# %%
rng_bn = np.random.default_rng(2)
centre = np.array([6.0, -4.0, 1.0]).reshape(1, 3, 1, 1)
spread = np.array([1.5, 0.5, 3.0]).reshape(1, 3, 1, 1)
x_bn = (rng_bn.standard_normal((16, 3, 5, 5)) * spread + centre).astype(np.float32)
bn = L.BatchNorm()
y_bn = bn(x_bn)  # training mode: the statistics of this batch
for name, a in (("before", x_bn), ("after", y_bn.data)):
    print(f"{name:>6}: mean per channel {rounded(a.mean(axis=(0, 2, 3)))}, "
          f"std per channel {rounded(a.std(axis=(0, 2, 3)))}")
assert np.allclose(y_bn.data.mean(axis=(0, 2, 3)), 0, atol=1e-5)
assert np.allclose(y_bn.data.std(axis=(0, 2, 3)), 1, atol=1e-3)

fig, (ax_before, ax_after) = plt.subplots(1, 2, figsize=(10, 3))
for c, colour in enumerate(["tab:blue", "tab:orange", "tab:green"]):
    ax_before.hist(x_bn[:, c].ravel(), bins=20, alpha=0.5, color=colour)
    ax_after.hist(y_bn.data[:, c].ravel(), bins=20, alpha=0.5, color=colour, label=f"channel {c}")
ax_before.set_title("before: a centre and a spread per channel")
ax_after.set_title("after BatchNorm (training mode)")
ax_after.legend(loc="upper left", fontsize=8)
for ax in (ax_before, ax_after):
    ax.set_xlabel("value")
ax_before.set_ylabel("count")
save_figure(fig, out_dir / "batch_norm_histograms.png")
plt.show()

# %% [markdown]
# The layer also keeps running statistics, `avg_mean` and `avg_var`, which start at 0 and 1.
# Every call in training mode moves them the fraction $1 - \mathrm{decay} = 0.1$ of the way to
# the batch's statistics (the variance with the unbiased factor $m/(m-1)$, $m = 400$ here). Fed
# the same batch $k$ times, the running mean is $(1 - 0.9^k)\,\mu$: it closes in on the batch's.

# %%
m_bn = x_bn.size // x_bn.shape[1]  # values per channel
mu_bn = x_bn.astype(np.float64).mean(axis=(0, 2, 3))
var_bn = x_bn.astype(np.float64).var(axis=(0, 2, 3)) * m_bn / (m_bn - 1)
print(f"batch statistics:  mean {rounded(mu_bn)}  var {rounded(var_bn)}")
for k in range(1, 51):  # k = 1 is the call above
    if k > 1:
        bn(x_bn)
    if k in (1, 2, 5, 10, 20, 50):
        print(f"after {k:2d} call(s):  mean {rounded(bn.avg_mean.data)}  "
              f"var {rounded(bn.avg_var.data)}")
left = 0.9 ** 50  # the weight still left on the starting values 0 and 1
assert np.allclose(bn.avg_mean.data, (1 - left) * mu_bn, rtol=1e-4, atol=1e-5)
assert np.allclose(bn.avg_var.data, left * 1 + (1 - left) * var_bn, rtol=1e-4, atol=1e-5)

# %% [markdown]
# In training mode an example's output depends on the batch it comes in: the same first image,
# normalised in its own batch or among 7 other images, gives two different results. In test mode
# (`dz.test_mode()`) the layer uses its running statistics instead, and leaves them as they are,
# so an example comes out the same alone, in its own batch or in any other one.

# %%
x_one = x_bn[:1]  # the first image, as a batch of one
with_others = np.concatenate([x_one, rng_bn.standard_normal((7, 3, 5, 5)).astype(np.float32)])
fresh = L.BatchNorm()  # a second layer, so that bn's running statistics stay as they are
gap = np.abs(fresh(x_bn).data[0] - fresh(with_others).data[0]).max()
print(f"training mode, own batch vs other batch: largest difference {gap:.3f}")
running = bn.avg_mean.data.copy(), bn.avg_var.data.copy()
with dz.test_mode():
    alone = bn(x_one).data[0]
    in_own = bn(x_bn).data[0]
    in_other = bn(with_others).data[0]
shape = (3, 1, 1)  # per channel, against one image (C, H, W)
by_hand = (x_bn[0] - bn.avg_mean.data.reshape(shape)) / np.sqrt(
    bn.avg_var.data.reshape(shape) + bn.eps)  # gamma 1, beta 0: not trained here
for name, y in (("in its own batch", in_own), ("among other images", in_other)):
    print(f"test mode, alone vs {name}: largest difference {np.abs(alone - y).max():.1e}")
print(f"test mode vs the running statistics by hand: largest difference "
      f"{np.abs(alone - by_hand).max():.1e}")
assert gap > 0.1
assert np.allclose(alone, in_own) and np.allclose(alone, in_other)
assert np.allclose(alone, by_hand, atol=1e-5)
assert all(np.array_equal(a, b) for a, b in zip(running, (bn.avg_mean.data, bn.avg_var.data)))


# %% [markdown]
# ## One function for batch norm
#
# `batch_norm_simple` is the definition, and backprop through its nine or so functions gives the
# right gradient, but it pays for every intermediate array twice, once forward and once
# backward. The gradient has a short closed form. For one channel, with $m$ values $x_i$,
# $g_i = \partial L/\partial y_i$ and $s = 1/\sqrt{\sigma^2 + \epsilon}$: since
# $\partial\mu/\partial x_i = 1/m$ and $\partial\sigma^2/\partial x_i = 2(x_i - \mu)/m$,
#
# $$\frac{\partial \hat x_j}{\partial x_i} = s\left(\delta_{ij} - \frac{1}{m} -
# \frac{\hat x_i \hat x_j}{m}\right), \qquad
# \frac{\partial L}{\partial x_i} = \gamma s \left(g_i - \frac{1}{m}\sum_j g_j
# - \frac{\hat x_i}{m}\sum_j g_j \hat x_j\right),$$
#
# and the two sums are the other two gradients, $\partial L/\partial\beta = \sum_j g_j$ and
# $\partial L/\partial\gamma = \sum_j g_j \hat x_j$, so backward computes them once. In test
# mode $\mu$ and $\sigma^2$ are constants and only $\gamma s\, g_i$ is left. `batch_norm` (the
# `Function` `BatchNorm`) uses this formula; here it is checked against the composed version:
# the outputs, the first derivatives from a plain backward (the array formula), and a second
# derivative through `create_graph=True` (the formula made of differentiable functions).

# %%
rng_f = np.random.default_rng(5)
x_f = rng_f.standard_normal((8, 3, 4, 4)) * 2 + 1
g_f, b_f, w_f = rng_f.standard_normal(3), rng_f.standard_normal(3), rng_f.standard_normal(x_f.shape)


def derivatives(bn):
    """y, the gradients of sum(w_f * y) for x, gamma, beta, and those of sum(gx ** 2)."""
    xv, gv, bv = dz.Variable(x_f), dz.Variable(g_f), dz.Variable(b_f)
    y = bn(xv, gv, bv, np.zeros(3), np.ones(3))
    (w_f * y).sum().backward()  # a plain backward
    first = [v.grad.data for v in (xv, gv, bv)]
    xv.cleargrad(), gv.cleargrad()
    (w_f * bn(xv, gv, bv, np.zeros(3), np.ones(3))).sum().backward(create_graph=True)
    gx = xv.grad
    xv.cleargrad(), gv.cleargrad()
    (gx ** 2).sum().backward()  # differentiate the gradient of x once more
    return [y.data] + first + [xv.grad.data, gv.grad.data]


names = ["y", "dx", "dgamma", "dbeta", "d(dx)/dx", "d(dx)/dgamma"]
for name, a, b in zip(names, derivatives(Fc.batch_norm), derivatives(Fc.batch_norm_simple)):
    print(f"{name:>13}: one Function vs composed, largest difference {np.abs(a - b).max():.1e}")
    assert np.allclose(a, b)
print("gradient check x:", gradient_check(
    lambda v: Fc.batch_norm(v, g_f, b_f, np.zeros(3), np.ones(3)) * w_f, x_f))
print("gradient check gamma:", gradient_check(
    lambda v: Fc.batch_norm(x_f, v, b_f, np.zeros(3), np.ones(3)) * w_f, g_f))

# %% [markdown]
# The one function reads and writes the batch fewer times: forward keeps only $\hat x$, the
# per-channel sums of products are batched matrix products (no product array), and the plain
# backward builds $\partial L/\partial x$ in one new array. Forward and backward of a batch the
# size of step 60's, both ways:

# %%
x_t = rng_f.standard_normal((100, 16, 28, 28)).astype(np.float32)


def forward_backward_ms(bn, repeat=20):
    xv, gv, bv = (dz.Variable(a) for a in (x_t, np.ones(16, np.float32), np.zeros(16, np.float32)))
    times = []
    for _ in range(repeat + 1):  # the first run is a warm-up
        for v in (xv, gv, bv):
            v.cleargrad()
        t0 = time.perf_counter()
        bn(xv, gv, bv, np.zeros(16, np.float32), np.ones(16, np.float32)).backward()
        times.append(time.perf_counter() - t0)
    return np.median(times[1:]) * 1e3


fused_ms, simple_ms = forward_backward_ms(Fc.batch_norm), forward_backward_ms(Fc.batch_norm_simple)
print(f"forward + backward of {x_t.shape} float32: one Function {fused_ms:.1f} ms, "
      f"composed {simple_ms:.1f} ms, {simple_ms / fused_ms:.1f}x as long")


# %% [markdown]
# `EmbedID` is one Parameter, a table with one row per id, and a forward that calls `embed_id`.

# %%
#| export dezero_like/layers_conv.py
import numpy as np
import dezero_like.functions_conv as Fc
from dezero_like.core import Parameter
from dezero_like.layers import Layer, _weight_dtype


class EmbedID(Layer):
    """Word embedding: integer ids -> rows of ``W (in_size, out_size)``; ``y = W[ids]``."""

    def __init__(self, in_size, out_size, dtype=np.float32):
        super().__init__()
        dtype = _weight_dtype("EmbedID", dtype)
        self.W = Parameter(np.random.randn(in_size, out_size).astype(dtype), name="W")

    def forward(self, x):
        return Fc.embed_id(x, self.W)


# %% [markdown]
# ## The embedding at work
#
# A table of 7 ids with vectors of 3 numbers, and 5 ids to look up, id 2 three times. Picking row
# `i` of `W` is multiplying the one-hot row of `i` (1 at place `i`, 0 elsewhere) by `W`, so the
# lookup is the product of a one-hot matrix with `W`, without the multiplications:

# %%
emb = L.EmbedID(7, 3)
ids = np.array([2, 5, 2, 0, 2])
y_emb = emb(ids)
one_hot = np.eye(7, dtype=emb.W.dtype)[ids]  # (5, 7): row r is 1 at place ids[r]
print("one-hot matrix of the ids:")
print(one_hot)
print("lookup == one_hot @ W:", np.allclose(y_emb.data, one_hot @ emb.W.data))
assert np.allclose(y_emb.data, one_hot @ emb.W.data)

# %% [markdown]
# The product also gives the gradient: for $y = H W$ with the one-hot $H$, $\partial L/\partial W
# = H^\top g_y$, which adds the gradient of every output row into the row of its id. Id 2 was
# picked three times, so its row receives the sum of three rows of $g_y$. That is what
# `np.add.at` does in the backward of indexing (step 48); a plain `gW[ids] += gy` keeps only one
# of them (here the last written; NumPy does not promise which):

# %%
gy_emb = np.arange(15, dtype=np.float32).reshape(5, 3)  # the gradient of each looked-up row
(y_emb * gy_emb).sum().backward()  # a loss whose gradient with respect to y_emb is gy_emb
added = np.zeros_like(emb.W.data)
np.add.at(added, ids, gy_emb)
assigned = np.zeros_like(emb.W.data)
assigned[ids] += gy_emb  # id 2 is written three times: only the last write stays
print("W.grad:")
print(emb.W.grad.data)
print("rows of gy for id 2:", gy_emb[ids == 2].tolist(), "sum:", gy_emb[ids == 2].sum(axis=0))
print("row 2 of W.grad:", emb.W.grad.data[2], " np.add.at:", added[2],
      " gW[ids] += gy:", assigned[2])
assert np.allclose(emb.W.grad.data, added)
assert np.allclose(emb.W.grad.data, one_hot.T @ gy_emb)
assert not np.allclose(assigned[2], added[2])  # the repeats are lost

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
#| export dezero_like/functions_conv.py
from dezero_like import functions as F
from dezero_like.functions_conv import get_conv_outsize, im2col, pair


def conv2d_simple(x, W, b=None, stride=1, pad=0):
    """Convolution from differentiable parts: im2col, one matmul, reshape, transpose.

    The same numbers as :func:`conv2d` (up to rounding), with a graph of seven functions
    (six without a bias) instead of one, and the column array kept for backward.
    """
    N, C, H, Wd = x.shape
    OC, C, KH, KW = W.shape
    if b is not None and b.shape != (OC,):  # (1,) would broadcast over every channel
        raise ValueError(f"conv2d_simple: the bias must have shape ({OC},), got {b.shape}")
    (SH, SW), (PH, PW) = pair(stride), pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(Wd, KW, SW, PW)
    col = im2col(x, (KH, KW), stride, pad, to_matrix=True)  # (N*OH*OW, C*KH*KW)
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
# `Fc.conv2d` is the same idea written as one `Function`, with three changes
# for speed and memory:
#
# * it builds `col` channels first, as a $(C K_H K_W, N O_H O_W)$ matrix, and
#   computes `W_mat @ col` for the whole batch as one matrix product (one
#   product per image is several times slower); a single copy then moves the
#   output channels into the $(N, OC, O_H, O_W)$ layout while adding the bias.
#   A layer with few rows, `C*KH*KW <= 64` like a first layer on MNIST, is the
#   exception: there one product per image is faster and lands in that layout
#   directly (`_per_image`, step 57);
# * it keeps `col` for the weight gradient, which needs the same columns, when
#   they fit in `Fc.Conv2d.keep_col_bytes` (64 MiB): one im2col fewer per
#   backward, for about $K_H K_W / S^2$ times the input's memory (stride $S$) until
#   backward is done;
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
yv = Fc.conv2d(xv, Wv, bv, 2, 1)
kept = yv.creator.col
print(f"columns kept for the weight gradient: shape {kept.shape}, "
      f"{kept.nbytes / x.nbytes:.2f}x the input's bytes")
yv.sum().backward()
print("kept after backward:", yv.creator.col)  # released with the rest of the graph's arrays
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
# version one padded copy, 9 slice copies and 8 small per-image matrix products in
# one batched call (a first layer takes the per-image path, see above).

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
# 1. `col2im` is the *transpose* of `im2col`: for any image `x` and any `c` of
#    `col`'s shape, $\langle \mathrm{im2col}(x), c\rangle = \langle x, \mathrm{col2im}(c)\rangle$.
#    That is why the gradient of one is the other. Compute both sides for the
#    random `x2` and `c2` below (use `Fc.im2col_array` and `Fc.col2im_array`
#    with kernel 3, stride 2, pad 1) and store them in `lhs` and `rhs`.
# 2. **Implement then test: `im2col` as a Function.** Write `MyIm2col`:
#    `forward` turns the image batch into the matrix with one row per window
#    (the array function of exercise 1, with this Function's settings), and
#    keeps what `backward` needs to rebuild an image of the right shape;
#    `backward` sends the gradient of the columns back through the transpose
#    of exercise 1, in its differentiable form (a Function of this step, not
#    the `_array` helper), so that the graph goes on. The self-check runs
#    `gradient_check` and compares with `Fc.im2col`.

# %%
#| exercise
x2 = np.random.default_rng(58).standard_normal((2, 3, 7, 7))
c2 = np.random.default_rng(59).standard_normal(Fc.im2col_array(x2, 3, 2, 1).shape)
lhs = ...  # <im2col(x2), c2>: the sum of the elementwise product
rhs = ...  # <x2, col2im(c2)>

# %%
#| solution
x2 = np.random.default_rng(58).standard_normal((2, 3, 7, 7))
c2 = np.random.default_rng(59).standard_normal(Fc.im2col_array(x2, 3, 2, 1).shape)
lhs = (Fc.im2col_array(x2, 3, 2, 1) * c2).sum()
rhs = (x2 * Fc.col2im_array(c2, x2.shape, 3, 2, 1)).sum()

# %%
#| check
expected = float((Fc.im2col_array(x2, 3, 2, 1) * c2).sum())
assert np.isscalar(lhs) or np.ndim(lhs) == 0, "lhs should be one number: sum the product"
assert np.isclose(lhs, expected), (
    f"lhs should be {expected:.6f}, got {lhs}: multiply im2col of x2 by c2 elementwise, "
    "then sum everything"
)
assert np.isclose(rhs, lhs), (
    f"rhs = {rhs} differs from lhs = {lhs}: turn c2 back into an image of x2's shape with "
    "col2im (same kernel, stride, pad), multiply by x2, then sum"
)
print(f"self-check passed: both sides are {lhs:.6f}, col2im is the transpose of im2col")

# %%
#| exercise
from dezero_like.core import Function


class MyIm2col(Function):
    def __init__(self, kernel_size, stride, pad):
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 58): one row per window; keep what backward needs"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 58): the columns' gradient, back through the transpose of im2col"
        )

# %%
#| solution
from dezero_like.core import Function


class MyIm2col(Function):
    def __init__(self, kernel_size, stride, pad):
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        self.input_shape = x.shape
        return Fc.im2col_array(x, self.kernel_size, self.stride, self.pad)

    def backward(self, gy):
        return Fc.col2im(gy, self.input_shape, self.kernel_size, self.stride, self.pad)

# %%
#| check
rng_check = np.random.default_rng(0)
x_small = rng_check.standard_normal((2, 2, 5, 5))
w_cols = rng_check.standard_normal(Fc.im2col_array(x_small, 3, 2, 1).shape)
cols = MyIm2col(3, 2, 1)(x_small).data
assert cols.shape == w_cols.shape and np.allclose(cols, Fc.im2col(x_small, 3, 2, 1).data), (
    "the forward differs from Fc.im2col: use Fc.im2col_array with to_matrix left at True"
)
gradient_check(lambda v: MyIm2col(3, 2, 1)(v), x_small)
print("self-check passed: MyIm2col passes the gradient check (its backward is col2im)")
