# %% [markdown]
# # Step 38: Tensors — elementwise functions on arrays
#
# Until now our examples mostly used scalars: `Variable(np.array(3.0))`. Neural
# networks work with arrays of numbers — vectors, matrices, and higher
# dimensional *tensors*. The good news: every function we wrote so far already
# accepts arrays, because NumPy applies `np.sin`, `np.exp`, `*`, `+` element by
# element. This step checks that backpropagation works for arrays too, and
# fixes one rule that every step from here on depends on:
#
# > **The gradient of a variable has the same shape as the variable.**
#
# `x.grad[i, j]` answers "how much does the final result change if I nudge
# `x[i, j]`?", so there is exactly one gradient entry per element of `x`.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `AsType`, `astype`; `core` changes `Variable.backward` (it gains
# `gradient=`) and `_accumulate_leaf`, and gains `_writeable` and `Variable._seed`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `AsType` converts the dtype. Its gradient is the output's gradient converted back to the
# input's dtype (if that is a floating dtype: an integer input keeps the gradient's fractions),
# so the function keeps that dtype and no input (`retain_inputs(())`). `astype`
# returns `x` itself when the dtype already matches and no copy is asked for, so no node is
# added to the graph.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import Function


class AsType(Function):
    """y = x converted to ``dtype``; the gradient is converted back to x's dtype.

    Back to a floating (or complex) dtype only: an integer or boolean input keeps
    the gradient as it is, since rounding 0.5 to an integer would give 0.
    """

    def __init__(self, dtype, copy=False):
        self.dtype = np.dtype(dtype)
        self.copy = copy

    def forward(self, x):
        self.retain_inputs(())
        self.x_dtype = x.dtype
        return x.astype(self.dtype, copy=self.copy)

    def backward(self, gy):
        if self.x_dtype.kind not in "fc":
            return gy
        return astype(gy, self.x_dtype)


# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import as_variable


def astype(x, dtype, copy=False):
    """x as an array of ``dtype`` (differentiable); ``copy=True`` always makes a new array."""
    x = as_variable(x)
    if x.dtype == np.dtype(dtype) and not copy:
        return x
    return AsType(dtype, copy)(x)


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check, numerical_grad

x = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
y = F.sin(x)
print("y =", y)
print("y.shape:", y.shape)

# %% [markdown]
# With arrays come dtypes and views, and two rules for a **leaf's** gradient,
# which the core now applies where a gradient reaches a leaf (`_accumulate_leaf`):
#
# * it has the leaf's dtype. A float32 weight combined with a float64 constant
#   still gets a float32 gradient (PyTorch does the same), through `astype` above.
#   The exception is an integer (or boolean) leaf: its gradient stays a float
#   array, since rounding it would be a wrong number (the gradient of `x / 3` is
#   1/3, not 0). PyTorch refuses gradients for integer tensors altogether;
# * it is an ordinary writable array. The backward of `sum` hands out a
#   read-only broadcast view (`np.broadcast_to`), and an optimizer that updates
#   with the gradient in place would fail on it, so such a view is copied first.

# %%
#| export dezero_like/core.py
from dezero_like.core import _F, _add_grads


def _writeable(data):
    """NumPy says whether an array may be written; CuPy has no such flag, so a view
    with a zero stride (``broadcast_to``), whose elements alias, counts as read-only."""
    flag = getattr(data.flags, "writeable", None)
    return flag if flag is not None else (data.size <= 1 or 0 not in data.strides)


def _accumulate_leaf(x, gx):
    """Add ``gx`` to the gradient of the leaf ``x`` (in ``x``'s dtype, writable).

    An integer or boolean leaf keeps its gradient's own dtype: rounding a
    gradient to integers would turn 1/3 into 0.
    """
    data = gx.data
    if data.dtype != x.data.dtype and x.data.dtype.kind in "fc":
        gx = _F().astype(gx, x.data.dtype)
    elif not _writeable(data):
        gx = _F().astype(gx, data.dtype, copy=True)
    x.grad = gx if x.grad is None else _add_grads(x.grad, gx)


