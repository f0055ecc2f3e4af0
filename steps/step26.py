# %% [markdown]
# # Step 26: Rendering graphs as images, inline in notebooks
#
# Step 25 described a graph in DOT text. Text is precise but hard to read for
# more than a dozen nodes; a picture shows the shape of the computation at a
# glance. Turning DOT into a picture means *laying out* the graph (placing the
# nodes in layers, routing the edges around each other), which is a hard
# problem that Graphviz's `dot` program solves well. We hand it our text.
#
# `dezero_like.utils.plot_dot_graph(y, to_file=out_dir / "graph.png")`:
#
# 1. writes the DOT text to `graph.dot` (first, so it is never lost);
# 2. runs a renderer on it, writing PNG, SVG or PDF by the file's extension;
# 3. returns an image object. When that object is the **last expression of a
#    notebook cell**, Jupyter shows the graph right below the cell (it asks
#    the object for SVG through its `_repr_svg_` method).
#
# Which renderer? The system Graphviz (`dot`) when it is installed, as on Colab.
# Otherwise `graphviz-pure`, a self-contained port of `dot` that pip installs
# together with dezero_like. If neither is there, the error says how to get one
# (docs/graph-rendering.md has the details). A renderer can also succeed with a
# complaint (`dot` shrinks a PNG too large for its bitmap, perhaps past reading):
# the complaint comes back as a Python warning, `RenderWarning`.
#
# Where do the files go? Every step that writes files puts them in one folder,
# `outputs/stepNN/` under the current directory (`dezero_like.plot.output_dir`
# makes it), and prints the full path of each file it writes.

# %% [markdown]
# ### The package code of this step
#
# In this step `graph` gains `SYSTEM_PROGRAM`, `FALLBACK_PROGRAM`, `NATIVE_FORMATS`,
# `FORMATS`, `RendererNotFoundError`, `RenderError`, `RenderWarning`, `find_renderer`,
# `GraphImage`, `MANY_NODES`, `plot_dot_graph`, `render_dot`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Two programs can turn DOT into a picture: Graphviz's `dot` (`SYSTEM_PROGRAM`) and
# `graphviz-pure` (`FALLBACK_PROGRAM`), which pip installs with the package. `NATIVE_FORMATS`
# records which file formats each one writes itself; graphviz-pure writes no PDF, so a PDF from
# it is made another way (below).

# %%
#| export dezero_like/graph.py
SYSTEM_PROGRAM = "dot"


#: The PyPI distribution (and command) used when no system Graphviz is found.
FALLBACK_PROGRAM = "graphviz-pure"


#: Formats each renderer writes by itself (graphviz-pure has no PDF writer yet).
NATIVE_FORMATS = {SYSTEM_PROGRAM: {"png", "svg", "pdf"}, FALLBACK_PROGRAM: {"png", "svg"}}


FORMATS = ("png", "svg", "pdf")


# %% [markdown]
# Two error classes keep two failures apart: no renderer is installed
# (`RendererNotFoundError`), or one ran and failed (`RenderError`, whose message carries the
# program's own error output). A renderer that succeeds but prints warnings gets a warning
# class, `RenderWarning`: the file is written, yet it may not be what the user hoped for.

# %%
#| export dezero_like/graph.py
class RendererNotFoundError(RuntimeError):
    """No program that can render DOT was found (neither Graphviz nor graphviz-pure)."""


# %%
#| export dezero_like/graph.py
class RenderError(RuntimeError):
    """The renderer ran but failed; the message carries its own error output."""


# %%
#| export dezero_like/graph.py
class RenderWarning(UserWarning):
    """The renderer wrote the image but printed warnings (passed on in the message)."""


# %% [markdown]
# `_installed_command` finds the `graphviz-pure` command through the file list of its installed
# distribution (`importlib.metadata`), in a `bin` or `Scripts` folder. So the command is found
# even when that folder is not on `PATH`, as happens in some Jupyter kernels and virtual
# environments.

