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

from __future__ import annotations

import contextlib
import heapq
import operator
import weakref

import numpy as np

from dezero_like import cuda  # cuda imports core only inside its functions

# --------------------------------------------------------------------------- #
# Configuration
# --------------------------------------------------------------------------- #


class Config:
    """Global switches, read on every function call.

    ``enable_backprop``: build the graph (turned off by :func:`no_grad`).
    ``train``: training mode (turned off by :func:`test_mode`; dropout reads it).
    """

    enable_backprop = True
    train = True


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


def no_grad():
    """Run code without building a graph (inference, parameter updates)."""
    return using_config("enable_backprop", False)


def test_mode():
    """Run code in test mode (dropout becomes the identity)."""
    return using_config("train", False)


# Function hooks registered with ``with hook:`` (see dezero_like.hooks).
_global_hooks: list = []


# --------------------------------------------------------------------------- #
# Arrays
# --------------------------------------------------------------------------- #


def _is_array(x):
    """True for a NumPy array or, when CuPy is in use, a CuPy array."""
    return isinstance(x, np.ndarray) or cuda.is_cupy_array(x)


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


def as_variable(obj):
    """Return ``obj`` if it is a Variable, else wrap it in one."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj))


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


# --------------------------------------------------------------------------- #
# Variable
# --------------------------------------------------------------------------- #


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

    # ---- shape functions (defined in dezero_like.functions) -----------------
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _F().reshape(self, shape)

    def transpose(self, *axes):
        if not axes:
            axes = None
        elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
            axes = axes[0]
        return _F().transpose(self, axes)

    @property
    def T(self):
        return _F().transpose(self)

    def sum(self, axis=None, keepdims=False):
        return _F().sum(self, axis, keepdims)

    # ---- graph management ---------------------------------------------------
    def set_creator(self, func, index=0):
        self.creator = func
        self.index = index
        self.generation = func.generation + 1

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def unchain(self):
        """Cut this variable from its creator: it becomes a leaf."""
        self.creator = None

    def unchain_backward(self):
        """Cut every link of the graph behind this variable.

        Used by truncated backprop through time: after the cut, backward stops
        here and the old graph can be freed.
        """
        funcs = [self.creator] if self.creator is not None else []
        self.unchain()
        seen = set()
        while funcs:
            f = funcs.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            for ref in f.outputs:  # the real outputs (a layer's state, say); the
                y = ref()  # inputs below may be data-less stand-ins of them
                if y is not None:
                    y.unchain()
            for x in f.inputs:
                if x.creator is not None:
                    funcs.append(x.creator)
                    x.unchain()

    def to_cpu(self):
        if self.data is not None:
            self.data = cuda.as_numpy(self.data)
        return self

    def to_gpu(self):
        if self.data is not None:
            self.data = cuda.as_cupy(self.data)
        return self

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


_new_object = object.__new__


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


def _writeable(data):
    """NumPy says whether an array may be written; CuPy has no such flag, so a view
    with a zero stride (``broadcast_to``), whose elements alias, counts as read-only."""
    flag = getattr(data.flags, "writeable", None)
    return flag if flag is not None else (data.size <= 1 or 0 not in data.strides)


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


# --------------------------------------------------------------------------- #
# Function
# --------------------------------------------------------------------------- #


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

    # ---- hooks on this one function -------------------------------------------
    def add_hook(self, hook):
        """Run ``hook`` around this function's forward and backward only."""
        self._hooks = (self._hooks or []) + [hook]
        return self

    def __repr__(self):
        return f"<{type(self).__name__} generation={self.generation}>"


class Parameter(Variable):
    """A Variable that a Layer owns and an optimizer updates."""

    __slots__ = ()


# --------------------------------------------------------------------------- #
# Arithmetic: the functions behind Variable's operators
# --------------------------------------------------------------------------- #


def _F():
    import dezero_like.functions as F

    return F


def _sum_to(gx, shape):
    """Undo broadcasting: sum ``gx`` down to ``shape`` (a no-op when shapes agree)."""
    return gx if gx.data.shape == shape else _F().sum_to(gx, shape)


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
        gx1 = _sum_to(gy * (-x0 / x1**2), s1) if n1 else None
        return gx0, gx1


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


setup_variable()
