"""Step 54: one code path for CPU and GPU. Reads the shared MNIST test images, never downloads."""

import os
from pathlib import Path

import numpy as np
import pytest

from dezero_like import cuda

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
os.environ.setdefault("DEZERO_LIKE_OFFLINE", "1")
os.environ.setdefault("DEZERO_LIKE_DATA", str(SHARED_DATA))

HAS_GPU = cuda.gpu_available()


def test_softplus_written_once_matches_the_formula(load_step):
    step = load_step(54)
    a = np.array([-3.0, 0.0, 5.0])
    np.testing.assert_allclose(step.softplus(a), np.log(1 + np.exp(a)))


def test_models_start_from_the_same_weights(load_step):
    step = load_step(54)
    m1, m2 = step.make_model(), step.make_model()
    for p1, p2 in zip(m1.params(), m2.params()):
        np.testing.assert_array_equal(p1.data, p2.data)


def test_one_epoch_learns_on_the_cpu(load_step):
    step = load_step(54)
    loss, acc, seconds = step.results["cpu"]
    assert loss < 1.0 and acc > 0.85


def test_normalize_rows_exercise(load_step):
    step = load_step(54)
    out = step.normalize_rows(np.array([[0.0, 2.0], [6.0, 8.0]]))
    np.testing.assert_allclose(out, [[0.0, 1.0], [0.6, 0.8]])


@pytest.mark.skipif(HAS_GPU, reason="checks what a CPU-only machine is told")
def test_cpu_only_machine_is_told_clearly(load_step):
    out = load_step(54).output
    assert "No GPU available" in out and "this step runs on the CPU" in out
    assert "RuntimeError: A GPU was requested but" in out
    # what to do: install CuPy, or (CuPy installed, as by .ci/run and in Colab) get a GPU
    assert "pip install" in out or "is installed, but this machine has no NVIDIA driver" in out
    assert set(load_step(54).results) == {"cpu"}
    assert "self-check passed" in out


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="needs CuPy and a CUDA GPU")
def test_cpu_and_gpu_runs_agree(load_step):
    step = load_step(54)
    (l_cpu, a_cpu, _), (l_gpu, a_gpu, _) = step.results["cpu"], step.results["gpu"]
    assert abs(l_cpu - l_gpu) < 1e-3
    assert abs(a_cpu - a_gpu) <= 0.005
    assert "speed-up" in step.output


def test_crossover_is_measured_after_a_warm_up_and_plotted(load_step):
    step = load_step(54)
    assert len(step.timings["cpu"]) == len(step.WIDTHS) and min(step.timings["cpu"]) > 0
    assert set(step.timings) == ({"cpu", "gpu"} if HAS_GPU else {"cpu"})
    assert "cpu_gpu_crossover.png" in step.output and "warm-up" in step.output
    # the epoch sums its losses on the device and reads them once
    assert "sum_loss = sum_loss + loss.data" in Path(step.__file__).read_text()
