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
from pathlib import Path

from dezero_like.core import Variable

SYSTEM_PROGRAM = "dot"
#: The PyPI distribution (and command) used when no system Graphviz is found.
FALLBACK_PROGRAM = "graphviz-pure"
#: Formats each renderer writes by itself (graphviz-pure has no PDF writer yet).
NATIVE_FORMATS = {SYSTEM_PROGRAM: {"png", "svg", "pdf"}, FALLBACK_PROGRAM: {"png", "svg"}}
FORMATS = ("png", "svg", "pdf")

_VARIABLE_STYLE = 'shape=ellipse, style=filled, fillcolor="#ffd08a"'
_CONSTANT_STYLE = 'shape=ellipse, style=filled, fillcolor="#dddddd"'
_FUNCTION_STYLE = 'shape=box, style=filled, fillcolor="#a8d8f0"'


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


def _var_key(v):
    if v.creator is None:
        return f"v{id(v)}"
    return f"v{id(v.creator)}_{v.index}"


def _var_label(v, verbose):
    """Name (and with ``verbose`` shape and dtype) of a variable node."""
    if v.data is None and v.creator is not None:
        # a data-less stand-in: the original variable, if the user still holds it,
        # knows the shape (and may have been renamed since)
        original = v.creator.outputs[v.index]()
        if original is not None:
            v = original
    label = v.name or ""
    if not label and v.data is not None and v.data.ndim == 0:
        label = f"{v.data.item():.4g}"  # an unnamed scalar (a constant, say): its value
    if verbose and v.data is not None:
        if label:
            label += ": "
        label += f"{v.data.shape} {v.data.dtype}"
    return label


def _var_node(v, verbose):
    style = _VARIABLE_STYLE if v.requires_grad else _CONSTANT_STYLE
    label = _var_label(v, verbose)
    if not label:
        style += ", width=0.4, height=0.3"  # nothing to show: a small dot-like node
    return f"{_var_key(v)} [label={_quote(label)}, {style}]"


def _func_node(f):
    return f"f{id(f)} [label={_quote(type(f).__name__)}, {_FUNCTION_STYLE}]"


def get_dot_graph(output, verbose=True):
    """Describe the graph that computed ``output`` in Graphviz's DOT language.

    Variables are ellipses labelled with their ``name`` (and, when ``verbose``,
    their shape and dtype); functions are boxes labelled with their class name.
    Nodes without data (what a function keeps of an input it does not need)
    have no shape unless the original variable is still alive.
    """
    if not isinstance(output, Variable):
        raise TypeError(f"get_dot_graph expects a Variable, got {type(output).__name__}")
    lines = ["digraph g {", "  rankdir=TB;", "  node [fontname=Helvetica, fontsize=11];"]
    seen_vars = {_var_key(output)}
    lines.append("  " + _var_node(output, verbose))
    # newest function first, like backward; a counter keeps equal generations stable
    funcs, seen_funcs, count = [], set(), 0
    if output.creator is not None:
        funcs.append((-output.creator.generation, count, output.creator))
        seen_funcs.add(id(output.creator))
    while funcs:
        f = heapq.heappop(funcs)[2]
        lines.append("  " + _func_node(f))
        for i, ref in enumerate(f.outputs):
            key = f"v{id(f)}_{i}"
            if key not in seen_vars:
                seen_vars.add(key)
                y = ref()
                if y is None:  # dropped by the user: draw it by position only
                    lines.append(f'  {key} [label="", {_VARIABLE_STYLE}, width=0.4, height=0.3]')
                else:
                    lines.append("  " + _var_node(y, verbose))
            lines.append(f"  f{id(f)} -> {key};")
        for x in f.inputs:
            key = _var_key(x)
            if key not in seen_vars:
                seen_vars.add(key)
                lines.append("  " + _var_node(x, verbose))
            lines.append(f"  {key} -> f{id(f)};")
            c = x.creator
            if c is not None and id(c) not in seen_funcs:
                seen_funcs.add(id(c))
                count += 1
                heapq.heappush(funcs, (-c.generation, count, c))
    lines.append("}")
    return "\n".join(lines) + "\n"


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


def plot_dot_graph(output, verbose=True, to_file="graph.png", renderer="auto"):
    """Draw the graph that computed ``output`` into ``to_file`` (PNG, SVG or PDF).

    The format follows the file's extension. The DOT text is always written
    beside it (``graph.png`` -> ``graph.dot``), first, so it survives any
    rendering failure. ``renderer``: ``"auto"``, ``"dot"`` or
    ``"graphviz-pure"`` (see :func:`find_renderer`). Returns a
    :class:`GraphImage`, which a notebook displays inline.
    """
    to_file = Path(to_file)
    fmt = to_file.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(
            f"cannot tell the image format from {str(to_file)!r}: use a file name ending "
            f"in .png, .svg or .pdf"
        )
    dot_text = get_dot_graph(output, verbose)
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
    "get_dot_graph", "plot_dot_graph", "find_renderer", "GraphImage",
    "RendererNotFoundError", "RenderError",
]
