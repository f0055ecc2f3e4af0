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

    python tools/notebooks.py build    # write every notebook
    python tools/notebooks.py check    # exit 1 and name the notebooks that drifted
"""

from __future__ import annotations

import argparse
import json
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "steps"
NOTEBOOKS = ROOT / "notebooks"
CELL_MARK = re.compile(r"^# %%(?P<md> \[markdown\])?\s*$")

SETUP_SOURCE = """\
# Set-up: install dezero_like only when it is missing (a no-op locally and in CI).
# No runtime restart is needed afterwards.
try:
    import dezero_like
except ImportError:
    %pip install --quiet "dezero_like @ git+{repository}@{branch}"
    import dezero_like
print("dezero_like", dezero_like.__version__)"""


def project_settings():
    """Repository address and branch, configured once in pyproject.toml."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    cfg = data["tool"]["dezero_like"]
    return cfg["repository"].rstrip("/"), cfg["branch"]


def colab_url(name):
    repository, branch = project_settings()
    path = repository.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{branch}/notebooks/{name}.ipynb"


def split_cells(text):
    """Split a percent-format script into (kind, source) pairs."""
    cells = []
    kind, lines = None, []
    for line in text.splitlines():
        m = CELL_MARK.match(line)
        if m:
            if kind is not None:
                cells.append((kind, lines))
            kind, lines = ("markdown" if m.group("md") else "code"), []
        elif kind is None:
            if line.strip() and not line.startswith("#!"):
                raise ValueError("a step script must start with a '# %% [markdown]' title cell")
        else:
            lines.append(line)
    if kind is not None:
        cells.append((kind, lines))
    result = []
    for kind, lines in cells:
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            bad = [ln for ln in lines if ln and not (ln == "#" or ln.startswith("# "))]
            if bad:
                raise ValueError(f"markdown line not behind '# ': {bad[0]!r}")
            lines = [ln[2:] if ln.startswith("# ") else "" for ln in lines]
        if lines:
            result.append((kind, "\n".join(lines)))
    return result


def _cell(kind, source, cell_id):
    cell = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


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
    out = [_cell("markdown", cells[0][1], "title"), _cell("markdown", badge, "colab-badge"),
           _cell("code", SETUP_SOURCE.format(repository=repository, branch=branch), "setup")]
    for i, (kind, source) in enumerate(cells[1:], start=1):
        out.append(_cell(kind, source, f"cell-{i:02d}"))
    return {
        "cells": out,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "colab": {"provenance": []},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def render(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def step_scripts():
    return sorted(STEPS.glob("step[0-9][0-9]*.py"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "check"])
    args = parser.parse_args(argv)
    drifted = []
    NOTEBOOKS.mkdir(exist_ok=True)
    for script in step_scripts():
        target = NOTEBOOKS / f"{script.stem}.ipynb"
        text = render(build_notebook(script))
        if args.command == "build":
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
                print(f"wrote {target.relative_to(ROOT)}")
        elif not target.exists() or target.read_text() != text:
            drifted.append(target.relative_to(ROOT))
    stale = {p.stem for p in NOTEBOOKS.glob("step*.ipynb")} - {s.stem for s in step_scripts()}
    if args.command == "check":
        for p in drifted:
            print(f"{p} differs from its step script: run python tools/notebooks.py build")
        for s in sorted(stale):
            print(f"notebooks/{s}.ipynb has no steps/{s}.py")
        return 1 if drifted or stale else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
