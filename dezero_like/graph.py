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
get either renderer. The returned :class:`GraphImage` shows itself inline in
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

from __future__ import annotations

import heapq
import importlib.metadata
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

import numpy as np

from dezero_like.hooks import FunctionHook

SYSTEM_PROGRAM = "dot"
#: The PyPI distribution (and command) used when no system Graphviz is found.
FALLBACK_PROGRAM = "graphviz-pure"
#: Formats each renderer writes by itself (graphviz-pure has no PDF writer yet).
NATIVE_FORMATS = {SYSTEM_PROGRAM: {"png", "svg", "pdf"}, FALLBACK_PROGRAM: {"png", "svg"}}
FORMATS = ("png", "svg", "pdf")

_VARIABLE_STYLE = 'shape=ellipse, style=filled, fillcolor="#ffd08a"'
_CONSTANT_STYLE = 'shape=ellipse, style=filled, fillcolor="#dddddd"'
_FUNCTION_STYLE = 'shape=box, style=filled, fillcolor="#a8d8f0"'
_ACTIVE_STYLE = 'shape=box, style="filled,bold", fillcolor="#ff7f50", penwidth=3'
#: Arrays with at most this many elements are written out in full; larger ones by shape.
MAX_SHOWN_ELEMENTS = 6


class RendererNotFoundError(RuntimeError):
    """No program that can render DOT was found (neither Graphviz nor graphviz-pure)."""


class RenderError(RuntimeError):
    """The renderer ran but failed; the message carries its own error output."""


# --------------------------------------------------------------------------- #
# DOT text
# --------------------------------------------------------------------------- #


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
    if value is None:
        return None
    return getattr(value, "data", value) if not isinstance(value, np.ndarray) else value


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
    return np.array2string(a, precision=3, separator=", ", suppress_small=True)


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


def _var_label(v, verbose, values=False, grad=None):
    """Name (with ``verbose`` shape and dtype; with ``values`` value and grad) of a node."""
    v = _original(v)
    label = getattr(v, "name", None) or ""
    if values:
        lines = [label] if label else []
        lines.append("data " + format_array(node_value(v)))
        g = node_grad(v) if grad is None else grad
        shown = g is not None and g is not _NO_GRAD
        lines.append("grad " + (format_array(g) if shown else "-"))
        return "\n".join(lines)
    if not label and v.data is not None and v.data.ndim == 0:
        label = f"{v.data.item():.4g}"  # an unnamed scalar (a constant, say): its value
    if verbose and v.data is not None:
        if label:
            label += ": "
        label += f"{v.data.shape} {v.data.dtype}"
    return label


def _var_node(v, verbose, values=False, grad=None):
    style = _VARIABLE_STYLE if getattr(v, "requires_grad", True) else _CONSTANT_STYLE
    label = _var_label(v, verbose, values, grad)
    if not label:
        style += ", width=0.4, height=0.3"  # nothing to show: a small dot-like node
    return f"{_var_key(v)} [label={_quote(label)}, {style}]"


def _func_node(f, active=False):
    style = _ACTIVE_STYLE if active else _FUNCTION_STYLE
    return f"f{id(f)} [label={_quote(type(f).__name__)}, {style}]"


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
    ``grads`` (``{node_key: gradient}``) overrides the gradients shown and
    ``active`` highlights one function; :mod:`dezero_like.animate` uses both.
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


_NO_GRAD = object()  # "no gradient known yet" in an animation frame

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


# --------------------------------------------------------------------------- #
# Finding a renderer
# --------------------------------------------------------------------------- #


def _installed_command(distribution):
    """Path of the command a pip-installed ``distribution`` ships, or None.

    Looked up through the package's own file list, so it is found even when its
    ``bin`` folder is not on PATH (common for Jupyter kernels and venvs).
    """
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if Path(f).stem == distribution and Path(f).parent.name in ("bin", "Scripts"):
            path = Path(dist.locate_file(f)).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def find_renderer(renderer="auto"):
    """Return ``(name, path)`` of the program that will render DOT.

    ``renderer`` is ``"auto"`` (system ``dot``, else ``graphviz-pure``),
    ``"dot"`` or ``"graphviz-pure"``. Raises :class:`RendererNotFoundError`
    saying how to install one when none is available.
    """
    if renderer not in ("auto", SYSTEM_PROGRAM, FALLBACK_PROGRAM):
        raise ValueError(
            f"renderer must be 'auto', {SYSTEM_PROGRAM!r} or {FALLBACK_PROGRAM!r}, got {renderer!r}"
        )
    if renderer in ("auto", SYSTEM_PROGRAM):
        path = shutil.which(SYSTEM_PROGRAM)
        if path:
            return SYSTEM_PROGRAM, path
    if renderer in ("auto", FALLBACK_PROGRAM):
        path = shutil.which(FALLBACK_PROGRAM) or _installed_command(FALLBACK_PROGRAM)
        if path:
            return FALLBACK_PROGRAM, path
    wanted = "a DOT renderer" if renderer == "auto" else f"the renderer {renderer!r}"
    raise RendererNotFoundError(
        f"cannot draw the graph: {wanted} was not found. Fix it either way:\n"
        f"  1. install Graphviz so that `dot` is on PATH (apt-get install graphviz, "
        f"brew install graphviz, conda install graphviz, or choco install graphviz), or\n"
        f"  2. pip install {FALLBACK_PROGRAM} (a dependency of dezero_like that was not "
        f"installed; reinstalling dezero_like brings it)."
    )