# %%
#| export dezero_like/graph.py
import importlib.metadata
import os
from pathlib import Path


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


# %% [markdown]
# `find_renderer` tries the system's `dot` first, then `graphviz-pure`, and returns the name and
# path of the first it finds; `renderer` can ask for one of them only. When none is found, the
# error says how to install what was asked for: both ways for `"auto"`, only Graphviz for
# `"dot"`, only the pip package for `"graphviz-pure"`.

# %%
#| export dezero_like/graph.py
import shutil


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
    install_dot = (
        f"install Graphviz so that `{SYSTEM_PROGRAM}` is on PATH (apt-get install graphviz, "
        f"brew install graphviz, conda install graphviz, or choco install graphviz)"
    )
    install_pure = (
        f"pip install {FALLBACK_PROGRAM} (a dependency of dezero_like that was not "
        f"installed; reinstalling dezero_like brings it)"
    )
    if renderer == "auto":
        raise RendererNotFoundError(
            f"cannot draw the graph: a DOT renderer was not found. Fix it either way:\n"
            f"  1. {install_dot}, or\n  2. {install_pure}."
        )
    fix = install_dot if renderer == SYSTEM_PROGRAM else install_pure
    raise RendererNotFoundError(
        f"cannot draw the graph: the renderer {renderer!r} was not found. Fix it:\n  {fix}."
    )


# %% [markdown]
# `GraphImage` is what drawing returns. Jupyter shows an object inline when it has a
# `_repr_svg_` method, so a `plot_dot_graph(...)` call at the end of a cell displays the graph.
# Its paths are made absolute, so they stay right after a change of directory. Its SVG may be
# given as a function that makes it: the `svg` property calls it the first time the SVG is
# wanted (usually when a notebook displays the image) and keeps the text.

# %%
#| export dezero_like/graph.py
from pathlib import Path


class GraphImage:
    """A rendered graph: the file written, and an SVG that Jupyter shows inline.

    ``svg`` is the SVG text, or a function without arguments that returns it,
    called on first use only.
    """

    def __init__(self, path, dot_path, svg, renderer):
        self.path = Path(path).resolve()  # absolute: still right after a chdir
        self.dot_path = Path(dot_path).resolve()
        self._svg = svg
        self.renderer = renderer

    @property
    def svg(self):
        """The SVG text of the graph (made now if it was not made yet)."""
        if callable(self._svg):
            self._svg = self._svg()
        return self._svg

    def _repr_svg_(self):
        return self.svg

    def __repr__(self):
        return f"GraphImage({str(self.path)!r}, rendered by {self.renderer})"


# %% [markdown]
# `_run` starts the renderer with a list of arguments, never through a shell, so a path with
# spaces or shell characters reaches the program unchanged. (The program itself still reads an
# argument that starts with `-` as an option: `render_dot` passes only absolute paths.) A
# non-zero exit status becomes a `RenderError` that carries the program's error output. A zero
# status with something on the error output means the picture was made with a complaint, such
# as `dot`'s "graph is too large for cairo-renderer bitmaps. Scaling by 0.057": the complaint
# becomes a `RenderWarning`, with advice when the graph was too large.

# %%
#| export dezero_like/graph.py
import subprocess
import warnings


def _run(program, args, stdin=None):
    """Run the renderer with an argument list (never through a shell); return its output.

    ``stdin``: bytes for its standard input. Warnings it prints while succeeding
    are passed on as a :class:`RenderWarning`.
    """
    result = subprocess.run([program, *args], input=stdin, capture_output=True)
    err = result.stderr.decode("utf-8", errors="replace").strip()
    if result.returncode != 0:
        raise RenderError(f"{program} {' '.join(args)} failed (exit {result.returncode}): {err}")
    if err:
        if "too large" in err:
            hint = ("the picture is scaled down and may be unreadable: draw into an .svg file "
                    "(not scaled) or draw a smaller graph")
        else:
            hint = "the file was written, but check that it looks right"
        warnings.warn(RenderWarning(f"{Path(program).name} warned: {err}\n({hint})"),
                      stacklevel=2)
    return result.stdout


