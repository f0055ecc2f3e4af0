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

from __future__ import annotations

import numbers

import numpy as np

from dezero_like import cuda
from dezero_like import functions as F
from dezero_like.core import Function, Variable, as_variable

# --------------------------------------------------------------------------- #
# Sizes
# --------------------------------------------------------------------------- #


def pair(x):
    """``3 -> (3, 3)``; a pair ``(kh, kw)`` is returned as a tuple of ints."""
    if isinstance(x, numbers.Integral):
        return (int(x), int(x))
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(
        isinstance(v, numbers.Integral) for v in x
    ):
        return (int(x[0]), int(x[1]))
    raise TypeError(f"expected an int or a pair of ints (height, width), got {x!r}")


def get_conv_outsize(input_size, kernel_size, stride, pad):
    """Output length of a convolution along one axis.

    ``OH = (H + 2*pad - KH) // stride + 1``: the window starts at ``0, stride,
    2*stride, ...`` of the padded input and must fit entirely inside it.
    """
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size, kernel_size, stride, pad):
    """Output length of a transposed convolution: ``stride*(size-1) + KH - 2*pad``."""
    return stride * (size - 1) + kernel_size - pad * 2


def _check_geometry(name, x_shape, kernel_size, stride, pad):
    if len(x_shape) != 4:
        raise ValueError(
            f"{name} expects a 4-d input (N, C, H, W), got shape {tuple(x_shape)}; "
            "add a channel axis with x.reshape(N, 1, H, W)"
        )
    KH, KW = kernel_size
    SH, SW = stride
    PH, PW = pad
    if min(KH, KW, SH, SW) < 1 or min(PH, PW) < 0:
        raise ValueError(
            f"{name}: kernel size and stride must be >= 1 and pad >= 0, "
            f"got kernel {kernel_size}, stride {stride}, pad {pad}"
        )
    H, W = x_shape[2:]
    if H + 2 * PH < KH or W + 2 * PW < KW:
        raise ValueError(
            f"{name}: a {KH}x{KW} kernel does not fit into a {H}x{W} input padded by "
            f"{pad}; use a smaller kernel or more padding"
        )


# --------------------------------------------------------------------------- #
# im2col / col2im on raw arrays
# --------------------------------------------------------------------------- #


def im2col_array(img, kernel_size, stride, pad, to_matrix=True, pad_value=0):
    """Copy every window of ``img`` into a column (arrays in, array out).

    Returns ``col`` of shape ``(N, C, KH, KW, OH, OW)`` where
    ``col[n, c, i, j, oh, ow] = padded[n, c, oh*SH + i, ow*SW + j]``, or with
    ``to_matrix=True`` the matrix ``(N*OH*OW, C*KH*KW)``: one row per window.
    ``pad_value`` fills the border (max pooling pads with ``-inf``).
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
        col = col.transpose((0, 4, 5, 1, 2, 3)).reshape(N * OH * OW, -1)
    return col


def _raw_gpu(a):
    """True for a CuPy array of a dtype the hand-written GPU kernels are built for."""
    return cuda.is_cupy_array(a) and a.dtype.name in ("float32", "float64")


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
    if _raw_gpu(img):  # on a GPU: one kernel, no padded copy (step 71)
        from dezero_like import cuda_kernels

        return cuda_kernels.im2col_channels_first(img, kernel_size, stride, pad, (OH, OW))
    if PH or PW:
        img = xp.pad(img, ((0, 0), (0, 0), (PH, PH), (PW, PW)), mode="constant")
    img = img.transpose(1, 0, 2, 3)
    col = xp.empty((C, KH, KW, N, OH, OW), dtype=img.dtype)
    for i in range(KH):
        for j in range(KW):
            col[:, i, j] = img[:, :, i:i + SH * OH:SH, j:j + SW * OW:SW]
    return col


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


# --------------------------------------------------------------------------- #
# im2col / col2im as differentiable functions
# --------------------------------------------------------------------------- #


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


def im2col(x, kernel_size, stride=1, pad=0, to_matrix=True):
    """Windows of ``x (N, C, H, W)`` as columns (see :func:`im2col_array`); differentiable."""
    return Im2col(kernel_size, stride, pad, to_matrix)(x)


class Col2im(Function):
    """``x = col2im(col)``; linear, so the gradient is ``im2col(gx)`` (its transpose)."""

    def __init__(self, input_shape, kernel_size, stride, pad, to_matrix):
        self.input_shape = tuple(input_shape)
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.to_matrix = to_matrix

    def forward(self, col):
        self.retain_inputs(())
        return col2im_array(col, self.input_shape, self.kernel_size, self.stride, self.pad,
                            self.to_matrix)

    def backward(self, gx):
        return im2col(gx, self.kernel_size, self.stride, self.pad, self.to_matrix)


def col2im(col, input_shape, kernel_size, stride=1, pad=0, to_matrix=True):
    """Sum columns back into an image of ``input_shape``; differentiable."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(col)


