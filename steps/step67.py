# %% [markdown]
# # Step 67: Loss scaling for float16 training
#
# Half precision (`float16`) halves the memory of every array and runs much
# faster on GPUs with tensor cores, which is why mixed-precision training uses
# it (Micikevicius et al., 2018, "Mixed Precision Training", introduced loss
# scaling and float32 master weights). Many large models now use bfloat16
# instead, which keeps float32's exponent range and needs no loss scaling.
# float16's weakness is range: it has 5 exponent bits instead of float32's 8.

# %%
import numpy as np

import dezero_like.functions as F
from dezero_like.layers import Linear
from dezero_like.optimizers import SGD

fi = np.finfo(np.float16)
print(f"float16: largest {fi.max}, smallest normal {fi.smallest_normal:.3g}, "
      f"smallest subnormal {fi.smallest_subnormal:.3g}")
with np.errstate(over="ignore"):
    print("np.float16(1e-8) =", np.float16(1e-8), "   np.float16(70000) =", np.float16(70000.0))

# %% [markdown]
# Anything below about $3 \times 10^{-8}$ rounds to zero ("underflow"). The
# loss and the weights are rarely that small, but gradients often are: the
# gradient of a mean over $N$ samples carries a factor $1/N$, and backprop
# multiplies many small factors together. A gradient that underflows is not
# slightly wrong; it is zero, and that part of the model stops learning.
#
# ## The fix: scale the loss, then unscale the gradients
#
# Backprop is linear in its seed: starting it from $S$ instead of $1$ gives
# $S\,\partial L / \partial \theta$ everywhere, as if we had differentiated
# $S \cdot L$. Choosing $S$ (a power of two, so scaling is exact) moves every
# gradient of the backward pass up out of the underflow zone. Before the
# update the optimizer divides by $S$ again, and the step is the one float32
# would have taken.
#
# In `dezero_like`: `loss.backward(loss_scale=S)` multiplies the seed by $S$;
# every leaf that receives a gradient remembers $S$ in `.loss_scale`; the
# optimizer divides each gradient by it before `update` and resets it.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `Variable.__init__` (a `loss_scale` field), `Variable.cleargrad`
# (it forgets the scale too), `Variable.backward` and `Variable._seed` (they gain `loss_scale`),
# `Variable._set_data` (it warns when a hand-written update meets a scaled gradient, or one of
# a loss left unreduced),
# `_backprop` and `_accumulate_leaf` (leaves remember the scale), and gains `_to_common_scale`,
# `_times`, `_from_backward`, `_warn_scaled_update`, `_ones_seeded`, `_warn_summed_update` (with
# `_unreduced_loss` and `_REDUCE_THE_LOSS`, the words it shares with `update()`'s warning) and
# `Float16WithNumber`, and changes `mul`, `div` and `rdiv` (float16 with a Python number);
# `optimizers` changes `Optimizer.update` (it divides the scale out, skips an update whose
# gradients overflowed, and warns after the backward of a loss left unreduced) and gains
# `Optimizer.update_all`, `_count_overflowed`, `_warn_overflow`, `_warn_summed_loss`,
# `_check_grads`, and `_without_gradient` and `_watch_gradless` (a warning for parameters that
# never get a gradient, below).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# The seed is multiplied by $S$ in `_seed`; the loop hands $S$ to
# `_accumulate_leaf`, which writes it on every leaf that receives a gradient;
# `Optimizer.update` divides each such gradient by its scale before the hooks and
# the update. The scale is stored on the leaf rather than on the optimizer so
# that a gradient is never divided twice, and so that gradients from an unscaled
# backward (which leave `loss_scale` at `None`) are left alone.
#
# A leaf's `.grad` is one sum with one scale. When two backwards add into it (gradient
# accumulation over micro-batches) with different scales, or one with none, the two parts are
# first brought to one scale, the larger (`_to_common_scale`); otherwise the optimizer would
# divide part of the sum by the wrong number. `cleargrad` forgets the scale together with the
# gradient. A gradient that `retain_grad` kept on an output is a result: `backward` never takes
# it for a hand-set seed (`_from_backward` remembers which gradients those are).
#
# Setting `data` (in `__init__` too) also brings an array stored in the other byte order
# (`'>f2'`, big-endian, as a file written for another machine may hold; step 53's `load_idx`
# turns MNIST's numbers around the same way) to this machine's order, as a copy. NumPy
# computes with either, but the functions that treat float16 apart (in float32, one rounding)
# ask whether the dtype is float16, and `np.dtype('>f2') == np.float16` is False: such an array
# would take the float16 path that overflows, its mean of 3000s `inf`.

# %%
#| export dezero_like/core.py Variable
import math
import numbers
import warnings

from dezero_like import cuda
from dezero_like.core import (
    _F,
    Variable,
    _backprop,
    _cut,
    _is_array,
    _on_two_devices,
    _ones_seeded,
    as_array,
    using_config,
)


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
    self.generation = 0
    self.requires_grad = requires_grad


def cleargrad(self):
    """Forget the gradient and the loss scale it was made with."""
    self.grad = None
    self.loss_scale = None
    if _from_backward.data:  # (usually empty) a gradient put back after this is a seed again
        _from_backward.pop(self, None)


