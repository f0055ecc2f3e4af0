# %% [markdown]
# # Step 32: Second derivatives of polynomials
#
# With `create_graph` (step 31) a second derivative is three lines. This step
# wraps the recipe in a function and checks it where we know the exact answer:
# polynomials, whose derivatives of every order are again polynomials.
# For $p(x) = \sum_k a_k x^k$:
#
# $$p'(x) = \sum_k k\,a_k x^{k-1}, \qquad p''(x) = \sum_k k(k-1)\,a_k x^{k-2}.$$
#
# NumPy computes these coefficients with `np.polyder`, an independent oracle.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(32)  # every file this step writes goes here


def derivatives(f, x_value, n):
    """[f(x), f'(x), ..., f^(n)(x)] at ``x_value`` by repeated backprop.

    Every pass but the last records its own graph (create_graph=True), so the
    next pass can differentiate it; x.cleargrad() before each pass stops the
    orders from adding up in x.grad.
    """
    x = dz.Variable(np.asarray(x_value, dtype=np.float64))
    g = f(x)
    values = [g.data]
    for order in range(1, n + 1):
        x.cleargrad()
        g.backward(create_graph=order < n)
        g = x.grad
        values.append(g.data)
    return values


def poly(coeffs):
    """The polynomial with these coefficients (highest power first, as np.polyval)."""
    def p(x):
        y = 0
        for c in coeffs:
            y = y * x + c  # Horner's scheme: only + and *, all differentiable
        return y
    return p


coeffs = [1.0, 0.0, -2.0, 0.0]  # x^3 - 2x
print("x^3 - 2x at x = 1.5:", [float(v) for v in derivatives(poly(coeffs), 1.5, 3)])
print("np.polyder oracle:  ", [float(np.polyval(np.polyder(coeffs, k), 1.5)) for k in range(4)])

# %% [markdown]
# The function also works on arrays: every element is an independent $x$
# (the seed of backward is all ones, and the polynomial acts elementwise).
# Here are $p$, $p'$ and $p''$ on a grid, for
# $p(x) = x^4 - 2x^2$ (the function of steps 29 and 33):

# %%
grid = np.linspace(-1.8, 1.8, 181)
p4 = [1.0, 0.0, -2.0, 0.0, 0.0]
curves = derivatives(poly(p4), grid, 2)
fig, ax = plt.subplots(figsize=(6, 4))
for curve, label in zip(curves, ["$p$", "$p'$", "$p''$"]):
    ax.plot(grid, curve, label=label)
ax.axhline(0, color="gray", linewidth=0.5)
ax.set_ylim(-6, 10)
ax.set_xlabel("x")
ax.legend()
save_figure(fig, out_dir / "polynomial_derivatives.png")
plt.show()
max_error = max(
    np.max(np.abs(curves[k] - np.polyval(np.polyder(p4, k), grid))) for k in range(3)
)
print("largest difference from np.polyder on the grid:", max_error)

# %% [markdown]
# Where $p' = 0$ the curve is flat; the sign of $p''$ there tells a minimum
# ($p'' > 0$, at $\pm 1$) from a maximum ($p'' < 0$, at 0). Newton's method
# (steps 29 and 33) divides by $p''$ but ignores its sign, so it finds maxima as
# readily as minima: from near 0 it climbs to the maximum (step 29, Exercise 2).
#
# ## Mixed partial derivatives
#
# With two inputs, differentiating $\partial f / \partial x$ with respect to
# $y$ gives the mixed derivative. For $f(x, y) = x^2 y + y^3$:
# $\partial f/\partial x = 2xy$ and $\partial^2 f / \partial y \partial x = 2x$.

# %%
x = dz.Variable(np.array(3.0))
y = dz.Variable(np.array(-1.0))
z = x**2 * y + y**3
z.backward(create_graph=True)
gx = x.grad  # 2xy = -6
x.cleargrad()
y.cleargrad()
gx.backward()
print("df/dx =", gx.data, "  d2f/dydx =", y.grad.data, "  d2f/dx2 =", x.grad.data)