# --------------------------------------------------------------------------- #
# Convolution
# --------------------------------------------------------------------------- #


def _check_conv_weight(name, x, W, c_axis):
    if W.ndim != 4:
        raise ValueError(f"{name}: W must be 4-d, got shape {W.shape}")
    if x.ndim == 4 and x.shape[1] != W.shape[c_axis]:
        raise ValueError(
            f"{name}: the input has {x.shape[1]} channels but W of shape {W.shape} expects "
            f"{W.shape[c_axis]} (axis {c_axis} of W)"
        )


def _bias(y, b):
    if b is not None:
        y += b.reshape((1, b.size, 1, 1))
    return y


def _sum_bias_grad(gy):
    return F.sum(gy, axis=(0, 2, 3))


class Conv2d(Function):
    r"""2-d convolution (cross-correlation, as in every DL framework).

    $y_{n,o,p,q} = b_o + \sum_{c,i,j} W_{o,c,i,j}\, \tilde x_{n,c,pS_H+i,qS_W+j}$
    with $\tilde x$ the zero-padded input. Computed as one matrix product per
    image: ``W (OC, C*KH*KW) @ col (C*KH*KW, OH*OW)``.

    Gradients: ``gx = deconv2d(gy, W)`` (the transposed convolution),
    ``gW = Conv2DGradW(x, gy)`` (correlate the input with the output gradient),
    ``gb = sum of gy over (N, OH, OW)``. All three are differentiable.
    """

    def __init__(self, stride=1, pad=0):
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, W, b=None):
        _check_conv_weight("conv2d", x, W, 1)
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
        # (One small product per image, as a batched matmul, is several times slower.)
        col = _im2col_channels_first(x, (KH, KW), self.stride, self.pad)
        OH, OW = col.shape[4:]
        y = W.reshape(OC, -1) @ col.reshape(-1, N * OH * OW)
        y = y.reshape(OC, N, OH, OW).transpose(1, 0, 2, 3)  # a view: (N, OC, OH, OW)
        if b is None:
            return xp.ascontiguousarray(y)
        return xp.add(y, b.reshape(1, OC, 1, 1))  # the bias and the copy in one pass

    def backward(self, gy):
        x, W = self.inputs[:2]
        needs = self.needs_input_grad
        gx = gW = gb = None
        if needs[0]:
            gx = deconv2d(gy, W, None, self.stride, self.pad, outsize=self.x_shape[2:])
        if needs[1]:
            gW = Conv2DGradW(self.kernel_size, self.stride, self.pad)(x, gy)
        if len(needs) == 3 and needs[2]:
            gb = _sum_bias_grad(gy)
        return (gx, gW) if len(needs) == 2 else (gx, gW, gb)


def conv2d(x, W, b=None, stride=1, pad=0):
    """Convolve ``x (N, C, H, W)`` with filters ``W (OC, C, KH, KW)`` plus bias ``b (OC,)``.

    ``stride`` and ``pad`` are an int or a pair ``(height, width)``. The output
    is ``(N, OC, OH, OW)`` with ``OH = (H + 2*pad - KH) // stride + 1``.
    """
    if b is None:
        return Conv2d(stride, pad)(x, W)
    return Conv2d(stride, pad)(x, W, b)


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
        self.outsize = None if outsize is None else pair(tuple(outsize))

    def forward(self, x, W, b=None):
        _check_conv_weight("deconv2d", x, W, 0)
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
        # One matrix product for the whole batch: W^T (OC*KH*KW, C) @ x (C, N*H*W) gives
        # every column of the output; viewed as (N, OC, KH, KW, H, W) it is col2im's input.
        xt = x.transpose(1, 0, 2, 3).reshape(C, N * H * Wd)
        col = (W.reshape(C, -1).T @ xt).reshape(OC, KH, KW, N, H, Wd)
        if _raw_gpu(col):  # on a GPU: col2im as one gathering kernel (step 71)
            from dezero_like import cuda_kernels

            y = cuda_kernels.col2im_gather(col, (N, OC, OH, OW), self.stride, self.pad)
            return _bias(y, b)
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


