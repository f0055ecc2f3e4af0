"""Every notebook is derived from its step script, Colab-ready, and runs headless."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys_tools = ROOT / "tools"
SCRIPTS = sorted((ROOT / "steps").glob("step[0-9][0-9]*.py"))
NAMES = [p.stem for p in SCRIPTS]


def _load_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbtool", sys_tools / "notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbtool = _load_tool()

# Code that works in a script next to the repository but not in a notebook opened
# alone (Colab, or the empty directory the tests execute notebooks in).
LOCAL_FILE_PATTERNS = {
    r"open\(\s*['\"](?!/)": "open() of a relative path",
    r"np\.(load|loadtxt|genfromtxt|fromfile)\(\s*['\"]": "NumPy reading a local file",
    r"(imread|read_csv|read_table|read_pickle|read_json)\(\s*['\"](?!/|https?:)":
        "reading a local file",
    r"Path\(\s*['\"][^'\"]*['\"]\s*\)\s*\.\s*(read_|open)": "reading a local file",
    r"__file__": "__file__ (a notebook has none)",
    r"sys\.path": "sys.path changes",
    r"os\.chdir|^\s*%cd\b": "changing directory",
    r"^\s*%(run|load)\b": "%run/%load of a local file",
    r"^\s*!": "a shell command",
    r"^\s*(from|import)\s+(steps\b|step\d\d)": "importing another step file",
}


def _cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]


def test_every_step_has_a_notebook_and_no_notebook_is_orphaned():
    result = subprocess.run(
        [sys.executable, str(sys_tools / "notebooks.py"), "check"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_colab_links_point_at_the_configured_repository():
    repository, branch = nbtool.project_settings()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repository), (
        f"[tool.dezero_like] repository must be a public GitHub address, got {repository!r}"
    )
    path = repository.removeprefix("https://github.com/")
    assert nbtool.colab_url("step07") == (
        f"https://colab.research.google.com/github/{path}/blob/{branch}/notebooks/step07.ipynb"
    )


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_colab_ready(name):
    cells = _cells(name)
    assert cells[0]["cell_type"] == "markdown" and cells[0]["source"].startswith("# Step ")
    # the badge comes right after the title and opens this very notebook
    badge = cells[1]["source"]
    assert cells[1]["cell_type"] == "markdown"
    assert "colab-badge.svg" in badge
    assert f"]({nbtool.colab_url(name)})" in badge
    assert badge.count(f"/notebooks/{name}.ipynb") == 1
    # the first code cell installs the package only when importing it fails
    setup = cells[2]
    assert setup["cell_type"] == "code"
    assert [c for c in cells if c["cell_type"] == "code"][0] is setup
    src = setup["source"]
    assert src.startswith("# Set-up") and "try:\n    import dezero_like\n" in src
    guarded = src.split("except ModuleNotFoundError:", 1)
    assert len(guarded) == 2 and "try:\n    import dezero_like\n" in guarded[0]
    install = [ln for ln in src.splitlines() if '"-m", "pip", "install"' in ln]
    assert len(install) == 1 and install[0].startswith("    pip = subprocess.run("), (
        "the only install must be one pip call inside the except branch"
    )
    assert src.index(install[0]) > src.index("except ModuleNotFoundError:")
    repository, branch = nbtool.project_settings()
    assert f'REPOSITORY, BRANCH = "{repository}", "{branch}"' in src
    source = [ln for ln in src.splitlines() if ln.startswith("    SOURCE = ")]
    extras = nbtool.needs_extras(nbtool.split_cells((ROOT / "steps" / f"{name}.py").read_text()))
    wanted = f"[{','.join(extras)}]" if extras else ""
    assert source and f'f"dezero_like{wanted} @ git+{{REPOSITORY}}@{{BRANCH}}"' in source[0]
    assert "==" not in source[0] and "<" not in source[0], "no pins in the install line"
    statements = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith("#"))
    assert not re.search(r"restart|os\.kill|do_shutdown|exit\(", statements, re.I), (
        "the set-up cell must work without a runtime restart"
    )
    # nothing else installs, and nothing is read from files next to the notebook
    later = [c["source"] for c in cells[3:] if c["cell_type"] == "code"]
    installs = re.compile(r"^\s*[%!]\s*pip\s+install|[\"']pip[\"'],\s*[\"']install[\"']", re.M)
    assert not any(installs.search(s) for s in later), "only the set-up cell installs"
    code = "\n".join(later)
    found = [why for pattern, why in LOCAL_FILE_PATTERNS.items()
             if re.search(pattern, code, re.MULTILINE)]
    assert not found, (
        f"{name}: notebooks must not rely on files next to them (Colab opens them alone): "
        + ", ".join(found)
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=NAMES)
def test_step_ends_with_exercise_and_self_check(script):
    cells = nbtool.split_cells(script.read_text())
    exercise = [i for i, (kind, src) in enumerate(cells)
                if kind == "markdown" and re.search(r"^## Exercise", src, re.MULTILINE)]
    assert exercise, f"{script.name} has no '## Exercise' Markdown cell"
    after = cells[exercise[-1] + 1:]
    checks = [src for kind, src in after if kind == "code" and "self-check passed" in src]
    assert checks, (
        f"{script.name}: the '## Exercise' cell must be followed by a code cell that "
        "prints 'self-check passed'"
    )
    assert "assert" in checks[-1], f"{script.name}: the self-check cell must assert something"


@pytest.mark.notebook
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_headless(name, notebook_cache, record_property):
    """Run the notebook on the CPU, without network, in an empty directory.

    The execution is shared with the docs build (see docs/contributing.md):
    whichever needs the notebook first in this test run executes it.
    """
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    done = nbtool.execute(name, notebook_cache)
    record_property("notebook_seconds", round(done.seconds, 2))
    nb = json.loads(done.path.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors
    printed = "".join(
        "".join(o.get("text", "")) if o.get("output_type") == "stream"
        else "".join(o.get("data", {}).get("text/plain", ""))
        for o in outputs
    )
    assert "self-check passed" in printed, f"{name}: the self-check cell did not pass"


@pytest.mark.notebook
def test_executing_a_notebook_prints_no_kernel_warning(tmp_path):
    """`python tools/notebooks.py execute` (and `build --execute`, the docs build) shows what
    the notebooks did, not a kernel's start-up warning once per notebook."""
    pytest.importorskip("nbclient")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "notebooks.py"), "execute",
                          "step01", "--cache", str(tmp_path), "--fresh"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    assert (tmp_path / "step01.ipynb").exists()


