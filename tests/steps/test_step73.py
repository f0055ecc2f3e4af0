"""Step 73: the communicator in a one-process world, and on two processes via mpiexec."""

import re

import numpy as np
import pytest

from dezero_like import distributed as D

pytestmark = pytest.mark.skipif(not D.mpi_available(),
                                reason="mpi4py is not installed: pip install -e \".[mpi]\"")


def test_two_processes_share_the_mean_and_rank_0_weights(load_step):
    out = load_step(73).output
    lines = re.findall(r"rank (\d) of 2: mean of \[10r, 1\+r\] = \[5\.\s+1\.5\], "
                       r"W\[0,0\] ([+-]\d\.\d+) -> ([+-]\d\.\d+)", out)
    assert sorted(r for r, _, _ in lines) == ["0", "1"], out
    after = {a for _, _, a in lines}
    assert len(after) == 1, "after bcast_params both processes hold rank 0's weights"
    before = {r: b for r, b, _ in lines}
    assert before["0"] == after.pop()


def test_the_step_shows_the_package_code(load_step):
    out = load_step(73).output
    assert "def allreduce_mean(self, arrays):" in out
    assert "class AllreduceGrads:" in out
    assert "Communicator(rank=0, size=1)" in out and "self-check passed" in out


def test_run_mpi_reports_a_failing_program(load_step):
    step = load_step(73)
    with pytest.raises(RuntimeError, match="mpiexec -n 2 failed"):
        step.run_mpi("raise SystemExit(4)\n")
    np.testing.assert_array_equal(step.comm.allreduce_mean([np.arange(3.0)])[0], np.arange(3.0))


def test_the_picture_shows_each_rank_before_and_the_same_mean_after(load_step):
    step = load_step(73)
    path = step.figure_path
    assert path.name == "allreduce_mean.png" and path.parent.name == "step73"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    before, after = step.fig.axes
    for ax in (before, after):
        assert ax.get_xlabel() and ax.get_title()
    assert before.get_ylabel()
    # bar heights, one group per rank: what each process held, then what each received
    heights = [[[b.get_height() for b in bars] for bars in ax.containers] for ax in (before, after)]
    assert heights[0] == [[0.0, 1.0], [10.0, 2.0]]
    assert heights[1] == [[5.0, 1.5], [5.0, 1.5]]
    assert sorted(step.means) == [0, 1]  # read from both processes' lines