def deconv2d(x, W, b=None, stride=1, pad=0, outsize=None):
    """Transposed convolution of ``x (N, C, H, W)`` with ``W (C, OC, KH, KW)``.

    Output ``(N, OC, OH, OW)`` with ``OH = stride*(H-1) + KH - 2*pad`` unless
    ``outsize=(OH, OW)`` picks one of the sizes a strided conv2d maps back to ``H``.
    """
    if b is None:
        return Deconv2d(stride, pad, outsize)(x, W)
    return Deconv2d(stride, pad, outsize)(x, W, b)


class Conv2DGradW(Function):
    r"""The weight gradient of conv2d: ``gW[o,c,i,j] = sum_{n,p,q} gy[n,o,p,q] * col[n,c,i,j,p,q]``.

    It is bilinear in ``(x, gy)``, so its own backward is two convolutions:
    ``d/dx = deconv2d(gy, ggW)`` and ``d/dgy = conv2d(x, ggW)``. That is what
    makes second derivatives through a CNN work.
    """

    def __init__(self, kernel_size, stride, pad):
        self.kernel_size = pair(tuple(kernel_size))
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, gy):
        self.x_shape = x.shape
        N, C = x.shape[:2]
        KH, KW = self.kernel_size
        OC, OH, OW = gy.shape[1:]
        col = _im2col_channels_first(x, self.kernel_size, self.stride, self.pad)
        # one matrix product, (OC, N*OH*OW) @ (N*OH*OW, C*KH*KW), with no copy of col
        gy_mat = gy.transpose(1, 0, 2, 3).reshape(OC, -1)
        return (gy_mat @ col.reshape(C * KH * KW, -1).T).reshape(OC, C, KH, KW)

    def backward(self, ggW):
        x, gy = self.inputs
        n0, n1 = self.needs_input_grad
        gx = ggy = None
        if n0:
            gx = deconv2d(gy, ggW, None, self.stride, self.pad, outsize=self.x_shape[2:])
        if n1:
            ggy = conv2d(x, ggW, None, self.stride, self.pad)
        return gx, ggy


# --------------------------------------------------------------------------- #
# Pooling
# --------------------------------------------------------------------------- #
#
# Pooling reads the same windows as im2col, but it only needs one value per
# window, so it never builds ``col``: for each kernel offset (i, j) it takes
# the strided slice of the padded input that holds element (i, j) of every
# window, and folds it into a running maximum or sum. Again only the KH*KW
# offsets are looped over in Python.


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


def _scatter_to_windows(pool, values_at):
    """The input-shaped array that adds ``values_at(k)`` into element k of every window."""
    xp = cuda.get_array_module(values_at(0))
    N, C, H, W = pool.x_shape
    PH, PW = pool.pad
    SH, SW = pool.stride
    g = xp.zeros((N, C, H + 2 * PH + SH - 1, W + 2 * PW + SW - 1), dtype=pool.dtype)
    for k, index in _window_offsets(pool):
        g[index] += values_at(k)
    return g[:, :, PH:PH + H, PW:PW + W]


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
        self.out_hw = tuple(get_conv_outsize(s, k, st, p) for s, k, st, p in
                            zip((H, W), self.kernel_size, self.stride, self.pad))
        # the common case (2x2 windows, stride 2, no padding, even sizes): the windows
        # tile the image, so a reshape lines every window up along one axis
        self.tiles = (self.stride == self.kernel_size and self.pad == (0, 0)
                      and H % self.kernel_size[0] == 0 and W % self.kernel_size[1] == 0)


