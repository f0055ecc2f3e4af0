# %% [markdown]
# # Step 12: Friendlier calls
#
# Step 11's list-in, list-out interface is general but clumsy: calling `Add`
# meant `Add()([x0, x1])[0]`, and every `forward` had to unpack a list and
# pack a tuple. Python can do that packing for us:
#
# * **Calling**: `def __call__(self, *inputs)` collects any number of
#   arguments into a tuple, so the call becomes `Add()(x0, x1)`.
# * **Forward**: `self.forward(*xs)` spreads the list of arrays back into
#   separate arguments, so a function writes `def forward(self, x0, x1)`.
#   If `forward` returns a single array instead of a tuple, `__call__` wraps
#   it.
# * **Result**: when there is exactly one output, `__call__` returns the
#   `Variable` itself instead of a list of one.
#
# Nothing about what is computed changes; only the code we write to use a
# function and to define one gets shorter. The `forward`s of `Square` and
# `Exp` are back to their step 10 form (their `backward`s keep step 11's
# `self.inputs[0]`), and `Add` finally reads like the maths: `add(x0, x1)`.

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
            x, y = f.inputs[0], f.outputs[0]  # 2. its input and output (one each, for now)
            x.grad = as_array(f.backward(y.grad))  # 3. one step of the chain rule
            if x.creator is not None:
                funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `Function.__call__` takes its inputs as separate arguments, passes the
# arrays to `forward` as separate arguments, accepts a bare array as a single
# result, and returns a bare `Variable` when there is only one output.
# `Square`, `Exp` and `Add` lose their list handling, and `Add` gets its
# lowercase wrapper `add`.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class of every function: Variables in, new Variables out.

    Subclasses implement ``forward(x0, x1, ...)``, which receives arrays and
    returns an array or a tuple of arrays, and ``backward``, which turns
    dy/d(output) into dy/d(input). One output is returned as a bare Variable,
    several as a list.
    """

    def __call__(self, *inputs):
        for var in inputs:
            if not isinstance(var, Variable):
                raise TypeError(
                    f"{type(self).__name__} takes Variables, got {type(var).__name__}; "
                    "wrap arrays with Variable(...) and pass them as f(x0, x1)"
                )
        xs = [var.data for var in inputs]  # take the arrays out of their boxes
        ys = self.forward(*xs)  # compute on plain arrays: forward(x0, x1, ...)
        if not isinstance(ys, tuple):
            ys = (ys,)  # one result may be returned without a tuple
        outputs = [Variable(as_array(y)) for y in ys]  # put the results into new boxes
        for output in outputs:
            output.set_creator(self)  # each output remembers where it came from
        self.inputs = inputs  # remembered for backward
        self.outputs = outputs
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x0, ...)")

    def backward(self, gy):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy)")


class Square(Function):
    """y = x ** 2, element by element; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    """y = e ** x, element by element; dy/dx = e ** x."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    """y = x0 + x1, element by element (its backward comes in step 13)."""

    def forward(self, x0, x1):
        return x0 + x1


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()(x)


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()(x)


def add(x0, x1):
    """x0 + x1 of two Variables (creates an Add function and calls it)."""
    return Add()(x0, x1)


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
# The gradient checker of step 10 will again tell us whether this step's
# refactoring broke any gradient.

# %%
def gradient_check(f, x, eps=1e-4, rtol=1e-5, atol=1e-8):
    """Check backprop's gradient of sum(f(x)) against central differences.

    ``f`` maps a Variable to a Variable; ``x`` is a float64 ndarray. Element i
    of the numerical gradient is (S(x + eps e_i) - S(x - eps e_i)) / (2 eps)
    with S = sum(f(.)). Returns True when all elements agree within
    |backprop - numerical| <= atol + rtol * |numerical|; otherwise raises
    AssertionError naming the function, the input shape and the worst element.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        got = f"ndarray of {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(
            f"gradient_check needs a float64 ndarray, got {got}; "
            "use np.asarray(x, dtype=np.float64)"
        )
    name = getattr(f, "__name__", type(f).__name__)
    v = Variable(x.copy())
    f(v).backward()
    backprop = v.grad
    if backprop is None or backprop.shape != x.shape:
        shape = None if backprop is None else backprop.shape
        raise AssertionError(f"{name}: backprop gave grad of shape {shape}, input is {x.shape}")

    numerical = np.empty_like(x)
    for idx in np.ndindex(x.shape):  # one element at a time
        nudged = x.copy()
        nudged[idx] = x[idx] + eps
        plus = f(Variable(nudged)).data.sum()
        nudged = x.copy()
        nudged[idx] = x[idx] - eps
        minus = f(Variable(nudged)).data.sum()
        numerical[idx] = (plus - minus) / (2 * eps)

    excess = np.abs(backprop - numerical) - (atol + rtol * np.abs(numerical))
    if np.any(excess > 0):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), x.shape))
        raise AssertionError(
            f"gradient check failed for {name} on input of shape {x.shape}: "
            f"{np.count_nonzero(excess > 0)} of {x.size} elements differ; worst at index "
            f"{worst}: backprop {backprop[worst]:.6g}, numerical {numerical[worst]:.6g}"
        )
    return True


