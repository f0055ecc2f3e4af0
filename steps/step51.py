# %% [markdown]
# # Step 51: `Dataset` and transforms
#
# In step 50 the spiral data was two arrays, `x` and `t`, and the training
# loop sliced them by hand. That works for 300 points. It stops working when
# the data does not fit the simple picture: 60,000 images that are stored as
# bytes but must reach the model as scaled floats, a data set that is read
# from disk, labels that need converting. Every training loop would repeat the
# same bookkeeping.
#
# Frameworks solve this with one small interface. A **dataset** is anything
# that answers two questions:
#
# * `len(dataset)`: how many examples are there?
# * `dataset[i]`: give me example `i`, as a pair `(x, t)`: input and label.
#
# Everything else (shuffling, batching, moving data to a GPU) can then be
# written once, against this interface, and works for every data set.

# %% [markdown]
# ### The package code of this step
#
# In this step `transforms` gains `Compose`, `Normalize`, `Flatten`, `AsType`, `ToFloat`,
# `ToInt`; `datasets` gains `Dataset`, `Spiral`, `DATA_EXIT_CODE`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# A transform is any callable applied to one example. `Compose` chains several, first to last, and
# checks that each is callable when the list is built, not at the first example. A transform
# class written without its parentheses (`T.ToFloat` for `T.ToFloat()`) is callable too, but
# calling it on an image builds a transform, and the error would come later from somewhere
# else: `_not_a_class` refuses it at once (a data set's `transform` too). The `__repr__`
# methods here make a whole pipeline print as the steps it applies.

# %%
#| export dezero_like/transforms.py
"""Transforms: small callables that prepare one example before it is batched.

A :class:`~dezero_like.datasets.Dataset` applies ``transform`` to each input and
``target_transform`` to each label when an example is read, so the stored data
stays untouched (uint8 MNIST images stay uint8 in memory) and the model gets
what it needs (flat float32 vectors scaled to [0, 1])::

    from dezero_like import transforms as T
    f = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
    f(image)   # (28, 28) uint8 -> (784,) float32 in [0, 1]

Every transform is an object with ``__call__(x)`` and a readable ``repr``, so a
pipeline prints as what it does.
"""

def _not_a_class(where, t):
    """Refuse a transform class given where its instance belongs (``T.ToFloat`` for
    ``T.ToFloat()``): called on an image, the class would build a transform, not an image."""
    if isinstance(t, type) and any("__call__" in vars(k) for k in t.__mro__[:-1]):
        raise TypeError(f"{where} got the class {t.__name__}, not a transform: write "
                        f"{t.__name__}() (with its arguments, if it takes any)")


class Compose:
    """Apply several transforms in order: ``Compose([f, g])(x) == g(f(x))``.

    An empty list gives the identity.
    """

    def __init__(self, transforms=()):
        if callable(transforms) and not isinstance(transforms, (list, tuple)):
            raise TypeError(f"Compose takes a list of transforms, got one "
                            f"({type(transforms).__name__}): Compose([...]), or use it alone")
        transforms = list(transforms)
        for t in transforms:
            if not callable(t):
                raise TypeError(f"Compose takes callables, got {type(t).__name__}: {t!r}")
            _not_a_class("Compose", t)
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        inner = ", ".join(repr(t) for t in self.transforms)
        return f"Compose([{inner}])"


# %% [markdown]
# `Normalize` computes `(x - mean) / std`. Statistics given as arrays, lists or NumPy scalars
# (`data.mean()` is an `np.float64`) are cast to the input's float dtype first, so float32 data
# stays float32. Integer input is normalised in float64: `uint8 - 128` would wrap around. A zero
# `std` is refused when the object is made. One value per channel, `Normalize([0.5, 0.4, 0.3],
# [0.2, 0.2, 0.2])`, applies to the first axis of a colour image `(C, H, W)`, as in torchvision
# and DeZero (NumPy alone would pair the three values with the last axis, the image's width);
# an image with its channels last, `(H, W, C)`, gets them on its last axis. On an example that
# is not an image the values pair with its last axis, as NumPy does (one mean per feature); when
# they cannot (three channel means for an image already flattened to 3072 values, a common slip
# of order in a `Compose`), the error says to normalise before `Flatten`. Statistics of data
# in [0, 1], such as torchvision's MNIST `Normalize(0.1307, 0.3081)`, applied to raw integer
# pixels (torchvision refuses integer input) give values up to 827: that gets a warning saying
# to scale to [0, 1] first. So do raw pixels already converted to float, as in
# `Compose([Flatten(), ToFloat(), Normalize(0.1307, 0.3081)])`: `ToFloat` changes the dtype and
# does not scale (PyTorch's `ToTensor` divides by 255). The warning comes when the largest value
# would land more than 100 standard deviations from the mean (827 for raw MNIST pixels; data
# normalised with its own statistics stays far below that), and, for float input, every value
# is a whole number. Only statistics within $[-1, 1]$ make `Normalize` read the example for
# this: its maximum, and then whether every value is whole (a transform runs per example, on
# the CPU).

