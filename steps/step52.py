# %% [markdown]
# # Step 52: `DataLoader` and accuracy
#
# Step 51 gave us datasets: `len(ds)` and `ds[i]`. A training loop wants
# something else: **mini-batches**, a few dozen examples stacked into one array,
# in a fresh random order every epoch, each example used exactly once per
# epoch. That bookkeeping is the same for every data set, so it gets its own
# object, the `DataLoader`:
#
# ```python
# loader = DataLoader(train_set, batch_size=30)        # a training set: shuffled
# for epoch in range(max_epoch):
#     for x, t in loader:                             # one epoch
#         ...
# ```
#
# The second half of the step is about measuring. The loss tells the optimiser
# which way to go, but a person wants to know *how often the model is right*:
# the **accuracy**.

# %% [markdown]
# ### The package code of this step
#
# In this step `cuda` gains `require_gpu`, `as_cupy`; `dataloaders` gains `DataLoader`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# The `DataLoader` below can hand out batches already on a GPU (`gpu=True`; the GPU itself is
# step 54's subject), so `cuda.py` first gains the pieces that say what to do when no GPU can be
# used. `_gpu_help()` is the advice every such error ends with, so it is written once. It names
# the CuPy wheel to install: CuPy ships one wheel per CUDA major version (`cupy-cuda12x`,
# `cupy-cuda13x`), and a wheel finds the CUDA libraries of its own version or fails to import.
# The machine's libraries usually match its driver (a driver also runs older CUDA versions, but
# their libraries must then be installed too), and the driver says which CUDA it runs
# (`cuDriverGetVersion` in its library, read with `ctypes`), even before CuPy is installed.

# %%
#| export dezero_like/cuda.py
import ctypes
import sys


