# %% [markdown]
# # Step 42: `matmul`, the matrix product
#
# A layer of a neural network multiplies a batch of inputs `x` (N rows, one per
# example, D features) by a weight matrix `W` (D inputs, H outputs):
# $y = xW$, shape (N, H). This one operation does most of the arithmetic of
# deep learning, so its backward deserves a careful look.
#
# Write one element: $y_{nh} = \sum_d x_{nd} W_{dh}$. Then
#
# $$\frac{\partial L}{\partial x_{nd}} = \sum_h \frac{\partial L}{\partial y_{nh}} W_{dh}
#   \quad\text{and}\quad
#   \frac{\partial L}{\partial W_{dh}} = \sum_n x_{nd} \frac{\partial L}{\partial y_{nh}},$$
#
# which are again matrix products:
#
# $$g_x = g_y W^\top \quad (N\times H)(H\times D) = (N\times D), \qquad
#   g_W = x^\top g_y \quad (D\times N)(N\times H) = (D\times H).$$
#
# A handy way to remember them: each gradient must have the shape of its input,
# and there is only one way to multiply $g_y$ with the other factor (or its
# transpose) to get that shape.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `MatMul`, `matmul`; `core` gains `Variable.__matmul__` and
# `Variable.__rmatmul__` (the `@` operator).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `_check_matmul_shapes` checks the shapes before NumPy does, so that a mismatch says which axes
# must agree: the last axis of the first operand and the second-to-last (for a vector, the only)
# axis of the second. A 0-d operand is refused with a hint to use `*`.

