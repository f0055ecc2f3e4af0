# %% [markdown]
# # Step 21: Operator overloading: `*` and `+`
#
# Writing `add(mul(a, b), c)` is correct but hard to read. We would like to
# write `a * b + c` and get the same graph. Python lets a class decide what an
# operator means: `a * b` calls `a.__mul__(b)`, and `a + b` calls
# `a.__add__(b)`. These are **special methods**; defining them is called
# operator overloading.
#
# First we need multiplication as a `Function`. For $y = x_0 x_1$ the partial
# derivatives are $\partial y/\partial x_0 = x_1$ and
# $\partial y/\partial x_1 = x_0$: each input's gradient is the upstream
# gradient times the *other* input. So unlike `Add`, `Mul.backward` reads its
# inputs.
#
# Then we attach the functions to `Variable`: `Variable.__mul__ = mul`. A
# function assigned to a class attribute becomes a method, so `a * b` calls
# `mul(a, b)` with `a` as the first argument. The changes are marked `new`.

# %%
import contextlib
import heapq
import itertools
import weakref

import numpy as np


class Config:
    """Global switches. enable_backprop: build the graph on every function call."""

    enable_backprop = True


@contextlib.contextmanager
def using_config(name, value):
    """Set Config.<name> to value inside a with-block, and restore it afterwards."""
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """with no_grad(): compute values only, no graph (inference, updates)."""
    return using_config("enable_backprop", False)


class Variable:
    """A box around a NumPy array that remembers the function that created it."""

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.name = name  # a label for printing and, later, for graph pictures
        self.grad = None
        self.creator = None
        self.generation = 0  # leaves are generation 0

    # what a NumPy user expects of an array
    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return "variable(None)"
        body = str(self.data).replace("\n", "\n" + " " * 9)  # line up under "variable("
        return f"variable({body})"

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1  # one more than its creator

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = self.grad + gx  # a NEW array: never write into one that may be shared

    def backward(self, retain_grad=False):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = []  # a heap of (-generation, arrival number, function)
        seen = set()
        arrivals = itertools.count()  # 0, 1, 2, ... breaks ties in arrival order

        def add_func(f):
            if f not in seen:  # queue each function once
                heapq.heappush(funcs, (-f.generation, next(arrivals), f))
                seen.add(f)

        add_func(self.creator)
        while funcs:
            f = heapq.heappop(funcs)[2]  # the highest generation, first come first
            gys = [output().grad for output in f.outputs]  # output() follows the weakref
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.accumulate_grad(gx)
                if x.creator is not None:
                    add_func(x.creator)

            if not retain_grad:  # f has used its outputs' grads; drop them
                for output in f.outputs:
                    output().grad = None

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
        if Config.enable_backprop:  # record the graph only when asked to
            self.generation = max([x.generation for x in inputs])
            for output in outputs:
                output.set_creator(self)
            self.inputs = inputs
            self.outputs = [weakref.ref(output) for output in outputs]
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


class Mul(Function):  # new
    """y = x0 * x1; dy/dx0 = x1, dy/dx1 = x0."""

    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy * x1, gy * x0


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):  # new
    return Mul()(x0, x1)


Variable.__add__ = add  # new: a + b calls add(a, b)
Variable.__mul__ = mul  # new: a * b calls mul(a, b)


# %% [markdown]
# ## $y = a b + c$

# %%
a = Variable(np.array(3.0), name="a")
b = Variable(np.array(2.0), name="b")
c = Variable(np.array(1.0), name="c")
y = a * b + c
y.backward()
print("y =", y)
print("a.grad =", a.grad, "(= b)   b.grad =", b.grad, "(= a)   c.grad =", c.grad)
print("the graph:", type(y.creator).__name__, "<-",
      [type(x.creator).__name__ if x.creator else x.name for x in y.creator.inputs])

# %% [markdown]
# Operators combine with everything we built so far. The same variable may
# appear several times, and the gradients accumulate as in step 14:
# $y = x \cdot x + x$ has $dy/dx = 2x + 1$.

# %%
x = Variable(np.array(3.0))
y = x * x + x
y.backward()
print("x*x + x at 3: y =", y.data, " dy/dx =", x.grad)

# %% [markdown]
# For now both operands must be `Variable`s: `x * 2.0` fails, because `mul`
# reads `.data` from its second argument. Step 22 accepts numbers and arrays.

# %%
try:
    x * 2.0
except AttributeError as e:
    print("AttributeError:", e)

# %% [markdown]
# ## Exercise
# Check the product rule: write $f(x) = x \cdot \exp(x)$ with the `*` operator
# and verify $f'(x) = (1 + x)e^x$ at $x = 0.5$.

# %%
x = Variable(np.array(0.5))
y = x * exp(x)  # solution: replace with your own line
y.backward()
assert np.isclose(x.grad, 1.5 * np.exp(0.5)), f"got {x.grad}"
print("self-check passed")
