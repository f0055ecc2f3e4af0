# %% [markdown]
# # Step 13: Backpropagation with several inputs
#
# Since step 11 a `Function` can take several inputs and return several
# outputs, and since step 12 we call it naturally: `add(x0, x1)`. The forward
# direction is done. The backward direction is not: `Variable.backward` still
# walked a chain of one-input, one-output functions.
#
# The chain rule tells us what to do when a function has several inputs. For
# $y = f(x_0, x_1)$ and a final result $L$,
#
# $$\frac{\partial L}{\partial x_0} = \frac{\partial L}{\partial y}
# \frac{\partial y}{\partial x_0},
# \qquad
# \frac{\partial L}{\partial x_1} = \frac{\partial L}{\partial y}
# \frac{\partial y}{\partial x_1}.$$
#
# So a function's `backward` receives one gradient per **output** and returns
# one gradient per **input**. For addition, $\partial y/\partial x_0 =
# \partial y/\partial x_1 = 1$: the gradient is passed unchanged to both inputs.
#
# The backward loop then has to do three things for each function it visits:
# collect the gradients of all outputs, call `backward`, and hand each returned
# gradient to the matching input (and queue that input's creator).

# %% [markdown]
# ## The framework so far, with a backward loop for many inputs
#
# `Variable` and `Function` are the step-12 versions. What changes is marked
# with comments: `Variable.backward` now zips `f.inputs` with the gradients that
# `f.backward` returns, and every function's `backward` takes one gradient per
# output and returns one per input (a tuple when there are several).

# %%
import numpy as np


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

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            gys = [output.grad for output in f.outputs]  # new: one grad per output
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):  # a single gradient may be returned bare
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):  # new: one grad per input
                x.grad = gx
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
        x = self.inputs[0].data  # new: the input lives in self.inputs
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

    def backward(self, gy):  # new: one gradient in, two out
        return gy, gy


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


# %% [markdown]
# ## $z = x^2 + y^2$
#
# By hand: $\partial z/\partial x = 2x$ and $\partial z/\partial y = 2y$, so at
# $x = 2, y = 3$ we expect the gradients 4 and 6. The graph has three functions:
# two `Square`s feeding one `Add`. The loop visits `Add` first, which hands the
# gradient 1 to both of its inputs, then each `Square`.

# %%
x = Variable(np.array(2.0))
y = Variable(np.array(3.0))
z = add(square(x), square(y))
z.backward()
print("z =", z.data)
print("x.grad =", x.grad, " (2x =", 2 * x.data, ")")
print("y.grad =", y.grad, " (2y =", 2 * y.data, ")")

# %% [markdown]
# ## Checking against numerical differentiation
#
# A hand derivation can be wrong too, so we also compare with central
# differences, $\frac{f(x+\epsilon) - f(x-\epsilon)}{2\epsilon}$, one input at a
# time (the other is held fixed). Arrays work the same way as scalars: every
# element has its own gradient.


# %%
def numerical_diff(f, x, eps=1e-4):
    """Central difference of f at the array x, one element at a time."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        plus = f(Variable(x.copy())).data.sum()
        x[i] = old - eps
        minus = f(Variable(x.copy())).data.sum()
        x[i] = old
        grad[i] = (plus - minus) / (2 * eps)
    return grad


a = Variable(np.array([1.0, -0.5, 2.0]))
b = Variable(np.array([0.3, 4.0, -1.0]))
c = add(square(a), exp(b))
c.backward()
num_a = numerical_diff(lambda v: add(square(v), exp(b)), a.data.copy())
num_b = numerical_diff(lambda v: add(square(a), exp(v)), b.data.copy())
print("a.grad:", a.grad, " numerical:", num_a)
print("b.grad:", b.grad, " numerical:", num_b)
print("agree:", np.allclose(a.grad, num_a) and np.allclose(b.grad, num_b))

# %% [markdown]
# This loop assigns `x.grad = gx`. That is fine as long as every variable is
# used once. Step 14 shows what goes wrong when the same variable enters a
# graph twice.
#
# ## Exercise
# Write `three_sum(x0, x1, x2)`, the sum of three variables, using only `add`,
# and check that backward gives every input the gradient 1.

# %%
def three_sum(x0, x1, x2):
    return add(add(x0, x1), x2)  # solution: replace with your own line


p, q, r = Variable(np.array(1.0)), Variable(np.array(2.0)), Variable(np.array(3.0))
s = three_sum(p, q, r)
s.backward()
assert s.data == 6.0, "three_sum(1, 2, 3) should be 6"
assert p.grad == q.grad == r.grad == 1.0, "each input of a sum gets the gradient 1"
print("self-check passed")
