# %% [markdown]
# # Step 50: Multi-class classification — the spiral data set
#
# Everything of Stage 4 so far (steps 38–49) comes together: an `MLP` produces 3 logits per point,
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
# the float dtype of `y` (float64 when `y` is not a float array). A label out of range, or a
# fraction such as 1.5, would never equal an argmax and would silently count as a miss, so on the
# CPU both are refused, as `softmax_cross_entropy` refuses them.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable, _on_two_devices
from dezero_like.functions import _check_label_range, _float_dtype


def accuracy(y, t):
    """Fraction of rows of ``y`` (scores, (N, C)) whose argmax equals the label in ``t``.

    Returns a Variable that is not part of any graph (accuracy has no gradient). An empty
    batch gives ``nan``, as PyTorch's mean of no rows. A label that is no class raises
    ``ValueError`` on the CPU; on a GPU the result is ``nan`` instead, since reading the labels
    back to check them would make the host wait for the device.
    """
    y_data = y.data if isinstance(y, Variable) else y
    t_data = t.data if isinstance(t, Variable) else t
    if isinstance(y_data, (list, tuple)):
        y_data = np.asarray(y_data)
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
    # a fraction or a label out of range never equals an argmax: counted wrong, silently
    if xp is np and t_data.dtype.kind == "f" and not (  # inf and nan are no class either
            np.isfinite(t_data).all() and np.array_equal(t_data, np.round(t_data))):
        raise ValueError("accuracy expects whole-number class indices, got "
                         f"{t_data.ravel()[:5]} ...; for soft targets compare their argmax")
    _check_label_range("accuracy", t_data, y_data.shape[1])  # on the CPU (step 49)
    pred = y_data.argmax(axis=1).reshape(t_data.shape)
    # no rows: nan, as PyTorch's mean of nothing, without NumPy's "Mean of empty slice"
    acc = (pred == t_data).mean() if t_data.size else np.nan
    if xp is not np and t_data.size:  # the checks above would read the labels back, a wait for
        bad = (t_data < 0) | (t_data >= y_data.shape[1])  # the GPU: there a label that is no
        if t_data.dtype.kind == "f":  # class (a fraction, inf, nan) makes the accuracy nan, as
            bad |= t_data != xp.floor(t_data)  # it makes softmax_cross_entropy's loss
        acc = xp.where(bad.any(), xp.nan, acc)
    dtype = _float_dtype(y_data.dtype, complex_ok=False)
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
    for name, n in (("num_data", num_data), ("num_class", num_class)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"get_spiral: {name} must be a positive int, got {n!r}")
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
from matplotlib.colors import ListedColormap

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import optimizers
from dezero_like.models import MLP
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(50)  # every file this step writes goes here


x, t = dz.datasets.get_spiral(train=True)  # 100 points on each of 3 arms, shuffled
print("x:", x.shape, x.dtype, " t:", t.shape, "classes:", np.bincount(t))

# %% [markdown]
# ## Mini-batches
#
# Each *epoch* visits all 300 points once, in a fresh random order, in batches
# of 30. Every batch gives one gradient step. Shuffling matters: with the points
# in class order, as data files often store them, almost every batch would hold a
# single class and pull the network back and forth between classes; a fresh order each
# epoch also keeps the same points from always sharing a batch.
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
# `no_grad()`. On the left, the loss falls as the epochs pass. On the right, each point wears
# its class's colour and shape, and the shaded regions show what the network would answer
# there: the boundaries curl around the arms, and almost every point sits in its own colour.

# %%
h = 0.01
x0, x1 = np.meshgrid(np.arange(-1.1, 1.1, h), np.arange(-1.1, 1.1, h))
grid = np.c_[x0.ravel(), x1.ravel()].astype(np.float32)
with dz.no_grad():
    predicted = model(grid).data.argmax(axis=1).reshape(x0.shape)

