# %% [markdown]
# # Step 11: Variable-length inputs and outputs
#
# So far every function took exactly one input and produced one output.
# Many useful functions do not fit that mould: addition and multiplication
# take two inputs, and some functions return several results (a split, or
# the quotient and the remainder of a division).
#
# The general interface is a **list in, list out**:
#
# * `Function.__call__` takes a list of `Variable`s and returns a list of
#   new `Variable`s, each one linked to the function as its creator;
# * `forward` takes a list of arrays and returns a tuple of arrays;
# * the function remembers `inputs` and `outputs` (plural).
#
# With that, `Add` can be written. This step only changes the *forward*
# side. Backprop still walks chains of one-input, one-output functions;
# how gradients flow into several inputs is the subject of step 13, and
# until then `Add` has no `backward`.
#
# You will find the list-wrapping clumsy to use. That is deliberate: step 12
# keeps the flexibility and removes the clumsiness.

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
# `Function.__call__` now takes a list and returns a list. `Square` and
# `Exp` follow the new convention: `forward` unpacks a list of one array and
# returns a tuple of one array, `backward` reads `self.inputs[0]`. Their
# lowercase wrappers hide the lists, so `square(x)` is used exactly as before.
# `Add` is the first function with two inputs.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class of every function: a list of Variables in, a list of new Variables out.

    Subclasses implement ``forward``, which receives a list of arrays and returns
    a tuple of arrays, and ``backward``, which turns dy/d(output) into dy/d(input).
    """

    def __call__(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(
                f"{type(self).__name__} takes a list of Variables, got {type(inputs).__name__}; "
                "put the inputs in a list: f([x0, x1])"
            )
        for var in inputs:
            if not isinstance(var, Variable):
                raise TypeError(
                    f"{type(self).__name__} takes Variables, got {type(var).__name__}; "
                    "wrap the array with Variable(...) first"
                )
        xs = [var.data for var in inputs]  # take the arrays out of their boxes
        ys = self.forward(xs)  # compute on plain arrays
        outputs = [Variable(as_array(y)) for y in ys]  # put the results into new boxes
        for output in outputs:
            output.set_creator(self)  # each output remembers where it came from
        self.inputs = inputs  # remembered for backward
        self.outputs = outputs
        return outputs

    def forward(self, xs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(xs)")

    def backward(self, gy):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy)")


class Square(Function):
    """y = x ** 2, element by element; dy/dx = 2x."""

    def forward(self, xs):
        (x,) = xs
        return (x**2,)

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    """y = e ** x, element by element; dy/dx = e ** x."""

    def forward(self, xs):
        (x,) = xs
        return (np.exp(x),)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    """y = x0 + x1, element by element (its backward comes in step 13)."""

    def forward(self, xs):
        x0, x1 = xs
        return (x0 + x1,)


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()([x])[0]


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()([x])[0]


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
# The gradient checker of step 10 will tell us whether this step's
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
# ## Two inputs, one output
#
# `Add` receives a list of two Variables and returns a list holding one:

# %%
xs = [Variable(np.array(2.0)), Variable(np.array(3.0))]
f = Add()
ys = f(xs)
y = ys[0]
print(f"ys is a {type(ys).__name__} of {len(ys)}; y.data = {y.data}")
print(f"y remembers its creator: {y.creator is f}; f remembers both inputs: "
      f"{f.inputs[0] is xs[0] and f.inputs[1] is xs[1]}")

# %% [markdown]
# Arrays of any shape work, element by element, as NumPy adds them:

# %%
ys = Add()([Variable(np.array([1.0, 2.0, 3.0])), Variable(np.array([10.0, 20.0, 30.0]))])
print(ys[0].data)

# %% [markdown]
# ## Several outputs
#
# The same interface carries several results: `forward` returns a tuple of
# arrays, and the call returns one `Variable` per array. `AddSub` returns
# both the sum and the difference of its inputs:

# %%
class AddSub(Function):
    """(x0 + x1, x0 - x1): two inputs, two outputs."""

    def forward(self, xs):
        x0, x1 = xs
        return (x0 + x1, x0 - x1)


s, d = AddSub()([Variable(np.array(7.0)), Variable(np.array(2.0))])
print("sum:", s.data, " difference:", d.data, " same creator:", s.creator is d.creator)

# %% [markdown]
# Drawn with the package's graph code (which reads only `creator`, `inputs`,
# `outputs`, `data` and `grad`), the two results hang from one function box.
# Nothing has been differentiated yet, so every gradient shows `-`:

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(s, values=True, to_file=output_dir(11) / "addsub.svg"))
image

# %% [markdown]
# ## The one-input functions still work
#
# `Square` and `Exp` moved to the list convention, but their wrappers hide
# it. Backprop through them gives the same values as in step 10, and the
# gradient checker agrees:

# %%
x = Variable(np.array(0.5))
y = exp(square(exp(x)))
y.backward()
print("x.grad =", x.grad)
rng = np.random.default_rng(0)
print("gradient checks:", gradient_check(square, rng.standard_normal((3, 4))),
      gradient_check(exp, rng.standard_normal(5)))

# %% [markdown]
# Without the wrappers, though, every call needs a list around its input
# and an index on its result:

# %%
y = Square()([Variable(np.array(3.0))])[0]
print("Square()([x])[0] =", y.data)

# %% [markdown]
# Mistakes are caught early: a single `Variable` instead of a list, or an
# array inside the list. And `Add` cannot backprop yet (step 13):

# %%
try:
    Square()(Variable(np.array(3.0)))
except TypeError as e:
    print("TypeError:", e)
try:
    Add()([Variable(np.array(1.0)), np.array(2.0)])
except TypeError as e:
    print("TypeError:", e)
try:
    Add()([Variable(np.array(1.0)), Variable(np.array(2.0))])[0].backward()
except NotImplementedError as e:
    print("NotImplementedError:", e)

# %% [markdown]
# ## Exercise
# Write `Mul`, which multiplies its two inputs element by element, in the
# list convention of this step (`forward` only). The self-check multiplies
# $[1, 2, 3]$ by $[4, 5, 6]$.

# %%
#| exercise
class Mul(Function):
    def forward(self, xs):
        raise NotImplementedError(
            "Exercise (step 11): Mul.forward gets a list of two arrays and returns a tuple"
        )

# %%
#| solution
class Mul(Function):
    def forward(self, xs):
        x0, x1 = xs
        return (x0 * x1,)

# %%
#| check
ys = Mul()([Variable(np.array([1.0, 2.0, 3.0])), Variable(np.array([4.0, 5.0, 6.0]))])
assert isinstance(ys, list) and len(ys) == 1, (
    "Mul should return a list of one Variable: forward returns a tuple of one array"
)
assert np.array_equal(ys[0].data, [4.0, 10.0, 18.0]), f"expected [4, 10, 18], got {ys[0].data}"
print("self-check passed: Mul()([1, 2, 3], [4, 5, 6]) gives [4, 10, 18]")
