# %% [markdown]
# # Step 48: `get_item` and its backward, `GetItemGrad`
#
# Indexing picks elements out of an array: `x[1]`, `x[:, 2]`, `x[[0, 0, 3]]`.
# Classification losses need it (pick the score of the correct class in each
# row), and so does any code that slices a batch. To differentiate through
# indexing, think again about where each output element came from.
#
# **Forward** (`get_item`): $y = x[\text{idx}]$ *gathers* elements.
#
# **Backward** (`GetItemGrad`): each $g_y$ entry goes back to the position it
# came from; every other position of $x$ gets 0. So the backward *scatters*
# $g_y$ into a zero array shaped like $x$:
#
# ```python
# gx = zeros(x.shape)
# gx[idx] += gy        # almost right ...
# ```
#
# The "almost" is the heart of this step. When an index **repeats** — `x[[0, 0, 3]]`
# uses `x[0]` twice — the gradients of both copies must **add up** (the rule
# of step 14). NumPy's `gx[idx] += gy` does not do that.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `GetItem`, `GetItemGrad`, `get_item`; `core` gains
# `Variable.__getitem__` (`x[...]`) and `Variable.__iter__` (`for row in x`).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Two helpers first. `_index_data` lets an index contain Variables (an array of labels, say) by
# replacing them with their arrays, and copies any array or list in the index, so that a buffer
# of indices the caller refills before `backward()` cannot move the gradient. `_is_basic_index`
# tells whether an index is made only of integers, slices, `None` and `...`: such an index can
# never select the same element twice.

# %%
#| export dezero_like/functions.py
import copy

import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable


def _index_data(slices):
    """Replace Variables inside an index by their arrays, and copy any array or list in it.

    Backward scatters the gradient through the index as it was at forward time: an index
    array the caller refills before ``backward()`` (a buffer reused batch after batch) must
    not move the gradient. (PyTorch does not copy a NumPy index: its backward reads the
    array's memory, so refilling the array moves PyTorch's gradient without a word.)
    """
    if isinstance(slices, tuple):
        return tuple(_index_item(s) for s in slices)
    return _index_item(slices)


def _index_item(s):
    if isinstance(s, Variable):
        s = s.data
    if isinstance(s, list):  # NumPy reads a list as an array of indices: make it that array
        try:
            a = np.array(s) if s else np.empty(0, dtype=np.intp)  # [] picks nothing, as NumPy
        except (TypeError, ValueError):  # CuPy arrays inside (never read back here), ragged
            a = None
        return a if a is not None and a.dtype.kind in "iub" else copy.deepcopy(s)  # as given
    if isinstance(s, np.ndarray) or cuda.is_cupy_array(s):
        return s.copy()
    return s


def _is_basic_index(slices):
    items = slices if isinstance(slices, tuple) else (slices,)
    return all(
        s is None or s is Ellipsis or isinstance(s, (slice, int, np.integer)) for s in items
    )


# %% [markdown]
# `_scatter_add` adds `values` into `target[slices]` so that a repeated index adds every
# contribution: `np.add.at` does that, while `target[slices] += values` keeps only one. On a GPU
# it uses CuPy's `add.at`, or `cupyx.scatter_add` on an older CuPy. Both add with the GPU's
# atomic additions, which exist for real numbers only, so a complex gradient is scattered as
# its real and imaginary halves (`.real` and `.imag` are views into the complex array).

# %%
#| export dezero_like/functions.py
import numpy as np


def _scatter_add(xp, target, slices, values):
    """target[slices] += values, where repeated indices add up (unlike ``+=``)."""
    if xp is np:
        np.add.at(target, slices, values)
        return
    if target.dtype.kind == "c":  # no atomic addition of complex numbers on a GPU
        values = xp.asarray(values, dtype=target.dtype)
        _scatter_add(xp, target.real, slices, values.real)
        _scatter_add(xp, target.imag, slices, values.imag)
        return
    add_at = getattr(xp.add, "at", None)  # recent CuPy ufuncs have .at
    if add_at is not None:
        add_at(target, slices, values)
        return
    import cupyx  # older CuPy: the same operation lives in cupyx

    cupyx.scatter_add(target, slices, values)