def _driver_cuda_major():
    """The CUDA major version that this machine's NVIDIA driver runs (13 for 13.0), or None
    when there is no driver (no NVIDIA GPU, or a runtime without one)."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            driver = ctypes.CDLL(name)
            version = ctypes.c_int(0)
            if driver.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value > 0:
                return version.value // 1000  # 13000 is CUDA 13.0
        except (OSError, AttributeError):  # no such library, or not NVIDIA's
            continue
    return None


def _installed_cupy_wheels():
    """The names of the CuPy distributions installed (``cupy-cuda12x``, ...), sorted. A
    distribution whose metadata cannot be read (a half-removed one) is passed over: this runs
    inside an error message, which must not fail in its turn."""
    from importlib import metadata

    names = set()
    try:
        for d in metadata.distributions():
            try:  # metadata is None without a METADATA file, a missing Name a KeyError
                name = d.metadata["Name"]
            except Exception:
                continue
            if isinstance(name, str):
                names.add(name.lower().replace("_", "-"))
    except Exception:  # an unreadable folder among the places Python imports from
        pass
    return sorted(n for n in names if n == "cupy" or n.startswith(("cupy-cuda", "cupy-rocm")))


def _gpu_help():
    """The advice that ends every 'no GPU' error: which CuPy wheel to install, and how."""
    major = _driver_cuda_major()
    if major is None:
        installed = _installed_cupy_wheels()
        if installed:  # CuPy is here (Colab's CPU runtime has it too): the GPU is what is missing
            return (f"CuPy ({', '.join(installed)}) is installed, but this machine has no NVIDIA "
                    "driver, so no GPU: run on a machine with an NVIDIA GPU. In Colab: Runtime > "
                    "Change runtime type > GPU (the runtime restarts; run the set-up cell again).")
        return ("Install CuPy for your CUDA version (pip install 'dezero_like[gpu]' for CUDA "
                "12, or e.g. pip install cupy-cuda13x) on a machine with an NVIDIA GPU. In "
                "Colab: Runtime > Change runtime type > GPU.")
    if major < 12:  # CuPy 14 (NumPy 2's promotion rules, pyproject.toml) runs CUDA 12 or 13
        return (f"This machine's NVIDIA driver runs CUDA {major}; CuPy 14, which this package "
                "needs, runs on CUDA 12 or newer: update the NVIDIA driver, then pip install "
                "'dezero_like[gpu]' (cupy-cuda12x).")
    wheel = f"cupy-cuda{major}x"
    installed = _installed_cupy_wheels()
    if installed == [wheel]:  # the right wheel: the cause is above (a library, or no device)
        return (f"{wheel} is the CuPy for this machine's CUDA {major} driver: does nvidia-smi "
                "list a GPU, and does CUDA_VISIBLE_DEVICES leave it visible?")
    # every CuPy wheel installs the same package folder, cupy/: uninstalling another wheel
    # removes files of the right one too, so all of them go before the right one comes back
    swap = f"pip uninstall -y {' '.join(installed)}, then " if installed else ""
    return (f"This machine's NVIDIA driver runs CUDA {major}, and CuPy's wheel for CUDA {major} "
            f"is {wheel}: {swap}pip install {wheel} (%pip in a notebook), and restart Python.")


# %% [markdown]
# `_cupy` returns the CuPy module only when it can actually run: it returns `None` when CuPy is not
# installed, when its CUDA libraries fail to load, or when it sees no device. Callers then test one
# value instead of catching errors themselves.
#
# Once it has found a GPU it keeps the module (`_gpu_cupy`): the number of devices a process sees
# is fixed when CUDA starts, so asking the driver again on every batch (`as_cupy` below runs once
# per batch) would only cost time. The answer is "this CuPy sees a GPU", not "which GPU": that
# stays CuPy's current device, as it was. A different `cupy` module put in `sys.modules` (a
# test's stand-in) is asked afresh.

# %%
#| export dezero_like/cuda.py
import sys

_gpu_cupy = None  # the CuPy module that found a GPU, once one did
_no_device_reason = None  # CuPy's words when it last could not count devices (no driver, ...)


def _cupy():
    """Import CuPy, or return None when it is not installed or sees no GPU."""
    global _gpu_cupy, _no_device_reason
    cupy = sys.modules.get("cupy")
    if cupy is not None and cupy is _gpu_cupy:  # found a GPU before: no import, no driver call
        return cupy
    try:
        import cupy
    except Exception:  # ImportError, or a CUDA library that fails to load
        return None
    try:
        _no_device_reason = None
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception as e:  # CUDA driver missing: CuPy imports but cannot run
        _no_device_reason = f"{type(e).__name__}: {e}"  # for require_gpu's message
        return None
    _gpu_cupy = cupy
    return cupy


# %% [markdown]
# `require_gpu` turns that `None` into an error that says which case happened (CuPy not
# installed, installed but failing to import, or imported but with no GPU, with CuPy's own
# reason when it gives one, such as a missing driver) and how to fix it.
# `as_cupy` copies an array, or a Variable's data, to the GPU through it.

# %%
#| export dezero_like/cuda.py
import importlib

import numpy as np


def require_gpu():
    """Return the cupy module, or raise a clear error saying how to get one."""
    cupy = _cupy()
    if cupy is None:
        raise RuntimeError(f"A GPU was requested but {_why_no_cupy()}. {_gpu_help()}")
    return cupy


def _why_no_cupy():
    """Why ``_cupy()`` found nothing: not installed, failing to import, or no device."""
    try:
        importlib.import_module("cupy")
    except ModuleNotFoundError as e:
        if e.name == "cupy":
            return "CuPy is not installed"
        return f"CuPy is installed but does not import ({e})"
    except Exception as e:  # a CUDA library that fails to load
        return f"CuPy is installed but does not import ({type(e).__name__}: {e})"
    if _no_device_reason:  # it imports, and _cupy() kept CuPy's words on why it saw no device
        return f"no CUDA GPU is visible (CuPy says {_no_device_reason})"  # (no driver, ...)
    return "no CUDA GPU is visible"


def as_cupy(x):
    """A CuPy array on the current GPU; a clear error when there is none."""
    if type(x) is not np.ndarray:  # a NumPy batch, on every training step, needs no import
        from dezero_like.core import Variable

        if isinstance(x, Variable):
            x = x.data
    cupy = sys.modules.get("cupy")
    if cupy is None or cupy is not _gpu_cupy:  # no GPU found yet: look, or say why not
        cupy = require_gpu()
    return cupy.asarray(x)


# %% [markdown]
# `DataLoader` cuts a Dataset into mini-batches. `reset` draws the order of one epoch. Each
# `for` loop is exactly one epoch: `__iter__` returns a new generator, so two loops over one
# loader keep their own places: a loop nested inside another starts an epoch of its own with a
# new order, as in PyTorch, while zipped loops read the same order here (in PyTorch each
# `iter()` of a shuffling loader draws its own order). The next order
# is drawn when an epoch ends, and when a loop starts after one was left half way (the book's
# loader would resume the unfinished epoch); `np.random.seed` makes the batches repeatable.
# The book's `next(loader)` still works: `__next__` keeps the place in the loader itself and
# stops after `max_iter` batches, the last one smaller when the batch size does not divide the
# data. A subclass that overrides `__next__`, as the book's `SeqDataLoader` does, is iterated
# through it. `_collate` reads the examples one by one (so the transforms run) and `_stack` stacks
# them into arrays. A transform that returns the wrong thing is caught there, with the dataset,
# the example and the transform named: examples of different shapes, and values that are not
# numbers (a string or a date would stack into an array too, one that no layer can use).
#
# `iter(loader)` is one epoch, and like every Python iterator it is spent once read to its end.
# Kept in a variable and looped over again (`it = iter(loader)` before the epoch loop, `for x, t
# in it:` inside), it gives no batch: every epoch after the first trains on nothing, and its
# summed loss reads 0. So the epoch is a small iterator, `_Epoch`, that notes when it ran out
# and warns when a loop starts on it again.
#
# `shuffle` is left out most of the time. Its default, `None`, follows the data set: a training
# set (`train=True`, the default of every `Dataset`) is shuffled, as in the book, and a test set
# (`train=False`) is read in order, as PyTorch's `DataLoader` always is unless asked. Predictions
# collected over a test set then line up with `test_set.label`; shuffled, they would be compared
# with the labels of other examples, an accuracy near chance with no error. A data set without a
# `train` attribute is shuffled.
#
# The arguments are checked when the loader is made: `shuffle` and `gpu` must be `True` or
# `False` (or `None` for `shuffle`; the string `"no"` is true), and `seed` an int >= 0 (or what
# `np.random.default_rng` takes: a `Generator`, a `SeedSequence`), not `1.5`. With
# `shuffle=False` the order is always the same and a `seed` has nothing to do. The number of
# batches is counted from `batch_size` when the loader is made, so `batch_size` cannot be
# changed afterwards (a loader of 300 examples made with `batch_size=30` counts 10 batches;
# `loader.batch_size = 10` would then have read 100 of them an epoch): a new batch size is a new
# loader. So is a dataset that changed its length: examples appended to it after the loader was
# made would never be read (its batches and its order were counted from the old length), and
# examples removed would leave positions in the order that no longer exist. Each epoch starts by
# comparing `len(dataset)` with the count, and refuses a change with that advice.

# %%
#| export dezero_like/dataloaders.py
"""DataLoader: mini-batches from a Dataset, one epoch per ``for`` loop.