# %% [markdown]
# `_png_to_pdf` covers the one format graphviz-pure cannot write: it places a rendered PNG on a
# one-page PDF with matplotlib, the page being the size of the image at 96 dpi.

# %%
#| export dezero_like/graph.py
def _png_to_pdf(png_path, pdf_path):
    """Wrap a PNG in a one-page PDF (used when the renderer writes no PDF itself)."""
    import matplotlib.image
    from matplotlib.figure import Figure

    image = matplotlib.image.imread(str(png_path))
    dpi = 96
    fig = Figure(figsize=(image.shape[1] / dpi, image.shape[0] / dpi), dpi=dpi)
    fig.figimage(image, 0, 0)
    fig.savefig(str(pdf_path), dpi=dpi)


# %% [markdown]
# `plot_dot_graph` is `get_dot_graph` followed by `render_dot`. It first reads the format from
# the file's extension (`_format_of`, next cell), so a bad file name fails before the graph is
# walked. A file name passed second, `plot_dot_graph(y, "sphere.png")`, would land in `verbose`
# (the book's order) and the picture in `graph.png`: refused, with the keyword to write. Graphviz
# lays a graph out in time that grows faster than its size: a few hundred nodes (an RNN
# unrolled over 30 steps has about 480) take tens of seconds, and more can take minutes, so a
# graph of more than `MANY_NODES` nodes gets a warning first, with what to draw instead.

# %%
#| export dezero_like/graph.py
import os
import warnings

from dezero_like.graph import RenderWarning, get_dot_graph

MANY_NODES = 300  # above this, laying the graph out can take Graphviz minutes


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
    if isinstance(verbose, (str, os.PathLike)):
        raise TypeError(f"plot_dot_graph's second argument is verbose; to name the file, write "
                        f"plot_dot_graph(y, to_file={os.fspath(verbose)!r})")
    _format_of(to_file)  # a bad file name fails before any work
    dot_text = get_dot_graph(output, verbose, values)
    nodes = dot_text.count(" [label=")
    if nodes > MANY_NODES:
        warnings.warn(f"drawing {nodes} nodes: Graphviz may take minutes to lay them out. Draw a "
                      "smaller graph (fewer time steps, a smaller model, one batch) to see its "
                      "structure", RenderWarning, stacklevel=2)
    return render_dot(dot_text, to_file, renderer)


# %%
#| export dezero_like/graph.py
from pathlib import Path


def _format_of(to_file):
    fmt = Path(to_file).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        if fmt in ("dot", "gv"):  # the text, not a picture of it
            why = (f"{str(to_file)!r} names DOT text, which plot_dot_graph writes beside the "
                   "image it draws; for the text alone write get_dot_graph(y) to the file "
                   "yourself. For an image,")
        elif fmt:
            why = f"cannot draw {str(to_file)!r}: .{fmt} is not one of the image formats here;"
        else:
            why = f"cannot tell the image format from {str(to_file)!r}, which has no extension:"
        raise ValueError(f"{why} use a file name ending in .png, .svg or .pdf")
    return fmt


# %% [markdown]
# `render_dot` writes the DOT file first, beside the image (`graph.png` gives `graph.dot`), so
# the text survives any failure; when no renderer is found, the error gives the command that
# would finish the job. Text goes to files and comes back as UTF-8 whatever the locale, so a
# variable named `θ` draws everywhere. The renderer gets absolute paths, which cannot be taken
# for options (a file named `-g.png` would be). A format the renderer cannot write itself is made
# from a temporary PNG. The SVG shown in a notebook is the file itself, or one more run of the
# renderer, made only when the notebook first asks for it: on a large graph a second render
# costs as much as the first, and a script that only writes files never pays it.

