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
# The changes: `Config`, `using_config` and `no_grad` before `Variable`, the
# `retain_grad` argument of `backward`, and (below) `Function.__call__`
# recording the graph only when `Config.enable_backprop` is on.

# %%
import contextlib
import heapq
import itertools
import tracemalloc
import weakref

import numpy as np


class Config:
    """Global switches. enable_backprop: record the graph on every function call."""

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
    """with no_grad(): compute values only, without a graph (inference, updates)."""
    return using_config("enable_backprop", False)


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
        self.generation = 0  # depth in the graph: inputs are generation 0

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1  # one more than its creator

    def cleargrad(self):
        """Forget the gradient, so that the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = as_array(self.grad + gx)  # a NEW array: never write into a shared one

    def backward(self, retain_grad=False):
        """Fill in the grad of every variable this one was computed from (with a loop).

        Only the inputs (leaves) keep their grads, unless ``retain_grad=True``.
        """
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = []  # still to visit: a heap of (-generation, arrival number, function)
        seen = set()  # the functions queued so far
        arrivals = itertools.count()  # 0, 1, 2, ...: breaks ties in arrival order

        def add_func(f):
            if f not in seen:  # queue each function once
                heapq.heappush(funcs, (-f.generation, next(arrivals), f))
                seen.add(f)

        if self.creator is not None:
            add_func(self.creator)
        while funcs:
            f = heapq.heappop(funcs)[2]  # 1. the next function: highest generation, first come
            gys = [output().grad for output in f.outputs]  # 2. output() follows the weakref
            gxs = f.backward(*gys)  # 3. one step of the chain rule: one grad per input
            if not isinstance(gxs, tuple):
                gxs = (gxs,)  # a single gradient may be returned without a tuple
            if len(gxs) != len(f.inputs):  # zip would drop the unpaired ones silently
                raise RuntimeError(f"{type(f).__name__}.backward returned {len(gxs)} "
                                   f"gradients for {len(f.inputs)} inputs: return one "
                                   "per input, in the order forward takes them")
            for x, gx in zip(f.inputs, gxs):  # each input gets its own gradient
                x.accumulate_grad(as_array(gx))  # one method decides how gradients add up
                if x.creator is not None:
                    add_func(x.creator)  # 4. and continue from x
            if not retain_grad:
                for output in f.outputs:
                    output().grad = None  # f has used its outputs' grads: free them


# %% [markdown]
# `Function.__call__` always computes the outputs, but records the graph
# (generation, creator links, inputs and outputs) only when
# `Config.enable_backprop` is on.

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
        if Config.enable_backprop:  # record the graph only when asked to
            self.generation = max(var.generation for var in inputs)  # the deepest input
            for output in outputs:
                output.set_creator(self)  # each output remembers where it came from
            self.inputs = inputs  # remembered for backward
            self.outputs = [weakref.ref(output) for output in outputs]  # not owned: no cycle
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
# The second diamond drawn: with `retain_grad=True` every node still holds its
# gradient after backward (without it, only `x` would).

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(y, values=True,
                               to_file=output_dir(19) / "diamond_retain_grad.svg"))
image

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
# Memory: a chain of 30 `square`s over 100,000 float64 numbers (0.76 MiB
# each). With the graph, every intermediate array is kept until the result
# goes: about 31 arrays. Without it, at most three exist at any time: the
# input `x`, the current `y`, and the new result being computed from it (the
# old `y` is freed only when the name `y` moves on to the new one).
# `tracemalloc` reports the peak, and the last line divides it by the size of
# one array.


# %%
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
one_array = np.ones(100_000).nbytes / 2**20
print(f"in arrays of {one_array:.2f} MiB: with graph {with_graph / one_array:.1f}, "
      f"under no_grad {without_graph / one_array:.1f}")

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
# Write `predict(x)` that returns $\exp(x^2)$ as a `Variable` without building a
# graph: `predict` itself switches recording off, with the tool this step wrote
# for that, and leaves it on when it returns. The self-check expects
# $e^{0.25}$ at $x = 0.5$, with no creator.

# %%
#| exercise
def predict(x):
    raise NotImplementedError("Exercise (step 19): exp(x^2) from this step's functions, "
                              "computed with backprop switched off")

# %%
#| solution
def predict(x):
    with no_grad():
        return exp(square(x))

# %%
#| check
out = predict(Variable(np.array(0.5)))
assert np.isclose(out.data, np.exp(0.25)), f"expected exp(0.25) = {np.exp(0.25)}, got {out.data}"
assert out.creator is None, (
    "predict built a graph (out.creator is set): was recording off during the computation?"
)
assert Config.enable_backprop, (
    "recording is still off after predict: the old setting must come back however it returns"
)
print("self-check passed: predict computes exp(x^2) without a graph")