# %% [markdown]
# `backward` takes the seed as `gradient=` (the section "Seeds that are not all
# ones" below uses it). `_seed` checks it before any work is done: an array or
# a Variable of exactly the output's shape (step 63 says why nothing else is
# accepted).

# %%
#| export dezero_like/core.py Variable
from dezero_like import cuda
from dezero_like.core import Variable, _backprop, _is_array, using_config


def backward(self, gradient=None, retain_grad=False, create_graph=False, retain_graph=False):
    """Compute the gradient of this variable with respect to every leaf.

    * ``gradient``: the seed dL/d(self). Default: the ``.grad`` of this output when one was
      set (by hand, as in steps 6-9, or kept by ``retain_grad``), else ones.
    * ``retain_grad``: also keep ``.grad`` on the intermediate variables.
    * ``create_graph``: record the backward pass itself, so that the gradients
      can be differentiated again (implies ``retain_graph``).
    * ``retain_graph``: keep what the functions saved, so backward can run again.
    """
    if gradient is None and self.grad is not None and self.creator is not None:
        gradient = self.grad  # a seed set by hand: y.grad = ...; y.backward() (steps 6-9)
    seed = self._seed(gradient)
    with using_config("enable_backprop", create_graph):
        _backprop(self, seed, retain_grad, retain_graph or create_graph)


def _seed(self, gradient):
    """The first gradient, dL/d(self): ones, or ``gradient`` after checking it."""
    data = self.data
    if gradient is None:
        return Variable(cuda.get_array_module(data).ones_like(data), requires_grad=False)
    if isinstance(gradient, Variable):
        gradient = gradient.data
    if not _is_array(gradient):
        raise TypeError(
            "backward(gradient=...) takes an ndarray or a Variable, "
            f"got {type(gradient).__name__}"
        )
    if gradient.shape != data.shape:
        raise ValueError(
            f"backward(gradient=...) has shape {gradient.shape}, but the output "
            f"has shape {data.shape}; the seed must match the output's shape"
        )
    # astype copies: .grad never aliases the caller's array
    return Variable(gradient.astype(data.dtype), requires_grad=False)


# %% [markdown]
# ## What does backward mean for an array output?
#
# `backward()` starts from a seed gradient for `y`. When we do not give one
# (neither `gradient=` nor a `y.grad` set by hand, as in steps 6-9), the seed is
# an array of ones with `y`'s shape. That is the same as
# differentiating the **sum** of all elements, $L = \sum_{ij} y_{ij}$, because
# $\partial L / \partial y_{ij} = 1$ for every element.
#
# For an elementwise function $y_{ij} = f(x_{ij})$, element $y_{ij}$ depends only
# on $x_{ij}$. Its Jacobian is diagonal, so the chain rule collapses to an
# elementwise product:
#
# $$\frac{\partial L}{\partial x_{ij}} = \frac{\partial L}{\partial y_{ij}} f'(x_{ij}).$$
#
# That is exactly what `Sin.backward` computes with `gy * cos(x)` — the code
# never needed to change.

# %%
y.backward()
print("x.grad =", x.grad)
print("x.grad.shape:", x.grad.shape, "== x.shape:", x.grad.shape == x.shape)
print("equals cos(x):", np.allclose(x.grad.data, np.cos(x.data)))

# %% [markdown]
# The same three arrays as a picture. Look at one colour: a cell of `x`, the cell
# of `y` computed from it, and the cell of `x.grad` that backward filled in for it
# sit in the same place. `x.grad` is a (2, 3) grid, like `x`.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import draw_arrow, draw_cells, output_dir, save_figure