# %%
#| export dezero_like/transforms.py
import warnings

import numpy as np


class Normalize:
    """``(x - mean) / std``; ``mean``/``std`` may be numbers or arrays.

    On a colour image (3-d), a list of one value per channel applies to the
    channel axis, first ``(C, H, W)`` or last ``(H, W, C)``; on other shapes the
    statistics broadcast as NumPy does.

    The result keeps a float input's dtype (float32 stays float32), whatever
    the statistics are given as; integer images are normalised in float64 (apply
    :class:`ToFloat` first for float32). ``Normalize(0, 255)`` maps pixels to [0, 1].
    """

    def __init__(self, mean=0.0, std=1.0):
        if np.any(np.asarray(std) == 0):
            raise ValueError("Normalize: std must not be zero")
        self.mean = mean
        self.std = std

    def __call__(self, x):
        mean, std = self.mean, self.std
        if isinstance(x, np.ndarray) and x.dtype.kind in "biuf" and _within_one(std) and \
                _within_one(mean) and _far_off(x, mean, std) and (x.dtype.kind != "f" or _whole(x)):
            _warn_unscaled(x, mean, std)  # statistics of [0, 1] data on raw pixels (as floats:
            # ToFloat does not scale)
        if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
            x = x.astype(np.float64)  # uint8 - 128 would wrap around
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            # statistics given as arrays, lists or NumPy scalars (data.mean() is np.float64)
            # are cast so that they do not promote the dtype
            if type(mean) not in (int, float):  # np.float64 is a float subclass: cast it
                mean = np.asarray(mean).astype(x.dtype, copy=False)
            if type(std) not in (int, float):
                std = np.asarray(std).astype(x.dtype, copy=False)
        return (x - _per_channel(mean, x)) / _per_channel(std, x)

    def __repr__(self):
        return f"Normalize(mean={self.mean!r}, std={self.std!r})"


def _within_one(stat):
    """True when every value of ``stat`` (a number, a list or an array) is in [-1, 1]."""
    if type(stat) in (int, float):  # the usual case, without NumPy's overhead
        return -1 <= stat <= 1
    return bool(np.all(np.abs(np.asarray(stat)) <= 1))


def _far_off(x, mean, std):
    """True when the largest value of ``x`` normalises to more than 100 standard deviations:
    827 for raw MNIST pixels with torchvision's (0.1307, 0.3081), about 13 for word counts
    normalised with their own statistics, which must not warn."""
    if not x.size:
        return False
    return (x.max() - np.min(mean)) / np.min(np.abs(std)) > 100


def _whole(x):
    """True when every value of the float array ``x`` is a whole number (raw pixels as floats)."""
    return bool(np.all(np.floor(x) == x))


def _warn_unscaled(x, mean, std):
    """Statistics of [0, 1] data (torchvision's MNIST 0.1307, 0.3081) on raw pixels: integers,
    or whole numbers as floats (ToFloat converts, it does not scale)."""
    data = f"integer data up to {x.max()}" if x.dtype.kind in "biu" else (
        f"float data of whole numbers up to {x.max()} (raw pixels? ToFloat converts, it does "
        "not scale)")
    warnings.warn(
        f"Normalize(mean={mean!r}, std={std!r}) got {data}, but its mean "
        "and std are those of data scaled to [0, 1] (torchvision's ToTensor divides by 255 "
        "first): the result is far off. Scale first: Compose([ToFloat(), Normalize(0, 255), "
        f"Normalize({mean!r}, {std!r})])", stacklevel=3)


