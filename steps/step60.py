# %% [markdown]
# # Step 60: CNN models: a small CNN on MNIST, and VGG16's structure
#
# With `conv2d` (steps 57-58) and max pooling (step 59) in the package, a
# convolutional network is just a `Model` whose layers include `Conv2d`.
# Like `Linear`, `Conv2d` creates its weights on the first call, from the
# number of channels it receives, so a model is written by listing output
# sizes only.
#
# The classic CNN recipe alternates *feature extraction* and *downsampling*:
#
# `conv -> ReLU -> pool -> conv -> ReLU -> pool -> flatten -> Linear -> ReLU -> Linear`
#
# Early convolutions find small local patterns (edges, stroke ends); pooling
# halves the map so that the next convolution's 3×3 window covers a larger
# part of the digit; the fully connected layers at the end combine the
# features into a decision.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `flatten`; `models_conv` gains `SimpleConvNet`,
# `PretrainedWeightsUnavailable`, `VGG16`, `summary`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `flatten` keeps the batch axis and joins all the others: the step from the last convolution's
# `(N, C, H, W)` to the `(N, C*H*W)` a `Linear` layer takes. It is `reshape`, so its gradient is a
# reshape back.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import as_variable
from dezero_like.core import _refuse_keywords
from dezero_like.functions import reshape

_FLATTEN_KEYWORDS = {  # PyTorch's torch.flatten(x, start_dim=0, end_dim=-1)
    "start_dim": lambda v: "F.flatten always keeps axis 0 and flattens the rest, PyTorch's "
    "start_dim=1 (nn.Flatten()): drop start_dim=" if v == 1 else
    "F.flatten keeps axis 0 (the batch); write F.reshape(x, -1) to flatten it all" if v == 0 else
    f"F.flatten keeps axis 0 only; write F.reshape(x, x.shape[:{v!r}] + (-1,))",
    "end_dim": "write F.reshape(x, shape) with the shape you want",
}


def flatten(x, **others):
    """Keep the first (batch) axis and flatten the rest: (N, ...) -> (N, -1)."""
    if others:  # PyTorch's torch.flatten(x, start_dim=1), say
        _refuse_keywords("F.flatten", others, _FLATTEN_KEYWORDS)
    x = as_variable(x)
    if x.ndim == 0:  # no batch axis to keep (PyTorch's flatten(x, 1) refuses it too)
        raise ValueError(
            "F.flatten keeps the first (batch) axis and joins the others, but x has no axes "
            "(shape ()): for a batch of one value write F.reshape(x, (1, 1)); for a 1-d result, "
            "F.reshape(x, (1,))")
    return reshape(x, (x.shape[0], int(np.prod(x.shape[1:]))))  # -1 cannot be solved for N = 0


# %% [markdown]
# `models` gains a `__getattr__` that finds the new models in `models_conv`.

# %%
#| export dezero_like/models.py
from dezero_like.utils import forward_names


# SimpleConvNet, VGG16: written in dezero_like/models_conv.py (step 60), found here too, as
# in the book
__getattr__ = forward_names(__name__, {
    "SimpleConvNet": "dezero_like.models_conv",
    "VGG16": "dezero_like.models_conv",
})


# %% [markdown]
# `SimpleConvNet` registers its four layers by assigning them, and creates no weights itself: the
# convolutions and `Linear` layers size theirs on the first call. A flat `(N, 784)` batch is
# reshaped to square images first. `conv_names`, `pool_after` and `fc_names` describe the layout
# for `summary`; they are plain lists, not layers, so they register nothing.

# %%
#| export dezero_like/models_conv.py
"""Convolutional models: a small CNN for MNIST and the VGG16 architecture.

``from dezero_like.models_conv import SimpleConvNet, VGG16``.
"""

import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like.models import Model


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
        elif x.ndim == 4 and x.shape[-1] in (1, 3) and x.shape[1] > x.shape[-1]:
            raise ValueError(
                f"SimpleConvNet expects images as (N, C, H, W), got {tuple(x.shape)}, which "
                "looks channels-last (N, H, W, C); use x.transpose(0, 3, 1, 2)")
        x = Fc.pooling(F.relu(self.conv1(x)), 2, 2)
        x = Fc.pooling(F.relu(self.conv2(x)), 2, 2)
        x = F.flatten(x)
        x = F.relu(self.fc3(x))
        return self.fc4(x)