::

    loader = DataLoader(train_set, batch_size=100)
    for epoch in range(5):
        for x, t in loader:      # x: (100, 784) array, t: (100,) labels
            ...

Each ``for`` starts a new epoch (reshuffled for a training set). Every
example is used exactly once per epoch: the last batch is smaller when the
batch size does not divide the data set. Batches are plain arrays, NumPy or,
after :meth:`DataLoader.to_gpu`, CuPy.
"""

import math
import warnings

import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable
from dezero_like.datasets import _flag


def _is_seed(seed):
    """Whether ``np.random.default_rng`` takes ``seed`` (not a float such as 1.5, nor a bool)."""
    def whole(s):  # an int >= 0
        return isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) and s >= 0

    if isinstance(seed, (list, tuple)):
        return len(seed) > 0 and all(whole(s) for s in seed)
    return seed is None or whole(seed) or isinstance(
        seed, (np.random.Generator, np.random.SeedSequence, np.random.BitGenerator))


def _refuse_item(dataset, j, ex):
    """Say that ``dataset[j]``, ``ex``, is not an ``(x, t)`` pair, and what to return."""
    name = type(dataset).__name__
    if not isinstance(ex, (tuple, list)):
        # a bare array's rows would be split into x = row[0] and t = row[1] without error
        raise TypeError(
            f"DataLoader needs a dataset whose items are (x, t) pairs, but {name}[{j}] is a "
            f"{type(ex).__name__}; wrap arrays in a Dataset, e.g. list(zip(x, t)), or a Dataset "
            "subclass")
    if len(ex) > 2:
        what = f"the {len(ex) - 2} after them would be dropped"
        fix = ("put the extra values into x, or keep them in a second dataset: a batch is one "
               "input array and one label array")
    else:
        what = "there is no label to read"
        fix = "an example without a label is (x, None), as an unlabelled Dataset gives"
    raise ValueError(
        f"DataLoader needs (x, t) pairs, but {name}[{j}] is a {type(ex).__name__} of "
        f"{len(ex)} value{'s' if len(ex) != 1 else ''}: item[0] is read as the input and "
        f"item[1] as the label, so {what}; {fix}")


def _refuse_resized(loader, error=None):
    """Say that ``loader.dataset`` changed its length since the loader counted it, and what to
    do: the loader's batches and order come from the length it had then."""
    now, then = len(loader.dataset), loader.data_size
    effect = (f"the {now - then} added would never be read" if now > then else
              f"its order still holds positions up to {then - 1}, which the dataset no longer has")
    raise ValueError(
        f"DataLoader: the dataset has {now} examples now, and had {then} when the loader was made; "
        f"the loader counted its {loader.max_iter} batches and draws its order from those {then}, "
        f"so {effect}. Make the loader again after changing the dataset: "
        f"DataLoader(dataset, {loader.batch_size}, shuffle={loader.shuffle}"
        f"{', gpu=True' if loader.gpu else ''})") from error