def backward(self, gradient=None, retain_grad=False, create_graph=False,
             retain_graph=False, loss_scale=None):
    """Compute the gradient of this variable with respect to every leaf.

    * ``gradient``: the seed dL/d(self). Default: the ``.grad`` of this output when the user
      set it (as in steps 6-9; not one an earlier ``retain_grad`` kept), else ones.
      With ``create_graph``, a Variable seed that requires grad is used as it is, so the
      gradients are functions of it too (its own gradient can be taken next).
    * ``retain_grad``: also keep ``.grad`` on the intermediate variables.
    * ``create_graph``: record the backward pass itself, so that the gradients
      can be differentiated again (implies ``retain_graph``).
    * ``retain_graph``: keep what the functions saved, so backward can run again.
    * ``loss_scale``: multiply the seed by this number; leaves remember it in
      ``loss_scale`` and optimizers divide it out before the update.
    """
    if not self.requires_grad:
        raise RuntimeError(
            "backward() was called on a variable that does not require grad: it was made "
            "under no_grad(), or from inputs with requires_grad=False, or from arrays only "
            "(a loss of y.data, not of the Variable y: .data is an array, outside the graph, "
            "so no parameter before it would learn), or it is a gradient "
            "from a backward() without create_graph=True (pass create_graph=True to the first "
            "backward to differentiate its gradients again, step 30), or a gradient that does "
            "not depend on the inputs (relu's or a linear function's is constant, so the next "
            "derivative is 0)"
        )
    if self.data is None:
        raise RuntimeError("backward() was called on a graph node that holds no data")
    if loss_scale is not None:
        if _is_array(loss_scale) and loss_scale.ndim == 0:  # np.array(8.0) is a number too
            loss_scale = loss_scale.item()
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real):
            raise TypeError(f"loss_scale must be a number, got {loss_scale!r}")
        if not 0 < loss_scale < math.inf:
            raise ValueError(f"loss_scale must be a finite number > 0, got {loss_scale!r}")
    if gradient is None and self.grad is not None and self.creator is not None and (
            _from_backward.get(self, _dead)() is not self.grad):
        gradient = self.grad  # a seed set by hand: y.grad = ...; y.backward() (steps 6-9)
    if self.creator is None and self in _cut:  # a leaf now: its graph was cut (step 61)
        warnings.warn(
            "backward() on a variable whose graph unchain_backward() cut: it reaches nothing, "
            "so no parameter gets a gradient. Call loss.backward() first, then "
            "loss.unchain_backward()", RuntimeWarning, stacklevel=2)
    seed = self._seed(gradient, loss_scale, create_graph)
    if gradient is None and self.data.size != 1:  # a loss of several numbers, seeded with ones
        leaves = _ones_seeded.leaves_of(self)  # the update of one of its leaves warns (below)
        with using_config("enable_backprop", create_graph):
            _backprop(self, seed, retain_grad, retain_graph or create_graph, loss_scale)
        _ones_seeded.note(self.data.shape, leaves)
        return
    with using_config("enable_backprop", create_graph):
        _backprop(self, seed, retain_grad, retain_graph or create_graph, loss_scale)


def _seed(self, gradient, loss_scale=None, create_graph=False):
    """The first gradient dL/d(self): ones or ``gradient`` (checked), times the scale.

    With ``create_graph``, a Variable seed that requires grad is used itself, not
    copied, so the gradients are functions of it too (v^T J can then be
    differentiated with respect to v); nothing changes a gradient in place, so
    sharing the caller's Variable is safe.
    """
    data = self.data
    keep = create_graph and isinstance(gradient, Variable) and gradient.requires_grad
    if gradient is None:
        # a boolean graph's seed is floating: True + True is True, so gradients would be logic;
        # so is an unsigned one's: the gradient of -x is -1, which uint8 would wrap to 255
        dtype = np.float64 if data.dtype.kind in "bu" else data.dtype
        seed = cuda.get_array_module(data).ones(data.shape, dtype)
    else:
        given = gradient
        if isinstance(gradient, Variable):
            gradient = gradient.data
        if not _is_array(gradient):
            raise TypeError(
                "backward(gradient=...) takes an ndarray or a Variable, "
                f"got {type(gradient).__name__}"
            )
        if gradient.shape != data.shape:
            raise ValueError(
                f"backward(gradient=...) has shape {gradient.shape}, but the output "
                f"has shape {data.shape}; the seed must match the output's shape"
            )
        apart = _on_two_devices(data, gradient)
        if apart:
            on, seed_on = apart
            raise TypeError(
                f"backward(gradient=...) is on the {seed_on}, but the output is on the {on}; "
                "put the seed on the output's device (cuda.as_cupy or cuda.as_numpy)"
            )
        # an integer or boolean output keeps the seed's dtype (0.5 must not round to 0)
        dtype = data.dtype if data.dtype.kind in "fc" else gradient.dtype
        if keep:
            seed = _F().astype(given, dtype)
            return seed if loss_scale is None else seed * float(loss_scale)
        seed = gradient.astype(dtype)  # a copy: .grad never aliases the caller's array
    if loss_scale is not None:
        # the scale becomes a scalar of the seed's dtype (np.float64(1024) must not turn
        # float32 gradients into float64; on a GPU a scalar is a kernel argument, where an
        # array would be a copy host -> device); a 0-d product is a NumPy scalar: as_array
        seed = as_array(seed * seed.dtype.type(loss_scale))
    return Variable(seed, requires_grad=False)


# %% [markdown]
# Only `optimizer.update()` divides the scale out. An update written by hand, as in step 46
# (`p.data -= lr * p.grad.data`), reads the scaled gradient and steps $S$ times too far, with
# no error: at $S = 1024$ the weights fly off at once. Every such update ends by assigning
# `p.data` (step 37's setter), so the setter now warns when the parameter still carries a
# scale. Optimizers divide first and reset `loss_scale`, so their own `p.data -= ...` pays one
# comparison per parameter and never warns. Nor does the package when it writes `p.data` for
# another reason, with a scale still there (`update()` skipped an overflowing step, below):
# `load_weights` restoring a checkpoint is no update by hand; `optimizer.update_one(p)` called
# by hand, which skips `update()`'s division, is one.

# %%
#| export dezero_like/core.py Variable
import warnings

from dezero_like.core import _changed_in_place, _ones_seeded, _warn_summed_update


def _set_data(self, value):
    if self.loss_scale is not None:  # p.data -= lr * p.grad.data, with a gradient still scaled
        _warn_scaled_update(self)
    if _ones_seeded.marks:  # p.data -= lr * p.grad.data, with a gradient of an unreduced loss
        _warn_summed_update(self)
    if not getattr(getattr(value, "dtype", None), "isnative", True):  # '>f2': a native copy,
        value = value.astype(value.dtype.type)  # NumPy's own dtype object, float16's included
    self._data = value
    _changed_in_place(self)  # x.data = a, x.data += 1, x.data -= lr * g: all come here


# %%
#| export dezero_like/core.py
import sys
import warnings

from dezero_like.core import _outside_package


def _warn_scaled_update(p):
    caller = sys._getframe(2)  # 1 is the setter
    writer = caller.f_globals.get("__name__", "")
    if writer.startswith("dezero_like.") and writer != "dezero_like.optimizers":
        return  # the package's own write (load_weights): no update; an update_one called by
        # hand, which skips update()'s division, still warns, at the line that called it
    _, level = _outside_package(caller)
    s = p.loss_scale  # the message names no parameter: one warning for the whole loop
    warnings.warn(
        f"a {type(p).__name__}'s data changed while its gradient is still multiplied by "
        f"loss_scale={s:g} (backward(loss_scale={s:g})): an update written "
        f"by hand with p.grad steps {s:g} times too far. Call optimizer.update(), which divides "
        "the scale out first; or divide it out yourself before the update: "
        "p.grad = p.grad / p.loss_scale; p.loss_scale = None", RuntimeWarning,
        stacklevel=level + 3)


