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
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(29)  # every file this step writes goes here


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
save_figure(fig, out_dir / "newton_vs_gd.png")
plt.show()

# %% [markdown]
# The catch: we had to derive $f''$ ourselves. For a neural network with
# millions of parameters that is hopeless by hand. Steps 30–32 teach the
# framework to differentiate its own backward pass, and step 33 reruns this
# exact loop with an automatic second derivative.
#
# ## Exercise 1: one Newton step
# Write `newton_step(x)`, one update of the loop above on a Variable `x`
# (scalar or array: the update is elementwise): compute `f(x)`, clear the old
# gradient, backprop, and set `x.data` to $x - f'(x) / f''(x)$, with $f'$ from
# backprop and $f''$ from `gx2`. The self-check compares one step on random
# points with the formula $x - (4x^3 - 4x)/(12x^2 - 4)$, and checks that the
# gradient does not pile up over two steps.

# %%
#| exercise
def newton_step(x):
    raise NotImplementedError("Exercise (step 29): one pass of the Newton loop above: f'(x) "
                              "by backprop (a fresh gradient each time), f''(x) from gx2")

# %%
#| solution
def newton_step(x):
    y = f(x)
    x.cleargrad()
    y.backward()
    x.data = x.data - x.grad.data / gx2(x.data)

# %%
#| check
points = np.random.default_rng(0).uniform(0.7, 2.0, size=5)


def by_formula(v):
    return v - (4 * v**3 - 4 * v) / (12 * v**2 - 4)


xn = dz.Variable(points.copy())
try:
    newton_step(xn)
except NotImplementedError as e:
    raise AssertionError(f"newton_step is not written yet: {e}") from None
assert np.allclose(xn.data, by_formula(points)), (
    f"one step from {points} should give {by_formula(points)}, got {xn.data}"
)
newton_step(xn)
assert np.allclose(xn.data, by_formula(by_formula(points))), (
    "the second step is wrong: clear the gradient (x.cleargrad()) before backward"
)
print("self-check passed: newton_step is x - f'(x) / f''(x), step after step")

# %% [markdown]
# ## Exercise 2: Newton does not look for minima
# Newton's method looks for a point where $f' = 0$, and does not care whether
# it is a minimum. Start from `x = -0.3`, where $f'' < 0$ (the parabola opens
# downwards), run 10 Newton steps and store the final value (a float) in
# `x_end`. Where does it go? (Plot $f$ to see why.)

# %%
#| exercise
x_end = ...  # 10 Newton steps from x = -0.3, then float(x.data)

# %%
#| solution
x_end = dz.Variable(np.array(-0.3))
for _ in range(10):
    y = f(x_end)
    x_end.cleargrad()
    y.backward()
    x_end.data = x_end.data - x_end.grad.data / gx2(x_end.data)
x_end = float(x_end.data)

# %%
#| check
assert isinstance(x_end, float), f"x_end should be a float, got {type(x_end).__name__}"
assert abs(x_end) < 1e-10, (
    f"from -0.3 Newton's method should end at the maximum x = 0, got {x_end}: run 10 steps"
)
print("self-check passed: from -0.3 Newton's method climbs to the maximum at 0")

# %% [markdown]
# ## Open experiment: what happens if Newton starts elsewhere?
# Newton's method converged from $x = 2$ in a handful of steps, and Exercise 2
# found it can climb to a maximum. Which starting points lead to which
# stationary point ($-1$, $0$ or $1$)? And what about a start right at an
# inflection point, where $f'' = 0$ ($x = \pm 1/\sqrt{3} \approx \pm 0.577$)?
# Guess first, then read the table: 10 Newton steps against 10 steps of
# gradient descent (lr 0.01) from the same starts.

# %%
try:  # the Newton column runs your newton_step from the exercise above
    newton_step(dz.Variable(np.array(2.0)))
    newton_ready = True
except NotImplementedError:
    newton_ready = False
    print("(the Newton column needs your newton_step from the exercise above: '-' until then)")
starts = [-2.0, -0.8, -0.6, -0.55, -0.3, 0.3, 0.5, 0.56, 0.6, 0.9, 3.0]
print(f"{'start':>6} {'Newton (10 steps)':>18} {'grad. descent (10 steps)':>25}")
with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
    for s in starts:
        xs = dz.Variable(np.array(s))
        xg = dz.Variable(np.array(s))
        for _ in range(10):
            if newton_ready:
                newton_step(xs)
            yg = f(xg)
            xg.cleargrad()
            yg.backward()
            xg.data = xg.data - 0.01 * xg.grad.data
        newton = f"{float(xs.data):18.6g}" if newton_ready else f"{'-':>18}"
        print(f"{s:6.2f} {newton} {float(xg.data):25.6g}")

# %% [markdown]
# Starts beyond the inflection points go to the nearest minimum. Close to 0
# ($\pm 0.3$), where $f'' < 0$, Newton heads for the maximum at 0. Nearer the
# inflection points $f''$ is close to zero, so the first step is huge and the
# iterate lands far away: from 0.5 and 0.56 it ends at the *other* minimum,
# $-1$, and from $-0.55$ at $+1$. Gradient descent never jumps like that, but
# after 10 steps no run has reached $\pm 1$. Try other starts, or count how many
# steps each needs to reach 1e-8.