def _per_channel(stat, x):
    """One value per channel, shaped to broadcast over ``(C, H, W)`` (or left for ``(H, W, C)``)."""
    ndim = getattr(x, "ndim", 0)
    if np.ndim(stat) != 1 or len(stat) == 1:
        return stat  # a number: NumPy's broadcasting
    if ndim != 3:  # one value per feature of the last axis, as NumPy pairs them; else say why
        if ndim and x.shape[-1] != len(stat):
            raise ValueError(
                f"Normalize: {len(stat)} values, one per channel, do not fit an example of "
                f"shape {x.shape}: they apply to the channel axis of an image, (C, H, W) or "
                "(H, W, C), and to the last axis of anything else. Put Normalize before Flatten "
                "(Compose([..., Normalize(mean, std), Flatten()])); a transform gets one "
                "example, not a batch. Or give one number for all the values")
        return stat
    channels = len(stat)
    if x.shape[0] == channels:  # channels first, as torchvision and DeZero have them
        return np.asarray(stat).reshape((channels,) + (1,) * (ndim - 1))
    if x.shape[-1] == channels:  # channels last: NumPy's broadcasting already pairs them
        return stat
    raise ValueError(
        f"Normalize: {channels} values per channel for an example of shape {x.shape}; "
        f"give one value, or one per channel of a (C, H, W) or (H, W, C) image"
    )


# %% [markdown]
# `Flatten` turns one image into a vector; it acts on a single example, so there is no batch
# axis to keep.

# %%
#| export dezero_like/transforms.py
class Flatten:
    """Reshape one example to a 1-D vector: (28, 28) -> (784,)."""

    def __call__(self, x):
        return x.reshape(-1)

    def __repr__(self):
        return "Flatten()"


# %% [markdown]
# `AsType` converts to a dtype; `ToFloat` and `ToInt` are the same class with a default dtype and a
# check that the dtype is a float or an integer kind, so a mistake shows when the pipeline is
# built. `ToFloat` only converts: pixels 0..255 stay 0.0..255.0, where PyTorch's `ToTensor` also
# divides by 255. `Normalize(0, 255)` after it gives [0, 1]. `ToInt` also looks at the values:
# NumPy's `astype` would cut a label of 1.9 to 1 and wrap -1 to 255 in uint8 without a word, so it
# refuses a fraction, a nan or a value out of its dtype's range.

# %%
#| export dezero_like/transforms.py
import numpy as np


class AsType:
    """Convert to ``dtype`` (float32 by default: the dtype models train in)."""

    def __init__(self, dtype=np.float32):
        self.dtype = np.dtype(dtype)

    def __call__(self, x):
        return np.asarray(x).astype(self.dtype, copy=False)

    def __repr__(self):
        return f"{type(self).__name__}({self.dtype.name})"


# %%
#| export dezero_like/transforms.py
import numpy as np


class ToFloat(AsType):
    """Convert to a float dtype, float32 by default.

    It does not scale: uint8 pixels become 0.0 .. 255.0 (PyTorch's ``ToTensor`` also divides
    by 255). Follow it with ``Normalize(0, 255)`` for [0, 1].
    """

    def __init__(self, dtype=np.float32):
        super().__init__(dtype)
        if self.dtype.kind != "f":
            raise TypeError(f"ToFloat needs a floating dtype, got {self.dtype}")


# %%
#| export dezero_like/transforms.py
import numpy as np


