"""tools/gpu_check.sh, the one prepared run of the checks that need a real GPU.

A GPU machine is lent for minutes, so the script must work the first time it runs there.
Here it runs in its rehearsal mode (the CuPy emulator in CuPy's place) on two small steps:
what is checked is its plumbing (stages, verdicts, exit status, the files it returns), not
the GPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, STEPS

SCRIPT = ROOT / "tools" / "gpu_check.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="tools/gpu_check.sh needs bash and coreutils' timeout")


def _run(tmp_path, *stages, steps, data=None):
    env = dict(os.environ, GPU_CHECK_EMULATE="1", STEPS=steps, JOBS="2", STEPS_S="300",
               PYTHON=shutil.which("python3") or "python3")
    env.pop("OUT", None)
    if data is not None:
        env["DEZERO_LIKE_DATA"] = str(data)
    out = tmp_path / "out"
    result = subprocess.run(["bash", str(SCRIPT), str(out), *stages], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    return result, out


def test_every_stage_name_and_default_is_what_the_docs_say():
    text = SCRIPT.read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    for stage in ("tests", "steps", "bench"):
        assert f"run_{stage}() {{" in text
    assert "tools/gpu_check.sh" in (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")


def test_a_rehearsal_runs_the_steps_both_ways_and_says_the_benchmark_needs_a_gpu(tmp_path):
    result, out = _run(tmp_path, "steps", "bench", steps="1 2")
    assert result.returncode == 0, result.stdout + result.stderr
    summary = (out / "summary.txt").read_text()
    assert "steps: passed" in summary and "4 ok, 0 failed of 4 runs" in summary
    assert "bench: not run (emulation" in summary
    assert "every stage passed" in summary
    lines = (out / "steps.log").read_text().splitlines()
    for n in (1, 2):
        assert f"step {n} script: ok" in lines and f"step {n} notebook: ok" in lines
    assert sorted(p.name for p in out.iterdir()) == ["steps.log", "summary.txt"]


def test_a_failing_step_fails_the_run_and_its_output_comes_back(tmp_path):
    empty = tmp_path / "no-data"
    empty.mkdir()
    assert (STEPS / "step53.py").exists()
    result, out = _run(tmp_path, "steps", steps="53", data=empty)
    assert result.returncode == 1
    summary = (out / "summary.txt").read_text()
    assert "steps: FAILED" in summary and "0 ok, 2 failed of 2 runs" in summary
    assert "step 53 script: FAILED" in summary
    log = (out / "steps.log").read_text()
    assert "53-script (not ok): last lines" in log and "MNIST" in log


def test_an_unknown_stage_is_refused(tmp_path):
    result, _ = _run(tmp_path, "steps", "benchmarks", steps="1")
    assert result.returncode == 2
    assert "unknown stage 'benchmarks'" in result.stderr


def test_every_test_that_skips_without_a_gpu_is_marked_gpu_so_the_script_runs_it():
    # the tests stage runs `pytest -m gpu` over the files whose tests carry the gpu mark: a GPU
    # test that is only skipped without a GPU would never run on the GPU machine
    done = subprocess.run([sys.executable, "-m", "pytest", "-q",
                           "--collect-only", "-m", "gpu", "-p", "no:cacheprovider", "-n", "0",
                           "tests/test_stage6.py"], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert "test_hooks_and_benchmark_on_gpu" in done.stdout, done.stdout + done.stderr
