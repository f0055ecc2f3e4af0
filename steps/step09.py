# %% [markdown]
# # Step 09: Friendlier functions
#
# The machinery works; now we make it pleasant to use. Three small changes:
#
# 1. **Plain Python functions.** Writing `Exp()(Square()(Exp()(x)))` creates
#    a function object by hand each time. Lowercase wrappers `square(x)` and
#    `exp(x)` do it for us, so code reads like the maths:
#    `exp(square(exp(x)))`.
# 2. **0-d arrays work.** Since step 02 we have avoided 0-d arrays, because
#    NumPy returns a NumPy *scalar* (`np.float64`), not an `ndarray`, when it
#    computes on one, and our `Variable` refuses anything that is not an
#    `ndarray`. Rather than loosening that check, we turn every result (and
#    every gradient) back into an array with a helper, `as_array`.
# 3. **No seed to remember.** `y.backward()` starts with
#    $\frac{dy}{dy} = 1$ when `y.grad` is not set, as an array of ones of
#    `y`'s shape (`np.ones_like`). For an array `y` this computes the
#    gradient of the *sum* of its elements, which for element-by-element
#    functions is each element's own derivative.

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
        """Fill in the grad of every variable this one was computed from (with a loop)."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = [self.creator] if self.creator is not None else []  # still to visit
        while funcs:
            f = funcs.pop()  # 1. the next function to process
            x, y = f.input, f.output  # 2. its input and output
            x.grad = as_array(f.backward(y.grad))  # 3. one step of the chain rule
            if x.creator is not None:
                funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `as_array` turns the NumPy scalar that NumPy returns for 0-d input back
# into a 0-d array. `Function.__call__` applies it to every result, and
# `Variable.backward` to every gradient, so `grad` is always an array too.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


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
        output = Variable(as_array(y))  # put the result into a new box
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


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()(x)


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()(x)


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
# ## Reads like the maths

# %%
x = Variable(np.array([0.5]))
y = exp(square(exp(x)))
y.backward()
print("y =", y.data, " x.grad =", x.grad)

# %% [markdown]
# ## Scalars are 0-d arrays
#
# NumPy hands back a scalar, not an array, for a 0-d input:

# %%
print(type(np.array(0.5)).__name__, "->", type(np.exp(np.array(0.5))).__name__)
print("as_array gives:", type(as_array(np.float64(1.0))).__name__,
      "with shape", as_array(np.float64(1.0)).shape)

# %% [markdown]
# With `as_array` inside `__call__`, a 0-d input now gives 0-d outputs, and
# the first derivative of this course becomes a one-liner:

# %%
x = Variable(np.array(0.5))
y = exp(square(exp(x)))
print("y.data:", repr(y.data), " type:", type(y.data).__name__, " shape:", y.data.shape)
y.backward()
print("x.grad:", repr(x.grad), " (2e * e^e =", f"{2 * np.e * np.exp(np.e):.8f})")

# %% [markdown]
# `Variable` still refuses what is not an array: `as_array` only converts the
# results of *functions*, it does not make the `Variable` box less strict.

# %%
try:
    Variable(0.5)
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# ## The default seed
#
# `y.backward()` filled `y.grad` with ones of `y`'s shape. On a vector, every
# element is seeded with 1, and each element of `x.grad` is the derivative
# at that point:

# %%
x = Variable(np.array([0.0, 1.0, 2.0]))
y = square(x)
y.backward()
print("y.grad =", y.grad, " x.grad =", x.grad, " (2x =", 2 * x.data, ")")

# %% [markdown]
# ## Exercise
# Add a `Sin` function ($y = \sin x$, $\frac{dy}{dx} = \cos x$) and its
# lowercase wrapper `sin`. The self-check calls it on a 0-d array, which now
# works, and calls `backward()` without a seed.

# %%
#| exercise
class Sin(Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 09): Sin.forward, with NumPy, like Exp.forward")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 09): Sin.backward, the chain rule, like "
                                  "Exp.backward")


def sin(x):
    raise NotImplementedError("Exercise (step 09): the wrapper sin, like square and exp")

# %%
#| solution
class Sin(Function):
    def forward(self, x):
        return np.sin(x)

    def backward(self, gy):
        return np.cos(self.input.data) * gy


def sin(x):
    return Sin()(x)

# %%
#| check
x = Variable(np.array(np.pi / 3))
y = sin(x)
assert isinstance(y, Variable), f"sin(x) should return a Variable, got {type(y).__name__}"
assert isinstance(y.data, np.ndarray) and y.data.shape == (), "sin of a 0-d array is 0-d"
assert np.isclose(y.data, np.sin(np.pi / 3)), f"sin(pi/3) = {np.sin(np.pi / 3)}, got {y.data}"
y.backward()
assert np.isclose(x.grad, 0.5), f"cos(pi/3) = 0.5, got {x.grad}: is cos taken at the input?"
x_chain = Variable(np.array(np.pi / 3))
square(sin(x_chain)).backward()  # now Sin.backward receives gy = 2 sin(x), not 1
assert np.isclose(x_chain.grad, np.sin(2 * np.pi / 3)), (
    f"d/dx sin(x)^2 = 2 sin(x) cos(x) = {np.sin(2 * np.pi / 3)}, got {x_chain.grad}: "
    "does Sin.backward multiply by gy, the gradient coming from the output side (the chain rule)?"
)
print("self-check passed: sin works on a 0-d array and its gradient is cos")
