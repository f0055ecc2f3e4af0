# %% [markdown]
# # Step 39: `reshape` and `transpose`
#
# Some functions do no arithmetic at all: they only **move elements around**.
# `reshape` reads the same elements in the same order into a different shape;
# `transpose` permutes the axes. They matter because networks constantly
# change the layout of data (a batch of images flattened into rows, a weight
# matrix used as $W^\top$).
#
# How do gradients flow through a pure rearrangement? Each output element *is*
# one input element, moved. So its gradient simply goes back to where the
# element came from: the backward pass applies the **inverse** rearrangement
# to the gradient.
#
# | forward | backward |
# | --- | --- |
# | `reshape(x, shape)` | `reshape(gy, x.shape)` |
# | `transpose(x, axes)` | `transpose(gy, inverse(axes))` |

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Variable.transpose`, `Variable.T` (and `_pytorch_transpose`, which
# catches PyTorch's two-axis `x.transpose(0, 1)`, with `_swap_order`, the order of all the axes
# that swaps two, which every message about it names); `functions` gains `Transpose`,
# `transpose`, `expand_dims`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Variable` gains `transpose` and the property `T`. `transpose` accepts the axes as separate
# numbers (`x.transpose(1, 0)`), as one tuple (`x.transpose((1, 0))`) or not at all (all axes
# reversed), and hands them to `functions.transpose` as one tuple or `None`.
#
# The axes are NumPy's: the new order of *all* the axes. PyTorch's `x.transpose(0, 1)` names
# two axes to swap, so the same words mean different things. On a matrix, `(0, 1)` here is
# the order it already has, and nothing moves: `transpose` warns and says to write `x.T` or
# `x.transpose(1, 0)`. With more axes two numbers are not a full order, and the error says
# which one swaps them: PyTorch's `x.transpose(1, 2)` of a 3-d `x` is `x.transpose(0, 2, 1)`.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _F, _pytorch_transpose


def transpose(self, *axes):
    if not axes:
        axes = None
    elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
        axes = axes[0]
    elif len(axes) == 2 and self.ndim >= 2 and all(type(a) is int for a in axes):
        _pytorch_transpose(self.ndim, axes)  # PyTorch's x.transpose(0, 1): two axes to swap
    return _F().transpose(self, axes)


@property
def T(self):
    return _F().transpose(self)


# %%
#| export dezero_like/core.py
import warnings


def _swap_order(ndim, a, b):
    """The order of all ``ndim`` axes that swaps axes ``a`` and ``b`` (PyTorch's transpose)."""
    order = list(range(ndim))
    a, b = a % ndim, b % ndim
    order[a], order[b] = order[b], order[a]
    return tuple(order)


def _pytorch_transpose(ndim, axes):
    """Warn about (0, 1) on a matrix, which keeps the order; refuse two axes of more."""
    if not all(-ndim <= a < ndim for a in axes):
        return  # NumPy's own error names the axis out of range
    if ndim == 2:
        if tuple(a % ndim for a in axes) == (0, 1):
            warnings.warn(
                f"x.transpose{axes} keeps the axes in their order (NumPy's meaning: the new "
                "order of all the axes), so nothing moves; PyTorch's transpose(0, 1) swaps two "
                "axes: to swap them, write x.T or x.transpose(1, 0)", UserWarning, stacklevel=3)
        return
    raise ValueError(
        f"x.transpose{axes} on a {ndim}-d Variable: transpose takes the new order of all "
        f"{ndim} axes (NumPy's meaning), not two axes to swap as PyTorch's does. To swap axes "
        f"{axes[0]} and {axes[1]}, write x.transpose{_swap_order(ndim, *axes)}")


# %% [markdown]
# `Transpose` moves numbers without changing them, so backward moves the gradient back with the
# inverse permutation, `np.argsort(axes)` (explained below); `a % len(self.axes)` first turns a
# negative axis such as -1 into its positive number. With `axes=None` (all axes reversed),
# reversing again undoes it. Nothing of the input is kept. Axes that are not an order of all
# the input's axes (`F.transpose(x, (1, 0))` on a 3-d `x`, PyTorch's two axes to swap) make NumPy
# say only "axes don't match array"; `_refuse_axes` says what `axes` must be instead. It runs
# only when NumPy has refused, so a transpose that works costs nothing more.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import Function, _swap_order