# %%
#| export dezero_like/functions.py
def _check_matmul_shapes(a_shape, b_shape, where):
    """Raise a clear error when ``a @ b`` is impossible (the inner sizes differ)."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ValueError(
            f"{where}: matmul needs arrays with at least one axis, got shapes {a_shape} and "
            f"{b_shape}; use * to multiply by a scalar"
        )
    k_a = a_shape[-1]
    k_b = b_shape[0] if len(b_shape) == 1 else b_shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"{where}: cannot multiply shapes {a_shape} @ {b_shape}: the last axis of the first "
            f"({k_a}) must equal the {'only' if len(b_shape) == 1 else 'second-to-last'} axis of "
            f"the second ({k_b})"
        )


# %% [markdown]
# `_swap_last` transposes the last two axes: `x.T` for a matrix, each matrix of a stack
# otherwise. It is the transpose that the gradient formulas below need.

# %%
#| export dezero_like/functions.py
from dezero_like.functions import transpose


def _swap_last(x):
    """Transpose of the last two axes of a Variable (``x.T`` for a matrix)."""
    if x.ndim == 2:
        return transpose(x)
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return transpose(x, axes)


# %% [markdown]
# `MatMul`: for matrices, the gradient of `x` is `gy @ W.T` and that of `W` is `x.T @ gy`. So
# `x`'s gradient reads only `W`, and `W`'s only `x`: forward keeps `W` only when `x` needs a
# gradient, and `x` only when `W` does (with no graph recorded, `needs_input_grad` is empty and
# `(True, True)` stands in). Vectors and stacks of matrices are brought back to this case: the
# missing axes are restored, and gradients are summed over broadcast batch axes (`sum_to`).

# %%
#| export dezero_like/functions.py
from dezero_like.core import Function
from dezero_like.functions import reshape, sum_to


class MatMul(Function):
    """y = x @ W with NumPy's rules (1-D operands, stacks of matrices that broadcast).

    For matrices, dL/dx = gy @ W.T and dL/dW = x.T @ gy. A 1-D operand is
    treated as a row (x) or a column (W) with that axis removed from y; for
    stacks, the same products are taken per matrix and the gradient is summed
    over the batch axes that were broadcast (``sum_to``).
    """

    def forward(self, x, W):
        _check_matmul_shapes(x.shape, W.shape, "matmul")
        n0, n1 = self.needs_input_grad or (True, True)
        self.retain_inputs(((1,) if n0 else ()) + ((0,) if n1 else ()))
        self.shapes = (x.shape, W.shape)
        return x @ W

    def backward(self, gy):
        x, W = self.inputs
        n0, n1 = self.needs_input_grad
        x_shape, W_shape = self.shapes
        if len(x_shape) == 2 and len(W_shape) == 2:  # the common case, as in the book
            gx = matmul(gy, W.T) if n0 else None
            gW = matmul(x.T, gy) if n1 else None
            return gx, gW
        # Give 1-D operands (and the matching axis of gy) their missing axis back,
        # so every product below is between stacks of matrices.
        if len(x_shape) == 1:
            gy = reshape(gy, gy.shape[:-1] + (1,) + gy.shape[-1:]) if len(W_shape) > 1 \
                else reshape(gy, (1,) + gy.shape)
        if len(W_shape) == 1:
            gy = reshape(gy, gy.shape + (1,))
        gx = gW = None
        if n0:
            W2 = reshape(W, (W_shape[0], 1)) if len(W_shape) == 1 else W
            gx = _summed_product(gy, _swap_last(W2), _matrix_shape(x_shape, row=True))
            gx = reshape(gx, x_shape)
        if n1:
            x2 = reshape(x, (1, x_shape[0])) if len(x_shape) == 1 else x
            gW = _summed_product(_swap_last(x2), gy, _matrix_shape(W_shape, row=False))
            gW = reshape(gW, W_shape)
        return gx, gW


# %% [markdown]
# `_matrix_shape` gives the shape of a 1-D operand once its missing axis is restored (a row for
# `x`, a column for `W`), the shape that `sum_to` sums its gradient down to. `_summed_product`
# is that product and sum. In float16 it multiplies and sums in float32 and rounds once, as
# PyTorch does: rounded after each matrix's product and again after the sum, the gradient of a
# vector `x` in `x @ W` with `W` of shape (8, 64, 32) was up to 16 units in the last place
# away from the exact one where the sum was near 0 (PyTorch's: half a unit). `matmul` is the
# wrapper.

# %%
#| export dezero_like/functions.py
import numpy as np

from dezero_like.functions import astype


def _summed_product(a, b, shape):
    """``sum_to(matmul(a, b), shape)``; float16 in float32, rounded to float16 once."""
    if a.dtype == b.dtype == np.float16:
        return astype(sum_to(matmul(astype(a, np.float32), astype(b, np.float32)), shape),
                      np.float16)
    return sum_to(matmul(a, b), shape)


def _matrix_shape(shape, row):
    """The shape of an operand after its missing axis is restored (row for x, column for W)."""
    if len(shape) != 1:
        return shape
    return (1, shape[0]) if row else (shape[0], 1)


def matmul(x, W):
    """Matrix product ``x @ W`` (NumPy's rules: 1-D operands and broadcast stacks)."""
    return MatMul()(x, W)


# %% [markdown]
# `Variable` gets the `@` operator (`__matmul__`, and `__rmatmul__` for
# `ndarray @ variable`); both call `matmul`.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _F


def __matmul__(self, other):
    return _F().matmul(self, other)


def __rmatmul__(self, other):
    return _F().matmul(other, self)


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import numerical_grad

rng = np.random.default_rng(0)
x = dz.Variable(rng.normal(size=(2, 3)))
W = dz.Variable(rng.normal(size=(3, 4)))
y = F.matmul(x, W)
print("y.shape:", y.shape)
y.backward()
print("x.grad.shape:", x.grad.shape, " W.grad.shape:", W.grad.shape)

# %% [markdown]
# The three products of the introduction, drawn to scale for these shapes (one square per
# element: N = 2 rows of x, D = 3 features, H = 4 outputs). Each row is one matrix product,
# and in each the inner sizes agree. A colour marks where a matrix came from: orange is `x`
# (or its transpose, or its gradient), blue is `W`, green is `y` and its gradient `gy`. So
# `gx` is `gy` times `W` turned over, and comes out orange, in `x`'s shape; `gW` is `x` turned
# over times `gy`, in `W`'s shape.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(42)  # every file this step writes goes here
(N, D), H = x.shape, W.shape[1]
sizes = {"N": N, "D": D, "H": H}
colours = {"x": "#ffd08a", "W": "#a8d8f0", "y": "#c8e6c0"}  # a transpose keeps its colour


def block(ax, left, middle, name, shape, colour):
    """A matrix drawn to scale, one square per element, centred on the height ``middle``."""
    rows, cols = sizes[shape[0]], sizes[shape[1]]
    top = middle + rows / 2
    for i in range(rows):
        for j in range(cols):
            ax.add_patch(plt.Rectangle((left + j, top - i - 1), 1, 1, fc=colour, ec="w"))
    ax.add_patch(plt.Rectangle((left, top - rows), cols, rows, fill=False, ec="k"))
    ax.text(left + cols / 2, middle, name, ha="center", va="center", fontsize=11)
    ax.text(left + cols / 2, top - rows - 0.45, f"({shape[0]}×{shape[1]})", ha="center",
            va="center", fontsize=9)
    return left + cols


fig, ax = plt.subplots(figsize=(6, 4.2))
lines = [("y = x W", [("x", "ND", "x"), ("W", "DH", "W"), ("y", "NH", "y")]),
         ("gx = gy Wᵀ", [("gy", "NH", "y"), ("Wᵀ", "HD", "W"), ("gx", "ND", "x")]),
         ("gW = xᵀ gy", [("xᵀ", "DN", "x"), ("gy", "NH", "y"), ("gW", "DH", "W")])]
for k, (formula, (a, b, c)) in enumerate(lines):
    middle = -5.2 * k
    ax.text(-0.5, middle, formula, ha="right", va="center", fontsize=11)
    right = block(ax, 0, middle, a[0], a[1], colours[a[2]])
    ax.text(right + 0.6, middle, "@", ha="center", va="center", fontsize=12)
    right = block(ax, right + 1.2, middle, b[0], b[1], colours[b[2]])
    ax.text(right + 0.6, middle, "=", ha="center", va="center", fontsize=12)
    block(ax, right + 1.2, middle, c[0], c[1], colours[c[2]])
ax.set(xlim=(-5, 13.7), ylim=(-13.2, 2.6), title=f"N = {N}, D = {D}, H = {H}: inner sizes "
       "match, and each gradient has its input's shape")
ax.title.set_fontsize(9)
ax.set_aspect("equal")
ax.axis("off")
save_figure(fig, out_dir / "matmul_shapes.png")
plt.show()

# %% [markdown]
# The seed was all ones, so $g_x = \mathbf{1} W^\top$: every row of `x.grad` is
# the row sums of `W`. Let us compare both gradients with the formulas and with
# numerical differentiation:

# %%
gy = np.ones((2, 4))
print("g_x = g_y W^T:", np.allclose(x.grad.data, gy @ W.data.T))
print("g_W = x^T g_y:", np.allclose(W.grad.data, x.data.T @ gy))
num_x = numerical_grad(lambda v: F.matmul(v, W), x.data)
num_W = numerical_grad(lambda v: F.matmul(x, v), W.data)
print("numerical agrees:", np.allclose(num_x, x.grad.data), np.allclose(num_W, W.grad.data))

# %% [markdown]
# The `@` operator works on Variables too, and the backward itself is built from
# `matmul` and `transpose` — so it can be differentiated again (step 30).
#
# ## Only what backward needs
#
# $g_x$ needs `W` and $g_W$ needs `x`. If `W` is a constant (no gradient
# wanted), backward never reads `x`, and `MatMul.forward` says so with
# `retain_inputs` (step 23). At this step that is only recorded: every input is
# still kept. From step 69 on the package acts on it: when `x` is an
# intermediate result, the graph keeps a stand-in node without data in its
# place, which with large batches saves real memory. Below, `h` is an
# intermediate result, multiplied once by a `W` that wants a gradient and once
# by a constant copy of it; we look at what each `MatMul` kept of `h` (with the
# finished package, as in the notebook, the constant's `MatMul` keeps no array;
# with the package as it stood at this step, both keep it):

# %%
x2 = dz.Variable(rng.normal(size=(5, 3)))
h = F.sin(x2)  # an intermediate result (it has a creator)
W_const = dz.Variable(W.data, requires_grad=False)
for label, weight in [("W wants a gradient", W), ("W is a constant  ", W_const)]:
    kept = (h @ weight).creator.inputs[0]
    print(f"{label}: MatMul keeps h's array: {kept.data is not None}")
y2 = h @ W_const
y2.backward()
print("x2.grad.shape through the constant W:", x2.grad.shape)

# %% [markdown]
# ## Exercise 1: the weight gradient by hand
# Compute the gradient of $L = \sum (xW)^2$ with respect to `W` by hand with
# NumPy and store it in `by_hand`; it must equal backprop's. Go backwards in
# two steps: first $g_y = \partial L/\partial y$ for $y = xW$ (each element
# of $y$ is squared, then all are added), then the rule for $g_W$ from the
# introduction; the picture above shows which factor is transposed.

# %%
#| exercise
x3 = dz.Variable(rng.normal(size=(4, 3)))
W3 = dz.Variable(rng.normal(size=(3, 2)))
F.sum(F.matmul(x3, W3) ** 2).backward()
by_hand = ...  # dL/dW in NumPy, from x3.data and W3.data: g_y first, then g_W

# %%
#| solution
x3 = dz.Variable(rng.normal(size=(4, 3)))
W3 = dz.Variable(rng.normal(size=(3, 2)))
F.sum(F.matmul(x3, W3) ** 2).backward()
by_hand = x3.data.T @ (2 * x3.data @ W3.data)

# %%
#| check
assert isinstance(by_hand, np.ndarray), f"by_hand should be a NumPy array, got {by_hand!r}"
assert by_hand.shape == W3.shape, f"the gradient has W's shape {W3.shape}, got {by_hand.shape}"
assert np.allclose(by_hand, W3.grad.data), (
    "by_hand differs from backprop's W3.grad: is g_y the derivative of the sum of squares "
    "of y, and is it multiplied by x turned over, on the correct side?"
)
print("self-check passed: x^T (2 x W) is backprop's gradient for W")

# %% [markdown]
# ## Exercise 2: `MatMul` for matrices
# Write the common case of `MatMul` yourself, for two matrices: `forward`
# multiplies the two arrays; `backward` returns one gradient per input, the
# two formulas of the introduction (the picture checks their shapes). Build
# them from the input Variables (`self.inputs`) with `F.matmul` and `.T`, so
# that backward can be differentiated again. The self-check compares it with
# `F.matmul` on random matrices and runs `gradient_check` for both inputs.

# %%
#| exercise
class MyMatMul(dz.Function):
    def forward(self, x, W):
        raise NotImplementedError("Exercise (step 42): the matrix product of the two arrays")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 42): take x and W from self.inputs and "
                                  "return (gx, gW): each has its input's shape, and only one "
                                  "product of gy with the other factor (or its .T) gives it")

# %%
#| solution
class MyMatMul(dz.Function):
    def forward(self, x, W):
        return x @ W

    def backward(self, gy):
        x, W = self.inputs
        return F.matmul(gy, W.T), F.matmul(x.T, gy)

# %%
#| check
check_rng = np.random.default_rng(0)
xa, Wa = check_rng.normal(size=(4, 3)), check_rng.normal(size=(3, 2))
try:
    prod = MyMatMul()(dz.Variable(xa), dz.Variable(Wa))
except NotImplementedError as e:
    raise AssertionError(f"MyMatMul is not written yet: {e}") from None
assert prod.shape == (4, 2), f"(4, 3) @ (3, 2) should be (4, 2), got {prod.shape}"
assert np.allclose(prod.data, F.matmul(xa, Wa).data), "forward should match F.matmul"
Xv, Wv = dz.Variable(xa), dz.Variable(Wa)
for hint, f, at in (("g_x is wrong: g_y W^T", lambda v: MyMatMul()(v, Wv), xa),
                     ("g_W is wrong: x^T g_y", lambda v: MyMatMul()(Xv, v), Wa)):
    dz.utils.gradient_check(f, at, hint=hint)
print("self-check passed: MyMatMul matches F.matmul, and both gradients are right")