# %%
#| export dezero_like/core.py
import heapq
import itertools
import weakref

import numpy as np

from dezero_like.core import (
    _F,
    Variable,
    _add_grads,
    _backward_step,
    _check_unchanged,
    _global_hooks,
    _writeable,
)


def _accumulate_leaf(x, gx, loss_scale=None):
    """Add ``gx`` to the gradient of the leaf ``x`` (in ``x``'s dtype, writable).

    An integer or boolean leaf keeps its gradient's own dtype: rounding a
    gradient to integers would turn 1/3 into 0.
    """
    data = gx.data
    if data.dtype != x.data.dtype and x.data.dtype.kind in "fc":
        gx = _F().astype(gx, x.data.dtype)
    elif not _writeable(data):
        gx = _F().astype(gx, data.dtype, copy=True)
    if x.grad is None:
        x.grad = gx
        x.loss_scale = loss_scale  # the scale of the sum that starts here (None: unscaled)
    else:
        if x.loss_scale != loss_scale:
            gx = _to_common_scale(x, gx, loss_scale)
        x.grad = _add_grads(x.grad, gx)
    for hook in _global_hooks:
        if hasattr(hook, "leaf_postprocess"):  # a hook need not subclass FunctionHook
            hook.leaf_postprocess(x)


# the gradients retain_grad kept (weakly: a gradient's graph may lead back to its variable), by
# variable: backward() takes an output's .grad for its seed only when the user set it (steps
# 6-9), never when an earlier backward left it there
_from_backward = weakref.WeakKeyDictionary()


def _dead():
    """What a dead weak reference returns: the default of ``_from_backward.get``."""


def _to_common_scale(x, gx, loss_scale):
    """Bring ``x.grad`` and the new term ``gx`` to one scale, the larger; return the term.

    A leaf's gradient is one sum with one scale, which the optimizer divides out. When two
    backwards with different scales (or one unscaled) add into it, the side with the smaller
    scale is multiplied up: scaling down would lose the small values loss scaling protects.
    """
    old = 1.0 if x.loss_scale is None else float(x.loss_scale)
    new = 1.0 if loss_scale is None else float(loss_scale)
    if new > old:
        x.grad = _times(x.grad, new / old)
        x.loss_scale = loss_scale
        return gx
    return _times(gx, old / new)


def _times(g, factor):
    """``g * factor``; float16 is multiplied in float32 (a factor above 65504 is inf in float16)."""
    if g.data.dtype == np.float16 and g.creator is None:
        return Variable((g.data.astype(np.float32) * factor).astype(np.float16),
                        requires_grad=False)
    return g * factor


def _backprop(y, seed, retain_grad, retain_graph, loss_scale=None):
    """Apply the chain rule from ``y`` (whose gradient is ``seed``) back to the leaves."""
    if y.creator is None:
        _accumulate_leaf(y, seed, loss_scale)
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
        _check_unchanged(f)  # an input or output changed since f ran? (step 37)
        gys = []
        for ref in f.outputs:
            out = ref()  # None when that output was dropped: no gradient reached it
            gys.append(None if out is None else out.grad)
        gxs = _backward_step(f, gys)
        for x, gx in zip(f.inputs, gxs):
            if gx is None or not x.requires_grad:
                continue
            if x.creator is None:
                _accumulate_leaf(x, gx, loss_scale)
            else:
                x.grad = gx if x.grad is None else _add_grads(x.grad, gx)
                add_func(x.creator)
        if not retain_grad:
            for ref in f.outputs:
                out = ref()
                if out is not None:
                    out.grad = None
        else:  # kept gradients are results, never seeds for a later backward (below)
            for ref in f.outputs:
                out = ref()
                if out is not None and out.grad is not None:
                    _from_backward[out] = weakref.ref(out.grad)
        done.append(f)
    if not retain_graph:
        for f in done:
            f.release()


# %% [markdown]
# In `Optimizer.update`, the parameters are taken once each (`Layer.params()` lists each once,
# but a target that writes its own `params()` may reach one twice, weights tied by hand), and a
# gradient set by hand, or by a hook, must be a Variable of its parameter's shape
# (`_check_grads`: NumPy would broadcast a smaller one into the step). The
# division by the scale makes a new gradient with `_new_grad` rather
# than dividing in place: a gradient array may be shared by several parameters, and would then be
# divided more than once. The unscaled float16 gradient is small (about 1e-3 is common), and its
# square smaller still: that is why the optimizers keep their running averages in float32 for a
# float16 parameter (`_state`, step 47), where Adam's `g * g` would round to 0 and its step
# would be `m / 0`. `loss_scale` is reset to `None` once it has been used. If a scale was
# divided out, `_count_overflowed` then counts the gradients that hold inf or NaN, with one
# flag per gradient kept on its device and one sum read back; if any does, the update stops
# there (before the hooks, `prepare` and `update_all`, so SGD's GPU path of step 71 skips
# too), puts the scaled gradients back with their scale, and `_warn_overflow` says what to
# do (see "Too large a scale overflows" below). The hooks then
# see the unscaled gradients, in the order `add_hook` keeps (every `FreezeParam` first, step 47).
# The last line
# hands every parameter that still has a gradient (a hook, `FreezeParam`, may have removed some)
# to `update_all`, which calls `update_one` on each: one place where an optimizer may instead
# update them all together, as SGD does on a GPU in step 71. Then every parameter it stepped is
# marked as changed (`_changed_in_place`, step 37), since a kernel that writes a parameter's
# array on the GPU does not go through `p.data = ...`.
#
# A parameter that gets no gradient is left as it is, without a word, and that hides a mistake:
# a forward that goes on from `h.data` (an array, outside the graph) or from `Variable(h.data)`
# cuts the layers before it off the loss, and a layer made in `__init__` but never called in
# `forward` is not part of the network at all; the rest of the model trains, so nothing fails.
# So for the first three updates of a model, `_watch_gradless` notes the parameters that have
# no gradient, and warns once about those that got none in all three (three, because the
# hidden-to-hidden weights of an RNN get none in an update made after its first time step).
# BatchNorm's running statistics never get one, nor do parameters frozen with `FreezeParam` or
# made with `requires_grad=False`: they are left out.

