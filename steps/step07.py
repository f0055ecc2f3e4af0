# %% [markdown]
# # Step 07: Automatic backprop through `creator` links
#
# In step 06 we called the `backward` methods ourselves, in the reverse order
# of the forward calls. The framework can find that order on its own if the
# forward pass leaves a trail. Two links are enough:
#
# * a function remembers its **input** (step 06) and its **output**;
# * a variable remembers its **creator**, the function that produced it.
#   Variables we make ourselves have no creator: they are the inputs.
#
# Following `creator` and `input` from `y` leads back, function by function,
# to `x`:
#
# $$y \xleftarrow{\;C\;} b \xleftarrow{\;B\;} a \xleftarrow{\;A\;} x$$
#
# The links are made while the computation runs, so the graph is whatever
# the Python code actually did, loops and `if`s included. This is the
# *define-by-run* design of Chainer (Tokui et al., 2015) and PyTorch (Paszke
# et al., 2019), as opposed to first declaring a static graph and running it
# later.
#
# With the trail in place, `Variable.backward()` can do step 06's work: ask
# its creator for the input's gradient, store it, and repeat from that input
# until it reaches a variable with no creator. This first version simply
# calls itself (recursion); step 08 explains why that has to change.

# %%
import numpy as np


class Variable:
    """A box around a NumPy array."""

    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.grad = None  # dy/d(this variable), filled in by backprop
        self.creator = None  # the Function that made this variable (None for inputs)

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        """Fill in the grad of every variable this one was computed from (recursively)."""
        if self.grad is None:
            raise ValueError(
                "set y.grad before calling y.backward(), e.g. y.grad = np.ones_like(y.data)"
            )
        f = self.creator  # 1. the function that made this variable
        if f is not None:
            x = f.input  # 2. that function's input
            x.grad = f.backward(self.grad)  # 3. one step of the chain rule
            x.backward()  # 4. and the same again from x


# %% [markdown]
# `Function.__call__` now also writes the link in the other direction: the
# output it creates remembers the function (`set_creator`), and the function
# remembers its output. `Square` and `Exp` are unchanged from step 06.

# %%
class Function:
    """Base class of every function: a Variable in, a new Variable out.

    Subclasses implement ``forward``, which receives and returns plain arrays,
    and ``backward``, which turns dy/d(output) into dy/d(input) (arrays too).
    """

    def __call__(self, var):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{type(self).__name__} takes a Variable, got {type(var).__name__}; "
                "wrap the array with Variable(...) first"
            )
        x = var.data  # take the array out of the box
        y = self.forward(x)  # compute on plain arrays
        output = Variable(y)  # put the result into a new box
        output.set_creator(self)  # the output remembers where it came from
        self.input = var  # remembered for backward
        self.output = output
        return output

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x)")

    def backward(self, gy):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy)")


class Square(Function):
    """y = x ** 2, element by element; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.input.data
        return 2 * x * gy


class Exp(Function):
    """y = e ** x, element by element; dy/dx = e ** x."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.input.data
        return np.exp(x) * gy


# %% [markdown]
# The central difference of step 04 stays as our reference.

# %%
def numerical_diff(f, x, eps=1e-4):
    """Derivative of ``f`` at ``x`` by the central difference.

    f'(x) ~ (f(x + eps) - f(x - eps)) / (2 eps); the error shrinks like eps**2
    until rounding errors (about 1e-16 / eps) take over.
    """
    # np.asarray: for a 0-d array, x.data + eps is a NumPy scalar, not an array
    y_plus = f(Variable(np.asarray(x.data + eps)))
    y_minus = f(Variable(np.asarray(x.data - eps)))
    return (y_plus.data - y_minus.data) / (2 * eps)


# %% [markdown]
# ## Following the links
#
# Build the chain of step 06 and walk back from `y` by hand, reading
# `creator` and `input`:

# %%
A = Exp()
B = Square()
C = Exp()

x = Variable(np.array([0.5]))
a = A(x)
b = B(a)
y = C(b)

assert y.creator is C and C.input is b
assert b.creator is B and B.input is a
assert a.creator is A and A.input is x
assert x.creator is None
names = {id(x): "x", id(a): "a", id(b): "b", id(y): "y"}
var, trail = y, ["y"]
while var.creator is not None:
    f = var.creator
    var = f.input
    trail.append(f"{type(f).__name__} <- {names[id(var)]}")
print(" <- ".join(trail))

# %% [markdown]
# ## Backprop with one call
#
# Seed the output's gradient with $\frac{dy}{dy} = 1$ and let `y.backward()`
# walk the links:

# %%
y.grad = np.ones_like(y.data)
y.backward()
print("x.grad =", x.grad, " (step 05 computed 82.387111 by hand)")
print("b.grad =", b.grad, " a.grad =", a.grad)

# %% [markdown]
# The same links as a picture. The package's drawing code (`dezero_like.graph`,
# used here ahead of step 26, where it is introduced) reads only `creator`,
# `input`, `output`, `data` and `grad`, so it can draw the graph our own
# classes built. Variables are orange ellipses with their value and gradient,
# functions blue boxes; arrows point the way the forward pass went, and
# `backward()` walked them upwards:

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, input, output, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(y, values=True, to_file=output_dir(7) / "chain.svg"))
image

# %% [markdown]
# The chain does not have to be written out step by step. Any expression
# built from our functions leaves its trail, and `backward()` finds it:

# %%
def f(v):
    return Exp()(Square()(Exp()(v)))


x = Variable(np.array([-1.0, -0.5, 0.0, 0.5]))
y = f(x)
y.grad = np.ones_like(y.data)
y.backward()
print("backprop :", x.grad)
print("numerical:", numerical_diff(f, x))

# %% [markdown]
# Forgetting the seed is caught with a message that says what to do (step 09
# will make the seed automatic):

# %%
try:
    f(Variable(np.array([1.0]))).backward()
except ValueError as e:
    print("without a seed, backward() refuses (as intended): ValueError:", e)

# %% [markdown]
# ## Exercise
# Write a `Cube` function ($y = x^3$, $\frac{dy}{dx} = 3x^2$) with `forward`
# and `backward`. Nothing else is needed for it to take part in automatic
# backprop: the self-check builds $\exp(x^3)$, calls `backward()` and
# compares with the numerical derivative.

# %%
#| exercise
class Cube(Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 07): Cube.forward, as in step 02")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 07): Cube.backward, the chain rule as in "
                                  "Square.backward")

# %%
#| solution
class Cube(Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        x = self.input.data
        return 3 * x**2 * gy

# %%
#| check
x = Variable(np.array([-0.5, 0.3, 1.0]))
y = Exp()(Cube()(x))
assert np.allclose(y.data, np.exp(x.data**3)), f"forward: expected exp(x^3), got {y.data}"
y.grad = np.ones_like(y.data)
y.backward()
expected = numerical_diff(lambda v: Exp()(Cube()(v)), x)
assert np.allclose(x.grad, expected, rtol=1e-6), (
    f"expected {expected}, got {x.grad}: backward multiplies dy/dx = 3x^2, at the input's "
    "values, by gy; where does Square.backward find its x?"
)
print("self-check passed: Cube's backward agrees with numerical_diff inside exp(x^3)")
