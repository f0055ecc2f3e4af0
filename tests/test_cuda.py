"""GPU support: CPU behaviour everywhere, and CPU/GPU agreement where a GPU exists."""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import cuda

HAS_GPU = cuda.gpu_available()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs CuPy and a CUDA GPU "
                               "(pip install cupy-cuda12x on a machine with an NVIDIA GPU)")
cpu_only = pytest.mark.skipif(HAS_GPU, reason="checks what a machine without a GPU is told")


# --------------------------------------------------------------------------- #
# CPU behaviour
# --------------------------------------------------------------------------- #


def test_get_array_module_is_numpy_for_cpu_data():
    x = np.ones(3)
    assert cuda.get_array_module(x) is np
    assert cuda.get_array_module(dz.Variable(x)) is np
    assert cuda.get_array_module(3.0) is np


def test_as_numpy_passes_arrays_through_and_converts_the_rest():
    x = np.arange(3.0)
    assert cuda.as_numpy(x) is x
    assert cuda.as_numpy(dz.Variable(x)) is x
    s = cuda.as_numpy(2.5)
    assert isinstance(s, np.ndarray) and s.shape == () and s == 2.5
    np.testing.assert_array_equal(cuda.as_numpy([1, 2]), [1, 2])


def test_gpu_enable_matches_gpu_available():
    assert cuda.gpu_enable is cuda.gpu_available()


@cpu_only
def test_as_cupy_without_gpu_says_how_to_fix_it():
    with pytest.raises(RuntimeError) as info:
        cuda.as_cupy(np.ones(2))
    msg = str(info.value)
    assert "A GPU was requested but" in msg
    if cuda._driver_cuda_major() is None:  # no NVIDIA driver here: how to get a GPU at all
        assert "Colab" in msg
        if cuda._installed_cupy_wheels():  # CuPy is here (.ci/run installs it): the GPU is not
            assert "is installed, but this machine has no NVIDIA driver" in msg
        else:
            assert "dezero_like[gpu]" in msg and "pip install" in msg and "cupy-cuda" in msg
    else:
        assert "cupy-cuda" in msg


def test_the_driver_version_is_read_without_cupy():
    major = cuda._driver_cuda_major()
    assert major is None or (isinstance(major, int) and major >= 9)


@pytest.mark.parametrize("major, installed, says", [
    (13, ["cupy-cuda12x"], "pip uninstall -y cupy-cuda12x, then pip install cupy-cuda13x"),
    (13, [], "CUDA 13, and CuPy's wheel for CUDA 13 is cupy-cuda13x: pip install cupy-cuda13x"),
    # the wheels share the folder cupy/: uninstalling the wrong one alone breaks the right one,
    # and pip install of the right one then does nothing ("Requirement already satisfied")
    (12, ["cupy-cuda12x", "cupy-cuda13x"], "pip uninstall -y cupy-cuda12x cupy-cuda13x, then "
                                           "pip install cupy-cuda12x"),
    # CuPy 14 (pyproject's gpu extra) runs CUDA 12 or 13: cupy-cuda11x would be CuPy 13,
    # and there is no cupy-cuda10x at all
    (11, [], "CuPy 14, which this package needs, runs on CUDA 12 or newer: update the NVIDIA"),
    (10, ["cupy-cuda11x"], "update the NVIDIA driver"),
    (12, ["cupy-cuda12x"], "cupy-cuda12x is the CuPy for this machine's CUDA 12 driver"),
    # no driver, but CuPy installed (Colab's CPU runtime): not "install CuPy" again
    (None, ["cupy-cuda12x"], "CuPy (cupy-cuda12x) is installed, but this machine has no NVIDIA "
                             "driver, so no GPU: run on a machine with an NVIDIA GPU. In Colab"),
    (None, [], "Install CuPy for your CUDA version (pip install 'dezero_like[gpu]'"),
])
def test_the_advice_names_the_cupy_wheel_of_the_drivers_cuda(monkeypatch, major, installed, says):
    # CuPy ships one wheel per CUDA major version; one built for another CUDA fails to import
    monkeypatch.setattr(cuda, "_driver_cuda_major", lambda: major)
    monkeypatch.setattr(cuda, "_installed_cupy_wheels", lambda: installed)
    assert says in cuda._gpu_help()


