# %% [markdown]
# # Step 31: How `create_graph` works
#
# Step 30 showed that a gradient *can* carry a graph. This step opens the
# mechanism. It is surprisingly small, because of a design decision made long
# before: **`backward` methods take and return Variables, and compute with
# differentiable functions**, not with raw arrays.
#
# Whether a function call records itself in the graph is decided by one switch,
# `Config.enable_backprop` (step 19 used it through `no_grad()`). So:
#
# * `y.backward()` runs every function's `backward` with the switch **off**:
#   the `*`, `cos`, ... inside compute values only;
# * `y.backward(create_graph=True)` runs them with the switch **on**: each of
#   those calls adds a node, and the gradients come out with a graph.
#
# That is all `create_graph` does. We can replay it by hand:

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F

x = dz.Variable(np.array(1.0))
y = F.sin(x)
sin_fn = y.creator
seed = dz.Variable(np.array(1.0), requires_grad=False)

with dz.using_config("enable_backprop", False):  # what y.backward() does
    g_plain = sin_fn.backward(seed)
with dz.using_config("enable_backprop", True):  # what y.backward(create_graph=True) does
    g_graph = sin_fn.backward(seed)
print("switch off:", g_plain, "creator", g_plain.creator)
print("switch on: ", g_graph, "creator", g_graph.creator)

# %% [markdown]
# Same value, but only the second one remembers how it was computed.
#
# ## Differentiating a gradient
#
# For $y = x^4 - 2x^2$:
# $y' = 4x^3 - 4x$ and $y'' = 12x^2 - 4$, so at $x = 2$: $y' = 24$, $y'' = 44$.
# The recipe for the second derivative:
#
# 1. `y.backward(create_graph=True)`: `x.grad` is $y'$, with a graph;
# 2. keep it: `gx = x.grad`;
# 3. **`x.cleargrad()`**: otherwise the next backward *adds* $y''$ to the $y'$
#    still sitting in `x.grad` (gradients accumulate, step 14);
# 4. `gx.backward()`: now `x.grad` is $y''$.
#
# Forgetting step 3 is the classic mistake, so let us make it once on purpose.
# The finished package, the one you import, notices it (the backward of the very
# object that `x.grad` holds reaches `x`; step 70 adds the check) and warns,
# naming the missing `cleargrad()`; the sum is computed all the same:

# %%
def f(x):
    return x**4 - 2 * x**2


x = dz.Variable(np.array(2.0))
y = f(x)
y.backward(create_graph=True)
gx = x.grad
gx.backward()  # no cleargrad: the second derivative lands on top of the first
wrong = float(x.grad.data)
print("without cleargrad:", wrong, "= 24 + 44")

x = dz.Variable(np.array(2.0))
y = f(x)
y.backward(create_graph=True)
gx = x.grad
x.cleargrad()
gx.backward()
right = float(x.grad.data)
print("with cleargrad:   ", right)

# %% [markdown]
# Here is the graph of `gx` itself, the same recipe run once more so that the
# drawing can show every value (`keep_values_for_drawing`, step 25). Every box
# in it was called by a `backward` method while the switch was on. The two
# `Pow`s make $x^3$ and $x$, the `Mul`s scale them (grey ellipses are
# constants), and `Add` sums the two terms: $4x^3 - 4x = 24$. The graph starts
# at `x`, so `gx.backward()` walks it up to `x` and leaves $f''(2) = 44$ there;
# the other `grad` lines are what that walk passed on the way.

# %%
from dezero_like.graph import keep_values_for_drawing, plot_dot_graph
from dezero_like.plot import output_dir, written

with keep_values_for_drawing():
    x = dz.Variable(np.array(2.0), name="x")
    y = f(x)
    y.backward(create_graph=True)
    gx = x.grad
    gx.name = "gx = f'(x)"
    x.cleargrad()
    gx.backward()