def _refuse_axes(axes, shape):
    """Say why ``axes`` is no order of the axes of an array of ``shape``, and what to write."""
    ndim = len(shape)
    hint = ""
    if len(axes) == 2 and ndim > 2 and all(-ndim <= a < ndim for a in axes):
        hint = (f"; to swap axes {axes[0]} and {axes[1]} (PyTorch's transpose), write "
                f"transpose(x, {_swap_order(ndim, *axes)})")
    raise ValueError(
        f"transpose: axes {axes} do not fit an input of shape {tuple(shape)}: they are the new "
        f"order of all {ndim} axes, each of 0 .. {ndim - 1} once ({tuple(range(ndim))[::-1]} "
        f"reverses them){hint}") from None


class Transpose(Function):
    """y = x with axes permuted; the gradient is permuted back."""

    def __init__(self, axes=None):
        self.axes = None if axes is None else tuple(axes)

    def forward(self, x):
        self.retain_inputs(())
        try:
            return x.transpose(self.axes)
        except ValueError:  # NumPy's "axes don't match array", "repeated axis", an AxisError
            _refuse_axes(self.axes, x.shape)

    def backward(self, gy):
        if self.axes is None:
            return transpose(gy)
        inverse = tuple(np.argsort([a % len(self.axes) for a in self.axes]))
        return transpose(gy, inverse)


# %%
#| export dezero_like/functions.py
from dezero_like.core import Variable, _refuse_keywords, _swap_order

_SWAP_KEYWORDS = {  # PyTorch's torch.transpose(x, dim0, dim1) swaps two axes
    "dim0": "F.transpose takes axes=, the new order of all the axes (NumPy's meaning), not two "
            "axes to swap: F.transpose(x, (1, 0, 2)) swaps axes 0 and 1 of a 3-d x (x.T "
            "reverses them all)",
    "dim1": "the other axis of the swap: both go into axes=, as for dim0",
}


def transpose(x, axes=None, *more, **others):
    if others:  # PyTorch's torch.transpose(x, dim0=0, dim1=1)
        _refuse_keywords("F.transpose", others, _SWAP_KEYWORDS)
    if more:  # PyTorch's torch.transpose(x, 0, 1): two axes to swap, one argument each
        _two_axes_to_swap(x, (axes, *more))
    return Transpose(axes)(x)


def _two_axes_to_swap(x, given):
    """Refuse ``F.transpose(x, 0, 1)``, saying which order of all the axes swaps the two."""
    ndim = np.ndim(x.data if isinstance(x, Variable) else x)
    fix = "F.transpose(x, (1, 0, ...)): the new order of all the axes, in one tuple"
    if len(given) == 2 and all(type(a) is int and -ndim <= a < ndim for a in given):
        fix = f"F.transpose(x, {_swap_order(ndim, *given)}) to swap axes {given[0]} and {given[1]}"
    raise TypeError(
        f"F.transpose(x, {', '.join(map(repr, given))}) takes the axes in one argument, the new "
        f"order of all of them (NumPy's meaning), not two axes to swap as PyTorch's "
        f"torch.transpose does: write {fix}")


# %% [markdown]
# `expand_dims(x, axis)` inserts an axis of length 1, as `np.expand_dims` does (PyTorch calls it
# `unsqueeze`). It needs no `Function` of its own: it is a `reshape` to the longer shape, so its
# gradient is reshaped back. As in NumPy, a negative axis counts from the end of the *result*
# (`-1` appends an axis) and a tuple inserts several.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import as_variable
from dezero_like.core import _DIM_KEYWORD, _REQUIRED, _refuse_keywords
from dezero_like.functions import reshape


def expand_dims(x, axis=_REQUIRED, **others):
    """``x`` with a new axis of length 1 at ``axis`` (an int or a tuple), like ``np.expand_dims``.

    A negative axis counts from the end of the result. Made with :func:`reshape`.
    """
    if others or axis is _REQUIRED:  # PyTorch's torch.unsqueeze(x, dim=0), say
        _refuse_keywords("F.expand_dims", others, _DIM_KEYWORD, axis=axis)
    x = as_variable(x)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    if not all(isinstance(a, (int, np.integer)) and -ndim <= a < ndim for a in axes):
        raise ValueError(f"expand_dims: axis {axis} is out of range for a result of {ndim} "
                         f"dimensions (x has shape {x.shape}); use axes in {-ndim}..{ndim - 1}")
    new = {int(a) % ndim for a in axes}
    if len(new) < len(axes):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    rest = iter(x.shape)
    return reshape(x, tuple(1 if i in new else next(rest) for i in range(ndim)))


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