class _Epoch:
    """One epoch of a loader, as ``iter(loader)`` gives it: its batches, then the end.

    Read to its end it is spent, as every Python iterator is: a loop that starts on it again
    gets no batch. ``it = iter(loader)`` kept for an epoch loop would train on nothing after
    the first epoch, so a loop started on a spent epoch warns.
    """

    __slots__ = ("_batches", "_spent")

    def __init__(self, batches):
        self._batches = batches
        self._spent = False

    def __iter__(self):
        if self._spent:
            warnings.warn(
                "this loop runs over an epoch of a DataLoader that was read to its end already "
                "(it = iter(loader), used again): it gets no batch, so nothing trains and the "
                "epoch's loss adds up to 0. Loop over the loader itself, for x, t in loader: "
                "each such loop is a new epoch (with a new order when shuffling); or call "
                "iter(loader) again for each epoch", RuntimeWarning, stacklevel=2)
        return self

    def __next__(self):
        try:
            return next(self._batches)
        except StopIteration:
            self._spent = True
            raise


class DataLoader:
    """Iterate over ``dataset`` in mini-batches of ``batch_size`` examples.

    ``shuffle=None`` (the default) shuffles a training set (``dataset.train`` true, or no
    ``train`` attribute) and reads a test set in order, so that predictions line up with
    ``test_set.label``. ``shuffle=True`` draws a new order at the start of every epoch, from
    ``np.random`` (so ``np.random.seed`` makes runs repeatable) or from its own
    generator when ``seed`` (an int >= 0, or a ``Generator``/``SeedSequence``) is given; with
    ``shuffle=False`` the order is always 0, 1, 2, ... and ``seed`` is not used. ``gpu=True`` (or
    :meth:`to_gpu`) returns CuPy arrays. ``len(loader)`` is the number of
    batches per epoch. Unlabelled datasets give ``t = None``.
    """

    def __init__(self, dataset, batch_size, shuffle=None, gpu=False, seed=None, **torch_args):
        if torch_args:  # PyTorch's DataLoader options: say what they are here
            meaning = {"num_workers": "batches are made in this process; leave it out",
                       "drop_last": "the last, smaller batch is kept; skip it in your loop "
                                    "(if len(x) < batch_size: continue)",
                       "pin_memory": "gpu=True hands out batches already on the GPU",
                       "sampler": "shuffle= and seed= choose the order"}
            name = next(iter(torch_args))
            if name not in meaning:
                raise TypeError(f"DataLoader got an unexpected argument {name}=; its arguments "
                                "are dataset, batch_size, shuffle, gpu and seed")
            raise TypeError(f"DataLoader got PyTorch's {name}=, which it does not take: "
                            f"{meaning[name]}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        shuffle, gpu = _flag("shuffle", shuffle, none=True), _flag("gpu", gpu)
        if shuffle is None:  # a training set is shuffled, a test set read in order
            train = getattr(dataset, "train", True)
            shuffle = bool(train) if isinstance(train, (bool, np.bool_)) else True
        if not _is_seed(seed):
            raise TypeError("seed must be None, an int >= 0 (or a list of them), or a NumPy "
                            f"Generator or SeedSequence, got {seed!r}")
        if isinstance(dataset, dict):  # ds[0] would look up the key 0
            raise TypeError("DataLoader reads examples by position (ds[0], ds[1], ...), and got "
                            "a dict; for arrays kept by name use list(zip(d['x'], d['t']))")
        if len(dataset) == 0:
            why = (f": {type(dataset).__name__}.prepare() did not set self.data"
                   if getattr(dataset, "data", ()) is None else "")
            raise ValueError("DataLoader got an empty dataset" + why)
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / self.batch_size)
        self._rng = None if seed is None else np.random.default_rng(seed)
        if gpu:  # checked now, not at the first batch (step 54's to_gpu does the same)
            cuda.require_gpu()
        self.gpu = gpu
        self.reset()

    @property
    def batch_size(self):
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value):
        if "_batch_size" in self.__dict__:  # set once, by __init__
            raise AttributeError(
                f"batch_size is fixed when the loader is made: its {len(self)} batches per epoch "
                f"are counted from it. Make a new loader: DataLoader(dataset, {value!r})")
        self._batch_size = value

    def reset(self):
        """Start a new epoch: iteration 0, and a fresh order when shuffling."""
        self.iteration = 0
        self._stale = False
        if not self.shuffle:
            self.index = np.arange(self.data_size)
        elif self._rng is None:
            self.index = np.random.permutation(self.data_size)
        else:
            self.index = self._rng.permutation(self.data_size)

    def __len__(self):
        return self.max_iter

    _stale = False  # a loop left the current epoch half read

    def __iter__(self):
        """One epoch, as a new iterator: two loops over one loader keep their own places."""
        if len(self.dataset) != self.data_size:  # examples added or removed since it was made
            _refuse_resized(self)
        if self.iteration != 0 or self._stale:  # an epoch was left half read: a new one
            self.reset()
            self._stale = False  # here too: a subclass's reset() may not clear it
        if type(self).__next__ is not DataLoader.__next__:
            return self  # a subclass written the book's way, with its own __next__
        return _Epoch(self._epoch(self.index))

    def _epoch(self, index):
        for i in range(self.max_iter):
            self._stale = True
            yield self._collate(self._batch_index(i, index))
        self.reset()  # the epoch is complete: the next order, drawn when the book draws it
        self._stale = False

    def __next__(self):
        # the book's way, next(loader): the loader itself keeps the place
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        if self.iteration == 0 and len(self.dataset) != self.data_size:  # a new epoch: resized?
            _refuse_resized(self)
        batch = self._collate(self._batch_index())
        self.iteration += 1
        return batch

    def _batch_index(self, i=None, index=None):
        """Which examples make up batch ``i`` of the order ``index`` (default: the current)."""
        i = self.iteration if i is None else i
        index = self.index if index is None else index
        return index[i * self.batch_size:(i + 1) * self.batch_size]

    def _collate(self, batch_index):
        """Stack the examples at ``batch_index`` into arrays ``(x, t)`` on the loader's device."""
        indices = [int(j) for j in batch_index]
        try:
            examples = [self.dataset[j] for j in indices]
        except IndexError as error:  # examples removed in the middle of an epoch?
            if len(self.dataset) != self.data_size:
                _refuse_resized(self, error)
            raise
        first = examples[0]
        # every item, not only the first: (x, t, w) would lose w, (x,) fail with an IndexError
        bad = next(((j, ex) for j, ex in zip(indices, examples)
                    if not isinstance(ex, (tuple, list)) or len(ex) != 2), None)
        if bad is not None:
            _refuse_item(self.dataset, *bad)
        if isinstance(first[0], Variable) or isinstance(first[1], Variable):
            raise TypeError("DataLoader: the dataset (or its transform) returned a Variable; "
                            "examples must be NumPy arrays or numbers (return v.data)")
        x = self._stack([ex[0] for ex in examples], indices, "input")
        labels = [ex[1] for ex in examples]
        unlabelled = [j for j, label in zip(indices, labels) if label is None]
        if unlabelled and len(unlabelled) < len(labels):  # None only for an unlabelled dataset
            raise ValueError(
                f"DataLoader: example {unlabelled[0]} has no label (None) but example "
                f"{next(j for j, label in zip(indices, labels) if label is not None)} has one; "
                "a dataset is labelled throughout or not at all")
        t = None if unlabelled else self._stack(labels, indices, "label")
        if self.gpu:
            x = cuda.as_cupy(x)
            t = None if t is None else cuda.as_cupy(t)
        return x, t

    def _stack(self, values, indices, what):
        """One array of the inputs (or labels) ``values`` of the examples ``indices``.

        Refuses, naming the dataset, the example and the transform to look at, values of
        different shapes and values that are not numbers (None, strings, dates, dicts...).
        The names are worked out only when something is wrong: this runs on every batch.
        """
        try:
            batch = np.stack([np.asarray(v) for v in values])
        except ValueError as error:  # a ragged list ([[1, 2], [3]]), or two shapes
            batch, failure = None, error
        if batch is not None and batch.dtype.kind in "biufc":
            return batch
        name = type(self.dataset).__name__
        transform = "transform" if what == "input" else "target_transform"
        hint = (f"a dataset and its {transform} must return NumPy arrays or numbers "
                "(bool, int, float or complex)")
        arrays = []
        for j, value in zip(indices, values):
            try:
                arrays.append(np.asarray(value))
            except ValueError as e:
                raise ValueError(f"DataLoader: the {what} of {name}[{j}] is not an array of "
                                 f"one shape ({e}); {hint}") from None
        if batch is None:
            j, a = next(((j, a) for j, a in zip(indices, arrays) if a.shape != arrays[0].shape),
                        (indices[0], arrays[0]))
            raise ValueError(
                f"DataLoader: the {what}s of {name} have different shapes: {name}"
                f"[{indices[0]}] has {arrays[0].shape}, {name}[{j}] has {a.shape}, and a batch "
                f"stacks them into one array; make the dataset (or its {transform}) return one "
                f"shape for every example, e.g. by cropping, padding or resizing ({failure})"
            ) from None
        j, value, a = next((j, v, a) for j, v, a in zip(indices, values, arrays)
                           if a.dtype.kind not in "biufc")  # None, a string, a date, a dict...
        advice = ("; give classes as int labels (e.g. classes.index(name))"
                  if what == "label" and a.dtype.kind in "US" else "")
        raise TypeError(
            f"DataLoader: the dataset's {what}s do not stack into a numeric array "
            f"({name}[{j}] is a {type(value).__name__}, dtype {a.dtype}); {hint}{advice}")

    def next(self):
        """The next batch (the book's spelling of ``next(loader)``)."""
        return self.__next__()

    def __repr__(self):
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, batches={self.max_iter})")


