"""Build the notebooks from the step scripts, or check that they agree.

The step scripts are the single source of truth. Each ``steps/stepNN.py`` is
written in the "percent" format that Jupyter tools understand:

    # %% [markdown]
    # # Step 14: Using a variable twice
    # Prose, in Markdown, each line behind "# ".

    # %%
    code ...

This tool turns every script into ``notebooks/stepNN.ipynb``: the first
Markdown cell, then a Colab badge and a set-up cell (generated here, identical
in every notebook), then the script's cells in order.

Exercises: three code cells in a row whose first lines are ``#| exercise``,
``#| solution`` and ``#| check`` (see docs/contributing.md). The script runs
all three, so ``python steps/stepNN.py`` runs the reference solution. In the
notebook the markers are dropped; the solution cell becomes a collapsed Colab
form (a ``# @title`` line, ``cellView: form``, ``jupyter.source_hidden``), so
a learner sees the stub and the self-check with the answer one click away.

    python tools/notebooks.py build    # write every notebook (stored outputs kept)
    python tools/notebooks.py build --execute [step01 ...]   # ... and store fresh outputs
    python tools/notebooks.py check    # exit 1 and name the notebooks that drifted
    python tools/notebooks.py execute [step01 ...] [-j 2]   # run them headless, cached

``execute`` runs notebooks headless on the CPU, each in an empty temporary
directory (so a notebook that reads a file next to it fails), and keeps the
executed copy in a cache (``build/executed/`` by default). A cached copy is
reused while the notebook, the package sources and the NumPy/Python versions
are unchanged; the docs build and the test suite share this machinery, so each
notebook is executed once (see docs/contributing.md).

Stored outputs: the notebooks in the repository carry their outputs (printed
text, plots, graph pictures), so GitHub and Colab show them before anything
runs. ``build --execute`` executes the notebooks (through the same cache) and
writes each one back with its outputs and, in the notebook's metadata
(``dezero_like.source_hash``), a hash of the cell sources it was executed
from. ``build`` without ``--execute`` keeps the stored outputs of a notebook
whose sources did not change and drops them (outputs of other code would
mislead) when they did, and names each notebook left with no outputs. ``check``
compares sources, and fails on a notebook that carries no outputs; ``stale_outputs``
(used by the tests) tells whether stored outputs belong to the current sources.
A notebook that fails to execute keeps no outputs; the command names it, shows
the failing cell's error and exits 1 after trying all the others.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "steps"
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = ROOT / "dezero_like"
CACHE = ROOT / "build" / "executed"
CELL_MARK = re.compile(r"^# %%(?P<md> \[markdown\])?\s*$")
EXERCISE_MARK = re.compile(r"^#\|\s*(?P<role>exercise|solution|check)\s*$")
SOLUTION_TITLE = ('# @title Solution: tick use_solution, then run this cell for the answer'
                  ' { display-mode: "form" }')
# The learner's notebook never runs the solution by itself ("Run all" included):
# the switch is off until the learner ticks it. Stored outputs are made with it on.
SOLUTION_SWITCH = 'use_solution = False  # @param {type:"boolean"}'
SOLUTION_SWITCH_ON = SOLUTION_SWITCH.replace("False", "True", 1)
# In the notebook a self-check that fails prints why instead of stopping "Run all".
CHECK_HEAD = "try:  # the self-check: it prints what is still wrong, or 'self-check passed'"
CHECK_TAIL = ("except Exception as error:  # not solved yet: say why, and let the notebook go on\n"
              "    print(f\"not solved yet ({type(error).__name__}): {error}\")")
# Colab shows a form cell's title and hides its code; Jupyter collapses source_hidden cells.
SOLUTION_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}
TITLE = re.compile(r"^#\s*Step\s+(?P<number>\d+)\s*[:.\u2014-]\s*(?P<title>.+?)\s*$")

SETUP_SOURCE = """\
# Set-up: install dezero_like only when it is missing (a no-op locally and in CI).
# No runtime restart is needed afterwards. If the install fails, this cell says
# why and how to fix it, and stops "Run all" here. A package that is installed but
# fails to import (a broken dependency) shows its own error: a reinstall would not help.
try:
    import dezero_like{extra_imports}