# %% [markdown]
# ## Calls that read like the maths

# %%
x0 = Variable(np.array(2.0))
x1 = Variable(np.array(3.0))
y = add(x0, x1)
print(f"add(x0, x1) = {y.data}: a single {type(y).__name__}, created by "
      f"{type(y.creator).__name__}")

# %% [markdown]
# Functions compose freely now, whatever their number of inputs. Here is
# $z = x_0^2 + x_1^2$, the expression whose gradient step 13 will compute:

# %%
z = add(square(x0), square(x1))
print("square(x0) + square(x1) =", z.data)

# %% [markdown]
# Step 11 and step 12 side by side, for the same two calls:
#
# | | step 11 | step 12 |
# | --- | --- | --- |
# | call | `Add()([x0, x1])[0]` | `Add()(x0, x1)` or `add(x0, x1)` |
# | forward | `x0, x1 = xs; return (x0 + x1,)` | `return x0 + x1` |

# %%
print(f"Add()(x0, x1) = {Add()(x0, x1).data}; Square()(x0) = {Square()(x0).data}")

# %% [markdown]
# ## Several outputs still come back as a list
#
# A `forward` that returns a tuple still produces one `Variable` per element:

# %%
class AddSub(Function):
    """(x0 + x1, x0 - x1): two inputs, two outputs."""

    def forward(self, x0, x1):
        return x0 + x1, x0 - x1


s, d = AddSub()(Variable(np.array(7.0)), Variable(np.array(2.0)))
print("sum:", s.data, " difference:", d.data, " same creator:", s.creator is d.creator)

# %% [markdown]
# ## Nothing broke
#
# The one-input functions backprop and pass the gradient check as before:

# %%
x = Variable(np.array(0.5))
y = exp(square(exp(x)))
y.backward()
print("x.grad =", x.grad)
rng = np.random.default_rng(0)
print("gradient checks:", gradient_check(square, rng.standard_normal((3, 4))),
      gradient_check(exp, rng.standard_normal(5)))

# %% [markdown]
# A step-11 style call with a list is now a mistake, and it says so:

# %%
try:
    Add()([x0, x1])
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# ## Exercise
# Write `Mul` (element-by-element product, `forward` only) in this step's
# style, and its wrapper `mul(x0, x1)`. The self-check multiplies
# $[1, 2, 3]$ by $[4, 5, 6]$.

# %%
#| exercise
class Mul(Function):
    def forward(self, x0, x1):
        raise NotImplementedError("Exercise (step 12): Mul.forward, two raw arrays in, one "
                                  "out, as Add.forward")


def mul(x0, x1):
    raise NotImplementedError("Exercise (step 12): the wrapper mul, like add")

# %%
#| solution
class Mul(Function):
    def forward(self, x0, x1):
        return x0 * x1


def mul(x0, x1):
    return Mul()(x0, x1)

# %%
#| check
y = mul(Variable(np.array([1.0, 2.0, 3.0])), Variable(np.array([4.0, 5.0, 6.0])))
assert isinstance(y, Variable), (
    f"mul should return a single Variable, not a {type(y).__name__}: "
    "forward returns one array and __call__ unpacks it"
)
assert np.array_equal(y.data, [4.0, 10.0, 18.0]), f"expected [4, 10, 18], got {y.data}"
print("self-check passed: mul([1, 2, 3], [4, 5, 6]) is one Variable holding [4, 10, 18]")