# %% [markdown]
# `DataLoader` is imported into the package's namespace, so `dezero_like.DataLoader` works.

# %%
#| export dezero_like/__init__.py
from dezero_like.dataloaders import DataLoader


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import DataLoader, optimizers
from dezero_like.datasets import Dataset
from dezero_like.models import MLP
from dezero_like.plot import output_dir, plot_curves

out_dir = output_dir(52)  # every file this step writes goes here

# %% [markdown]
# ## What a `DataLoader` does
#
# A tiny dataset whose inputs show their own index makes the batches easy to
# read. Ten examples in batches of four give three batches: the last one holds
# the two examples left over. Nothing is dropped, so every example counts once
# per epoch.

# %%
class Numbers(Dataset):
    """x_i = [i], t_i = i % 2 (even or odd)."""

    def prepare(self):
        self.data = np.arange(10, dtype=np.float32).reshape(10, 1)
        self.label = np.arange(10) % 2


loader = DataLoader(Numbers(), batch_size=4, shuffle=False)
print("batches per epoch:", len(loader))
for x, t in loader:
    print("x", x.ravel(), " t", t)

# %% [markdown]
# `Numbers()` is a training set (`train=True`, the default), so a loader left
# at `shuffle=None` shuffles it, as `shuffle=True` would: each epoch draws a new
# order (from `np.random`, so `np.random.seed` makes runs repeatable). A
# different order every epoch matters: with a fixed order, the same examples
# would always share a batch and push the parameters in the same sequence of
# directions.