class ToInt(AsType):
    """Convert to an integer dtype (labels), ``int64`` by default."""

    def __init__(self, dtype=np.int64):
        super().__init__(dtype)
        if self.dtype.kind not in "iu":
            raise TypeError(f"ToInt needs an integer dtype, got {self.dtype}")

    def __call__(self, x):
        x = np.asarray(x)
        # NumPy's astype cuts 1.9 to 1 and wraps -1 to 255 in uint8, without a word
        if x.dtype.kind in "iuf" and x.size:
            if x.dtype.kind == "f" and not np.all(np.floor(x) == x):  # nan and inf fail too
                bad = x.flat[np.flatnonzero(~(np.floor(x) == x))[0]]
                raise ValueError(
                    f"ToInt got {bad}, which is not a whole number: {self.dtype} would hold "
                    f"{'nonsense' if not np.isfinite(bad) else int(bad)}. Class labels are "
                    "whole numbers; round them first (np.rint) if that is what they are, or keep "
                    "float targets (ToFloat) for a regression")
            info = np.iinfo(self.dtype)
            low, high = x.min(), x.max()
            # for floats against info.max + 1 (a power of two, exact in every float dtype):
            # 2.0**63 == float(2**63 - 1), so "> info.max" let it through to wrap to -2**63
            too_high = high >= float(info.max + 1) if x.dtype.kind == "f" else high > info.max
            if low < info.min or too_high:
                bad = low if low < info.min else high
                exact = int(bad) if x.dtype.kind in "iu" else float(bad)  # Python compares exactly
                fits = self.dtype != np.int64 and -2 ** 63 <= exact < 2 ** 63  # int64 would hold it
                raise ValueError(
                    f"ToInt({self.dtype.name}) got {bad}, outside {self.dtype.name}'s range "
                    f"[{info.min}, {info.max}]: it would wrap around to another number. "
                    + ("Use a wider dtype, e.g. ToInt() (int64)" if fits else
                       "Are these labels? Class labels are small whole numbers"))
        return x.astype(self.dtype, copy=False)


# %% [markdown]
# `_identity` is the default transform: a Dataset then always has a callable to apply, and
# `__getitem__` needs no `if`.

# %%
#| export dezero_like/datasets.py
def _identity(x):
    return x


# %% [markdown]
# `Dataset` is the base class. Its constructor calls `prepare`, which a subclass writes to fill
# `data` and `label`. `ds[i]` returns one `(x, t)` pair, with the transforms applied at that
# moment; the stored arrays never change. Only an integer index is accepted: batches are the job
# of a DataLoader. After `prepare`, data and label must have the same length: otherwise the extra
# labels would be dropped silently, or extra data fail with an IndexError in some later batch.

# %%
#| export dezero_like/datasets.py
import numpy as np
from dezero_like import transforms as _T
from dezero_like.datasets import _flag


class Dataset:
    """Base class: ``len(ds)`` examples, ``ds[i]`` gives ``(x, t)``.

    Subclasses fill ``self.data`` (and ``self.label``, or leave it ``None`` for
    unlabelled data) in :meth:`prepare`. ``transform`` is applied to each input
    and ``target_transform`` to each label when an example is read, never to
    the stored arrays.
    """

    # class-level defaults: a subclass whose __init__ forgets super().__init__() still works
    train = True
    data = None
    label = None
    transform = target_transform = staticmethod(_identity)

    def __init__(self, train=True, transform=None, target_transform=None):
        self.train = _flag("train", train)
        self.transform = _identity if transform is None else transform
        self.target_transform = _identity if target_transform is None else target_transform
        if not callable(self.transform) or not callable(self.target_transform):
            raise TypeError("transform and target_transform must be callables (or None)")
        _T._not_a_class("Dataset's transform", self.transform)
        _T._not_a_class("Dataset's target_transform", self.target_transform)
        self.data = None
        self.label = None
        self.prepare()
        labelled = self.data is not None and self.label is not None
        if labelled and len(self.data) != len(self.label):
            raise ValueError(
                f"{type(self).__name__}.prepare() set {len(self.data)} examples in data but "
                f"{len(self.label)} labels; data and label need one entry per example")

    def prepare(self):
        """Load or generate ``self.data`` and ``self.label`` (override this)."""

    def __getitem__(self, index):
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(
                f"{type(self).__name__} is indexed one example at a time with an int, got "
                f"{type(index).__name__}; use a DataLoader to get mini-batches"
            )
        if self.data is None:
            raise RuntimeError(f"{type(self).__name__}.prepare() did not set self.data")
        x = self.transform(self.data[index])
        if self.label is None:
            return x, None
        return x, self.target_transform(self.label[index])

    def __len__(self):
        if self.data is None:
            return 0
        return len(self.data)

    def __repr__(self):
        return f"{type(self).__name__}(train={self.train}, examples={len(self)})"


# %% [markdown]
# `Spiral` is `get_spiral` as a Dataset: its `prepare` is one line. It sets `self.seed` before
# calling the base constructor, because that constructor calls `prepare`.

# %%
#| export dezero_like/datasets.py
from dezero_like.datasets import get_spiral


