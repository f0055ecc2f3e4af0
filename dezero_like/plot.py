"""Small plotting helpers shared by the steps: where files go, training curves, paths on a surface.

Matplotlib is imported inside the functions that draw, so ``import dezero_like``
does not pay for it. Every file a step writes goes into one folder per step,
``outputs/stepNN/`` under the current directory (:func:`output_dir`), and the
helpers print the full path of each file they write.
"""

from __future__ import annotations

import os
import tempfile
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path

import numpy as np


def output_dir(step):
    """Return the absolute folder ``outputs/stepNN`` under the current directory, creating it.

    ``step`` is the step's number (``output_dir(47)`` -> ``.../outputs/step47``).
    Where the current directory cannot hold it (read-only, or not yours), the folder
    is ``~/.dezero_like/outputs/stepNN`` instead (or, failing that, one in the system's
    temporary folder), and a line says so once.
    """
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 1 <= step <= 99:
        raise ValueError(f"output_dir expects a step number from 1 to 99, got {step!r}")
    name = f"step{int(step):02d}"
    folder = (Path.cwd() / "outputs" / name).resolve()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"cannot write into {folder}")
    except OSError as error:
        for fallback in (Path.home() / ".dezero_like" / "outputs" / name,
                         Path(tempfile.gettempdir()) / "dezero_like" / "outputs" / name):
            try:
                fallback.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            fallback = fallback.resolve()
            if fallback not in _FALLBACKS_NOTED:  # say it once per folder, not at every call
                _FALLBACKS_NOTED.add(fallback)
                print(f"note: {folder.parent} cannot be written here "
                      f"({error.strerror or error}); this step's files go to {fallback}")
            return fallback
        raise OSError(f"cannot create {folder}, nor a folder for the step's files in your home "
                      f"folder or {tempfile.gettempdir()}: run the step from a folder you can "
                      "write to") from error
    return folder


_FALLBACKS_NOTED = set()


def save_figure(fig, path):
    """Save a Matplotlib figure to ``path`` (format from its extension), print the path.

    A path without an extension gets ``.png`` (the file Matplotlib would write), and
    ``~`` is the home folder. Returns the full path of the file written.
    """
    path = Path(path).expanduser()
    if not path.suffix:  # Matplotlib would write "c.png" for "c": name the file it writes
        path = path.with_name(path.name + ".png")
    path = path.resolve()
    before = _saved_as.get(fig)
    if before is not None and before.with_suffix("") != path.with_suffix(""):
        # the same figure under a new name: a script's plot drawn into the figure still open
        # from before (Jupyter closes each cell's figure; a script does not)
        warnings.warn(
            f"save_figure: this figure was saved before as {before.name}, so {path.name} holds "
            "that picture too, with this one drawn into it. Start a new picture with "
            "fig, ax = plt.subplots() (or plt.figure()) before plotting it", UserWarning,
            stacklevel=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    _saved_as[fig] = path
    print("wrote", path)
    return path


_saved_as: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # figure -> the path saved


def draw_cells(ax, values, x, y, title, colours="#eee", fontsize=8):
    """Draw an array of one or two axes as numbered cells, its top-left corner at (x, y).

    One unit per cell, rows going down; ``title`` is written above the cells.
    ``colours`` is one colour for every cell, or an array of colours shaped like
    ``values`` (a cell's colour can say where its number came from). The steps on
    shapes (39-41) draw their arrays with it.
    """
    import matplotlib.pyplot as plt

    values = np.atleast_2d(np.asarray(values))
    if values.ndim != 2:
        raise ValueError(f"draw_cells draws arrays of one or two axes, got shape {values.shape}")
    colours = np.broadcast_to(np.atleast_2d(np.asarray(colours)), values.shape)
    for (i, j), v in np.ndenumerate(values):
        ax.add_patch(plt.Rectangle((x + j, y - i - 1), 1, 1, fc=colours[i, j], ec="k"))
        ax.text(x + j + 0.5, y - i - 0.5, f"{v:g}", ha="center", va="center",
                fontsize=fontsize)
    ax.text(x + values.shape[1] / 2, y + 0.25, title, ha="center", fontsize=fontsize)


def draw_arrow(ax, start, end, label, fontsize=8, lift=0.2):
    """A labelled arrow from ``start`` to ``end`` (``(x, y)`` points), the label above its middle.

    The pictures of arrays drawn with :func:`draw_cells` connect them with it
    (steps 39, 40 and 59): ``lift`` is how far above the arrow the label sits.
    """
    ax.annotate("", end, start, arrowprops={"arrowstyle": "->"})
    ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + lift, label, ha="center",
            fontsize=fontsize)


def written(image):
    """Print the full paths of the files behind a graph image, and return the image.

    Wrap :func:`dezero_like.utils.plot_dot_graph` with it, as the last
    expression of a notebook cell, so the cell both says where the files went
    and shows the picture: ``written(plot_dot_graph(y, to_file=out / "y.png"))``.
    """
    paths = [image.path, getattr(image, "dot_path", None)]
    print("wrote", " and ".join(str(Path(q).resolve()) for q in paths if q is not None))
    return image