# %%
np.random.seed(0)
loader = DataLoader(Numbers(), batch_size=4)
for epoch in range(2):
    print(f"epoch {epoch}:", [x.ravel().astype(int).tolist() for x, t in loader])

# %% [markdown]
# ## Accuracy
#
# For a classifier with $C$ classes, the model's output for one example is a
# row of $C$ scores. Its prediction is the class with the largest score, the
# `argmax` of the row; the accuracy is the fraction of predictions equal to the
# label:
#
# $$\mathrm{accuracy} = \frac{1}{N} \sum_{i=1}^{N} [\,\arg\max_c y_{ic} = t_i\,].$$
#
# Unlike the loss, accuracy has no useful gradient (it jumps from one value to
# the next), so it is for watching training, not for driving it.
# `F.accuracy` computes it; its result is a Variable outside any graph.

# %%
scores = np.array([[0.2, 0.8, 0.0],   # predicts 1
                   [0.1, 0.4, 0.5],   # predicts 2
                   [0.9, 0.1, 0.0],   # predicts 0
                   [0.3, 0.2, 0.5]],  # predicts 2
                  dtype=np.float32)
labels = np.array([1, 2, 1, 0])
print("accuracy:", float(F.accuracy(scores, labels).data))

# %% [markdown]
# ## Training on the spiral with both
#
# Now the spiral classifier of step 50, written with datasets and loaders: a
# training loader that shuffles and a test loader that does not need to. After
# each epoch we evaluate on the **test set**, points the model never trained
# on, under `dz.no_grad()` (no graph is needed to evaluate).
#
# When averaging a metric over batches, weight each batch by its size: the last
# batch may be smaller, and a plain mean of batch accuracies would count its
# examples more than the others.

