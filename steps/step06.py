# %% [markdown]
# # Step 06: Manual backprop, a `backward` for every function
#
# Step 05 worked the chain rule out with pencil-and-paper derivatives. Now
# the framework takes over the bookkeeping, in two small changes:
#
# * a `Variable` gets a `grad` attribute to hold the derivative of the final
#   output with respect to it, $\frac{dy}{d\,\text{variable}}$, an array of
#   the same shape as `data`;
# * every `Function` gets a `backward(gy)` method. It receives the gradient
#   flowing in from its output and returns the gradient for its input: the
#   incoming gradient times the function's own local derivative, evaluated at
#   the input it saw in the forward pass.
#
# Each function only knows its own derivative; the chain rule is applied by
# calling the `backward` methods in reverse order. In this step we still
# make those calls **by hand**.

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


# %% [markdown]
# `Function.__call__` now remembers its input, because `backward` needs the
# value the function was evaluated at. Each function gets a `backward(gy)`:
# given $\frac{dy}{d\,\text{output}}$ it returns $\frac{dy}{d\,\text{input}}$,
# that is `gy` times the function's local derivative.

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
        self.input = var  # remembered for backward
        return Variable(y)  # put the result into a new box

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
# ## Backprop by hand
#
# The same chain as in step 05, $y = \exp\left((e^{x})^2\right)$ at $x = 0.5$.
# The forward pass now leaves each function holding its input:

# %%
A = Exp()
B = Square()
C = Exp()

x = Variable(np.array([0.5]))
a = A(x)
b = B(a)
y = C(b)
print("C saw b:", C.input is b, " B saw a:", B.input is a, " A saw x:", A.input is x)

# %% [markdown]
# The backward pass starts from $\frac{dy}{dy} = 1$ and calls the `backward`
# methods in the reverse order of the forward calls, each time storing the
# result in the `grad` of that function's input:

# %%
y.grad = np.ones_like(y.data)
b.grad = C.backward(y.grad)
a.grad = B.backward(b.grad)
x.grad = A.backward(a.grad)
print("y.grad =", y.grad, " b.grad =", b.grad, " a.grad =", a.grad, " x.grad =", x.grad)

# %% [markdown]
# `x.grad` is the 82.387111 that step 05 computed by hand. Compare it with
# the numerical derivative:

# %%
def f(v):
    return Exp()(Square()(Exp()(v)))


numerical = numerical_diff(f, x)
print("backprop:", x.grad, " numerical:", numerical, " close:", np.allclose(x.grad, numerical))

# %% [markdown]
# Because every function works element by element, the same calls compute the
# derivative at many points at once:

# %%
x = Variable(np.array([-1.0, -0.5, 0.0, 0.5]))
a = A(x)
b = B(a)
y = C(b)
y.grad = np.ones_like(y.data)
b.grad = C.backward(y.grad)
a.grad = B.backward(b.grad)
x.grad = A.backward(a.grad)
print("x       :", x.data)
print("backprop:", x.grad)
print("max relative difference to numerical:",
      f"{np.max(np.abs(x.grad - numerical_diff(f, x)) / np.abs(x.grad)):.1e}")

# %% [markdown]
# Writing the backward calls by hand works, but it means repeating the whole
# chain in reverse and getting the order right every time. Step 07 lets each
# variable remember which function created it, so that `y` can find its own
# way back to `x`.

# %% [markdown]
# ## Exercise
# For $y = (x^2)^2 = x^4$ built from two `Square` functions, run the backward
# pass by hand, as above for the chain of three, and store $\frac{dy}{dx}$ in
# `x.grad`. The self-check compares it with $4x^3$.

# %%
#| exercise
x = Variable(np.array([1.0, 2.0]))
S1, S2 = Square(), Square()
h = S1(x)
y = S2(h)
y.grad = ...  # the seed, dy/dy: an array shaped like y.data
h.grad = ...  # dy/dh: which function made y?
x.grad = ...  # dy/dx: and which one made h?

# %%
#| solution
x = Variable(np.array([1.0, 2.0]))
S1, S2 = Square(), Square()
h = S1(x)
y = S2(h)
y.grad = np.ones_like(y.data)  # seed, then call the backward methods from the output side
h.grad = S2.backward(y.grad)
x.grad = S1.backward(h.grad)

# %%
#| check
assert isinstance(x.grad, np.ndarray), (
    f"x.grad should be an array returned by a backward method, got {x.grad!r}"
)
assert np.allclose(x.grad, 4 * x.data**3), (
    f"expected 4x^3 = {4 * x.data**3}, got {x.grad}: is the seed dy/dy = 1? Do the backward "
    "calls run from the output side back to the input?"
)
assert np.allclose(h.grad, 2 * h.data), (
    f"h.grad should be dy/dh = 2h = {2 * h.data}, got {h.grad}: it comes from the function "
    "that made y, fed with the gradient of its output"
)
print("self-check passed: the hand-run backward pass gives dy/dx = 4x^3")