# --------------------------------------------------------------------------- #
# Rendering
# --------------------------------------------------------------------------- #


class GraphImage:
    """A rendered graph: the file written, and an SVG that Jupyter shows inline."""

    def __init__(self, path, dot_path, svg, renderer):
        self.path = Path(path).resolve()  # absolute: still right after a chdir
        self.dot_path = Path(dot_path).resolve()
        self.svg = svg
        self.renderer = renderer

    def _repr_svg_(self):
        return self.svg

    def __repr__(self):
        return f"GraphImage({str(self.path)!r}, rendered by {self.renderer})"


def _run(program, args):
    """Run the renderer with an argument list (never through a shell)."""
    result = subprocess.run([program, *args], capture_output=True)
    if result.returncode != 0:
        err = result.stderr.decode(errors="replace").strip()
        raise RenderError(f"{program} {' '.join(args)} failed (exit {result.returncode}): {err}")
    return result.stdout


def _png_to_pdf(png_path, pdf_path):
    """Wrap a PNG in a one-page PDF (used when the renderer writes no PDF itself)."""
    import matplotlib.image
    from matplotlib.figure import Figure

    image = matplotlib.image.imread(str(png_path))
    dpi = 96
    fig = Figure(figsize=(image.shape[1] / dpi, image.shape[0] / dpi), dpi=dpi)
    fig.figimage(image, 0, 0)
    fig.savefig(str(pdf_path), dpi=dpi)


def plot_dot_graph(output, verbose=True, to_file="graph.png", renderer="auto", values=False):
    """Draw the graph that computed ``output`` into ``to_file`` (PNG, SVG or PDF).

    The format follows the file's extension. The DOT text is always written
    beside it (``graph.png`` -> ``graph.dot``), first, so it survives any
    rendering failure. ``renderer``: ``"auto"``, ``"dot"`` or
    ``"graphviz-pure"`` (see :func:`find_renderer`). ``values=True`` writes
    each variable's value and gradient into its node (see :func:`get_dot_graph`
    and :class:`keep_values_for_drawing`). Returns a
    :class:`GraphImage`, which a notebook displays inline.
    """
    _format_of(to_file)  # a bad file name fails before any work
    return render_dot(get_dot_graph(output, verbose, values), to_file, renderer)


def _format_of(to_file):
    fmt = Path(to_file).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(
            f"cannot tell the image format from {str(to_file)!r}: use a file name ending "
            f"in .png, .svg or .pdf"
        )
    return fmt


def render_dot(dot_text, to_file, renderer="auto"):
    """Render DOT text into ``to_file`` (PNG, SVG or PDF); see :func:`plot_dot_graph`."""
    to_file = Path(to_file)
    fmt = _format_of(to_file)
    if to_file.parent != Path(""):
        to_file.parent.mkdir(parents=True, exist_ok=True)
    dot_path = to_file.with_suffix(".dot")
    dot_path.write_text(dot_text)
    try:
        name, program = find_renderer(renderer)
    except RendererNotFoundError as e:
        raise RendererNotFoundError(
            f"{e}\nThe graph's DOT source was saved to {dot_path}; once a renderer is "
            f"installed: dot -T{fmt} {dot_path} -o {to_file}"
        ) from None
    if fmt in NATIVE_FORMATS[name]:
        _run(program, [f"-T{fmt}", str(dot_path), "-o", str(to_file)])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            png = Path(tmp) / "graph.png"
            _run(program, ["-Tpng", str(dot_path), "-o", str(png)])
            _png_to_pdf(png, to_file)
    if fmt == "svg":
        svg = to_file.read_text()
    else:
        svg = _run(program, ["-Tsvg", str(dot_path)]).decode()
    return GraphImage(to_file, dot_path, svg, name)


__all__ = [
    "get_dot_graph", "plot_dot_graph", "render_dot", "find_renderer", "GraphImage",
    "keep_values_for_drawing", "format_array", "node_value", "node_grad", "graph_functions",
    "RendererNotFoundError", "RenderError",
]
