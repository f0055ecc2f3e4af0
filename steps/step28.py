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
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(28)  # every file this step writes goes here


def rosenbrock(x0, x1):
    return 100 * (x1 - x0**2) ** 2 + (x0 - 1) ** 2


x0 = dz.Variable(np.array(0.0))
x1 = dz.Variable(np.array(2.0))
y = rosenbrock(x0, x1)
y.backward()
print("at (0, 2): y =", y.data, " gradient =", (float(x0.grad.data), float(x1.grad.data)))

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
save_figure(fig, out_dir / "rosenbrock_path.png")
plt.show()

# %% [markdown]
# Step 29 uses the *curvature* (the second derivative) as well as the slope;
# on its test function it arrives in a handful of steps, where gradient descent
# on the same function has not arrived after ten.
#
# ## Exercise 1: the update rule
# The two update lines in `gradient_descent` are the whole optimiser: every
# parameter moves against its gradient, $x \leftarrow x - \eta\, \nabla_x y$.
# Write that rule once for any list of Variables: `sgd_update(params, lr)`
# changes each `p.data` in place of the old array (do not build a graph:
# work on `.data` and `.grad.data`). The self-check runs it on random
# parameters and repeats 100 steps of `gradient_descent` with it.

# %%
#| exercise
def sgd_update(params, lr):
    raise NotImplementedError(
        "Exercise (step 28): move every parameter's array against its gradient, scaled by "
        "lr, as the update lines of gradient_descent do, without building a graph"
    )

# %%
#| solution
def sgd_update(params, lr):
    for p in params:
        p.data = p.data - lr * p.grad.data

# %%
#| check
rng = np.random.default_rng(0)
start = rng.normal(size=(2, 3))
ps = [dz.Variable(start[0].copy()), dz.Variable(start[1].copy())]
(ps[0] * ps[0] + 3 * ps[1]).backward()
try:
    sgd_update(ps, 0.1)
except NotImplementedError as e:
    raise AssertionError(f"sgd_update is not written yet: {e}") from None
assert np.allclose(ps[0].data, start[0] - 0.1 * 2 * start[0]), "p.data should become p - lr * grad"
assert np.allclose(ps[1].data, start[1] - 0.1 * 3), "every parameter in the list is updated"
assert ps[0].creator is None, "the update must not build a graph: work on .data"
xa, xb = dz.Variable(np.array(0.0)), dz.Variable(np.array(2.0))
for _ in range(100):
    xa.cleargrad()
    xb.cleargrad()
    rosenbrock(xa, xb).backward()
    sgd_update([xa, xb], 0.001)
assert np.allclose([xa.data, xb.data], gradient_descent((0.0, 2.0), iters=100)[-1]), (
    "100 steps with sgd_update should land where gradient_descent does"
)
print("self-check passed: sgd_update moves every parameter against its gradient")

# %% [markdown]
# ## Exercise 2: a learning rate too large
# Try learning rates. With `lr=0.005`, 100 iterations from `(0.0, 2.0)` get
# twice as far along the valley as with 0.001; with `lr=0.01` the steps
# overshoot across the steep walls and the iterates blow up (to `inf`/`nan`).
# Store the final point of the `lr=0.01` run (100 iterations) in `final`.
# (`np.errstate(over="ignore", invalid="ignore")` keeps NumPy quiet about the
# overflow.)

# %%
#| exercise
final = ...  # the last point (x0, x1) of the path of that run

# %%
#| solution
with np.errstate(over="ignore", invalid="ignore"):
    final = gradient_descent((0.0, 2.0), lr=0.01, iters=100)[-1]

# %%
#| check
assert isinstance(final, np.ndarray) and final.shape == (2,), (
    f"final should be a point (x0, x1) from the path, got {final!r}"
)
assert not np.all(np.abs(final) < 10), f"with lr=0.01 the iterates should blow up, got {final}"
print("self-check passed: with lr=0.01 gradient descent diverges")
