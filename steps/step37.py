# %% [markdown]
# # Step 37: `retain_graph`: the graph is freed after backward
#
# To run backward, functions keep arrays from the forward pass: `Mul` keeps its
# inputs, `Tanh` its output, and so on. For a network trained on large batches
# those saved arrays (the *activations*) are often most of the memory a
# training step uses; the weights, their gradients and the optimizer's state
# are the rest. Once backward has read them, a
# training loop never needs them again: the next iteration builds a new graph.
#
# So, as in PyTorch (see `retain_graph` in the documentation of
# `torch.Tensor.backward`), **backward releases what the functions saved**. The
# graph's structure stays (you can still draw it), but its saved arrays are gone, and a
# second backward through it cannot work. The framework says so clearly instead
# of computing garbage:

# %%
import tracemalloc

import numpy as np

import dezero_like as dz
import dezero_like.functions as F

x = dz.Variable(np.array(2.0))
y = x**3
y.backward()
print("first backward:", x.grad.data)
try:
    y.backward()
except RuntimeError as e:
    error_message = str(e)
    print("RuntimeError:", error_message)

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `Variable.backward` (it gains `retain_graph`), `Variable.set_creator`
# and the backward loop `_backprop`, and gains `Variable._as_node`, `Function.release`, the
# property `Variable.data` and the clock `_data_clock` with `_check_unchanged`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# Three changes to the core do this (a fourth, at the end of the step, catches a value
# changed between forward and backward).
#
# * `Variable._as_node()` makes a **stand-in**: a Variable with the same place
#   in the graph (creator, generation, name) but no array.
# * `Function.release()` replaces each input that was computed (has a creator)
#   by its stand-in, and marks the function as freed. A leaf stays: it is the
#   user's own variable, and its gradient must still reach it. The graph keeps
#   its shape, so it can still be drawn.
# * The loop releases every function it went through, unless `retain_graph=True`.
#   It releases them all at the end: until then, the gradients of intermediate
#   variables are kept on the variables themselves, so they must stay alive
#   (step 69 finds a better place for those gradients and releases each
#   function as soon as its backward has run). A freed function met by a later
#   backward raises an error that says what to do.
#
# `backward(create_graph=True)` keeps the graph as well: the graph of the
# gradient refers back to the forward graph.

# %%
#| export dezero_like/core.py Variable
from dezero_like import cuda
from dezero_like.core import Variable, _backprop, using_config


def backward(self, retain_grad=False, create_graph=False, retain_graph=False):
    """Compute the gradient of this variable with respect to every leaf.

    * ``retain_grad``: also keep ``.grad`` on the intermediate variables.
    * ``create_graph``: record the backward pass itself, so that the gradients
      can be differentiated again (implies ``retain_graph``).
    * ``retain_graph``: keep what the functions saved, so backward can run again.
    """
    seed = Variable(cuda.get_array_module(self.data).ones_like(self.data),
                    requires_grad=False)
    with using_config("enable_backprop", create_graph):
        _backprop(self, seed, retain_grad, retain_graph or create_graph)


def _as_node(self):
    """A stand-in without data: the same place in the graph, no array kept."""
    node = Variable(None, self.name, self.requires_grad)
    node.creator = self.creator
    node.generation = self.generation
    return node


# %%
#| export dezero_like/core.py Function
_freed = False  # True once release() has dropped what backward needs

_stamp = 0  # the tick of the clock _data_clock when this function ran (see below)


def release(self):
    """Drop the arrays saved for backward; the graph's shape stays for drawing."""
    self.inputs = tuple(x if x.creator is None else x._as_node() for x in self.inputs)
    self._freed = True


# %%
#| export dezero_like/core.py
import heapq
import itertools

from dezero_like.core import _accumulate_leaf, _add_grads, _backward_step, _check_unchanged


