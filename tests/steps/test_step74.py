"""Step 74: the MNIST MLP trained on 1 and on 2 processes takes the same steps."""

import re

import numpy as np
import pytest

from dezero_like import distributed as D

pytestmark = pytest.mark.skipif(not D.mpi_available(),
                                reason="mpi4py is not installed: pip install -e \".[mpi]\"")


def test_one_and_two_processes_end_with_the_same_weights(load_step):
    step = load_step(74)
    assert sorted(step.w1) == sorted(step.w2) == ["l0/W", "l0/b", "l2/W", "l2/b"]
    for key in step.w1:
        assert step.w1[key].dtype == np.float64
        np.testing.assert_allclose(step.w2[key], step.w1[key], rtol=1e-10, atol=1e-12)
    # the plotted curves: every step's loss, averaged over the processes, the same in both runs
    assert step.losses1.shape == step.losses2.shape == (60,)
    np.testing.assert_allclose(step.losses2, step.losses1, rtol=1e-10)
    assert step.losses1[-1] < step.losses1[0] / 3


def test_rank_0_alone_prints_and_the_runs_learn(load_step):
    step = load_step(74)
    for n, out in ((1, step.out1), (2, step.out2)):
        assert len(re.findall(r"^step +1/60 ", out, re.M)) == 1, "only rank 0 prints"
        losses = [float(v) for v in re.findall(r"loss (\d\.\d+)", out)]
        assert losses[-1] < losses[0] / 3
        acc = float(re.search(r"test accuracy (\d\.\d+)", out).group(1))
        assert acc > 0.8
        assert f"{n} process(es): 60 steps of {100 // n} examples each" in out
    assert "self-check passed" in step.output
