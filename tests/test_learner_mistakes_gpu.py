"""A learner moves the book's MNIST training to the GPU: the mistakes on the way.

Most of them were already refused early with the fix (a batch left on the CPU after
``model.to_gpu()``, labels on the other device in ``accuracy`` or the loss, a gradient made
before the model moved, ``to_gpu()`` without CuPy); the tests here pin what changed and what
the other tests did not reach:

* ``plt.plot(losses)`` of losses kept as GPU Variables said only "cuda.as_numpy(v.data)",
  which gives an array per loss; it now says ``float(loss)``, the one number a loss is;
* a batch and a model on different devices named the fixes for an array, a Variable and a
  model, not the DataLoader that made the batch; it names ``DataLoader(..., gpu=True)`` and
  ``loader.to_gpu()`` too;
* ``model.to_gpu()`` where CuPy imports but sees no device (a CPU runtime with CuPy
  installed, as Colab's) said "no CUDA GPU is visible" and dropped CuPy's own reason (no
  device, a driver too old); it now quotes it;
* optimizer state made on the GPU follows the model back to the CPU, and float16 weights
  or batches mixed with float32 train on the GPU as on the CPU (pinned here: both held).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import cuda, optimizers
from dezero_like.dataloaders import DataLoader
from dezero_like.datasets import Spiral
from dezero_like.models import MLP

needs_gpu = pytest.mark.skipif(not cuda.gpu_available(),
                               reason="no CuPy / CUDA GPU on this machine: GPU test skipped")


# --------------------------------------------------------------------------- #
# Without a GPU (CI): what to_gpu() says when CuPy imports but finds no device
# --------------------------------------------------------------------------- #


def _cupy_without_a_device(get_count):
    """A module in CuPy's place that imports and whose runtime answers with ``get_count``, as
    CuPy does on a machine without an NVIDIA GPU (the error is CuPy's CUDARuntimeError)."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray = type("ndarray", (), {})  # no array is one of its arrays
    cupy.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_count))
    return cupy


def test_to_gpu_where_cupy_sees_no_device_quotes_cupys_reason(monkeypatch):
    class CUDARuntimeError(RuntimeError):
        pass

    def no_device():
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    monkeypatch.setitem(sys.modules, "cupy", _cupy_without_a_device(no_device))
    model = MLP((4, 2))
    with pytest.raises(RuntimeError) as info:
        model.to_gpu()
    msg = str(info.value)
    assert ("A GPU was requested but no CUDA GPU is visible (CuPy says CUDARuntimeError: "
            "cudaErrorNoDevice: no CUDA-capable device is detected)") in msg, msg
    assert "Colab" in msg or "nvidia-smi" in msg or "pip install" in msg, msg  # and the fix
    assert model(np.ones((3, 5), np.float32)).shape == (3, 2)  # still trains, on the CPU


def test_a_cupy_that_counts_no_device_is_told_without_a_made_up_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _cupy_without_a_device(lambda: 0))
    with pytest.raises(RuntimeError, match=r"requested but no CUDA GPU is visible\. ") as info:
        DataLoader(Spiral(), 10, gpu=True)
    assert "CuPy says" not in str(info.value)


def test_the_real_cupy_without_a_device_is_quoted():
    """Where the real CuPy is installed on a machine without a GPU (CI), its own error."""
    try:
        import cupy
    except Exception:
        pytest.skip("CuPy does not import here: nothing of its own to quote")
    if getattr(cupy, "__file__", "").endswith("cupy_on_cpu.py") or cuda.gpu_available():
        pytest.skip("CuPy sees a device (or the emulator stands in): checks what a machine "
                    "without a GPU is told")
    with pytest.raises(RuntimeError, match=r"no CUDA GPU is visible \(CuPy says \w+"):
        cuda.require_gpu()


# --------------------------------------------------------------------------- #
# On a GPU (or the CuPy emulator)
# --------------------------------------------------------------------------- #


def _gpu_model_and_loss():
    np.random.seed(0)
    x = np.random.rand(8, 6).astype(np.float32)
    t = np.random.randint(0, 3, 8)
    model = MLP((5, 3))
    model.to_gpu()
    return model, F.softmax_cross_entropy(model(cuda.as_cupy(x)), cuda.as_cupy(t))