# %%
#| export dezero_like/optimizers.py
import warnings

import numpy as np

from dezero_like import cuda
from dezero_like.core import Variable
from dezero_like.optimizers import FreezeParam

_WATCHED_UPDATES = 3  # how many updates a parameter may go without a gradient unremarked


def _without_gradient(optimizer):
    """{name: Parameter} of the target's parameters that have data but no gradient, and that
    should have one: not BatchNorm's running statistics, not frozen, not requires_grad=False."""
    named, owners = {}, {}
    flatten = getattr(optimizer.target, "_flatten_params", None)
    if flatten is None:  # a target that writes its own params(): no names, no check
        return {}
    flatten(named, owners=owners)
    frozen = {id(p) for hook in optimizer.hooks if isinstance(hook, FreezeParam)
              for p in hook.frozen}
    return {key: p for key, p in named.items()
            if p.grad is None and p.data is not None and p.requires_grad
            and id(p) not in frozen and owners[key][1] not in ("avg_mean", "avg_var")}


def _watch_gradless(optimizer):
    """Over the first updates of a model, keep the names of the parameters that never got a
    gradient; warn once about them (a layer cut off the loss by .data, or never called in
    forward). Names and the model's id only: nothing kept alive, and a copy can be pickled."""
    watch = optimizer.__dict__.get("_gradless")
    if watch is not None and watch[0] == id(optimizer.target):
        if watch[1] is None:
            return  # done for this model
        count, now = watch[1] + 1, _without_gradient(optimizer)
        never = [key for key in watch[2] if key in now]
    else:  # the first update of this model
        count, never = 1, list(_without_gradient(optimizer))
    if never and count < _WATCHED_UPDATES:
        optimizer.__dict__["_gradless"] = (id(optimizer.target), count, tuple(never))
        return
    optimizer.__dict__["_gradless"] = (id(optimizer.target), None, None)
    if not never:
        return
    shown = ", ".join(never[:6]) + (f" and {len(never) - 6} more" if len(never) > 6 else "")
    warnings.warn(
        f"update(): {shown} got no gradient in any of the first {_WATCHED_UPDATES} updates, so "
        f"they have not changed while the rest of the {type(optimizer.target).__name__} learns. "
        "Their layer reaches the loss only through .data (an array, outside the graph) or a "
        "Variable made again from it, or it is not called in forward: use the Variables "
        "themselves. To keep them fixed on purpose, say so: "
        "optimizer.add_hook(FreezeParam(layer))", RuntimeWarning, stacklevel=3)


def _check_grads(params, who):
    """Refuse a gradient that is not a Variable of its parameter's shape (one set by hand, or by
    a hook): NumPy would broadcast a smaller one into the step. Refuse one on the other device
    too (a model moved between forward and backward), which the step could not use."""
    for p in params:
        if not isinstance(p.grad, Variable) or p.grad._data.shape != p._data.shape:
            got = (f"a {type(p.grad).__name__}" if not isinstance(p.grad, Variable) else
                   f"of shape {p.grad.shape}")
            raise ValueError(f"the gradient of {p.name or 'a parameter'} {p.shape} is {got} "
                             f"({who}): it must be a Variable of the parameter's shape "
                             "(p.grad = Variable(g))")
        if type(p.grad._data) is not type(p._data) and (  # the same type: the usual, quick
                cuda.is_cupy_array(p.grad._data) != cuda.is_cupy_array(p._data)):
            on = "the GPU" if cuda.is_cupy_array(p._data) else "the CPU"
            raise TypeError(
                f"the gradient of {p.name or 'a parameter'} {p.shape} is not on {on}, where the "
                "parameter is: was the model moved (to_gpu() or to_cpu()) between the forward "
                "and the backward that made it? Move the model before its forward; now call "
                "model.cleargrads() and run forward and backward again")


def _count_overflowed(grads):
    """How many of the arrays ``grads`` hold an inf or a NaN, in one pass that ends in one read:
    a 0-d flag per array stays on its device, the flags are stacked and summed there, and only
    that count comes to the host (on a GPU: one device-to-host sync, as PyTorch's GradScaler
    has, and only in an update that divides a loss scale out)."""
    flags = {}
    for g in grads:
        xp = cuda.get_array_module(g)
        flags.setdefault(xp, []).append(xp.isfinite(g).all())
    return sum(len(f) - int(cuda.as_numpy(xp.stack(f).sum())) for xp, f in flags.items())


def _warn_overflow(bad, total, scaled):
    """The update was skipped: say which scale overflowed which dtype, and what to do."""
    scale = max(s for _, _, s in scaled)
    dtypes = {g.dtype for _, g, _ in scaled}
    dtype = np.dtype(np.float16) if np.float16 in dtypes else max(dtypes, key=lambda d: d.itemsize)
    limit = f" (largest {float(np.finfo(dtype).max):g})" if dtype.kind == "f" else ""
    warnings.warn(
        f"update() skipped: the gradients of {bad} of {total} parameters hold inf or NaN with "
        f"loss_scale={scale:g}: the scaled gradients overflowed {dtype.name}{limit}, and the step "
        "would have written inf/NaN into the weights. Nothing changed: not the parameters, not "
        "the optimizer's state; the gradients keep their scale. Lower the scale (e.g. "
        f"backward(loss_scale={scale / 2:g})) and run forward and backward again (if no scale "
        "helps, the loss itself is inf or NaN). To skip such updates silently (a dynamic loss "
        "scaler that halves the scale after one), "
        "warnings.filterwarnings('ignore', 'update\\(\\) skipped')",
        RuntimeWarning, stacklevel=3)


# %% [markdown]
# `update` also looks at the seed of the last backward. `backward()` of an output of several
# numbers starts from ones, which is right for the elementwise demos of the early steps: each
# $x_i$ gets $\partial y_i / \partial x_i$. For a loss it is a slip: `loss = (y - t) ** 2`
# (no mean) then `loss.backward()` gives the gradients of the *sum* of its $N$ elements, $N$
# times those of the mean, and the optimizer steps $N$ times too far, with no error. PyTorch
# refuses such a `backward()` without a gradient; here it stays allowed, and `backward` notes
# which gradients it made from an output it seeded with ones because none was given
# (`_ones_seeded`: the output's shape, and weak references to each leaf and the gradient it
# left there). While a parameter still holds such a gradient, `update()` warns, once per
# backward; so does an update written by hand, `p.data -= lr * p.grad.data`, of a `Parameter`
# (a model's weight, shared by every example of the batch). Nothing warns after
# `backward(gradient=...)` or a scalar loss, nor for a plain `Variable` such as an elementwise
# demo's `x` (each $x_i$ rightly gets its own $y_i$'s derivative), even when its backward runs
# between the loss's backward and the update. The leaves
# are found by a walk over the graph before backward frees it; a training loop with a scalar
# loss pays one test per backward, per `update()` and per assignment to `.data`.

