# %% [markdown]
# # Step 20: Making `Variable` pleasant to use
#
# The machinery is in place: gradients flow through any graph, in the right
# order, without leaking memory. Now we make `Variable` feel like the array it
# wraps. A learner (and a debugger) should be able to ask a variable for its
# shape, print it, and give it a name, without reaching into `.data` every
# time.
#
# The additions, marked `new`:
#
# * `name`: an optional label. We will use it in step 25 to label nodes when
#   we draw graphs.
# * `shape`, `ndim`, `size`, `dtype`: **properties** that pass the question on
#   to the array. A property is a method that is read like an attribute
#   (`x.shape`, not `x.shape()`), so code written for ndarrays reads the same.
# * `len(x)`: the length of the first axis, as for an ndarray.
# * `repr(x)`: what the interpreter shows, `variable([...])`, with the rows of
#   a matrix lined up.
#
# Nothing else changes, so the snapshot below differs from step 19 only in
# `Variable`.

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

    def __init__(self, data, name=None):  # new: name
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.name = name  # new: a label for printing and, later, for graph pictures
        self.grad = None
        self.creator = None
        self.generation = 0  # leaves are generation 0

    # new: what a NumPy user expects of an array
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


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


# %% [markdown]
# ## Asking a variable about itself

# %%
x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name="x")
print("name:", x.name)
print("shape:", x.shape, " ndim:", x.ndim, " size:", x.size, " dtype:", x.dtype)
print("len:", len(x))
print(x)
print(repr(Variable(np.array(3.5))))
print(repr(Variable(None)))

# %% [markdown]
# `print` uses `__repr__` too, because we did not define a separate `__str__`.
# The same information is available on results and on gradients:

# %%
y = square(x)
y.backward()
print("y.shape:", y.shape, " x.grad:")
print(x.grad)

# %% [markdown]
# ## Exercise
# Write `describe(v)` that returns a one-line summary like
# `"x: shape (2, 3), float64"` using the new attributes, and `"?"` for an
# unnamed variable.


# %%
def describe(v):
    return f"{v.name or '?'}: shape {v.shape}, {v.dtype}"  # solution


assert describe(x) == "x: shape (2, 3), float64", describe(x)
assert describe(Variable(np.zeros(4, dtype=np.float32))) == "?: shape (4,), float32"
print("self-check passed")