shades = np.array(["#cde", "#fdc", "#dfd", "#fcf", "#ffc", "#cff"]).reshape(x.shape)
fig, ax = plt.subplots(figsize=(8, 1.9))
draw_cells(ax, np.round(x.data, 2), 0, 2, f"x {x.shape}", shades, fontsize=9)
draw_arrow(ax, (3.3, 1), (5.7, 1), "sin", fontsize=9)
draw_cells(ax, np.round(y.data, 2), 6, 2, f"y = sin(x) {y.shape}", shades, fontsize=9)
draw_arrow(ax, (9.3, 1), (11.7, 1), "backward\ngy = ones", fontsize=9, lift=0.25)
draw_cells(ax, np.round(x.grad.data, 2), 12, 2, f"x.grad = cos(x) {x.grad.shape}", shades,
           fontsize=9)
ax.set(xlim=(-0.3, 15.3), ylim=(-0.3, 2.7))
ax.set_title("One gradient entry per element: x.grad has the shape of x", fontsize=10)
ax.set_aspect("equal")
ax.axis("off")
figure_path = save_figure(fig, output_dir(38) / "grad_shape.png")
plt.show()

# %% [markdown]
# ## Checking against numerical differentiation
#
# The gradient checker of step 10 works element by element: it nudges one entry
# and sees how the sum changes. `dezero_like.utils.gradient_check` does this for
# every element in float64 and compares with backprop. It also works for a
# composition of elementwise functions and operators:

# %%
def f(x):
    return F.exp(-x) * F.tanh(x) + x**2 / 3


data = np.random.default_rng(0).normal(size=(3, 4))
print("gradient_check passed:", gradient_check(f, data))
print("numerical grad shape:", numerical_grad(f, data).shape)

# %% [markdown]
# ## Seeds that are not all ones
#
# `backward(gradient=g)` seeds with any array of `y`'s shape. Backprop then
# computes $\sum_{ij} g_{ij}\, \partial y_{ij}/\partial x$: the gradient of a
# *weighted* sum. Weights of zero switch elements off:

# %%
x = dz.Variable(np.array([0.0, 1.0, 2.0]))
y = x**2
y.backward(gradient=np.array([1.0, 0.0, 10.0]))
print("weighted grad:", x.grad)  # 2x times the weights

# %% [markdown]
# ## Exercise 1: the product rule on a tensor
# For `a = Variable(np.arange(6.0).reshape(3, 2))`, build $b = \tanh(a)\, a$
# elementwise with `F.tanh` and `*`, backprop from $b$ (a (3, 2) output:
# which seed does backward use when none is given?) and store the gradient of
# `a` in `grad_a`. By the product rule its entries are
# $\tanh(a) + a(1 - \tanh^2 a)$.

# %%
#| exercise
a = dz.Variable(np.arange(6.0).reshape(3, 2))
grad_a = ...  # a's gradient (a Variable of shape (3, 2)) after backprop from b

# %%
#| solution
a = dz.Variable(np.arange(6.0).reshape(3, 2))
b = F.tanh(a) * a
b.backward()
grad_a = a.grad

# %%
#| check
assert isinstance(grad_a, dz.Variable), f"grad_a should be a.grad (a Variable), got {grad_a!r}"
assert grad_a.shape == (3, 2), f"the gradient keeps the input's shape (3, 2), got {grad_a.shape}"
t = np.tanh(a.data)
assert np.allclose(grad_a.data, t + a.data * (1 - t**2)), (
    "expected tanh(a) + a (1 - tanh(a)^2), element by element: is b = tanh(a) * a, and was "
    "backward run from b with its default seed?"
)
print("self-check passed: the gradient of tanh(a) * a is tanh(a) + a (1 - tanh^2 a)")