# %%
#| export dezero_like/core.py
import math
import sys
import warnings
import weakref

from dezero_like.core import Parameter, _outside_package


class _SeedNote:
    """The gradients of the backwards of an output of more than one number that ``backward()``
    seeded with ones, no gradient given (a loss left unreduced). ``marks`` holds, per such
    backward, the output's shape and, for each leaf it reached, weak references to the leaf and
    to the gradient it left there: a leaf whose ``.grad`` is still that one holds the gradient
    of a sum. Empty in a training loop with a scalar loss, so the checks cost one test."""

    __slots__ = ("marks",)

    def __init__(self):
        self.marks = []

    @staticmethod
    def leaves_of(y):
        """The leaves of ``y``'s graph that take a gradient (found before backward frees it)."""
        if y.creator is None:
            return [y] if y.requires_grad else []
        leaves, seen, todo = [], {id(y.creator)}, [y.creator]
        while todo:
            for x in todo.pop().inputs:
                c = x.creator
                if c is None:
                    if x.requires_grad:
                        leaves.append(x)
                elif id(c) not in seen:
                    seen.add(id(c))
                    todo.append(c)
        return leaves

    def note(self, shape, leaves):
        """Remember the gradients that a backward of an output of ``shape`` left on ``leaves``;
        forget those of earlier ones that no leaf holds any more."""
        held = {id(x): (weakref.ref(x), weakref.ref(x.grad)) for x in leaves if x.grad is not None}
        self.marks = [(s, h) for s, h in self.marks if any(
            (x := leaf()) is not None and x.grad is not None and grad() is x.grad
            for leaf, grad in h.values())]
        if held:
            self.marks.append((tuple(shape), held))

    def shape_in(self, params):
        """The shape of the unreduced loss whose gradient one of ``params`` still holds, else
        None. The notes of every such loss go: one warning per backward, not per parameter."""
        found = [i for i, (_, held) in enumerate(self.marks) if any(
            (refs := held.get(id(p))) is not None and refs[0]() is p and p.grad is not None
            and refs[1]() is p.grad for p in params)]
        if not found:
            return None
        shape = self.marks[found[0]][0]
        self.marks = [m for i, m in enumerate(self.marks) if i not in found]
        return shape


_ones_seeded = _SeedNote()


def _unreduced_loss(shape):
    """The unreduced-loss warnings' words on a loss of ``shape``: the number of its elements,
    and what a backward() from ones made of it."""
    n = math.prod(shape)
    return n, (f"a loss of shape {tuple(shape)}, not a single number: backward() started from "
               f"ones, so it gave the gradients of the sum of its {n} elements ({n} times those "
               "of their mean)")


_REDUCE_THE_LOSS = ("Reduce the loss to one number before backward(): F.mean_squared_error(y, t), "
                    "or F.mean(loss) (F.sum(loss) if the sum is what you want)")


def _warn_summed_update(p):
    """Warn when the data of ``p``, a Parameter, is assigned by hand while it holds a gradient
    that backward() of an unreduced loss made (``_ones_seeded``): the step is N times too far."""
    if not isinstance(p, Parameter) or getattr(p, "grad", None) is None:  # a plain Variable:
        return  # maybe a demo's x; or one being made (the __init__ of steps 67-69 sets data)
    caller = sys._getframe(2)  # 1 is the setter
    if caller.f_globals.get("__name__", "").startswith("dezero_like."):
        return  # the package's own write: update() has warned already; load_weights is no step
    shape = _ones_seeded.shape_in((p,))
    if shape is None:
        return
    n, loss = _unreduced_loss(shape)
    _, level = _outside_package(caller)
    warnings.warn(
        f"a {type(p).__name__}'s data changed while its gradient comes from backward() of "
        f"{loss}, and an update written by hand with p.grad steps {n} times too far. "
        f"{_REDUCE_THE_LOSS}", RuntimeWarning, stacklevel=level + 3)


# %%
#| export dezero_like/optimizers.py
import sys
import warnings

from dezero_like.core import _REDUCE_THE_LOSS, _outside_package, _unreduced_loss


def _warn_summed_loss(shape):
    """Warn that the gradients come from a backward of an unreduced loss of ``shape``."""
    _, loss = _unreduced_loss(shape)
    _, level = _outside_package(sys._getframe(2))  # 1 is update()
    warnings.warn(
        f"update() uses gradients from backward() of {loss}, and the step is that much too "
        f"large. {_REDUCE_THE_LOSS}. PyTorch refuses backward() of a non-scalar without a "
        "gradient", RuntimeWarning, stacklevel=level + 3)


# %%
#| export dezero_like/optimizers.py Optimizer
import weakref

from dezero_like.core import _changed_in_place, _ones_seeded
from dezero_like.optimizers import (_check_grads, _count_overflowed, _floats_only, _new_grad,
                                    _same_grads_as_last_update, _warn_no_gradient,
                                    _warn_overflow, _warn_repeated_update, _warn_summed_loss,
                                    _watch_gradless, _wide)


