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
# In this step `core` gains `Variable.sum`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _F


def sum(self, axis=None, keepdims=False):
    return _F().sum(self, axis, keepdims)


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
# Both functions pass the numerical gradient check. The random weights make
# every output element count differently, so a wrong placement would show:

# %%
rng = np.random.default_rng(0)
data = rng.normal(size=(2, 3, 4))
w = rng.normal(size=(2, 4))
print(gradient_check(lambda v: F.sum(v, axis=1) * w, data))
w2 = rng.normal(size=(3, 1))
print(gradient_check(lambda v: F.sum_to(v, (3, 1)) * w2, data))

# %% [markdown]
# ## Exercise
# The mean over an axis is a sum divided by the axis length. Write
# `mean(x, axis)` with `F.sum`, and check that the gradient of `mean(x, 0)` of a
# (4, 3) array is 1/4 everywhere.

# %%
def mean(x, axis):
    x = dz.as_variable(x)
    return F.sum(x, axis=axis) / x.shape[axis]  # solution:


m = dz.Variable(np.random.default_rng(1).normal(size=(4, 3)))
mean(m, 0).backward()
assert np.allclose(mean(m, 0).data, m.data.mean(axis=0))
assert np.allclose(m.grad.data, 0.25)
print("self-check passed")