def _backprop(y, seed, retain_grad, retain_graph):
    """Apply the chain rule from ``y`` (whose gradient is ``seed``) back to the leaves."""
    if y.creator is None:
        _accumulate_leaf(y, seed)
        return
    funcs = []  # a heap of (-generation, arrival number, function)
    seen = set()
    arrivals = itertools.count()
    done = []  # the functions whose backward ran, released at the end

    def add_func(f):
        if f not in seen:
            seen.add(f)
            heapq.heappush(funcs, (-f.generation, next(arrivals), f))

    add_func(y.creator)
    y.grad = seed
    while funcs:
        f = heapq.heappop(funcs)[2]
        if f._freed:
            y.grad = None
            raise RuntimeError(
                f"Trying to backward through {type(f).__name__} a second time, but its "
                "saved data was freed after the first backward. Pass retain_graph=True "
                "to the first backward() call if you need to call backward twice."
            )
        _check_unchanged(f)  # was something f's backward reads changed since f ran? (below)
        gys = []
        for ref in f.outputs:
            out = ref()  # None when that output was dropped: no gradient reached it
            gys.append(None if out is None else out.grad)
        gxs = _backward_step(f, gys)
        for x, gx in zip(f.inputs, gxs):
            if gx is None or not x.requires_grad:
                continue
            if x.creator is None:
                _accumulate_leaf(x, gx)
            else:
                x.grad = gx if x.grad is None else _add_grads(x.grad, gx)
                add_func(x.creator)
        if not retain_grad:
            for ref in f.outputs:
                out = ref()
                if out is not None:
                    out.grad = None
        done.append(f)
    if not retain_graph:
        for f in done:
            f.release()


# %% [markdown]
# ## Keeping the graph: `retain_graph=True`
#
# When you *do* need a second pass, ask the first one to keep the saved arrays.
# Gradients of leaves then accumulate, as always (step 14):

# %%
x = dz.Variable(np.array(2.0))
y = x**3
y.backward(retain_graph=True)
first = float(x.grad.data)
y.backward()  # allowed: the first pass kept the graph; this one frees it
print("after two passes x.grad =", x.grad.data, "=", first, "+", first)

# %% [markdown]
# `create_graph=True` implies `retain_graph=True`: the graph of the gradient
# refers back to the forward graph (steps 30–33), so the forward graph must stay
# usable.
#
# ## Two losses that share a trunk
#
# The common reason for `retain_graph` is multi-task learning: one shared
# "trunk" $h = \tanh(xW)$ feeds two heads, each with its own loss. Calling
# backward on each loss in turn sends both gradients into the shared $W$.
# The first call must keep the trunk's graph, which the second call walks again:

# %%
rng = np.random.default_rng(0)
X = rng.normal(size=(4, 3))
W_init = rng.normal(size=(3, 2))
a = rng.normal(size=(2,))


def two_losses(W):
    h = F.tanh(F.sum(X[:, :, None] * W, axis=1))  # the shared trunk: X W, without @ (step 42)
    loss1 = F.sum(h * a)  # head 1
    loss2 = F.sum(h**2)  # head 2
    return loss1, loss2


W = dz.Variable(W_init.copy(), name="W")
loss1, loss2 = two_losses(W)
loss1.backward(retain_graph=True)
grad_after_loss1 = W.grad.data.copy()
loss2.backward()
grad_two_calls = W.grad.data.copy()

W_sum = dz.Variable(W_init.copy())
loss1, loss2 = two_losses(W_sum)
(loss1 + loss2).backward()
print("two backward calls == one backward of the sum:",
      np.allclose(grad_two_calls, W_sum.grad.data, rtol=1e-12, atol=1e-15))

# %% [markdown]
# Without `retain_graph=True` in the first call, the second one stops at the
# first freed function of the trunk:

# %%
loss1, loss2 = two_losses(dz.Variable(W_init.copy()))
loss1.backward()
try:
    loss2.backward()
except RuntimeError as e:
    trunk_error = str(e)
    print("RuntimeError:", trunk_error.split(",")[0])