colours = ["tab:blue", "tab:orange", "tab:green"]  # one per class: the points and their region
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.plot(np.arange(1, max_epoch + 1), history)
ax0.set_xlabel("epoch")
ax0.set_ylabel("mean softmax cross entropy")
ax0.set_title("Training loss")
ax1.contourf(x0, x1, predicted, alpha=0.3, levels=[-0.5, 0.5, 1.5, 2.5],
             cmap=ListedColormap(colours))
for c, marker in zip(range(3), "ox^"):
    ax1.scatter(x[t == c, 0], x[t == c, 1], s=15, marker=marker, color=colours[c],
                label=f"class {c}")
ax1.set_aspect("equal")
ax1.set_xlabel("x[:, 0]")
ax1.set_ylabel("x[:, 1]")
ax1.set_title(f"Predicted class regions (training accuracy {train_accuracy:.2f})")
ax1.legend(loc="upper right", fontsize=8)
plt.tight_layout()
save_figure(fig, out_dir / "loss_and_boundary.png")
plt.show()

# %% [markdown]
# ## Exercise
# 1. **Where does the network go wrong?** One accuracy hides which classes get
#    mixed up. Take the test spiral, `dz.datasets.get_spiral(train=False)`
#    (points drawn with another seed, which the network never saw), and fill the
#    3x3 *confusion matrix* `confusion`: entry `[i, j]` counts the test points of
#    true class `i` that the model predicts as class `j`, so each row sums to the
#    number of points of its class and the correct predictions sit on the
#    diagonal. Classify the points building no graph (step 19), as the decision
#    boundaries above were computed. Then store the test accuracy, as a Python
#    float, in `test_accuracy`, read off the matrix rather than from `F.accuracy`.
#    It should be far above chance. NumPy can add 1 at a list of (row, column)
#    positions, repeated positions included, without a Python loop: look up
#    `np.add.at`, or think of what `np.bincount` counts.
# 2. **Implement then test: top-k accuracy.** With many classes (1000 for
#    ImageNet) a model is often credited when the right class is among its $k$
#    best guesses. Write `my_topk_accuracy(y, t, k)`: `y` is a Variable of scores
#    of shape (N, C), `t` an array of N labels, `k` an int from 1 to C; return,
#    as a Python float, the fraction of rows whose label is among the $k$ classes
#    with the largest scores. Ties must be broken as `F.accuracy` breaks them:
#    `argmax` takes the *first* maximum, so of two equal scores the lower class
#    index ranks first. Put differently, order each row's classes by score,
#    highest first, equal scores by index, and ask whether the label is in the
#    first $k$ places. `np.argsort` sorts from the smallest up, and its default
#    algorithm may put equal values in any order: read about its `kind`
#    argument, and think about how to get "largest first" without reversing the
#    order of equal scores. (Another way: count the classes that rank before the
#    label in its row.) For $k = 1$ the result must equal `F.accuracy`. The
#    self-check compares it with a row-by-row ranking in plain Python for every
#    $k$, on random scores and on scores with many ties, and with `F.accuracy`.

# %%
#| exercise
x_new, t_new = dz.datasets.get_spiral(train=False)
confusion = np.zeros((3, 3), dtype=np.int64)  # [true class, predicted class] -> number of points
test_accuracy = ...  # a Python float, read off `confusion`

# %%
#| solution
x_new, t_new = dz.datasets.get_spiral(train=False)
confusion = np.zeros((3, 3), dtype=np.int64)
with dz.no_grad():
    predicted_new = model(x_new).data.argmax(axis=1)
np.add.at(confusion, (t_new, predicted_new), 1)
test_accuracy = float(np.trace(confusion) / confusion.sum())

# %%
#| check
with dz.no_grad():
    scores_new = model(x_new).data
want = np.zeros((3, 3), dtype=np.int64)
for true_class, guess in zip(t_new.tolist(), scores_new.argmax(axis=1).tolist()):
    want[true_class, guess] += 1  # one point at a time: slow, but plainly right
