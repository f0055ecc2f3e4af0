# %% [markdown]
# # Step 23: Packaging: the framework becomes `dezero_like`
#
# Until now every step carried its own copy of the framework, so each step
# could be read (and diffed against the previous one) on its own. From here on
# the framework lives in one place, the Python package `dezero_like`, and the
# steps `import` it:
#
# ```python
# import dezero_like as dz
# import dezero_like.functions as F
# ```
#
# A package is a folder with an `__init__.py`; each `.py` file in it is a
# module. Installing it (`pip install -e .` in the repository, or the set-up
# cell at the top of every notebook) makes `import dezero_like` work from any
# directory, with no `sys.path` tricks.
#
# The package is split by role:
#
# * `core.py`: `Variable`, `Function`, the backward loop, `Config`, `no_grad`,
#   and the arithmetic behind the operators (`Add`, `Mul`, `Sub`, `Div`, `Pow`,
#   `Neg`);
# * `functions.py`: the other differentiable functions (`square`, `exp`,
#   `sin`, ..., later `matmul`, `softmax`, ...);
# * `utils.py`: helpers: numerical gradients, `gradient_check`, array
#   comparisons;
# * `cuda.py`: GPU support through CuPy, imported only when asked for.
#
# `__init__.py` runs when you `import dezero_like`; it imports the modules and
# re-exports the names you use most, so `dz.Variable` works without
# `dz.core.Variable`.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Config`, `using_config`, `no_grad`, `as_array`, `as_variable`,
# `Variable`, `Function`, `Add`, `Mul`, `Neg`, `Sub`, `Div`, `Pow`, `add`, `mul`, `neg`,
# `sub`, `rsub`, `div`, `rdiv`, `pow`, `setup_variable`; `cuda` gains `is_cupy_array`,
# `get_array_module`, `as_numpy`; `utils` gains `array_equal`, `array_allclose`,
# `numerical_grad`, `gradient_check`, `forward_names`; `functions` gains `add`, `sub`,
# `rsub`, `mul`, `div`, `rdiv`, `neg`, `pow`, `Square`, `square`, `Exp`, `exp`, `Sin`,
# `sin`, `Cos`, `cos`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %%
#| export dezero_like/core.py
"""The heart of dezero_like: ``Variable``, ``Function`` and backpropagation.

Read this file first. Everything else in the package is built from three ideas
that live here:

1. A :class:`Variable` is a box around an array. It remembers the function that
   created it (``creator``), and that function remembers its inputs, so every
   result carries the graph of how it was computed ("define-by-run").
2. A :class:`Function` turns arrays into arrays in ``forward`` and turns the
   gradient of its outputs into the gradient of its inputs in ``backward``.
3. :meth:`Variable.backward` walks the graph from the output towards the inputs,
   newest function first (by *generation*), applying the chain rule.

Two details come from industrial frameworks (Chainer and PyTorch) and are
explained in steps 63-69 of the curriculum:

* A function keeps only what its backward needs (``retain_inputs`` /
  ``retain_outputs``). The graph itself is made of nodes without data, so a long
  chain of operations does not keep every intermediate array alive.
* Gradients of intermediate results are gathered in slots of the function that
  created them, not on the variables, so a variable the user no longer holds
  can still pass gradients through.
"""

class Config:
    """Global switches, read on every function call.

    ``enable_backprop``: build the graph (turned off by :func:`no_grad`).
    ``train``: training mode (turned off by :func:`test_mode`; dropout reads it).
    """

    enable_backprop = True

    train = True


# %%
#| export dezero_like/core.py
import contextlib


@contextlib.contextmanager
def using_config(name, value):
    """Set ``Config.<name>`` to ``value`` inside a ``with`` block, then restore it."""
    if not hasattr(Config, name):
        raise AttributeError(f"Config has no setting named {name!r}; known: enable_backprop, train")
    old = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old)


# %%
#| export dezero_like/core.py
import numpy as np
from dezero_like import cuda


def no_grad():
    """Run code without building a graph (inference, parameter updates)."""
    return using_config("enable_backprop", False)


# Function hooks registered with ``with hook:`` (see dezero_like.hooks).
_global_hooks: list = []


def _is_array(x):
    """True for a NumPy array or, when CuPy is in use, a CuPy array."""
    return isinstance(x, np.ndarray) or cuda.is_cupy_array(x)


# %%
#| export dezero_like/core.py
import numpy as np
from dezero_like import cuda