def test_odd_metadata_does_not_turn_the_no_gpu_error_into_another(monkeypatch):
    # a half-removed distribution has no METADATA (metadata is None on newer Pythons), one
    # without a Name raises KeyError there (importlib_metadata 8): neither may escape
    from importlib import metadata

    class Dist:
        def __init__(self, meta):
            self._meta = meta

        @property
        def metadata(self):
            if isinstance(self._meta, Exception):
                raise self._meta
            return self._meta

    dists = [Dist(None), Dist(KeyError("Name")), Dist({"Name": "cupy_cuda12x"}),
             Dist({"Name": None})]
    monkeypatch.setattr(metadata, "distributions", lambda: iter(dists))
    assert cuda._installed_cupy_wheels() == ["cupy-cuda12x"]
    monkeypatch.setattr(metadata, "distributions", lambda: 1 / 0)
    assert cuda._installed_cupy_wheels() == []
    monkeypatch.setattr(cuda, "_driver_cuda_major", lambda: 13)
    monkeypatch.setattr(cuda, "_cupy", lambda: None)
    with pytest.raises(RuntimeError, match="pip install cupy-cuda13x"):
        cuda.require_gpu()


def test_the_installed_cupy_wheels_are_found_by_their_distribution_names():
    from importlib import metadata

    wheels = cuda._installed_cupy_wheels()
    assert wheels == sorted(wheels)
    for name in wheels:
        assert name == "cupy" or name.startswith("cupy-cuda")
        assert metadata.version(name)


@cpu_only
def test_a_model_whose_to_gpu_failed_still_trains_on_the_cpu():
    from dezero_like.models import MLP

    model = MLP((4, 2))
    with pytest.raises(RuntimeError, match="GPU was requested"):
        model.to_gpu()
    assert model(np.ones((3, 5), np.float32)).shape == (3, 2)  # lazy weights, on the CPU


@cpu_only
def test_variable_to_gpu_without_gpu_is_a_clear_error_and_keeps_the_data():
    data = np.ones(2, dtype=np.float32)
    x = dz.Variable(data)
    fix = "pip install|no NVIDIA driver, so no GPU"  # no CuPy, or CuPy but no GPU
    with pytest.raises(RuntimeError, match=f"GPU was requested.*({fix})"):
        x.to_gpu()
    assert x.data is data
    assert x.to_cpu() is x and x.data is data


@cpu_only
def test_require_gpu_without_gpu():
    with pytest.raises(RuntimeError, match="CuPy is not installed|no CUDA GPU is visible"):
        cuda.require_gpu()


@pytest.mark.parametrize("cupy_init, reason", [
    (None, "CuPy is not installed"),
    ("raise ImportError('libcudart.so.12: cannot open shared object file')",
     "CuPy is installed but does not import (ImportError: libcudart.so.12: cannot open "
     "shared object"),
    ("raise OSError('CUDA driver library not found')",
     "CuPy is installed but does not import (OSError: CUDA driver library not found)"),
    ("import cupy_backends_missing", "CuPy is installed but does not import (No module named "
     "'cupy_backends_missing')"),
])
def test_require_gpu_says_whether_cupy_is_missing_or_fails_to_import(tmp_path, cupy_init, reason):
    """A CuPy whose CUDA libraries fail to load is not "not installed": the message says which."""
    import subprocess
    import sys

    if cupy_init is not None:  # a package named cupy that fails on import, first on the path
        (tmp_path / "cupy").mkdir()
        (tmp_path / "cupy" / "__init__.py").write_text(cupy_init + "\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "import builtins\n"
            "if sys.argv[2] == 'absent':\n"  # hide an installed CuPy: as on a machine without
            "    real = builtins.__import__\n"
            "    def no_cupy(name, *a, **k):\n"
            "        if name == 'cupy' or name.startswith('cupy.'):\n"
            "            raise ModuleNotFoundError(\"No module named 'cupy'\", name='cupy')\n"
            "        return real(name, *a, **k)\n"
            "    builtins.__import__ = no_cupy\n"
            "from dezero_like import cuda\n"
            "try:\n    cuda.require_gpu()\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path),
                          "absent" if cupy_init is None else "broken"],
                         capture_output=True, text=True, check=True).stdout
    assert f"A GPU was requested but {reason}" in out, out