class Spiral(Dataset):
    """The spiral data set as a :class:`Dataset`: 300 points, 3 classes (see :func:`get_spiral`)."""

    def __init__(self, train=True, transform=None, target_transform=None, seed=None):
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        self.data, self.label = get_spiral(self.train, self.seed)


# %% [markdown]
# `DATA_EXIT_CODE` (3) is the exit status a script ends with when its data cannot be had (step
# 53's MNIST, offline). The error that ends it comes from `dezero_like._fixable`, the course's
# own support code (no step writes it, docs/package-from-steps.md): it prints a one-paragraph
# message and exits with its `EXIT_CODE`, the same value.

# %%
#| export dezero_like/datasets.py
from dezero_like._fixable import EXIT_CODE


DATA_EXIT_CODE = EXIT_CODE  # exit status of a script stopped by MNISTUnavailableError


# %% [markdown]
# Importing `transforms` in `__init__` makes `dezero_like.transforms` available after
# `import dezero_like`; `Dataset` is imported there too, as the book's `from dezero import
# Dataset`.

# %%
#| export dezero_like/__init__.py
from dezero_like import transforms
from dezero_like.datasets import Dataset


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
from dezero_like import transforms as T
from dezero_like.datasets import Dataset
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(51)  # every file this step writes goes here

# %% [markdown]
# ## The spiral data as a `Dataset`
#
# `dz.datasets.Spiral` is the data of step 50, moved into the package: three
# spiral arms of 100 points each, the very points of step 50's `get_spiral`,
# which its `prepare()` calls. It is generated from a fixed seed, so every run (and every
# learner) sees exactly the same points; the training and test sets use
# different seeds.

# %%
train_set = dz.datasets.Spiral(train=True)
print("examples:", len(train_set))
x, t = train_set[0]
print("first example:", x, "class", t)
print("stored arrays:", train_set.data.shape, train_set.data.dtype, train_set.label.shape)
print("points per class:", np.bincount(train_set.label))

# %% [markdown]
# The arrays live in `train_set.data` and `train_set.label`, but a training loop
# should not reach into them: it asks for examples by index, so that it works
# the same way for any data set.

# %%
colors = ["tab:blue", "tab:orange", "tab:green"]
for c in range(3):
    pts = train_set.data[train_set.label == c]
    plt.scatter(pts[:, 0], pts[:, 1], s=12, color=colors[c], label=f"class {c}")
plt.gca().set_aspect("equal")
plt.legend()
plt.title("Spiral training set")
save_figure(plt.gcf(), out_dir / "spiral_train.png")
plt.show()

# %% [markdown]
# ## Writing your own dataset
#
# The base class `Dataset` does the indexing. A subclass only fills
# `self.data` and `self.label` in `prepare()`, which the constructor calls.
# Here is a data set for a regression problem: points of a noisy sine curve,
# with a seed so that it is reproducible.

# %%
class NoisySine(Dataset):
    """x in [0, 1), t = sin(2 pi x) + noise; 100 examples."""

    def prepare(self):
        rng = np.random.default_rng(0 if self.train else 1)
        x = rng.random((100, 1))
        self.data = x.astype(np.float32)
        self.label = (np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal((100, 1))).astype(
            np.float32
        )


sine = NoisySine()
x0, t0 = sine[0]
print("examples:", len(sine), "| the first: x =", x0, " t =", t0)

# %% [markdown]
# ## Transforms: preparing an example when it is read
#
# Data is often stored in one form and consumed in another. MNIST images, for
# instance, are 28×28 arrays of bytes (0–255); a multilayer perceptron wants a
# vector of 784 floats, ideally small ones, in $[0, 1]$. We could convert the
# whole data set up front, but that multiplies its memory by four (uint8 →
# float32) and fixes one choice for everyone.
#
# Instead, a dataset takes a **transform**: a function applied to each input
# when it is read (and a `target_transform` for labels). Transforms are small
# objects that do one thing, and `Compose` chains them, left to right:
#
# * `Flatten()`: (28, 28) → (784,);
# * `ToFloat()`: convert to float32, the dtype models train in;
# * `Normalize(mean, std)`: $(x - \mathrm{mean}) / \mathrm{std}$.
#
# Let us try the MNIST pipeline on a tiny fake "image" of bytes:

# %%
image = np.array([[0, 51], [204, 255]], dtype=np.uint8)
to_vector = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
print(to_vector)
v = to_vector(image)
print(v, v.dtype)

