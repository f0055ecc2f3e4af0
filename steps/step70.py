# %% [markdown]
# # Step 70: Making the hot path fast
#
# Steps 23–69 wrote the core for clarity. Each function call wraps its inputs,
# builds lists, creates Variables through their checking `__init__`, and the
# backward loop pushes every function through a heap. On a 1000×1000 array none
# of that matters: NumPy's work dwarfs it. On small arrays it is most of the
# time. The *overhead* of a framework is its cost per function call on top of
# the array work itself, and it decides how fast small models, RNN time steps
# and optimizer loops over many small parameters run.
#
# This step measures that overhead, then removes it in five places without
# changing what any function computes:
#
# 1. **`__slots__`.** A Variable with `__slots__` stores its ten fields in
#    fixed places, like a C struct, instead of in a per-object `__dict__`:
#    creating one is faster and it takes less memory.
# 2. **One place fills a Variable's fields** (`_fill`). A Variable made inside
#    the framework from an array a function just produced skips the input
#    checks of `__init__`, which the user's own Variables still go through.
# 3. **No Function object when nothing records.** Under `no_grad()`, and for
#    every operator inside a plain `backward()` (gradients are computed with
#    `*`, `+`, … with recording off), `x * y` multiplies the arrays directly
#    (`_binary`). With a graph being recorded, or a hook watching, the Function
#    runs as before, so `create_graph` and hooks see every operation.
# 4. **A chain needs no heap.** On a chain of functions there is never more
#    than one function waiting in the backward queue, so it is kept in a plain
#    variable (`nxt`), and the heap is used only once two functions wait.
# 5. **Plain loops instead of comprehensions and generators** in the
#    hottest lines. On Python 3.11 each comprehension is a function call
#    (3.12 inlines list, dict and set comprehensions, PEP 709; a generator
#    still runs as a function of its own).
#
# Everything here is measured: in this step with `timeit`, and in the
# repository with `benchmarks/overhead.py` (wall clock) and
# `benchmarks/instructions.py` (instructions counted by Valgrind, which do not
# wobble from run to run). `tests/test_hot_path.py` checks that the fast path
# gives the same values, dtypes, graphs and hook traces as step 69's plain path.

# %%
import sys
import timeit

