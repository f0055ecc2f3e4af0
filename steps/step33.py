# %% [markdown]
# # Step 33: Newton's method with automatic second derivatives
#
# Step 29 ran Newton's method $x \leftarrow x - f'(x)/f''(x)$ on
# $f(x) = x^4 - 2x^2$, but $f''$ was worked out by hand. Now the framework can
# do it (steps 30–32): one backward with `create_graph=True` gives $f'$ with a
# graph, a second backward of $f'$ gives $f''$. Nothing else changes, so the
# iterates must be **exactly** those of step 29.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def f(x):
    return x**4 - 2 * x**2


x = dz.Variable(np.array(2.0))
iterates = [float(x.data)]
for i in range(10):
    y = f(x)
    x.cleargrad()
    y.backward(create_graph=True)

    gx = x.grad  # f'(x), with its own graph
    x.cleargrad()  # so the next pass does not add f'' to f'
    gx.backward()
    gx2 = x.grad  # f''(x)

    print(f"iteration {i}: x = {x.data:.12f}   f' = {gx.data:9.3e}   f'' = {gx2.data:.6f}")
    x.data = x.data - gx.data / gx2.data
    iterates.append(float(x.data))

# %% [markdown]
# The same sequence as step 29: from 2 to 1 (to twelve digits) in seven steps,
# and $f''$ tends to $f''(1) = 8$.
#
# Two details in the loop matter:
#
# * the update uses `.data`: the new $x$ must not be a function of the old one
#   in any graph, or every iteration would drag the whole history along;
# * `x.cleargrad()` comes twice per iteration: before the first pass (to drop
#   the previous iteration's $f''$) and between the passes.
#
# ## Newton's method in several dimensions
#
# For a vector $x$, Newton's step is $x \leftarrow x - H^{-1} \nabla f$, with the
# Hessian matrix $H$ of second derivatives. Double backprop gives one row of
# $H$ per backward pass (step 32's mixed partials), so for $n$ variables it
# costs $n$ passes, and inverting $H$ costs $O(n^3)$. That is why deep learning,
# with millions of parameters, does not use plain Newton's method; step 36 shows
# a cheaper tool, the Hessian–vector product.
#
# ## Exercise
# Use the automatic second derivative to minimise
# $g(x) = x^2 + e^{-x}$ (whose minimum solves $2x = e^{-x}$) from $x = 0$
# with 6 Newton steps, and store the result in `x_min`.

# %%
xm = dz.Variable(np.array(0.0))  # solution:
for _ in range(6):
    xm.cleargrad()
    (xm**2 + F.exp(-xm)).backward(create_graph=True)
    g1 = xm.grad
    xm.cleargrad()
    g1.backward()
    xm.data = xm.data - g1.data / xm.grad.data
x_min = float(xm.data)
assert abs(2 * x_min - np.exp(-x_min)) < 1e-12, "at the minimum 2x = exp(-x)"
print("x_min =", round(x_min, 6))
print("self-check passed")
