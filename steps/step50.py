# %% [markdown]
# # Step 50: Multi-class classification — the spiral data set
#
# Everything of Stage 4 comes together: an `MLP` produces 3 logits per point,
# `softmax_cross_entropy` scores them against integer labels, an optimizer
# updates the weights, and we train in **mini-batches**, the way every real
# training loop works.
#
# The data: three arms of a spiral in the plane, one arm per class
# (`dz.datasets.get_spiral`, which step 51 wraps as a `Dataset`). No straight
# line separates them, so a linear classifier (straight boundaries between the
# classes) must misclassify a large part of every arm; a network with one hidden
# layer can bend its decision boundaries around the arms.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `accuracy`; `datasets` gains `get_spiral`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `accuracy` compares the index of the largest score in each row with the label and returns the
# fraction that match. It works on the raw arrays and returns a Variable with
# `requires_grad=False`: an argmax has no useful gradient, so no graph is built. The result takes
# the float dtype of `y` (float64 when `y` is not a float array).

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable, _on_two_devices


def accuracy(y, t):
    """Fraction of rows of ``y`` (scores, (N, C)) whose argmax equals the label in ``t``.

    Returns a Variable that is not part of any graph (accuracy has no gradient).
    """
    y_data = y.data if isinstance(y, Variable) else y
    t_data = t.data if isinstance(t, Variable) else t
    xp = cuda.get_array_module(y_data)
    if isinstance(t_data, (list, tuple)):
        t_data = xp.asarray(t_data)
    apart = _on_two_devices(y_data, t_data)
    if apart:  # an evaluation loop that moved x but took t from the dataset
        raise TypeError(
            f"accuracy: the scores are on the {apart[0]} but the labels are on the {apart[1]}; "
            "put both on one device (cuda.as_cupy(t) or cuda.as_numpy(t))")
    if y_data.ndim != 2 or y_data.shape[1] < 2:
        why = ("; with one output column the argmax is always 0. For one score per row (a "
               "binary classifier) compare ((y.data > 0) == t).mean() instead"
               if y_data.ndim == 2 else "")
        raise ValueError(f"accuracy expects scores of shape (N, C) with C >= 2 classes, got y "
                         f"of shape {tuple(y_data.shape)}{why}")
    if t_data.dtype.kind not in "biuf":  # strings never equal an argmax: an accuracy of 0
        raise TypeError(
            f"accuracy expects class indices as numbers, got labels of dtype {t_data.dtype}; "
            "convert them first, e.g. t.astype(int), or map names to indices")
    if t_data.size != len(y_data):
        raise ValueError(
            f"accuracy expects one label per row of y {tuple(y_data.shape)}, got t of shape "
            f"{tuple(t_data.shape)}; pass class indices, not one-hot vectors (t.argmax(axis=1))")
    pred = y_data.argmax(axis=1).reshape(t_data.shape)
    acc = (pred == t_data).mean()
    dtype = y_data.dtype if y_data.dtype.kind == "f" else np.float64
    return Variable(xp.asarray(acc, dtype=dtype), requires_grad=False)


# %% [markdown]
# The new `datasets` module starts with `get_spiral`. It draws from its own generator,
# `np.random.default_rng(seed)`, so the points depend only on the seed and the global NumPy
# random state is left alone; training and test sets differ only by their default seeds. The
# points are shuffled at the end, so the classes are mixed in any first slice.

