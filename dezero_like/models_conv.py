"""Convolutional models: a small CNN for MNIST and the VGG16 architecture.

``from dezero_like.models_conv import SimpleConvNet, VGG16``.
"""

from __future__ import annotations

from pathlib import Path

import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like.models import Model

__all__ = ["SimpleConvNet", "VGG16", "PretrainedWeightsUnavailable", "summary"]


class SimpleConvNet(Model):
    """A small CNN for 28x28 grey images (MNIST): 163,000 parameters with the defaults.

    ``conv(16, 3x3, pad 1) - ReLU - 2x2 max pool`` (28 -> 14),
    ``conv(32, 3x3, pad 1) - ReLU - 2x2 max pool`` (14 -> 7),
    then ``Linear(hidden) - ReLU - Linear(num_classes)``. Input ``(N, 1, 28, 28)``;
    a flat ``(N, 784)`` batch is reshaped to that first. Output: logits.
    """

    def __init__(self, num_classes=10, channels=(16, 32), hidden_size=100):
        super().__init__()
        c1, c2 = channels
        self.conv1 = Lc.Conv2d(c1, kernel_size=3, stride=1, pad=1)
        self.conv2 = Lc.Conv2d(c2, kernel_size=3, stride=1, pad=1)
        self.fc3 = L.Linear(hidden_size)
        self.fc4 = L.Linear(num_classes)
        # the layout, for summary(): which convs are followed by a 2x2 pooling
        self.conv_names = ["conv1", "conv2"]
        self.pool_after = {"conv1", "conv2"}
        self.fc_names = ["fc3", "fc4"]

    def forward(self, x):
        if x.ndim == 2:  # (N, 784) from the default MNIST transform
            side = int(round(x.shape[1] ** 0.5))
            if side * side != x.shape[1]:
                raise ValueError(f"cannot view a flat input of width {x.shape[1]} as an image")
            x = F.reshape(x, (x.shape[0], 1, side, side))
        x = Fc.pooling(F.relu(self.conv1(x)), 2, 2)
        x = Fc.pooling(F.relu(self.conv2(x)), 2, 2)
        x = F.flatten(x)
        x = F.relu(self.fc3(x))
        return self.fc4(x)


class PretrainedWeightsUnavailable(RuntimeError):
    """Pretrained weights were asked for but are neither cached nor safely downloadable."""


