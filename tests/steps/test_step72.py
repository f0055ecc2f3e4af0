"""Step 72: averaged slice gradients equal the batch gradient; the ring all-reduce's cost."""

import numpy as np
import pytest

from dezero_like import distributed as D


def test_halves_average_to_the_whole_batch_and_uneven_slices_do_not(load_step):
    step = load_step(72)
    for key in step.whole:
        np.testing.assert_allclose(step.averaged[key], step.whole[key], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(step.weighted[key], step.whole[key], rtol=1e-12, atol=1e-15)
    assert np.abs(step.plain["l0/W"] - step.whole["l0/W"]).max() > 1e-4


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_ring_allreduce_sums_and_sends_what_the_model_says(load_step, p):
    step = load_step(72)
    rng = np.random.default_rng(p)
    arrays = [rng.normal(size=40 * p) for _ in range(p)]
    results, sent = step.ring_allreduce(arrays)
    total = np.sum(arrays, axis=0)
    assert all(np.allclose(r, total) for r in results)
    assert sent == [D.ring_allreduce_bytes(arrays[0].nbytes, p)] * p


def test_demo_prints_the_check(load_step):
    out = load_step(72).output
    assert "every worker holds the sum: True" in out
    assert "bytes sent per worker:      [12000, 12000, 12000, 12000]" in out
    assert "self-check passed" in out