# %%
np.random.seed(0)
max_epoch, batch_size, hidden_size, lr = 300, 30, 10, 1.0

train_set = dz.datasets.Spiral(train=True)
test_set = dz.datasets.Spiral(train=False)
train_loader = DataLoader(train_set, batch_size)
test_loader = DataLoader(test_set, batch_size, shuffle=False)

model = MLP((hidden_size, 3))
optimizer = optimizers.SGD(lr).setup(model)

history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []}
for epoch in range(max_epoch):
    sum_loss = sum_acc = 0.0
    for x, t in train_loader:
        y = model(x)
        loss = F.softmax_cross_entropy(y, t)
        acc = F.accuracy(y, t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        sum_loss += float(loss.data) * len(t)
        sum_acc += float(acc.data) * len(t)
    history["train_loss"].append(sum_loss / len(train_set))
    history["train_acc"].append(sum_acc / len(train_set))

    sum_loss = sum_acc = 0.0
    with dz.no_grad():
        for x, t in test_loader:
            y = model(x)
            sum_loss += float(F.softmax_cross_entropy(y, t).data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)
    history["test_loss"].append(sum_loss / len(test_set))
    history["test_acc"].append(sum_acc / len(test_set))
    if (epoch + 1) % 50 == 0:
        print(f"epoch {epoch + 1:3d}  train loss {history['train_loss'][-1]:.4f} "
              f"acc {history['train_acc'][-1]:.3f}  |  test loss {history['test_loss'][-1]:.4f} "
              f"acc {history['test_acc'][-1]:.3f}")

# %% [markdown]
# Chance level is 1/3. The curves show loss falling and accuracy rising, and
# the test curve tracking the training curve closely: this small model has not
# memorised its training points, so it does as well on new points drawn from
# the same spirals. A gap opening between the two curves would be the sign of
# overfitting (step 56).

# %%
fig = plot_curves({"loss": {key: history[f"{key}_loss"] for key in ("train", "test")},
                   "accuracy": {key: history[f"{key}_acc"] for key in ("train", "test")}},
                  to_file=out_dir / "curves.png")

# %% [markdown]
# ## Exercise
# 1. Write `evaluate(model, loader)`, which returns the accuracy over *all*
#    examples of the loader as a Python float, weighting every batch by its size
#    and building no graph. The self-check compares it with the accuracy
#    computed on the whole test set at once, using a loader whose last batch is
#    smaller (batch size 7 does not divide 300).
# 2. **Implement then test: collating a batch.** Write
#    `collate(dataset, batch_index)`, what the loader does with the indices of
#    one batch: read those examples by indexing the data set (so that its
#    transforms apply) and return the pair `(x, t)`, the inputs as one array
#    of shape (batch, ...) and the labels as one array of shape (batch,).
#    Step 51 built one such batch by hand ("Towards mini-batches"). The
#    self-check compares it with the batches of a `DataLoader` that does not
#    shuffle, on a data set with transforms.

# %%
#| exercise
def evaluate(model, loader):
    raise NotImplementedError(
        "Exercise (step 52): with no graph recorded, the batch accuracies averaged with each "
        "batch weighted by its size"
    )

# %%
#| solution
def evaluate(model, loader):
    correct = 0.0
    count = 0
    with dz.no_grad():
        for x, t in loader:
            correct += float(F.accuracy(model(x), t).data) * len(t)
            count += len(t)
    return correct / count

# %%
#| check
with dz.no_grad():
    whole = float(F.accuracy(model(test_set.data), test_set.label).data)
graph_built = []  # for each call of the model: did it record a graph?


def watched_model(x):
    y = model(x)
    graph_built.append(y.creator is not None)
    return y


got = evaluate(watched_model, DataLoader(test_set, batch_size=7))
assert isinstance(got, float), f"evaluate should return a Python float, got {type(got).__name__}"
assert abs(got - whole) < 1e-6, (
    f"expected {whole:.6f} (the whole test set at once), got {got:.6f}: weight each batch's "
    "accuracy by its size, the last batch has only 300 % 7 = 6 examples"
)
assert graph_built and not any(graph_built), (
    f"the model recorded a graph in {sum(graph_built)} of {len(graph_built)} batches: "
    "evaluation needs no gradient, so call the model with backprop switched off (step 19)"
)
print(f"test accuracy {got:.3f}")
print("self-check passed: evaluate weights every batch by its size")

# %%
#| exercise
def collate(dataset, batch_index):
    raise NotImplementedError(
        "Exercise (step 52): read the examples of batch_index from the data set and return "
        "(x, t), the inputs and the labels each as one array"
    )

# %%
#| solution
def collate(dataset, batch_index):
    examples = [dataset[int(j)] for j in batch_index]
    x = np.stack([ex[0] for ex in examples])
    t = np.stack([ex[1] for ex in examples])
    return x, t

# %%
#| check
rng = np.random.default_rng(0)
spiral = dz.datasets.Spiral(transform=lambda v: v * 2.0, target_transform=lambda t: t + 1)
plain = DataLoader(spiral, batch_size=8, shuffle=False)
for k, (x_ref, t_ref) in enumerate(plain):
    if k == 3:
        break
    wanted = np.arange(8 * k, 8 * (k + 1))
    x_mine, t_mine = collate(spiral, wanted)
    assert isinstance(x_mine, np.ndarray) and isinstance(t_mine, np.ndarray), (
        f"collate should return two NumPy arrays, got {type(x_mine).__name__} and "
        f"{type(t_mine).__name__}: make one array of the inputs and one of the labels"
    )
    swapped = np.shape(x_mine) == t_ref.shape and np.shape(t_mine) == x_ref.shape
    assert not swapped, (
        f"batch {k}: the inputs and the labels look swapped: the first array has the labels' "
        f"shape {t_ref.shape} and the second the inputs' {x_ref.shape}; return the inputs "
        "first and the labels second, in the loader's order"
    )
    assert np.shape(x_mine) == x_ref.shape, (
        f"batch {k}: x should have shape {x_ref.shape}, got {np.shape(x_mine)}: stack the inputs"
    )
    untransformed = np.shape(x_mine) == spiral.data[wanted].shape and np.allclose(
        x_mine, spiral.data[wanted])
    assert not untransformed, (
        f"batch {k} holds the raw inputs: read dataset[j] (so the transforms apply), "
        "not dataset.data[j]"
    )
    assert np.allclose(x_mine, x_ref) and np.array_equal(t_mine, t_ref), (
        f"batch {k} differs from the loader's: read the examples whose indices are in "
        "batch_index, in its order"
    )
some = rng.permutation(len(spiral))[:5]
x_some, t_some = collate(spiral, some)
assert np.array_equal(t_some, spiral.label[some] + 1), "the labels must follow batch_index"
print("self-check passed: collate builds the loader's batches")