@pytest.mark.gpu
@needs_gpu
def test_plotting_losses_kept_as_gpu_variables_says_to_keep_float_of_each(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, loss = _gpu_model_and_loss()
    losses = [loss, loss]  # the CPU habit: plt.plot reads 0-d Variables there
    fig = plt.figure()
    try:
        with pytest.raises(TypeError, match=r"cannot read it: for a loss or an accuracy, keep "
                                            r"float\(v\).*losses\.append\(float\(loss\)\)"):
            plt.plot(losses)
        with pytest.raises(TypeError, match=r"keep float\(v\)"):
            np.mean([F.accuracy(model(cuda.as_cupy(np.ones((2, 6), np.float32))),
                                cuda.as_cupy(np.array([0, 1])))])
        # the fix the message gives draws the curve
        plt.plot([float(v) for v in losses])
        fig.savefig(tmp_path / "losses.png")
    finally:
        plt.close(fig)
    assert (tmp_path / "losses.png").stat().st_size > 0
    # an array (not a number) is told how to copy it, and nothing about losses
    with pytest.raises(TypeError, match=r"cuda\.as_numpy\(v\.data\)") as info:
        np.asarray(model.l0.W)
    assert "float(v)" not in str(info.value)


@pytest.mark.gpu
@needs_gpu
def test_a_batch_on_the_other_device_than_the_model_names_the_loaders_fix():
    dataset = Spiral()
    model = MLP((10, 3))
    model(np.zeros((1, 2), np.float32))  # weights made on the CPU
    model.to_gpu()
    x, t = next(iter(DataLoader(dataset, 10)))  # the loader forgotten: batches on the CPU
    with pytest.raises(TypeError, match=r"on the CPU \(a NumPy array\) is combined with a "
                                        r"Variable on the GPU.*DataLoader\(\.\.\., gpu=True\) or "
                                        r"loader\.to_gpu\(\)"):
        model(x)
    model.to_cpu()  # and the reverse: the loader moved, the model not
    x, t = next(iter(DataLoader(dataset, 10, gpu=True)))
    with pytest.raises(TypeError, match=r"on the GPU \(a CuPy array\) is combined with a "
                                        r"Variable on the CPU.*model\.to_gpu\(\)"):
        model(x)
    model.to_gpu()  # the fix: both on one device
    assert cuda.is_cupy_array(F.softmax_cross_entropy(model(x), t).data)


def _train(cls, devices, wdtype=np.float32, xdtype=np.float32):
    """The weights of a Linear layer after one step per device in ``devices`` ("c" or "g")."""
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((16, 6)).astype(xdtype), rng.integers(0, 5, 16)
    np.random.seed(3)
    layer = L.Linear(5, in_size=6, dtype=wdtype)
    optimizer = cls().setup(layer)
    for device in devices:
        (layer.to_gpu if device == "g" else layer.to_cpu)()
        xs, ts = (cuda.as_cupy(x), cuda.as_cupy(t)) if device == "g" else (x, t)
        layer.cleargrads()
        F.softmax_cross_entropy(layer(xs), ts).backward()
        optimizer.update()
    return cuda.as_numpy(layer.W.data)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", ["MomentumSGD", "AdaGrad", "AdaDelta", "Adam"])
def test_optimizer_state_made_on_the_gpu_follows_the_model_back_to_the_cpu(name):
    cls = getattr(optimizers, name)
    # the state is made on the CPU, grows on the GPU, and is used on the CPU again; a state
    # made afresh after a move would restart the moments (Adam's step count too)
    np.testing.assert_allclose(_train(cls, "cggc"), _train(cls, "cccc"), rtol=1e-5, atol=1e-7)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", ["SGD", "MomentumSGD", "Adam"])
@pytest.mark.parametrize("wdtype, xdtype", [(np.float16, np.float16), (np.float16, np.float32),
                                            (np.float32, np.float16)])
def test_float16_mixed_with_float32_trains_on_the_gpu_as_on_the_cpu(name, wdtype, xdtype):
    cls = getattr(optimizers, name)
    cpu, gpu = _train(cls, "ccc", wdtype, xdtype), _train(cls, "ggg", wdtype, xdtype)
    assert gpu.dtype == cpu.dtype == wdtype  # the weights keep their dtype on both devices
    # the GPU sums in another order: a float16 weight may land one of its ulps away
    np.testing.assert_allclose(gpu, cpu, rtol=0, atol=2 * np.finfo(wdtype).eps)


@pytest.mark.gpu
@needs_gpu
def test_a_gpu_model_saves_host_arrays_and_loads_back_onto_the_gpu(tmp_path):
    model, loss = _gpu_model_and_loss()
    model.save_weights(tmp_path / "w.npz")
    with np.load(tmp_path / "w.npz") as saved:
        assert {k: type(saved[k]) for k in saved} == {k: np.ndarray for k in saved}
    loaded = MLP((5, 3))
    loaded.to_gpu()  # before its first batch: the loaded weights go where the model is
    loaded.load_weights(tmp_path / "w.npz")
    assert all(cuda.is_cupy_array(p.data) for p in loaded.params())
    x = cuda.as_cupy(np.ones((2, 6), np.float32))
    assert dz.utils.array_equal(loaded(x), model(x))
