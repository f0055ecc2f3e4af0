# %% [markdown]
# # Step 17: Generation-ordered backprop with a priority queue
#
# Step 16 found the rule: always run the pending function of the highest
# generation. It kept the pending functions in a list and sorted the list after
# every insertion. That works, but sorting is wasted effort: we only ever need
# the **largest** element, and a **priority queue** (a binary heap) gives us
# exactly that, with $O(\log n)$ work per push and per pop.
#
# The order itself does not change: it is still a *topological order* of the
# graph (step 16), produced while walking, without the depth-first pass over
# the whole graph that micrograd's `build_topo` makes first.
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
import itertools

import numpy as np


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
# run, so its output gradients are complete. Only `add_func` and the line that
# takes the next function change.

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

    def backward(self):
        """Fill in the grad of every variable this one was computed from (with a loop)."""
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
            gys = [output.grad for output in f.outputs]  # 2. the grads of all its outputs
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


# %% [markdown]
# `Function` and the functions are unchanged from step 16.

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
        self.generation = max(var.generation for var in inputs)  # the deepest input
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
# The queue itself, rebuilt from that run: a function enters it when the
# backward of a function that reads its output runs. Each column below is one
# pop. The grey squares wait in the heap; the orange dot is the one that comes
# out, always the highest generation. Look at pop 3: `Square a=x^2` is already
# waiting, but `Square c=a^2` (generation 1) goes first, so `a`'s gradient is
# complete before `a`'s creator uses it.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure  # ahead of time, as in step 04

popped = [f for f, _ in calls]
fig, ax = plt.subplots(figsize=(7, 3.6))
for k, f in enumerate(popped, start=1):
    done = popped[:k - 1]  # the functions whose backward ran before this pop
    entered = [y.creator] + [v.creator for p in done for v in p.inputs if v.creator is not None]
    waiting = list(dict.fromkeys(g for g in entered if g not in done))  # once each
    for g in waiting:
        twins = [h for h in waiting if h.generation == g.generation]  # side by side
        at = k + 0.3 * (twins.index(g) - (len(twins) - 1) / 2)
        if g is f:
            ax.plot(at, g.generation, "o", color="C1", ms=12, zorder=3,
                    label="popped" if k == 1 else None)
            ax.annotate(names[id(g)], (at, g.generation), textcoords="offset points",
                        xytext=(0, 10), ha="center", fontsize=8)
        else:
            ax.plot(at, g.generation, "s", color="grey", ms=9, mfc="none",
                    label="waiting" if k == 2 else None)
            ax.annotate(names[id(g)], (at, g.generation), textcoords="offset points",
                        xytext=(0, -16), ha="center", fontsize=8, color="grey")
ax.set_xticks(range(1, len(popped) + 1))
ax.set_yticks(sorted({f.generation for f in popped}))
ax.set_xlim(0.4, len(popped) + 0.6)
ax.set_ylim(-0.7, max(f.generation for f in popped) + 0.7)
ax.set_xlabel("pop number")
ax.set_ylabel("generation")
ax.set_title("The priority queue before each pop")
ax.legend(loc="upper right")
figure_path = save_figure(fig, output_dir(17) / "queue_pops.png")
plt.show()

# %% [markdown]
# The same run as an animation: each frame highlights the function taken from
# the priority queue, with every gradient known at that moment written in.

# %%
from dezero_like.animate import record_backward  # works on this step's own classes
from dezero_like.plot import output_dir  # outputs/stepNN under the current directory

x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
movie = record_backward(y)
print(movie)
print("generations in the order run:", [f.generation for f in movie.order])
print("animation saved to", movie.save(output_dir(17) / "heap_order.gif"))
movie

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
# Take the graph $y = (x^2)^2 + \exp(x^2)$ at $x = 0.5$, built by `build` below
# with the traced classes (`TracedSquare` for both squares; the `Exp` is
# untraced). Predict the order in which backward runs its three traced
# functions and write it in `expected_order`, each function as its class name
# followed by its generation (like `"TracedMul7"`). The self-check runs
# backward, compares the order with your prediction and checks the gradient
# $4x^3 + 2x e^{x^2}$.

# %%
#| exercise
def build(x):
    a = TracedSquare()(x)
    return TracedAdd()(TracedSquare()(a), exp(a))


expected_order = ...  # your prediction: a list of three strings

# %%
#| solution
def build(x):
    a = TracedSquare()(x)
    return TracedAdd()(TracedSquare()(a), exp(a))


# the highest generation first: the Add (2), the outer Square (1), the Square of x (0)
expected_order = ["TracedAdd2", "TracedSquare1", "TracedSquare0"]

# %%
#| check
assert isinstance(expected_order, list), "write your prediction as a list of three strings"
calls.clear()
x = Variable(np.array(0.5))
y = build(x)
y.backward()
order = [type(f).__name__ + str(f.generation) for f, _ in calls]
assert order == expected_order, (
    f"you predicted {expected_order}, backward ran {order}: the function with the "
    "highest generation is taken from the queue first"
)
assert np.isclose(x.grad, 4 * 0.5**3 + 2 * 0.5 * np.exp(0.25)), f"got {x.grad}"
print("self-check passed: backward ran the traced functions in the order you predicted")
