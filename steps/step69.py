# %% [markdown]
# # Step 69: Graph nodes without data, keeping only what backward needs
#
# In DeZero's design (and ours until now) a function keeps its input
# Variables, and a Variable *is* its data. So until a backward frees the graph
# (step 37), every intermediate array of the forward pass is alive too, whether
# backward will read it or not. For a chain of $n$ functions on a large array that is
# $n$ arrays.
#
# Industrial frameworks split the two roles:
#
# * the **graph** is made of small nodes that remember only structure (which
#   function made them, which output slot, the generation). Chainer calls them
#   `VariableNode`s. PyTorch goes further and keeps no variable nodes at all:
#   its graph is made of the function nodes (the `grad_fn` objects), linked by
#   edges that name a node and one of its input slots.
# * each function **saves only the arrays its backward reads**: Chainer's
#   `retain_inputs`/`retain_outputs`, PyTorch's `ctx.save_for_backward` and the
#   `_saved_...` attributes of a `grad_fn` (PyTorch's "Autograd mechanics" note
#   and Chainer's `chainer.FunctionNode` reference describe both).
#
# `dezero_like` does the same (the package code below). A function calls
# `self.retain_inputs(indexes)` in forward to say which inputs its backward
# needs; the other intermediate inputs are replaced by data-less stand-ins with
# the same creator, index and generation. Gradients of intermediate results
# are gathered in slots of the function that created them, so backprop never
# needs the Variable objects the user threw away.
#
# The derivatives tell what must be kept:
#
# | function | derivative | keeps |
# | --- | --- | --- |
# | $y = x + d$ | $1$ | nothing (only shapes) |
# | $y = x \cdot c$, $c$ constant | $c$ | $c$ only |
# | $y = e^x$ | $e^x = y$ | the output $y$ |
# | $y = \sin x$ | $\cos x$ | the input $x$ |

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `Variable.__init__`, `set_creator` and `_as_node` (a Variable knows
# its output slot, `index`), `Function.__call__`, `get_retained_outputs`, `release` and
# `backward_accumulate` (only what backward reads is kept), the backward loop `_backprop`
# (gradients wait in slots of their function, which is released as soon as its backward ran), and
# `Add`, `Mul`, `Neg`, `Sub`, `Div` (each keeps only what its derivative reads).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# Five changes to the core, in the order the code below makes them.
#
# 1. **A Variable knows its output slot.** `index` says which output of its
#    creator it is, and the stand-in of step 37 copies it. The pair
#    (creator, index) now names a place in the graph, whatever object stands there.
# 2. **`Function.__call__` keeps only what backward reads.** An input named by
#    `retain_inputs` is kept; the other inputs that were computed (they have
#    a creator) are replaced by stand-ins at once, in forward. A retained
#    output is kept as an array, so `get_retained_outputs` can rebuild the
#    output's Variable when the user has dropped it.
# 3. **Gradients wait in slots of their function.** The loop used to put the
#    gradient of an intermediate result on the Variable (`x.grad`), and read it
#    back through the creator's weak reference. With stand-ins that no longer
#    works: the Variable may be gone. So the gradient for output `i` of `c`
#    goes into `c._grads[i]`. A function is queued when its first slot fills;
#    no `seen` set is needed, because "has slots" means "queued". Freed of the
#    Variables, the loop can release each function as soon as its backward has
#    run, which returns its saved arrays during backward, not after it.
# 4. **`backward_accumulate`** recognises a repeated input by its place in the graph
#    (two stand-ins of one variable are two objects).
# 5. **The arithmetic keeps what its derivative reads** (the table above), and
#    skips gradients nobody needs (`needs_input_grad`, step 63).

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import Variable, _data_clock, _is_array


def __init__(self, data, name=None, requires_grad=True):
    if data is not None and not _is_array(data):
        raise TypeError(
            f"Variable data must be a numpy.ndarray (or a cupy.ndarray), "
            f"got {type(data).__name__}; " + (
                "it is a Variable already: use it as it is (as_variable(x) takes both), or "
                f"{type(self).__name__}(v.data) for a new one holding its values"
                if isinstance(data, Variable) else "use Variable(np.array(...))")
        )
    if data is not None and data.dtype.kind not in "biufc":
        raise TypeError(f"Variable data must have a numeric dtype, got {data.dtype}")
    self.loss_scale = None  # set on a leaf by backward(loss_scale=...); first: the setter reads it
    self.data = data
    self.name = name
    self.grad = None
    self.creator = None
    self.index = 0  # which output of its creator this variable is
    self.generation = 0
    self.requires_grad = requires_grad


def set_creator(self, func, index=0):
    self.creator = func
    self.index = index
    self.generation = func.generation + 1
    func._stamp = _data_clock.now  # func runs now: a later assignment to .data is newer


def _as_node(self):
    """A stand-in without data: the same place in the graph, no array kept."""
    node = Variable(None, self.name, self.requires_grad)
    node.creator = self.creator
    node.index = self.index
    node.generation = self.generation
    return node


# %%
#| export dezero_like/core.py Function
import weakref

from dezero_like.core import (
    Config,
    Variable,
    _add_grads,
    _as_inputs,
    _global_hooks,
    _grads_tuple,
    _hooks_for,
    as_array,
)

_grads = None  # gradients of the outputs, gathered during backward


def __call__(self, *inputs):
    inputs = _as_inputs(inputs)  # numbers and arrays become constants
    xs = [x.data for x in inputs]
    needs = tuple(x.requires_grad for x in inputs)
    record = Config.enable_backprop and True in needs
    if record:
        self.needs_input_grad = needs
    hooks = _hooks_for(self) if self._hooks else _global_hooks
    for hook in hooks:
        hook.forward_preprocess(self, xs)
    ys = self.forward(*xs)
    if type(ys) is not tuple:
        ys = (ys,)
    ys = [as_array(y) for y in ys]  # NumPy may return a scalar for 0-d input
    for hook in hooks:
        hook.forward_postprocess(self, xs, ys)
    outputs = [Variable(y, requires_grad=record) for y in ys]
    if record:  # link the outputs to this function, and it to what backward reads
        self.generation = max(x.generation for x in inputs)
        for i, y in enumerate(outputs):
            y.set_creator(self, i)
        self.outputs = [weakref.ref(y) for y in outputs]  # weak: no reference cycle
        self._duplicates = len(set(map(id, inputs))) < len(inputs)
        keep = self._retained_in
        if keep is not None:  # a computed input backward does not read: a stand-in
            inputs = tuple(x if x.creator is None or i in keep else x._as_node()
                           for i, x in enumerate(inputs))
        self.inputs = inputs
        if self._retained_out is not None:
            self._retained_out = {i: ys[i] for i in self._retained_out}
    return outputs[0] if len(outputs) == 1 else outputs


def get_retained_outputs(self):
    """The outputs kept by ``retain_outputs``, as Variables that belong to this graph."""
    if self._retained_out is None:
        raise RuntimeError(f"{type(self).__name__} retained no outputs")
    result = []
    for i, data in self._retained_out.items():
        y = self.outputs[i]()
        if y is None:  # the user dropped it: rebuild the same graph node
            y = Variable(data)
            y.set_creator(self, i)
        result.append(y)
    return tuple(result)


def release(self):
    """Drop the arrays saved for backward; the graph's shape stays for drawing."""
    kept = []
    for x in self.inputs:  # a plain loop: this runs once per function in every backward
        # x._data: the array behind the property data (step 37), read without its call
        kept.append(x if x.creator is None or x._data is None else x._as_node())
    self.inputs = tuple(kept)
    self._retained_out = None
    self._freed = True


def backward_accumulate(self, *gys):
    """Backward for a function that received the same variable in several slots.

    ``f(x, x)`` gives one gradient per slot; they are summed here, inside the
    function's own backward step, into the first slot holding ``x`` (the
    others get ``None``), so ``x`` receives one gradient, stored once, in
    a fresh array. A function may override this to compute the fused
    gradient directly (``x * x`` could return ``2 * x * gy`` at once).
    """
    gxs = list(_grads_tuple(self.backward(*gys)))
    first = {}
    for i, x in enumerate(self.inputs):
        # a leaf is itself; a computed variable is its place in the graph
        key = id(x) if x.creator is None else (id(x.creator), x.index)
        if key not in first:
            first[key] = i
        elif gxs[i] is not None:
            j = first[key]
            gxs[j] = gxs[i] if gxs[j] is None else _add_grads(gxs[j], gxs[i])
            gxs[i] = None
    return tuple(gxs)


# %% [markdown]
# The loop with slots. Compare it with step 37's: the queue no longer needs a
# `seen` set, `y.grad` is never written (unless `retain_grad=True`), and
# `release` moves into the loop.

# %%
#| export dezero_like/core.py
import heapq
import weakref
import itertools

from dezero_like.core import (
    _accumulate_leaf,
    _add_grads,
    _backward_step,
    _check_unchanged,
    _from_backward,
)


def _backprop(y, seed, retain_grad, retain_graph, loss_scale=None):
    """Apply the chain rule from ``y`` (whose gradient is ``seed``) back to the leaves."""
    if y.creator is None:
        _accumulate_leaf(y, seed, loss_scale)
        return
    funcs = []  # a heap of (-generation, arrival number, function)
    arrivals = itertools.count()

    def add_func(f):  # called when f's first output gradient arrives
        f._grads = [None] * len(f.outputs)
        heapq.heappush(funcs, (-f.generation, next(arrivals), f))

    add_func(y.creator)
    y.creator._grads[y.index] = seed
    try:
        while funcs:
            f = heapq.heappop(funcs)[2]
            gys, f._grads = f._grads, None
            if f._freed:
                raise RuntimeError(
                    f"Trying to backward through {type(f).__name__} a second time, but its "
                    "saved data was freed after the first backward. Pass retain_graph=True "
                    "to the first backward() call if you need to call backward twice. (An RNN "
                    "trained on pieces of a sequence needs loss.unchain_backward() after each "
                    "update instead: keeping the graph would make it grow without end.)"
                )
            _check_unchanged(f)  # an input or output changed since f ran? (step 37)
            if retain_grad:  # hand the gradients to the outputs still alive
                for ref, gy in zip(f.outputs, gys):
                    out = ref()
                    if out is not None:
                        out.grad = gy
                        if gy is not None:  # a result, not a seed (step 67)
                            _from_backward[out] = weakref.ref(gy)
            gxs = _backward_step(f, gys)
            for x, gx in zip(f.inputs, gxs):
                if gx is None or not x.requires_grad:
                    continue
                c = x.creator
                if c is None:
                    _accumulate_leaf(x, gx, loss_scale)
                    continue
                if c._grads is None:
                    add_func(c)
                slots, i = c._grads, x.index
                slots[i] = gx if slots[i] is None else _add_grads(slots[i], gx)
            if not retain_graph:
                f.release()
    finally:  # an exception left work queued: forget it
        for item in funcs:
            item[2]._grads = None


# %% [markdown]
# And the arithmetic, each keeping what its derivative reads. `retain_inputs(())`
# keeps no input: `Add` needs only the shapes. `Mul` keeps a factor only when the
# *other* factor needs a gradient: in `x * 2.0` it keeps the `2.0`, not `x`.

# %%
#| export dezero_like/core.py
from dezero_like.core import Function, Variable, _sum_to


class Add(Function):
    """y = x0 + x1 (with broadcasting); dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        if self.needs_input_grad:  # a graph is being built: keep shapes, no arrays
            self.retain_inputs(())
            self.shapes = (x0.shape, x1.shape)
        return x0 + x1

    def backward(self, gy):
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy, s0) if n0 else None, _sum_to(gy, s1) if n1 else None)


class Mul(Function):
    """y = x0 * x1; dy/dx0 = x1, dy/dx1 = x0. Keeps only the factor it needs."""

    def forward(self, x0, x1):
        if self.needs_input_grad:  # a graph is being built
            n0, n1 = self.needs_input_grad
            # dy/dx0 needs x1 and dy/dx1 needs x0: keep a factor only when its
            # partner needs a gradient (x * 2.0 keeps the 2.0, not x).
            self.retain_inputs((1,) if not n1 else (0,) if not n0 else (0, 1))
            self.shapes = (x0.shape, x1.shape)
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy * x1, s0) if n0 else None, _sum_to(gy * x0, s1) if n1 else None)


class Neg(Function):
    """y = -x; dy/dx = -1."""

    def forward(self, x):
        if self.needs_input_grad:
            self.retain_inputs(())
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    """y = x0 - x1; dy/dx0 = 1, dy/dx1 = -1."""

    def forward(self, x0, x1):
        if self.needs_input_grad:
            self.retain_inputs(())
            self.shapes = (x0.shape, x1.shape)
        return x0 - x1

    def backward(self, gy):
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy, s0) if n0 else None, _sum_to(-gy, s1) if n1 else None)


class Div(Function):
    """y = x0 / x1; dy/dx0 = 1/x1, dy/dx1 = -x0/x1**2."""

    def forward(self, x0, x1):
        if self.needs_input_grad:
            # dy/dx0 needs x1; dy/dx1 needs x0 and x1
            self.retain_inputs((0, 1) if self.needs_input_grad[1] else (1,))
            self.shapes = (x0.shape, x1.shape)
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        gx0 = _sum_to(gy / x1, s0) if n0 else None
        # -(x0 / x1) / x1, not -x0 / x1**2: the square of an integer x1 (or -x0 of an unsigned
        # one) would wrap around before the division made it a float
        gx1 = _sum_to(gy * (-(x0 / x1) / x1), s1) if n1 else None
        return gx0, gx1


# %%
import tracemalloc
import weakref

import numpy as np

import dezero_like as dz
import dezero_like.functions as F

x = dz.Variable(np.ones((2, 2), dtype=np.float32))
h = x * 3.0
y = h + 1.0
add, mul = y.creator, h.creator
print("Add keeps its input h?      ", add.inputs[0].data is not None)
print("Mul keeps the leaf x?       ", mul.inputs[0] is x, "(leaves are alive anyway)")
print("Mul keeps the constant 3.0: ", mul.inputs[1].data)
z = F.exp(h)
print("Exp keeps its input h?      ", z.creator.inputs[0].data is not None,
      "  its output?", z.creator._retained_out is not None)

# %% [markdown]
# The stand-in keeps its place in the graph, so the graph can still be walked
# (and drawn) even though the array is gone:

# %%
node = add.inputs[0]
print("stand-in:", node, " creator:", type(node.creator).__name__,
      " generation:", node.generation)

# %% [markdown]
# Drawn, once the script's own name `h` is gone too: the stand-in between `Mul` and
# `Add` is the small empty node. It has no shape to show, because nothing holds an
# array for it any more; `Mul`'s input `x` and `Add`'s output `y` are alive and show
# theirs.

# %%
from dezero_like.graph import plot_dot_graph  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402

del h
written(plot_dot_graph(y, to_file=output_dir(69) / "stand_in.svg"))

# %% [markdown]
# ## A naive graph for comparison
#
# To see the difference, here is a tiny self-contained graph in DeZero's
# design: every function holds its input Variables, and every Variable holds
# its array. (Outputs are held weakly, as in step 18, so there are no cycles.)

# %%
class NaiveVariable:
    def __init__(self, data):
        self.data = data
        self.creator = None
        self.grad = None


class NaiveFunction:
    def __call__(self, x):
        y = NaiveVariable(self.forward(x.data))
        y.creator = self
        self.input = x  # the whole input Variable, data included, lives as long as y
        self.output = weakref.ref(y)
        return y


class NaiveAffineMul(NaiveFunction):
    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x * self.c

    def backward(self, gy):
        return gy * self.c


class NaiveAffineAdd(NaiveFunction):
    def __init__(self, d):
        self.d = d

    def forward(self, x):
        return x + self.d

    def backward(self, gy):
        return gy


def naive_backward(y):
    """Walk the chain from y back to the leaf (a chain needs no priority queue)."""
    g = np.ones_like(y.data)
    f = y.creator
    while f is not None:
        g = f.backward(g)
        x = f.input
        f = x.creator
    x.grad = g


# %% [markdown]
# ## Measuring with `tracemalloc`
#
# `tracemalloc` records every allocation Python makes, NumPy arrays included.
# We build a chain of 200 functions, $y \leftarrow y \cdot c + d$ repeated 100
# times, on a 256×256 float32 array (256 KiB), and measure what stays
# allocated once the forward pass is done (the graph plus the output) and the
# peak during forward and backward.

# %%
C, D = 0.999, 0.001


def package_chain(x, steps):
    y = x
    for _ in range(steps):
        y = y * C + D
    return y


def naive_chain(x, steps):
    y = x
    for _ in range(steps):
        y = NaiveAffineAdd(D)(NaiveAffineMul(C)(y))
    return y


def measure(kind, steps, shape=(256, 256)):
    """Bytes kept after forward, and peak bytes during forward + backward, beyond the input."""
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    x = dz.Variable(data) if kind == "package" else NaiveVariable(data)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    if kind == "package":
        y = package_chain(x, steps)
    else:
        y = naive_chain(x, steps)
    kept = tracemalloc.get_traced_memory()[0] - base
    if kind == "package":
        y.backward()
    else:
        naive_backward(y)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    grad = x.grad.data if kind == "package" else x.grad
    return kept, peak, grad


array_bytes = 256 * 256 * 4
print(f"one array: {array_bytes / 2**20:.2f} MiB")
print(f"{'graph':<9}{'functions':>10}{'kept after forward':>22}{'peak':>12}")
results = {}
for kind in ("package", "naive"):
    for steps in (50, 100):
        kept, peak, grad = measure(kind, steps)
        results[kind, steps] = kept, peak, grad
        print(f"{kind:<9}{2 * steps:>10}{kept / array_bytes:>15.1f} arrays"
              f"{peak / array_bytes:>7.1f} arrays")

same = np.allclose(results["package", 100][2], results["naive", 100][2])
print("both graphs give the same gradient (c**100):", same,
      float(results["package", 100][2][0, 0]), C**100)

# %% [markdown]
# The naive graph keeps one array per function, and its memory grows with the
# length of the chain: twice the chain, twice the memory. The package keeps
# about one array (the output) however long the chain is: a `Mul` by a
# constant keeps only the constant and an `Add` keeps nothing. Its peak is a
# few arrays: the current value, the temporary of the next operation, and in
# backward the gradient being passed along.
#
# This is what lets industrial frameworks train deep networks: the memory of
# a training step is dominated by the arrays that backward truly needs
# (activations of nonlinear functions, inputs of matrix products), not by
# every intermediate result.

# %% [markdown]
# ## Exercise
# 1. `sin` needs its input for backward ($\cos x$), so a chain of `F.sin`
#    cannot be as frugal as the affine chain. Predict how many arrays a chain
#    of 20 `sin` calls keeps after forward; then write `sin_chain(x, n)`, which
#    applies `F.sin` `n` times and returns the result, and let the self-check
#    measure it with `tracemalloc`.
# 2. **Implement then test: keep only what backward reads.** Step 25 wrote tanh and step 44 the
#    sigmoid (step 35's exercise too), whose derivatives are written with their output. Write
#    `MySoftplus`, $y = \log(1 + e^x)$ (a smooth ReLU), the same way. Its derivative is the
#    sigmoid $\sigma(x) = e^x / (1 + e^x)$; write it with the output alone (what is $e^y$?), so
#    that `forward` keeps no input but its one output (`retain_inputs` and `retain_outputs`),
#    and `backward` reads `y` back from what was kept, not from `self.inputs`. (NumPy's
#    `logaddexp(a, b)` is $\log(e^a + e^b)$ without overflow.) The self-check compares the
#    forward with NumPy, runs `gradient_check`, and verifies that the input of a `MySoftplus`
#    that was computed by another function is a data-less stand-in.

# %%
#| exercise
def sin_chain(x, n):
    raise NotImplementedError("Exercise (step 69): x through F.sin, n times over")

# %%
#| solution
def sin_chain(x, n):
    y = x
    for _ in range(n):
        y = F.sin(y)
    return y

# %%
#| check
def kept_by_sin_chain(n, shape=(128, 128)):
    x = dz.Variable(np.ones(shape, dtype=np.float32))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        y = sin_chain(x, n)
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    expected = np.ones(shape, dtype=np.float32)
    for _ in range(n):
        expected = np.sin(expected)
    assert np.allclose(y.data, expected), "sin_chain should apply F.sin n times"
    return kept / (np.prod(shape) * 4)


arrays = kept_by_sin_chain(20)
print(f"20 sin calls keep {arrays:.1f} arrays")
assert 19.5 < arrays < 22, (
    f"expected about 20 arrays (19 kept inputs + the output; the leaf x is not counted), "
    f"got {arrays:.1f}"
)
print("self-check passed: each sin keeps its input, so the chain keeps one array per call")

# %%
#| exercise
class MySoftplus(dz.Function):
    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 69): log(1 + e^x), keeping the output and no input for backward"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 69): gy times the sigmoid of x, written with the kept output y"
        )

# %%
#| solution
class MySoftplus(dz.Function):
    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return np.logaddexp(0.0, x)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * (1 - F.exp(-y))  # e^y = 1 + e^x, so sigmoid(x) = 1 - e^-y

# %%
#| check
from dezero_like.utils import gradient_check  # noqa: E402

rng = np.random.default_rng(0)
z = rng.normal(size=(3, 4))
h = F.exp(dz.Variable(z)) - 1.5
y = MySoftplus()(h)
assert np.allclose(y.data, np.log1p(np.exp(h.data))), (
    "the forward should be log(1 + e^x), elementwise"
)
try:
    gradient_check(  # the input is computed
        lambda v: MySoftplus()(F.exp(v) - 1.5), z,
        hint="MySoftplus's backward is wrong: gy times the sigmoid of x, written with the kept "
             "output (e^y = 1 + e^x); gy is the gradient arriving from the output's side, which "
             "is not all ones here")
except (TypeError, AttributeError) as e:
    raise AssertionError(
        f"MySoftplus's backward failed ({e}): an input that forward does not keep is a "
        "stand-in without data; read y back with get_retained_outputs, not x from self.inputs"
    ) from None
assert y.creator.inputs[0].data is None, (
    "MySoftplus still holds its computed input: forward should say that it keeps no input"
)
print("self-check passed: MySoftplus passes the gradient check keeping only its output")
