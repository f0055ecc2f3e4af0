# %% [markdown]
# # Step 18: Memory: reference cycles and `weakref`
#
# Python (CPython, the usual interpreter) frees an object as soon as nothing
# refers to it any more: every object carries a **reference count**, and when
# it drops to zero the memory is returned at once. This is fast and
# predictable, and a framework that holds large arrays depends on it.
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
import heapq
import itertools
import tracemalloc
import weakref

import numpy as np


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
# A function now refers to its outputs weakly (in `Function.__call__`, below),
# so the only strong links point from the result back towards the inputs:
# output → creator → inputs → their creators → ... Dropping the final result
# frees the whole graph through reference counting alone. The backward loop
# calls `output()` to follow the weak reference. (The outputs are alive during
# backward: the user holds the result, and every intermediate variable is held
# by the function that consumed it.)
#
# The links of a two-function graph, `y = square(square(x))`, as a picture. Solid arrows are
# strong references, which keep their target alive; dashed ones are weak. Follow the solid
# arrows from your name `y`: they reach every node, and only from that end. The classes below
# make exactly these links.

# %%
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D

from dezero_like.plot import output_dir, save_figure  # the course's drawing helpers

out_dir = output_dir(18)  # every file this step writes goes here

styles = {"variable": {"boxstyle": "round,pad=0.4", "fc": "#ffd08a"},
          "function": {"boxstyle": "square,pad=0.4", "fc": "#a8d8f0"},
          "you": {"boxstyle": "round,pad=0.4", "fc": "white", "ls": ":"}}
fig, ax = plt.subplots(figsize=(7, 2.4))
node = {}
for pos, (name, kind) in enumerate([("x", "variable"), ("Square 1", "function"),
                                    ("a", "variable"), ("Square 2", "function"),
                                    ("y", "variable"), ("you: the\nname y", "you")]):
    node[name.split(":")[0]] = ax.text(2 * pos, 0, name, ha="center", va="center", fontsize=9,
                                       bbox=styles[kind])


def link(start, end, label, weak=False):
    """Strong links point left and arc over the nodes; weak ones point right, under them."""
    edge = -0.25 if weak else 0.25  # leave from the bottom or the top of the boxes
    x0, x1 = node[start].get_position()[0], node[end].get_position()[0]
    ax.annotate("", xy=(x1, edge), xytext=(x0, edge),
                arrowprops={"arrowstyle": "-|>", "lw": 1.4, "ls": "--" if weak else "-",
                            "color": "0.45" if weak else "k",
                            "connectionstyle": "arc3,rad=0.5"})
    ax.text((x0 + x1) / 2, -0.75 if weak else 0.75, label, ha="center", va="center", fontsize=8,
            color="0.45" if weak else "k")


for start, end, label in [("you", "y", "holds"), ("y", "Square 2", "creator"),
                          ("Square 2", "a", "inputs"), ("a", "Square 1", "creator"),
                          ("Square 1", "x", "inputs")]:
    link(start, end, label)
link("Square 1", "a", "outputs", weak=True)
link("Square 2", "y", "outputs", weak=True)
ax.legend(handles=[Line2D([], [], color="k", lw=1.4, label="strong: keeps its target alive"),
                   Line2D([], [], color="0.45", lw=1.4, ls="--",
                          label="weak (weakref.ref): does not")],
          loc="lower center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8, frameon=False)
ax.set(xlim=(-0.7, 10.9), ylim=(-1.1, 1.1), title="The links of y = square(square(x))")
ax.axis("off")
save_figure(fig, out_dir / "references.png")
plt.show()


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


# %% [markdown]
# `Function.__call__` keeps weak references to its outputs, `f.outputs`.

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
# Backward works as before, and the gradient checker agrees:

# %%
x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
y.backward()
print("diamond: x.grad =", x.grad)
rng = np.random.default_rng(0)
print("gradient check:", gradient_check(lambda v: add(square(square(v)), exp(v)),
                                        rng.standard_normal((2, 3))))

# %% [markdown]
# ## Exercise
# Which object keeps the graph of `y` alive? Hold only a weak reference to `y`
# and a strong one to `a.creator`, the first `Square`: after `del y`, is the
# second `Square` (which made `y`) still alive? Follow the solid arrows of the
# picture above. Set `second_alive` to your answer; the self-check runs the experiment.

# %%
#| exercise
second_alive = ...  # True or False

# %%
#| solution
second_alive = False  # nothing points forward from `first` to `second`

# %%
#| check
assert second_alive in (True, False), "set second_alive to True or False"
gc.disable()
try:
    x = Variable(np.array(3.0))
    a = square(x)
    y = square(a)
    first, second = a.creator, weakref.ref(y.creator)
    del a, y
    assert (second() is not None) == second_alive, (
        "not what happened: look at which links are strong (a function holds its inputs, "
        "a variable its creator) and which are weak (a function's outputs)"
    )
    assert first.inputs[0] is x, "a function still holds its inputs strongly"
finally:
    gc.enable()
print("self-check passed: a graph is kept alive from its output end only")