class VGG16(Model):
    """The 16-layer VGG network (Simonyan & Zisserman, 2014) for 224x224 RGB images.

    Five blocks of 3x3 convolutions (padding 1, so the size is kept) with
    64, 128, 256, 512, 512 channels (2, 2, 3, 3, 3 layers), each block ending in
    a 2x2 max pooling (224 -> 7), then fully connected layers of 4096, 4096 and
    1000 units with dropout. All 138 million parameters are created lazily on
    the first call, so building the model costs nothing.

    ``pretrained=True`` loads ImageNet weights from ``weights_file`` (an
    ``.npz`` written by ``save_weights`` or converted to the same names:
    ``conv1_1/W``, ``conv1_1/b``, ..., ``fc8/b``; ``W`` of Linear layers is
    (in, out)), or from the cache ``<data dir>/models/vgg16.npz``. Nothing is
    downloaded unless a checksum is pinned in :attr:`WEIGHTS_MD5`; otherwise a
    :class:`PretrainedWeightsUnavailable` error says where to put the file.
    """

    BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))
    WEIGHTS_URL = "https://github.com/koki0702/dezero-models/releases/download/v0.1/vgg16.npz"
    WEIGHTS_MD5 = None  # not pinned: no trusted checksum of the published file was available

    def __init__(self, pretrained=False, weights_file=None, num_classes=1000):
        super().__init__()
        self.conv_names = []
        self.pool_after = set()  # the last conv of each block
        for block, (channels, repeat) in enumerate(self.BLOCKS, start=1):
            for j in range(1, repeat + 1):
                name = f"conv{block}_{j}"
                setattr(self, name, Lc.Conv2d(channels, kernel_size=3, stride=1, pad=1))
                self.conv_names.append(name)
            self.pool_after.add(name)
        self.fc6 = L.Linear(4096)
        self.fc7 = L.Linear(4096)
        self.fc8 = L.Linear(num_classes)
        self.fc_names = ["fc6", "fc7", "fc8"]
        if pretrained:
            self.load_weights(self.pretrained_path(weights_file))

    def forward(self, x):
        for name in self.conv_names:
            x = F.relu(getattr(self, name)(x))
            if name in self.pool_after:
                x = Fc.pooling(x, 2, 2)
        x = F.flatten(x)
        x = F.dropout(F.relu(self.fc6(x)))
        x = F.dropout(F.relu(self.fc7(x)))
        return self.fc8(x)

    @classmethod
    def pretrained_path(cls, weights_file=None):
        """The local ``.npz`` with pretrained weights, or a clear error saying how to get one."""
        from dezero_like import datasets

        if weights_file is not None:
            path = Path(weights_file)
            if not path.is_file():
                raise FileNotFoundError(f"VGG16 weights file {path} does not exist")
            return path
        path = datasets.data_root() / "models" / "vgg16.npz"
        if path.is_file():
            return path
        if cls.WEIGHTS_MD5 is None:
            reason = "no checksum is pinned for the published file, so it is not downloaded"
        elif not datasets.downloads_allowed():
            reason = f"downloads are disabled by {datasets.OFFLINE_ENV}=1"
        else:
            try:
                datasets.download([cls.WEIGHTS_URL], path, md5=cls.WEIGHTS_MD5)
                return path
            except OSError as e:  # no network, mirror gone, checksum mismatch
                reason = f"the download failed ({e})"
        raise PretrainedWeightsUnavailable(
            f"VGG16 pretrained weights are not available: {path} does not exist and {reason}. "
            f"Download {cls.WEIGHTS_URL} yourself (about 528 MB), check it, and put it at "
            f"{path} (or pass weights_file=...). Use VGG16(pretrained=False) for random weights."
        )


def summary(model, input_shape):
    """Rows ``(name, output shape, parameter count)`` of a conv/linear model, without running it.

    Works for models that list their layout in ``conv_names``, ``pool_after``
    (convs followed by 2x2 max pooling) and ``fc_names``, as :class:`SimpleConvNet`
    and :class:`VGG16` do. Shapes follow from the layer settings alone
    (:func:`functions_conv.get_conv_outsize`), so even VGG16's 138 million
    parameters are counted without allocating them. ``input_shape`` is one
    example's shape, e.g. ``(3, 224, 224)``.
    """
    if not all(hasattr(model, a) for a in ("conv_names", "pool_after", "fc_names")):
        raise TypeError(
            f"summary() needs a model with conv_names, pool_after and fc_names "
            f"(SimpleConvNet, VGG16), got {type(model).__name__}"
        )
    rows = []
    C, H, W = input_shape
    for name in model.conv_names:
        conv = getattr(model, name)
        (KH, KW), (SH, SW), (PH, PW) = conv.kernel_size, conv.stride, conv.pad
        H, W = Fc.get_conv_outsize(H, KH, SH, PH), Fc.get_conv_outsize(W, KW, SW, PW)
        n = conv.out_channels * C * KH * KW + (conv.out_channels if conv.b is not None else 0)
        C = conv.out_channels
        rows.append((name, (C, H, W), n))
        if name in model.pool_after:
            H, W = Fc.get_conv_outsize(H, 2, 2, 0), Fc.get_conv_outsize(W, 2, 2, 0)
            rows.append(("pool", (C, H, W), 0))
    size = C * H * W
    for name in model.fc_names:
        layer = getattr(model, name)
        n = size * layer.out_size + (layer.out_size if layer.b is not None else 0)
        size = layer.out_size
        rows.append((name, (size,), n))
    return rows
