"""Step 71: fused GPU kernels. On the CPU: shown, importable without CuPy, and the
fused/plain comparison runs on NumPy; on a GPU: fused and plain training agree."""

import sys

import numpy as np

from dezero_like import cuda

HAS_GPU = cuda.gpu_available()


def test_fused_and_plain_training_agree(load_step):
    step = load_step(71)
    np.testing.assert_allclose(step.fused_losses, step.plain_losses, rtol=1e-5, atol=1e-6)
    assert step.fused_losses[-1] < step.fused_losses[0]
    assert "self-check passed" in step.output


def test_the_kernels_module_needs_no_cupy_to_import(load_step):
    load_step(71)
    from dezero_like import cuda_kernels

    assert set(cuda_kernels._SPECS) >= {"sigmoid", "sigmoid_grad", "sgd", "softmax_ce_grad", "relu"}
    if not HAS_GPU:
        assert "cupy" not in sys.modules or not cuda.gpu_available()
        assert "not measured here (no GPU)" in step_output(load_step)
    else:
        costs = load_step(71).costs
        assert set(costs) == {"four operations", "cupy.fuse", "ElementwiseKernel"}


def step_output(load_step):
    return load_step(71).output


def test_the_exercise_kernel_text(load_step):
    step = load_step(71)
    assert step.TANH_GRAD[2] == "gx = gy * (1 - y * y)"
