# %% [markdown]
# # Step 28: Gradient descent on the Rosenbrock function
#
# Now that gradients come for free, we can *minimise* functions. The
# Rosenbrock function is the classic hard case:
#
# $$y = 100 (x_1 - x_0^2)^2 + (x_0 - 1)^2$$
#
# Its minimum is $y = 0$ at $(x_0, x_1) = (1, 1)$, at the bottom of a long,
# curved, nearly flat valley. Finding the valley is easy; walking along its
# floor to the minimum is slow for methods that only look at the slope.
#
# **Gradient descent** takes a small step downhill, against the gradient:
#
# $$x \leftarrow x - \eta \, \nabla y(x)$$
#
# with a learning rate $\eta$. Too large a step and it overshoots across the
# steep walls of the valley (and diverges); small enough to be stable, it
# crawls along the flat floor.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz


def rosenbrock(x0, x1):
    return 100 * (x1 - x0**2) ** 2 + (x0 - 1) ** 2


x0 = dz.Variable(np.array(0.0))
x1 = dz.Variable(np.array(2.0))
y = rosenbrock(x0, x1)
y.backward()
print("at (0, 2): y =", y.data, " gradient =", (x0.grad.data, x1.grad.data))

# %% [markdown]
# At $(0, 2)$ the gradient is $(-2, 400)$: almost all of it points across the
# valley, towards $x_1 = 0$. The update loop below repeats: compute $y$, clear
# the old gradients (they would accumulate otherwise, step 14), backprop, step.
# The update itself is plain array arithmetic on `.data`: it must not become
# part of any graph.

# %%
def gradient_descent(start, lr=0.001, iters=10000):
    """Minimise rosenbrock from ``start``; return the path of visited points."""
    x0 = dz.Variable(np.array(start[0]))
    x1 = dz.Variable(np.array(start[1]))
    path = [(float(x0.data), float(x1.data))]
    for _ in range(iters):
        y = rosenbrock(x0, x1)
        x0.cleargrad()
        x1.cleargrad()
        y.backward()
        x0.data = x0.data - lr * x0.grad.data
        x1.data = x1.data - lr * x1.grad.data
        path.append((float(x0.data), float(x1.data)))
    return np.array(path)


path = gradient_descent((0.0, 2.0))
for i in [0, 10, 100, 1000, 5000, 10000]:
    p = path[i]
    print(f"iteration {i:>5}: x = ({p[0]:.5f}, {p[1]:.5f})  y = {rosenbrock(p[0], p[1]):.6f}")

# %% [markdown]
# After 10,000 steps it is close to $(1, 1)$, but look at how the progress
# splits: the first few steps drop into the valley, the thousands after that
# creep along its floor. The plot makes that visible:

# %%
a = np.linspace(-2.0, 2.0, 200)
b = np.linspace(-1.0, 3.0, 200)
A, B = np.meshgrid(a, b)
fig, ax = plt.subplots(figsize=(6, 5))
ax.contour(A, B, rosenbrock(A, B), levels=np.logspace(-1, 3.5, 15), cmap="viridis")
ax.plot(path[:, 0], path[:, 1], ".-", color="tab:red", markersize=2, linewidth=0.8,
        markevery=100, label="gradient descent (every 100th step marked)")
ax.plot([1], [1], "*", color="black", markersize=12, label="minimum (1, 1)")
ax.set_xlabel("$x_0$")
ax.set_ylabel("$x_1$")
ax.legend(loc="upper left")
ax.set_title("Gradient descent on the Rosenbrock function")
plt.show()

# %% [markdown]
# Step 29 uses the *curvature* (the second derivative) as well as the slope,
# and needs a handful of steps instead of thousands.
#
# ## Exercise
# Try learning rates. With `lr=0.005`, 100 iterations from `(0.0, 2.0)` get
# twice as far along the valley as with 0.001; with `lr=0.01` the steps
# overshoot across the steep walls and the iterates blow up (to `inf`/`nan`).
# Store the final point of the `lr=0.01` run in `final`.

# %%
with np.errstate(over="ignore", invalid="ignore"):  # solution:
    final = gradient_descent((0.0, 2.0), lr=0.01, iters=100)[-1]
assert not np.all(np.abs(final) < 10), "with lr=0.01 the iterates should blow up"
print("self-check passed")