def update(self):
    """Apply one update to every parameter of the target that has a gradient.

    Gradients of ``backward(loss_scale=S)`` are divided by ``S`` first, and then checked for
    inf and NaN in one pass ending in one read of a count (on a GPU: one device-to-host sync
    per such update, as PyTorch's ``GradScaler`` has; an update without a scale checks
    nothing). If any is not finite, the scale overflowed: the update is skipped with a
    warning, the parameters, the optimizer's state and the hooks untouched, and the gradients
    left scaled as backward made them.
    """
    if self.target is None:
        raise RuntimeError("call optimizer.setup(model) before optimizer.update()")
    # a Layer's list is kept between steps (step 45); another object lists its own
    listed = getattr(self.target, "_param_list", self.target.params)()
    # by identity: a parameter that params() lists twice (weights tied by hand) steps once
    params = list({id(p): p for p in listed if p.grad is not None}.values())
    if not params:
        _warn_no_gradient()
    else:
        if _same_grads_as_last_update(self, params):
            _warn_repeated_update()  # no backward since the last update (step 47)
        _watch_gradless(self)  # some parameters get no gradient: only in the first updates
        if _ones_seeded.marks:  # some backward was of a loss left unreduced: a sum's gradients
            shape = _ones_seeded.shape_in(params)  # in these parameters? (once per backward)
            if shape is not None:
                _warn_summed_loss(shape)
    _check_grads(params, "set by hand?")
    scaled = []  # (parameter, its scaled gradient, the scale): only after backward(loss_scale=)
    for p in params:
        if p.loss_scale is not None:
            scaled.append((p, p.grad, p.loss_scale))
            # a new array: grads may be shared between parameters (never divide in place)
            g = p.grad.data  # float16 is divided in float32: a scale of 2**16 is inf in float16
            unscaled = _wide(g) / float(p.loss_scale)
            p.grad = _new_grad(unscaled.astype(g.dtype) if g.dtype == np.float16 else unscaled)
            p.loss_scale = None
    if scaled:  # an inf or NaN would go into the weights: skip the update (GradScaler's rule)
        bad = _count_overflowed([p.grad.data for p, _, _ in scaled])
        if bad:
            for p, grad, scale in scaled:  # the gradients as backward left them, scale and all
                p.grad, p.loss_scale = grad, scale
            self.__dict__["_last_grads"] = [weakref.ref(p.grad) for p in params]
            _warn_overflow(bad, len(params), scaled)
            return
    for f in self.hooks:
        f(params)
    params = [p for p in params if p.grad is not None]  # a hook may remove a grad
    if self.hooks:
        _check_grads(params, "after the hooks")
    _floats_only(self, params)
    self.__dict__["_stepped"] = self.__dict__.get("_stepped", 0) + 1  # updates (step 47)
    self.prepare()
    self.update_all(params)
    self.__dict__["_last_grads"] = [weakref.ref(p.grad) for p in params]
    # every parameter stepped counts as changed, however update_one wrote it (p.data -= ...
    # ticks the clock of step 37 by itself; a GPU kernel, step 71, or p.data[...] = ... does
    # not): a graph built before this update then refuses to backward with the new values
    _changed_in_place(*params)


def update_all(self, params):
    """``update_one`` for each parameter; a method may update them together (SGD, step 71)."""
    for p in params:
        self.update_one(p)


# %% [markdown]
# ### float16 times a Python number
#
# Scaling is multiplication by a number, and NumPy 2 does that in float16 in two roundings:
# the Python number is first rounded to float16 (0.1 becomes 0.0999755859375, 70000 becomes
# `inf`), then the product. PyTorch computes `x * c` and `x / c` of a float16 tensor in
# float32, with `c` as a float32, and rounds once: about a third of the elements of `x * 0.1`
# differ by one unit in the last place, and `x / 70000` is 0 in NumPy. So `*` and `/` between a
# float16 Variable and a Python `int` or `float` go to `Float16WithNumber`, which computes in
# float32 and rounds once, and whose backward (`gy * c`, `gy / c`) goes through the same
# operators, so the gradients are rounded once too, also with `create_graph=True`. `c / x` is
# rounded once as well (PyTorch computes `x.reciprocal() * c`, two roundings). The function
# forms take the number on either side: `F.mul(0.1, x)` is `0.1 * x`. `+`, `-` and
# `**` are left to NumPy: PyTorch rounds the number to float16 there too. A drawn graph and
# `debug_mode`'s messages name the function that ran, so `x * 0.1` of a float16 `x` shows as
# `Float16WithNumber` where float32 shows `Mul`.

# %%
#| export dezero_like/core.py
import numpy as np

from dezero_like.core import Div, Function, Mul, Variable

_NUMBERS = frozenset((int, float))  # Python numbers (bool is no number here: x * True is exact)


class Float16WithNumber(Function):
    """``x * c``, ``x / c`` or ``c / x`` (``op`` "mul", "div" or "rdiv") for float16 ``x`` and
    a Python number ``c``: computed in float32, with ``c`` as a float32, and rounded to float16
    once, as PyTorch does. dy/dx is ``c``, ``1/c`` or ``-c/x**2``."""

    def __init__(self, op, c):
        self.op = op
        self.c = c

    def forward(self, x):
        self.retain_inputs((0,) if self.op == "rdiv" else ())  # only c / x reads x again
        a = x.astype(np.float32)
        c = np.float32(self.c)
        y = a * c if self.op == "mul" else a / c if self.op == "div" else c / a
        return y.astype(x.dtype)

    def backward(self, gy):
        if self.op == "mul":  # a float16 gy comes back here: the gradient is rounded once
            return gy * self.c
        if self.op == "div":
            return gy / self.c
        (x,) = self.inputs
        return gy * (-self.c / x) / x


def mul(x0, x1):
    if type(x1) in _NUMBERS and isinstance(x0, Variable) and x0._data.dtype.char == "e":
        return Float16WithNumber("mul", x1)(x0)
    if type(x0) in _NUMBERS and isinstance(x1, Variable) and x1._data.dtype.char == "e":
        return Float16WithNumber("mul", x0)(x1)  # F.mul(0.1, x): the number first
    return Mul()(x0, x1)


def div(x0, x1):
    if type(x1) in _NUMBERS and isinstance(x0, Variable) and x0._data.dtype.char == "e":
        return Float16WithNumber("div", x1)(x0)
    if type(x0) in _NUMBERS and isinstance(x1, Variable) and x1._data.dtype.char == "e":
        return Float16WithNumber("rdiv", x0)(x1)  # F.div(1.0, x) is 1.0 / x
    return Div()(x0, x1)


def rdiv(x0, x1):
    if type(x1) in _NUMBERS and isinstance(x0, Variable) and x0._data.dtype.char == "e":
        return Float16WithNumber("rdiv", x1)(x0)
    if type(x0) in _NUMBERS and isinstance(x1, Variable) and x1._data.dtype.char == "e":
        return Float16WithNumber("div", x0)(x1)  # F.rdiv(7, x) is x / 7
    return Div()(x1, x0)


# %% [markdown]
# The test is written out in each operator, the type of `x1` first, with no function call:
# these operators run many times in every step of every model. Step 70 moves it into the
# operators' fast path, where a product of two Variables inside a backward pays nothing.

