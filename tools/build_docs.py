"""Build the documentation site (Sphinx + MyST-NB), with warnings as errors.

    python tools/build_docs.py                  # site in build/site, open build/site/index.html
    python tools/build_docs.py -j 2 --out DIR   # two kernels at a time, site in DIR

What it does, in order:

1. checks that every notebook is current with its step script;
2. executes every notebook headless into the notebook cache
   (``tools/notebooks.py execute``; a notebook whose inputs did not change is
   not run again);
3. stages the site sources: a copy of ``docs/`` plus generated pages (the
   curriculum index, one page per step made from its *executed* notebook with
   the step's diff appended and each exercise's solution collapsed, and one API
   page per package module);
4. runs ``sphinx-build -W --keep-going`` on the staged sources; Sphinx itself
   never executes a notebook (``nb_execution_mode = "off"``).

docs/contributing.md explains why the build is split like this.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
if str(TOOLS) not in sys.path:  # the sibling tools, also when this file is loaded by path
    sys.path.insert(0, str(TOOLS))

import step_diffs  # noqa: E402

import notebooks  # noqa: E402

ROOT = TOOLS.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "dezero_like"
BUILD = ROOT / "build"
MNIST_STEPS = ("step53", "step54", "step60", "step74")  # the steps that load MNIST (the network)
REMOTE_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


class DocsBuildError(RuntimeError):
    """The site could not be built; the message says why and what to run."""


def github_url(path):
    """Link to ``path`` (relative to the repository root) on the public repository."""
    repository, branch = notebooks.project_settings()
    return f"{repository}/blob/{branch}/{path}"


def api_modules(package=PACKAGE):
    """Dotted names of the package's public modules (private ``_name`` ones left out).

    Packages come first, then their modules, in file order; a module added
    later (layers, optimizers, ...) gets its API page without any edit here.
    """
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if path.name == "__init__.py":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        names.append(".".join(parts))
    return sorted(names, key=lambda n: (n.count("."), n))


def _automodule(module, *options):
    # autodoc writes reStructuredText, so its directive goes in an eval-rst block.
    lines = [f".. automodule:: {module}"] + [f"   :{opt}:" for opt in options]
    return "```{eval-rst}\n" + "\n".join(lines) + "\n```\n"


def api_page(module, is_package):
    heading = f"# `{module}`\n\n"
    if is_package:
        # A package's __init__ re-exports names documented on their own module's page.
        return heading + _automodule(module, "no-members")
    return heading + _automodule(
        module, "members", "undoc-members", "show-inheritance"
    )


def write_api_pages(stage):
    api = stage / "api"
    api.mkdir(parents=True, exist_ok=True)
    modules = api_modules()
    top = PACKAGE.name
    for module in modules:
        if module == top:
            continue
        is_package = (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()
        (api / f"{module}.md").write_text(api_page(module, is_package))
    children = "\n".join(m for m in modules if m != top)
    (api / "index.md").write_text(
        "# API reference\n\n"
        "Generated from the docstrings of the package. Each function's docstring gives its "
        "formula and its derivative; `core` is the file to read first.\n\n"
        f"{_automodule(top, 'no-members')}\n"
        f"```{{toctree}}\n:maxdepth: 1\n\n{children}\n```\n"
    )
    return modules


def curriculum_page(scripts):
    rows = []
    for number, stage_title, members in notebooks.stages(scripts):
        rows += [f"## {notebooks.stage_heading(number, stage_title, members)}", "",
                 "| Step | Title | Files |", "| ---: | --- | --- |"]
        for script in members:
            name = script.stem
            title = notebooks.step_title(script).replace("|", "\\|")
            files = " · ".join([
                f"[script]({github_url(f'steps/{name}.py')})",
                f"[notebook]({github_url(f'notebooks/{name}.ipynb')})",
                f"[test]({github_url(f'tests/steps/test_{name}.py')})",
                f"[Colab]({notebooks.colab_url(name)})",
            ])
            rows.append(
                f"| {notebooks.step_number(script):02d} | [{title}]({name}.ipynb) | {files} |")
        rows.append("")
    toc = "\n".join(s.stem for s in scripts)
    return (
        "# Curriculum\n\n"
        "Every step is a script (`steps/stepNN.py`, run it with `python steps/stepNN.py`), "
        "the same step as a notebook you can open in Colab, and a test that pins what the "
        "step introduces. The pages below are the notebooks, executed, each followed by the "
        "diff of its code against the previous step.\n\n"
        + "\n".join(rows)
        + f"\n\n```{{toctree}}\n:hidden:\n:maxdepth: 1\n\n{toc}\n```\n"
    )


def hide_source(cell):
    """Collapse a code cell's source on the site, as Colab and Jupyter do (an exercise's solution).

    The notebooks mark such a cell with ``jupyter.source_hidden``; MyST-NB collapses the
    source of a cell tagged ``hide-input`` into a ``<details>`` block, outputs still shown.
    """
    metadata = cell.setdefault("metadata", {})
    tags = metadata.setdefault("tags", [])
    if "hide-input" not in tags:
        tags.append("hide-input")
    metadata.setdefault("mystnb", {}).update(
        code_prompt_show="Show the solution", code_prompt_hide="Hide the solution"
    )


def step_page(executed, script):
    """The executed notebook plus a closing cell: links to the files and the step's diff."""
    nb = json.loads(Path(executed).read_text())
    name = script.stem
    for cell in nb["cells"]:  # the site shows its own copy of the badge: no network needed
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"])
            cell["source"] = text.replace(REMOTE_BADGE, "../_static/colab-badge.svg")
        elif cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            hide_source(cell)
    links = " · ".join([
        f"[`steps/{name}.py`]({github_url(f'steps/{name}.py')})",
        f"[`notebooks/{name}.ipynb`]({github_url(f'notebooks/{name}.ipynb')})",
        f"[`tests/steps/test_{name}.py`]({github_url(f'tests/steps/test_{name}.py')})",
    ])
    source = step_diffs.diff_markdown(script) + f"\n\nThis step's files: {links}."
    nb["cells"].append(
        {"cell_type": "markdown", "id": "docs-step-diff", "metadata": {}, "source": source}
    )
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def stage_sources(stage, executed):
    """Copy docs/ into ``stage`` and add the generated pages; return the staged directory."""
    if stage.exists():
        shutil.rmtree(stage)
    shutil.copytree(DOCS, stage, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    scripts = notebooks.step_scripts()
    steps = stage / "steps"
    steps.mkdir(exist_ok=True)
    (steps / "index.md").write_text(curriculum_page(scripts))
    for script in scripts:
        (steps / f"{script.stem}.ipynb").write_text(step_page(executed[script.stem], script))
    write_api_pages(stage)
    return stage


def check_mnist_available():
    """Fail at once, with the dataset's own paragraph, when the MNIST steps cannot get data.

    The build executes every notebook, MNIST steps included; without this check
    an offline machine would spend a minute executing notebooks first.
    """
    from dezero_like.datasets import MNISTUnavailableError, mnist_train_test

    try:
        mnist_train_test(progress=False)
    except MNISTUnavailableError as e:
        raise DocsBuildError(
            f"the docs build executes the MNIST steps ({', '.join(MNIST_STEPS)}), and {e}"
        ) from None


def check_notebooks_current():
    result = subprocess.run(
        [sys.executable, str(TOOLS / "notebooks.py"), "check"], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise DocsBuildError(
            "the notebooks are not current with the step scripts "
            "(run python tools/notebooks.py build):\n" + result.stdout + result.stderr
        )


def run_sphinx(stage, out, jobs=1):
    """sphinx-build with warnings as errors; raise DocsBuildError with its output on failure."""
    cmd = [
        sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
        "-j", str(jobs), "-d", str(stage / ".doctrees"), str(stage), str(out),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        raise DocsBuildError(
            f"sphinx-build failed (warnings are errors) with exit code {result.returncode}:\n"
            + result.stdout + result.stderr
        )
    return result


def build(out=BUILD / "site", cache=notebooks.CACHE, stage=BUILD / "docs-src", jobs=1,
          fresh=False):
    """Build the site into ``out``; return timings (seconds) of the two phases."""
    out, cache, stage = Path(out), Path(cache), Path(stage)
    check_notebooks_current()
    names = [s.stem for s in notebooks.step_scripts()]
    if set(MNIST_STEPS) & set(names):
        check_mnist_available()
    start = time.perf_counter()
    try:
        done = notebooks.execute_all(names, cache, jobs=jobs, fresh=fresh)
    except Exception as e:
        if type(e).__name__ != "CellExecutionError":
            raise
        plain = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # drop the traceback's colours
        raise DocsBuildError(f"a notebook failed while executing:\n{plain}") from e
    executed_s = time.perf_counter() - start
    stage_sources(stage, {d.name: d.path for d in done})
    start = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)
    run_sphinx(stage, out)  # Sphinx's own -j gains nothing on a 2-core machine
    sphinx_s = time.perf_counter() - start
    return {
        "notebooks": len(names),
        "executed": sum(not d.reused for d in done),
        "execute_s": executed_s,
        "kernel_s": sum(d.seconds for d in done),
        "sphinx_s": sphinx_s,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=BUILD / "site", help="where the site goes")
    parser.add_argument("--cache", type=Path, default=notebooks.CACHE,
                        help="executed-notebook cache")
    parser.add_argument("--stage", type=Path, default=BUILD / "docs-src",
                        help="where the sources are staged")
    parser.add_argument("-j", "--jobs", type=int, default=1,
                        help="notebooks executed at a time (kernels)")
    parser.add_argument("--fresh", action="store_true", help="execute every notebook again")
    args = parser.parse_args(argv)
    try:
        t = build(args.out, args.cache, args.stage, jobs=args.jobs, fresh=args.fresh)
    except DocsBuildError as e:
        print(e, file=sys.stderr)
        return 1
    print(
        f"{t['notebooks']} notebooks ({t['executed']} executed, {t['kernel_s']:.1f} s of kernel "
        f"time, {t['execute_s']:.1f} s wall); sphinx {t['sphinx_s']:.1f} s; "
        f"site: {args.out / 'index.html'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