# %% [markdown]
# Order matters: `Normalize` before `ToFloat` would normalise bytes in float64,
# twice the memory of float32.
#
# On the spiral data, a common transform is **standardisation**: subtract the
# mean and divide by the standard deviation of each feature, so that all
# inputs are on the same scale. The statistics are computed once, from the
# training set, and the transform applies them to every example:

# %%
mean = train_set.data.mean(axis=0)
std = train_set.data.std(axis=0)
scaled = dz.datasets.Spiral(train=True, transform=T.Normalize(mean, std))
x, t = scaled[0]
print("raw:", train_set[0][0], " standardised:", x, x.dtype)
print("stored data unchanged:", np.array_equal(scaled.data, train_set.data))

# %% [markdown]
# ## Towards mini-batches
#
# Training uses mini-batches, not single examples. With the dataset interface
# a batch is: pick some indices, read those examples, stack them. Step 52 wraps
# exactly this in a `DataLoader`.

# %%
batch_index = np.arange(0, 5)
examples = [scaled[int(i)] for i in batch_index]
x_batch = np.stack([ex[0] for ex in examples])
t_batch = np.array([ex[1] for ex in examples])
print("batch:", x_batch.shape, t_batch)

# %% [markdown]
# ## Exercise
# 1. Write a transform `Clip01` (a class with `__call__`) that clips an array to
#    $[0, 1]$: values below 0 become 0, values above 1 become 1 (NumPy has a
#    function for this). Then build `pipeline`, one transform made of three,
#    in this order: convert to float32, normalize with mean 0.5 and standard
#    deviation 0.25, clip with `Clip01`. The transforms of this step have what
#    you need. The self-check applies it to a few values.
# 2. **Implement then test: mirrored copies, made when read.** Data
#    augmentation shows a model more examples than are stored: a photo mirrored
#    left to right still shows the same thing. `Mirrored` below is a `Dataset`
#    that stores N images of shape (H, W) but answers as a data set of 2N
#    examples: example `i` (for `i < N`) is stored image `i`, and example `N + i`
#    is stored image `i` mirrored left to right (its columns in reverse order),
#    with the same label. The mirrored copy is made when the example is read,
#    never stored. Its constructor and `prepare` are written; write `__len__`
#    and `__getitem__`, in the spirit of `Dataset.__getitem__`:
#    * `transform` prepares the image the example *is*: mirror first, then
#      transform. (With a `Flatten()` in the transform the other order reverses
#      the whole vector, which turns the image upside down as well.)
#    * The label goes through `target_transform`; a data set without labels
#      gives `None` as the label.
#    * An index from 0 to `len(ds) - 1` is an example; any other raises
#      `IndexError`, as a list does. A `for` loop over an object without
#      `__iter__` asks for index 0, 1, 2, ... until it gets an `IndexError`.
#
#    The self-check builds the expected examples with plain NumPy from small
#    random images and compares.

# %%
#| exercise
class Clip01:
    def __call__(self, x):
        raise NotImplementedError("Exercise (step 51): return x with its values brought into "
                                  "[0, 1]")


pipeline = ...  # one transform: to float32, then normalize, then clip (the order above)

# %%
#| solution
class Clip01:
    def __call__(self, x):
        return np.clip(x, 0.0, 1.0)


pipeline = T.Compose([T.ToFloat(), T.Normalize(0.5, 0.25), Clip01()])

# %%
#| check
assert callable(pipeline), (
    "pipeline should be a transform: chain the three with the transform that composes others"
)
out = pipeline(np.array([0.4, 0.5, 0.6, 0.9]))
assert out.dtype == np.float32, (
    f"the pipeline should produce float32, got {out.dtype}: convert to float32 first"
)
assert np.allclose(out, [0.0, 0.0, 0.4, 1.0]), (
    f"expected [0, 0, 0.4, 1], got {out}: normalize with mean 0.5 and std 0.25, then clip "
    "to [0, 1]"
)
print("self-check passed: float32, normalized, then clipped to [0, 1]")