def as_array(x, like=None):
    """Turn a number into a 0-d array; arrays pass through unchanged.

    A Python ``int`` or ``float`` takes the dtype of ``like`` (an array it will
    be combined with) when that is a floating or complex array (or, for an
    ``int``, an integer array), so ``float32_data * 2.0`` stays float32. NumPy 2
    would otherwise treat a 0-d float64 array as a "strong" type and promote
    the result to float64. NumPy scalars keep their own dtype, as in NumPy.
    """
    if type(x) is np.ndarray:
        return x
    if type(x) is float or type(x) is int:
        if like is None:
            return np.asarray(x)
        kind = like.dtype.kind
        if kind in "fc" or (kind in "iu" and type(x) is int):
            if type(like) is np.ndarray:
                return np.asarray(x, like.dtype)
            # on a GPU, fill a 0-d array with a kernel: asarray would copy host -> device
            return cuda.get_array_module(like).full((), x, like.dtype)
        return cuda.get_array_module(like).asarray(x)
    if _is_array(x):
        return x
    if isinstance(x, (int, float, complex, np.generic)):  # bool, complex, np.float32(2), ...
        if like is None or type(like) is np.ndarray:
            return np.asarray(x)
        return cuda.get_array_module(like).asarray(x)
    raise TypeError(
        f"expected a Variable, an ndarray or a number, got {type(x).__name__}; "
        "wrap lists with np.array(...) first"
    )


# %%
#| export dezero_like/core.py
def as_variable(obj):
    """Return ``obj`` if it is a Variable, else wrap it in one."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj))


# %%
#| export dezero_like/core.py
import numpy as np


def _as_inputs(inputs):
    """Wrap non-Variable inputs (numbers, arrays) as constant Variables.

    Constants take the dtype of the first Variable input (see ``as_array``) and
    do not require grad: nobody can read their gradient, so none is computed.
    When every input is a Variable already, ``inputs`` comes back as it is.
    """
    for x in inputs:
        if type(x) is not Variable and not isinstance(x, Variable):
            break
    else:
        return inputs
    like = None
    for x in inputs:
        if isinstance(x, Variable):
            like = x.data
            break
    result = []
    for x in inputs:
        if not isinstance(x, Variable):
            data = as_array(x, like)
            x = Variable(data, requires_grad=False) if type(data) is not np.ndarray \
                else _make_variable(data, False)
        result.append(x)
    return tuple(result)


# %%
#| export dezero_like/core.py
import numpy as np
from dezero_like import cuda


class Variable:
    """A box around an array that remembers how it was computed.

    ``data`` is the array (NumPy or CuPy); ``grad`` its gradient (a Variable) once
    backward has run; ``creator`` the Function that produced it (``None`` for a
    leaf the user created); ``generation`` its depth in the graph.
    ``requires_grad=False`` marks a constant: no gradient flows into it.
    """

    __slots__ = (
        "data", "name", "grad", "creator", "index", "generation", "requires_grad",
        "loss_scale", "__weakref__",
    )

    # NumPy must not treat a Variable as an array element: with this, the
    # expression ``ndarray * variable`` calls ``Variable.__rmul__``.
    __array_ufunc__ = None

    def __init__(self, data, name=None, requires_grad=True):
        if type(data) is not np.ndarray and data is not None:
            if not _is_array(data):
                raise TypeError(
                    f"Variable data must be a numpy.ndarray (or a cupy.ndarray), "
                    f"got {type(data).__name__}; use Variable(np.array(...))"
                )
        if data is not None and data.dtype.kind not in "biufc":
            raise TypeError(f"Variable data must have a numeric dtype, got {data.dtype}")
        self.data = data
        self.name = name
        self.grad = None
        self.creator = None
        self.index = 0
        self.generation = 0
        self.requires_grad = requires_grad
        self.loss_scale = None

    # ---- what a NumPy user expects ----------------------------------------
    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return "variable(None)"
        body = str(self.data).replace("\n", "\n" + " " * 9)
        return f"variable({body})"

    # ---- graph management ---------------------------------------------------
    def set_creator(self, func, index=0):
        self.creator = func
        self.index = index
        self.generation = func.generation + 1

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def _as_node(self):
        """A stand-in without data: same place in the graph, no array kept."""
        v = _new_object(Variable)
        v.data = None
        v.name = self.name
        v.grad = None
        v.creator = self.creator
        v.index = self.index
        v.generation = self.generation
        v.requires_grad = self.requires_grad
        v.loss_scale = None
        return v

    # ---- backpropagation ------------------------------------------------------
    def _seed(self, gradient, loss_scale):
        data = self.data
        if gradient is None:
            xp = np if type(data) is np.ndarray else cuda.get_array_module(data)
            seed = xp.ones_like(data)
        else:
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
            seed = gradient.astype(data.dtype)  # a copy: .grad never aliases the caller's array
        if loss_scale is not None:
            # the scale takes the seed's dtype (np.float64(1024) must not turn float32
            # gradients into float64); a 0-d product is a NumPy scalar: make it an array
            xp = np if type(seed) is np.ndarray else cuda.get_array_module(seed)
            seed = as_array(seed * xp.asarray(loss_scale, dtype=seed.dtype))
        return Variable(seed, requires_grad=False)

    def backward(self, gradient=None, retain_grad=False, create_graph=False,
                 retain_graph=False, loss_scale=None):
        """Compute the gradient of this variable with respect to every leaf.

        * ``gradient``: the seed dL/d(self); default ones, for scalars and arrays alike.
        * ``retain_grad``: also keep ``.grad`` on intermediate variables still alive.
        * ``create_graph``: record the backward pass itself, so gradients can be
          differentiated again (implies ``retain_graph``).
        * ``retain_graph``: keep what functions saved, so backward can run again.
        * ``loss_scale``: multiply the seed by this number; leaves remember it in
          ``loss_scale`` and optimizers divide it out before the update.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward() was called on a variable that does not require grad "
                "(it was made under no_grad(), or from inputs with requires_grad=False)"
            )
        if self.data is None:
            raise RuntimeError("backward() was called on a graph node that holds no data")
        seed = self._seed(gradient, loss_scale)
        with using_config("enable_backprop", create_graph):
            if self.creator is None:
                _accumulate_leaf(self, seed, loss_scale)
            else:
                _backprop(self.creator, self.index, seed, retain_grad,
                          retain_graph or create_graph, loss_scale)


