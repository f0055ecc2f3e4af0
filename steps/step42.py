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
# wanted) and `x` is an intermediate result, `MatMul` does not keep `x`'s array
# for backward: the graph keeps a stand-in node without data in its place.
# With large batches that saves real memory; step 69 returns to this idea.
# Below, `h` is an intermediate result, multiplied once by a `W` that wants a
# gradient and once by a constant copy of it; we look at what each `MatMul`
# kept of `h`:

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
# ## Exercise
# Compute the gradient of $L = \sum (xW)^2$ with respect to `W` by hand with
# NumPy (hint: $g_y = 2xW$) and store it in `by_hand`; it must equal backprop's.

# %%
x3 = dz.Variable(rng.normal(size=(4, 3)))
W3 = dz.Variable(rng.normal(size=(3, 2)))
F.sum(F.matmul(x3, W3) ** 2).backward()
by_hand = x3.data.T @ (2 * x3.data @ W3.data)  # solution:
assert by_hand.shape == W3.shape
assert np.allclose(by_hand, W3.grad.data)
print("self-check passed")