# %%
#| export dezero_like/datasets.py
"""Datasets: indexable collections of (input, label) examples.

A :class:`Dataset` holds arrays ``data`` and ``label`` (filled by ``prepare``)
and returns one example at a time, ``dataset[i] == (transform(data[i]),
target_transform(label[i]))``. A :class:`~dezero_like.dataloaders.DataLoader`
turns examples into mini-batches.

Two data sets come with the package:

* :class:`Spiral` (and :func:`get_spiral`): 300 points on three interleaved
  arms, generated from a fixed seed, for classifiers you can plot.
* :class:`MNIST`: 28x28 handwritten digits. The four official files are
  downloaded once (from a list of mirrors, tried in turn), checked against
  their published MD5 sums and cached under ``<data dir>/mnist/``. The data
  directory is the ``data_dir`` argument, else the environment variable
  ``DEZERO_LIKE_DATA``, else ``~/.dezero_like``. ``DEZERO_LIKE_OFFLINE=1``
  forbids downloads (tests and CI set it).

Offline, often only the 10,000 *test* images are at hand. ``MNIST(...,
source="test-split")`` then gives an honest stand-in: the first 8,000 test
images as a training split and the last 2,000 as the evaluation split.
:func:`mnist_train_test` picks the real training set when it is available and
falls back to that split otherwise, saying so in its ``note``.
"""

import numpy as np


def _flag(name, value, none=False):
    """The argument ``name`` as a bool; anything but True or False (or None, when ``none``) is
    refused: ``train="test"`` or ``shuffle="no"`` would be true, and quietly do the opposite."""
    if none and value is None:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {'None, ' if none else ''}True or False, got {value!r}")
    return bool(value)


def get_spiral(train=True, seed=None, num_data=100, num_class=3):
    """Points on ``num_class`` spiral arms, ``num_data`` per arm, and their class.

    Arm ``j`` at position ``r in [0, 1)`` sits at angle ``4 j + 4 r`` plus
    Gaussian noise (sd 0.2), at distance ``r`` from the origin. The points come
    shuffled. The result depends only on the seed: 1984 for the training set,
    2020 for the test set unless ``seed`` is given. The global NumPy random
    state is not touched. Returns ``x`` (N, 2) float32 and ``t`` (N,) int64.
    """
    if seed is None:
        seed = 1984 if _flag("train", train) else 2020
    rng = np.random.default_rng(seed)
    rate = np.arange(num_data) / num_data
    xs, ts = [], []
    for j in range(num_class):
        theta = j * 4.0 + 4.0 * rate + rng.standard_normal(num_data) * 0.2
        xs.append(np.stack([rate * np.sin(theta), rate * np.cos(theta)], axis=1))
        ts.append(np.full(num_data, j, dtype=np.int64))
    x = np.concatenate(xs).astype(np.float32)
    t = np.concatenate(ts)
    order = rng.permutation(len(x))
    return x[order], t[order]


# %% [markdown]
# Importing `datasets` in `__init__` makes `dezero_like.datasets` available after
# `import dezero_like`.

# %%
#| export dezero_like/__init__.py
from dezero_like import datasets


# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import optimizers
from dezero_like.models import MLP


x, t = dz.datasets.get_spiral(train=True)  # 100 points on each of 3 arms, shuffled
print("x:", x.shape, x.dtype, " t:", t.shape, "classes:", np.bincount(t))

# %% [markdown]
# ## Mini-batches
#
# Each *epoch* visits all 300 points once, in a fresh random order, in batches
# of 30. Every batch gives one gradient step. Shuffling matters: batches made of
# a single class would pull the network back and forth between classes.
#
# `F.accuracy(y, t)` is the fraction of rows whose largest logit is the right
# class. It returns a 0-d Variable outside any graph (it has no useful gradient);
# `float(acc.data)` is the number.

# %%
max_epoch = 300
batch_size = 30
hidden_size = 10
lr = 1.0

np.random.seed(0)
model = MLP((hidden_size, 3))
optimizer = optimizers.SGD(lr).setup(model)
n = len(x)
history = []
start = time.perf_counter()
for epoch in range(max_epoch):
    order = np.random.permutation(n)
    total_loss = 0.0
    for i in range(0, n, batch_size):
        idx = order[i:i + batch_size]
        y = model(x[idx])
        loss = F.softmax_cross_entropy(y, t[idx])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        total_loss += float(loss.data) * len(idx)
    history.append(total_loss / n)
    if epoch % 50 == 0 or epoch == max_epoch - 1:
        print(f"epoch {epoch + 1:3d}  loss {history[-1]:.4f}")
