# %% [markdown]
# # Step 14: Using a variable twice
#
# What is the gradient of $y = x + x$? It is $y = 2x$, so $dy/dx = 2$. Our
# framework from step 13 answers 1. The graph is one `Add` whose two inputs are
# the same `Variable`; its backward returns the gradient 1 for each input, and
# the loop assigns them one after the other with `x.grad = ...`: the second
# assignment overwrites the first.
#
# The chain rule says what to do when a variable reaches the output along
# several paths: the contributions **add up**,
#
# $$\frac{\partial L}{\partial x} = \sum_{\text{paths } p} \frac{\partial L}{\partial x}\Big|_p .$$
#
# So the loop must accumulate: the first gradient that arrives is stored, the
# next ones are added to it.

# %% [markdown]
# ## First, the bug
#
# Here is the step-13 loop, written as a function, to run on `add(x, x)`:

# %%
import numpy as np


def backward_step13(y):
    """The backward loop of step 13: it assigns x.grad = gx."""
    y.grad = np.ones_like(y.data)
    funcs = [y.creator]
    while funcs:
        f = funcs.pop()
        gxs = f.backward(*[output.grad for output in f.outputs])
        if not isinstance(gxs, tuple):
            gxs = (gxs,)
        for x, gx in zip(f.inputs, gxs):
            x.grad = gx  # the second path overwrites the first
            if x.creator is not None:
                funcs.append(x.creator)


# %% [markdown]
# ## The framework with accumulating gradients
#
# Two changes to `Variable`: the backward loop adds a gradient to the one
# already there, and `cleargrad()` resets a variable so it can be used in a new
# computation. Note that we add with `x.grad + gx`, which creates a new array;
# step 15 shows why `x.grad += gx` would be a trap.

# %%
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

    def cleargrad(self):
        """Forget the gradient, so that the next backward starts from zero."""
        self.grad = None

    def backward(self):
        """Fill in the grad of every variable this one was computed from (with a loop)."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = [self.creator] if self.creator is not None else []  # still to visit
        while funcs:
            f = funcs.pop()  # 1. the next function to process
            gys = [output.grad for output in f.outputs]  # 2. the grads of all its outputs
            gxs = f.backward(*gys)  # 3. one step of the chain rule: one grad per input
            if not isinstance(gxs, tuple):
                gxs = (gxs,)  # a single gradient may be returned without a tuple
            if len(gxs) != len(f.inputs):  # zip would drop the unpaired ones silently
                raise RuntimeError(f"{type(f).__name__}.backward returned {len(gxs)} "
                                   f"gradients for {len(f.inputs)} inputs: return one "
                                   "per input, in the order forward takes them")
            for x, gx in zip(f.inputs, gxs):  # each input gets its own gradient
                if x.grad is None:
                    x.grad = as_array(gx)
                else:
                    x.grad = as_array(x.grad + gx)  # a second path adds to the first
                if x.creator is not None:
                    funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `Function` and the functions are unchanged from step 13.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class of every function: Variables in, new Variables out.

    Subclasses implement ``forward(x0, x1, ...)``, which receives arrays and
    returns an array or a tuple of arrays, and ``backward(gy0, ...)``, which turns
    dy/d(each output) into dy/d(each input). One output is returned as a bare Variable,
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

    def backward(self, *gys):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy0, ...)")


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
    """y = x0 + x1, element by element; dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy  # one gradient per input, both passed on unchanged


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
# And the gradient checker of step 10 comes along unchanged.

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
# ## $x + x$, before and after

# %%
x = Variable(np.array(3.0))
y = add(x, x)
backward_step13(y)
print("step-13 loop:   x.grad =", x.grad, "(wrong: y = 2x has slope 2)")

x = Variable(np.array(3.0))
y = add(x, x)
y.backward()
print("accumulating:   x.grad =", x.grad)

# %% [markdown]
# The same holds however the paths are shaped: $y = x + x + x$ has slope 3.

# %%
x = Variable(np.array(3.0))
y = add(add(x, x), x)
y.backward()
print("x + x + x:      x.grad =", x.grad)

# %% [markdown]
# In the picture, `x` is one node with three arrows leaving it: one per use.
# Backward brings a gradient back along each arrow, and `x.grad` is their sum.

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(y, values=True, to_file=output_dir(14) / "x_plus_x_plus_x.svg"))
image

# %% [markdown]
# ## Reusing a variable: `cleargrad`
#
# Accumulation has a consequence. A leaf keeps its gradient after backward, so
# if we use the same `x` in a **new** computation, the new gradient is added to
# the old one. Sometimes this is what we want (step 37 sums two losses this
# way), but for two independent computations the old gradient is garbage.
# `cleargrad()` throws it away.

# %%
x = Variable(np.array(3.0))
y = add(x, x)
y.backward()
print("first graph  y = x + x:       x.grad =", x.grad)

y = add(add(x, x), x)
y.backward()
print("second graph, no cleargrad:   x.grad =", x.grad, "(2 + 3: mixed up)")

x.cleargrad()
y = add(add(x, x), x)
y.backward()
print("second graph after cleargrad: x.grad =", x.grad)

# %% [markdown]
# The gradient checker agrees on a function that uses its input three times,
# $y = x^2 + x^2 + x$ (slope $4x + 1$):

# %%
rng = np.random.default_rng(0)
print("gradient check:", gradient_check(lambda v: add(add(square(v), square(v)), v),
                                        rng.standard_normal((2, 3))))

# %% [markdown]
# ## Exercise
# Compute the gradient of $y = x^2 + x^2$ at $x = 3$: build `y` from this
# step's functions (the same `x` in both squares), then run backprop from it.
# By hand, $y = 2x^2$ has slope $4x = 12$.

# %%
#| exercise
x = Variable(np.array(3.0))
y = ...  # x^2 + x^2, from this step's functions; then backprop

# %%
#| solution
x = Variable(np.array(3.0))
y = add(square(x), square(x))
y.backward()

# %%
#| check
assert y is not ..., "replace the ... in `y = ...` with x^2 + x^2, built from this step's functions"
assert isinstance(y, Variable), f"y should be the Variable add returns, got {type(y).__name__}"
assert y.data == 18.0, f"y = 3^2 + 3^2 should be 18, got {y.data}"
assert x.grad is not None, "x.grad is None: did backprop run from y?"
assert x.grad == 12.0, (
    f"expected 12, got {x.grad}: is the same x in both squares, and backward run once? "
    "(re-run your cell, which makes a fresh x, before the check)"
)
print("self-check passed: both uses of x add up to the gradient 12")