# %% [markdown]
# An integer index out of range is an `IndexError` in NumPy. CuPy does not check an index array:
# its gather and its scatter both wrap the index around (`5` on an axis of 3 reads element 2), so
# a wrong index would pick another element silently. `_check_host_index` does NumPy's check for
# the parts of an index that are still on the host (Python integers, lists, NumPy arrays): they
# are read where they are, and the device is not waited for. An index array already on the
# device is not checked, as reading it back would mean waiting for the GPU.

# %%
#| export dezero_like/functions.py
import numpy as np


def _check_host_index(slices, shape):
    """Raise NumPy's IndexError for an integer index on the host out of range of ``shape``.

    Called for an array on the GPU only (NumPy checks its own indices). Index arrays on the
    device, masks, slices, ``None`` and ``...`` are not checked: they only move the axis on.
    """
    parts = slices if isinstance(slices, tuple) else (slices,)
    if all(type(part) is slice or part is None or part is Ellipsis for part in parts):
        return  # nothing to check (x[:, 1:]). CuPy checks a Python int itself, but its message
        # ("Index 5 is ...") is not NumPy's, so ints are checked here too
    checks = []  # (the index as a NumPy integer array or None, how many axes it takes)
    for part in parts:
        if part is Ellipsis:
            checks.append((None, None))  # as many axes as the others leave
            continue
        if part is None or isinstance(part, (bool, np.bool_)):  # a new axis, or a 0-d mask
            checks.append((None, 0))
            continue
        if isinstance(part, (list, tuple)):
            try:
                part = np.asarray(part)
            except (TypeError, ValueError):  # device arrays inside, ragged: CuPy decides
                checks.append((None, 1))
                continue
        if isinstance(part, (int, np.integer)) or (
                isinstance(part, np.ndarray) and part.dtype.kind in "iu"):
            checks.append((np.asarray(part), 1))
        elif getattr(part, "dtype", None) == np.bool_:  # a mask takes as many axes as it has
            checks.append((None, part.ndim))
        else:  # a slice, an index array on the device, or what CuPy will refuse itself
            checks.append((None, 1))
    # (no sum() or max() here: this module's own sum and max are differentiable functions)
    ellipses = [n for _, n in checks].count(None)
    if ellipses > 1:
        return  # two Ellipses: CuPy raises its own IndexError
    taken = 0
    for _, n in checks:
        taken += n or 0
    axis = 0
    for index, n in checks:
        if n is None:
            n = len(shape) - taken if len(shape) > taken else 0
        elif index is not None and index.size and axis < len(shape):
            size = shape[axis]
            low, high = int(index.min()), int(index.max())  # host arrays: no device waited for
            if low < -size or high >= size:
                bad = low if low < -size else high
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
        axis += n


# %% [markdown]
# `GetItem` is `x[slices]` (on a GPU, after `_check_host_index`). Backward needs only the input's
# shape, not its values, so it keeps no input (`retain_inputs(())`) and remembers `in_shape`. The
# gradient is another function, `GetItemGrad`, so that it can be differentiated again.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import Function


class GetItem(Function):
    """y = x[slices]; the gradient is scattered back into zeros of x's shape (GetItemGrad).

    An integer index out of range raises NumPy's IndexError on either device when it is on the
    host (a Python int, a list, a NumPy array). An index array already on the GPU (a CuPy array)
    is not checked, since that would wait for the device: CuPy wraps such an index around
    (``5`` on an axis of size 3 picks element 2, and the gradient goes back there).
    """

    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        self.retain_inputs(())
        self.in_shape = x.shape
        if not isinstance(x, np.ndarray):  # CuPy wraps a wrong index around: check it here
            _check_host_index(self.slices, x.shape)
        return x[self.slices]

    def backward(self, gy):
        return GetItemGrad(self.slices, self.in_shape)(gy)