# %%
#| exercise
class Mirrored(Dataset):
    """N stored images (H, W), read as 2N examples: each as stored, then mirrored."""

    def __init__(self, images, labels=None, transform=None, target_transform=None):
        self.images, self.labels = images, labels  # what prepare() stores
        super().__init__(True, transform, target_transform)

    def prepare(self):
        self.data, self.label = self.images, self.labels

    def __len__(self):
        raise NotImplementedError("Exercise (step 51): how many examples, mirrored ones included")

    def __getitem__(self, index):
        raise NotImplementedError(
            "Exercise (step 51): example index as a pair (input, label): stored image or its "
            "mirror, then the transforms; past the end, an IndexError"
        )

# %%
#| solution
class Mirrored(Dataset):
    """N stored images (H, W), read as 2N examples: each as stored, then mirrored."""

    def __init__(self, images, labels=None, transform=None, target_transform=None):
        self.images, self.labels = images, labels  # what prepare() stores
        super().__init__(True, transform, target_transform)

    def prepare(self):
        self.data, self.label = self.images, self.labels

    def __len__(self):
        return 2 * len(self.data)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} has {len(self)} examples, got index {index}")
        n = len(self.data)
        image = self.data[index % n]
        if index >= n:
            image = image[:, ::-1]  # the columns in reverse order: a view, nothing is stored
        x = self.transform(image)
        if self.label is None:
            return x, None
        return x, self.target_transform(self.label[index % n])

# %%
#| check
rng = np.random.default_rng(0)
images = rng.integers(0, 256, size=(3, 2, 4), dtype=np.uint8)  # 3 images, 2 rows, 4 columns
labels = np.array([7, 1, 4])
to_unit = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
labelled = Mirrored(images, labels, transform=to_unit, target_transform=lambda t: t + 10)
unlabelled = Mirrored(images)
try:
    n_examples = len(labelled)
    first = labelled[0]
except NotImplementedError as e:
    raise AssertionError(f"Mirrored is not written yet: {e}") from None
assert n_examples == 6, f"3 stored images make 6 examples, len gives {n_examples}"
for i in range(6):
    stored = images[i % 3]
    picture = np.fliplr(stored) if i >= 3 else stored  # the example, before any transform
    want = picture.ravel().astype(np.float32) / np.float32(255)
    x_got, t_got = labelled[i]
    assert isinstance(x_got, np.ndarray) and x_got.shape == want.shape, (
        f"example {i}: expected an array of shape {want.shape} (the transform flattens), got "
        f"{getattr(x_got, 'shape', type(x_got).__name__)}"
    )
    flat = stored.ravel().astype(np.float32) / np.float32(255)
    assert np.allclose(x_got, want), (
        f"example {i} is not the expected input: "
        + ("it is the whole flattened vector reversed: mirror the image before the transform"
           if i >= 3 and np.allclose(x_got, flat[::-1]) else
           f"it is stored image {i % 3} as stored: examples 3 to 5 are the mirrored copies"
           if i >= 3 and np.allclose(x_got, flat) else
           "it is upside down: mirroring left to right reverses the columns, not the rows"
           if i >= 3 and np.allclose(x_got, np.flipud(stored).ravel() / 255) else
           f"example {i} is stored image {i % 3}"
           + (", mirrored" if i >= 3 else "") + ", passed once through the data set's transform")
    )
    assert x_got.dtype == np.float32, (
        f"example {i} has dtype {x_got.dtype}: the transform's result is returned as it is"
    )
    assert t_got == labels[i % 3] + 10, (
        f"label of example {i}: expected {labels[i % 3] + 10}, got {t_got}: a mirrored copy "
        "keeps its image's label, passed once through target_transform"
    )
    x_raw, t_raw = unlabelled[i]
    assert t_raw is None, f"a data set without labels gives the label None, got {t_raw!r}"
    assert np.array_equal(x_raw, picture), (
        f"without a transform, example {i} is the image itself{', mirrored' if i >= 3 else ''}"
    )
for past_the_end in (6, 7):
    try:
        labelled[past_the_end]
    except IndexError:
        pass
    else:
        raise AssertionError(f"index {past_the_end} is past the end of 6 examples: raise "
                             "IndexError, as a list does")
assert len(list(labelled)) == 6, "a for loop over the data set should give its 6 examples"
assert labelled.data is images and len(labelled.data) == 3, (
    "the stored data should stay the 3 images: the mirrored copies are made when read"
)
print("self-check passed: Mirrored reads 2N examples, each mirrored before its transforms")