print(f"training took {time.perf_counter() - start:.1f} s")

with dz.no_grad():
    train_accuracy = float(F.accuracy(model(x), t).data)
print(f"training accuracy: {train_accuracy:.3f} (chance: 0.333)")

# %% [markdown]
# ## Decision boundaries
#
# To see what the network learned, classify every point of a fine grid and
# colour it by the predicted class. Inference needs no graph, so it runs under
# `no_grad()`. The boundaries curl around the arms:

# %%
h = 0.01
x0, x1 = np.meshgrid(np.arange(-1.1, 1.1, h), np.arange(-1.1, 1.1, h))
grid = np.c_[x0.ravel(), x1.ravel()].astype(np.float32)
with dz.no_grad():
    predicted = model(grid).data.argmax(axis=1).reshape(x0.shape)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.plot(np.arange(1, max_epoch + 1), history)
ax0.set_xlabel("epoch")
ax0.set_ylabel("loss")
ax1.contourf(x0, x1, predicted, alpha=0.3, levels=[-0.5, 0.5, 1.5, 2.5], cmap="brg")
for c, marker in zip(range(3), "ox^"):
    ax1.scatter(x[t == c, 0], x[t == c, 1], s=15, marker=marker, label=f"class {c}")
ax1.set_aspect("equal")
ax1.legend(loc="upper right", fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Exercise
# 1. Check generalisation: take the test spiral,
#    `dz.datasets.get_spiral(train=False)` (points drawn with another seed,
#    which the network never saw), and store the model's accuracy on it, as a
#    Python float, in `test_accuracy`, building no graph. It should also be far
#    above chance.
# 2. **Implement then test: accuracy.** Write `my_accuracy(y, t)`: `y` is a
#    Variable of scores of shape (N, C), `t` an array of N labels; return the
#    fraction of rows whose largest score is at the label, as a Python float.
#    The self-check compares it with `F.accuracy` on random scores.

# %%
#| exercise
x_new, t_new = dz.datasets.get_spiral(train=False)
test_accuracy = ...  # a Python float: model's accuracy on (x_new, t_new), no graph (step 19)

# %%
#| solution
x_new, t_new = dz.datasets.get_spiral(train=False)
with dz.no_grad():
    test_accuracy = float(F.accuracy(model(x_new), t_new).data)

# %%
#| check
assert isinstance(test_accuracy, float), (
    f"test_accuracy should be a Python float, got {type(test_accuracy).__name__}: "
    "F.accuracy returns a Variable; convert the number it holds"
)
print(f"accuracy on a fresh spiral: {test_accuracy:.3f}")
assert test_accuracy > 0.8, (
    f"accuracy {test_accuracy:.3f} is too low: evaluate `model` on x_new with the labels t_new"
)
print("self-check passed: the spiral classifier generalises to points it never saw")

# %%
#| exercise
def my_accuracy(y, t):
    raise NotImplementedError(
        "Exercise (step 50): find each row's predicted class, then the fraction of rows where "
        "it is the label, as a Python float"
    )

# %%
#| solution
def my_accuracy(y, t):
    return float((y.data.argmax(axis=1) == t).mean())

# %%
#| check
rng = np.random.default_rng(0)
scores = dz.Variable(rng.normal(size=(50, 4)))
labels = rng.integers(0, 4, size=50)
got = my_accuracy(scores, labels)
expected = float(F.accuracy(scores, labels).data)
assert isinstance(got, float), f"return a Python float, got {type(got).__name__}"
assert np.isclose(got, expected), (
    f"expected {expected}, got {got}: each row's prediction is the class with the highest "
    "score (the scores are (N, C)); count the rows where it equals the label, divide by N"
)
print("self-check passed: my_accuracy agrees with F.accuracy")