# %% [markdown]
# `GetItemGrad` puts `gy` back where the slice came from, in zeros of the input's shape. A basic
# index selects each element at most once, so plain assignment is enough; any other index (an
# integer array, as in `x[[0, 0, 1]]`) may repeat, and goes through `_scatter_add`. Its backward
# is `get_item` again: slicing and scattering are each other's transpose.

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class GetItemGrad(Function):
    """gx = zeros(in_shape); gx[slices] += gy, where repeated indices accumulate.

    A plain ``gx[slices] += gy`` would keep only one contribution per repeated
    index; ``np.add.at`` adds them all. This function is linear in ``gy``, and
    its own backward is ``get_item`` again: indexing and scattering are each
    other's transpose, which is why second derivatives through slicing work.
    """

    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        self.retain_inputs(())
        xp = cuda.get_array_module(gy)
        gx = xp.zeros(self.in_shape, dtype=gy.dtype)
        if _is_basic_index(self.slices):
            gx[self.slices] = gy  # no index can repeat: plain assignment is enough
        else:
            _scatter_add(xp, gx, self.slices, gy)
        return gx

    def backward(self, ggx):
        return get_item(ggx, self.slices)


# %% [markdown]
# `get_item(x, slices)` is the function a learner calls; it replaces Variables in the index by
# their arrays before building `GetItem`.

# %%
#| export dezero_like/functions.py
def get_item(x, slices):
    """x[slices] as a differentiable function (``Variable.__getitem__`` calls it)."""
    return GetItem(_index_data(slices))(x)


# %% [markdown]
# Indexing a Variable (`x[1]`, `x[:, 0]`, `x[[0, 0, 2]]`) calls `get_item`. A loop over a
# Variable (`for row in x`) gives `x[0]`, `x[1]`, ..., each a `get_item`, so the rows keep
# their way back to `x`. A 0-d Variable, a loss, is one number and not a sequence, so
# iterating it is an error, as in NumPy. Without `__iter__`, Python would loop by asking for
# `x[0]`, `x[1]`, ... until an `IndexError`, which a 0-d Variable raises at once: `list(loss)`
# would be `[]` and `sum(loss)` would be 0, without a word.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _F


def __getitem__(self, slices):
    return _F().get_item(self, slices)


def __iter__(self):
    if self.data.ndim == 0:  # NumPy's error, with the way to the number
        raise TypeError("iteration over a 0-d Variable: it holds one number. Write float(loss) "
                        "(or loss.item()) for the value; sum(losses) adds a list of losses")
    return (self[i] for i in range(len(self)))


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

x = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
y = x[1]  # Variable.__getitem__ calls F.get_item
print("x[1] =", y)
y.backward()
print("x.grad =", x.grad)

# %% [markdown]
# ## The repeated-index trap
#
# `gx[idx] += gy` is evaluated as `gx[idx] = gx[idx] + gy`: NumPy reads the
# selected elements once, adds, and writes back, so for a repeated index the
# last write wins and one contribution is lost. `np.add.at(gx, idx, gy)` is the
# *unbuffered* version: it adds every contribution, repeats included.

# %%
idx = np.array([0, 0, 3])
gy = np.array([1.0, 1.0, 1.0])

naive = np.zeros(4)
naive[idx] += gy
correct = np.zeros(4)
np.add.at(correct, idx, gy)
print("gx[idx] += gy        ->", naive, "(x[0] used twice, counted once: wrong)")
print("np.add.at(gx, idx, gy) ->", correct)

# %% [markdown]
# `GetItemGrad` uses `np.add.at` (on the GPU, CuPy's equivalent). For plain
# slices and integers no index can repeat, so it uses the faster assignment.
# The framework gets repeated indices right:

# %%
v = dz.Variable(np.array([10.0, 20.0, 30.0, 40.0]))
picked = v[idx]
print("v[[0, 0, 3]] =", picked)
F.sum(picked).backward()
print("v.grad =", v.grad)

# %% [markdown]
# The same three arrays in a picture. Left, the gather: `x[0]` is read twice (orange),
# `x[3]` once (blue). Middle, the backward with `np.add.at`: each `gy` entry follows its
# arrow back, and two of them land on `gx[0]`, which adds up to 2. Right, `gx[idx] += gy`:
# the same two arrows land on `gx[0]`, but the second write replaces the first, so one
# contribution is lost and `gx[0]` says 1.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(48)  # every file this step writes goes here
source = np.array(["#ffd08a", "#eeeeee", "#eeeeee", "#a8d8f0"])  # x[0] orange, x[3] blue


def cells(ax, values, left, bottom, colours, name):
    """A 1-D array as a row of labelled cells, its name on the left."""
    for i, value in enumerate(values):
        ax.add_patch(plt.Rectangle((left + i, bottom), 1, 1, fc=colours[i], ec="k"))
        ax.text(left + i + 0.5, bottom + 0.5, f"{value:g}", ha="center", va="center", fontsize=9)
    ax.text(left - 0.15, bottom + 0.5, name, ha="right", va="center", fontsize=9)


