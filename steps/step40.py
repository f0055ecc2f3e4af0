# %% [markdown]
# # Step 40: `sum` and `sum_to`
#
# Summing is the most common way a network turns many numbers into fewer: a
# loss is a sum over a batch, a bias gradient is a sum over rows. To
# differentiate it, look at one input element: it appears in exactly one output
# element with coefficient 1. So its gradient is just the gradient of that
# output element. Backward of a sum therefore **copies** (broadcasts) the
# output gradient back over the axes that were summed away:
#
# $$y_j = \sum_i x_{ij} \quad\Longrightarrow\quad
#   \frac{\partial L}{\partial x_{ij}} = \frac{\partial L}{\partial y_j}.$$
#
# `F.sum(x, axis=None, keepdims=False)` follows NumPy's `np.sum`. Its backward
# first puts back the summed axes with length 1 (so the shapes line up), then
# calls `broadcast_to` (step 41) to repeat the gradient.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Variable.sum`; `functions` gains `average` and its other name
# `mean`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Variable` gains a `sum` method, so `x.sum(axis=0)` works as in NumPy. It calls `F.sum`, which
# step 25 put in the package: the `Sum` function whose backward is described above. `_F()`
# imports `functions` only when the method runs, because `functions` imports `core`. NumPy's
# `np.sum(x)` calls this method too, with NumPy's `dtype` and `out`: it gets a message that says
# what to write instead of Python's complaint about an unexpected argument. PyTorch's
# `x.sum(dim=1, keepdim=True)` gets the translation from step 25's `_refuse_keywords`, as
# `F.sum` does.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _AXIS_KEYWORDS, _F, _refuse_keywords


def sum(self, axis=None, keepdims=False, **others):
    if "out" in others:  # np.sum(v) calls v.sum(axis=..., dtype=..., out=...)
        raise TypeError(
            "np.sum(v) on a Variable: NumPy's functions record no graph. Write v.sum() or "
            "F.sum(v) to differentiate the sum, or np.sum(v.data) for the number")
    if others:  # PyTorch's x.sum(dim=1, keepdim=True), say
        _refuse_keywords("Variable.sum", others, _AXIS_KEYWORDS)
    return _F().sum(self, axis, keepdims)


# %% [markdown]
# A mean is a sum divided by how many elements were summed, so `average` needs no `Function` of
# its own: it is `x.sum(...)` (that is `F.sum`) divided by a number, and differentiable to any
# order because both pieces are. The count is read from the shapes, never from the data.
# `mean` is the same function under the other name the book gives it. Over an empty axis the
# count is 0 and the result is `nan`, as in NumPy and PyTorch (where `torch.mean` refuses integer
# tensors, this gives float64).

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import _AXIS_KEYWORDS, _refuse_keywords, as_variable
from dezero_like.functions import astype