# %% [markdown]
# The two ways agree: gradients are linear, so the gradient of
# $L_1 + L_2$ is the sum of the two gradients. Backward of the sum is usually
# better (one pass through the trunk instead of two, and no need to retain);
# separate calls are useful when the losses are computed at different times.
#
# Gradients keep accumulating across calls until `cleargrad()`, which is why
# training loops clear them at the start of every iteration:

# %%
loss1, loss2 = two_losses(W)
loss1.backward()  # the third pass into W.grad
print("accumulated:", np.allclose(W.grad.data, grad_two_calls + grad_after_loss1))
W.cleargrad()
print("after cleargrad:", W.grad)

# %% [markdown]
# ## What the release saves
#
# A chain of 20 `tanh` on a 1000×1000 float64 array (8 MB each). `tracemalloc`
# measures the memory held by NumPy arrays after backward, with and without
# `retain_graph` (`benchmarks/memory.py` goes further: chains of 200 functions,
# the peak during backward as well, `retain_grad`, and PyTorch beside it):

# %%
def memory_after_backward(retain_graph, depth=20):
    tracemalloc.start()
    x = dz.Variable(np.ones((1000, 1000)))
    y = x
    for _ in range(depth):
        y = F.tanh(y)
    y.backward(retain_graph=retain_graph)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del x, y
    return held / 8e6  # in units of one array


kept = memory_after_backward(retain_graph=True)
freed = memory_after_backward(retain_graph=False)
print(f"arrays held after backward: retain_graph=True {kept:.1f}, False {freed:.1f}")

# %% [markdown]
# With `retain_graph=True` every `Tanh` still holds its output (about one array
# per function); without it, only what we hold ourselves remains: `x`, its
# gradient and the final `y`.
#
# The same measurement for chains of 1 to 20 functions, as a picture. With
# `retain_graph=True` the line climbs by one array per function. Without it
# the line stays flat at three arrays, however long the chain: the shaded
# gap is what backward freed.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

depths = [1, 5, 10, 20]
held_kept = [memory_after_backward(True, d) for d in depths[:-1]] + [kept]  # 20: measured above
held_freed = [memory_after_backward(False, d) for d in depths[:-1]] + [freed]
fig, ax = plt.subplots(figsize=(6, 3.8))
ax.plot(depths, held_kept, "o-", label="retain_graph=True")
ax.plot(depths, held_freed, "s-", label="retain_graph=False (the default)")
ax.fill_between(depths, held_freed, held_kept, alpha=0.15, label="freed by backward")
ax.set_xlabel("tanh functions in the chain")
ax.set_ylabel("arrays held after backward (8 MB each)")
ax.set_xticks(depths)
ax.set_ylim(0, None)
ax.set_title("What backward frees: the arrays the functions saved")
ax.legend()
figure_path = save_figure(fig, output_dir(37) / "memory_after_backward.png")
plt.show()