def links(ax, left, starts, ends, lost=()):
    """Arrows from the top row's cell starts[k] to the bottom row's cell ends[k]."""
    for k, (a, b) in enumerate(zip(starts, ends)):
        style = {"color": "red", "ls": "--"} if k in lost else {"color": "k"}
        ax.annotate("", (left + b + 0.5, 1.05), (left + a + 0.5, 1.95),
                    arrowprops={"arrowstyle": "->", "lw": 1.2, **style})


fig, ax = plt.subplots(figsize=(7, 2.2))
panels = [(1.2, "forward: y = x[[0, 0, 3]]"), (7.8, "backward: np.add.at"),
          (14.4, "backward: gx[idx] += gy")]
cells(ax, v.data, panels[0][0], 2, source, "x")
cells(ax, picked.data, panels[0][0], 0, source[idx], "y")
links(ax, panels[0][0], idx, range(3))
for (left, _), gx, lost in [(panels[1], v.grad.data, ()), (panels[2], naive, (0,))]:
    cells(ax, gy, left, 2, source[idx], "gy")
    cells(ax, gx, left, 0, source, "gx")
    links(ax, left, range(3), idx, lost)
ax.text(panels[2][0] + 0.5, -0.45, "the first 1 is overwritten", ha="left", va="center",
        fontsize=8, color="red")
for left, title in panels:
    ax.text(left + 2, 3.4, title, ha="center", fontsize=9)
ax.set(xlim=(-0.3, 18.6), ylim=(-0.8, 3.8))
ax.set_aspect("equal")
ax.axis("off")
save_figure(fig, out_dir / "scatter_add.png")
plt.show()

# %% [markdown]
# ## The double-backprop symmetry
#
# Gathering and scattering are *transposes* of each other: for any arrays $a$
# (shaped like $x$) and $b$ (shaped like $y$),
# $\langle \text{gather}(a), b\rangle = \langle a, \text{scatter}(b)\rangle$.
# Both are linear, and the backward of a linear map applies its transpose to
# the incoming gradient, so each is the other's **backward** (not its
# derivative: the derivative of a linear map is the map itself). So:
#
# * `GetItem.backward` is `GetItemGrad` (scatter), and
# * `GetItemGrad.backward` is `get_item` (gather) again.
#
# Because both backwards are built from these differentiable functions, second
# derivatives through indexing work. Take $L = \sum_k x_{\text{idx}_k}^3$:
# $\partial L/\partial x_i = 3 c_i x_i^2$ and $\partial^2 L/\partial x_i^2 = 6 c_i x_i$,
# where $c_i$ counts how often $i$ appears in idx.

# %%
x = dz.Variable(np.array([1.0, 2.0, 3.0, 4.0]))
L = F.sum(x[idx] ** 3)
L.backward(create_graph=True)
gx = x.grad
print("first derivative :", gx, "made by", type(gx.creator).__name__)
counts = np.bincount(idx, minlength=4)
x.cleargrad()
F.sum(gx).backward()
print("second derivative:", x.grad, "expected", 6 * counts * x.data)

a = np.random.default_rng(0).normal(size=4)
b = np.random.default_rng(1).normal(size=3)
scattered = F.GetItemGrad(idx, (4,))(dz.Variable(b)).data
print("<gather(a), b> == <a, scatter(b)>:", np.isclose(a[idx] @ b, a @ scattered))

# %% [markdown]
# The numerical gradient check agrees, for fancy indices with repeats and for
# a second derivative:

# %%
data = np.random.default_rng(2).normal(size=(3, 4))
rows = np.array([2, 0, 2, 2])
print("gradient check, rows picked with repeats:", gradient_check(lambda t: t[rows], data))
w = np.random.default_rng(3).normal(size=(4, 4))  # d_dx backprops by hand: it weighs itself


def d_dx(t):
    F.sum(t[rows] ** 3 * w).backward(create_graph=True)
    g = t.grad
    t.cleargrad()
    return g


print("gradient check, second derivative:      ", gradient_check(d_dx, data))