def average(x, axis=None, keepdims=False, **others):
    """Mean of ``x`` over ``axis`` (all axes when None; an int or a tuple), like ``np.mean``.

    The sum (:func:`sum`) divided by the number of elements summed; an empty axis gives nan.
    float16 is averaged in float32 and rounded back, as ``np.mean`` does: a count above
    65504 (float16's largest number) would otherwise become inf and the mean 0.
    """
    if others:  # PyTorch's F.mean(x, dim=1, keepdim=True), say
        _refuse_keywords("F.mean", others, _AXIS_KEYWORDS)
    x = as_variable(x)
    if getattr(x.data, "dtype", None) == np.float16:
        return astype(average(astype(x, np.float32), axis, keepdims), np.float16)
    y = x.sum(axis, keepdims)
    return y / (x.size // y.size if y.size else 1)


mean = average


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

x = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
y = F.sum(x, axis=0)
print("sum over axis 0:", y)
y.backward(gradient=np.array([1.0, 10.0, 100.0]))
print("x.grad =", x.grad)

# %% [markdown]
# Each column received the gradient of the column sum it fed into. With
# `keepdims=True` the summed axis stays with length 1 — handy for
# normalising rows, as in `x / F.sum(x, axis=1, keepdims=True)`:

# %%
x = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
print(F.sum(x, axis=1, keepdims=True).shape, F.sum(x, axis=1).shape, F.sum(x).shape)
print("x.sum() method:", x.sum())
print("F.mean over axis 0:", F.mean(x, axis=0), "over all:", F.mean(x))

# %% [markdown]
# ## `sum_to`: sum down to a given shape
#
# `sum_to(x, shape)` sums `x` until it has `shape`: leading axes disappear and
# axes of length 1 in `shape` are summed with `keepdims`. It is the exact
# reverse of NumPy broadcasting, which *repeats* an array up to a bigger
# shape. Because summing and repeating are each other's transpose, their
# backward passes are each other:
#
# | forward | backward |
# | --- | --- |
# | `sum_to(x, shape)` | `broadcast_to(gy, x.shape)` |
# | `broadcast_to(x, shape)` | `sum_to(gy, x.shape)` |

# %%
x = dz.Variable(np.arange(6.0).reshape(2, 3))
print("sum_to (1, 3):", F.sum_to(x, (1, 3)))
print("sum_to (2, 1):", F.sum_to(x, (2, 1)))
print("sum_to (3,):  ", F.sum_to(x, (3,)))
y = F.sum_to(x, (2, 1))
y.backward(gradient=np.array([[1.0], [2.0]]))
print("x.grad =", x.grad)

# %% [markdown]
# Both sums in a picture, forward on the left and backward on the right. A colour marks the
# cells that are added into one output element (top: a column, bottom: a row). Backward sends
# that output's gradient back to every one of them, unchanged: `gy` is copied along the axis
# that the sum removed or shrank to length 1.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import draw_arrow, draw_cells, output_dir, save_figure

out_dir = output_dir(40)  # every file this step writes goes here
shades = np.array(["#cde", "#fdc", "#dfd"])  # one colour per output element


def draw_sum(ax, x, y, gy, colours, out_colours, title):
    """One row: x -> y on the left, gy -> x.grad on the right (x has had its backward)."""
    draw_cells(ax, x.data, 0, 2, f"x {x.shape}", shades[colours])
    draw_arrow(ax, (3.2, 1), (5.7, 1), "sum")
    top_y = 1 + (y.shape[0] if y.ndim == 2 else 1) / 2  # y centred on the row
    draw_cells(ax, y.data, 6, top_y, f"y {y.shape}", shades[out_colours])
    ax.plot([9.3, 9.3], [-0.2, 2.6], color="0.6", lw=1, ls=":")
    draw_cells(ax, gy, 9.9, top_y, f"gy {gy.shape}", shades[out_colours])
    draw_arrow(ax, (13.4, 1), (15.9, 1), "copy back")
    draw_cells(ax, x.grad.data, 16.4, 2, f"x.grad {x.grad.shape}", shades[colours])
    ax.set(xlim=(-0.3, 19.7), ylim=(-0.3, 2.7))
    ax.set_title(title, fontsize=9)
    ax.set_aspect("equal")
    ax.axis("off")


fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 3.2))
columns = np.array([[0, 1, 2], [0, 1, 2]])  # the element of y each cell of x is added into
x = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
gy = np.array([1.0, 10.0, 100.0])
y = F.sum(x, axis=0)
y.backward(gradient=gy)
draw_sum(top, x, y, gy, columns, np.arange(3), "sum(x, axis=0): forward | backward")
rows = np.array([[0, 0, 0], [1, 1, 1]])  # sum_to (2, 1) adds each row into one
x = dz.Variable(np.arange(6.0).reshape(2, 3))
gy = np.array([[1.0], [2.0]])
y = F.sum_to(x, (2, 1))
y.backward(gradient=gy)
draw_sum(bottom, x, y, gy, rows, np.array([[0], [1]]), "sum_to(x, (2, 1)): forward | backward")
save_figure(fig, out_dir / "sums.png")
plt.show()