image = written(plot_dot_graph(gx, values=True, to_file=output_dir(31) / "gradient_graph.svg"))
image

# %% [markdown]
# ## Keeping the graph for later passes
#
# After an ordinary backward the functions drop the arrays they kept for it
# (step 37 is about that). `create_graph=True` implies keeping them, because the
# new graph can refer back to the old one. Here it reaches only the leaf `x`
# (the `Pow`s in the gradient's graph are new ones, made by `Pow.backward`), but
# for `sin(x**2)` the gradient's graph runs through the forward pass's `Pow`,
# because `Sin.backward` uses its input `x**2`.
#
# And to go further, each pass can itself be recorded: with
# `gx.backward(create_graph=True)` the second derivative has a graph, a third
# backward gives $y''' = 24x$, and so on:

# %%
x = dz.Variable(np.array(2.0))
y = f(x)
orders = [float(y.data)]
g = y
for _ in range(5):
    x.cleargrad()
    g.backward(create_graph=True)
    g = x.grad
    orders.append(float(g.data))
print("f and its first five derivatives at 2:", orders)

# %% [markdown]
# $f'''' = 24$ is a constant. One more pass gives exactly 0: its graph still
# goes through `x` (as $24 x^0$, from `Pow.backward`), and the derivative of
# $x^0$ is $0 \cdot x^{-1} = 0$.
#
# ## Exercise 1: the second derivative of $x^3 - 5x$
# With the same recipe, compute the second derivative of $g(x) = x^3 - 5x$
# at $x = 1.5$ and store it in `g2` (a float). By hand it is $6x = 9$.

# %%
#| exercise
xg = dz.Variable(np.array(1.5))
g2 = ...  # g at xg, then the four-step recipe above; g2 is a float

# %%
#| solution
xg = dz.Variable(np.array(1.5))
yg = xg**3 - 5 * xg
yg.backward(create_graph=True)
g1 = xg.grad
xg.cleargrad()
g1.backward()
g2 = float(xg.grad.data)

# %%
#| check
assert isinstance(g2, float), f"g2 should be a float, got {type(g2).__name__}"
assert not np.isclose(g2, 9.0 + 1.75), (
    "g2 is g' + g'' (10.75): g' was still in xg.grad at the second pass (recipe, item 3)"
)
assert np.isclose(g2, 9.0), f"the second derivative of x^3 - 5x at 1.5 is 9, got {g2}"
print("self-check passed: g''(1.5) = 9")

# %% [markdown]
# ## Exercise 2: a helper for any function
# Turn the four-line recipe into a helper: `second_derivative(fn, x_value)`
# makes a Variable holding `x_value` (a float or an array, the derivative is
# taken elementwise), and returns $fn''$ there as a NumPy array. The
# self-check compares it on random points with second derivatives known by
# hand, for a polynomial, `F.sin` and `F.exp`.

# %%
#| exercise
def second_derivative(fn, x_value):
    raise NotImplementedError("Exercise (step 31): the four-step recipe for any fn, "
                              "at a fresh Variable")

# %%
#| solution
def second_derivative(fn, x_value):
    x = dz.Variable(np.array(x_value, dtype=np.float64))
    fn(x).backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    return x.grad.data

# %%
#| check
points = np.random.default_rng(0).uniform(-2, 2, size=5)
cases = [("x^4 - 2x^2", f, 12 * points**2 - 4),
         ("sin", F.sin, -np.sin(points)),
         ("exp", F.exp, np.exp(points))]
for name, fn, expected in cases:
    try:
        got = second_derivative(fn, points)
    except NotImplementedError as e:
        raise AssertionError(f"second_derivative is not written yet: {e}") from None
    assert np.allclose(got, expected), (
        f"second derivative of {name}: expected {expected}, got {got} "
        "(did you clear the gradient between the two passes?)"
    )
print("self-check passed: second_derivative is right for a polynomial, sin and exp")
