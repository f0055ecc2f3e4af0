"""Convolutional, normalisation, embedding and recurrent layers.

``import dezero_like.layers_conv as Lc``. Every class is a
:class:`~dezero_like.layers.Layer`: its Parameters are registered when
assigned, so ``params()``, optimizers and ``save_weights``/``load_weights``
see them. Layers whose weight shape depends on the input (``in_channels``,
``in_size`` left as ``None``) create their weights on the first call.
"""

from __future__ import annotations

import numpy as np

import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like import cuda
from dezero_like.core import Parameter
from dezero_like.layers import Layer, Linear

__all__ = ["Conv2d", "Deconv2d", "BatchNorm", "EmbedID", "RNN", "LSTM"]


def _to_device_of(param, x):
    """Move an already-created parameter to the device of ``x`` (a lazy layer's bias)."""
    if param is not None and param.data is not None:
        if cuda.get_array_module(x) is not np and isinstance(param.data, np.ndarray):
            param.to_gpu()


class Conv2d(Layer):
    """2-d convolution layer: ``y = conv2d(x, W, b, stride, pad)``.

    ``W`` has shape ``(out_channels, in_channels, KH, KW)`` and is initialised
    with ``randn * sqrt(1 / (in_channels * KH * KW))`` (the number of inputs
    each output sums over), ``b`` with zeros. Without ``in_channels``, ``W`` is
    created on the first call from ``x.shape[1]``.
    """

    def __init__(self, out_channels, kernel_size, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = Fc.pair(kernel_size)
        self.stride = Fc.pair(stride)
        self.pad = Fc.pair(pad)
        self.dtype = np.dtype(dtype)
        self.W = Parameter(None, name="W")
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_channels, self.dtype), name="b")

    def _w_shape(self):
        return (self.out_channels, self.in_channels) + self.kernel_size

    def _init_W(self, xp=np):
        KH, KW = self.kernel_size
        scale = (1.0 / (self.in_channels * KH * KW)) ** 0.5
        self.W.data = (xp.random.randn(*self._w_shape()) * scale).astype(self.dtype)

    def _lazy_init(self, x):
        """Create ``W`` from the first input's channel count (and put ``b`` on its device)."""
        if self.W.data is not None:
            return
        if x.ndim != 4:
            raise ValueError(
                f"{type(self).__name__} expects a batch of images (N, C, H, W), got shape "
                f"{x.shape}; reshape flat inputs with x.reshape(N, C, H, W)"
            )
        self.in_channels = x.shape[1]
        self._init_W(cuda.get_array_module(x))
        _to_device_of(self.b, x)

    def forward(self, x):
        self._lazy_init(x)
        return Fc.conv2d(x, self.W, self.b, self.stride, self.pad)

    def __repr__(self):
        return (f"{type(self).__name__}({self.in_channels}->{self.out_channels}, "
                f"kernel={self.kernel_size}, stride={self.stride}, pad={self.pad})")


class Deconv2d(Conv2d):
    """Transposed convolution layer: ``y = deconv2d(x, W, b, stride, pad)`` (upsampling).

    ``W`` has shape ``(in_channels, out_channels, KH, KW)``. The output side is
    ``stride*(H-1) + KH - 2*pad``; ``outsize`` fixes it when several are possible.
    """

    def __init__(self, out_channels, kernel_size, stride=1, pad=0, nobias=False,
                 dtype=np.float32, in_channels=None, outsize=None):
        self.outsize = outsize
        super().__init__(out_channels, kernel_size, stride, pad, nobias, dtype, in_channels)

    def _w_shape(self):
        return (self.in_channels, self.out_channels) + self.kernel_size

    def forward(self, x):
        self._lazy_init(x)
        return Fc.deconv2d(x, self.W, self.b, self.stride, self.pad, self.outsize)


class BatchNorm(Layer):
    """Batch normalisation over the batch (and spatial) axes, per channel (axis 1).

    Training (``Config.train``): normalise with the batch's statistics and
    update the running averages ``avg_mean``/``avg_var``. Test mode
    (``with dz.test_mode():``): use the running averages. ``gamma`` (ones) and
    ``beta`` (zeros) are learned; all four are created on the first call and
    saved with the weights. Formula and gradients: :func:`functions_conv.batch_norm`.
    """

    def __init__(self, decay=0.9, eps=2e-5):
        super().__init__()
        self.decay = decay
        self.eps = eps
        # running statistics are Parameters so that save/load and to_gpu carry
        # them; they never get a gradient, so optimizers leave them alone
        self.avg_mean = Parameter(None, name="avg_mean")
        self.avg_var = Parameter(None, name="avg_var")
        self.gamma = Parameter(None, name="gamma")
        self.beta = Parameter(None, name="beta")

    def forward(self, x):
        if self.avg_mean.data is None:
            xp = cuda.get_array_module(x)
            C = x.shape[1]
            self.avg_mean.data = xp.zeros(C, dtype=x.dtype)
            self.avg_var.data = xp.ones(C, dtype=x.dtype)
            self.gamma.data = xp.ones(C, dtype=x.dtype)
            self.beta.data = xp.zeros(C, dtype=x.dtype)
        return Fc.batch_norm(x, self.gamma, self.beta, self.avg_mean.data, self.avg_var.data,
                             self.decay, self.eps)


class EmbedID(Layer):
    """Word embedding: integer ids -> rows of ``W (in_size, out_size)``; ``y = W[ids]``."""

    def __init__(self, in_size, out_size, dtype=np.float32):
        super().__init__()
        self.W = Parameter(np.random.randn(in_size, out_size).astype(dtype), name="W")

    def forward(self, x):
        return Fc.embed_id(x, self.W)


class RNN(Layer):
    r"""Elman recurrent layer: $h_t = \tanh(x_t W_x + b + h_{t-1} W_h)$.

    The layer *remembers* ``h`` between calls: call it once per time step.
    ``reset_state()`` forgets it (start of a new sequence). The first step has
    no ``h_{t-1}`` term. ``in_size`` is inferred on the first call when omitted.
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        self.x2h = Linear(hidden_size, in_size=in_size)
        self.h2h = Linear(hidden_size, in_size=hidden_size, nobias=True)
        self.h = None

    def reset_state(self):
        """Forget the hidden state: the next call starts a new sequence."""
        self.h = None

    def forward(self, x):
        if self.h is None:
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new


class LSTM(Layer):
    r"""Long short-term memory layer (one time step per call; state kept between calls).

    With $\sigma$ the sigmoid and $\odot$ the elementwise product:
    $f = \sigma(x W_{xf} + h W_{hf})$, $i = \sigma(\dots)$, $o = \sigma(\dots)$ (gates),
    $u = \tanh(x W_{xu} + h W_{hu})$ (candidate), then
    $c_t = f \odot c_{t-1} + i \odot u$ and $h_t = o \odot \tanh(c_t)$.

    The cell state ``c`` is updated by a product and a sum only, so gradients
    can flow back through many steps without being squashed at each one.
    ``reset_state()`` clears ``h`` and ``c``.
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        H, I = hidden_size, in_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self):
        """Forget ``h`` and ``c``: the next call starts a new sequence."""
        self.h = None
        self.c = None

    def forward(self, x):
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new
