# %% [markdown]
# # Step 02: `Function`, Variables in and Variables out
#
# A framework is more than boxes of data: it needs operations that turn
# boxes into new boxes. We call such an operation a `Function`.
#
# The design splits the work in two:
#
# * `forward(x)` does the arithmetic on **plain NumPy arrays**. This is the
#   only method a new function has to write, and it knows nothing about
#   `Variable`.
# * `__call__(var)` is shared by every function: it takes the array out of the
#   input box, hands it to `forward`, and puts the result into a **new**
#   `Variable`.
#
# Why bother with the wrapping? Because `__call__` is the one place that sees
# every computation go by. In step 07 it will start recording *which function
# made which variable*, and that record is what makes automatic
# differentiation possible. Keeping the maths in `forward` and the
# bookkeeping in `__call__` means no function ever has to do that bookkeeping
# itself.
#
# `Variable` is unchanged from step 01.

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
# The base class does the unpacking and packing. A subclass that forgets to
# write `forward` gets an error that names it, and calling a function on
# something that is not a `Variable` is refused right away, before NumPy
# produces a more confusing message.

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


# %% [markdown]
# A function is an object: create it, then call it like a Python function.

# %%
x = Variable(np.array([10.0]))
f = Square()
y = f(x)
print(type(y).__name__, y.data)

# %% [markdown]
# `forward` works on whole arrays, so the same `Square` squares every element
# of a matrix at once:

# %%
x = Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
y = Square()(x)
print(y.data)
print("the input is untouched:", x.data.tolist())

# %% [markdown]
# One wrinkle. Our `Variable` only accepts `ndarray`, but NumPy returns a
# NumPy *scalar* (not an array) when it computes on a 0-dimensional array:

# %%
zero_d = np.array(10.0)
print(type(zero_d).__name__, "** 2 gives", type(zero_d**2).__name__)
try:
    Square()(Variable(zero_d))
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# Step 09 fixes this properly. Until then our examples use arrays with at
# least one axis, such as `np.array([10.0])`.
#
# Mistakes are reported clearly: a plain array is not a `Variable`, and a
# function without `forward` says so.

# %%
try:
    Square()(np.array([1.0]))
except TypeError as e:
    print("TypeError:", e)


class Unfinished(Function):
    pass


try:
    Unfinished()(Variable(np.array([1.0])))
except NotImplementedError as e:
    print("NotImplementedError:", e)

# %% [markdown]
# ## Exercise
# Write a `Cube` function, $y = x^3$ element by element, in the style of
# `Square` above. The self-check cell applies it to `[2.0, 3.0]` and expects
# `[8.0, 27.0]` in a new `Variable`.

# %%
#| exercise
class Cube(Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 02): write Cube.forward, as Square's")

# %%
#| solution
class Cube(Function):
    def forward(self, x):
        return x**3

# %%
#| check
x = Variable(np.array([2.0, 3.0]))
y = Cube()(x)
assert isinstance(y, Variable) and y is not x, "Cube()(x) should return a new Variable"
assert np.array_equal(y.data, [8.0, 27.0]), (
    f"expected [8, 27], got {y.data}: forward should return the cube of the raw array it gets"
)
print("self-check passed: Cube()([2, 3]) is a new Variable holding [8, 27]")