def test_setup_cell_failure_stops_the_notebook_with_a_short_message(tmp_path):
    """The set-up cell in a kernel where dezero_like is missing and the repository unreachable."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    unreachable = f"file://{tmp_path}/no-such-repository"
    setup = nbtool.setup_source(unreachable, "main", ["mpi"])
    nb = nbformat.v4.new_notebook(cells=[
        # None in sys.modules makes `import dezero_like` raise ImportError in this kernel,
        # as on a fresh Colab runtime where the package is not installed
        nbformat.v4.new_code_cell('import sys\nsys.modules["dezero_like"] = None'),
        nbformat.v4.new_code_cell(setup),
        nbformat.v4.new_code_cell('print("a later cell ran")'),
    ])
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        client.execute()
    error = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error and error[0].ename == "SetupFailed"
    shown = "\n".join(error[0].traceback)
    assert len(error[0].traceback) == 1, "the message, not a traceback"
    assert unreachable in shown and "To fix:" in shown and "upload" in shown
    # git's reason (no such repository), not pip's closing "note: This error originates ..."
    assert "pip said: fatal:" in shown or "pip said: ERROR:" in shown, shown
    assert "restart" not in shown.lower()
    assert not nb.cells[2].outputs, "Run all must stop at the set-up cell"


def test_setup_cell_shows_a_broken_install_as_itself(tmp_path):
    """dezero_like is there but fails to import (here: a shared library it needs is missing):
    the set-up cell shows that error, instead of reinstalling from the repository, which
    could not mend it and would hide the real cause behind pip's."""
    (tmp_path / "dezero_like.py").write_text(
        'raise ImportError("libexample.so.1: cannot open shared object file")\n')
    unreachable = f"file://{tmp_path}/no-such-repository"
    run = subprocess.run([sys.executable, "-c", nbtool.setup_source(unreachable, "main")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "ImportError: libexample.so.1" in run.stderr, run.stderr
    assert "SetupFailed" not in run.stderr and "pip said" not in run.stderr


def test_placeholder_repository_warns_when_building(capsys):
    warning = nbtool.placeholder_warning()
    repository, _ = nbtool.project_settings()
    if repository == nbtool.PLACEHOLDER_REPOSITORY:
        assert warning and "Publish your own copy" in warning
    else:
        assert warning is None


def test_the_steps_this_file_runs_over_were_found():
    """The parametrized tests above run over a list found on disk; an empty list would make
    them all skip as an empty parameter set (and a loop over it pass), so it is counted."""
    assert len(SCRIPTS) == 74, f"found {len(SCRIPTS)} step scripts, the course has 74"


def test_stored_outputs_do_not_carry_the_building_machines_path_to_the_package():
    """A NumPy warning raised inside the package names the file it came from: step 66's stored
    output read "/work/wt/<a worktree>/dezero_like/functions.py:104: RuntimeWarning", the
    folder of whoever executed it. The folder is taken off; URLs and other paths stay."""
    warning = {"output_type": "stream", "name": "stderr",
               "text": ["/home/me/clone/dezero_like/functions.py:104: RuntimeWarning: overflow\n",
                        "  return xp.exp(x)\n"]}
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": [
        "File \x1b[0;32m/usr/lib/python3/site-packages/dezero_like/core.py:5\x1b[0m"]}
    kept = {"output_type": "stream", "name": "stdout",
            "text": "https://github.com/dezero-like/dezero_like/blob/main/dezero_like/core.py "
                    "/home/me/clone/steps/step66.py\n"}
    assert nbtool.local_paths(warning)["text"][0].startswith("dezero_like/functions.py:104: ")
    assert "/usr/lib" not in nbtool.local_paths(error)["traceback"][0]
    assert nbtool.local_paths(kept) == kept
    for path in sorted((ROOT / "notebooks").glob("step*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for output in cell.get("outputs", []):
                assert nbtool.local_paths(output) == output, (path.name, output)


def test_the_notebooks_of_the_gpu_steps_ask_colab_for_a_gpu_runtime():
    """Opened from the badge, steps 54 and 71 (whose code asks whether a GPU is there, the
    marker tools/notebooks.py looks for) get a GPU runtime in Colab; the other notebooks keep
    the default, a CPU runtime."""
    asking = []
    for path in sorted((ROOT / "notebooks").glob("step*.ipynb")):
        meta = json.loads(path.read_text())["metadata"]
        if meta.get("accelerator") == "GPU":
            assert meta["colab"]["gpuType"] == "T4", path.name
            asking.append(path.stem)
        else:
            assert "gpuType" not in meta["colab"], path.name
    assert asking == ["step54", "step71"]