def _tile_views(x, pool):
    """Views (no copies) of element k of every window, k = i * KW + j, for a tiling pool."""
    N, C = x.shape[:2]
    (KH, KW), (OH, OW) = pool.kernel_size, pool.out_hw
    grid = x.reshape(N, C, OH, KH, OW, KW)
    return [grid[:, :, :, i, :, j] for i in range(KH) for j in range(KW)]


class Pooling(_Pool):
    """Max pooling: ``y = max`` of each ``KH x KW`` window (padding counts as ``-inf``).

    The derivative is 1 for the element that won the max (the first one on ties)
    and 0 for the others, so backward routes ``gy`` to the winners
    (:class:`PoolingGrad`).
    """

    def forward(self, x):
        self._setup("pooling", x)
        xp = cuda.get_array_module(x)
        if self.tiles and _raw_gpu(x):  # on a GPU: one kernel (step 71)
            from dezero_like import cuda_kernels

            y, self.indexes = cuda_kernels.max_pool_tiles(x, self.kernel_size)
            return y
        if self.tiles:  # windows that tile the image: strided views, no padded copy
            views = _tile_views(x, self)
            y = views[0].copy()
            for v in views[1:]:
                xp.maximum(y, v, out=y)
            indexes = xp.zeros(y.shape, dtype=np.int32)
            for k in range(len(views) - 1, -1, -1):  # the first maximum wins: lowest k last
                xp.copyto(indexes, k, where=views[k] == y)
            self.indexes = indexes
            return y
        padded = _padded(x, self.pad, -np.inf)
        y = indexes = None
        for k, index in _window_offsets(self):
            candidate = padded[index]
            if y is None:
                y = candidate.copy()
                indexes = xp.zeros(y.shape, dtype=np.int32)
                continue
            better = candidate > y  # strict: the first maximum wins ties
            xp.copyto(y, candidate, where=better)  # in place: no new arrays per offset
            xp.copyto(indexes, k, where=better)
        self.indexes = indexes  # which window element won, 0 .. KH*KW-1
        return y

    def backward(self, gy):
        return PoolingGrad(self)(gy)


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
        idx = self.pool.indexes
        zero = gy.dtype.type(0)
        if self.pool.tiles and _raw_gpu(gy):  # on a GPU: one kernel (step 71)
            from dezero_like import cuda_kernels

            return cuda_kernels.max_pool_tiles_grad(gy, idx, self.pool.x_shape,
                                                    self.pool.kernel_size)
        if self.pool.tiles:  # each input element is in exactly one window: no adding up
            gx = xp.zeros(self.pool.x_shape, dtype=gy.dtype)
            for k, view in enumerate(_tile_views(gx, self.pool)):
                xp.copyto(view, gy, where=idx == k)
            return gx
        return _scatter_to_windows(self.pool, lambda k: xp.where(idx == k, gy, zero))

    def backward(self, ggx):
        return Pooling2DWithIndexes(self.pool)(ggx)


class Pooling2DWithIndexes(Function):
    """Picks, in each window of its input, the element at the max pooling's winning index."""

    def __init__(self, pool):
        self.pool = pool

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        padded = _padded(x, self.pool.pad, 0)
        idx = self.pool.indexes
        y = xp.zeros(idx.shape, dtype=x.dtype)
        for k, index in _window_offsets(self.pool):
            y = xp.where(idx == k, padded[index], y)
        return y

    def backward(self, gy):
        return PoolingGrad(self.pool)(gy)


def pooling(x, kernel_size, stride=None, pad=0):
    """Max pooling of ``x (N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Returns ``(N, C, OH, OW)``; ``pad`` must be smaller than the kernel.
    """
    return Pooling(kernel_size, stride, pad)(x)


max_pooling = pooling


class AveragePooling(_Pool):
    """Average pooling: ``y = mean`` of each ``KH x KW`` window (padding counts as 0).

    Every element of a window gets ``gy / (KH*KW)``; the backward is
    :class:`AveragePoolingGrad`, whose own backward is average pooling again.
    """

    def forward(self, x):
        self._setup("average_pooling", x)
        padded = _padded(x, self.pad, 0)
        y = None
        for _, index in _window_offsets(self):
            y = padded[index].copy() if y is None else y + padded[index]
        KH, KW = self.kernel_size
        return y / (KH * KW)

    def backward(self, gy):
        return AveragePoolingGrad(self)(gy)


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