import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def per_call(stmt, number=20000, repeat=5, **names):
    """Best time of one call of ``stmt``, in microseconds."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat, globals=names)) / number * 1e6


a = np.ones(1)
x = dz.Variable(a)
print(f"np.sin on 1 element:                  {per_call('np.sin(a)', np=np, a=a):6.2f} µs")
with dz.no_grad():
    print(f"F.sin(x) under no_grad:               {per_call('F.sin(x)', F=F, x=x):6.2f} µs")
print(f"F.sin(x), recording the graph:        {per_call('F.sin(x)', F=F, x=x):6.2f} µs")
print(f"F.sin(x) and its backward:            "
      f"{per_call('F.sin(x).backward()', F=F, x=x, number=5000):6.2f} µs")

# %% [markdown]
# The array work is the first line; everything above it in the other lines is
# the framework. A forward call creates a `Sin` object, a Variable and a weak
# reference. Its backward creates the seed, runs `Sin.backward` (a `cos` and a
# `*`, two more forward computations without a graph), and adds the gradient
# into `x.grad`.
#
# ## What `__slots__` buys
#
# A small experiment, independent of the framework: the same eight-field
# object, with and without `__slots__`.

# %%
class WithDict:
    def __init__(self):
        self.data = self.name = self.grad = self.creator = None
        self.index = self.generation = 0
        self.requires_grad = True
        self.loss_scale = None


class WithSlots:
    __slots__ = ("data", "name", "grad", "creator", "index", "generation",
                 "requires_grad", "loss_scale", "__weakref__")
    __init__ = WithDict.__init__


t_dict = per_call("C()", C=WithDict, number=100000)
t_slots = per_call("C()", C=WithSlots, number=100000)
print(f"create: with __dict__ {t_dict:.3f} µs, with __slots__ {t_slots:.3f} µs "
      f"({t_dict / t_slots:.2f}x)")
d, s = WithDict(), WithSlots()
print(f"size:   with __dict__ {sys.getsizeof(d) + sys.getsizeof(d.__dict__)} bytes, "
      f"with __slots__ {sys.getsizeof(s)} bytes")

# %% [markdown]
# Every function call creates at least one Variable, so this is paid on every
# call. The memory saving is exact; the time saved is small next to the noise of
# a shared machine, so the printed ratio can come out near 1, now and then even
# below: run the cell a few times. The price of `__slots__`: a Variable
# accepts no attribute that is not in the list (`x.note = 1` raises
# `AttributeError`), which also catches typos.
#
# ### The package code of this step
#
# In this step `core` gains `_new_object`, `_GPU_ARRAYS`, `_fill`, `_make_variable`, `_binary`,
# `_refuse_two_devices`, `_refuse_not_an_array`, `_refuse_second_call` and `_call_backward`,
# and `Variable.__slots__`; it changes `Variable.__init__` and `_as_node` (through `_fill`),
# `_as_inputs`, `_sum_to`, `_add_grads`, `_accumulate_leaf`, `_backward_step`, `_backprop`,
# `Function.__call__` and `get_retained_outputs` (the fast versions), and `add`, `mul`, `sub`,
# `rsub`, `div`, `rdiv` (through `_binary`). It also gains two warnings: a forgotten
# `cleargrads()` (`_mixed_leaves`, `_warn_if_mixed`, `_warn_mixed_update`, with
# `_changed_in_place` changed to look), and a gradient differentiated into itself
# (`_warn_gradient_into_itself`).
#
# A cell whose first line is `#| export dezero_like/core.py` is an **export cell**: it is part
# of the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# First the fields. `_fill` is now the one place where a Variable's fields are
# set: `__init__` checks the user's data and calls it, `_make_variable` calls
# it for an array a function produced, and `_as_node` for a stand-in.
# `object.__new__(Variable)` makes an instance without running `__init__`.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _GPU_ARRAYS, _fill, _is_array, _new_object

__slots__ = (
    "_data", "_version", "name", "grad", "creator", "index", "generation", "requires_grad",
    "loss_scale", "_grad_tick", "__weakref__",
)


def __init__(self, data, name=None, requires_grad=True):
    # the common cases test one type: a NumPy array, or a CuPy array of a type met before
    if type(data) is not np.ndarray and data is not None and type(data) not in _GPU_ARRAYS:
        if not _is_array(data):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or a cupy.ndarray), "
                f"got {type(data).__name__}; " + (
                    "it is a Variable already: use it as it is (as_variable(x) takes both), or "
                    f"{type(self).__name__}(v.data) for a new one holding its values"
                    if isinstance(data, Variable) else "use Variable(np.array(...))")
            )
        if isinstance(data, (np.matrix, np.ma.MaskedArray)):
            raise TypeError(
                f"Variable data must be a plain array, got {type(data).__name__}, whose "
                "operators differ (np.matrix's * is a matrix product; a masked array's sums "
                "skip masked values, their gradients would not); use "
                "Variable(np.asarray(data))")
    if data is not None and data.dtype.kind not in "biufc":
        raise TypeError(f"Variable data must have a numeric dtype, got {data.dtype}")
    if data is not None and not data.dtype.isnative:  # '>f2': _set_data's copy (step 67)
        data = data.astype(data.dtype.type)  # NumPy's own dtype object: `is` finds float16
    _fill(self, data, requires_grad, None, 0, 0, name)


def _as_node(self):
    """A stand-in without data: the same place in the graph, no array kept."""
    return _fill(_new_object(Variable), None, self.requires_grad, self.creator,
                 self.index, self.generation, self.name)


# %% [markdown]
# This cell holds `_fill` and `_make_variable` and the helpers that use them on the hot path.
# `_as_inputs` returns the tuple it was given when every input is already a Variable, which is the
# common case, so no new tuple is built. `_add_grads` adds two gradients as raw arrays when no graph
# is recorded, and as a recorded `Add` only under `create_graph`. `_accumulate_leaf` copies a
# read-only gradient with a plain `copy()` unless a graph is recorded.
#
# The hot path reads `x._data`, the slot behind the property `data` of step 37: reading a
# property calls a Python function (about 0.05 µs, four times a slot's read), and one step of a
# chain reads half a dozen
# arrays (`_sum_to`, which every `Add` and `Mul` backward calls, is written again for that).
# `_fill` sets `_data` and `_version = 0` itself: a Variable that a function has just made has
# not been changed. And `Function.__call__` stamps the function with the clock itself, where
# step 37 did it in `set_creator`; `_backprop` looks at the inputs only when the clock has moved
# since the function ran, which in a training loop it never does between a forward and its
# backward.
#
# The clock also catches the commonest slip of a training loop, a `model.cleargrads()` left
# out (PyTorch's forgotten `zero_grad()`): each backward then adds its gradient to the one the
# last update already used, so every step goes further in the old directions. A leaf notes the
# tick at which its gradient began (`_grad_tick`, set when `x.grad` was `None`); a backward
# that adds to a gradient begun before the leaf's last change (`x._version` is later) marks the
# leaf, and the next change of a marked leaf, the update, warns. Adding alone is no mistake:
# step 36 lets a first backward add to an old gradient and drops the sum with `cleargrad()`
# before the backward that counts, and gradients of several batches may be added up between two
# updates. The hot path pays one store per leaf and backward; the test sits on the branch that
# adds, which a loop that clears its gradients never takes.

# %%
#| export dezero_like/core.py
import sys
import warnings
import weakref

import numpy as np

from dezero_like.core import (
    _F,
    Config,
    Variable,
    _data_clock,
    _global_hooks,
    _outside_package,
    _to_common_scale,
    _writeable,
    as_array,
)
from dezero_like import cuda

_new_object = object.__new__

# CuPy's array types met so far (step 23's dictionary, the same object): a function's result on
# a GPU is an array already, and needs no call of as_array
_GPU_ARRAYS = cuda._CUPY_MODULES


def _fill(v, data, requires_grad, creator, index, generation, name=None):
    """Set every field of the Variable ``v`` (the one place that does); return ``v``."""
    v._data = data  # the array behind the property data; no tick of the clock (step 37)
    v._version = 0
    v.name = name
    v.grad = None
    v.creator = creator
    v.index = index  # which output of its creator this variable is
    v.generation = generation
    v.requires_grad = requires_grad
    v.loss_scale = None  # set on a leaf by backward(loss_scale=...)
    v._grad_tick = None  # on a leaf, the tick at which its gradient began (_accumulate_leaf)
    return v


def _make_variable(data, requires_grad):
    """Variable(data) without the input checks: for arrays a function just produced."""
    return _fill(_new_object(Variable), data, requires_grad, None, 0, 0)


def _as_inputs(inputs, name="a function"):
    """The inputs of a function call, with numbers and arrays wrapped as constants.

    A constant is a Variable with ``requires_grad=False``: backward sends it no
    gradient. It takes the dtype of the first Variable among the inputs (see
    ``as_array``). When every input is a Variable already, ``inputs`` comes back
    as it is. ``name`` (the function's) is for the error about a ``.data`` set by hand.
    """
    for x in inputs:
        if type(x) is not Variable and not isinstance(x, Variable):
            break
    else:
        return inputs
    like = None
    for x in inputs:
        if isinstance(x, Variable):
            like = x._data
            break
    result = []
    for x in inputs:
        if not isinstance(x, Variable):
            try:
                data = as_array(x, like)
            except AttributeError as error:  # like has no dtype: x.data = [1, 2] by hand?
                if like is not None:
                    _refuse_not_an_array(name, like, error)
                raise
            x = Variable(data, requires_grad=False) if type(data) is not np.ndarray \
                else _make_variable(data, False)
        result.append(x)
    return tuple(result)


def _sum_to(gx, shape):
    """Undo broadcasting: sum ``gx`` down to ``shape`` (a no-op when shapes agree)."""
    return gx if gx._data.shape == shape else _F().sum_to(gx, shape)  # _data: no property call


def _add_grads(a, b):
    """a + b for two gradients, as a new object (never ``+=``: see step 15).

    With create_graph the sum must be differentiable, so it is a recorded Add;
    otherwise the arrays are added directly, which is faster and keeps the
    sum out of function hooks' view.
    """
    if Config.enable_backprop:
        return a + b
    y = a._data + b._data  # two 0-d arrays add up to a NumPy scalar: make it an array again
    if type(y) is np.ndarray or type(y) in _GPU_ARRAYS:  # an array (a GPU's too): no call
        return _make_variable(y, False)
    return _make_variable(as_array(y), False)


def _accumulate_leaf(x, gx, loss_scale=None):
    """Add ``gx`` to the gradient of the leaf ``x`` (in ``x``'s dtype, writable).

    An integer or boolean leaf keeps its gradient's own dtype: rounding a
    gradient to integers would turn 1/3 into 0.
    """
    data = gx._data
    if data.dtype != x._data.dtype and x._data.dtype.kind in "fc":
        gx = _F().astype(gx, x._data.dtype)
    elif not _writeable(data):
        gx = _make_variable(data.copy(), False) if not Config.enable_backprop \
            else _F().astype(gx, data.dtype, copy=True)
    if x.grad is None:
        x.grad = gx
        x.loss_scale = loss_scale  # the scale of the sum that starts here (step 67)
        x._grad_tick = _data_clock.now  # and the tick it starts at
    else:
        tick = x._grad_tick  # None: a gradient set by hand; -1: marked already
        if tick is not None and x._version > tick >= 0:  # begun before x's last change
            x._grad_tick = -1  # no cleargrads() since: _changed_in_place warns at the update
            _mixed_leaves.append(weakref.ref(x))
        if x.loss_scale != loss_scale:
            gx = _to_common_scale(x, gx, loss_scale)
        x.grad = _add_grads(x.grad, gx)
    if _global_hooks:
        for hook in _global_hooks:
            if hasattr(hook, "leaf_postprocess"):  # a hook need not subclass FunctionHook
                hook.leaf_postprocess(x)


# the leaves marked by _accumulate_leaf (weakly: none is kept alive here)
_mixed_leaves = []


def _changed_in_place(*variables):
    """Tick the clock and stamp ``variables`` with the tick (step 37): each assignment to
    ``.data`` (an optimizer's step, ``p.data -= lr * p.grad.data``), and a change that no
    assignment announced. One of them holding a gradient that a backward added to one from
    before its last change (``_accumulate_leaf`` marked it) is updated with a forgotten
    cleargrads(): warn, once per change."""
    if _mixed_leaves:
        _warn_if_mixed(variables)
    _data_clock.now += 1
    for v in variables:
        v._version = _data_clock.now


def _warn_if_mixed(variables):
    """Warn if one of ``variables`` is a marked leaf that holds a gradient. The warning unmarks
    every leaf: one per update, not one per parameter (an update may change its parameters one
    by one, each ``p.data -= ...`` coming here); the marks of leaves since cleared go too."""
    marked = [v for r in _mixed_leaves if (v := r()) is not None and v._grad_tick == -1]
    held = next((v for v in variables if v._grad_tick == -1 and v.grad is not None), None)
    if held is None:
        _mixed_leaves[:] = [weakref.ref(v) for v in marked]
        return
    for v in marked:
        v._grad_tick = _data_clock.now  # begun before this update: a next add marks it again
    _mixed_leaves.clear()
    _warn_mixed_update(held)


def _warn_mixed_update(x):
    """Say that ``x`` is updated with a gradient added to one from before its last update."""
    _, level = _outside_package(sys._getframe(3))  # 1 is _warn_if_mixed, 2 _changed_in_place
    name = x.name or f"a parameter of shape {tuple(x._data.shape)}"
    warnings.warn(
        f"{name} is being updated with a gradient that a backward() added to the one it held "
        "before its last update: no cleargrads() in between, so the step mixes the gradient at "
        "the old values with the one at the new, and goes further each iteration. Call "
        "model.cleargrads() (x.cleargrad() for a Variable) before each loss.backward(), as "
        "PyTorch's zero_grad(); to add the gradients of several batches on purpose, take the "
        "step after the last of them", RuntimeWarning, stacklevel=level + 4)


# %% [markdown]
# When a forward fails with a TypeError or an AttributeError, `_refuse_two_devices`
# looks for the commonest causes, an input whose `.data` was set by hand to
# something that is not an array, and arrays on two devices, and says so. It runs
# only after a failure, so the hot path pays nothing for it; any other error goes
# on as it was raised.

# %%
#| export dezero_like/core.py
from dezero_like import cuda


def _refuse_two_devices(name, arrays, error):
    """Raise a clear error, from ``error``, if ``arrays`` lie on both the CPU and the GPU.

    Called only after a forward has failed with a TypeError (or an AttributeError), so
    the check costs nothing when all is well; CuPy's own message would be "Unsupported
    type". An error that already speaks of devices (the package's own checks) is left as
    it is.
    It first looks for an input whose ``.data`` is not an array at all (``x.data = 3`` or
    ``x.data = [1, 2]`` by hand), which fails in forward with an AttributeError about
    ``dtype`` or ``shape``.
    """
    for a in arrays:
        _refuse_not_an_array(name, a, error)
    on_gpu = [cuda.is_cupy_array(a) for a in arrays]
    if True in on_gpu and False in on_gpu and "device" not in str(error):
        where = ", ".join(f"{tuple(a.shape)} on the {'GPU' if g else 'CPU'}"
                          for a, g in zip(arrays, on_gpu, strict=True))
        raise TypeError(
            f"{name} got inputs on two devices ({where}); put them on one device "
            "first: model.to_gpu() for a model, cuda.as_cupy(x) (or a DataLoader's to_gpu()) "
            "for its input batch, v.to_gpu() or v.to_cpu() for a Variable"
        ) from error


def _refuse_not_an_array(name, data, error):
    """If ``data``, the ``.data`` of an input of ``name``, is not an array, say so."""
    if _is_array(data) or isinstance(data, np.generic):  # np.float64 from 0-d arithmetic
        return
    if isinstance(data, Variable):
        fix = ("a Variable's .data holds the array itself: x.data = x.data - lr * x.grad "
               "stores a Variable, since x.grad is one; write x.grad.data")
    elif data is None:
        fix = "its .data is None: give it an array, or use a Variable that holds one"
    else:
        fix = (f"an assignment such as x.data = {data!r:.40} put it there; write "
               "x.data = np.array(...)")
    kind = type(data).__name__
    raise TypeError(f"{name} got a Variable whose .data is {'an' if kind[0] in 'aeiou' else 'a'} "
                    f"{kind}, not an array: {fix}") from error


def _refuse_second_call(function):
    if all(ref() is None for ref in function.outputs):
        return  # the first graph's outputs are gone: no backward can reach this node again
    name = type(function).__name__
    raise RuntimeError(
        f"this {name} object is already a node of a graph whose backward has not run; a "
        f"second call would overwrite what that backward reads. Make a new one for each "
        f"call: {name}()(x), not f = {name}(); f(a); f(b) (an object may be called again "
        "once backward has gone through its first graph)")


# %% [markdown]
# `Function.__call__` first refuses an object that is already a node of a graph whose
# backward has not run (a second call would overwrite what that backward reads; after the
# backward has freed the graph, the object may be used again). Then one pass over the inputs
# gathers their arrays, whether each needs a gradient, and the newest generation (a single
# Variable input, the most common case, skips the loop). One loop wraps the outputs, whether
# a graph is recorded or not.

# %%
#| export dezero_like/core.py Function
import weakref

from dezero_like.core import (
    Config,
    Variable,
    _as_inputs,
    _data_clock,
    _fill,
    _global_hooks,
    _hooks_for,
    _make_variable,
    _new_object,
    _refuse_second_call,
    _refuse_two_devices,
    as_array,
)


def __call__(self, *inputs):
    if self.outputs and not self._freed:  # a second call would overwrite what backward
        _refuse_second_call(self)           # of the first reads (once freed, nothing does)
    if not Config.enable_backprop and not _global_hooks and not self._hooks:
        # Nothing records and nobody watches (inference, and every function
        # inside a plain backward): compute and wrap, nothing more.
        if len(inputs) == 1 and isinstance(inputs[0], Variable):
            try:
                ys = self.forward(inputs[0]._data)  # one input: no list to build
            except (TypeError, AttributeError) as error:  # a try costs nothing until raised
                _refuse_two_devices(type(self).__name__, (inputs[0]._data,), error)
                raise
        else:
            xs = []
            for x in _as_inputs(inputs, type(self).__name__):
                xs.append(x._data)
            try:
                ys = self.forward(*xs)
            except (TypeError, AttributeError) as error:
                _refuse_two_devices(type(self).__name__, xs, error)
                raise
        if type(ys) is not tuple:
            if type(ys) is not np.ndarray and type(ys) not in _GPU_ARRAYS:
                ys = as_array(ys)  # a NumPy scalar (from 0-d input) becomes a 0-d array
            return _make_variable(ys, False)
        outputs = []
        for y in ys:
            outputs.append(_make_variable(y if type(y) is np.ndarray else as_array(y), False))
        return outputs[0] if len(outputs) == 1 else outputs
    if len(inputs) == 1 and isinstance(inputs[0], Variable):
        x = inputs[0]
        xs = (x._data,)
        needs = (x.requires_grad,)
        gen = x.generation
    else:
        inputs = _as_inputs(inputs, type(self).__name__)  # numbers, arrays: constants
        xs = []
        needs = []
        gen = 0
        for x in inputs:
            xs.append(x._data)
            needs.append(x.requires_grad)
            if x.generation > gen:
                gen = x.generation
        needs = tuple(needs)
    record = Config.enable_backprop and True in needs
    if record:
        self.needs_input_grad = needs
    hooks = _hooks_for(self) if self._hooks else _global_hooks
    if hooks:
        for hook in hooks:
            hook.forward_preprocess(self, xs)
    try:
        ys = self.forward(*xs)
    except (TypeError, AttributeError) as error:
        _refuse_two_devices(type(self).__name__, xs, error)
        raise
    # forward returns an array or a tuple of arrays; NumPy may hand back a
    # scalar (np.float64) for 0-d input, which becomes a 0-d array again.
    if type(ys) is tuple:
        ys = list(ys)
        for i, y in enumerate(ys):
            if type(y) is not np.ndarray and type(y) not in _GPU_ARRAYS:
                ys[i] = as_array(y)
    else:
        ys = [ys if type(ys) is np.ndarray or type(ys) in _GPU_ARRAYS else as_array(ys)]
    if hooks:
        for hook in hooks:
            hook.forward_postprocess(self, xs, ys)
    if not record:  # no graph: plain results
        if len(ys) == 1:
            return _make_variable(ys[0], False)
        return [_make_variable(y, False) for y in ys]
    # Record the graph: outputs point to this function, which points to (only
    # what it needs of) its inputs and holds its outputs weakly.
    self.generation = gen
    self._stamp = _data_clock.now  # what set_creator did (step 37): a later write is newer
    if self._freed:  # an object used again after its first graph's backward freed it
        self._freed = False
    outputs = []
    refs = []
    for y in ys:
        v = _fill(_new_object(Variable), y, True, self, len(outputs), gen + 1)
        outputs.append(v)
        refs.append(weakref.ref(v))
    self.outputs = refs
    n = len(inputs)
    if n == 2:
        self._duplicates = inputs[0] is inputs[1]
    elif n > 2:
        self._duplicates = len(set(map(id, inputs))) < n
    keep = self._retained_in
    if keep is not None:  # a computed input backward does not read: a stand-in
        kept = []
        for i, x in enumerate(inputs):
            kept.append(x if x.creator is None or i in keep else x._as_node())
        inputs = tuple(kept)
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
            y = _fill(_new_object(Variable), data, True, self, i, self.generation + 1)
        result.append(y)
    return tuple(result)


# %% [markdown]
# The backward loop. It is step 69's, with the queue kept in two places: `nxt`
# holds the one function waiting, and the heap is used only once a second one
# waits. A gradient that a backward returned as an array is wrapped here, and
# `_backward_step` no longer builds a new tuple. The checks of `_check_grads`
# (step 41) moved where they cost least: `_backward_step` compares only the
# number of gradients, and the loop, which holds each gradient anyway, compares
# its shape with its input's; `_check_grads` runs only to raise its error.
# `_call_backward` wraps the one gradient of a one-input backward (the common case) in a
# tuple itself, one function call fewer per function than asking `_grads_tuple`.
# The loop also catches the slip of step 33: `gx = x.grad; gx.backward()` with no
# `x.cleargrad()` in between adds the second derivative to the first, in `x.grad` itself. When
# the variable being differentiated is the leaf's own `.grad`, `_warn_gradient_into_itself`
# says so.

# %%
#| export dezero_like/core.py
import heapq
import warnings
import weakref

from dezero_like.core import (
    _accumulate_leaf,
    _add_grads,
    _backward_stack,
    _check_grads,
    _check_unchanged,
    _data_clock,
    _from_backward,
    _global_hooks,
    _grads_tuple,
    _hooks_for,
    _make_variable,
)


def _backward_step(f, gys):
    """One step of the chain rule: the gradients of ``f``'s inputs, one per input."""
    hooks = _hooks_for(f) if f._hooks else _global_hooks
    if hooks:  # only hooks read the stack of running backwards (step 65)
        for hook in hooks:
            hook.backward_preprocess(f, gys)
        _backward_stack.append(f)
        try:
            gxs = _call_backward(f, gys)
        finally:
            _backward_stack.pop()
        for hook in hooks:
            hook.backward_postprocess(f, gys, gxs)
    else:
        gxs = _call_backward(f, gys)
    if len(gxs) != len(f.inputs):
        _check_grads(f, gxs)  # raises: a gradient too many or too few
    return gxs


def _call_backward(f, gys):
    """``f.backward(*gys)`` as a tuple (``backward_accumulate`` for repeated inputs)."""
    if f._duplicates:  # the same variable in several slots, as in x * x
        return f.backward_accumulate(*gys)
    gxs = f.backward(*gys)
    if type(gxs) is Variable:  # one gradient, the common case: no call of _grads_tuple
        return (gxs,)
    return _grads_tuple(gxs, f)


def _backprop(y, seed, retain_grad, retain_graph, loss_scale=None):
    """Apply the chain rule from ``y`` (whose gradient is ``seed``) back to the leaves.

    A function is queued when its first output gradient arrives and runs only
    after every function of a higher generation has run, so by then all of its
    output gradients are complete (step 17). Queued functions wait in a heap
    ordered by (-generation, arrival), so equal generations run in the order
    they arrived. On a plain chain there is never more than one function
    waiting; it is kept in ``nxt`` and the heap is not touched at all.
    """
    if y.creator is None:
        _accumulate_leaf(y, seed, loss_scale)
        return
    heappush, heappop = heapq.heappush, heapq.heappop
    nxt = y.creator
    nxt._grads = [None] * len(nxt.outputs)
    nxt._grads[y.index] = seed
    heap = []
    count = 0  # arrival counter: the tie-breaker between equal generations
    try:
        while nxt is not None or heap:
            if nxt is not None:
                f, nxt = nxt, None
            else:
                f = heappop(heap)[2]
            gys = f._grads
            f._grads = None
            if f._freed:
                raise RuntimeError(
                    f"Trying to backward through {type(f).__name__} a second time, but its "
                    "saved data was freed after the first backward. Pass retain_graph=True "
                    "to the first backward() call if you need to call backward twice. (An RNN "
                    "trained on pieces of a sequence needs loss.unchain_backward() after each "
                    "update instead: keeping the graph would make it grow without end.)"
                )
            if f._stamp != _data_clock.now:  # some .data was assigned since f ran: one that
                _check_unchanged(f)              # f's backward reads? (step 37)
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
                if type(gx) is not Variable and not isinstance(gx, Variable):
                    gx = _make_variable(as_array(gx), False)  # backward returned an array
                data = x._data  # None for a stand-in (step 69)
                if data is not None and gx._data.shape != data.shape:
                    _check_grads(f, gxs)  # raises: a gradient of the wrong shape (step 41)
                c = x.creator
                if c is None:
                    if x.grad is y:  # gx = x.grad; gx.backward() with no x.cleargrad() between
                        _warn_gradient_into_itself(x)
                    _accumulate_leaf(x, gx, loss_scale)
                    continue
                slots = c._grads
                if slots is None:  # c's first gradient: queue c
                    slots = c._grads = [None] * len(c.outputs)
                    if nxt is None and not heap:
                        nxt = c
                    else:
                        if nxt is not None:  # a second one waits: both go to the heap
                            count += 1
                            heappush(heap, (-nxt.generation, count, nxt))
                            nxt = None
                        count += 1
                        heappush(heap, (-c.generation, count, c))
                i = x.index
                slots[i] = gx if slots[i] is None else _add_grads(slots[i], gx)
            if not retain_graph:
                f.release()
    finally:  # an exception left work queued: forget it
        for item in heap:
            item[2]._grads = None
        if nxt is not None:
            nxt._grads = None


def _warn_gradient_into_itself(x):
    """Say that the gradient being differentiated is also the one it is added to (step 33)."""
    name = f"{x.name}.grad" if x.name else "x.grad"
    warnings.warn(
        f"backward() of {name} adds its result to {name} itself: without a cleargrad() in "
        "between, the second derivative is added to the first, and .grad ends as f' + f'', "
        "not f''. Write gx = x.grad, then x.cleargrad(), then gx.backward() (step 33)",
        RuntimeWarning, stacklevel=4)  # 4: the caller of y.backward(), past _backprop


# %% [markdown]
# The operators. `_binary` decides, once per operator, whether the Function is
# needed at all. It also sends `*` and `/` of float16 with a Python number to step 67's
# `Float16WithNumber` (`_IN_FLOAT32`), with the number on either side (`F.mul(0.1, x)` as
# `F.mul(x, 0.1)`); an array of the other byte order (`'>f2'`) is float16 too, as a Variable
# holds it as a native copy (step 67). The test sits where the code already knows that
# `x1` is no Variable (the array path) or is about to make a Function (the graph path), so
# an operation between two Variables pays for it only when a graph is recorded.

# %%
#| export dezero_like/core.py
import operator

from dezero_like.core import _NUMBERS, Add, Div, Float16WithNumber, Mul, Sub, _make_variable

# float16 with a Python number: Float16WithNumber's op, by whether the number is the dividend
_IN_FLOAT32 = {Mul: ("mul", "mul"), Div: ("div", "rdiv")}
# a Variable holds its array in this machine's byte order (step 67: '>f2' becomes a native
# copy), so a float16 one has NumPy's one float16 dtype: `is` is one comparison
_FLOAT16 = np.dtype(np.float16)


def _binary(function, op, x0, x1, reverse=False):
    """Apply a two-operand operator; ``x0`` is normally the Variable whose operator was called.

    ``reverse`` is for the reflected operators: ``2.0 - x`` calls ``x.__rsub__(2.0)``,
    which computes ``x1 - x0``. When no graph is recorded and no hook is watching,
    the Function object is skipped and ``op`` runs on the arrays directly. That is
    the case for every operator inside a plain ``backward()`` (gradients are computed
    with these same operators) and under no_grad(). With a graph (or a hook) the
    Function runs as usual, so create_graph and the hooks see every operation.
    A float16 Variable times or over a Python number, on either side, goes to
    ``Float16WithNumber`` (step 67).
    """
    if Config.enable_backprop or _global_hooks or not isinstance(x0, Variable):
        if function in _IN_FLOAT32:
            if type(x1) in _NUMBERS:  # x * 0.1 (x.data = [1, 2] has no dtype: below)
                if isinstance(x0, Variable) and getattr(x0._data, "dtype", None) is _FLOAT16:
                    return Float16WithNumber(_IN_FLOAT32[function][reverse], x1)(x0)
            elif type(x0) in _NUMBERS and isinstance(x1, Variable) \
                    and getattr(x1._data, "dtype", None) is _FLOAT16:
                # F.mul(0.1, x), F.div(1.0, x): the number first, x0 / x1 is c / x
                return Float16WithNumber(_IN_FLOAT32[function][not reverse], x0)(x1)
        return function()(x1, x0) if reverse else function()(x0, x1)
    a = x0._data
    try:
        if isinstance(x1, Variable):
            b = x1._data
        elif function in _IN_FLOAT32 and a.dtype is _FLOAT16 and type(x1) in _NUMBERS:
            return Float16WithNumber(_IN_FLOAT32[function][reverse], x1)(x0)
        else:  # an array of a's own type (a mask, on either device) is taken as it is
            b = x1 if type(x1) is type(a) else as_array(x1, a)
        y = op(b, a) if reverse else op(a, b)
        if type(y) is np.ndarray or type(y) in _GPU_ARRAYS:  # an array (a GPU's too): no call
            return _make_variable(y, False)
        return _make_variable(as_array(y), False)  # a NumPy scalar, from two 0-d arrays
    except (TypeError, AttributeError) as error:  # a .data set by hand (x.data = [1, 2])?
        datas = [v.data for v in (x0, x1) if isinstance(v, Variable)]
        _refuse_two_devices(function.__name__, datas, error)
        raise


def add(x0, x1):
    return _binary(Add, operator.add, x0, x1)


def mul(x0, x1):
    return _binary(Mul, operator.mul, x0, x1)


def sub(x0, x1):
    return _binary(Sub, operator.sub, x0, x1)


def rsub(x0, x1):
    return _binary(Sub, operator.sub, x0, x1, reverse=True)


def div(x0, x1):
    return _binary(Div, operator.truediv, x0, x1)


def rdiv(x0, x1):
    return _binary(Div, operator.truediv, x0, x1, reverse=True)


# %% [markdown]
# ## Before and after
#
# The package you imported is the finished one: it has only the fast path, so the
# numbers at the top of this step are all "after". For the "before", the repository
# builds the package as it stood at step 69 (`tools/export.py upto 69`, into a
# temporary folder) and times the same small program with both, each in a fresh
# Python process: that is `benchmarks/hot_path.py`. The next cell runs it in its
# quick mode (best of 3 repeats, a few seconds), prints its table and draws it.
#
# Each case is a loop of one kind of step: a chain of `F.sin` on a 1-element array
# with its backward, a chain of `y * 0.5 + 0.25` (two operators per step) with its
# backward, `F.sin` under `no_grad()`, and a short chain of `F.sin` on a
# 1000×1000 array. The time is microseconds per step of the chain (per call for
# `no_grad`), and the ratio is step 69's time over step 70's.
#
# It needs the repository beside the package, as in a clone installed with
# `pip install -e .`. A package installed from GitHub (the set-up cell in Colab)
# comes without the repository's `steps/`, `tools/` and `benchmarks/`; then the
# cell says so and draws nothing, and `python benchmarks/hot_path.py` in a clone
# gives the same table.

# %%
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

from dezero_like.plot import output_dir, save_figure  # noqa: E402

repo = Path(dz.__path__[0]).parent  # the folder that holds the package (a clone, or site-packages)
bench = repo / "benchmarks" / "hot_path.py"
timings = {}  # case -> (step 69, step 70), microseconds per step
if bench.is_file() and (repo / "tools" / "export.py").is_file():
    with tempfile.TemporaryDirectory() as tmp:
        numbers = Path(tmp) / "hot_path.json"
        run = subprocess.run([sys.executable, str(bench), "--quick", "--json", str(numbers)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{bench} --quick failed:\n{run.stderr}")
        print(run.stdout)
        measured = json.loads(numbers.read_text())
    for case, before in measured["step 69"].items():
        timings[case] = (before, measured["step 70"][case])
else:
    print(f"{bench} is not here: dezero_like was installed without its repository, so the "
          "package of step 69 cannot be built. In a clone of the repository, installed with "
          "pip install -e ., this cell measures both.")

# %%
if timings:
    small = [case for case in timings if "1000x1000" not in case]
    big = [case for case in timings if "1000x1000" in case]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), width_ratios=[len(small), len(big)])
    for ax, cases in zip(axes, (small, big), strict=True):
        at = np.arange(len(cases))
        before = [timings[c][0] for c in cases]
        after = [timings[c][1] for c in cases]
        ax.bar(at - 0.2, before, 0.4, label="step 69 (plain core)", color="tab:gray")
        ax.bar(at + 0.2, after, 0.4, label="step 70 (fast path)", color="tab:blue")
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            ax.annotate(f"{b / a:.2f}x", (i, max(b, a)), xytext=(0, 3),
                        textcoords="offset points", ha="center", fontsize=8)
        ax.set_xticks(at, [textwrap.fill(c, 18) for c in cases], fontsize=8)
        ax.set_ylim(0, 1.15 * max(before + after))
        ax.set_ylabel("microseconds per step")
    axes[0].set_title("1-element arrays: the framework's overhead", fontsize=10)
    axes[1].set_title("1000×1000: NumPy's work", fontsize=10)
    axes[0].legend(fontsize=8, loc="upper right")
    fig.suptitle("Step 69 against step 70, best of 3 (over each pair: step 69's time / step 70's)",
                 fontsize=10)
    fig.tight_layout()
    save_figure(fig, output_dir(70) / "before_after.png")
    plt.show()

# %% [markdown]
# Look at the ratios rather than the microseconds: both columns come from the same
# run on the same machine, so their ratio is what carries over to another machine,
# while the times themselves do not. On the 1-element cases nearly all of a step's
# time is the framework's own Python, and that is what steps 69 and 70 differ in.
# On the 1000×1000 case the same Python runs once per step too, but NumPy's work on
# a million numbers hides it: the two bars should be close to equal, and what gap
# there is comes and goes from run to run (run the cell again). A small model,
# an RNN's time steps, or an optimizer looping over many small parameters are
# made of calls like the left-hand ones.

# %% [markdown]
# ## Exercise
# 1. `__slots__` makes a typo loud. Assign `x.gard = None` to a Variable (a
#    typo for `grad`), catch the `AttributeError` it raises, and store the
#    error's text, a string, in `message`.
# 2. **Implement then test: the operator fast path.** Write
#    `binary(function, op, x0, x1)`, the core of `_binary` for a Variable `x0`
#    (leave out the reflected operators and the hook test). When a graph is
#    recorded (the switch that step 19's `no_grad` turns off), call the
#    Function as usual. Otherwise create no Function at all: `op` (a function
#    of the `operator` module) works on raw arrays, and `x1` may be a Variable
#    or a plain number. The result is a Variable, but a constant: nothing will
#    differentiate it (step 63). The self-check counts the Function objects
#    created, with and without a graph.

# %%
#| exercise
message = ...  # the text of the AttributeError raised by x.gard = None

# %%
#| solution
message = None
try:
    x.gard = None
except AttributeError as e:
    message = str(e)

# %%
#| check
assert isinstance(message, str), (
    f"message should be the error's text, got {message!r}: catch the error the assignment "
    "raises and keep its text as a string"
)
assert "gard" in message, f"the message should name the attribute 'gard', got {message!r}"
print(f"self-check passed: the typo is refused with {message!r}")

# %%
#| exercise
def binary(function, op, x0, x1):
    raise NotImplementedError(
        "Exercise (step 70): the Function when a graph is recorded, op on the arrays otherwise"
    )

# %%
#| solution
def binary(function, op, x0, x1):
    if dz.Config.enable_backprop:
        return function()(x0, x1)
    b = x1.data if isinstance(x1, dz.Variable) else x1
    return dz.Variable(np.asarray(op(x0.data, b)), requires_grad=False)

# %%
#| check
import operator  # noqa: E402

from dezero_like.utils import gradient_check  # noqa: E402

created = []


class CountedMul(dz.core.Mul):
    def __init__(self):
        created.append(self)


rng = np.random.default_rng(0)
u = dz.Variable(rng.normal(size=(2, 3)))
w = dz.Variable(rng.normal(size=(2, 3)))
y = binary(CountedMul, operator.mul, u, w)
assert len(created) == 1 and y.creator is created[0], (
    "with a graph recorded, binary must create and call one Function, as before this step"
)
gradient_check(lambda v: binary(CountedMul, operator.mul, v, w), u.data)
created.clear()
with dz.no_grad():
    y_fast = binary(CountedMul, operator.mul, u, 3.0)
    y_fast2 = binary(CountedMul, operator.mul, u, w)
assert not created, (
    f"{len(created)} Function object(s) were created under no_grad(): the fast path applies "
    "op to the arrays directly"
)
assert isinstance(y_fast, dz.Variable) and y_fast.creator is None, "return a Variable, no graph"
assert not y_fast.requires_grad and not y_fast2.requires_grad, (
    "the fast path's result is a constant (nothing will differentiate it): create it as a "
    "Variable that does not require grad"
)
assert np.allclose(y_fast.data, u.data * 3.0) and np.allclose(y_fast2.data, u.data * w.data), (
    "the fast path computes something else: apply op to the raw data of both operands"
)
print("self-check passed: binary records a graph when asked and skips the Function otherwise")