# %% [markdown]
# ## Exercise 2: rounding with a straight-through gradient
# Quantisation stores weights as integers (an int8 model is four times smaller
# than a float32 one), and quantisation-aware training rounds them already while
# it learns. But rounding is a staircase: its derivative is 0 between the steps
# and undefined at them, so an honest backward would stop every gradient. The
# **straight-through estimator** (STE) rounds in forward and, in backward,
# pretends the rounding was not there: the gradient passes through unchanged.
#
# Write `MyRoundSTE(dtype)`: `forward` rounds every entry of a float array to
# the *nearest* integer (careful: converting a float to an integer dtype on its
# own cuts the fractions off, so -2.7 would become -2) and returns the result in
# the target `dtype` (given; e.g. `np.int32`, or `np.float16` to save memory).
# `backward` is the straight-through one, and like `AsType` it must hand the
# gradient back in the input's dtype, recorded in the graph so that a second
# backward can pass through it again (which tool of this step does both?).
#
# `gradient_check` cannot test this one: numerical differentiation sees the flat
# steps and answers 0, which is exactly what the STE is meant to ignore. The
# self-check compares the forward with NumPy's rounding, and the gradients with
# what the STE promises: for $y = \operatorname{round}(x)$ and
# $z = y^2$, $\partial z/\partial x = 2y$, and differentiating
# $\sum w \cdot \partial z/\partial x$ once more gives $2w$.

# %%
#| exercise
class MyRoundSTE(dz.Function):
    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def forward(self, x):
        raise NotImplementedError("Exercise (step 38): remember x's dtype, then return x rounded "
                                  "to the nearest integers, in self.dtype")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 38): pass gy straight through, back in the "
                                  "dtype forward remembered, as a Variable")

# %%
#| solution
class MyRoundSTE(dz.Function):
    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def forward(self, x):
        self.x_dtype = x.dtype
        return np.rint(x).astype(self.dtype)

    def backward(self, gy):
        return F.astype(gy, self.x_dtype)

# %%
#| check
data = np.random.default_rng(0).normal(scale=3.0, size=(3, 4))
try:
    q = MyRoundSTE(np.int32)(dz.Variable(data.copy()))
except NotImplementedError as e:
    raise AssertionError(f"MyRoundSTE is not written yet: {e}") from None
assert q.dtype == np.int32, f"forward should return the target dtype int32, got {q.dtype}"
assert not np.array_equal(q.data, np.trunc(data)), (
    "forward cut the fractions off (-1.6 became -1): round to the nearest integer before "
    "converting to the target dtype"
)
assert np.array_equal(q.data, np.rint(data)), (  # NumPy's rounding is the reference
    "forward should round every entry to the nearest integer (-1.6 -> -2, 2.84 -> 3)"
)
gy = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
mine = MyRoundSTE(np.float16)
mine(dz.Variable(data.copy()))
gx = mine.backward(dz.Variable(gy))
assert isinstance(gx, dz.Variable), (
    f"backward should return a Variable, got {type(gx).__name__}: convert gy with a function "
    "of F, which records the conversion for a second backward (a NumPy method would not)"
)
assert gx.dtype == np.float64, f"backward should return the input's dtype float64, got {gx.dtype}"
assert np.allclose(gx.data, gy), (
    "the straight-through estimator passes the gradient on unchanged (only its dtype "
    "changes): the true derivative of rounding, 0, would stop learning"
)
to_int = MyRoundSTE(np.int32)
to_int(dz.Variable(data.astype(np.float32)))
gx32 = to_int.backward(dz.Variable(np.ones((3, 4), dtype=np.int32)))
assert gx32.dtype == np.float32, (
    f"for a float32 input, backward should return float32, got {gx32.dtype}: convert to the "
    "dtype forward remembered, not to a fixed one"
)
x = dz.Variable(data.copy())
(MyRoundSTE(np.float32)(x) ** 2).backward(create_graph=True)
grad_x = x.grad
assert np.allclose(grad_x.data, 2 * np.rint(data)), "z = round(x)^2 should give dz/dx = 2 round(x)"
x.cleargrad()
w = np.random.default_rng(2).normal(size=(3, 4))
grad_x.backward(gradient=w)
assert x.grad is not None and np.allclose(x.grad.data, 2 * w), (
    "a second backward through dz/dx should reach x with 2w: was the conversion in backward "
    "recorded in the graph (a function of F), so that the second pass can go through it?"
)
print("self-check passed: MyRoundSTE rounds forward and passes the gradient straight through")
