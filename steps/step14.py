# %% [markdown]
# # Step 14: Using a variable twice
#
# What is the gradient of $y = x + x$? It is $y = 2x$, so $dy/dx = 2$. Our
# framework from step 13 answers 1. The graph is one `Add` whose two inputs are
# the same `Variable`; its backward returns the gradient 1 for each input, and
# the loop assigns them one after the other with `x.grad = gx`: the second
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
# Here is the step-13 loop, written as a function, run on `add(x, x)`:

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
# Two changes, marked `new`: the loop adds a gradient to the one already there,
# and `cleargrad()` resets a variable so it can be used in a new computation.
# Note that we add with `x.grad = x.grad + gx`, which creates a new array; step
# 15 shows why `x.grad += gx` would be a trap.

# %%
class Variable:
    """A box around a NumPy array that remembers the function that created it."""

    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.grad = None
        self.creator = None

    def set_creator(self, func):
        self.creator = func

    def cleargrad(self):  # new
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            gys = [output.grad for output in f.outputs]
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                if x.grad is None:
                    x.grad = gx
                else:
                    x.grad = x.grad + gx  # new: a second path adds to the first
                if x.creator is not None:
                    funcs.append(x.creator)


def as_array(x):
    """NumPy turns 0-d results into scalars (np.float64); turn them back into arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class: ``forward`` works on arrays, ``__call__`` wraps them in Variables."""

    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError()

    def backward(self, *gys):
        raise NotImplementedError()


class Square(Function):
    """y = x**2; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    """y = exp(x); dy/dx = exp(x)."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    """y = x0 + x1; dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


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
# ## Exercise
# Compute the gradient of $y = x^2 + x^2$ at $x = 3$ (use `square` and `add`,
# with the same `x` in both squares). By hand, $y = 2x^2$ has slope $4x = 12$.

# %%
x = Variable(np.array(3.0))
y = add(square(x), square(x))  # solution: replace with your own line
y.backward()
assert x.grad == 12.0, f"expected 12, got {x.grad}"
print("self-check passed")