def plot_curves(curves, *, xlabel="epoch", title=None, to_file=None, logy=False):
    """Draw training curves, one panel per quantity, and return the figure.

    ``curves`` maps a panel's name (its y label, e.g. ``"loss"``) to either a
    sequence of values or a dict ``{series name: sequence}`` (e.g. train and
    test accuracy, or one curve per optimizer). Values are plotted against
    1, 2, ... (the epoch or iteration number). With ``to_file`` the figure is
    also saved there (:func:`save_figure`). ``logy`` puts every panel's y axis
    on a log scale. An empty curve is refused; NaN or inf values (a training
    run that diverged) draw nothing, so they give a warning that says where
    they start.
    """
    import matplotlib.pyplot as plt

    if not isinstance(curves, Mapping):
        raise TypeError(
            f"plot_curves takes a dict {{name: values}}, got {type(curves).__name__}; "
            "e.g. plot_curves({'loss': losses}) (the name labels the panel's y axis)")
    if not curves:
        raise ValueError("plot_curves needs at least one curve, e.g. {'loss': losses}")
    panels = {}  # checked before anything is drawn
    for ylabel, series in curves.items():
        if not isinstance(series, Mapping):
            series = {None: series}
        panels[ylabel] = checked = {}
        for label, values in series.items():  # a loop, not a comprehension: the warnings'
            name = ylabel if label is None else f"{ylabel}/{label}"  # stacklevel counts frames
            checked[label] = _curve_values(name, values)
    fig, axes = plt.subplots(1, len(curves), figsize=(4.5 * len(curves), 3.3), squeeze=False)
    for ax, (ylabel, series) in zip(axes[0], panels.items()):
        for label, values in series.items():
            ax.plot(np.arange(1, len(values) + 1), values, label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
        if any(label is not None for label in series):
            ax.legend()
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return _finish(fig, to_file)


def _on_the_host(values):
    """A curve that a GPU training loop kept (a CuPy array, a Variable, or a list of 0-d GPU
    arrays or losses) copied to the host: NumPy refuses to read GPU memory by itself. Numbers
    and NumPy arrays come back as they are."""
    from dezero_like import cuda
    from dezero_like.core import Variable

    if not isinstance(values, (list, tuple)):
        on_gpu = cuda.is_cupy_array(values.data if isinstance(values, Variable) else values)
        return cuda.as_numpy(values) if on_gpu else values
    # float() of a 0-d GPU array or a one-number Variable reads it (CuPy waits for the GPU)
    return [float(v) if getattr(v, "ndim", None) == 0 else v for v in values]


def _curve_values(name, values):
    """``values`` as a 1-D float array; refuse an empty curve, warn about NaN/inf in it."""
    values = np.asarray(_on_the_host(values), dtype=float)
    if values.ndim != 1:
        raise ValueError(f"curve {name!r} must be a 1-D sequence of numbers, "
                         f"got shape {values.shape}")
    if values.size == 0:
        raise ValueError(f"curve {name!r} is empty: there is nothing to draw (were the values "
                         "appended to the list inside the training loop?)")
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))  # the first NaN/inf, counted from 0
        if bad[k:].all():
            warnings.warn(
                f"curve {name!r} is NaN or inf from point {k + 1} on (training diverged at point "
                f"{k + 1}?): "
                + (f"the panel shows only the {k} points before it" if k else "nothing is drawn")
                + ". A learning rate too large is a usual cause; debug_mode() finds the "
                "function that made the first NaN/inf",
                UserWarning, stacklevel=3)
        else:
            n = int(bad.sum())
            warnings.warn(
                f"curve {name!r} has {n} NaN/inf value{'s' if n > 1 else ''}, the first at point "
                f"{k + 1} ({values[k]}); the line has gaps there", UserWarning, stacklevel=3)
    return values


def plot_paths(f, paths, *, xlim, ylim, levels=30, title=None, to_file=None, log_levels=False):
    """Draw the contours of ``f(x, y)`` and each path of points on it; return the figure.

    ``f`` takes two NumPy grids and returns a grid of values. ``paths`` maps a
    name to a sequence of ``(x, y)`` points (e.g. the iterates of an
    optimizer). ``log_levels`` spaces the contour levels logarithmically, which
    suits functions with a deep narrow valley such as Rosenbrock's.
    """
    import matplotlib.pyplot as plt

    xs = np.linspace(*xlim, 200)
    ys = np.linspace(*ylim, 200)
    gx, gy = np.meshgrid(xs, ys)
    z = f(gx, gy)
    if log_levels:
        levels = np.geomspace(max(z.min(), 1e-3), z.max(), levels)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.contour(gx, gy, z, levels=levels, cmap="Greys", linewidths=0.7)
    for name, points in paths.items():
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 2:
            raise ValueError(f"path {name!r} must be a sequence of (x, y) points, got shape "
                             f"{points.shape}")
        ax.plot(points[:, 0], points[:, 1], ".-", ms=3, lw=1, label=name)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("$x_0$")
    ax.set_ylabel("$x_1$")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return _finish(fig, to_file)


def _finish(fig, to_file):
    """Lay the figure out, save it when ``to_file`` is given, and return it."""
    fig.tight_layout()
    if to_file is not None:
        save_figure(fig, to_file)
    return fig


__all__ = [
    "draw_arrow", "draw_cells", "output_dir", "plot_curves", "plot_paths", "save_figure",
    "written",
]