# %% [markdown]
# ## Exercise
# 1. A classification loss picks, in each row $n$ of a score matrix, the score
#    of the correct class $t_n$: `scores[np.arange(N), t]`. Compute the
#    gradient of the sum of the picked scores for the labels below and store it
#    (as a NumPy array) in `grad_scores`: it is a one-hot matrix.
# 2. **Implement then test: the scatter.** Write `forward` of `MyGetItemGrad`:
#    zeros of the input's shape (in `gy`'s dtype) into which `gy` is *added*
#    at `slices`, so that an index that appears twice gets both contributions
#    (the repeated-index trap above, and its picture, say which NumPy call does
#    that). `MyGetItem` below is indexing whose backward calls your
#    class; the self-check runs `gradient_check` on it with a repeated index and
#    compares its gradient with `F.get_item`'s.

# %%
#| exercise
scores = dz.Variable(np.random.default_rng(4).normal(size=(3, 4)))
t = np.array([2, 0, 2])
grad_scores = ...  # the gradient of F.sum(scores[np.arange(3), t]) with respect to scores

# %%
#| solution
scores = dz.Variable(np.random.default_rng(4).normal(size=(3, 4)))
t = np.array([2, 0, 2])
F.sum(scores[np.arange(3), t]).backward()
grad_scores = scores.grad.data

# %%
#| check
assert isinstance(grad_scores, np.ndarray), (
    f"grad_scores should be a NumPy array, got {type(grad_scores).__name__}: "
    "call backward() on the sum, then take scores.grad.data"
)
assert np.array_equal(grad_scores, np.eye(4)[t]), (
    f"expected one one-hot row per label (1 at column t[n] of row n), got\n{grad_scores}"
)
print("self-check passed: picking one score per row sends a one-hot gradient back")

# %%
#| exercise
from dezero_like.core import Function


class MyGetItemGrad(Function):
    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        raise NotImplementedError(
            "Exercise (step 48): start from zeros of the input's shape, in gy's dtype, and add "
            "gy in at self.slices so that a repeated index keeps every contribution (reread "
            "'The repeated-index trap': += is not enough)"
        )

    def backward(self, ggx):
        return F.get_item(ggx, self.slices)


class MyGetItem(Function):  # given: indexing whose backward uses your MyGetItemGrad
    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        self.in_shape = x.shape
        return x[self.slices]

    def backward(self, gy):
        return MyGetItemGrad(self.slices, self.in_shape)(gy)

# %%
#| solution
from dezero_like.core import Function


class MyGetItemGrad(Function):
    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        gx = np.zeros(self.in_shape, dtype=gy.dtype)
        np.add.at(gx, self.slices, gy)
        return gx

    def backward(self, ggx):
        return F.get_item(ggx, self.slices)


class MyGetItem(Function):  # given: indexing whose backward uses your MyGetItemGrad
    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        self.in_shape = x.shape
        return x[self.slices]

    def backward(self, gy):
        return MyGetItemGrad(self.slices, self.in_shape)(gy)

# %%
#| check
rng = np.random.default_rng(0)
x_data = rng.normal(size=(4, 3))
picks = np.array([0, 2, 0, 0])  # row 0 is picked three times
w_pick = rng.normal(size=(4, 3))
mine = dz.Variable(x_data.copy())
F.sum(MyGetItem(picks)(mine) * w_pick).backward()
ref = dz.Variable(x_data.copy())
F.sum(F.get_item(ref, picks) * w_pick).backward()
assert np.allclose(mine.grad.data, ref.grad.data), (
    f"row 0 of the gradient should be the sum of three rows of w, {w_pick[[0, 2, 3]].sum(0)}, got "
    f"{mine.grad.data[0]}: gx[slices] = gy (or +=) keeps only one of them; reread the "
    "repeated-index trap"
)
gradient_check(lambda v: MyGetItem(picks)(v), x_data)
gy32 = dz.Variable(np.ones((4, 3), dtype=np.float32))
gx32 = MyGetItemGrad(picks, x_data.shape)(gy32)
assert gx32.dtype == np.float32, (
    f"for a float32 gy, MyGetItemGrad returns {gx32.dtype}: create the zeros in gy's dtype "
    "(NumPy's zeros takes a dtype)"
)
print("self-check passed: MyGetItemGrad adds repeated indices up, as F.get_item does")