# %% [markdown]
# ## Changing a value the graph saved
#
# Until its backward has run (and after it, with `retain_graph=True`), a graph keeps
# *references* to arrays, not copies: `Sin` keeps its input, `Mul` its factors, `Exp` and
# `Tanh` their output. Change one of those arrays
# between forward and backward and the backward reads the new values next to gradients
# computed from the old ones. Nothing fails; the gradient is simply wrong. The usual ways in:
#
# * an optimizer step between two backwards through one graph
#   (`loss.backward(retain_graph=True); optimizer.update(); loss.backward()`);
# * `x.data += 1` (or `x.data = x.data + 1`) after the forward, to try another value;
# * changing an output that a function keeps, `y = F.exp(x); y.data *= 2`.
#
# PyTorch gives every tensor a **version counter**: each in-place operation adds one to it,
# each tensor saved for backward remembers the version it had, and backward compares the two
# ("one of the variables needed for gradient computation has been modified by an inplace
# operation ... is at version 2; expected version 1"). Here the way to change a Variable's
# array is to assign its `.data`, and `x.data += 1` and `x.data -= lr * g` end with an
# assignment too (Python runs `x.data = x.data.__iadd__(1)`). So `.data` becomes a
# *property*: the array lives in `_data`, and assigning `.data` ticks a clock, `_data_clock`,
# and stamps the Variable with the tick (`_version`). `set_creator` stamps the function with
# the tick of the moment it ran. Before each function's backward, `_check_unchanged` looks at
# what that backward reads (the inputs, or only those that `retain_inputs` names, and the
# outputs that `retain_outputs` names): one stamped later than the function was changed after
# the function read it.
#
# One clock instead of a counter per Variable keeps the check cheap: a function stores one
# number, and step 70 compares it with the clock once per function, looking at the inputs
# only when the clock has moved. A tick means something only in the process whose clock made
# it: a Variable read back by `pickle` (or copied) starts again at version 0. PyTorch does not
# carry the count over either: a tensor read back by `torch.load` or `copy.deepcopy` starts at
# version 1 (PyTorch 2.13), whatever its version was when saved. Kept as saved, a model
# pickled after a thousand updates and loaded into a fresh process would look changed to
# every function that read it there.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _changed_in_place, _data_clock


def set_creator(self, func):
    self.creator = func
    self.generation = func.generation + 1
    func._stamp = _data_clock.now  # func runs now: a later assignment to .data is newer


def _get_data(self):
    return self._data


def _set_data(self, value):
    self._data = value
    _changed_in_place(self)  # x.data = a, x.data += 1, x.data -= lr * g: all come here


data = property(_get_data, _set_data, doc="The array. Assigning it (``x.data = a``, and also "
                "``x.data += 1``, which ends with an assignment) stamps the Variable, so a "
                "backward that would read a changed value refuses to run (step 37).")


def __setstate__(self, state):
    """pickle and ``copy``: the Variable comes back unchanged, ``_version`` 0 (its stamp was
    a tick of the clock of the process that saved it, which means nothing to this one)."""
    attributes, slots = state if isinstance(state, tuple) else (state, None)  # step 70: slots
    for name, value in {**(attributes or {}), **(slots or {})}.items():
        setattr(self, name, value)
    self._version = 0


# %%
#| export dezero_like/core.py
class _Clock:
    """A clock that ticks at each assignment to a Variable's ``.data`` (``_data_clock.now``).

    A Variable's ``_version`` is the tick of its last assignment, a Function's ``_stamp``
    the tick when it ran: an input stamped later than its function changed after forward.
    """

    __slots__ = ("now",)  # an instance with a slot: Python reads _data_clock.now fastest

    def __init__(self):
        self.now = 0


_data_clock = _Clock()


def _changed_in_place(*variables):
    """Tick the clock and stamp ``variables`` with the tick: each assignment to ``.data`` (the
    setter above), and a change that no assignment announced (a GPU kernel writing the array)."""
    _data_clock.now += 1
    for v in variables:
        v._version = _data_clock.now


def _check_unchanged(f):
    """Refuse ``f``'s backward when an array it reads was assigned after ``f`` ran."""
    keep = f._retained_in  # None: backward may read every input
    for i, x in enumerate(f.inputs):
        if x._version > f._stamp and (keep is None or i in keep) and x.data is not None:
            _refuse_changed(f, "input", i, x)
    for i in f._retained_out or ():  # the outputs backward reads (Exp, Tanh, Sigmoid keep theirs)
        y = f.outputs[i]()
        if y is not None and y._version > f._stamp and y.data is not None:
            _refuse_changed(f, "output", i, y)