# %% [markdown]
# ## An experiment: linear regression with small targets
#
# We fit $t = x w$ with $N = 32768$ samples and small true weights (about
# $3 \times 10^{-5}$). The mean squared error gives each sample's prediction the
# gradient $2(y_n - t_n)/N$, here at most about $2 \times 10^{-8}$: below the
# $3 \times 10^{-8}$ under which float16 rounds to zero.

# %%
rng = np.random.default_rng(0)
N, D = 32768, 8
x_data = rng.standard_normal((N, D))
w_true = rng.uniform(0.5, 1.5, (D, 1)) * 3e-5
t_data = x_data @ w_true


def train(dtype, loss_scale=None, steps=1, lr=0.25):
    """Fit w from zero with SGD; return the weights (as float64) after ``steps`` updates."""
    layer = Linear(1, in_size=D, nobias=True, dtype=dtype)
    layer.W.data[...] = 0
    optimizer = SGD(lr=lr).setup(layer)
    x, t = x_data.astype(dtype), t_data.astype(dtype)
    for _ in range(steps):
        loss = F.mean_squared_error(layer(x), t)
        layer.cleargrads()
        loss.backward(loss_scale=loss_scale)
        optimizer.update()
    return layer.W.data.astype(np.float64)


w32 = train(np.float32)
w16 = train(np.float16)
w16_scaled = train(np.float16, loss_scale=1024.0)
print("first update of w[:3]")
print("  float32, no scale:       ", w32[:3, 0])
print("  float16, no scale:       ", w16[:3, 0])
print("  float16, loss_scale=1024:", w16_scaled[:3, 0])
rel = np.abs(w16_scaled - w32).max() / np.abs(w32).max()
print(f"float16 with scale vs float32: max relative difference {rel:.1e}")

# %% [markdown]
# Where the per-sample gradients fall on float16's number line, before and after
# the scale (at the start `w = 0`, so each one is $2 t_n / N$ in size). Shaded: the
# two zones where float16 loses a number, rounded to 0 below half the smallest
# subnormal, turned into `inf` above the largest value. Between the smallest
# subnormal and the smallest normal number, float16 keeps fewer significant bits.

# %%
import matplotlib.pyplot as plt  # noqa: E402

from dezero_like.plot import output_dir, save_figure  # noqa: E402

per_sample = np.abs(2 * t_data[:, 0] / N)
per_sample = per_sample[per_sample > 0]
bins = np.logspace(-14, 7, 106)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.axvspan(bins[0], float(fi.smallest_subnormal) / 2, color="tab:red", alpha=0.12)
ax.axvspan(float(fi.max), bins[-1], color="tab:red", alpha=0.12)
ax.hist(per_sample, bins=bins, alpha=0.75, label="unscaled: all round to 0")
ax.hist(per_sample * 1024, bins=bins, alpha=0.75, label="loss_scale=1024: kept")
ax.set_xscale("log")
ax.set_xlim(bins[0], bins[-1])
for value, name in ((fi.smallest_subnormal, "smallest subnormal"),
                    (fi.smallest_normal, "smallest normal"), (fi.max, "largest")):
    ax.axvline(float(value), color="k", ls=":", lw=1)
    ax.annotate(f" {name}", (float(value), 1), xycoords=("data", "axes fraction"),
                rotation=90, va="top", fontsize=8)
ax.set_xlabel("size of one sample's gradient")
ax.set_ylabel("samples")
ax.set_title("The per-sample gradients against float16's range")
ax.legend(loc="center", bbox_to_anchor=(0.66, 0.55), fontsize=8)
save_figure(fig, output_dir(67) / "gradient_range.png")
plt.show()

# %% [markdown]
# Without the scale, float16 learned nothing: every per-sample gradient
# rounded to zero, so the gradient of `W` is exactly zero. With $S = 1024$ the
# update agrees with float32 to a fraction of a percent. Over a few steps:

# %%
def mse(w):
    return float(((x_data @ w - t_data) ** 2).mean())


print(f"{'steps':>5} {'float32':>10} {'float16':>10} {'float16 S=1024':>15}")
for steps in (0, 2, 5, 10):
    row = [mse(train(dt, s, steps)) for dt, s in
           ((np.float32, None), (np.float16, None), (np.float16, 1024.0))]
    print(f"{steps:>5} {row[0]:>10.2e} {row[1]:>10.2e} {row[2]:>15.2e}")

# %% [markdown]
# ## Too large a scale overflows
#
# The seed lives in the loss's dtype, so in float16 $S$ itself must stay below
# 65504, and so must every scaled gradient. Overshoot and the seed is `inf`:
# the gradients become NaN (or `inf`). Stepping with them would write NaN into
# every weight, and one such update ruins the model for good. So after dividing
# the scale out, `update()` looks for inf and NaN in all the gradients at once;
# if it finds any, it **skips the update**: it leaves the weights and the
# optimizer's state (momentum, Adam's averages) as they were, and warns, naming
# the scale and the dtype it overflowed:

# %%
import warnings  # noqa: E402

layer = Linear(1, in_size=D, nobias=True, dtype=np.float16)
layer.W.data[...] = 0
optimizer = SGD(lr=0.25).setup(layer)
loss = F.mean_squared_error(layer(x_data.astype(np.float16)), t_data.astype(np.float16))
with np.errstate(over="ignore", invalid="ignore"):
    loss.backward(loss_scale=2.0**16)
print("loss_scale=2**16, the gradient of W[:3]:", layer.W.grad.data[:3, 0])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    optimizer.update()
print("update() warned:", caught[0].message)
w_bad = layer.W.data.astype(np.float64)
print("W[:3] after the skipped update:", w_bad[:3, 0])

# %% [markdown]
# A skipped update costs one step of training; NaN weights cost the run. The
# check is one pass over the gradients that ends in a single number read back
# (on a GPU, one wait for the device per update), and only an update that
# divides a loss scale out pays it.
#
# Skipping is half of what frameworks do: they pick $S$ *dynamically*
# (PyTorch's `GradScaler`, Chainer's dynamic loss scaling): start high; when a
# gradient contains inf or NaN, skip that update and halve $S$; after many good
# steps in a row, double it again. Here the halving is yours to do: the warning
# says what to try, and once you halve on purpose you can silence it with the
# filter it names.
# Real mixed-precision training also keeps a float32 "master" copy of the
# weights, so that tiny updates are not lost when added to large weights; here
# the whole model is float16 to keep the experiment small.

