# %% [markdown]
# # Step 18: Memory: reference cycles and `weakref`
#
# Python frees an object as soon as nothing refers to it any more: every object
# carries a **reference count**, and when it drops to zero the memory is
# returned at once. This is fast and predictable, and a framework that holds
# large arrays depends on it.
#
# Reference counting has one blind spot: **cycles**. Our graph is full of them.
# A variable refers to its creator (`y.creator = f`) and the function refers
# back to its outputs (`f.outputs = [y]`). When we drop `y`, its count does not
# reach zero (its creator still holds it), and neither does the creator's. The
# pair, and everything they hold (input variables, their arrays, the whole
# graph behind them), stays in memory until Python's **cycle collector** (the
# `gc` module) happens to run. That collector runs only now and then, and it has
# to scan objects to find cycles, so training loops that build a new graph every
# iteration pile up memory between collections.
#
# The fix is to make one direction of the link **weak**. A *weak reference*
# (`weakref.ref(obj)`) lets us reach an object without keeping it alive; calling
# the reference returns the object, or `None` once it is gone.

# %%
import gc
import tracemalloc
import weakref


class Box:
    pass


box = Box()
ref = weakref.ref(box)
print("alive:", ref() is box)
del box
print("after del:", ref())

# %% [markdown]
# ## The framework with weak outputs
#
# A function now refers to its outputs weakly, so the only strong links point
# from the result back towards the inputs: output → creator → inputs → their
# creators → ... Dropping the final result frees the whole graph through
# reference counting alone. The two changes are marked `new`; `backward` calls
# `output()` to follow the weak reference. (The outputs are alive during
# backward: the user holds the result, and every intermediate variable is held
# by the function that consumed it.)

# %%
import heapq
import itertools
import weakref  # new

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

    def backward(self):
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
            gys = [output().grad for output in f.outputs]  # new: output() follows the weakref
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.accumulate_grad(gx)
                if x.creator is not None:
                    add_func(x.creator)

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
        self.generation = max([x.generation for x in inputs])
        outputs = [Variable(as_array(y)) for y in ys]
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = [weakref.ref(output) for output in outputs]  # new: not owned
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
# ## Seeing the leak, and its absence
#
# To show what reference counting alone does, we switch the cycle collector off
# with `gc.disable()` (and back on afterwards). For the "before" picture,
# `square_with_strong_outputs` puts back what step 17 stored: the function holds
# its output strongly.


# %%
def square_with_strong_outputs(x):
    """square(x) the way steps 13-17 stored it: f.outputs holds y itself (a cycle)."""
    f = Square()
    y = f(x)
    f.outputs = [y]  # a strong reference back to y: y -> f -> y
    return y


def freed_after_del(make):
    """Build a two-function graph, drop the result, report which nodes are gone."""
    x = Variable(np.ones(3))
    a = make(x)
    y = make(a)
    refs = {"y": weakref.ref(y), "y.creator": weakref.ref(y.creator),
            "a": weakref.ref(a), "a.creator": weakref.ref(a.creator)}
    del a, y
    return {name: r() is None for name, r in refs.items()}


gc.disable()
try:
    print("weak outputs,   gc off:", freed_after_del(square))
    print("strong outputs, gc off:", freed_after_del(square_with_strong_outputs))
finally:
    gc.enable()

# %% [markdown]
# With weak outputs every node is freed the moment `y` goes. With strong
# outputs nothing is: each `Square` and its output keep each other alive.
#
# The cost in memory: run a training-like loop that builds a graph over an
# array of 100,000 floats (0.8 MB) ten times, with the collector off, and
# measure what Python still holds at the end with `tracemalloc`.


# %%
def memory_after_loop(make, iterations=10):
    tracemalloc.start()
    for _ in range(iterations):
        x = Variable(np.ones(100_000))
        y = make(make(x))
        del x, y
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / 2**20


gc.disable()
try:
    weak_mb = memory_after_loop(square)
    strong_mb = memory_after_loop(square_with_strong_outputs)
    gc.collect()  # the cycle collector does find the garbage, eventually
finally:
    gc.enable()
print(f"still held after 10 graphs: weak outputs {weak_mb:.1f} MiB, "
      f"strong outputs {strong_mb:.1f} MiB")

# %% [markdown]
# Backward works as before:

# %%
x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
y.backward()
print("diamond: x.grad =", x.grad)

# %% [markdown]
# ## Exercise
# Which object keeps the graph of `y` alive? Hold only a weak reference to `y`
# and a strong one to `a.creator`, the first `Square`: after `del y`, is the
# second `Square` (which made `y`) still alive? Set `second_alive` to your
# answer.

# %%
gc.disable()
try:
    x = Variable(np.array(3.0))
    a = square(x)
    y = square(a)
    first, second = a.creator, weakref.ref(y.creator)
    del a, y
    second_alive = False  # solution: nothing points forward from `first` to `second`
    assert (second() is not None) == second_alive, "look at which links are strong"
    assert first.inputs[0] is x, "a function still holds its inputs strongly"
finally:
    gc.enable()
print("self-check passed")