# %%
#| export dezero_like/core.py
_new_object = object.__new__


# %%
#| export dezero_like/core.py
def _make_variable(data, requires_grad):
    """Variable(data) without the input checks: for arrays a function just produced."""
    v = _new_object(Variable)
    v.data = data
    v.name = None
    v.grad = None
    v.creator = None
    v.index = 0
    v.generation = 0
    v.requires_grad = requires_grad
    v.loss_scale = None
    return v


# %%
#| export dezero_like/core.py
import numpy as np


def _add_grads(a, b):
    """a + b for two gradients, as a new object (never ``+=``: see step 15).

    With create_graph the sum must be differentiable, so it is a recorded Add;
    otherwise the arrays are added directly, which is faster and keeps the
    sum out of function hooks' view.
    """
    if Config.enable_backprop:
        return a + b
    y = a.data + b.data  # two 0-d arrays add up to a NumPy scalar: make it an array again
    return _make_variable(y if type(y) is np.ndarray else as_array(y), False)


# %%
#| export dezero_like/core.py
def _writeable(data):
    """NumPy says whether an array may be written; CuPy has no such flag, so a view
    with a zero stride (``broadcast_to``), whose elements alias, counts as read-only."""
    flag = getattr(data.flags, "writeable", None)
    return flag if flag is not None else (data.size <= 1 or 0 not in data.strides)


# %%
#| export dezero_like/core.py
def _accumulate_leaf(x, gx, loss_scale):
    """Add ``gx`` to the gradient of the leaf ``x``.

    A leaf's gradient always has the leaf's dtype (a float32 weight combined
    with a float64 constant still gets a float32 gradient, as in PyTorch), and
    is an ordinary writable array: a read-only view (``broadcast_to`` in the
    backward of ``sum``) is copied before it becomes ``x.grad``.
    """
    data = gx.data
    if data.dtype != x.data.dtype:
        gx = _F().astype(gx, x.data.dtype)
    elif not _writeable(data):
        gx = _make_variable(data.copy(), False) if not Config.enable_backprop \
            else _F().astype(gx, data.dtype, copy=True)
    x.grad = gx if x.grad is None else _add_grads(x.grad, gx)
    if loss_scale is not None:
        x.loss_scale = loss_scale


# %%
#| export dezero_like/core.py
import heapq


def _backprop(start, index, seed, retain_grad, retain_graph, loss_scale):
    """The backward loop: take the newest function, apply its backward, queue its inputs' creators.

    A function is queued when its first output gradient arrives and runs only
    after every function of a higher generation has run, so by then all of its
    output gradients are complete (step 17). Queued functions wait in a heap
    ordered by (-generation, arrival), so equal generations run in the order
    they arrived. On a plain chain there is never more than one function
    waiting; it is kept in ``nxt`` and the heap is not touched at all.
    """
    heappush, heappop = heapq.heappush, heapq.heappop
    start._grads = [None] * len(start.outputs)
    start._grads[index] = seed
    heap = []
    nxt = start
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
                    "to the first backward() call if you need to call backward twice."
                )
            if retain_grad:
                for ref, gy in zip(f.outputs, gys):
                    y = ref()
                    if y is not None:
                        y.grad = gy
            hooks = _global_hooks + f._hooks if f._hooks else _global_hooks
            if hooks:
                for hook in hooks:
                    hook.backward_preprocess(f, gys)
            if f._duplicates:  # the same variable in several slots, as in x * x
                gxs = f.backward_accumulate(*gys)
            else:
                gxs = f.backward(*gys)
                if type(gxs) is not tuple:
                    gxs = (gxs,)
            if hooks:
                for hook in hooks:
                    hook.backward_postprocess(f, gys, gxs)
            inputs = f.inputs
            if len(gxs) != len(inputs):
                raise RuntimeError(
                    f"{type(f).__name__}.backward returned {len(gxs)} gradients "
                    f"for {len(inputs)} inputs"
                )
            for x, gx in zip(inputs, gxs):
                if gx is None or not x.requires_grad:
                    continue
                if type(gx) is not Variable and not isinstance(gx, Variable):
                    gx = _make_variable(as_array(gx), False)  # backward returned an array
                c = x.creator
                if c is None:
                    _accumulate_leaf(x, gx, loss_scale)
                    continue
                slots = c._grads
                if slots is None:  # first gradient for c: queue it
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