# %%
#| export dezero_like/graph.py
import os
import tempfile
from pathlib import Path


def render_dot(dot_text, to_file, renderer="auto"):
    """Render DOT text into ``to_file`` (PNG, SVG or PDF); see :func:`plot_dot_graph`."""
    to_file = Path(to_file).expanduser()  # "~/g.png" is in the home folder, as in a shell
    fmt = _format_of(to_file)
    if to_file.parent != Path(""):
        to_file.parent.mkdir(parents=True, exist_ok=True)
    # absolute, so never read as an option (a file named "-g.png"); links are not followed
    to_file = Path(os.path.abspath(to_file))
    dot_path = to_file.with_suffix(".dot")
    dot_path.write_text(dot_text, encoding="utf-8")
    try:
        name, program = find_renderer(renderer)
    except RendererNotFoundError as e:
        command = SYSTEM_PROGRAM if renderer == "auto" else renderer
        # a renderer not in the table (renamed): the formats every renderer writes
        if fmt in NATIVE_FORMATS.get(command, set.intersection(*NATIVE_FORMATS.values())):
            finish = f"{command} -T{fmt} {dot_path} -o {to_file}"
        else:  # graphviz-pure writes no PDF: plot_dot_graph converts its PNG
            finish = (f"{command} -Tpng {dot_path} -o {to_file.with_suffix('.png')} (it writes "
                      f"no {fmt.upper()}; run plot_dot_graph again to get one)")
        raise RendererNotFoundError(
            f"{e}\nThe graph's DOT source was saved to {dot_path}; once a renderer is "
            f"installed: {finish}"
        ) from None
    if fmt in NATIVE_FORMATS[name]:
        _run(program, [f"-T{fmt}", str(dot_path), "-o", str(to_file)])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            png = Path(tmp).resolve() / "graph.png"
            _run(program, ["-Tpng", str(dot_path), "-o", str(png)])
            _png_to_pdf(png, to_file)
    if fmt == "svg":
        svg = to_file.read_text(encoding="utf-8")
    else:  # made from the text (the .dot file may be overwritten by then) on first display
        def svg():
            try:
                return _run(program, ["-Tsvg"], stdin=dot_text.encode("utf-8")).decode("utf-8")
            except FileNotFoundError:  # the renderer went away: look again, or say how to fix
                found = find_renderer(renderer)[1]
                return _run(found, ["-Tsvg"], stdin=dot_text.encode("utf-8")).decode("utf-8")
    return GraphImage(to_file, dot_path, svg, name)


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.graph import find_renderer
from dezero_like.plot import output_dir, written
from dezero_like.utils import plot_dot_graph

out_dir = output_dir(26)  # every file this step writes goes here

name, path = find_renderer()
print("renderer:", name)

# %% [markdown]
# ## The Goldstein–Price function
#
# Step 24 used it as a hard test for optimisation. Its graph is large enough
# that a picture pays off:
#
# $$f(x, y) = [1 + (x + y + 1)^2 (19 - 14x + 3x^2 - 14y + 6xy + 3y^2)]
# \cdot [30 + (2x - 3y)^2 (18 - 32x + 12x^2 + 48y - 36xy + 27y^2)]$$

# %%
def goldstein(x, y):
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)
    return a * b


x = dz.Variable(np.array(1.0), name="x")
y = dz.Variable(np.array(1.0), name="y")
z = goldstein(x, y)
z.name = "z"
z.backward()
print("z =", z.data, " dz/dx =", x.grad.data, " dz/dy =", y.grad.data)

# %% [markdown]
# Now the picture. In a notebook the next cell shows the graph; as a script it
# only writes the file (and prints where):

# %%
image = written(plot_dot_graph(z, verbose=False, to_file=out_dir / "goldstein.png"))
image