# %% [markdown]
# Both functions pass the numerical gradient check. `gradient_check` weighs
# every output element by its own number (step 23), so each counts differently
# and a gradient sent back to the wrong place would show:

# %%
data = np.random.default_rng(0).normal(size=(2, 3, 4))
print("gradient check, sum over axis 1:", gradient_check(lambda v: F.sum(v, axis=1), data))
print("gradient check, sum_to (3, 1):  ", gradient_check(lambda v: F.sum_to(v, (3, 1)), data))

# %% [markdown]
# ## Exercise 1: `mean` from `sum`
# The mean over an axis is a sum divided by the axis length. Write
# `mean(x, axis)` for one axis with `F.sum` (the package's `F.mean`, above,
# does the same for any axes). The self-check compares it with NumPy on a
# (4, 3) array, checks that the gradient of `mean(x, 0)` is 1/4 everywhere,
# and runs `gradient_check`.

# %%
#| exercise
def mean(x, axis):
    raise NotImplementedError("Exercise (step 40): sum over the axis with F.sum, then divide "
                              "by how many numbers each sum added (x's shape tells)")

# %%
#| solution
def mean(x, axis):
    x = dz.as_variable(x)
    return F.sum(x, axis=axis) / x.shape[axis]

# %%
#| check
m = dz.Variable(np.random.default_rng(1).normal(size=(4, 3)))
assert isinstance(mean(m, 0), dz.Variable), (
    f"mean should return a Variable, got {type(mean(m, 0)).__name__}: compute it with F.sum "
    "on x itself, not with NumPy on x.data, so that backward can go through it"
)
for axis in (0, 1):
    assert np.allclose(mean(m, axis).data, m.data.mean(axis=axis)), (
        f"mean(m, {axis}) should equal m.data.mean(axis={axis})"
    )
mean(m, 0).backward()
assert np.allclose(m.grad.data, 0.25), f"each of 4 rows gets 1/4 of the gradient, got {m.grad.data}"
assert gradient_check(lambda v: mean(v, 1), m.data)
print("self-check passed: mean is a sum divided by the axis length, gradient 1/n")

# %% [markdown]
# ## Exercise 2: the `Sum` function
# Write `Sum` over one axis yourself (no `keepdims`). `forward` sums the
# NumPy array over `self.axis` and remembers what `backward` will need of the
# input. In `backward`, `gy` has lost the summed axis: give it back with
# length 1 so that the shapes line up, then repeat it along that axis, as the
# picture above copies `gy` down (the intro of this step says how:
# `F.broadcast_to`, explained in step 41, repeats it). The self-check compares
# it with `F.sum` on a random (2, 3, 4) array for each axis and runs
# `gradient_check`.

# %%
#| exercise
class MySum(dz.Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        raise NotImplementedError("Exercise (step 40): sum the array over self.axis, and "
                                  "keep the input's shape for backward")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 40): gy lacks the summed axis; put it back "
                                  "with length 1, then repeat gy to the input's shape")

# %%
#| solution
class MySum(dz.Function):
    def __init__(self, axis):
        self.axis = axis

    def forward(self, x):
        self.x_shape = x.shape
        return x.sum(axis=self.axis)

    def backward(self, gy):
        shape = list(self.x_shape)
        shape[self.axis] = 1
        return F.broadcast_to(F.reshape(gy, tuple(shape)), self.x_shape)

# %%
#| check
check_rng = np.random.default_rng(0)
data = check_rng.normal(size=(2, 3, 4))
for axis in range(3):
    try:
        mine = MySum(axis)(dz.Variable(data.copy()))
    except NotImplementedError as e:
        raise AssertionError(f"MySum is not written yet: {e}") from None
    assert np.allclose(mine.data, F.sum(dz.Variable(data), axis=axis).data), (
        f"forward over axis {axis} should match F.sum"
    )
    gradient_check(lambda v, axis=axis: MySum(axis)(v), data,
                   hint=f"backward over axis {axis} is wrong: reshape gy with a 1 at the axis, "
                        "then broadcast")
print("self-check passed: MySum matches F.sum on every axis, and its gradient is right")
