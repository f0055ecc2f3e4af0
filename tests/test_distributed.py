"""Data-parallel training with MPI (steps 72-74): exact, and clear when MPI is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dezero_like import distributed as D

HERE = Path(__file__).resolve().parent
needs_mpi = pytest.mark.skipif(
    not D.mpi_available() or shutil.which("mpiexec") is None,
    reason="mpi4py and mpiexec are not installed: pip install -e \".[mpi]\"",
)


def mpiexec(n, script, *args, cwd):
    result = subprocess.run(["mpiexec", "-n", str(n), sys.executable, str(script), *args],
                            cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@needs_mpi
def test_two_processes_train_exactly_like_one_with_the_whole_batch(tmp_path):
    outs = {}
    for n in (1, 2):
        printed = mpiexec(n, HERE / "mpi" / "train_mlp.py", str(tmp_path / f"p{n}.npz"),
                          cwd=tmp_path)
        assert printed.startswith(f"{n} processes, 20 steps per epoch"), printed
        outs[n] = np.load(tmp_path / f"p{n}.npz")
    assert outs[1].files == outs[2].files and len(outs[1].files) == 4
    for key in outs[1].files:
        one, two = outs[1][key], outs[2][key]
        assert one.dtype == np.float64
        assert not np.array_equal(one, np.zeros_like(one))
        np.testing.assert_allclose(two, one, rtol=1e-12, atol=1e-14, err_msg=key)


@needs_mpi
def test_collectives_on_two_processes(tmp_path):
    printed = mpiexec(2, HERE / "mpi" / "check_collectives.py", cwd=tmp_path)
    # the two processes' lines may interleave in the shared stdout
    assert sorted(re.findall(r"rank (\d) of 2: collectives ok", printed)) == ["0", "1"], printed


def test_cost_model():
    n = 4e6
    assert D.naive_allreduce_bytes(n, 2) == n and D.ring_allreduce_bytes(n, 2) == n
    assert D.ring_allreduce_bytes(n, 8) == pytest.approx(2 * 7 / 8 * n)
    assert D.naive_allreduce_bytes(n, 8) == 7 * n  # grows with p; the ring stays below 2n
    assert all(D.ring_allreduce_bytes(n, p) < 2 * n for p in range(2, 64))


def test_importing_the_package_does_not_import_mpi(tmp_path):
    code = "import sys, dezero_like, dezero_like.distributed; print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_without_mpi4py_one_paragraph_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['mpi4py'] = None\n"  # as on a machine without mpi4py
            "from dezero_like.distributed import Communicator, mpi_available\n"
            "assert not mpi_available()\n"
            "Communicator()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 3
    assert "Traceback" not in out.stderr
    (line,) = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert line.startswith("MPIUnavailableError: Data-parallel training needs mpi4py")
    assert 'pip install -e ".[mpi]"' in line and "mpiexec -n 2" in line