except ModuleNotFoundError:
    import importlib, re, subprocess, sys
    REPOSITORY, BRANCH = "{repository}", "{branch}"
    SOURCE = f"dezero_like{extra} @ git+{{REPOSITORY}}@{{BRANCH}}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", SOURCE],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        plain = re.sub(r"\\x1b\\x5b[0-9;]*m", "", pip.stderr)  # without the terminal's colours
        lines = [line.strip() for line in plain.splitlines() if line.strip()] or ["(no message)"]
        causes = [line for line in lines if line.startswith(("fatal:", "ERROR:", "error:"))
                  and "subprocess-exited-with-error" not in line]
        said = (causes or lines)[-1]  # git's or pip's own reason, not pip's closing note
        class SetupFailed(Exception):
            def _render_traceback_(self):  # Jupyter and Colab show this text, not a traceback
                return [str(self)]
        raise SetupFailed(
            f"Could not install dezero_like from {{REPOSITORY}} (branch {{BRANCH}}); "
            f"pip said: {{said}}\\n"
            "To fix: put the address of a reachable copy (your fork, say) in REPOSITORY above and "
            "run this cell again; or download the repository as a zip, upload it to this runtime "
            "(Files panel) and run: %pip install /content/<the zip file>, then this cell again."
        ) from None
    importlib.invalidate_caches()
    import dezero_like
print("dezero_like", dezero_like.__version__)"""

# The address the repository ships with. Badges and set-up cells made from it
# work only for the original project: a copy warns until it points at itself.
PLACEHOLDER_REPOSITORY = "https://github.com/dezero-like/dezero_like"


def placeholder_warning():
    """A warning line while [tool.dezero_like] repository is the shipped address, else None."""
    repository, _ = project_settings()
    if repository != PLACEHOLDER_REPOSITORY:
        return None
    return (
        f"note: [tool.dezero_like] repository in pyproject.toml is still {PLACEHOLDER_REPOSITORY}, "
        "the address this project ships with. If you publish your own copy, set it to your "
        "repository's address and run python tools/notebooks.py build (README: \"Publish your "
        "own copy\")."
    )


def project_settings():
    """Repository address and branch, configured once in pyproject.toml."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: imported here, so run_steps.py needs no tomli
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            sys.exit("notebooks: Python 3.10 reads pyproject.toml with the tomli package, which "
                     "is not installed. To fix: pip install -e \".[docs]\" (or \".[test]\"), "
                     "which installs it, then run this again.")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    cfg = data["tool"]["dezero_like"]
    return cfg["repository"].rstrip("/"), cfg["branch"]


def colab_url(name):
    repository, branch = project_settings()
    path = repository.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{branch}/notebooks/{name}.ipynb"


def split_cells(text):
    """Split a percent-format script into (kind, source) pairs."""
    return [(kind, source) for kind, source, _ in split_cells_at(text)]