# %% [markdown]
# `PretrainedWeightsUnavailable` is the error raised when pretrained weights are asked for but
# cannot be had.

# %%
#| export dezero_like/models_conv.py
class PretrainedWeightsUnavailable(RuntimeError):
    """Pretrained weights were asked for but are neither cached nor safely downloadable."""


# %% [markdown]
# `VGG16` builds its 13 convolutions in a loop from `BLOCKS`, with `setattr`, so each is registered
# under a name (`conv3_2`) that also becomes its key in a weight file. No weight is created until
# the first call (only the biases, 13,416 zeros in all, exist before it). `pretrained_path` looks
# for a local file and downloads only when a checksum is pinned; `WEIGHTS_MD5` is `None`, so the
# error says where to put the file instead.

# %%
#| export dezero_like/models_conv.py
from pathlib import Path
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like.models import Model


class VGG16(Model):
    """The 16-layer VGG network (Simonyan & Zisserman, 2014) for 224x224 RGB images.

    Five blocks of 3x3 convolutions (padding 1, so the size is kept) with
    64, 128, 256, 512, 512 channels (2, 2, 3, 3, 3 layers), each block ending in
    a 2x2 max pooling (224 -> 7), then fully connected layers of 4096, 4096 and
    1000 units with dropout. The weights, all but 13,416 of its 138 million
    parameters, are created lazily on the first call: building the model
    allocates only the biases (zeros, about 52 KiB).

    ``weights_file`` (given alone, or with ``pretrained=True``) loads ImageNet weights
    from that ``.npz`` (written by ``save_weights`` or converted to the same names:
    ``conv1_1/W``, ``conv1_1/b``, ..., ``fc8/b``; ``W`` of Linear layers is
    (in, out)); ``pretrained=True`` alone loads the cache ``<data dir>/models/vgg16.npz``.
    Nothing is downloaded unless a checksum is pinned in :attr:`WEIGHTS_MD5`; otherwise a
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
        if pretrained or weights_file is not None:  # a file given is a file to load
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
            path = Path(weights_file).expanduser()
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
            f"Download {cls.WEIGHTS_URL} yourself (about 528 MiB), check it, and put it at "
            f"{path} (or pass weights_file=...). Use VGG16(pretrained=False) for random weights."
        )


# %% [markdown]
# `summary` computes each layer's output shape and parameter count from the layer settings alone,
# with `get_conv_outsize`, without running the model or allocating a weight. This is how it can
# count VGG16's parameters cheaply.

# %%
#| export dezero_like/models_conv.py
import dezero_like.functions_conv as Fc


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


# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
from dezero_like import DataLoader, optimizers
from dezero_like.models import MLP
from dezero_like.models_conv import VGG16, SimpleConvNet, summary
from dezero_like.plot import output_dir, plot_curves, save_figure

out_dir = output_dir(60)  # every file this step writes goes here

np.random.seed(0)

# %% [markdown]
# ## SimpleConvNet, layer by layer
#
# `dezero_like.models_conv.SimpleConvNet` is that recipe with 16 and 32
# filters of size 3×3 (padding 1 keeps the size) and 2×2 max pooling. Follow
# one batch of 5 images through it and watch the shapes:

# %%
model = SimpleConvNet()
x = np.random.rand(5, 1, 28, 28).astype(np.float32)
h = F.relu(model.conv1(x))
print("conv1 + ReLU:", h.shape)
h = Fc.pooling(h, 2, 2)
print("pool:        ", h.shape)
h = F.relu(model.conv2(h))
print("conv2 + ReLU:", h.shape)
h = Fc.pooling(h, 2, 2)
print("pool:        ", h.shape)
h = F.flatten(h)
print("flatten:     ", h.shape)
print("logits:      ", model(x).shape)

# %% [markdown]
# `summary` computes the same shapes from the layer settings alone and counts
# the parameters. A convolution has $OC \cdot C \cdot K_H K_W + OC$ of them,
# however large the image: most of this model's parameters sit in the first
# fully connected layer.

# %%
for name, shape, n in summary(model, (1, 28, 28)):
    print(f"{name:6s} {str(shape):14s} {n:>8,}")
print(f"total  {sum(p.size for p in model.params()):>23,}")

# %% [markdown]
# ## Training on MNIST
#
# `dz.datasets.mnist_train_test()` gives the official 60,000/10,000 split
# when the training images are cached; offline, as in this project's CI, it
# trains on 8,000 of the 10,000 real *test* images and evaluates on the other
# 2,000 (it prints which). To keep this demo short, each model sees 8,000
# training images once (80 batches of 100), and is then evaluated on images
# it never saw. The MLP is trained for the same number of batches, for comparison.

# %%
train_set, test_set = dz.datasets.mnist_train_test()
print(train_set.summary)
train_loader = DataLoader(train_set, batch_size=100, seed=0)
test_loader = DataLoader(test_set, batch_size=500, shuffle=False)


def evaluate(model, loader):
    """Mean accuracy over a loader, with no graph and dropout off."""
    correct, n = 0.0, 0
    with dz.no_grad(), dz.test_mode():
        for xb, tb in loader:
            correct += float(F.accuracy(model(xb), tb).data) * len(tb)
            n += len(tb)
    return correct / n


def train(model, loader=train_loader, n_batches=80, lr=0.001, log_every=20):
    optimizer = optimizers.Adam(lr).setup(model)
    losses = []
    start = time.perf_counter()
    for i, (xb, tb) in enumerate(loader, start=1):
        loss = F.softmax_cross_entropy(model(xb), tb)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        if i % log_every == 0:
            print(f"  batch {i:3d}: loss {np.mean(losses[-log_every:]):.3f}")
        if i == n_batches:
            break
    return losses, time.perf_counter() - start


np.random.seed(0)
cnn = SimpleConvNet()
print("SimpleConvNet")
cnn_losses, cnn_seconds = train(cnn)
cnn_acc = evaluate(cnn, test_loader)
np.random.seed(0)
mlp = MLP((100, 10), activation=F.relu)
print("MLP 784-100-10")
mlp_losses, mlp_seconds = train(mlp)
mlp_acc = evaluate(mlp, test_loader)
print(f"test accuracy: CNN {cnn_acc:.3f} ({cnn_seconds:.0f} s), "
      f"MLP {mlp_acc:.3f} ({mlp_seconds:.0f} s)")
fig = plot_curves({"mini-batch loss": {"SimpleConvNet": cnn_losses, "MLP 784-100-10": mlp_losses}},
                  xlabel="iteration", to_file=out_dir / "losses.png")

# %% [markdown]
# After the same training, the CNN makes markedly fewer mistakes. It is built
# to know two things the MLP has to discover from data: neighbouring pixels
# belong together, and a stroke means the same wherever it appears (the same
# filter is applied at every position). It has about twice the MLP's
# parameters (163 thousand against 80 thousand) and costs much more
# computation per image, since every filter visits every position.
#
# What did the first layer learn? Each of its 16 filters is a 3×3 patch of
# weights; bright and dark areas show the pattern it responds to.

# %%
filters = cnn.conv1.W.data[:, 0]
fig, axes = plt.subplots(2, 8, figsize=(8, 2.2))
for ax, w in zip(axes.ravel(), filters):
    ax.imshow(w, cmap="gray")
    ax.axis("off")
fig.suptitle("conv1 filters after training")
save_figure(fig, out_dir / "conv1_filters.png")
plt.show()

# %% [markdown]
# ## The same CNN with batch normalisation
#
# Step 58 wrote `L.BatchNorm`. In training it normalises each channel to mean 0
# and variance 1 over the batch and all positions, then scales and shifts it by
# two learned values per channel, $\gamma$ and $\beta$; in test mode it uses
# running averages of those statistics instead (one more reason why `evaluate`
# runs under `test_mode()`). Put between each convolution and its ReLU, it keeps
# what the next layer receives on a steady scale while the weights before it
# change. (The convolutions' biases become useless, since the normalisation
# subtracts each channel's mean; `Conv2d(..., nobias=True)` would leave them out.)
#
# `BatchNormConvNet` below is `SimpleConvNet` with those two layers. It starts
# from the same random weights (the same seed; batch norm draws nothing) and is
# trained on the same 80 batches in the same order (a new loader with the same
# seed), with the same optimizer.

# %%
class BatchNormConvNet(SimpleConvNet):
    """SimpleConvNet with a batch norm between each convolution and its ReLU."""

    def __init__(self):
        super().__init__()
        self.bn1 = L.BatchNorm()
        self.bn2 = L.BatchNorm()

    def forward(self, x):
        x = F.reshape(x, (x.shape[0], 1, 28, 28))  # the flat (N, 784) MNIST batch
        x = Fc.pooling(F.relu(self.bn1(self.conv1(x))), 2, 2)
        x = Fc.pooling(F.relu(self.bn2(self.conv2(x))), 2, 2)
        x = F.relu(self.fc3(F.flatten(x)))
        return self.fc4(x)


np.random.seed(0)
bn_cnn = BatchNormConvNet()
print("SimpleConvNet with batch norm")
bn_losses, _ = train(bn_cnn, DataLoader(train_set, batch_size=100, seed=0))
bn_acc = evaluate(bn_cnn, test_loader)
print(f"test accuracy: with batch norm {bn_acc:.3f}, without {cnn_acc:.3f}")


def pass_ms(model, xb, tb):
    """Milliseconds of one forward and backward of a batch (no update)."""
    start = time.perf_counter()
    loss = F.softmax_cross_entropy(model(xb), tb)
    model.cleargrads()
    loss.backward()
    return (time.perf_counter() - start) * 1e3


xb, tb = next(iter(DataLoader(train_set, batch_size=100, seed=1)))
bn_ms, plain_ms = [], []
for _ in range(5):  # in turns, so that a busy moment of the machine slows both alike
    bn_ms.append(pass_ms(bn_cnn, xb, tb))
    plain_ms.append(pass_ms(cnn, xb, tb))
print(f"forward + backward of a batch, best of 5: with batch norm {min(bn_ms):.0f} ms, "
      f"without {min(plain_ms):.0f} ms ({min(bn_ms) / min(plain_ms):.2f}x)")
print(f"mean loss over the last 20 batches: with batch norm {np.mean(bn_losses[-20:]):.3f}, "
      f"without {np.mean(cnn_losses[-20:]):.3f}")
fig = plot_curves({"mini-batch loss": {"SimpleConvNet": cnn_losses,
                                       "with batch norm": bn_losses}},
                  xlabel="iteration", to_file=out_dir / "losses_batchnorm.png")

# %% [markdown]
# With batch norm the loss falls faster, and the accuracy after these 80
# batches is higher too; other seeds (for the weights and the loader) change
# the size of the gap, but on the seeds we tried not its sign. A batch takes
# longer with batch norm (the ratio printed above, timed on one batch with the two
# models in turns: the two training runs, minutes apart, may meet a machine busy
# to different degrees): two more layers, though each `BatchNorm` reads and writes
# its activation only a few times, because step 58 made `batch_norm` one function
# with its gradient written out; its composed definition, `batch_norm_simple`,
# makes many more passes, forward and backward. The gain
# here is modest; batch norm matters most in deep networks, where it can make
# the difference between a model that trains and one that does not.

# %% [markdown]
# ## VGG16: the same recipe, scaled up
#
# VGG16 (Simonyan and Zisserman, 2014) placed first in localisation and second
# in classification at the 2014 ImageNet challenge (ILSVRC) with a strikingly
# uniform design: only 3×3 convolutions with padding 1, in five blocks of 2, 2,
# 3, 3 and 3 layers with 64 to 512 channels, each block followed by 2×2 max
# pooling; then three fully connected layers. Two stacked 3×3 convolutions see a
# 5×5 region, three see 7×7, with fewer parameters than one large kernel.
#
# `VGG16()` builds its layers lazily, so constructing it allocates no weight
# matrix (only the biases): `summary` reads its structure for a 224×224 RGB image.

# %%
vgg = VGG16()
rows = summary(vgg, (3, 224, 224))
for name, shape, n in rows:
    print(f"{name:8s} {str(shape):17s} {n:>12,}")
vgg_total = sum(n for _, _, n in rows)
print(f"total parameters: {vgg_total:,}")
print(f"fc6 alone: {dict((r[0], r[2]) for r in rows)['fc6'] / vgg_total:.0%} of them")
print(f"as float32: {vgg_total * 4 / 2**20:,.0f} MiB")

# %% [markdown]
# The 13 convolutions hold only 15 million of the 138 million parameters;
# `fc6`, which connects the final 512×7×7 map to 4,096 units, holds 74%.
# (Later architectures replace it with global average pooling.)
#
# Trained ImageNet weights for this layout are a download of that size (the
# last line above: 4 bytes per parameter).
# `VGG16(pretrained=True)` looks for them in `<data dir>/models/vgg16.npz`
# (or `weights_file=...`) and, when they are not there, raises an error that
# says where to put the file; it never downloads anything without a pinned
# checksum.
#
# ## Exercise
# 1. How many parameters does `Conv2d(32, kernel_size=3)` have when it
#    receives 16 channels? Set `n_conv2`. What is the output shape (channels,
#    height, width) of VGG16's last pooling layer for a 160×160 input? Set
#    `vgg_last_pool`.
# 2. **Implement then test: a CNN from its table of shapes.** Write
#    `TinyConvNet(image_size=28, num_classes=10)`, a `Model` for one-channel
#    `S × S` images (`S` is `image_size`) with the layout below: a
#    convolution with stride 2 instead of `SimpleConvNet`'s second pooling,
#    and an **average** pooling (step 59) instead of a max. Fill in the
#    question marks on paper first.
#
# | layer | settings | output shape |
# | --- | --- | --- |
# | input | | `(N, 1, S, S)` |
# | `conv1`, then ReLU | 8 filters 3×3, stride 1, padding 1 | `(N, 8, S, S)` |
# | `conv2`, then ReLU | 16 filters 3×3, stride 2, no padding | `(N, 16, ?, ?)` |
# | pooling | 2×2 average pooling, stride 2 | `(N, 16, ?, ?)` |
# | flatten | | `(N, ?)` |
# | `fc3` | `num_classes` outputs, no activation | `(N, num_classes)` |
#
# Register the three layers under these names. `fc3` must receive its input
# size when it is built (`in_size`, step 45), worked out from `image_size`
# with the arithmetic `summary` does, so that its weights exist before the
# first batch: mind the sizes that do not divide evenly (for 28, the side
# after `conv2` is odd). `forward` takes `(N, 1, S, S)` images and returns
# the logits. The self-check builds the model for 28×28 images, checks the
# shape of `fc3`'s weights before any call, compares the logits with the same
# network computed in plain NumPy from your model's weights, repeats this for
# 9×9 and 16×16 images, and runs `gradient_check` through the whole network
# on one 9×9 image.

# %%
#| exercise
n_conv2 = ...  # parameters of Conv2d(32, kernel_size=3) on 16 input channels
vgg_last_pool = ...  # (channels, height, width) after VGG16's last pooling, 160x160 input

# %%
#| solution
n_conv2 = 32 * 16 * 3 * 3 + 32  # weights plus one bias per filter
vgg_last_pool = (512, 5, 5)  # 160 halves five times to 5

# %%
#| check
expected_conv2 = dict((r[0], r[2]) for r in summary(model, (1, 28, 28)))["conv2"]
assert n_conv2 == expected_conv2, (
    f"n_conv2 = {n_conv2}: a filter has C * KH * KW weights, and each of the 32 has one bias"
)
expected_pool = [r for r in summary(vgg, (3, 160, 160)) if r[0] == "pool"][-1][1]
assert tuple(vgg_last_pool) == tuple(expected_pool), (
    f"vgg_last_pool = {vgg_last_pool}: the last block has 512 channels, and each of the five "
    "poolings halves the side"
)
print(f"self-check passed: n_conv2 = {n_conv2}, vgg_last_pool = {tuple(vgg_last_pool)}")

# %%
#| exercise
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like.models import Model


class TinyConvNet(Model):
    def __init__(self, image_size=28, num_classes=10):
        super().__init__()
        raise NotImplementedError(
            "Exercise (step 60): conv1, conv2 and fc3 as in the table; fc3 gets its in_size, "
            "worked out from image_size"
        )

    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 60): from images (N, 1, S, S) to logits (N, num_classes), "
            "through the table's rows in order"
        )

# %%
#| solution
class TinyConvNet(Model):
    def __init__(self, image_size=28, num_classes=10):
        super().__init__()
        self.conv1 = Lc.Conv2d(8, kernel_size=3, pad=1)  # keeps the side S
        self.conv2 = Lc.Conv2d(16, kernel_size=3, stride=2)
        side = Fc.get_conv_outsize(image_size, 3, 2, 0)  # (S - 3) // 2 + 1: 13 for 28
        side = side // 2  # the 2x2 pooling leaves out an odd last row and column: 6 for 28
        self.fc3 = L.Linear(num_classes, in_size=16 * side * side)

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = F.relu(self.conv2(h))
        h = Fc.average_pooling(h, 2)
        return self.fc3(F.flatten(h))

# %%
#| check
from dezero_like.utils import gradient_check

windows = np.lib.stride_tricks.sliding_window_view  # every K x K window of the last two axes


def conv_numpy(x, W, b, stride, pad):
    """A convolution as the sum over each window, in NumPy alone (no im2col, no package)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    K = W.shape[-1]
    patches = windows(x, (K, K), axis=(2, 3))[:, :, ::stride, ::stride]  # (N, C, OH, OW, K, K)
    return np.einsum("nchwij,ocij->nohw", patches, W) + b[:, None, None]


