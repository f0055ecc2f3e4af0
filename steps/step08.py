# %% [markdown]
# # Step 08: From recursion to a loop
#
# Step 07's `backward` called itself once per function in the chain. Every
# Python call occupies a *frame* on the call stack until it returns, and
# Python caps the stack depth to protect the interpreter from crashing. The
# cap is the *recursion limit*: 1000 in plain Python, 3000 in a Jupyter
# kernel (which raises it); `sys.getrecursionlimit()` tells. A network with
# a few thousand operations in a row, such as a recurrent network unrolled
# over a long sequence, would hit that cap.
#
# The fix is to keep the "work still to do" in our own list instead of on
# Python's call stack. `backward` now takes a function from the list,
# applies one step of the chain rule, and puts the creator of that
# function's input on the list. The list can grow as long as memory allows;
# the stack depth stays constant, however long the graph.
#
# The result is the same as before. The list looks like overkill for a chain,
# where it never holds more than one function, but it is the shape that step
# 13 onwards needs, when a function has several inputs and therefore several
# creators to visit.

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
            raise ValueError(
                "set y.grad before calling y.backward(), e.g. y.grad = np.ones_like(y.data)"
            )
        funcs = [self.creator] if self.creator is not None else []  # still to visit
        while funcs:
            f = funcs.pop()  # 1. the next function to process
            x, y = f.input, f.output  # 2. its input and output
            x.grad = f.backward(y.grad)  # 3. one step of the chain rule
            if x.creator is not None:
                funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `Function`, `Square` and `Exp` are unchanged from step 07.

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
# ## Same answers as before
#
# On the chain of steps 05–07 the loop gives the same gradients:

# %%
def f(v):
    return Exp()(Square()(Exp()(v)))


x = Variable(np.array([0.5]))
y = f(x)
y.grad = np.ones_like(y.data)
y.backward()
print("x.grad =", x.grad, " numerical:", numerical_diff(f, x))

# %% [markdown]
# ## A very long chain
#
# To see the difference we need a long chain of a cheap function whose
# numbers stay readable. `AddOne` computes $y = x + 1$, so its derivative is
# 1: after $n$ of them, $y = x + n$ and $\frac{dy}{dx} = 1$.

# %%
import sys
import time


class AddOne(Function):
    """y = x + 1; dy/dx = 1."""

    def forward(self, x):
        return x + 1

    def backward(self, gy):
        return gy


def long_chain(n):
    """x and the result of applying AddOne n times to it."""
    x = Variable(np.array([0.5]))
    y = x
    for _ in range(n):
        y = AddOne()(y)
    return x, y


# %% [markdown]
# First, step 07's recursive method, written here as a plain function for
# comparison. It gives up as soon as the chain is deeper than the recursion
# limit (the cell prints the limit first; a chain of 5,000 exceeds it both in
# plain Python and in Jupyter):

# %%
def backward_recursive(var):
    """Step 07's Variable.backward, kept for comparison."""
    f = var.creator
    if f is not None:
        x = f.input
        x.grad = f.backward(var.grad)
        backward_recursive(x)


print("recursion limit:", sys.getrecursionlimit())
x, y = long_chain(5_000)
y.grad = np.ones_like(y.data)
try:
    backward_recursive(y)
except RecursionError as e:
    print("recursive backward on 5,000 functions: RecursionError:", e)

# %% [markdown]
# The loop has no such limit. A chain of 100,000 functions:

# %%
n = 100_000
start = time.perf_counter()
x, y = long_chain(n)
forward_seconds = time.perf_counter() - start
y.grad = np.ones_like(y.data)
start = time.perf_counter()
y.backward()
backward_seconds = time.perf_counter() - start
print(f"{n:,} functions: y = {y.data}, x.grad = {x.grad}")
print(f"forward {forward_seconds:.2f} s, backward {backward_seconds:.2f} s")
del x, y  # the graph holds 100,000 arrays: let it go

# %% [markdown]
# ## Exercise
# Walking a graph with a loop is a pattern you will reuse. Write
# `count_functions(y)`, which returns how many functions lie on the chain
# behind `y`, with a loop over `creator` links (no recursion). The self-check
# uses a chain twice as deep as the recursion limit.

# %%
#| exercise
def count_functions(y):
    raise NotImplementedError(
        "Exercise (step 08): count the functions behind y with a while loop over creator links"
    )

# %%
#| solution
def count_functions(y):
    count = 0  # follow y.creator, then creator.input.creator, ...
    f = y.creator
    while f is not None:
        count += 1
        f = f.input.creator
    return count

# %%
#| check
depth = 2 * sys.getrecursionlimit()  # deeper than any recursion could go
x, y = long_chain(depth)
assert count_functions(x) == 0, "x has no creator: the count for x is 0"
assert count_functions(y) == depth, (
    f"expected {depth}, got {count_functions(y)}: count one per creator, then move to "
    "creator.input.creator until it is None"
)
print(f"self-check passed: count_functions walks a {depth}-function chain without recursion")