def _refuse_changed(f, kind, i, v):
    name = type(f).__name__
    what = f"'{v.name}'" if v.name else f"of shape {tuple(v.data.shape)}"
    if kind == "output":
        fix = "Change a copy (z = y.data.copy()), not the output a function keeps for backward"
    else:
        fix = ("Update parameters after backward (loss.backward(), then optimizer.update(), then "
               "a new forward); to try another value, build the graph again after the change, or "
               "change a copy (a = x.data.copy()); move a model to the GPU (model.to_gpu()) "
               "before its forward, not between forward and backward")
    raise RuntimeError(
        f"{name}'s {kind} {i} (a Variable {what}) was given a new .data after {name} ran "
        f"(x.data = ..., x.data += ..., an optimizer's update, or a move with to_gpu() or "
        f"to_cpu()), and {name}.backward reads "
        f"it: the gradient would mix the old values with the new ones (PyTorch: 'modified by "
        f"an inplace operation'). {fix}.")


# %% [markdown]
# The three mistakes of the list above, each caught before its backward runs:

# %%
u = dz.Variable(np.array([0.5, 1.0]), name="u")
y = F.sin(u)
u.data += 1  # a new value, after sin read the old one
try:
    y.backward()
except RuntimeError as e:
    changed_error = str(e)
    print("RuntimeError:", changed_error)

w = dz.Variable(np.array([1.0, 2.0]), name="w")
loss = F.sum(F.sin(w) * w)
loss.backward(retain_graph=True)
w.data -= 0.1 * w.grad.data  # an optimizer step between two backwards through one graph
try:
    loss.backward()
except RuntimeError as e:
    update_error = str(e)
    print("RuntimeError:", update_error.split(" (x.data")[0])

y = F.exp(dz.Variable(np.array(1.0)))
y.data *= 2  # Exp's backward reads its output
try:
    y.backward()
except RuntimeError as e:
    output_error = str(e)
    print("RuntimeError:", output_error.split(" (x.data")[0])

# %% [markdown]
# What stays allowed: changing values *after* backward (the training loop: forward, backward,
# update, then a new forward reads the new values), and two backwards through one graph with
# nothing changed in between. What it cannot see: a write through indexing,
# `x.data[0] = 5.0`, or `np.copyto(x.data, a)`, changes the array without assigning `.data`.
# Catching those would cost a look at every saved array on every operation (PyTorch counts
# them because every in-place operation on a tensor runs PyTorch's own code; a NumPy array
# has no counter), so here they stay the learner's care. Moving a Variable to the other
# device (`to_gpu()`, `to_cpu()`, step 54) ticks the clock too: the numbers are the same, but
# a backward that reads the moved array next to the others, still on the old device, would
# fail in the middle of the graph with the array library's own error; it stops here instead,
# with the fix (move the model before its forward).
#
# ## Exercise 1: two passes through one graph
# Build $z = \sin(x) \cdot x$ at $x = 1$ and run backward from $z$ twice
# through the same graph, without building it again: the first pass must not
# free it (which option of this step's `backward` does that?). Store $x$'s
# gradient as a float in `twice`. It should be twice the derivative
# $\cos 1 + \sin 1$, since gradients accumulate (step 14).

# %%
#| exercise
xe = dz.Variable(np.array(1.0))
twice = ...  # xe's gradient, as a float, after two backward passes through one graph

# %%
#| solution
xe = dz.Variable(np.array(1.0))
z = F.sin(xe) * xe
z.backward(retain_graph=True)
z.backward(retain_graph=True)
twice = float(xe.grad.data)

# %%
#| check
assert isinstance(twice, float), f"twice should be a float, got {type(twice).__name__}"
assert np.isclose(twice, 2 * (np.cos(1.0) + np.sin(1.0))), (
    f"two passes should give twice the derivative, {2 * (np.cos(1.0) + np.sin(1.0)):.6f}, "
    f"got {twice}"
)
print("self-check passed: two backward passes accumulate twice the derivative")

