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
slopes, curvatures = [], []  # f' and f'' at each iterate, for the picture below
for i in range(10):
    y = f(x)
    x.cleargrad()
    y.backward(create_graph=True)

    gx = x.grad  # f'(x), with its own graph
    x.cleargrad()  # so the next pass does not add f'' to f'
    gx.backward()
    gx2 = x.grad  # f''(x)

    print(f"iteration {i}: x = {x.data:.12f}   f' = {gx.data:9.3e}   f'' = {gx2.data:.6f}")
    slopes.append(float(gx.data))
    curvatures.append(float(gx2.data))
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
#   the previous iteration's $f''$) and between the passes. Without the second
#   one, `gx` *is* `x.grad`, so the second pass adds $f''$ to $f'$ and the step
#   divides by the wrong number, with no error; the package warns about that
#   `backward()` and names the missing `cleargrad()`.
#
# The picture shows what each step does. At the current $x$, Newton's method
# fits a parabola with the same value, slope $f'$ and curvature $f''$ as $f$
# (the dashed curves, for the first three iterates), and jumps to its lowest
# point. The numbered dots are the iterates on $f$: they pile up at the
# minimum $x = 1$ after a few steps.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

t = np.linspace(0.3, 2.2, 200)
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.plot(t, f(t), "k", label="$f(x) = x^4 - 2x^2$")
for k in range(3):
    xk, d1, d2 = iterates[k], slopes[k], curvatures[k]
    model = f(xk) + d1 * (t - xk) + d2 / 2 * (t - xk) ** 2  # the parabola Newton solves
    ax.plot(t, model, "--", color=f"C{k}", label=f"parabola at iterate {k}")
    ax.axvline(iterates[k + 1], color=f"C{k}", lw=0.8, ls=":")  # its lowest point: the next x
points = np.array(iterates)
ax.plot(points, f(points), "o", color="C3", zorder=3, label="iterates")
for k in range(4):
    ax.annotate(str(k), (points[k], f(points[k])), textcoords="offset points", xytext=(6, 4))
ax.set_ylim(-1.5, 9)
ax.set_xlabel("x")
ax.set_ylabel("f(x)")
ax.set_title("Newton's method from x = 2: the next x is the lowest point of a parabola")
ax.legend(fontsize=8, loc="lower right")
figure_path = save_figure(fig, output_dir(33) / "newton_parabolas.png")
plt.show()

# %% [markdown]
# ## Newton's method in several dimensions
#
# For a vector $x$, Newton's step is $x \leftarrow x - H^{-1} \nabla f$, with the
# Hessian matrix $H$ of second derivatives. Double backprop gives one row of
# $H$ per backward pass (step 32's mixed partials), so for $n$ variables it
# costs $n$ passes, and inverting $H$ costs $O(n^3)$. That is why deep learning,
# with millions of parameters, does not use plain Newton's method; step 36 shows
# a cheaper tool, the Hessian–vector product.
#
# ## Exercise 1: Newton's method for any function
# Wrap the loop above into `newton(fn, x0, steps)`: start from a Variable
# holding `x0`, take `steps` Newton steps with both derivatives from backprop,
# and return the final $x$ as a float. The self-check runs it on
# $x^4 - 2x^2$ (it must repeat the iterates above) and on random parabolas
# $a x^2 + b x$, where one Newton step lands exactly on the minimum $-b/2a$.

# %%
#| exercise
def newton(fn, x0, steps):
    raise NotImplementedError("Exercise (step 33): the loop above, for any fn, x0 and "
                              "number of steps; a float")

# %%
#| solution
def newton(fn, x0, steps):
    x = dz.Variable(np.array(x0, dtype=np.float64))
    for _ in range(steps):
        x.cleargrad()
        fn(x).backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
    return float(x.data)

# %%
#| check
try:
    one = newton(f, 2.0, 1)
except NotImplementedError as e:
    raise AssertionError(f"newton is not written yet: {e}") from None
assert isinstance(one, float), (
    f"newton should return the final x as a Python float, got {type(one).__name__}: "
    "float(x.data)"
)
assert np.isclose(one, iterates[1]), (
    f"one step from 2 should give {iterates[1]}, x - f'(x) / f''(x), got {one}: take `steps` "
    "steps of x - f'/f'', and clear x.grad before each backward (or the second derivative is "
    "added to the first)"
)
end = newton(f, 2.0, 10)
assert np.isclose(end, iterates[-1], rtol=0, atol=1e-12), (
    f"from 2, 10 steps on x^4 - 2x^2 should end at {iterates[-1]}, got {end}"
)
for a, b in np.random.default_rng(0).uniform(0.5, 3.0, size=(3, 2)):
    got = newton(lambda v, a=a, b=b: a * v**2 + b * v, 1.0, 1)
    assert np.isclose(got, -b / (2 * a)), (
        f"on {a:.2f} x^2 + {b:.2f} x one step should reach {-b / (2 * a)}, got {got}"
    )
print("self-check passed: newton repeats the iterates above and solves parabolas in one step")

# %% [markdown]
# ## Exercise 2: a function with an exponential
# Use the automatic second derivative to minimise
# $g(x) = x^2 + e^{-x}$ (whose minimum solves $2x = e^{-x}$) from $x = 0$
# with 6 Newton steps, and store the result (a float) in `x_min`.

# %%
#| exercise
x_min = ...  # 6 Newton steps on g from 0 (Exercise 1's newton can do it); a float

# %%
#| solution
xm = dz.Variable(np.array(0.0))
for _ in range(6):
    xm.cleargrad()
    (xm**2 + F.exp(-xm)).backward(create_graph=True)
    g1 = xm.grad
    xm.cleargrad()
    g1.backward()
    xm.data = xm.data - g1.data / xm.grad.data
x_min = float(xm.data)

# %%
#| check
assert isinstance(x_min, float), f"x_min should be a float, got {type(x_min).__name__}"
assert abs(2 * x_min - np.exp(-x_min)) < 1e-12, (
    f"at the minimum 2x = exp(-x); at x_min = {x_min} they differ by {2 * x_min - np.exp(-x_min)}"
)
print("x_min =", round(x_min, 6))
print("self-check passed: x_min solves 2x = exp(-x)")