def features_numpy(x, W1, b1, W2, b2):
    """The table up to the flatten, in float64 NumPy: conv1, ReLU, conv2, ReLU, pool, flatten."""
    h = np.maximum(conv_numpy(np.asarray(x, np.float64), W1, b1, 1, 1), 0)
    h = np.maximum(conv_numpy(h, W2, b2, 2, 0), 0)
    h = windows(h, (2, 2), axis=(2, 3))[:, :, ::2, ::2].mean(axis=(-2, -1))  # whole windows
    return h.reshape(len(h), -1)


rng = np.random.default_rng(0)
for S in (28, 9, 16):
    net = TinyConvNet(image_size=S, num_classes=10)
    missing = [name for name in ("conv1", "conv2", "fc3") if not hasattr(net, name)]
    assert not missing, f"TinyConvNet has no layer named {missing}: use the table's names"
    assert net.fc3.W.data is not None, (
        "fc3 has no weights before the first batch: build it with its in_size, the width of "
        "the flattened map, worked out from image_size"
    )
    # the width of the flattened map, from the NumPy network run on a blank image
    width = features_numpy(np.zeros((1, 1, S, S)), np.zeros((8, 1, 3, 3)), np.zeros(8),
                           np.zeros((16, 8, 3, 3)), np.zeros(16)).shape[1]
    assert net.fc3.W.shape == (width, 10), (
        f"for {S}x{S} images fc3's W has shape {net.fc3.W.shape}, which does not fit the "
        "flattened map: follow the side through conv2 (stride 2, no padding: every window "
        "lies inside the image) and the pooling (only whole 2x2 windows count), then "
        "multiply by the channels"
    )
    batch = rng.random((2, 1, S, S)).astype(np.float32)
    with dz.no_grad():
        mine = net(batch)
    assert mine.shape == (2, 10), (
        f"expected logits of shape (2, 10) for images of shape {batch.shape}, got {mine.shape}"
    )
    W1, b1, W2, b2, W3, b3 = (np.asarray(param.data, dtype=np.float64) for param in (
        net.conv1.W, net.conv1.b, net.conv2.W, net.conv2.b, net.fc3.W, net.fc3.b))
    want = features_numpy(batch, W1, b1, W2, b2) @ W3 + b3
    assert np.allclose(mine.data, want, atol=1e-4), (
        f"for {S}x{S} images your logits differ from the NumPy computation of the table, with "
        "your model's weights: check each row's settings (filters, stride, padding), where "
        "the ReLUs go, and that the pooling averages its windows"
    )

# the gradient through the whole network, on one 9x9 image, with float64 weights set here
small = TinyConvNet(image_size=9, num_classes=3)
image = rng.random((1, 1, 9, 9))
with dz.no_grad():
    small(image)  # the convolutions create their weights on the first call
for layer in (small.conv1, small.conv2, small.fc3):
    fan_in = layer.W.data[0].size if layer.W.ndim == 4 else layer.W.shape[0]
    layer.W.data = rng.normal(size=layer.W.shape) / np.sqrt(fan_in)
    layer.b.data = rng.normal(size=layer.b.shape) * 0.1
gradient_check(lambda v: small(v), image,
               hint="the gradient through TinyConvNet is wrong. Every operation of forward must "
                    "be a function of F or Fc on Variables; NumPy on .data cuts the graph")
print(f"self-check passed: TinyConvNet matches the NumPy network for 28x28, 9x9 and 16x16 "
      f"images (fc3 takes {TinyConvNet().fc3.W.shape[0]} inputs for 28x28), and its gradient "
      "is right")
