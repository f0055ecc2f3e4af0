"""Step 71: fused GPU kernels. On the CPU: shown, importable without CuPy, and the
fused/plain comparison runs on NumPy; on a GPU: fused and plain training agree."""

import subprocess
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
    # in a fresh interpreter: importing the module imports no CuPy, and works without one
    probe = ("import sys\nimport dezero_like.cuda_kernels\nprint('cupy' in sys.modules)\n"
             "sys.modules['cupy'] = None\nimport importlib, dezero_like.cuda_kernels as k\n"
             "importlib.reload(k)\nprint(sorted(k._SPECS)[0])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "relu"]
    if not HAS_GPU:
        assert "not measured here (no GPU)" in step_output(load_step)
    else:
        costs = load_step(71).costs
        assert set(costs) == {"four operations", "cupy.fuse", "ElementwiseKernel"}


def step_output(load_step):
    return load_step(71).output


def test_the_exercise_kernel_text(load_step):
    step = load_step(71)
    assert step.TANH_GRAD[2] == "gx = gy * (1 - y * y)"


def test_raw_chars_are_the_raw_dtypes():
    # the quick per-call check (dtype.char) must accept exactly the dtypes the kernels are built for
    from dezero_like import cuda_kernels

    assert [np.dtype(c).name for c in cuda_kernels.RAW_CHARS] == list(cuda_kernels.RAW_DTYPES)


def test_sigmoid_graphs_four_boxes_against_one(load_step):
    import xml.etree.ElementTree as ET

    step = load_step(71)
    for image, boxes in ((step.four_ops_image, ["Add", "Div", "Exp", "Neg"]),
                         (step.fused_image, ["Sigmoid"])):
        assert image.path.parent == step.out_dir and image.path.parent.name == "step71"
        assert ET.fromstring(image.path.read_text()).tag.endswith("svg")
        dot = image.dot_path.read_text()
        drawn = [line.split('label="')[1].split('"')[0] for line in dot.splitlines()
                 if "shape=box" in line]
        assert sorted(drawn) == boxes, image.path.name
    assert "same values: True" in step.output