print("confusion matrix on the test spiral (rows: true class, columns: predicted):")
print(confusion)
assert np.array_equal(confusion, want), (
    f"confusion should be\n{want}\nbut is\n{confusion}\n"
    + ("it is the transpose: rows are the true classes, columns the predictions"
       if np.array_equal(confusion, want.T) else
       "it counts fewer points than the test set holds: a repeated (row, column) position "
       "must add 1 each time, and fancy-index assignment adds it only once"
       if 0 < confusion.sum() < want.sum() else
       "entry [i, j] counts the test points of class i that the model predicts as class j "
       "(each prediction is the class with the largest score)")
)
assert isinstance(test_accuracy, float), (
    f"test_accuracy should be a Python float, got {type(test_accuracy).__name__}: the correct "
    "predictions are on the diagonal of confusion, out of all the points it counts"
)
print(f"accuracy on a fresh spiral: {test_accuracy:.3f}")
assert np.isclose(test_accuracy, float(F.accuracy(scores_new, t_new).data)), (
    f"test_accuracy is {test_accuracy:.4f} but F.accuracy gives "
    f"{float(F.accuracy(scores_new, t_new).data):.4f}: the accuracy is the fraction of all "
    "test points that lie on the diagonal"
)
assert test_accuracy > 0.8, f"accuracy {test_accuracy:.3f} is too low for this network"
print("self-check passed: the confusion matrix counts every test point, and the spiral "
      "classifier generalises to points it never saw")

# %%
#| exercise
def my_topk_accuracy(y, t, k):
    raise NotImplementedError(
        "Exercise (step 50): for each row, is the label among the k classes with the largest "
        "scores (equal scores: the lower class index first)? Return the fraction of rows where "
        "it is, as a Python float"
    )

# %%
#| solution
def my_topk_accuracy(y, t, k):
    scores = y.data if isinstance(y, dz.Variable) else np.asarray(y)
    labels = np.asarray(t).reshape(-1, 1)
    # a stable sort of the negated scores: largest first, equal scores kept in index order
    top_k = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return float((top_k == labels).any(axis=1).mean())

# %%
#| check
def topk_reference(scores, labels, k):
    """Row by row in plain Python: rank the classes by (score descending, index ascending)."""
    hits = 0
    for row, label in zip(scores.tolist(), labels.tolist()):
        ranking = sorted(range(len(row)), key=lambda c: (-row[c], c))
        hits += label in ranking[:k]
    return hits / len(labels)


rng = np.random.default_rng(0)
six_labels = rng.integers(0, 6, size=300)
distinct = dz.Variable(rng.normal(size=(300, 6)))  # no two scores equal
tied = dz.Variable(rng.integers(0, 3, size=(300, 6)).astype(np.float64))  # many equal scores
wide = dz.Variable(rng.integers(0, 4, size=(300, 40)).astype(np.float64))  # 40 classes, ties
wide_labels = rng.integers(0, 40, size=300)
for name, scores, labels, ks in (("random scores", distinct, six_labels, range(1, 7)),
                                 ("scores with ties", tied, six_labels, range(1, 7)),
                                 ("40 classes with ties", wide, wide_labels, (1, 3, 10, 25, 40))):
    for k in ks:
        got = my_topk_accuracy(scores, labels, k)
        want = topk_reference(scores.data, labels, k)
        assert isinstance(got, float), f"return a Python float, got {type(got).__name__}"
        assert np.isclose(got, want), (
            f"{name}, k={k}: expected {want:.4f}, got {got:.4f}. "
            + ("A row counts when its label is among the k LARGEST scores of that row; with "
               "k equal to the number of classes every row counts"
               if name == "random scores" else
               "With equal scores the lower class index ranks first, as argmax takes the first "
               "maximum: the label is not in the top k when k classes rank before it, and a "
               "sort that is not stable, or a reversed ascending sort, orders equal scores "
               "differently")
        )
    top1 = float(F.accuracy(scores, labels).data)
    assert np.isclose(my_topk_accuracy(scores, labels, 1), top1), (
        f"{name}: for k=1 the result must equal F.accuracy, {top1:.4f}"
    )
print("self-check passed: my_topk_accuracy ranks like argmax, with ties, for every k")