def average_pooling(x, kernel_size, stride=None, pad=0):
    """Average pooling of ``x (N, C, H, W)``; ``stride`` defaults to ``kernel_size``."""
    return AveragePooling(kernel_size, stride, pad)(x)


# --------------------------------------------------------------------------- #
# Batch normalisation
# --------------------------------------------------------------------------- #


def _bn_axes(x):
    if x.ndim == 2:
        return (0,), (1, x.shape[1])
    if x.ndim == 4:
        return (0, 2, 3), (1, x.shape[1], 1, 1)
    raise ValueError(
        f"batch_norm expects (N, C) or (N, C, H, W) input, got shape {tuple(x.shape)}"
    )


def batch_norm(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    r"""Batch normalisation: $y=\gamma\hat x+\beta$, $\hat x = (x-\mu)/\sqrt{\sigma^2+\epsilon}$.

    In training (``Config.train``), $\mu$ and $\sigma^2$ are the batch's mean
    and (biased) variance per channel (axis 1; also over H and W for images),
    and the running statistics ``mean`` and ``var`` (arrays, updated in place)
    move towards them: ``mean = decay*mean + (1-decay)*mu`` (the running variance
    uses the unbiased estimate). In test mode the running statistics are used
    instead, so one example's output does not depend on the rest of its batch.

    The training path is written with differentiable functions (sum, mean,
    ``**``), so its gradient - including the terms that flow through $\mu$ and
    $\sigma^2$ - and its second derivatives come out of backprop.
    """
    from dezero_like.core import Config

    x = as_variable(x)
    axes, shape = _bn_axes(x)
    xp = cuda.get_array_module(x)
    if any(cuda.get_array_module(a) is not xp for a in (mean, var)):
        where = "the GPU" if xp is not np else "the CPU"
        raise TypeError(
            f"batch_norm: x is on {where} but the running statistics mean/var are not; "
            "put them on the same device (cuda.as_cupy / cuda.as_numpy; the BatchNorm "
            "layer's to_gpu() moves its own)")
    gamma = F.reshape(as_variable(gamma), shape)
    beta = F.reshape(as_variable(beta), shape)
    if Config.train:
        m = x.size // x.shape[1]
        mu = F.sum(x, axis=axes, keepdims=True) / m
        xc = x - mu
        var_b = F.sum(xc * xc, axis=axes, keepdims=True) / m
        xhat = xc * (var_b + eps) ** -0.5
        s = decay
        mean *= s
        mean += (1 - s) * mu.data.reshape(mean.shape)
        unbiased = m / max(m - 1, 1)
        var *= s
        var += (1 - s) * unbiased * var_b.data.reshape(var.shape)
    else:
        inv_std = (var + eps) ** -0.5
        xhat = (x - mean.reshape(shape)) * inv_std.reshape(shape)
    return xhat * gamma + beta


# --------------------------------------------------------------------------- #
# Embedding
# --------------------------------------------------------------------------- #


def embed_id(x, W):
    """Rows of ``W (vocab, dim)`` picked by the integer ids ``x``: ``y = W[x]``.

    The gradient adds each output row's gradient into the row it came from
    (repeated ids accumulate) - exactly the backward of ``W[x]`` indexing.
    """
    if isinstance(x, Variable):
        x = x.data
    xp = cuda.get_array_module(x)
    x = xp.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"embed_id needs integer ids, got dtype {x.dtype}")
    W = as_variable(W)
    if x.size and (int(x.min()) < 0 or int(x.max()) >= W.shape[0]):
        raise IndexError(
            f"embed_id: ids must be in [0, {W.shape[0]}), got min {int(x.min())}, "
            f"max {int(x.max())}"
        )
    return W[x]


__all__ = [
    "pair", "get_conv_outsize", "get_deconv_outsize", "im2col_array", "col2im_array",
    "im2col", "col2im", "conv2d", "deconv2d", "Conv2DGradW", "pooling", "max_pooling",
    "average_pooling", "batch_norm", "embed_id",
]