x = dz.Variable(np.arange(6.0).reshape(2, 3))
y = F.reshape(x, (6,))
print("y =", y)
y.backward(gradient=np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0]))
print("x.grad =", x.grad)

# %% [markdown]
# Each gradient landed on the element that produced it: `y[4]` came from
# `x[1, 1]`, so `x.grad[1, 1]` is 50. The gradient has `x`'s shape again.
#
# Variables also have the NumPy-style methods `x.reshape(...)`, `x.transpose(...)`
# and `x.T`; they call the same functions, so they are differentiable too:

# %%
x = dz.Variable(np.arange(6.0).reshape(2, 3))
print(x.reshape(3, 2).shape, x.reshape((6, 1)).shape, x.T.shape)
print("expand_dims:", F.expand_dims(x, 0).shape, F.expand_dims(x, -1).shape)

# %% [markdown]
# ## Transposing with an axis order
#
# `transpose(x, axes)` puts input axis `axes[i]` at position `i`. To undo it we
# need the *inverse permutation*: position `axes[i]` must get axis `i` back. For
# a permutation stored as an array, `np.argsort(axes)` is exactly that inverse.

# %%
axes = (2, 0, 1)
inverse = tuple(int(i) for i in np.argsort(axes))
print("axes", axes, "-> inverse", inverse)
a = np.random.default_rng(0).normal(size=(2, 3, 4))
print("round trip is identity:",
      np.array_equal(a.transpose(axes).transpose(inverse), a))

x = dz.Variable(a)
y = F.transpose(x, axes)
print("y.shape:", y.shape)
weights = np.random.default_rng(1).normal(size=y.shape)
F.sum(y * weights).backward()
print("x.grad.shape:", x.grad.shape)
print("x.grad equals the weights moved back:",
      np.array_equal(x.grad.data, weights.transpose(inverse)))

# %% [markdown]
# Both rearrangements in a picture. Top: `reshape` reads the cells of `x` in order 0, 1, 2, ...
# and fills `y` in the same order (the colour is the row of `x` a number came from). Bottom: a
# (2, 3, 4) array numbered 0 to 23 (blue: `x[0]`, orange: `x[1]`), moved by
# `transpose(x, (2, 0, 1))`. Backward gets `gy = y` (each number sent back as its own gradient)
# and permutes it with the inverse `(1, 2, 0)`: every number lands in the cell it left, so
# `x.grad` looks exactly like `x`.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import draw_arrow, draw_cells, output_dir, save_figure

out_dir = output_dir(39)  # every file this step writes goes here
shades = np.array(["#cde", "#fdc"])  # a cell's colour: which row (or block) of x it came from


fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), height_ratios=(1, 2.4))
grid = dz.Variable(np.arange(6.0).reshape(2, 3))  # the numbers are the reading order
rows = np.repeat([[0], [1]], 3, axis=1)  # each cell's row in grid
draw_cells(top, grid.data, 0, 2, "x (2, 3)", shades[rows])
draw_arrow(top, (3.4, 1), (5.6, 1), "reshape", lift=0.25)
draw_cells(top, F.reshape(grid, (6,)).data, 5.8, 1.5, "y (6,)", shades[rows.ravel()])
top.text(6, -0.1, "backward: reshape(gy, (2, 3)) reads gy back in the same order", fontsize=8)
top.set(xlim=(-0.3, 12.2), ylim=(-0.4, 2.6))
top.set_title("reshape keeps the reading order", fontsize=9)

cube = dz.Variable(np.arange(24.0).reshape(2, 3, 4))
moved = F.transpose(cube, axes)
moved.backward(gradient=moved.data)  # each number goes back as its own gradient
block = np.broadcast_to(np.arange(2)[:, None, None], cube.shape)  # each cell's block in x
for k in range(2):
    draw_cells(bottom, cube.data[k], 0, 7 - 4 * k, f"x[{k}]", shades[block[k]])
    draw_cells(bottom, cube.grad.data[k], 17, 7 - 4 * k, f"x.grad[{k}]", shades[block[k]])