# %% [markdown]
# Read it from the top: the leaves `x` and `y` feed many functions, because
# each appears several times in the formula. Grey ellipses are the constants.
# Backward ran along these arrows in reverse, adding up the gradients that
# reach `x` and `y` through every path (step 14).
#
# The same call writes other formats; SVG is text (it scales without blurring
# and is easy to search), PDF is for printing:

# %%
svg_image = written(plot_dot_graph(z, verbose=False, to_file=out_dir / "goldstein.svg"))
svg_text = svg_image.path.read_text(encoding="utf-8")
print("SVG mentions x:", ">x<" in svg_text, " bytes:", len(svg_text))

# %% [markdown]
# With `verbose=True` (the default) the labels show shapes and dtypes. Arrays
# read better in that form:

# %%
a = dz.Variable(np.linspace(0, 1, 6).reshape(2, 3), name="a")
W = dz.Variable(np.ones((2, 3)), name="W")
h = a * W
h.name = "h"
out = F.sum(h * h)
out.name = "out"
written(plot_dot_graph(out, to_file=out_dir / "small.png"))

# %% [markdown]
# ## Exercise 1: draw the Sphere function
# Draw the graph of the Sphere function $x^2 + y^2$ for two variables named
# `"p"` and `"q"` into `sphere.svg` (in `out_dir`), and keep the returned
# object in `sphere_image`. Its SVG text should name both variables.

# %%
#| exercise
sphere_image = ...  # Variables named p and q, their Sphere drawn as goldstein.svg was above

# %%
#| solution
p = dz.Variable(np.array(0.5), name="p")
q = dz.Variable(np.array(-1.0), name="q")
sphere_image = written(plot_dot_graph(p**2 + q**2, verbose=False, to_file=out_dir / "sphere.svg"))

# %%
#| check
assert hasattr(sphere_image, "_repr_svg_"), (
    f"sphere_image should be what plot_dot_graph returns, got {type(sphere_image).__name__}"
)
assert sphere_image.path.suffix == ".svg", f"draw into an .svg file, got {sphere_image.path.name}"
svg = sphere_image._repr_svg_()
assert ">p<" in svg and ">q<" in svg, "the SVG does not show p and q: name the variables p and q"
print("self-check passed: sphere.svg shows the variables p and q")

# %% [markdown]
# ## Exercise 2: the format from the file name
# `plot_dot_graph` picks the image format from the file's extension, and fails
# on a bad name *before* any rendering. Write that helper yourself:
# `format_of(to_file)` returns `"png"`, `"svg"` or `"pdf"` (lower case, so
# `"G.SVG"` gives `"svg"`) for a `str` or a `Path`, and raises `ValueError`
# for any other extension, or none. Hint: `pathlib.Path` knows a file's
# extension, dot included. The self-check compares it with the package's own
# helper on a list of names.

# %%
#| exercise
from pathlib import Path


def format_of(to_file):
    raise NotImplementedError("Exercise (step 26): the name's extension, normalised, "
                              "or a ValueError")

# %%
#| solution
from pathlib import Path


def format_of(to_file):
    fmt = Path(to_file).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"cannot tell the image format from {str(to_file)!r}")
    return fmt

# %%
#| check
from pathlib import Path

from dezero_like import graph

for name in ["graph.png", "G.SVG", Path("out") / "x.pdf", "a.b.svg"]:
    try:
        got = format_of(name)
    except NotImplementedError as e:
        raise AssertionError(f"format_of is not written yet: {e}") from None
    expected = graph._format_of(name)
    assert got == expected, f"format_of({name!r}) should be {expected!r}, got {got!r}"
for name in ["graph.jpg", "graph", "png", Path("dir.png") / "file"]:
    try:
        format_of(name)
    except ValueError:
        continue
    raise AssertionError(f"format_of({name!r}) should raise ValueError: not a .png/.svg/.pdf name")
print("self-check passed: format_of agrees with the package and rejects other names")
