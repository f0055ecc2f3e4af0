# %% [markdown]
# # Step 19: Saving memory: `retain_grad` and `no_grad`
#
# Step 18 made sure a graph disappears when we drop it. This step removes two
# kinds of waste while the graph is still in use.
#
# **Gradients nobody reads.** Backward fills `.grad` on every variable it
# passes, intermediate ones included. Usually we only want the gradients of the
# leaves (the inputs, later the parameters of a model). An intermediate
# gradient is needed only until the function that created that variable has
# used it, so the loop can drop it right after. `backward(retain_grad=True)`
# keeps them, for debugging and for teaching.
#
# **Graphs nobody backpropagates through.** Backprop needs each function to
# keep its inputs (and links to them), so as long as the result lives, every
# intermediate array lives. That is the price of being able to call
# `backward()`, and it is pure waste when we only want values: evaluating a
# trained model, or updating parameters. A global switch,
# `Config.enable_backprop`, tells `Function.__call__` whether to record the
# graph at all.
#
# Switching a global by hand is error-prone (an exception can leave it off), so
# we wrap it in a context manager, `using_config(name, value)`, which restores
# the old value however the block ends, and a short name for the common case:
#
# ```python
# with no_grad():
#     y = model(x)   # values only, no graph
# ```
#
# ## The framework
#
# The changes are marked `new`: `Config`, `using_config`, `no_grad`, the
# `retain_grad` argument, and `__call__` recording the graph only when
# `Config.enable_backprop` is on.

# %%
import contextlib  # new
import heapq
import itertools
import weakref

import numpy as np


class Config:  # new
    """Global switches. enable_backprop: build the graph on every function call."""

    enable_backprop = True


@contextlib.contextmanager
def using_config(name, value):  # new
    """Set Config.<name> to value inside a with-block, and restore it afterwards."""
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():  # new
    """with no_grad(): compute values only, no graph (inference, updates)."""
    return using_config("enable_backprop", False)


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
        self.generation = 0  # leaves are generation 0

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

    def backward(self, retain_grad=False):  # new: retain_grad
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

            if not retain_grad:  # new: f has used its outputs' grads; drop them
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
        if Config.enable_backprop:  # new: record the graph only when asked to
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
# ## Intermediate gradients are freed
#
# On the diamond $a = x^2,\ y = a^2 + a^2$, only the leaf `x` keeps its
# gradient by default. (The output's own `y.grad` is dropped too: it is just the
# seed, 1.)

# %%
x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
y.backward()
print("default:          x.grad =", x.grad, " a.grad =", a.grad, " y.grad =", y.grad)

x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
y.backward(retain_grad=True)
print("retain_grad=True: x.grad =", x.grad, " a.grad =", a.grad, " y.grad =", y.grad)

# %% [markdown]
# ## No graph under `no_grad()`
#
# Under `no_grad()` the result has no creator, and the functions are freed as
# soon as they return: nothing holds them.

# %%
x = Variable(np.array(2.0))
with no_grad():
    y = square(square(x))
print("under no_grad: y =", y.data, " creator:", y.creator, " generation:", y.generation)
y = square(square(x))
print("outside:       y =", y.data, " creator:", type(y.creator).__name__)

# %% [markdown]
# Memory: a chain of 30 `square`s over 100,000 numbers (0.8 MB each). With
# the graph, every intermediate array is kept until the result goes; without
# it, at most two arrays exist at any time. `tracemalloc` reports the peak.


# %%
import tracemalloc


def peak_memory_mib(n=30):
    tracemalloc.start()
    x = Variable(np.ones(100_000))
    y = x
    for _ in range(n):
        y = square(y)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


with_graph = peak_memory_mib()
with no_grad():
    without_graph = peak_memory_mib()
print(f"peak memory: with graph {with_graph:.1f} MiB, under no_grad {without_graph:.1f} MiB")

# %% [markdown]
# `using_config` restores the old value even when the block raises:

# %%
try:
    with no_grad():
        raise ValueError("something went wrong inside the block")
except ValueError:
    pass
print("enable_backprop after the error:", Config.enable_backprop)

# %% [markdown]
# ## Exercise
# Write `predict(x)` that returns $\exp(x^2)$ without building a graph (use
# `no_grad()` inside the function).

# %%
def predict(x):
    with no_grad():  # solution: replace these two lines
        return exp(square(x))


out = predict(Variable(np.array(0.5)))
assert np.isclose(out.data, np.exp(0.25)), f"got {out.data}"
assert out.creator is None, "predict must not build a graph"
assert Config.enable_backprop, "predict must switch backprop back on"
print("self-check passed")
