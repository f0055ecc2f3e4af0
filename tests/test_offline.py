"""Offline, without MNIST: every entry point says so in one paragraph, no traceback.

The environment points ``DEZERO_LIKE_DATA`` at an empty folder and forbids
downloads, as on a machine with no network and no cached data set.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def offline_env(tmp_path, monkeypatch):
    empty = tmp_path / "no-data"
    empty.mkdir()
    monkeypatch.setenv("DEZERO_LIKE_OFFLINE", "1")
    monkeypatch.setenv("DEZERO_LIKE_DATA", str(empty))
    monkeypatch.delenv("DEZERO_LIKE_TRACEBACK", raising=False)
    env = dict(os.environ, MPLBACKEND="Agg")
    return empty, env


def _one_paragraph(text, folder):
    assert "Traceback" not in text and "During handling" not in text, text
    paragraph = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert len(paragraph) == 1, text
    line = paragraph[0]
    assert line.startswith("MNISTUnavailableError: MNIST files are not available")
    assert str(folder / "mnist") in line  # where it looked
    assert "DEZERO_LIKE_OFFLINE" in line and "DEZERO_LIKE_DATA" in line  # the two fixes
    return line


def test_mnist_step_script_fails_with_one_paragraph(offline_env, tmp_path):
    empty, env = offline_env
    result = subprocess.run([sys.executable, str(ROOT / "steps" / "step53.py")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 3
    _one_paragraph(result.stderr, empty)


def test_run_steps_goes_on_and_sums_up(offline_env, tmp_path):
    empty, env = offline_env
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "run_steps.py"), "1", "53",
                             "2", "--quiet"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 1
    out = result.stdout
    assert "--- step 02: ok" in out, "the steps after the MNIST step still run"
    assert "Traceback" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("ran 3 steps") and "2 ok" in last and "could not get MNIST [53]" in last


def test_docs_build_stops_at_once_with_the_paragraph(offline_env):
    empty, _ = offline_env
    spec = importlib.util.spec_from_file_location("build_docs_offline",
                                                  ROOT / "tools" / "build_docs.py")
    build_docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_docs)
    with pytest.raises(build_docs.DocsBuildError) as info:
        build_docs.check_mnist_available()
    message = str(info.value)
    steps = ", ".join(build_docs.MNIST_STEPS)
    assert message.startswith(f"the docs build executes the MNIST steps ({steps})")
    assert "step53" in steps
    # the tests' own list of MNIST steps (tests/conftest.py) is the same, so neither drifts
    from conftest import MNIST_STEPS

    assert list(build_docs.MNIST_STEPS) == [f"step{n}" for n in MNIST_STEPS]
    assert "To fix" in message and str(empty / "mnist") in message


def test_notebook_cell_shows_the_paragraph_only(offline_env, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    empty, _ = offline_env
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import dezero_like as dz\ndz.datasets.mnist_train_test()"),
    ])
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError):
        client.execute()
    (error,) = [o for o in nb.cells[0].outputs if o.output_type == "error"]
    assert len(error.traceback) == 1
    _one_paragraph(error.traceback[0], empty)


def test_run_steps_names_the_part_each_step_lacked(offline_env, tmp_path):
    """Exit status 3 means "a part is missing", MNIST or mpi4py: the runner's lines name the
    one the step's paragraph named (it once called every such step's part MNIST). mpi4py is
    hidden by a package of that name, first on the path, that fails to import."""
    _, env = offline_env
    hide = tmp_path / "hide" / "mpi4py"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError('mpi4py hidden by the test')\n")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hide.parent), str(ROOT),
                                                      env.get("PYTHONPATH")]))
    for quiet in ([], ["--quiet"]):
        result = subprocess.run([sys.executable, str(ROOT / "tools" / "run_steps.py"), "53",
                                 "73", *quiet], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 1, result.stderr[-2000:]
        out = result.stdout
        assert "--- step 53: skipped: MNIST is not available" in out, out[-2000:]
        assert "--- step 73: skipped: mpi4py is not available" in out, out[-2000:]
        assert "MPIUnavailableError: " in (out if quiet else result.stderr)
        last = out.strip().splitlines()[-1]
        assert "0 ok, 1 could not get MNIST [53]" in last, last
        assert '1 could not get mpi4py [73] (pip install -e ".[mpi]")' in last, last
