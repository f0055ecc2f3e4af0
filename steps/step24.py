# %% [markdown]
# # Step 24: Test functions for optimisation
#
# Researchers who design optimisation methods test them on a zoo of
# **benchmark functions**: formulas with known minima and known difficulties
# (flat valleys, steep walls, many local minima). They are also a good test of
# a differentiation framework: the formulas are long, the derivatives by hand
# are tedious, and the right answers are known.
#
# We take three of them, each a function of two variables $x, y$:
#
# * **Sphere**: $f(x, y) = x^2 + y^2$, a round bowl with its minimum at $(0, 0)$.
# * **Matyas**: $f(x, y) = 0.26\,(x^2 + y^2) - 0.48\,xy$, a long, flat valley
#   along the diagonal; minimum at $(0, 0)$.
# * **Goldstein–Price**:
#   $f(x, y) = \big[1 + (x + y + 1)^2 (19 - 14x + 3x^2 - 14y + 6xy + 3y^2)\big]
#   \big[30 + (2x - 3y)^2 (18 - 32x + 12x^2 + 48y - 36xy + 27y^2)\big]$,
#   with several local minima and the global one $f(0, -1) = 3$.
#
# With the operators of step 22, now in the package, each formula is written
# in code exactly as on paper, and `backward()` gives both partial derivatives.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
from dezero_like import utils
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(24)  # every file this step writes goes here


def sphere(x, y):
    return x**2 + y**2


def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


def goldstein(x, y):
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)
    return a * b


# %% [markdown]
# ## Gradients at $(1, 1)$
#
# By hand, the sphere's gradient is $(2x, 2y) = (2, 2)$ and Matyas's is
# $(0.52x - 0.48y,\ 0.52y - 0.48x) = (0.04, 0.04)$. For Goldstein–Price nobody
# wants to do it by hand; the known answer is $(-5376, 8064)$.


# %%
def gradient(f, x0, y0):
    """Value and gradient (df/dx, df/dy) of f at the point (x0, y0)."""
    x = dz.Variable(np.array(x0))
    y = dz.Variable(np.array(y0))
    z = f(x, y)
    z.backward()
    return float(z.data), float(x.grad.data), float(y.grad.data)


for f in (sphere, matyas, goldstein):
    value, gx, gy = gradient(f, 1.0, 1.0)
    print(f"{f.__name__:9s} f(1, 1) = {value:8.2f}   grad = ({gx:.6g}, {gy:.6g})")

# %% [markdown]
# ## Checking against numerical differentiation
#
# `utils.numerical_grad(f, x)` differentiates with respect to one argument, so
# we hold the other fixed with a small `lambda`. The check uses a point where
# $x \ne y$, $(0.3, -0.7)$: at $(1, 1)$ the two partial derivatives of sphere and
# Matyas are equal, and a `lambda` that held the wrong argument fixed would pass.

# %%
x0, y0 = 0.3, -0.7
for f in (sphere, matyas, goldstein):
    _, gx, gy = gradient(f, x0, y0)
    nx = utils.numerical_grad(lambda x, f=f: f(x, dz.Variable(np.array(y0))), np.array(x0))
    ny = utils.numerical_grad(lambda y, f=f: f(dz.Variable(np.array(x0)), y), np.array(y0))
    print(f"{f.__name__:9s} backprop ({gx:.6f}, {gy:.6f})  numerical ({nx:.6f}, {ny:.6f})")

# %% [markdown]
# ## How big is the graph?
#
# Each operator adds one function to the graph. Walking the `creator` links
# (through `f.inputs`) counts them; Goldstein–Price's formula becomes a graph
# of dozens of functions, and backprop handled it in one call.


# %%
def count_functions(output):
    """Number of distinct functions in the graph behind `output`."""
    seen, todo = set(), [output.creator]
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        todo.extend(x.creator for x in f.inputs)
    return len(seen)


for f in (sphere, matyas, goldstein):
    z = f(dz.Variable(np.array(1.0)), dz.Variable(np.array(1.0)))
    print(f"{f.__name__:9s} {count_functions(z):3d} functions")

# %% [markdown]
# ## The landscapes
#
# The functions work on whole arrays too, so one call evaluates a grid of
# points (under `no_grad()`, since we only want values). Arrows show the
# direction of steepest **descent**, $-\nabla f$, at a few points: the
# direction a gradient-descent step would take (step 28).

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 4))
grid = np.linspace(-2, 2, 200)
X, Y = np.meshgrid(grid, grid)
for ax, f in zip(axes, (sphere, matyas, goldstein)):
    with dz.no_grad():
        Z = f(dz.Variable(X), dz.Variable(Y)).data
    levels = np.logspace(np.log10(Z.min() + 1e-3), np.log10(Z.max()), 20)
    ax.contour(X, Y, Z, levels=levels, cmap="viridis")
    P = np.array([[-1.5, 1.0], [1.0, 1.0], [0.5, -1.5], [-1.0, -0.5]])
    px, py = dz.Variable(P[:, 0].copy()), dz.Variable(P[:, 1].copy())
    f(px, py).backward()  # the gradient at all four points in one backward pass
    g = np.stack([px.grad.data, py.grad.data], axis=1)
    g = g / np.linalg.norm(g, axis=1, keepdims=True)
    ax.quiver(P[:, 0], P[:, 1], -g[:, 0], -g[:, 1], color="crimson", angles="xy",
              scale_units="xy", scale=2, width=0.012)
    ax.set_title(f.__name__)
    ax.set_aspect("equal")
plt.tight_layout()
save_figure(fig, out_dir / "gradients.png")
plt.show()