# %% [markdown]
# ## Exercise 2: counting what backward frees
# `Function.release` decides which arrays a graph lets go of. Predict it without
# running it: write `freed_bytes(y)`, the number of bytes of array data that a
# plain `y.backward()` (without `retain_graph`) frees, when you hold nothing of
# the graph but its leaves and `y` (as a training loop holds the parameters and
# the loss). Walk the graph back from `y`, function by function, as the backward
# loop does, and ask of each input a function holds whether release lets it go:
#
# * a leaf stays: release keeps it, it is yours;
# * `y` stays too: you hold it, and no function of the graph holds it as an input;
# * a variable read by several functions, or twice by one (`h * h`), is one
#   array, freed once;
# * a stand-in holds no array, so it frees nothing: after a backward that
#   released the graph, there is nothing left to free.
#
# A NumPy array's size in bytes is its `nbytes`. `freed_bytes` only counts: it
# must leave the graph as it is. The self-check's graph uses `sin`, `cos` and
# `*`, which keep their inputs for backward (later steps let some functions keep
# less), and reads one intermediate variable three times. It measures with
# `tracemalloc`, as above, how much memory a backward that releases the graph
# actually gives back, and compares your count with it.

# %%
#| exercise
def freed_bytes(y):
    raise NotImplementedError("Exercise (step 37): walk the graph back from y and add up the "
                              "bytes of the arrays that release would let go of, each once")

# %%
#| solution
def freed_bytes(y):
    total = 0
    counted = set()  # ids of the variables already added: an array is freed once
    seen = set()
    funcs = [] if y.creator is None else [y.creator]
    while funcs:
        f = funcs.pop()
        if f in seen:
            continue
        seen.add(f)
        for x in f.inputs:
            if x.creator is None:  # a leaf: release keeps it
                continue
            funcs.append(x.creator)
            if x.data is not None and id(x) not in counted:  # a stand-in holds nothing
                counted.add(id(x))
                total += x.data.nbytes
    return total

# %%
#| check
def three_reads(n=50_000):
    x = dz.Variable(np.random.default_rng(0).normal(size=n))
    h = F.sin(x)  # read three times: twice by h * h, once by sin(h)
    return x, F.cos(h * h) * F.sin(h) * x


def count(y):
    try:
        return freed_bytes(y)
    except NotImplementedError as e:
        raise AssertionError(f"freed_bytes is not written yet: {e}") from None


tracemalloc.start()
try:
    x_chk, y_chk = three_reads()
    counted = count(y_chk)
    try:
        y_chk.backward(retain_graph=True)
    except RuntimeError:
        raise AssertionError("backward failed after freed_bytes(y): it should only count, and "
                             "leave the functions as they are") from None
    held_before = tracemalloc.get_traced_memory()[0]
    counted_kept = count(y_chk)
    y_chk.backward()  # this pass releases the graph
    released = held_before - tracemalloc.get_traced_memory()[0]
finally:
    tracemalloc.stop()
one_array = x_chk.data.nbytes
assert isinstance(counted, (int, np.integer)), (
    f"freed_bytes should return a number of bytes (an int), got {type(counted).__name__}"
)
print(f"freed_bytes: {counted} bytes; backward released {released} bytes "
      f"(one array here is {one_array} bytes)")
# a mistake is off by whole arrays; Python's own objects freed with them are a few hundred bytes
assert abs(counted - released) < one_array / 4, (
    f"you count {counted / one_array:g} arrays, backward released {released / one_array:.2f}: "
    + ("too many: a leaf stays, y stays, and an array read several times is freed once"
       if counted > released else
       "too few: count the computed inputs of every function of the graph, not only of the "
       "last one: go back through the creators")
)
assert counted_kept == counted, (
    f"after backward(retain_graph=True) the count changed from {counted} to {counted_kept}: "
    "that backward kept every saved array, so the same ones are still there to free"
)
try:
    counted_after = count(y_chk)
except (AttributeError, TypeError) as e:
    raise AssertionError(f"freed_bytes failed on a released graph ({e}): its functions now "
                         "hold stand-ins, whose data is None") from None
assert counted_after == 0, (
    f"after a plain backward nothing is left to free, but freed_bytes gives {counted_after}: "
    "a stand-in holds no array"
)
print("self-check passed: freed_bytes predicts the memory a backward releases")
