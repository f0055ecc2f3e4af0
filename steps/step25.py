# %% [markdown]
# # Step 25: The graph as DOT text
#
# Every result in our framework remembers the function that made it, and every
# function remembers its inputs. So behind each `Variable` there is a whole
# *computational graph*. So far we only walked it to compute gradients; now we
# want to **see** it. A picture of the graph shows what backward will walk,
# which variables are shared, and how big the graph is.
#
# We will not draw the picture ourselves. Graphviz, a classic graph-layout
# tool, reads a small text language called **DOT** and does the layout. Our job
# is only to *describe* the graph in DOT. This step is about that text; step 26
# turns it into images.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Variable.reshape`, `_global_hooks` and `Function._hooks`, and changes
# `Function.__call__` and `_backward_step` (they call the hooks); `utils` gains `_sum_array`,
# `sum_to`, `reshape_sum_backward`; `graph` gains `MAX_SHOWN_ELEMENTS`, `function_inputs`,
# `function_outputs`, `format_array`, `node_value`, `node_grad`, `graph_functions`, `get_dot_graph`,
# `keep_values_for_drawing`; `functions` gains `Tanh`, `tanh`, `Reshape`, `reshape`, `Sum`, `sum`,
# `SumTo`, `sum_to`, `BroadcastTo`, `broadcast_to`; `hooks` gains `FunctionHook`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Variable` gains a `reshape` method that takes the shape either as numbers, `x.reshape(2, 3)`,
# or as one tuple, `x.reshape((2, 3))`. It calls `functions.reshape`, defined further down;
# `_F()` imports `functions` only when the method runs, because `functions` imports `core`.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _F