# %%
#| export dezero_like/core.py
import weakref
import numpy as np


class Function:
    """Base class of every differentiable operation.

    Subclasses write ``forward(*arrays)`` (raw arrays in, raw arrays out) and
    ``backward(*grads)`` (Variables in, one gradient Variable per input out;
    ``None`` for an input that needs no gradient). A function with several
    outputs receives ``None`` for an output that no gradient reached, and
    treats it as zero. Gradients are never modified in place: several
    variables may share one gradient object (``x0 + x1`` hands the same ``gy``
    to both), so code that changes a gradient makes a new one. Inside ``forward`` a function
    may call ``retain_inputs``/``retain_outputs`` to keep only what its backward
    reads; by default all inputs are kept. ``needs_input_grad`` tells which
    inputs require a gradient.
    """

    generation = 0

    inputs = ()

    outputs = ()

    needs_input_grad = ()

    _retained_in = None  # None: keep every input

    _retained_out = None  # {index: array} of outputs backward reads

    _grads = None  # gradients of the outputs, gathered during backward

    _freed = False

    _hooks = None

    _duplicates = False  # True when one variable fills several input slots

    def __call__(self, *inputs):
        if not Config.enable_backprop and not _global_hooks and not self._hooks:
            # No graph and nobody watching (inference, and backward without
            # create_graph): compute and wrap, nothing more.
            if len(inputs) == 1 and isinstance(inputs[0], Variable):
                ys = self.forward(inputs[0].data)  # one input: no list to build
            else:
                xs = []
                for x in _as_inputs(inputs):
                    xs.append(x.data)
                ys = self.forward(*xs)
            if type(ys) is not tuple:
                return _make_variable(ys if type(ys) is np.ndarray else as_array(ys), False)
            outs = [_make_variable(y if type(y) is np.ndarray else as_array(y), False) for y in ys]
            return outs[0] if len(outs) == 1 else outs
        # One pass over the inputs gathers their arrays, whether each needs a
        # gradient, and the newest generation among them. (Plain loops: this
        # is the hottest code of the framework, and on Python 3.11 a list
        # comprehension costs a function call.)
        if len(inputs) == 1 and isinstance(inputs[0], Variable):
            x = inputs[0]
            xs = (x.data,)
            needs = (x.requires_grad,)
            gen = x.generation
        else:
            inputs = _as_inputs(inputs)  # numbers and arrays become constants
            xs = []
            needs = []
            gen = 0
            for x in inputs:
                xs.append(x.data)
                needs.append(x.requires_grad)
                if x.generation > gen:
                    gen = x.generation
            needs = tuple(needs)
        build = Config.enable_backprop and True in needs
        if build:
            self.needs_input_grad = needs
        hooks = _global_hooks + self._hooks if self._hooks else _global_hooks
        if hooks:
            for hook in hooks:
                hook.forward_preprocess(self, xs)
        ys = self.forward(*xs)
        # forward returns an array or a tuple of arrays; NumPy may hand back a
        # scalar (np.float64) for 0-d input, which becomes a 0-d array again.
        if type(ys) is tuple:
            ys = list(ys)
            for i, y in enumerate(ys):
                if type(y) is not np.ndarray:
                    ys[i] = as_array(y)
        else:
            ys = [ys if type(ys) is np.ndarray else as_array(ys)]
        if hooks:
            for hook in hooks:
                hook.forward_postprocess(self, xs, ys)
        if not build:  # no graph: plain results
            if len(ys) == 1:
                return _make_variable(ys[0], False)
            return [_make_variable(y, False) for y in ys]
        # Record the graph: outputs point to this function, which points to
        # (only what it needs of) its inputs and holds its outputs weakly.
        self.generation = gen
        outputs = []
        refs = []
        for y in ys:
            v = _new_object(Variable)  # what _make_variable does, inlined: hot
            v.data = y
            v.name = None
            v.grad = None
            v.creator = self
            v.index = len(outputs)
            v.generation = gen + 1
            v.requires_grad = True
            v.loss_scale = None
            outputs.append(v)
            refs.append(weakref.ref(v))
        self.outputs = refs
        n = len(inputs)
        if n == 2:
            self._duplicates = inputs[0] is inputs[1]
        elif n > 2:
            self._duplicates = len(set(map(id, inputs))) < n
        keep = self._retained_in
        if keep is None:
            self.inputs = inputs
        else:
            kept = []
            for i, x in enumerate(inputs):
                kept.append(x if x.creator is None or i in keep else x._as_node())
            self.inputs = tuple(kept)
        if self._retained_out is not None:
            self._retained_out = {i: ys[i] for i in self._retained_out}
        return outputs[0] if len(outputs) == 1 else outputs

    def forward(self, *xs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def backward(self, *gys):
        raise NotImplementedError(f"{type(self).__name__} must implement backward()")

    def backward_accumulate(self, *gys):
        """Backward for a function that received the same variable in several slots.

        ``f(x, x)`` gives one gradient per slot; they are summed here, inside the
        function's own backward step, into the first slot holding ``x`` (the
        others get ``None``), so ``x`` receives one gradient, stored once, in
        a fresh array. A function may override this to compute the fused
        gradient directly (``x * x`` could return ``2 * x * gy`` at once).
        """
        gxs = self.backward(*gys)
        if type(gxs) is not tuple:
            gxs = (gxs,)
        gxs = list(gxs)
        first = {}
        for i, x in enumerate(self.inputs):
            key = id(x) if x.creator is None else (id(x.creator), x.index)
            if key not in first:
                first[key] = i
            elif gxs[i] is not None:
                j = first[key]
                gxs[j] = gxs[i] if gxs[j] is None else _add_grads(gxs[j], gxs[i])
                gxs[i] = None
        return tuple(gxs)

    # ---- what backward may read ---------------------------------------------
    def retain_inputs(self, indexes):
        """Call in forward: backward reads only ``self.inputs[i]`` for these ``i``."""
        self._retained_in = tuple(indexes)

    def retain_outputs(self, indexes):
        """Call in forward: backward reads these outputs via ``get_retained_outputs``."""
        self._retained_out = tuple(indexes)

    def get_retained_outputs(self):
        """The outputs kept by ``retain_outputs``, as Variables that belong to this graph."""
        if self._retained_out is None:
            raise RuntimeError(f"{type(self).__name__} retained no outputs")
        result = []
        for i, data in self._retained_out.items():
            y = self.outputs[i]()
            if y is None:  # the user dropped it: rebuild the same graph node
                y = _make_variable(data, True)
                y.creator, y.index, y.generation = self, i, self.generation + 1
            result.append(y)
        return tuple(result)

    def release(self):
        """Drop the arrays saved for backward; the graph's shape stays for plotting."""
        kept = []
        for x in self.inputs:
            kept.append(x if x.creator is None or x.data is None else x._as_node())
        self.inputs = tuple(kept)
        self._retained_out = None
        self._freed = True

    def __repr__(self):
        return f"<{type(self).__name__} generation={self.generation}>"


# %%
#| export dezero_like/core.py
def _F():
    import dezero_like.functions as F

    return F


def _sum_to(gx, shape):
    """Undo broadcasting: sum ``gx`` down to ``shape`` (a no-op when shapes agree)."""
    return gx if gx.data.shape == shape else _F().sum_to(gx, shape)


# %%
#| export dezero_like/core.py
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


# %%
#| export dezero_like/core.py
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


# %%
#| export dezero_like/core.py
class Neg(Function):
    """y = -x; dy/dx = -1."""

    def forward(self, x):
        if self.needs_input_grad:
            self.retain_inputs(())
        return -x

    def backward(self, gy):
        return -gy


# %%
#| export dezero_like/core.py
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


# %%
#| export dezero_like/core.py
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
        gx1 = _sum_to(gy * (-x0 / x1**2), s1) if n1 else None
        return gx0, gx1


# %%
#| export dezero_like/core.py
class Pow(Function):
    """y = x ** c for a constant c; dy/dx = c * x**(c-1)."""

    def __init__(self, c):
        if isinstance(c, Variable):
            raise TypeError("the exponent of ** must be a number, not a Variable")
        self.c = c

    def forward(self, x):
        return x**self.c  # a Python number is "weak" in NumPy 2: float32 stays float32

    def backward(self, gy):
        (x,) = self.inputs
        c = self.c
        if c == 0:  # x**0 is constant; c * x**(c-1) would be 0 * inf = NaN at x = 0
            return gy * 0
        return gy * (c * x ** (c - 1))


# %%
#| export dezero_like/core.py
import numpy as np


def _binary(function, op, x0, x1, reverse=False):
    """Apply a two-operand operator; ``x0`` is normally the Variable whose operator was called.

    ``reverse`` is for the reflected operators: ``2.0 - x`` calls ``x.__rsub__(2.0)``,
    which computes ``x1 - x0``. When no graph is recorded and no hook is watching,
    the Function object is skipped and ``op`` runs on the arrays directly. That is
    the case for every operator inside a plain ``backward()`` (gradients are computed
    with these same operators) and under no_grad(), and it halves an operator's cost
    there. With a graph (or a hook) the Function runs as usual, so create_graph and
    the hooks see every operation.
    """
    if Config.enable_backprop or _global_hooks or not isinstance(x0, Variable):
        return function()(x1, x0) if reverse else function()(x0, x1)
    a = x0.data
    b = x1.data if isinstance(x1, Variable) else as_array(x1, a)
    y = op(b, a) if reverse else op(a, b)
    return _make_variable(y if type(y) is np.ndarray else as_array(y), False)


# %%
#| export dezero_like/core.py
import operator


def add(x0, x1):
    return _binary(Add, operator.add, x0, x1)


def mul(x0, x1):
    return _binary(Mul, operator.mul, x0, x1)


def neg(x):
    return Neg()(x)


def sub(x0, x1):
    return _binary(Sub, operator.sub, x0, x1)


def rsub(x0, x1):
    return _binary(Sub, operator.sub, x0, x1, reverse=True)


def div(x0, x1):
    return _binary(Div, operator.truediv, x0, x1)


def rdiv(x0, x1):
    return _binary(Div, operator.truediv, x0, x1, reverse=True)


def pow(x, c):  # noqa: A001 - the book's name
    return Pow(c)(x)


def _matmul(x0, x1):
    return _F().matmul(x0, x1)


def _rmatmul(x0, x1):
    return _F().matmul(x1, x0)


def _getitem(x, slices):
    return _F().get_item(x, slices)


# %%
#| export dezero_like/core.py
def setup_variable():
    """Give Variable its operators (kept as a function, as in the book)."""
    Variable.__add__ = add
    Variable.__radd__ = add
    Variable.__mul__ = mul
    Variable.__rmul__ = mul
    Variable.__neg__ = neg
    Variable.__sub__ = sub
    Variable.__rsub__ = rsub
    Variable.__truediv__ = div
    Variable.__rtruediv__ = rdiv
    Variable.__pow__ = pow
    Variable.__matmul__ = _matmul
    Variable.__rmatmul__ = _rmatmul
    Variable.__getitem__ = _getitem


# %%
#| export dezero_like/core.py
setup_variable()


# %%
#| export dezero_like/cuda.py
"""GPU support through CuPy, imported only when it is used.

One code path serves both devices: functions ask ``get_array_module(x)`` for
``numpy`` or ``cupy`` and call the same array API on it. Nothing here imports
CuPy until a GPU is asked for, so ``import dezero_like`` stays fast and works on
machines without CuPy.
"""

import sys


def is_cupy_array(x):
    """True for a CuPy array (checked without importing CuPy)."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(x, cupy.ndarray)


# %%
#| export dezero_like/cuda.py
import sys
import numpy as np


def get_array_module(x):
    """``numpy`` or ``cupy``, whichever holds ``x`` (an array or a Variable)."""
    if type(x) is np.ndarray:
        return np
    from dezero_like.core import Variable

    if isinstance(x, Variable):
        x = x.data
    if is_cupy_array(x):
        return sys.modules["cupy"]
    return np


# %%
#| export dezero_like/cuda.py
import numpy as np


def as_numpy(x):
    """A NumPy copy of ``x`` (a CuPy array, a number, a Variable's data)."""
    from dezero_like.core import Variable

    if isinstance(x, Variable):
        x = x.data
    if np.isscalar(x):
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    if is_cupy_array(x):
        return x.get()
    return np.asarray(x)


# %%
#| export dezero_like/utils.py
"""Helpers: numerical gradients, comparisons, and small array utilities.

``numerical_grad`` and ``gradient_check`` are how every function of the package
is tested: central differences in float64 against the framework's backward.
"""

import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable


def _host(x):
    return cuda.as_numpy(x.data if isinstance(x, Variable) else x)


def array_equal(a, b):
    """``np.array_equal`` for Variables, NumPy and CuPy arrays: same shape, same values."""
    return bool(np.array_equal(_host(a), _host(b)))


# %%
#| export dezero_like/utils.py
import numpy as np


def array_allclose(a, b, rtol=1e-4, atol=1e-5):
    """``np.allclose`` for Variables, NumPy and CuPy arrays (broadcasting as NumPy does).

    As with ``np.allclose``, a scalar or a shape that broadcasts is compared
    element by element; shapes that cannot broadcast give False.
    """
    a, b = _host(a), _host(b)
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


# %%
#| export dezero_like/utils.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable, as_variable


def numerical_grad(f, x, *args, eps=1e-4, **kwargs):
    """Gradient of ``sum(f(x, *args))`` with respect to ``x`` by central differences.

    Each element of ``x`` is nudged by ``+eps`` and ``-eps`` in turn; the
    difference of the two sums divided by ``2*eps`` approximates the slope. It
    costs two evaluations of ``f`` per element, which is why backprop exists.
    """
    x_data = x.data if isinstance(x, Variable) else np.asarray(x)
    xp = cuda.get_array_module(x_data)
    if xp is not np:
        # finite differences are done on the CPU
        return xp.asarray(numerical_grad(f, cuda.as_numpy(x_data), *args, eps=eps, **kwargs))
    x_data = x_data.copy()  # never perturb the caller's array
    args = [a for a in args]
    grad = np.zeros_like(x_data, dtype=np.result_type(x_data.dtype, np.float32))

    def total(data):
        y = f(Variable(data), *args, **kwargs)
        if isinstance(y, (list, tuple)):
            return sum(float(cuda.as_numpy(v.data).sum()) for v in y)
        return float(cuda.as_numpy(as_variable(y).data).sum())

    it = np.nditer(x_data, flags=["multi_index"], op_flags=[["readwrite"]])
    while not it.finished:
        idx = it.multi_index
        original = x_data[idx].copy()
        x_data[idx] = original + eps
        y_plus = total(x_data.copy())
        x_data[idx] = original - eps
        y_minus = total(x_data.copy())
        x_data[idx] = original
        grad[idx] = (y_plus - y_minus) / (2 * eps)
        it.iternext()
    return grad


# %%
#| export dezero_like/utils.py
import numpy as np
from dezero_like.core import Variable, as_variable


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    """Compare backprop's gradient of ``sum(f(x, *args))`` with the numerical one.

    Returns True when they agree. When they do not, raises ``AssertionError``
    with a message naming the function, the input shape and the worst element,
    so a failing test says what went wrong without a debugger.
    """
    x = as_variable(x)
    if x.dtype.kind in "biu":  # integers (np.arange(6), say) are exact in float64
        x = Variable(x.data.astype(np.float64))
    elif x.dtype != np.float64:
        raise TypeError(
            f"gradient_check needs float64 input for a meaningful comparison, got {x.dtype}; "
            "use x.astype(np.float64)"
        )
    else:
        x = Variable(x.data.copy())
    num_grad = numerical_grad(f, x, *args, **kwargs)
    y = f(x, *args, **kwargs)
    if isinstance(y, (list, tuple)):
        total = y[0].sum()
        for v in y[1:]:
            total = total + v.sum()
        y = total
    y.backward()
    name = getattr(f, "__qualname__", None) or type(f).__name__
    if x.grad is None:
        raise AssertionError(f"gradient_check({name}): backward left x.grad as None")
    bp_grad = _host(x.grad)
    if bp_grad.shape != num_grad.shape:
        raise AssertionError(
            f"gradient_check({name}): backprop gradient has shape {bp_grad.shape}, "
            f"input has shape {num_grad.shape}"
        )
    if not np.allclose(bp_grad, num_grad, rtol=rtol, atol=atol):
        err = np.abs(bp_grad - num_grad)
        worst = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
        raise AssertionError(
            f"gradient_check({name}) failed for input of shape {x.shape}: worst element "
            f"{worst}: backprop {bp_grad[worst]!r} vs numerical {num_grad[worst]!r} "
            f"(abs error {err[worst]:.3g}, rtol={rtol}, atol={atol})"
        )
    return True


# %%
#| export dezero_like/utils.py
def forward_names(module, names):
    """A module-level ``__getattr__`` (PEP 562) for names that live in a later module.

    ``names`` maps a name to the module that defines it, e.g. ``{"conv2d":
    "dezero_like.functions_conv"}``. The module is imported the first time the
    name is asked for, so ``F.conv2d`` works as in the book while
    ``dezero_like.functions`` itself never imports the convolution code (which
    imports ``functions``: importing it at the top would be a cycle).
    """
    import importlib

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(names[name]), name)

    return __getattr__


# %%
#| export dezero_like/functions.py
"""Differentiable functions: ``import dezero_like.functions as F``.

Each function is a :class:`~dezero_like.core.Function` subclass (``forward`` on
raw arrays, ``backward`` on Variables, so its backward is itself differentiable)
plus a lowercase wrapper. The docstring gives the formula and its derivative.
Every function works on NumPy and CuPy arrays through the same code.
"""

from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core


# The arithmetic behind Variable's operators is written in core; as in the
# book, F.add(x, y) and its siblings are the same functions by plain names.
add = core.add


sub = core.sub


rsub = core.rsub


mul = core.mul


div = core.div


rdiv = core.rdiv


neg = core.neg


pow = core.pow  # noqa: A001 - the book's name


# %%
#| export dezero_like/functions.py
from dezero_like.core import Function


class Square(Function):
    """y = x**2; dy/dx = 2x."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        (x,) = self.inputs
        return gy * (2 * x)


# %%
#| export dezero_like/functions.py
def square(x):
    return Square()(x)


# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class Exp(Function):
    """y = exp(x); dy/dx = exp(x) = y, so the output is kept instead of the input."""

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return cuda.get_array_module(x).exp(x)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * y


# %%
#| export dezero_like/functions.py
def exp(x):
    return Exp()(x)


# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class Sin(Function):
    """y = sin(x); dy/dx = cos(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).sin(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * cos(x)


# %%
#| export dezero_like/functions.py
def sin(x):
    return Sin()(x)


# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class Cos(Function):
    """y = cos(x); dy/dx = -sin(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).cos(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * -sin(x)


# %%
#| export dezero_like/functions.py
def cos(x):
    return Cos()(x)


# %%
#| export dezero_like/__init__.py
"""dezero_like: a deep-learning framework you build one step at a time.

>>> import numpy as np
>>> import dezero_like as dz
>>> x = dz.Variable(np.array(3.0))
>>> y = x ** 2 + 2 * x
>>> y.backward()
>>> x.grad
variable(8.0)
"""

from dezero_like import cuda, functions, utils
from dezero_like.core import (
    as_array,
    as_variable,
    Config,
    Function,
    no_grad,
    using_config,
    Variable,
)

__version__ = "0.1.0"


# %%
# The cells above also defined `pow` in this script, hiding Python's built-in
# of that name here: hand it back (the package keeps its own).
import builtins

pow = builtins.pow


# %%
import inspect

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import utils

print("dezero_like", dz.__version__)
print("top-level names:", ", ".join(dz.__all__))

# %% [markdown]
# ## A tour of the modules
#
# For each module: the first line of its docstring, then the classes and
# functions it defines (not the ones it imports from elsewhere).

# %%
for module in (dz.core, F, utils, dz.cuda):
    doc = inspect.getdoc(module).splitlines()[0]
    names = [name for name, obj in vars(module).items()
             if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
             and obj.__module__ == module.__name__]
    print(f"{module.__name__}: {doc}")
    print("    " + ", ".join(names))

# %% [markdown]
# ## The same framework, grown up
#
# The package's `core.py` is the final design of the curriculum, so it does a
# little more than our step-22 snapshot. Three differences show up right away:
#
# * `x.grad` is a `Variable`, not an ndarray. That lets a later step
#   differentiate a gradient again (double backprop, steps 30-32); read the
#   array with `x.grad.data`.
# * Constants such as the `2.0` in `2.0 - x` do not require a gradient, so no
#   gradient is computed for them.
# * After `backward()` the graph releases what it saved, and a second
#   `backward()` through the same graph is an error unless you ask to keep it
#   (step 37).
#
# The results are the same. Here is the table of step 22, now computed by the
# package:

# %%
x = dz.Variable(np.array(3.0), name="x")
for text, make in [("-x", lambda x: -x), ("2.0 - x", lambda x: 2.0 - x),
                   ("x - 1", lambda x: x - 1), ("x / 2", lambda x: x / 2),
                   ("6 / x", lambda x: 6 / x), ("x ** 3", lambda x: x**3),
                   ("np.array(2.0) * x", lambda x: np.array(2.0) * x),
                   ("3 + x * x", lambda x: 3 + x * x)]:
    x.cleargrad()
    y = make(x)
    y.backward()
    print(f"{text:18s} = {float(y.data):6.3f}   dy/dx = {float(x.grad.data):6.3f}"
          f"   result is a {type(y).__name__}")

# %% [markdown]
# The lessons of steps 14-19 hold as well: a variable used twice accumulates
# its gradient without aliasing (steps 14-15), the diamond graph is
# differentiated in generation order (steps 16-17), intermediate gradients are
# dropped unless `retain_grad=True` (step 19), and `no_grad()` builds no graph.

# %%
x = dz.Variable(np.array(3.0))
y = x + x
y.backward(retain_grad=True)
print("x + x:   y.grad =", y.grad, " x.grad =", x.grad, " same object:", y.grad is x.grad)

x = dz.Variable(np.array(2.0))
a = F.square(x)
y = F.square(a) + F.square(a)
y.backward()
print("diamond: x.grad =", x.grad, " a.grad =", a.grad)

with dz.no_grad():
    y = F.exp(x) * 2
print("no_grad: creator =", y.creator)

x32 = dz.Variable(np.array([1.0, 2.0], dtype=np.float32))
print("float32 stays float32:", (2.0 - x32 / 3).dtype)

# %% [markdown]
# ## Checking gradients with `utils`
#
# In step 13 we wrote a central-difference helper by hand. The package ships
# one that every test of the package uses: `utils.gradient_check(f, x)`
# compares backprop with central differences in float64 and returns `True`, or
# raises an `AssertionError` that names the worst element.


# %%
def f(x):
    return (x - 2) ** 3 / x - 1.5 * x + 4


x = np.array([0.5, 1.0, 3.0])
v = dz.Variable(x.copy())
f(v).backward()
print("backprop: ", v.grad.data)
print("numerical:", utils.numerical_grad(f, x))
print("gradient_check:", utils.gradient_check(f, x))

# %% [markdown]
# ## Exercise
# Use the package to check the gradient of $g(x) = x \sin(x) + \frac{1}{1 + x^2}$
# with `utils.gradient_check` on a few points (use `F.sin`).


# %%
def g(x):
    return x * F.sin(x) + 1 / (1 + x**2)  # solution


assert utils.gradient_check(g, np.array([-1.0, 0.2, 2.5]))
y = g(dz.Variable(np.array(0.2)))
assert np.isclose(y.data, 0.2 * np.sin(0.2) + 1 / 1.04), f"g(0.2) is wrong: {y.data}"
print("self-check passed")
