# %% [markdown]
# # Step 17: Generation-ordered backprop with a priority queue
#
# Step 16 found the rule: always run the pending function of the highest
# generation. It kept the pending functions in a list and sorted the list after
# every insertion. That works, but sorting is wasted effort: we only ever need
# the **largest** element, and a **priority queue** (a binary heap) gives us
# exactly that, with $O(\log n)$ work per push and per pop.
#
# Python's `heapq` module keeps a plain list in heap order. It is a *min*-heap
# (the smallest item comes out first), so we push `-generation` to get the
# highest generation out first.
#
# ## Ties need a rule
#
# Several functions often share a generation (the two `Square`s of the
# diamond). A heap compares whole items, so with items `(-generation, f)` a tie
# in the first field makes Python compare the functions themselves, which it
# cannot do:

# %%
import heapq


class Node:  # stands for a Function: objects without an order
    pass


heap = []
heapq.heappush(heap, (-1, Node()))
try:
    heapq.heappush(heap, (-1, Node()))
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# The fix is a second field that is never equal: an **arrival number** from a
# counter. Among functions of the same generation, the one queued first runs
# first. That rule is *stable*: the order of a backward pass depends only on the
# graph, never on memory addresses or on how the heap happened to arrange its
# items, so two runs of the same program do the same work in the same order.
#
# Each function is still queued once (the `seen` set), and by the argument of
# step 16 it is popped only after every function that consumes its outputs has
# run, so its output gradients are complete. The changes to the framework are
# marked `new`.

# %%
import heapq
import itertools

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

        funcs = []  # new: a heap of (-generation, arrival number, function)
        seen = set()
        arrivals = itertools.count()  # new: 0, 1, 2, ... breaks ties in arrival order

        def add_func(f):
            if f not in seen:  # queue each function once
                heapq.heappush(funcs, (-f.generation, next(arrivals), f))  # new
                seen.add(f)

        add_func(self.creator)
        while funcs:
            f = heapq.heappop(funcs)[2]  # new: the highest generation, first come first
            gys = [output.grad for output in f.outputs]
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
# ## Watching the order
#
# To see the order, we subclass `Square` and `Add` so that their `backward`
# records which function ran and the gradients of its outputs at that moment.

# %%
calls = []


class TracedSquare(Square):
    def backward(self, gy):
        calls.append((self, [float(o.grad) for o in self.outputs]))
        return super().backward(gy)


class TracedAdd(Add):
    def backward(self, gy):
        calls.append((self, [float(o.grad) for o in self.outputs]))
        return super().backward(gy)


x = Variable(np.array(2.0))
a = TracedSquare()(x)
b, c = TracedSquare()(a), TracedSquare()(a)
y = TracedAdd()(b, c)
y.backward()
names = {id(a.creator): "Square a=x^2", id(b.creator): "Square b=a^2",
         id(c.creator): "Square c=a^2", id(y.creator): "Add y=b+c"}
for f, output_grads in calls:
    print(f"{names[id(f)]:13s} generation {f.generation}, output grads {output_grads}")
print("x.grad =", x.grad, " (8 x^3 =", 8 * x.data**3, ")")

# %% [markdown]
# Every function ran once. `Square a=x^2` ran last, when `a.grad` had received
# both contributions ($2a + 2a = 16$); `b`'s `Square` ran before `c`'s because it
# was queued first.
#
# ## A deep graph of diamonds
#
# Stack diamonds on top of each other: $y_{k+1} = y_k + y_k$, 100 times, so
# $y = 2^{100} x$. Every intermediate result is used twice. The step-15 loop
# would run the function below the top twice, the one below that four times,
# and so on: $2^{100}$ calls. In generation order each `Add` runs once.

# %%
calls.clear()
x = Variable(np.array(1.0))
y = x
for _ in range(100):
    y = TracedAdd()(y, y)
y.backward()
print("100 stacked diamonds: backward calls =", len(calls), ", x.grad == 2**100:",
      x.grad == 2.0**100)

# %% [markdown]
# ## Exercise
# Build the graph $y = (x^2)^2 + \exp(x^2)$ and predict the order in which the
# three functions of generation $\geq 1$ run. Check it with the traced classes
# (`TracedSquare` for both squares; the `Exp` is untraced) and check the
# gradient $4x^3 + 2x e^{x^2}$ at $x = 0.5$.

# %%
calls.clear()
x = Variable(np.array(0.5))
a = TracedSquare()(x)
y = TracedAdd()(TracedSquare()(a), exp(a))
y.backward()
order = [type(f).__name__ + str(f.generation) for f, _ in calls]
expected_order = ["TracedAdd2", "TracedSquare1", "TracedSquare0"]  # solution
assert order == expected_order, f"the functions ran in the order {order}"
assert np.isclose(x.grad, 4 * 0.5**3 + 2 * 0.5 * np.exp(0.25)), f"got {x.grad}"
print("self-check passed")