# ---- shape functions (defined in dezero_like.functions) -----------------
def reshape(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _F().reshape(self, shape)


# %% [markdown]
# `utils.sum_to` works on raw arrays and undoes broadcasting: it sums away the leading axes that
# `x` has in excess, and (keeping them, with length 1) the axes that are 1 in `shape` but not in
# `x`. An array of shape (2, 3, 4) summed to (3, 1) loses axis 0 and has axis 2 summed. The
# backward of a broadcast needs exactly this.

# %%
#| export dezero_like/utils.py
def _sum_array(x, axis=None, keepdims=False):
    """``x.sum(axis, keepdims)`` in PyTorch's dtypes (``sum_to`` and ``F.sum`` both add here).

    float16 is added up in float32 and rounded once: added up in float16, 2000 numbers near
    0.1 came out 3 % off. Unsigned integers narrower than 64 bits give int64, as NumPy does
    for int8 and bool: its uint64 would make ``-y`` or ``y - 1`` wrap around to 2**64 - 1
    (uint64 stays: int64 could not hold its values).
    """
    if x.dtype == np.float16:
        return x.sum(axis=axis, keepdims=keepdims, dtype=np.float32).astype(np.float16)
    if x.dtype.kind == "u" and x.dtype.itemsize < 8:
        return x.sum(axis=axis, keepdims=keepdims, dtype=np.int64)
    return x.sum(axis=axis, keepdims=keepdims)


def sum_to(x, shape):
    """Sum an array down to ``shape``: the reverse of broadcasting it."""
    shape = tuple(shape)
    ndim = len(shape)
    lead = x.ndim - ndim
    lead_axes = tuple(range(lead))
    axes = tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
    y = _sum_array(x, lead_axes + axes, keepdims=True)
    if lead > 0:
        y = y.reshape(y.shape[lead:])
    if y.shape != shape:  # shape is not one that x could have been broadcast from
        raise ValueError(f"sum_to: cannot sum an array of shape {x.shape} down to {shape}")
    return y


# %% [markdown]
# The gradient of `sum(x, axis)` has the shape of the sum: the summed axes are gone (unless
# `keepdims`). `reshape_sum_backward` puts them back with length 1, so that the gradient lines up
# with `x` and can be copied along them: for `x` of shape (2, 3, 4) summed over axis 1, a
# gradient of shape (2, 4) becomes (2, 1, 4).

# %%
#| export dezero_like/utils.py
def reshape_sum_backward(gy, x_shape, axis, keepdims):
    """Reshape the gradient of ``sum(x, axis)`` so it broadcasts back to ``x_shape``."""
    ndim = len(x_shape)
    if axis is None:
        tupled_axis = None
    elif not isinstance(axis, (tuple, list)):
        tupled_axis = (axis,)
    else:
        tupled_axis = tuple(axis)
    if not (ndim == 0 or tupled_axis is None or keepdims):
        actual_axis = sorted(a if a >= 0 else a + ndim for a in tupled_axis)
        shape = list(gy.shape)
        for a in actual_axis:
            shape.insert(a, 1)
        return gy.reshape(tuple(shape))
    if tupled_axis is None and not keepdims and ndim > 0:
        return gy.reshape((1,) * ndim)
    return gy


# %% [markdown]
# The drawing functions live in a new module, `graph`, but they are also imported from `utils`,
# as in the book. A module-level `__getattr__` made by `forward_names` looks
# `utils.get_dot_graph` and `utils.plot_dot_graph` up in `graph` the first time they are asked
# for, so `utils` needs no import of `graph` at its top.

# %%
#| export dezero_like/utils.py
from dezero_like.utils import forward_names


# get_dot_graph (this step) and plot_dot_graph (step 26): written in dezero_like/graph.py,
# found here too, as in the book
__getattr__ = forward_names(__name__, {
    "get_dot_graph": "dezero_like.graph",
    "plot_dot_graph": "dezero_like.graph",
})


# %% [markdown]
# `graph` opens with its docstring, the node styles (orange variables, grey constants, blue
# functions) and small helpers. They use duck typing (`_is_variable`, `function_inputs`), so the
# simpler graphs of the step snapshots draw too. Notice `_var_key`: a leaf is named by its `id`,
# an intermediate variable by its creator and its position among the creator's outputs, because
# from step 37 on one node can also exist as a data-less stand-in object.

# %%
#| export dezero_like/graph.py
"""Drawing the computational graph: DOT text and rendered images.

``get_dot_graph(y)`` walks the graph behind ``y`` (from ``y.creator`` back to the
leaves) and describes it in Graphviz's DOT language: variables are orange
ellipses (grey for constants), functions are blue boxes, and arrows show which
variables flow into which function and what it produced.

``plot_dot_graph(y, to_file="graph.png")`` turns that text into an image. It
needs a program that lays out DOT graphs, and tries two, in this order:

1. ``dot`` from a system Graphviz (``apt-get install graphviz``, ``brew install
   graphviz``; Colab has it). It is the reference implementation.
2. ``graphviz-pure``, a self-contained Rust port of ``dot`` that installs from
   PyPI as a wheel and is a dependency of dezero_like, so that a plain
   ``pip install`` can draw graphs too (see docs/graph-rendering.md).

If neither is found, the DOT file is still written and the error says how to
get a renderer. Warnings a renderer prints while succeeding come back as a
:class:`RenderWarning`. The returned :class:`GraphImage` shows itself inline in
Jupyter (as SVG) when it is the last expression of a cell.

Values and gradients in the nodes: ``plot_dot_graph(y, values=True)`` writes each
variable's value (or its shape and dtype when it has more than a few elements)
and its gradient into its node, as micrograd's ``draw_dot`` does. Intermediate
variables normally keep no data in the graph (functions keep only what their
backward needs, and ``.grad`` is kept only on leaves), so run the computation
and its backward inside ``with keep_values_for_drawing():``; it makes every
function keep its output values and the gradients it received, for drawing.
It is a function hook, so outside the block nothing is kept and nothing costs.

The graphs of the step snapshots (steps 07-22, whose ``Variable`` and
``Function`` classes are their own, simpler ones) draw too: any object with
``data``, ``grad`` and ``creator`` is accepted, and a function needs ``inputs``
and ``outputs`` (variables or weak references to them), or ``input`` and
``output`` as in the one-input steps 07-10.

How the graph is identified: a leaf variable is its own node (``id(var)``). An
intermediate variable may exist as several Python objects (the user's one and
data-less stand-ins that functions keep instead of the array), so it is
identified by where it was made: ``(id(creator), index)``.
"""

import weakref
import numpy as np


_VARIABLE_STYLE = 'shape=ellipse, style=filled, fillcolor="#ffd08a"'


_CONSTANT_STYLE = 'shape=ellipse, style=filled, fillcolor="#dddddd"'


_FUNCTION_STYLE = 'shape=box, style=filled, fillcolor="#a8d8f0"'


_ACTIVE_STYLE = 'shape=box, style="filled,bold", fillcolor="#ff7f50", penwidth=3'


#: Arrays with at most this many elements are written out in full; larger ones by shape.
MAX_SHOWN_ELEMENTS = 6


def _quote(text):
    """A DOT string literal: backslashes and quotes escaped, newlines as \\n."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'


def _is_variable(obj):
    """Duck typing: the package's Variable and the step snapshots' own ones."""
    return hasattr(obj, "creator") and hasattr(obj, "data") and hasattr(obj, "grad")


def _deref(ref):
    """A function's output slot: a weak reference (package, later steps) or the variable."""
    return ref() if isinstance(ref, weakref.ref) else ref


def function_inputs(f):
    """A function's inputs: ``f.inputs``, or ``(f.input,)`` in the one-input steps 07-10."""
    return f.inputs if hasattr(f, "inputs") else (f.input,)


def function_outputs(f):
    """A function's output slots: ``f.outputs``, or ``(f.output,)`` in steps 07-10."""
    return f.outputs if hasattr(f, "outputs") else (f.output,)


def _var_key(v):
    if v.creator is None or not hasattr(v, "index"):
        return f"v{id(v)}"  # snapshots have no stand-ins: the object is the node
    return f"v{id(v.creator)}_{v.index}"


def _original(v):
    """The variable the user holds for a data-less stand-in ``v``, if still alive."""
    if v.data is None and v.creator is not None and hasattr(v, "index"):
        original = _deref(v.creator.outputs[v.index])
        if original is not None:
            return original
    return v


def _recorded(v, attribute):
    """What :func:`keep_values_for_drawing` kept on ``v``'s creator for its slot."""
    kept = getattr(v.creator, attribute, None) if v.creator is not None else None
    if kept is None:
        return None
    return kept[getattr(v, "index", 0)]


def _array(value):
    """The array of a variable, or ``value`` itself (an array, None). A CuPy array has a
    ``data`` attribute too (its memory pointer), so only a variable's is read."""
    return value.data if _is_variable(value) else value


# %% [markdown]
# `format_array` is the text of a value in a node: every number with 4 significant digits (a
# gradient of `5.5e-06` must not be drawn as `0.`, which fixed decimals would do: a vanishing
# gradient is exactly what a picture of backprop is asked to show), an array of at most
# `MAX_SHOWN_ELEMENTS` numbers in full, a larger one as its shape and dtype, so that nodes stay
# small. A CuPy array is first copied to the host (`.get()`).

# %%
#| export dezero_like/graph.py
import numpy as np


def format_array(value):
    """Short text for a node: the numbers of a small array, else its shape and dtype."""
    a = _array(value)
    if a is None:
        return "?"
    if not hasattr(a, "ndim"):
        a = np.asarray(a)
    if a.size > MAX_SHOWN_ELEMENTS:
        return f"{a.shape} {a.dtype}"
    a = np.asarray(a.get() if hasattr(a, "get") else a)  # CuPy arrays come to the host
    if a.ndim == 0:
        return f"{a.item():.4g}"
    four = lambda v: f"{v:.4g}"  # noqa: E731 - significant digits, not decimals
    return np.array2string(a, separator=", ", formatter={"float_kind": four,
                                                           "complex_kind": four})


# %% [markdown]
# `node_value` and `node_grad` look for a variable's value and gradient in two places: on the
# variable the user holds (`_original`), and otherwise in what the hook
# `keep_values_for_drawing` (below) recorded on its creator. They return `None` when neither kept
# anything.

# %%
#| export dezero_like/graph.py
def node_value(v):
    """The value of variable ``v`` for drawing (None when nobody kept it)."""
    o = _original(v)
    if o.data is not None:
        return o.data
    return _recorded(v, "_drawing_values")


def node_grad(v):
    """The gradient of ``v`` for drawing: its ``.grad``, else what the hook recorded."""
    o = _original(v)
    if getattr(o, "grad", None) is not None:
        return o.grad
    return _recorded(v, "_drawing_grads")


# %% [markdown]
# `_var_label` builds a variable's label: its name; with `verbose`, its shape and dtype; with
# `values`, one line for the value and one for the gradient (`-` when none is known). An unnamed
# 0-d variable, such as a constant, shows its value rather than an empty label. A `grad` given
# without `values` (an animation frame that leaves the values out) adds the gradient line to the
# name, and no value at all: not even an unnamed scalar's.

# %%
#| export dezero_like/graph.py
def _var_label(v, verbose, values=False, grad=None):
    """Name (with ``verbose`` shape and dtype; with ``values`` value and grad) of a node.

    ``grad`` (a gradient, or ``_NO_GRAD``) overrides the gradient shown; without
    ``values`` it adds a gradient line to the name, and no value is shown.
    """
    v = _original(v)
    name = getattr(v, "name", None)
    label = "" if name is None else str(name)  # a number as a name is drawn too
    if values:
        lines = [label] if label else []
        lines.append("data " + format_array(node_value(v)))
    else:
        if grad is None and not label and v.data is not None and v.data.ndim == 0:
            label = f"{v.data.item():.4g}"  # an unnamed scalar (a constant, say): its value
        if verbose and v.data is not None:
            if label:
                label += ": "
            label += f"{v.data.shape} {v.data.dtype}"
        if grad is None:
            return label
        lines = [label] if label else []
    g = node_grad(v) if grad is None else grad
    shown = g is not None and g is not _NO_GRAD
    lines.append("grad " + (format_array(g) if shown else "-"))
    return "\n".join(lines)


# %% [markdown]
# `_var_node` and `_func_node` write one DOT node statement each. A variable that requires no
# gradient is drawn grey, as a constant; one with an empty label shrinks to a small dot. A
# function node is labelled with its class name (`Mul`, `Exp`); `active=True` highlights it.

# %%
#| export dezero_like/graph.py
def _var_node(v, verbose, values=False, grad=None):
    style = _VARIABLE_STYLE if getattr(v, "requires_grad", True) else _CONSTANT_STYLE
    label = _var_label(v, verbose, values, grad)
    if not label:
        style += ", width=0.4, height=0.3"  # nothing to show: a small dot-like node
    return f"{_var_key(v)} [label={_quote(label)}, {style}]"


def _func_node(f, active=False):
    style = _ACTIVE_STYLE if active else _FUNCTION_STYLE
    return f"f{id(f)} [label={_quote(type(f).__name__)}, {style}]"


# %% [markdown]
# `graph_functions` collects every function behind `output` with the heap that backward uses:
# highest generation first. The arrival counter breaks ties, so two functions are never compared
# with each other, and `seen` holds ids, so a function reached along two paths is listed once. A
# snapshot's function without a `generation` counts as generation 0.

# %%
#| export dezero_like/graph.py
import heapq


def graph_functions(output):
    """Every function behind ``output``, newest (highest generation) first."""
    funcs, seen, count, order = [], set(), 0, []
    if output.creator is not None:
        funcs.append((-getattr(output.creator, "generation", 0), count, output.creator))
        seen.add(id(output.creator))
    while funcs:
        f = heapq.heappop(funcs)[2]
        order.append(f)
        for x in function_inputs(f):
            c = x.creator
            if c is not None and id(c) not in seen:
                seen.add(id(c))
                count += 1
                heapq.heappush(funcs, (-getattr(c, "generation", 0), count, c))
    return order


# %% [markdown]
# `get_dot_graph` writes the text: for each function, its node, an arrow to each output and an
# arrow from each input. `seen_vars` gives a variable used by several functions one node, with
# all its arrows. An output that the user dropped (its weak reference is dead) is still drawn,
# as an empty node, so that the function's arrows stay complete.

# %%
#| export dezero_like/graph.py
def get_dot_graph(output, verbose=True, values=False, *, grads=None, active=None):
    """Describe the graph that computed ``output`` in Graphviz's DOT language.

    Variables are ellipses labelled with their ``name`` (and, when ``verbose``,
    their shape and dtype); functions are boxes labelled with their class name.
    Nodes without data (what a function keeps of an input it does not need)
    have no shape unless the original variable is still alive.

    With ``values=True`` each variable node shows its value and its gradient
    (``-`` when it has none); intermediate values and gradients are known when
    the computation ran inside :func:`keep_values_for_drawing` (or when the
    variables are still held, with ``retain_grad=True`` for their gradients).
    ``grads`` (``{node_key: gradient}``) gives the gradients shown (``-`` for a
    node it lacks), with ``values=False`` too, where the nodes then show no
    value; ``active`` highlights one function. :mod:`dezero_like.animate` uses both.
    """
    if not _is_variable(output):
        raise TypeError(f"get_dot_graph expects a Variable, got {type(output).__name__}")

    def grad_for(v):
        if grads is None:
            return None
        return grads.get(_var_key(v), _NO_GRAD)

    def var_node(v):
        # _NO_GRAD: the frame says "not known yet", so a dash, not the final gradient
        return _var_node(v, verbose, values, grad=grad_for(v))

    lines = ["digraph g {", "  rankdir=TB;", "  node [fontname=Helvetica, fontsize=11];"]
    seen_vars = {_var_key(output)}
    lines.append("  " + var_node(output))
    for f in graph_functions(output):
        lines.append("  " + _func_node(f, active is f))
        for i, ref in enumerate(function_outputs(f)):
            y = _deref(ref)
            key = f"v{id(f)}_{i}" if y is None else _var_key(y)
            if key not in seen_vars:
                seen_vars.add(key)
                if y is None:  # dropped by the user: draw it by position only
                    lines.append(f'  {key} [label="", {_VARIABLE_STYLE}, width=0.4, height=0.3]')
                else:
                    lines.append("  " + var_node(y))
            lines.append(f"  f{id(f)} -> {key};")
        for x in function_inputs(f):
            key = _var_key(x)
            if key not in seen_vars:
                seen_vars.add(key)
                lines.append("  " + var_node(x))
            lines.append(f"  {key} -> f{id(f)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# %% [markdown]
# `_NO_GRAD` is a marker object. When `grads` is given and has no entry for a node, the node
# gets `_NO_GRAD` and shows `-`; `None` cannot serve, since it already means "no override: look
# the gradient up". `get_dot_graph` reads the name only when it runs, so it may be defined after
# it.

# %%
#| export dezero_like/graph.py
_NO_GRAD = object()  # "no gradient known yet" in an animation frame


# %% [markdown]
# `keep_values_for_drawing` is the first function hook (the core's side of hooks is explained
# after the functions below). After each forward it stores the output arrays on the function
# (`_drawing_values`), and before each backward the gradients the function receives
# (`_drawing_grads`): the attributes that `node_value` and `node_grad` read. Its name is
# lowercase because it is used like a function: `with keep_values_for_drawing():`.

# %%
#| export dezero_like/graph.py
from dezero_like.hooks import FunctionHook


class keep_values_for_drawing(FunctionHook):  # noqa: N801 - used like a function
    """``with keep_values_for_drawing():`` -- functions keep values and gradients for drawing.

    Inside the block every function called keeps its output arrays, and every
    function that backward passes through keeps the gradients of its outputs,
    so that ``plot_dot_graph(y, values=True)`` can write them into the nodes
    of intermediate variables, which otherwise hold nothing. Run both the
    forward computation and ``backward()`` inside the block. It costs memory
    (one more reference to every intermediate array, as long as the graph
    lives) and nothing at all outside the block: it is a function hook.
    """

    name = "keep_values_for_drawing"

    def forward_postprocess(self, function, in_data, out_data):
        function._drawing_values = tuple(out_data)

    def backward_preprocess(self, function, grad_outputs):
        function._drawing_grads = tuple(grad_outputs)


# %% [markdown]
# `Tanh`: the derivative of $\tanh$ is $1 - y^2$, written with the output $y$. So backward reads
# only the output: forward calls `retain_outputs((0,))` to keep it and `retain_inputs(())` to say
# that no input is read (step 69 frees what backward does not read).

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _as_float


class Tanh(Function):
    """y = tanh(x); dy/dx = 1 - y**2."""

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return cuda.get_array_module(x).tanh(_as_float(x))  # integers: in float64

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * (1 - y * y)


# %%
#| export dezero_like/functions.py
def tanh(x):
    return Tanh()(x)


# %% [markdown]
# `Reshape` only moves numbers to new places, so its backward reshapes the gradient back to the
# input's shape. It keeps that shape (`x_shape`), not the input (`retain_inputs(())`). The
# function `reshape` returns the input itself, as a Variable, when the shape does not change, so
# no node is added to the graph.

# %%
#| export dezero_like/functions.py
from dezero_like.core import Function


class Reshape(Function):
    """y = x viewed with a new shape; the gradient is reshaped back."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return x.reshape(self.shape)

    def backward(self, gy):
        return reshape(gy, self.x_shape)


# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import as_variable


def reshape(x, shape):
    if isinstance(shape, (int, np.integer)):  # reshape(x, 6), as x.reshape(6) allows
        shape = (shape,)
    if x.shape == tuple(shape):
        return as_variable(x)
    return Reshape(shape)(x)


# %% [markdown]
# `Sum`: every input element enters its sum with coefficient 1, so its gradient is the gradient
# of that sum. Backward puts the summed axes back with length 1 (`reshape_sum_backward`) and
# copies the gradient along them (`broadcast_to`); only `x_shape` is kept. The function is named
# `sum` as in the book, hiding Python's built-in; a cell after the package code hands the
# built-in back in this script.

# %%
#| export dezero_like/functions.py
from dezero_like import utils
from dezero_like.core import Function


class Sum(Function):
    """y = sum of x over ``axis``; each element's gradient is dy."""

    def __init__(self, axis=None, keepdims=False):
        self.axis = tuple(axis) if isinstance(axis, list) else axis  # NumPy takes a tuple
        self.keepdims = keepdims

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return utils._sum_array(x, self.axis, self.keepdims)  # float16 in float32, uint in int64

    def backward(self, gy):
        gy = utils.reshape_sum_backward(gy, self.x_shape, self.axis, self.keepdims)
        return broadcast_to(gy, self.x_shape)


# %% [markdown]
# Someone who knows PyTorch writes `F.sum(x, dim=1, keepdim=True)`; here the names are NumPy's,
# `axis=` and `keepdims=`. Python's own complaint, "unexpected keyword argument 'dim'", does not
# say what to write, so `sum` collects any other keyword in `**others` and hands it to
# `_refuse_keywords`, which raises a `TypeError` naming the fix. The check runs only when
# `others` is not empty, so a correct call pays only for Python's empty dict (a few hundred
# machine instructions, about 1 % of an `F.sum`; keyword-only sentinel arguments cost twice
# that). Later functions (`mean`,
# `softmax`, `dropout`, the pooling functions, ...) and the layers of step 63 use the same helper
# with their own table of PyTorch's names. Where PyTorch's name stands for a required argument
# (`F.clip(x, min=0, max=1)` for `x_min`, `x_max`), the argument defaults to `_REQUIRED`, or
# Python would stop at "missing 2 required positional arguments" before the function could
# explain.

# %%
#| export dezero_like/core.py
class _Required:
    """The default of a required argument that PyTorch names otherwise (``F.clip``'s ``x_min``,
    clamp's ``min=``): a call with PyTorch's name then reaches the function's own check."""

    def __repr__(self):
        return "<required>"


_REQUIRED = _Required()


def _shown(value):
    """``repr(value)``, or its type and shape for an array (a weight prints as many lines)."""
    shape = getattr(value, "shape", ())
    return f"<{type(value).__name__} of shape {tuple(shape)}>" if shape else repr(value)


def _refuse_keywords(name, given, fixes, **required):
    """Raise a TypeError for the keyword arguments ``given`` (a dict), which ``name`` lacks.

    ``fixes`` maps PyTorch's names to what to write instead: a text, or a function of the
    value given that returns one. A name it does not know gets Python's own message, and so
    does a required argument (in ``required``) left at ``_REQUIRED`` when nothing else is wrong.
    """
    unknown = [n for n in given if n not in fixes]
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    if not given:
        missing = [n for n, v in required.items() if v is _REQUIRED]
        raise TypeError(f"{name}() missing {len(missing)} required argument"
                        f"{'s' if len(missing) > 1 else ''}: {', '.join(map(repr, missing))}")
    said = "; ".join(f"{n}={_shown(v)}: " + (fixes[n](v) if callable(fixes[n]) else fixes[n])
                     for n, v in given.items())
    raise TypeError(f"{name} got PyTorch's keyword argument{'s' if len(given) > 1 else ''} "
                    f"{said}")


# PyTorch's names for the axis arguments of sum, mean, max, ...; NumPy's here
_AXIS_KEYWORDS = {
    "dim": lambda v: f"write axis={v!r} (NumPy's name)",
    "keepdim": lambda v: f"write keepdims={v!r} (NumPy's name, with an s)",
}
_DIM_KEYWORD = {"dim": _AXIS_KEYWORDS["dim"]}  # for an axis= without keepdims= (softmax, ...)


# %%
#| export dezero_like/functions.py
from dezero_like.core import _AXIS_KEYWORDS, _refuse_keywords


def sum(x, axis=None, keepdims=False, **others):  # noqa: A001 - the book's name
    if others:  # PyTorch's F.sum(x, dim=1, keepdim=True), say
        _refuse_keywords("F.sum", others, _AXIS_KEYWORDS)
    return Sum(axis, keepdims)(x)


# %% [markdown]
# `SumTo` sums down to a shape, and its backward copies the gradient back up with
# `broadcast_to`. The function `sum_to` first checks that `shape` is one that `x` could have been
# broadcast from, so a wrong target fails with a message instead of giving a strange result.

# %%
#| export dezero_like/functions.py
from dezero_like import utils
from dezero_like.core import Function


class SumTo(Function):
    """y = x summed down to ``shape`` (undoes broadcasting); backward broadcasts."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return utils.sum_to(x, self.shape)

    def backward(self, gy):
        return broadcast_to(gy, self.x_shape)


# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import as_variable


def _as_shape(shape):
    """A shape as a tuple; one int is a 1-d shape, as NumPy takes it (``np.broadcast_to(x, 5)``)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    return tuple(shape)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape``, a shape it was broadcast from (undoes broadcast_to)."""
    shape = _as_shape(shape)
    if x.shape == shape:
        return as_variable(x)
    if len(shape) > len(x.shape) or any(
        s != 1 and s != n for s, n in zip(shape[::-1], x.shape[::-1])
    ):
        raise ValueError(
            f"sum_to: shape {shape} does not broadcast to the input's shape {x.shape}; the "
            "target must be a shape that x could have been broadcast from"
        )
    return SumTo(shape)(x)


# %% [markdown]
# `BroadcastTo` is the mirror image: forward repeats `x` up to `shape`, each copy's gradient
# belongs to the element it was copied from, so backward sums the copies with `sum_to`. Each of
# the two functions is the other's backward. A shape that `x` cannot be broadcast to gets
# NumPy's error, "input operand has more dimensions than allowed by the axis remapping" for
# (2, 3, 4) to (3, 4); `forward` catches it and says the rule instead (only then: a broadcast
# that works costs nothing more).

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class BroadcastTo(Function):
    """y = x repeated to ``shape``; backward sums the copies back (sum_to)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        try:
            return cuda.get_array_module(x).broadcast_to(x, self.shape)
        except ValueError:
            raise ValueError(
                f"broadcast_to: an input of shape {x.shape} cannot be broadcast to {self.shape}: "
                "compared from the last axis, each axis of the input must be 1 or the target's "
                "length, and the target may only add axes on the left. To go to a smaller "
                "shape, sum with sum_to (or F.sum(x, axis=...))") from None

    def backward(self, gy):
        return sum_to(gy, self.x_shape)


# %%
#| export dezero_like/functions.py
from dezero_like.core import as_variable


def broadcast_to(x, shape):
    shape = _as_shape(shape)
    if x.shape == shape:
        return as_variable(x)
    return BroadcastTo(shape)(x)


# %% [markdown]
# ### Watching functions: the hook call sites in `core`
#
# To draw values and gradients inside the nodes, the graph module must see the
# arrays each function receives and returns. Intermediate results may be gone
# by the time we draw. So the core gets a way to let observers watch every
# function as it runs: a **function hook**. A hook is an object with four
# methods (`FunctionHook` below). The core calls every active hook right before
# and right after each `forward` and each `backward`. Hooks live in the list
# `_global_hooks`; `with hook:` adds one there for the length of a block. A
# hook can also be attached to a single function (`_hooks`; step 65 adds
# `add_hook`, and timing and printing hooks).
#
# Two places of the core change: `Function.__call__` (around `forward`) and
# `_backward_step` (around `backward`). When no hook is active, the cost is
# one look at an empty list per call.

# %%
#| export dezero_like/core.py
# Function hooks switched on with ``with hook:`` (see dezero_like.hooks).
_global_hooks: list = []


# %%
#| export dezero_like/core.py Function
from dezero_like.core import (
    Config,
    Variable,
    _as_inputs,
    _global_hooks,
    as_array,
)
import weakref

_hooks = None  # hooks attached to this one function (step 65: add_hook)


def __call__(self, *inputs):
    inputs = _as_inputs(inputs)  # numbers and arrays become constants
    xs = [x.data for x in inputs]
    record = Config.enable_backprop
    if record:
        self.needs_input_grad = tuple(x.requires_grad for x in inputs)
    hooks = _global_hooks + self._hooks if self._hooks else _global_hooks
    for hook in hooks:
        hook.forward_preprocess(self, xs)
    ys = self.forward(*xs)
    if type(ys) is not tuple:
        ys = (ys,)
    ys = [as_array(y) for y in ys]  # NumPy may return a scalar for 0-d input
    for hook in hooks:
        hook.forward_postprocess(self, xs, ys)
    outputs = [Variable(y, requires_grad=record) for y in ys]
    if record:  # link the outputs to this function, and it to its inputs
        self.generation = max(x.generation for x in inputs)
        for y in outputs:
            y.set_creator(self)
        self.inputs = inputs
        self.outputs = [weakref.ref(y) for y in outputs]  # weak: no reference cycle
    return outputs[0] if len(outputs) == 1 else outputs


# %%
#| export dezero_like/core.py
from dezero_like.core import _check_grads, _grads_tuple


def _backward_step(f, gys):
    """One step of the chain rule: the gradients of ``f``'s inputs, as a tuple."""
    hooks = _global_hooks + f._hooks if f._hooks else _global_hooks
    for hook in hooks:
        hook.backward_preprocess(f, gys)
    gxs = _grads_tuple(f.backward(*gys))
    for hook in hooks:
        hook.backward_postprocess(f, gys, gxs)
    _check_grads(f, gxs)
    return tuple(gx if gx is None or isinstance(gx, Variable)
                 else Variable(as_array(gx), requires_grad=False) for gx in gxs)


# %% [markdown]
# The new module `hooks` holds the base class. `FunctionHook`'s four methods do nothing; a hook
# overrides those it needs. `with hook:` appends the hook to the list `core._global_hooks`
# itself, never a new list, because the core reads that very list, and removes it at the end of
# the block. Entering the same hook twice is refused: every call would be reported twice. The
# package's `__init__` (next cell) imports `hooks` and `keep_values_for_drawing`.

# %%
#| export dezero_like/hooks.py
"""Function hooks: code that runs around every function's forward and backward.

A hook is an object with four methods (a fifth, ``leaf_postprocess``, comes in step 66), all
no-ops in :class:`FunctionHook`::

    forward_preprocess(function, in_data)              # before forward
    forward_postprocess(function, in_data, out_data)   # after forward
    backward_preprocess(function, grad_outputs)        # before backward
    backward_postprocess(function, grad_outputs, grad_inputs)  # after backward

``in_data``/``out_data`` are the raw arrays of a forward call;
``grad_outputs``/``grad_inputs`` are the gradients (Variables, or ``None`` where
an output got no gradient or an input needs none) of a backward step.

Two ways to switch a hook on (``dezero_like.core`` calls them, see
``Function.__call__`` and the backward loop):

* for everything computed inside a block::

      with TimerHook() as timer:
          loss = model(x); loss.backward()
      timer.print_report()

* for one function only: ``f = Exp(); f.add_hook(PrintHook()); y = f(x)``.

A function's backward is itself made of functions (``gy * x`` is a ``Mul``), so
a global hook also sees *forward* calls that happen *inside* a backward step.
The shipped hooks keep track of that: :class:`TimerHook` counts their time in
the enclosing backward only, :class:`PrintHook` indents them, and
:class:`DebugHook` names the backward they belong to.

Shipped hooks: :class:`TimerHook` (time per function type and pass),
:class:`PrintHook` (one line per call with shapes and dtypes) and
:class:`DebugHook` (NaN/Inf detection), which :func:`debug_mode` switches on.
"""

from dezero_like import core


class FunctionHook:
    """Base class of function hooks: no-op callbacks and ``with hook:`` support.

    ``with hook:`` adds the hook to the global list (``dezero_like.core._global_hooks``)
    for the duration of the block; blocks nest (``with a: with b: ...`` runs both,
    ``a`` first). Using the *same* hook object in two nested blocks is refused,
    because every function would then be reported twice.
    """

    name = None  # shown in reprs; defaults to the class name

    def __enter__(self):
        if any(h is self for h in core._global_hooks):
            raise RuntimeError(
                f"{self!r} is already active; a hook can be entered once at a time "
                "(create a second instance if you really want two)"
            )
        core._global_hooks.append(self)  # in place: core reads this very list
        return self

    def __exit__(self, *exc_info):
        hooks = core._global_hooks
        for i in range(len(hooks) - 1, -1, -1):
            if hooks[i] is self:
                del hooks[i]
                break
        return False

    def __repr__(self):
        return f"<{self.name or type(self).__name__}>"

    # ---- the callbacks (override the ones you need) --------------------------
    def forward_preprocess(self, function, in_data):
        """Called before ``function.forward(*in_data)``."""

    def forward_postprocess(self, function, in_data, out_data):
        """Called after forward; ``out_data`` is the list of output arrays."""

    def backward_preprocess(self, function, grad_outputs):
        """Called before ``function.backward(*grad_outputs)``."""

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        """Called after backward; ``grad_inputs`` has one entry (or None) per input."""


# %%
#| export dezero_like/__init__.py
from dezero_like import hooks
from dezero_like.graph import keep_values_for_drawing


# %%
# The cells above also defined `sum` in this script, hiding Python's built-in
# of that name here: hand it back (the package keeps its own).
import builtins

sum = builtins.sum


# %% [markdown]
# ## The DOT language in one minute
#
# A DOT file lists nodes (with attributes in square brackets) and edges
# (`a -> b`). Node names are identifiers; what is shown is the `label`.
# Here is a graph for $y = x_0 + x_1$ written by hand:

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import get_dot_graph

hand_written = """digraph g {
  x0 [label="x0", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  x1 [label="x1", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  add [label="Add", shape=box, style=filled, fillcolor="#a8d8f0"]
  y [label="y", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  x0 -> add;
  x1 -> add;
  add -> y;
}"""
print(hand_written)

# %% [markdown]
# Variables are orange ellipses and functions blue boxes, so the two kinds of
# node are easy to tell apart: a variable holds data, a function transforms it.
#
# ## Walking the graph to write DOT
#
# `dezero_like.utils.get_dot_graph(y)` does the same for any result. It walks
# the graph exactly like backward does: start at `y.creator`, take the newest
# function first, write the function node, an edge to each of its outputs and
# an edge from each of its inputs, then queue the inputs' creators.
#
# Two details are worth knowing:
#
# * **Node identity.** A leaf variable (one you made yourself) is identified by
#   the object. An intermediate result is identified by *where it was made*:
#   the pair (creator function, output index). The reason is memory: from step
#   37 on, backward (without `retain_graph=True`) replaces the computed inputs
#   of each function it ran by data-less stand-ins, and from step 69 on a
#   function keeps only a stand-in, from forward on, of an input its backward
#   does not read. So one intermediate value may exist as several Python
#   objects. They all share the same creator and index, so they become one
#   node.
# * **Labels.** With `verbose=True` a label shows the variable's name, shape and
#   dtype. A stand-in (steps 37 and 69) has no data, so there an intermediate
#   variable that you no longer hold is drawn without a shape. An unnamed 0-d node that
#   still has its data shows its value: grey for a constant
#   (`requires_grad=False`), orange for a kept intermediate (in the Matyas graph
#   below, the orange 0.48 is `0.48 * x` at x = 1, the grey one the constant).
#
# Let us describe the Matyas function of step 24,
# $z = 0.26(x^2 + y^2) - 0.48xy$, after naming the variables:

# %%
def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


x = dz.Variable(np.array(1.0), name="x")
y = dz.Variable(np.array(1.0), name="y")
z = matyas(x, y)
z.name = "z"
dot_text = get_dot_graph(z, verbose=False)
print(dot_text)

# %% [markdown]
# Each line is either a node (`name [label=...]`) or an edge (`a -> b;`).
# Counting them tells how big the graph is:

# %%
def count_nodes(dot):
    """Number of node lines (variables and functions) in a DOT text."""
    return sum(1 for line in dot.splitlines() if "[label=" in line)


def count_functions(dot):
    return sum(1 for line in dot.splitlines() if "shape=box" in line)


print("nodes:", count_nodes(dot_text), "functions:", count_functions(dot_text))

# %% [markdown]
# With `verbose=True` (the default) the labels also carry shapes and dtypes,
# which is what you want when a shape error puzzles you:

# %%
a = dz.Variable(np.ones((2, 3), dtype=np.float32), name="a")
b = F.sum(F.tanh(a), axis=0)
b.name = "b"
print(get_dot_graph(b))

# %% [markdown]
# Graphviz turns any of these texts into a picture. If you have it installed,
# save the text to `graph.dot` and run `dot -Tpng graph.dot -o graph.png` in a
# terminal. The next step does this from Python and shows the picture inline.
#
# ## Exercise 1: a graph as DOT text
# Build $w = \sin(u) \cdot u$ for a Variable `u` named `"u"` holding `0.5`, name
# the result `"w"`, and put its DOT text (not verbose) in `exercise_dot`. How many
# functions does it contain?

# %%
#| exercise
u = dz.Variable(np.array(0.5), name="u")
exercise_dot = ...  # build w from u with F and *, name it, then its DOT text as above

# %%
#| solution
u = dz.Variable(np.array(0.5), name="u")
w = F.sin(u) * u
w.name = "w"
exercise_dot = get_dot_graph(w, verbose=False)

# %%
#| check
assert isinstance(exercise_dot, str), (
    f"exercise_dot should be the DOT text (a str), got {type(exercise_dot).__name__}: "
    "the function of this step that turns a graph into text returns one"
)
assert 'label="u"' in exercise_dot, "the DOT text has no node labelled u: name the input u"
assert 'label="w"' in exercise_dot, "the DOT text has no node labelled w: did you name it?"
assert count_functions(exercise_dot) == 2, (
    f"expected two functions (Sin and Mul), got {count_functions(exercise_dot)}"
)
print("self-check passed: the DOT text names u and w and holds two functions")

# %% [markdown]
# ## Exercise 2: write `Tanh`, keeping its output
# `Tanh` above keeps its **output** instead of its input, because its
# derivative is written with the output: $\frac{d}{dx}\tanh x = 1 - y^2$.
# Write `MyTanh` the same way, without looking back at `Tanh`: `forward`
# computes tanh on the raw array and tells the function to keep no input and
# its one output (the two `retain_` methods of `Function`, step 23, that `Tanh`
# calls); `backward` reads
# that output back from what was kept and returns $g_y (1 - y^2)$. The
# self-check compares it with `F.tanh` on random inputs and runs
# `utils.gradient_check`.

# %%
#| exercise
class MyTanh(dz.Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 25): tanh of the array; keep only the output")

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 25): read back the kept output y; the gradient is gy (1 - y^2)"
        )

# %%
#| solution
class MyTanh(dz.Function):
    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return np.tanh(x)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * (1 - y * y)

# %%
#| check
xs = np.random.default_rng(0).normal(size=(2, 3))
try:
    mine = MyTanh()(dz.Variable(xs.copy()))
except NotImplementedError as e:
    raise AssertionError(f"MyTanh is not written yet: {e}") from None
assert np.allclose(mine.data, F.tanh(dz.Variable(xs)).data), "MyTanh's forward should match F.tanh"
dz.utils.gradient_check(
    lambda v: MyTanh()(v), xs,
    hint="MyTanh's backward is wrong: it returns gy (1 - y^2), with y the kept output and gy the "
         "gradient arriving from the output's side, which is not all ones here")
print("self-check passed: MyTanh matches F.tanh, and its backward matches central differences")