for k in range(4):
    draw_cells(bottom, moved.data[k], 7 + 4 * (k % 2), 7 - 3.5 * (k // 2), f"y[{k}]",
               shades[block.transpose(axes)[k]])
draw_arrow(bottom, (4.3, 5), (6.7, 5), f"transpose\n{axes}", lift=0.25)
draw_arrow(bottom, (14.3, 5), (16.7, 5), f"backward\n{inverse}", lift=0.25)
bottom.set(xlim=(-0.3, 21.3), ylim=(-0.4, 7.6))
bottom.set_title("x (2, 3, 4) -> y (4, 2, 3) -> x.grad (2, 3, 4), with gy = y", fontsize=9)
for ax in (top, bottom):
    ax.set_aspect("equal")
    ax.axis("off")
save_figure(fig, out_dir / "rearrange.png")
plt.show()

# %% [markdown]
# The gradient checker confirms both functions numerically. It weighs each
# output element by its own number before adding them up (step 23), so *where*
# each gradient lands matters: with a plain sum every element's gradient would
# be 1 wherever it went, and a reshape that scrambled the order would pass.

# %%
print("gradient check, reshape:  ", gradient_check(lambda v: F.reshape(v, (3, 2)),
                                                  np.ones((2, 3))))
print("gradient check, transpose:", gradient_check(lambda v: F.transpose(v, axes), a))

# %% [markdown]
# ## Exercise 1: swapping the last two axes
# Write `swap_last_two(v)` that swaps the last two axes of a 3-D Variable using
# `F.transpose`. The self-check verifies that the gradient of
# `sum(swap_last_two(v) * w)` for a weight `w` of the output's shape is `w`
# with its last two axes swapped back.

# %%
#| exercise
def swap_last_two(v):
    raise NotImplementedError(
        "Exercise (step 39): F.transpose(v, axes) puts input axis axes[i] at place i; which "
        "order of the three axes keeps axis 0 first and exchanges the other two?")

# %%
#| solution
def swap_last_two(v):
    return F.transpose(v, (0, 2, 1))

# %%
#| check
v = dz.Variable(np.zeros((2, 3, 4)))
w = np.random.default_rng(2).normal(size=(2, 4, 3))
out = swap_last_two(v)
assert out.shape == (2, 4, 3), f"a (2, 3, 4) input should become (2, 4, 3), got {out.shape}"
F.sum(out * w).backward()
assert np.array_equal(v.grad.data, w.transpose(0, 2, 1)), (
    "the gradient should be w with its last two axes swapped back"
)
print("self-check passed: swap_last_two swaps the axes, and its gradient swaps them back")

# %% [markdown]
# ## Exercise 2: `Transpose` with any permutation
# Write the `Transpose` function yourself, for an explicit permutation
# `axes` (given to `__init__`). `forward` gets a NumPy array: put its axes in
# the order `axes`. In `backward`, `gy` has the output's layout, and each
# gradient must go back to the cell its element came from: permute `gy`
# **back**, with the inverse permutation (reread "Transposing with an axis
# order" above, and the picture), using `F.transpose` so that the result is a
# Variable. The self-check compares it with `F.transpose` on a random
# (2, 3, 4) array and runs `gradient_check` for two permutations.

# %%
#| exercise
class MyTranspose(dz.Function):
    def __init__(self, axes):
        self.axes = tuple(axes)

    def forward(self, x):
        raise NotImplementedError("Exercise (step 39): return the array x with its axes in "
                                  "the order self.axes (NumPy arrays have a method for it)")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 39): permute gy back with F.transpose and "
                                  "the inverse of self.axes (which permutation undoes it?)")

# %%
#| solution
class MyTranspose(dz.Function):
    def __init__(self, axes):
        self.axes = tuple(axes)

    def forward(self, x):
        return x.transpose(self.axes)

    def backward(self, gy):
        return F.transpose(gy, tuple(np.argsort(self.axes)))

# %%
#| check
data = np.random.default_rng(0).normal(size=(2, 3, 4))
for axes in [(1, 2, 0), (2, 0, 1)]:
    try:
        mine = MyTranspose(axes)(dz.Variable(data.copy()))
    except NotImplementedError as e:
        raise AssertionError(f"MyTranspose is not written yet: {e}") from None
    assert np.array_equal(mine.data, F.transpose(dz.Variable(data), axes).data), (
        f"forward with axes {axes} should match F.transpose"
    )
    gradient_check(lambda v, axes=axes: MyTranspose(axes)(v), data,
                   hint=f"backward with axes {axes} is wrong: permute gy by the inverse of axes, "
                        "the order that puts every axis back in its place, not axes itself")
print("self-check passed: MyTranspose matches F.transpose, and its gradient is permuted back")