def split_cells_at(text):
    """``split_cells`` with each cell's first line: (kind, source, line), lines from 1."""
    cells = []
    kind, lines, first = None, [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        m = CELL_MARK.match(line)
        if m:
            if kind is not None:
                cells.append((kind, lines, first))
            kind, lines, first = ("markdown" if m.group("md") else "code"), [], number + 1
        elif kind is None:
            if line.strip() and not line.startswith("#!"):
                raise ValueError("a step script must start with a '# %% [markdown]' title cell")
        else:
            lines.append(line)
    if kind is not None:
        cells.append((kind, lines, first))
    result = []
    for kind, lines, first in cells:
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
            first += 1
        if kind == "markdown":
            bad = [ln for ln in lines if ln and not (ln == "#" or ln.startswith("# "))]
            if bad:
                raise ValueError(f"markdown line not behind '# ': {bad[0]!r}")
            lines = [ln[2:] if ln.startswith("# ") else "" for ln in lines]
        if lines:
            result.append((kind, "\n".join(lines), first))
    return result


def exercise_role(source):
    """``(role, body)`` for a cell's source: role "exercise", "solution", "check" or None.

    The role is the cell's first line, ``#| exercise`` (the learner's stub),
    ``#| solution`` (the reference answer) or ``#| check`` (the self-check);
    ``body`` is the source without that line. Other sources give ``(None, source)``.
    """
    first, _, rest = source.partition("\n")
    m = EXERCISE_MARK.match(first.strip())
    if not m:
        return None, source
    return m.group("role"), rest.lstrip("\n")


def exercises(cells):
    """``[(exercise, solution, check)]``: the cell indices of each exercise in ``cells``.

    ``cells`` is what ``split_cells`` returns. An exercise is three code cells in
    a row marked ``#| exercise``, ``#| solution`` and ``#| check``; a marker out
    of that order raises ValueError naming the cell.
    """
    roles = [exercise_role(src)[0] if kind == "code" else None for kind, src in cells]
    found = []
    for i, role in enumerate(roles):
        if role == "exercise":
            if roles[i + 1:i + 3] != ["solution", "check"]:
                raise ValueError(
                    f"cell {i}: an '#| exercise' cell must be followed by an '#| solution' "
                    "code cell and then a '#| check' code cell"
                )
            found.append((i, i + 1, i + 2))
        elif role is not None and not any(i in triple for triple in found):
            raise ValueError(f"cell {i}: '#| {role}' without the '#| exercise' cell before it")
    return found


def _indent(body):
    return textwrap.indent(body, "    ", lambda line: True).replace("\n    \n", "\n\n")


def notebook_cell_source(source):
    """``(source, metadata)`` of a code cell as the notebook shows it (exercise markers).

    The solution runs only when the learner ticks ``use_solution``; a self-check
    that fails prints "not solved yet" and the reason, so "Run all" goes on.
    """
    role, body = exercise_role(source)
    if role == "solution":
        text = f"{SOLUTION_TITLE}\n{SOLUTION_SWITCH}\nif use_solution:\n{_indent(body)}"
        return text, json.loads(json.dumps(SOLUTION_METADATA))
    if role == "check":
        return f"{CHECK_HEAD}\n{_indent(body)}\n{CHECK_TAIL}", {}
    return body, {}


def solved(nb):
    """A copy of the notebook ``nb`` with every solution switch on (for the stored outputs)."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "code" and SOLUTION_SWITCH in source.splitlines():
            cell["source"] = source.replace(SOLUTION_SWITCH, SOLUTION_SWITCH_ON, 1)
    return nb


def _cell(kind, source, cell_id, metadata=None):
    cell = {"cell_type": kind, "id": cell_id, "metadata": metadata or {}, "source": source}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


# Optional parts a step needs, recognised by an import in its code, with the
# modules that must import for the set-up cell to skip the install.
EXTRAS = {"mpi": ("from dezero_like import distributed", ("mpi4py",))}


def code_has(cells, marker):
    """Whether one of the code cells holds the text ``marker``."""
    return any(kind == "code" and marker in src for kind, src in cells)


def needs_extras(cells):
    """The package extras a step's code cells need (e.g. ["mpi"])."""
    return [name for name, (marker, _) in EXTRAS.items() if code_has(cells, marker)]


# A step whose code asks whether there is a GPU (steps 54 and 71) measures on one when it
# can: its notebook asks Colab for a GPU runtime (the free tier's T4), so a learner who opens
# it from the badge gets the GPU half too. Elsewhere (no GPU to give) it still runs on a CPU.
GPU_MARKER = "cuda.gpu_available()"


def wants_gpu(cells):
    """Whether a step's code cells ask for a GPU (``GPU_MARKER``)."""
    return code_has(cells, GPU_MARKER)


def setup_source(repository, branch, extras=()):
    """The set-up cell: install dezero_like (with ``extras``) only when an import fails."""
    modules = [m for name in extras for m in EXTRAS[name][1]]
    return SETUP_SOURCE.format(
        repository=repository, branch=branch,
        extra_imports="".join(f"\n    import {m}" for m in modules),
        extra=f"[{','.join(extras)}]" if extras else "",
    )


def build_notebook(script):
    """The notebook (as a dict) derived from one step script."""
    name = script.stem
    cells = split_cells(script.read_text())
    if not cells or cells[0][0] != "markdown":
        raise ValueError(f"{script}: the first cell must be the Markdown title")
    repository, branch = project_settings()
    badge = (
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"({colab_url(name)})"
    )
    try:
        exercises(cells)
    except ValueError as e:
        raise ValueError(f"{script}: {e}") from None
    out = [_cell("markdown", cells[0][1], "title"), _cell("markdown", badge, "colab-badge"),
           _cell("code", setup_source(repository, branch, needs_extras(cells)), "setup")]
    for i, (kind, source) in enumerate(cells[1:], start=1):
        metadata = None
        if kind == "code":
            source, metadata = notebook_cell_source(source)
        out.append(_cell(kind, source, f"cell-{i:02d}", metadata))
    metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    if wants_gpu(cells):  # Colab's own keys for "Runtime type: T4 GPU"
        metadata["accelerator"] = "GPU"
        metadata["colab"]["gpuType"] = "T4"
    return {"cells": out, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def render(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- #
# Stored outputs
# --------------------------------------------------------------------------- #

META_KEY = "dezero_like"


def source_hash(nb):
    """Hash of what a notebook's outputs depend on in the notebook: its cells' kinds and sources."""
    cells = [[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
              else c["source"]] for c in nb["cells"]]
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode()).hexdigest()


def strip_outputs(nb):
    """A copy of ``nb`` without outputs, execution counts or the stored-output metadata."""
    nb = json.loads(json.dumps(nb))
    nb["metadata"].pop(META_KEY, None)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


# where the package was imported from, in a warning or a traceback: "/home/me/clone/" of
# "/home/me/clone/dezero_like/core.py:12" (not a URL's ".../dezero-like/dezero_like/")
# (after a colour code of a traceback, "\x1b[0;32m", or anything but a letter, ":" or "/")
PACKAGE_PREFIX = re.compile(r"""(?:(\x1b\[[0-9;]*m)|(?<![\w:/.~-]))(?:[A-Za-z]:)?[/\\]"""
                            r"""(?:[^\s"'/\\]+[/\\])*?(?=dezero_like[/\\]\w+\.py)""")


def local_paths(output):
    """``output`` (one cell output) with the path of the folder that held the package, on the
    machine that executed the notebook, taken off: a learner's copy is elsewhere."""
    def clean(value):
        if isinstance(value, str):
            return PACKAGE_PREFIX.sub(r"\1", value)
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    output = dict(output)
    for key in ("text", "traceback", "evalue"):
        if key in output:
            output[key] = clean(output[key])
    return output


def with_outputs(built, executed):
    """The built notebook with the outputs of ``executed`` (same cells) and their source hash."""
    nb = json.loads(json.dumps(built))
    if len(executed["cells"]) != len(nb["cells"]):
        raise ValueError("the executed notebook does not have the built notebook's cells")
    for cell, done in zip(nb["cells"], executed["cells"]):
        if cell["cell_type"] == "code":
            cell["outputs"] = [local_paths(o) for o in done.get("outputs", [])]
            cell["execution_count"] = done.get("execution_count")
    nb["metadata"][META_KEY] = {"source_hash": source_hash(built)}
    return nb


def has_outputs(nb):
    return any(c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


def stale_outputs(nb):
    """Why the outputs stored in ``nb`` do not belong to its sources, or None when they do."""
    if not has_outputs(nb):
        return None
    stored = nb["metadata"].get(META_KEY, {}).get("source_hash")
    if stored is None:
        return "it has outputs but no source hash: run python tools/notebooks.py build --execute"
    if stored != source_hash(nb):
        return ("its outputs were made from other cell sources: "
                "run python tools/notebooks.py build --execute")
    return None


def without_outputs():
    """The stored notebooks (names, ``step50``) that carry no outputs at all: GitHub, Colab and
    the docs would show their code with nothing under it."""
    return [path.stem for path in sorted(NOTEBOOKS.glob("step*.ipynb"))
            if (nb := _read_json(path)) is not None and not has_outputs(nb)]


def _read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def built_text(script):
    """The notebook text ``build`` writes: the script's cells, plus still-valid stored outputs."""
    built = build_notebook(script)
    old = _read_json(NOTEBOOKS / f"{script.stem}.ipynb")
    if (old is not None and has_outputs(old) and stale_outputs(old) is None
            and render(strip_outputs(old)) == render(built)):
        return render(with_outputs(built, old))
    return render(built)


def step_scripts():
    return sorted(STEPS.glob("step[0-9][0-9]*.py"))


# The course's stages, in order: the first step of each and its title. A stage runs up to the
# step before the next stage's first; the README's and the site's curriculum group the steps
# under these headings, and each stage has one "Open experiment" (tests/test_docs.py).
STAGES = (
    (1, "From numerical to automatic differentiation"),
    (11, "Code that feels like Python"),
    (25, "Higher-order derivatives and seeing the graph"),
    (38, "Neural networks"),
    (57, "Convolution and recurrence"),
    (63, "How industrial frameworks run backprop"),
    (72, "Beyond one process"),
)


def stages(scripts=None):
    """``[(number, title, [scripts...]), ...]``: the step scripts grouped by stage, none empty."""
    scripts = step_scripts() if scripts is None else scripts
    groups = []
    for k, (first, title) in enumerate(STAGES):
        last = STAGES[k + 1][0] - 1 if k + 1 < len(STAGES) else float("inf")
        members = [s for s in scripts if first <= step_number(s) <= last]
        if members:
            groups.append((k + 1, title, members))
    return groups


def stage_heading(number, title, members):
    """``Stage 4: Neural networks (steps 38-56)``, the heading of one stage."""
    first, last = step_number(members[0]), step_number(members[-1])
    span = f"step {first:02d}" if first == last else f"steps {first:02d}\u2013{last:02d}"
    return f"Stage {number}: {title} ({span})"


def step_number(script):
    """``steps/step14.py`` -> 14."""
    return int(re.fullmatch(r"step(\d+)", Path(script).stem).group(1))


def step_title(script):
    """The title from the script's first Markdown cell: ``# # Step 14: Title`` -> ``Title``."""
    script = Path(script)
    kind, source = split_cells(script.read_text())[0]
    first = source.splitlines()[0] if source else ""
    m = TITLE.match(first)
    if kind != "markdown" or not m:
        raise ValueError(
            f"{script.name}: the first cell must be Markdown starting with "
            f"'# Step {step_number(script):02d}: Title', got {first!r}"
        )
    if int(m.group("number")) != step_number(script):
        raise ValueError(f"{script.name}: its title says step {m.group('number')}")
    return m.group("title")


# --------------------------------------------------------------------------- #
# Executing notebooks headless, once, into a cache
# --------------------------------------------------------------------------- #


class Executed(NamedTuple):
    """One executed notebook: where the executed copy is and how long it ran."""

    name: str
    path: Path
    seconds: float
    reused: bool


def execution_key(notebook):
    """Fingerprint of everything an execution's result depends on."""
    import numpy

    h = hashlib.sha256()
    h.update(render(strip_outputs(json.loads(Path(notebook).read_text()))).encode())
    for source in sorted(PACKAGE.rglob("*.py")):
        h.update(str(source.relative_to(PACKAGE)).encode())
        h.update(source.read_bytes())
    h.update(f"{platform.python_version()} numpy {numpy.__version__}".encode())
    return h.hexdigest()


@contextlib.contextmanager
def file_lock(path):
    """An exclusive lock on ``path`` (a no-op where fcntl is missing, e.g. Windows)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def kernel_config(sockets):
    """Settings for the kernel that executes a notebook: where the system has Unix sockets,
    the kernel talks to this process through socket files in the folder ``sockets``.

    Over TCP (jupyter_client's default) every kernel prints "Kernel is running over TCP
    without encryption" at start, once per notebook, and its ports on localhost are open to
    every user of the machine. The socket files are readable by this user only, and they
    live outside the notebook's working directory, which stays empty.
    """
    from traitlets.config import Config

    config = Config()
    if sys.platform != "win32":
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = os.path.join(sockets, "kernel")
    return config


def execute(name, cache=CACHE, *, fresh=False, timeout=600):
    """Execute ``notebooks/<name>.ipynb`` headless into ``cache``, or reuse the cached copy.

    The kernel runs on the CPU in an empty temporary directory, with matplotlib's
    inline backend (so ``plt.show()`` puts the figure in the notebook) and with
    pip told not to reach any index (``PIP_NO_INDEX``), so the Colab set-up cell
    can only ever be the no-op it is meant to be here. Safe to call from several
    processes at once: a per-notebook lock makes the second caller wait and reuse
    the first one's result. A failing cell raises ``nbclient``'s
    ``CellExecutionError`` (naming the cell) and nothing is cached.
    """
    import nbclient
    import nbformat

    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    source = NOTEBOOKS / f"{name}.ipynb"
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist: run python tools/notebooks.py build")
    key = execution_key(source)
    target, meta_path = cache / f"{name}.ipynb", cache / f"{name}.json"
    with file_lock(cache / f"{name}.lock"):
        if not fresh and target.exists() and meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta.get("key") == key:
                return Executed(name, target, meta["seconds"], reused=True)
        # the stored outputs show the reference solution at work: switches on
        nb = nbformat.from_dict(solved(nbformat.read(source, as_version=4)))
        env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline",
                   PIP_NO_INDEX="1", CUDA_VISIBLE_DEVICES="")
        env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        with tempfile.TemporaryDirectory(prefix=f"{name}-") as workdir, \
                tempfile.TemporaryDirectory(prefix="kernel-") as sockets:
            client = nbclient.NotebookClient(
                nb, timeout=timeout, kernel_name="python3", config=kernel_config(sockets),
                resources={"metadata": {"path": workdir}},
            )
            start = time.perf_counter()
            client.execute(env=env, cwd=workdir)
            seconds = time.perf_counter() - start
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        nbformat.write(nb, partial)
        os.replace(partial, target)
        meta_path.write_text(json.dumps({"key": key, "seconds": round(seconds, 3)}) + "\n")
        with open(cache / "executions.log", "a") as log:  # who ran what, for diagnosis
            log.write(f"{name} {seconds:.2f} s pid {os.getpid()}\n")
        return Executed(name, target, seconds, reused=False)


def execute_all(names, cache=CACHE, *, jobs=1, fresh=False):
    """Execute several notebooks (``jobs`` at a time); return their ``Executed`` records."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda n: execute(n, cache, fresh=fresh), names))


def store_outputs(names, cache=CACHE, *, jobs=1, fresh=False, out=print):
    """Execute ``names`` and write each notebook back with its outputs; return the failures.

    Each notebook is tried; a failure is reported (name and the error's last lines)
    and that notebook is left without outputs, so it is never stored half-run.
    """
    failures = {}

    def one(name):
        script = STEPS / f"{name}.py"
        target = NOTEBOOKS / f"{name}.ipynb"
        try:
            done = execute(name, cache, fresh=fresh)
        except Exception as e:  # noqa: BLE001 - reported, and the others still run
            text = str(e).strip().splitlines()
            failures[name] = "\n".join(text[-8:]) or type(e).__name__
            target.write_text(render(build_notebook(script)))
            out(f"{name}: FAILED ({type(e).__name__}); stored without outputs")
            return
        nb = with_outputs(build_notebook(script), json.loads(done.path.read_text()))
        target.write_text(render(nb))
        size = target.stat().st_size
        how = "cached run" if done.reused else "ran"
        out(f"{name}: {how} {done.seconds:6.2f} s, stored {size / 1024:.0f} KiB -> {target}")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, names))
    total = sum(p.stat().st_size for p in NOTEBOOKS.glob("*.ipynb"))
    out(f"{len(names) - len(failures)}/{len(names)} notebooks stored with outputs; "
        f"{NOTEBOOKS} holds {total / 1024 / 1024:.2f} MiB")
    for name, error in sorted(failures.items()):
        out(f"--- {name} failed:\n{error}")
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "check", "execute"])
    parser.add_argument("names", nargs="*",
                        help="execute, build --execute: notebooks to run (default: all)")
    parser.add_argument("--execute", action="store_true",
                        help="build: execute the notebooks and store their outputs in them")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="execute: kernels at a time")
    parser.add_argument("--cache", type=Path, default=CACHE, help="execute: cache directory")
    parser.add_argument("--fresh", action="store_true", help="execute: ignore cached results")
    args = parser.parse_intermixed_args(argv)
    if args.command == "execute":
        names = args.names or [s.stem for s in step_scripts()]
        total = 0.0
        for done in execute_all(names, args.cache, jobs=args.jobs, fresh=args.fresh):
            total += done.seconds
            how = "cached" if done.reused else "ran"
            print(f"{done.name}: {how} {done.seconds:6.2f} s -> {done.path}")
        print(f"{len(names)} notebooks, {total:.2f} s of kernel time")
        return 0
    drifted = []
    warning = placeholder_warning()
    if warning:
        print(warning, file=sys.stderr)
    NOTEBOOKS.mkdir(exist_ok=True)
    for script in step_scripts():
        target = NOTEBOOKS / f"{script.stem}.ipynb"
        text = built_text(script)
        if args.command == "build":
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
                print(f"wrote {target.relative_to(ROOT)}")
        elif not target.exists() or _sources_of(target) != render(build_notebook(script)):
            drifted.append(target.relative_to(ROOT))
    stale = {p.stem for p in NOTEBOOKS.glob("step*.ipynb")} - {s.stem for s in step_scripts()}
    bare = [] if args.execute else without_outputs()  # --execute is about to store them
    for name in bare:
        print(f"notebooks/{name}.ipynb has no stored outputs (its cells changed, so build "
              f"dropped them): run python tools/notebooks.py build --execute {name}",
              file=sys.stderr if args.command == "build" else sys.stdout)
    if args.command == "check":
        for p in drifted:
            print(f"{p} differs from its step script: run python tools/notebooks.py build")
        for s in sorted(stale):
            print(f"notebooks/{s}.ipynb has no steps/{s}.py")
        return 1 if drifted or stale or bare else 0
    if args.execute:
        names = args.names or [s.stem for s in step_scripts()]
        failures = store_outputs(names, args.cache, jobs=args.jobs, fresh=args.fresh)
        return 1 if failures else 0
    return 0


def _sources_of(path):
    """The notebook at ``path`` as ``build`` would write it without outputs."""
    nb = _read_json(path)
    return None if nb is None else render(strip_outputs(nb))


if __name__ == "__main__":
    sys.exit(main())