# %% [markdown]
# ## Exercise
# 1. Write `has_overflow(params)`, the test `update()` now runs before each
#    update with a loss scale (and a dynamic loss scaler too): True when any
#    parameter's gradient contains inf or NaN (parameters without a gradient
#    are skipped).
# 2. **Implement then test: dividing the scale out.** Write
#    `unscale_grads(params)`, what `Optimizer.update` does first: every
#    parameter that still carries a loss scale gets its gradient divided by
#    that scale, in a *new* Variable (never in place: gradients may be shared,
#    step 15), and is then marked as carrying no scale any more, so that a
#    second call changes nothing. The self-check compares the result with an
#    unscaled backward.

# %%
#| exercise
def has_overflow(params):
    raise NotImplementedError(
        "Exercise (step 67): True when some p.grad (not None) has a value that is not "
        "np.isfinite"
    )

# %%
#| solution
def has_overflow(params):
    return any(not np.isfinite(p.grad.data).all() for p in params if p.grad is not None)

# %%
#| check
from dezero_like.core import Parameter, Variable  # noqa: E402


def scaled_grads(scale):
    layer = Linear(1, in_size=D, nobias=True, dtype=np.float16)
    layer.W.data[...] = 0
    loss = F.mean_squared_error(layer(x_data.astype(np.float16)), t_data.astype(np.float16))
    with np.errstate(over="ignore", invalid="ignore"):
        loss.backward(loss_scale=scale)
    return list(layer.params())


assert has_overflow(scaled_grads(2.0**16)) is True, (
    "with a scale of 2**16 the float16 gradients overflow: look for inf or NaN with np.isfinite"
)
assert has_overflow(scaled_grads(1024.0)) is False, (
    "with a scale of 1024 every gradient is finite: has_overflow should be False"
)


def params_with_grads(*grads):
    """float16 parameters whose gradients are ``grads`` (None: no gradient)."""
    params = []
    for g in grads:
        p = Parameter(np.zeros(2, np.float16))
        p.grad = None if g is None else Variable(np.array(g, np.float16))
        params.append(p)
    return params


assert has_overflow(params_with_grads(None, [1.0, 2.0], [np.inf, 0.0])) is True, (
    "an inf in the last parameter's gradient was missed: look at every parameter that has a "
    "gradient, and test for inf as well as NaN (np.isfinite)"
)
assert has_overflow(params_with_grads([1.0, 2.0], [0.0, np.nan])) is True, "a NaN was missed"
assert has_overflow(params_with_grads(None, [1.0, 2.0])) is False, (
    "finite gradients (and a parameter without one) are no overflow"
)
print("self-check passed: has_overflow spots the overflowing scale")

# %%
#| exercise
def unscale_grads(params):
    raise NotImplementedError(
        "Exercise (step 67): divide each scaled gradient by its scale, into a new Variable"
    )

# %%
#| solution
from dezero_like.core import Variable


def unscale_grads(params):
    for p in params:
        if p.loss_scale is not None:
            p.grad = Variable(p.grad.data / float(p.loss_scale), requires_grad=False)
            p.loss_scale = None

# %%
#| check
rng_check = np.random.default_rng(0)
xs_check = rng_check.normal(size=(16, 3)).astype(np.float32)
ts_check = rng_check.normal(size=(16, 2)).astype(np.float32)
layers = {}
for name, scale in (("scaled", 256.0), ("plain", None)):
    np.random.seed(7)
    layers[name] = Linear(2, in_size=3)
    F.mean_squared_error(layers[name](xs_check), ts_check).backward(loss_scale=scale)
params = list(layers["scaled"].params())
before = [p.grad.data for p in params]
unscale_grads(params)
for p, old, ref in zip(params, before, layers["plain"].params()):
    assert p.loss_scale is None, "once the scale is divided out, the parameter has none left"
    assert np.allclose(p.grad.data, ref.grad.data, rtol=1e-5), (
        "after unscaling, the gradient should equal the one of an unscaled backward: "
        "divide by the parameter's own loss scale"
    )
    assert np.allclose(old, ref.grad.data * 256.0, rtol=1e-5), (
        "the old gradient array changed: make a new Variable, do not divide in place"
    )
print("self-check passed: unscale_grads gives back the unscaled gradients")

# %% [markdown]
# ## Open experiment: sweeping the loss scale
#
# *What happens to the first float16 update as the scale $S$ runs from 1 to
# $2^{16}$?* Guess first where float16 starts to agree with float32, and where
# it breaks. The cell below repeats the first update of the experiment above
# for each scale and prints how far it is from the float32 update.

# %%
import matplotlib.pyplot as plt  # noqa: E402

from dezero_like.plot import output_dir, save_figure  # noqa: E402

print(f"{'scale S':>9} {'rel. error vs float32':>22} {'finite':>7}")
scales = [2.0**k for k in range(0, 17, 2)]
errors = []
for s in scales:
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"update\(\) skipped")  # 2**16: we know
        w_s = train(np.float16, loss_scale=s)
    finite = bool(np.isfinite(w_s).all())
    err = np.abs(w_s - w32).max() / np.abs(w32).max() if finite else np.nan
    errors.append(err)
    print(f"{s:>9.0f} {err:>22.2e} {str(finite):>7}")
plt.figure()  # a new figure: run as a script, the number line's is still the current one
plt.semilogx(scales, errors, "o-", base=2)
plt.xlabel("loss scale S")
plt.ylabel("relative error of the first update")
save_figure(plt.gcf(), output_dir(67) / "loss_scale_sweep.png")
plt.show()

# %% [markdown]
# Without a scale every per-sample gradient rounds to zero and the update is
# zero (error 1). A scale of 4 lifts only the largest of them (about one in six)
# out of the zone, but those carry most of the gradient; from 16 on the
# error sits at float16's rounding level (about $10^{-3}$: float16 keeps 11
# significant bits). At $2^{16}$ the scale itself is above 65504, so the
# float16 seed is `inf` and the gradients are NaN: `update()` skips the step,
# `W` stays at zero and the error is 1 again, as without a scale (before the
# check, the weights themselves became NaN). The good range spans about ten
# powers of two: that is why a dynamic scaler can get away with halving after
# an overflow and doubling now and then.
# Try `steps=10`, or targets 100 times smaller.
