# %% [markdown]
# # Step 29: Newton's method with a hand-written second derivative
#
# Gradient descent needed thousands of steps on Rosenbrock because it only
# knows the slope, and has to guess the step size (the learning rate). Newton's
# method also uses the **curvature**. Around the current point $x$ it replaces
# $f$ by its second-order Taylor approximation
#
# $$f(x + h) \approx f(x) + f'(x)\,h + \tfrac12 f''(x)\,h^2$$
#
# and jumps straight to the minimum of that parabola, where the derivative in
# $h$ is zero: $f'(x) + f''(x)\,h = 0$. So
#
# $$x \leftarrow x - \frac{f'(x)}{f''(x)}.$$
#
# The step size is chosen by the curvature: large where $f$ is flat, small
# where it bends sharply. Near a minimum the error roughly *squares* at every
# step (quadratic convergence).

# %% [markdown]
# ## A test function
#
# $f(x) = x^4 - 2x^2$ has two minima, at $x = \pm 1$ (where $f = -1$). By hand:
#
# $$f'(x) = 4x^3 - 4x, \qquad f''(x) = 12x^2 - 4.$$
#
# The framework gives us $f'$ by backprop; for now we still write $f''$ by hand.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz


def f(x):
    return x**4 - 2 * x**2


def gx2(x):
    """The second derivative of f, worked out by hand."""
    return 12 * x**2 - 4


x = dz.Variable(np.array(2.0))
iterates = [float(x.data)]
for i in range(10):
    y = f(x)
    x.cleargrad()
    y.backward()
    print(f"iteration {i}: x = {x.data:.12f}   f'(x) = {x.grad.data:.3e}")
    x.data = x.data - x.grad.data / gx2(x.data)
    iterates.append(float(x.data))

# %% [markdown]
# From $x = 2$ the iterate reaches 1 to twelve digits in about seven steps:
# the number of correct digits roughly doubles per step at the end. Gradient
# descent on the same function, with a learning rate chosen for it, is still
# far from 1 after as many steps:

# %%
x_gd = dz.Variable(np.array(2.0))
gd_iterates = [float(x_gd.data)]
for _ in range(10):
    y = f(x_gd)
    x_gd.cleargrad()
    y.backward()
    x_gd.data = x_gd.data - 0.01 * x_gd.grad.data
    gd_iterates.append(float(x_gd.data))
print("gradient descent after 10 steps:", gd_iterates[-1])

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogy([abs(v - 1) + 1e-17 for v in iterates], "o-", label="Newton")
ax.semilogy([abs(v - 1) for v in gd_iterates], "s-", label="gradient descent, lr=0.01")
ax.set_xlabel("iteration")
ax.set_ylabel("|x - 1|")
ax.legend()
plt.show()

# %% [markdown]
# The catch: we had to derive $f''$ ourselves. For a neural network with
# millions of parameters that is hopeless by hand. Steps 30–32 teach the
# framework to differentiate its own backward pass, and step 33 reruns this
# exact loop with an automatic second derivative.
#
# ## Exercise
# Newton's method looks for a point where $f' = 0$, and does not care whether
# it is a minimum. Start from `x = -0.3`, where $f'' < 0$ (the parabola opens
# downwards), run 10 Newton steps and store the final value in `x_end`.
# Where does it go? (Plot $f$ to see why.)

# %%
x_end = dz.Variable(np.array(-0.3))  # solution:
for _ in range(10):
    y = f(x_end)
    x_end.cleargrad()
    y.backward()
    x_end.data = x_end.data - x_end.grad.data / gx2(x_end.data)
x_end = float(x_end.data)
assert abs(x_end) < 1e-10, "from -0.3 Newton's method climbs to the maximum at 0"
print("self-check passed")
