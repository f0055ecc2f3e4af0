# %% [markdown]
# # Step 03: Composing functions
#
# Because every `Function` takes a `Variable` and returns a `Variable`, the
# output of one function can be fed straight into the next. Chaining them
# builds bigger computations out of small pieces:
#
# $$y = C(B(A(x)))$$
#
# Deep learning models are exactly this: long chains (later, graphs) of
# simple functions. Each piece is easy to differentiate on its own; in the
# next steps we will see how the chain rule combines those easy pieces into
# the derivative of the whole chain.
#
# This step adds a second function, `Exp` ($y = e^x$), and composes it with
# `Square`. `Variable` and `Function` are unchanged from step 02.

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


# %% [markdown]
# The base class unpacks the input box, calls `forward` on the array and packs
# the result into a new box (step 02).

# %%
class Function:
    """Base class of every function: a Variable in, a new Variable out.

    Subclasses implement ``forward``, which receives and returns plain arrays.
    """

    def __call__(self, var):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{type(self).__name__} takes a Variable, got {type(var).__name__}; "
                "wrap the array with Variable(...) first"
            )
        x = var.data  # take the array out of the box
        y = self.forward(x)  # compute on plain arrays
        return Variable(y)  # put the result into a new box

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x)")


class Square(Function):
    """y = x ** 2, element by element."""

    def forward(self, x):
        return x**2


class Exp(Function):
    """y = e ** x, element by element."""

    def forward(self, x):
        return np.exp(x)


# %% [markdown]
# Now chain three functions: first $e^x$, then the square, then $e^x$ again.
# Each intermediate result is an ordinary `Variable` we can look at.

# %%
A = Exp()
B = Square()
C = Exp()

x = Variable(np.array([0.5]))
a = A(x)
b = B(a)
y = C(b)
print("a = exp(x)    =", a.data)
print("b = square(a) =", b.data)
print("y = exp(b)    =", y.data)

# %% [markdown]
# The chain computes $y = \exp\left((e^{x})^2\right) = \exp(e^{2x})$. At
# $x = 0.5$ the middle value is $e^{1} = e$, so $y = e^{e} \approx 15.154$.
# Check the chain against the formula written directly in NumPy:

# %%
direct = np.exp(np.exp(2 * x.data))
print("chain:", y.data, " direct:", direct, " equal:", np.allclose(y.data, direct))

# %% [markdown]
# Nested calls read the same way as the maths. Each call creates a fresh
# function object, which does no harm: so far a function object stores
# nothing between calls.

# %%
x = Variable(np.array([0.0, 0.5, 1.0]))
y = Exp()(Square()(Exp()(x)))
print("exp(square(exp(x))) at", x.data, "=", y.data)

# %% [markdown]
# ## Exercise
# Since $(e^x)^2 = e^{2x}$, composing `Exp` and then `Square` is one way to
# compute $e^{2x}$. Build that composition for `x` below and store the result
# in `y`.

# %%
#| exercise
x = Variable(np.array([-1.0, 0.0, 2.0]))
y = ...  # Exp first, then Square

# %%
#| solution
x = Variable(np.array([-1.0, 0.0, 2.0]))
y = Square()(Exp()(x))

# %%
#| check
assert y is not ..., "replace the ... in `y = ...` with Exp, then Square, applied to x"
assert isinstance(y, Variable), (
    f"y should be the Variable the last function returns, got {type(y).__name__}"
)
assert np.allclose(y.data, np.exp(2 * x.data)), (
    f"expected exp(2x) = {np.exp(2 * x.data)}, got {y.data}: apply Exp to x, then Square"
)
print("self-check passed: Square()(Exp()(x)) computes exp(2x)")