# %% [markdown]
# One backward of `gx` filled **two** second derivatives at once: the row of the
# Hessian that belongs to $x$ ($\partial^2 f/\partial x^2 = 2y = -2$ and
# $\partial^2 f/\partial y \partial x = 2x = 6$). Step 36 builds on that.
#
# ## Exercise 1: $q''(-1)$ with `derivatives`
# Use `derivatives` to get the second derivative of
# $q(x) = 2x^5 - x^3 + 7$ at $x = -1$ and store it in `q2`. By hand:
# $q'' = 40x^3 - 6x$.

# %%
#| exercise
q2 = ...  # q''(-1) from this step's derivatives and poly

# %%
#| solution
q2 = derivatives(poly([2.0, 0.0, -1.0, 0.0, 0.0, 7.0]), -1.0, 2)[2]

# %%
#| check
assert q2 is not ..., "q2 is not computed yet"
assert np.isclose(q2, 40 * (-1) ** 3 - 6 * (-1)), (
    f"q''(-1) = -40 + 6 = -34, got {q2}: does poly get one coefficient per power, zeros "
    "included, in the order its docstring gives? Which entry of derivatives' list is q''?"
)
print("self-check passed: q''(-1) = -34")

# %% [markdown]
# ## Exercise 2: the Hessian of a function of two variables
# The mixed-derivative recipe above gives one row of the Hessian per
# backward of a gradient. Write `hessian2(f, x0, y0)` returning the 2×2
# matrix $\begin{pmatrix} f_{xx} & f_{xy} \\ f_{yx} & f_{yy} \end{pmatrix}$
# at $(x_0, y_0)$ as a NumPy array, each row from fresh Variables and that
# row's first partial derivative. Mind what each gradient holds before the
# second pass. The self-check compares it with Hessians worked out by hand at
# random points.

# %%
#| exercise
def hessian2(f, x0, y0):
    raise NotImplementedError("Exercise (step 32): two rows, one backward of a gradient "
                              "each; a 2x2 NumPy array")

# %%
#| solution
def hessian2(f, x0, y0):
    rows = []
    for row in range(2):
        x = dz.Variable(np.array(x0, dtype=np.float64))
        y = dz.Variable(np.array(y0, dtype=np.float64))
        f(x, y).backward(create_graph=True)
        g = (x.grad, y.grad)[row]
        x.cleargrad()
        y.cleargrad()
        g.backward()
        rows.append([float(x.grad.data), float(y.grad.data)])
    return np.array(rows)

# %%
#| check
def f1(x, y):
    return x**2 * y + y**3


def f2(x, y):
    return x**3 * y**2 - 4 * x * y


for x0, y0 in np.random.default_rng(0).uniform(-2, 2, size=(3, 2)):
    expected = {
        "x^2 y + y^3": (f1, [[2 * y0, 2 * x0], [2 * x0, 6 * y0]]),
        "x^3 y^2 - 4xy": (f2, [[6 * x0 * y0**2, 6 * x0**2 * y0 - 4],
                               [6 * x0**2 * y0 - 4, 2 * x0**3]]),
    }
    for name, (fn, H) in expected.items():
        try:
            got = np.asarray(hessian2(fn, x0, y0))
        except NotImplementedError as e:
            raise AssertionError(f"hessian2 is not written yet: {e}") from None
        assert got.shape == (2, 2), f"hessian2 should return a 2x2 array, got shape {got.shape}"
        assert np.allclose(got, H), (
            f"Hessian of {name} at ({x0:.3f}, {y0:.3f}): expected {np.array(H)}, got {got} "
            "(clear both gradients before the second backward)"
        )
print("self-check passed: hessian2 matches Hessians worked out by hand")