# --------------------------------------------------------------------------- #
# One MLP training step, written once, run on either device
# --------------------------------------------------------------------------- #


def _mlp_problem(dtype=np.float32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 10)).astype(dtype)
    t = np.sin(x.sum(axis=1, keepdims=True)).astype(dtype)
    params = {
        "W1": (rng.standard_normal((10, 32)) * 0.3).astype(dtype),
        "b1": np.zeros(32, dtype=dtype),
        "W2": (rng.standard_normal((32, 1)) * 0.3).astype(dtype),
        "b2": np.zeros(1, dtype=dtype),
    }
    return x, t, params


def _train_steps(x, t, params, device, steps=5, lr=0.1):
    """Plain code with no device branches: only the arrays' location differs."""
    p = {k: dz.Parameter(v.copy()) for k, v in params.items()}
    x, t = dz.Variable(x, requires_grad=False), dz.Variable(t, requires_grad=False)
    if device == "gpu":
        for v in (x, t, *p.values()):
            v.to_gpu()
    losses = []
    for _ in range(steps):
        h = F.tanh(F.matmul(x, p["W1"]) + p["b1"])
        y = F.matmul(h, p["W2"]) + p["b2"]
        loss = F.sum((y - t) ** 2) / len(x)
        for v in p.values():
            v.cleargrad()
        loss.backward()
        for v in p.values():
            v.data = v.data - lr * v.grad.data
        losses.append(float(cuda.as_numpy(loss.data)))
    return losses, {k: cuda.as_numpy(v.data) for k, v in p.items()}


def test_mlp_steps_on_cpu_reduce_the_loss():
    losses, params = _train_steps(*_mlp_problem(), device="cpu")
    assert losses[-1] < losses[0]
    assert all(v.dtype == np.float32 for v in params.values())


@pytest.mark.gpu
@needs_gpu
def test_the_same_mlp_steps_agree_on_cpu_and_gpu():
    import cupy

    x, t, params = _mlp_problem()
    cpu_losses, cpu_params = _train_steps(x, t, params, "cpu")
    gpu_losses, gpu_params = _train_steps(x, t, params, "gpu")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    for k in params:
        np.testing.assert_allclose(gpu_params[k], cpu_params[k], rtol=1e-4, atol=1e-6)
    v = dz.Variable(np.ones(3, dtype=np.float32)).to_gpu()
    assert isinstance(v.data, cupy.ndarray) and cuda.get_array_module(v) is cupy
    assert isinstance(v.to_cpu().data, np.ndarray)


@pytest.mark.gpu
@needs_gpu
def test_float64_mlp_steps_agree_closely_on_cpu_and_gpu():
    x, t, params = _mlp_problem(np.float64)
    cpu_losses, cpu_params = _train_steps(x, t, params, "cpu")
    gpu_losses, gpu_params = _train_steps(x, t, params, "gpu")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-12)
    for k in params:
        np.testing.assert_allclose(gpu_params[k], cpu_params[k], rtol=1e-10, atol=1e-12)


@pytest.mark.gpu
@needs_gpu
def test_as_numpy_and_as_cupy_round_trip():
    x = np.arange(6.0).reshape(2, 3)
    g = cuda.as_cupy(x)
    assert cuda.get_array_module(g) is not np
    back = cuda.as_numpy(g)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, x)
