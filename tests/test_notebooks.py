"""Every notebook is derived from its step script, Colab-ready, and runs headless."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
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


def test_every_step_has_a_notebook_and_no_notebook_is_orphaned():
    result = subprocess.run(
        [sys.executable, str(sys_tools / "notebooks.py"), "check"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_colab_ready(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    cells = nb["cells"]
    badge = cells[1]["source"]
    assert "colab-badge.svg" in badge
    assert nbtool.colab_url(name) in badge
    assert badge.count(f"/notebooks/{name}.ipynb") == 1
    setup = cells[2]
    assert setup["cell_type"] == "code"
    assert "try:\n    import dezero_like\nexcept ImportError:" in setup["source"]
    code = "\n".join(c["source"] for c in cells if c["cell_type"] == "code")
    # nothing is read from files next to the notebook
    assert not re.search(r"open\(\s*['\"](?!/)", code), "notebooks must not read local files"
    assert not re.search(r"np\.load\(\s*['\"]", code)
    assert "sys.path" not in code


@pytest.mark.notebook
@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes_headless(name, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    env_backend = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    try:
        client = nbclient.NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        start = time.perf_counter()
        client.execute()
        elapsed = time.perf_counter() - start
    finally:
        if env_backend is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = env_backend
    timing = ROOT / ".pytest_cache" / "notebook-times"
    timing.mkdir(parents=True, exist_ok=True)
    (timing / f"{name}.txt").write_text(f"{elapsed:.2f}\n")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