# %% [markdown]
# (For arrays, `backward()` seeds every element with 1, so each point's
# gradient lands in its own element of `px.grad` and `py.grad`: the points do
# not interact.)
#
# ## Exercise 1: the Booth function
# The Booth function is $f(x, y) = (x + 2y - 7)^2 + (2x + y - 5)^2$. Write it
# with the operators. The self-check asks `gradient` for its gradient, which
# must vanish at the minimum $(1, 3)$ and equal $(-34, -38)$ at $(0, 0)$.

# %%
#| exercise
def booth(x, y):
    raise NotImplementedError("Exercise (step 24): the Booth formula with the operators, "
                              "as sphere and matyas above")

# %%
#| solution
def booth(x, y):
    return (x + 2 * y - 7) ** 2 + (2 * x + y - 5) ** 2

# %%
#| check
_, gx, gy = gradient(booth, 1.0, 3.0)
assert abs(gx) < 1e-12 and abs(gy) < 1e-12, (
    f"at the minimum (1, 3) the gradient should be (0, 0), got ({gx}, {gy}): check the formula"
)
_, gx, gy = gradient(booth, 0.0, 0.0)
assert (gx, gy) == (-34.0, -38.0), f"the gradient at (0, 0) should be (-34, -38), got ({gx}, {gy})"
print("self-check passed: Booth's gradient is (0, 0) at (1, 3) and (-34, -38) at (0, 0)")

# %% [markdown]
# ## Exercise 2: Matyas as one `Function`
# The operators built Matyas from a graph of seven small functions.
# A framework can also ship it as **one** `Function` whose backward is derived
# by hand: $\partial f/\partial x = 0.52x - 0.48y$ and
# $\partial f/\partial y = 0.52y - 0.48x$. Write `forward(x, y)` on the raw
# arrays and `backward(gy)`, which returns both gradients (read the inputs
# from `self.inputs`). The self-check compares values and gradients with the
# operator version `matyas` on random points, and runs `utils.gradient_check`.

# %%
#| exercise
class MatyasFunction(dz.Function):
    def forward(self, x, y):
        raise NotImplementedError("Exercise (step 24): Matyas on the raw arrays x and y")

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 24): one gradient per input, each gy times a partial derivative"
        )

# %%
#| solution
class MatyasFunction(dz.Function):
    def forward(self, x, y):
        return 0.26 * (x**2 + y**2) - 0.48 * x * y

    def backward(self, gy):
        x, y = self.inputs
        return gy * (0.52 * x - 0.48 * y), gy * (0.52 * y - 0.48 * x)

# %%
#| check
rng = np.random.default_rng(0)
px, py = rng.normal(size=4), rng.normal(size=4)
x, y = dz.Variable(px.copy()), dz.Variable(py.copy())
try:
    z = MatyasFunction()(x, y)
except NotImplementedError as e:
    raise AssertionError(f"MatyasFunction is not written yet: {e}") from None
assert np.allclose(z.data, matyas(px, py)), "forward disagrees with matyas: reread its formula"
z.backward()
xr, yr = dz.Variable(px.copy()), dz.Variable(py.copy())
matyas(xr, yr).backward()
assert np.allclose(x.grad.data, xr.grad.data), (
    "the gradient for x is wrong: is it gy times df/dx, returned first, as forward takes x first?"
)
assert np.allclose(y.grad.data, yr.grad.data), (
    "the gradient for y is wrong: is it gy times df/dy, returned second?"
)
weight = rng.normal(size=4)  # z * weight: the gradient reaching MatyasFunction is not all ones
xw, yw = dz.Variable(px.copy()), dz.Variable(py.copy())
(MatyasFunction()(xw, yw) * weight).backward()
assert np.allclose(xw.grad.data, weight * xr.grad.data), (
    "right when the gradient from above is 1, wrong when z is weighted: multiply each partial "
    "derivative by gy, the gradient arriving from z's side (the chain rule)"
)
assert utils.gradient_check(lambda v: MatyasFunction()(v, dz.Variable(py)), px)
assert count_functions(z) == 1, "one Function: the graph has a single node"
print("self-check passed: MatyasFunction agrees with the operator version, in one node")

# %% [markdown]
# ## Open experiment: what happens in float32?
# Deep learning usually computes in float32, which keeps about 7 significant
# digits instead of 16. What happens to the gradients of our test functions
# if the point is given in float32? Guess first: which function suffers most,
# and why? The table compares each float32 gradient with the float64 one.

# %%
print(f"{'function':10s} {'grad (float64)':>28s} {'grad (float32)':>28s} {'rel. error':>10s}")
for f in (sphere, matyas, goldstein):
    grads = {}
    for dtype in (np.float64, np.float32):
        x = dz.Variable(np.array(0.3, dtype=dtype))
        y = dz.Variable(np.array(-0.7, dtype=dtype))
        f(x, y).backward()
        grads[dtype] = np.array([x.grad.data, y.grad.data])
    g64, g32 = grads[np.float64], grads[np.float32]
    error = np.max(np.abs(g32 - g64)) / np.max(np.abs(g64))
    print(f"{f.__name__:10s} {np.array2string(g64, precision=6):>28s} "
          f"{np.array2string(g32.astype(np.float64), precision=6):>28s} {error:10.1e}")

# %% [markdown]
# Every relative error is around float32's precision ($\approx 10^{-7}$):
# rounding happens in each of Goldstein's dozens of operations, but here it
# does not pile up. Part of each error is the input itself: float32 cannot hold
# 0.3 or -0.7 exactly, and sphere's whole error is that. Try 0.25 and -0.75,
# which float32 holds exactly, or a point where the terms nearly cancel, and
# watch the last column.
