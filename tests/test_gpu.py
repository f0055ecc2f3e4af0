"""The GPU path on a real GPU: same numbers as NumPy, fused kernels, no hidden copies.

Every test here needs CuPy and a CUDA GPU and skips with that reason otherwise
(CI has no GPU). On a GPU machine: ``python -m pytest -m gpu``.

* every case of the PyTorch oracle (tests/test_oracle.py: every differentiable
  function and layer) gives the same values and gradients on CuPy as on NumPy;
* every optimizer takes the same step on both devices;
* the fused kernels of step 71 agree with the unfused path, in float32 and
  float64, with ``create_graph`` (which falls back to differentiable steps), and
  float16, complex and integer input reach them only where they compile;
* a training step copies nothing from the host to the device once its batch is
  there (Python numbers stay on the device as kernel arguments or fills).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like import cuda, optimizers
from dezero_like.models import MLP, Model

pytestmark = pytest.mark.gpu

needs_gpu = pytest.mark.skipif(not cuda.gpu_available(),
                               reason="no CuPy / CUDA GPU on this machine: GPU test skipped")


def _oracle_cases():
    path = Path(__file__).with_name("test_oracle.py")
    spec = importlib.util.spec_from_file_location("oracle_cases", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except pytest.skip.Exception:  # no PyTorch: the oracle's cases are skipped, with the reason
        return None, []  # (any other error in test_oracle.py is an error here too)
    return module, module.CASES


ORACLE, CASES = _oracle_cases()
# batch_norm's running statistics are made inside the case, on the CPU: see the
# dedicated test below, which puts them on the GPU (mixing devices is a TypeError).
CASES = [c for c in CASES if not c.name.startswith("batch_norm")]


@needs_gpu
@pytest.mark.skipif(ORACLE is None, reason="PyTorch is not installed: the oracle's cases "
                    "(tests/test_oracle.py) cannot be loaded")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_oracle_case_matches_numpy_on_the_gpu(case, monkeypatch):
    import cupy

    _, inputs = ORACLE._inputs(case, np.float64)
    results = []
    for device in (np.asarray, cuda.as_cupy):
        if device is cuda.as_cupy:  # the cases' constant arrays (labels, indices) move too
            for name, value in list(vars(ORACLE).items()):
                if isinstance(value, np.ndarray):
                    monkeypatch.setattr(ORACLE, name, cuda.as_cupy(value))
        leaves = [dz.Variable(device(a)) for a in inputs]
        ys = case.ours(*[v * 1 for v in leaves])
        ys = ys if isinstance(ys, tuple) else (ys,)
        weights = [np.random.default_rng(2).normal(size=y.shape) for y in ys]
        total = sum(F.sum(y * device(w)) for y, w in zip(ys, weights))
        total.backward()
        for y in ys:
            assert (type(y.data) is cupy.ndarray) == (device is cuda.as_cupy), case.name
        results.append(([cuda.as_numpy(y.data) for y in ys],
                        [None if v.grad is None else cuda.as_numpy(v.grad.data) for v in leaves]))
    monkeypatch.undo()
    (cpu_y, cpu_g), (gpu_y, gpu_g) = results
    for c, g in zip(cpu_y, gpu_y):
        np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-10, err_msg=case.name)
    for c, g in zip(cpu_g, gpu_g):
        assert (c is None) == (g is None), case.name
        if c is not None:
            np.testing.assert_allclose(g, c, rtol=1e-9, atol=1e-10, err_msg=case.name)


EDGE_CASES = {} if ORACLE is None else ORACLE.EDGE_CASES


@needs_gpu
@pytest.mark.skipif(ORACLE is None, reason="PyTorch is not installed: the oracle's cases "
                    "(tests/test_oracle.py) cannot be loaded")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_nan_and_ties_give_the_same_winners_on_the_gpu(name, dtype):
    """The oracle's nan-and-ties cases (checked against PyTorch on the CPU there): the GPU's
    kernels (max pooling's, among others) pick the same winners and give the same values."""
    data, ours, _ = EDGE_CASES[name]
    results = []
    for device in (np.asarray, cuda.as_cupy):
        x = dz.Variable(device(data.astype(dtype)))
        y = ours(x)
        w = np.arange(1, y.data.size + 1, dtype=dtype).reshape(y.shape)
        F.sum(y * device(w)).backward()
        results.append((cuda.as_numpy(y.data), cuda.as_numpy(x.grad.data)))
    (cpu_y, cpu_g), (gpu_y, gpu_g) = results
    np.testing.assert_array_equal(gpu_y, cpu_y, err_msg=f"{name} value")
    np.testing.assert_array_equal(gpu_g, cpu_g, err_msg=f"{name} gradient")


@needs_gpu
def test_gradient_check_and_numerical_grad_take_gpu_input():
    from dezero_like.utils import gradient_check, numerical_grad

    x = cuda.as_cupy(np.random.default_rng(0).normal(size=(3, 4)))
    assert gradient_check(F.tanh, x)
    assert gradient_check(F.tanh, dz.Variable(x))
    expected = 1 - np.tanh(cuda.as_numpy(x)) ** 2
    np.testing.assert_allclose(cuda.as_numpy(numerical_grad(F.tanh, x)), expected, atol=1e-6)


OPTIMIZERS = {  # every optimizer and every hook of dezero_like.optimizers
    "SGD": lambda model: optimizers.SGD(lr=0.1),
    "MomentumSGD": lambda model: optimizers.MomentumSGD(lr=0.1),
    "AdaGrad": lambda model: optimizers.AdaGrad(lr=0.1),
    "AdaDelta": lambda model: optimizers.AdaDelta(),
    "Adam": lambda model: optimizers.Adam(alpha=0.01),
    "WeightDecay": lambda model: optimizers.SGD(lr=0.1).add_hook(optimizers.WeightDecay(0.01)),
    "ClipGrad": lambda model: optimizers.SGD(lr=0.1).add_hook(optimizers.ClipGrad(0.1)),
    "FreezeParam": lambda model: optimizers.SGD(lr=0.1).add_hook(
        optimizers.FreezeParam(model.l0)),
}


def _public_classes(module, base=None):
    return {name for name, value in vars(module).items()
            if inspect.isclass(value) and value.__module__ == module.__name__
            and (base is None or issubclass(value, base))}


def test_the_gpu_tests_name_every_optimizer_hook_and_layer():
    """Runs without a GPU too: a new optimizer, hook or layer must get a GPU case here."""
    assert _public_classes(optimizers) - {"Optimizer"} == set(OPTIMIZERS)
    layers = _public_classes(L, L.Layer) | _public_classes(Lc, L.Layer)
    assert layers - {"Layer"} == set(LAYERS)


@needs_gpu
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_optimizer_takes_the_same_steps_on_both_devices(name, dtype):
    x = np.random.default_rng(0).normal(size=(8, 5)).astype(dtype)
    t = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    params = []
    for gpu in (False, True):
        np.random.seed(0)
        model = MLP((6, 3), activation=F.sigmoid)
        model(x)  # same initial weights on both devices
        for p in model.params():
            p.data = p.data.astype(dtype)
        opt = OPTIMIZERS[name](model).setup(model)
        xs, ts = (cuda.as_cupy(x), cuda.as_cupy(t)) if gpu else (x, t)
        if gpu:
            model.to_gpu()
        for _ in range(3):
            loss = F.softmax_cross_entropy(model(xs), ts)
            model.cleargrads()
            loss.backward()
            opt.update()
        params.append([cuda.as_numpy(p.data) for p in model.params()])
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for c, g in zip(*params):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, c, rtol=tol, atol=tol)


IDS = np.array([0, 3, 6, 3, 1])
LAYERS = {  # every layer: how to make it, its input, and how many calls (RNNs keep state)
    "Linear": (lambda: L.Linear(4), (5, 3), 1),
    "Conv2d": (lambda: Lc.Conv2d(4, 3, stride=2, pad=1), (2, 3, 6, 6), 1),
    "Deconv2d": (lambda: Lc.Deconv2d(3, 3, stride=2, pad=1), (2, 4, 4, 4), 1),
    "BatchNorm": (lambda: Lc.BatchNorm(), (6, 3), 1),
    "EmbedID": (lambda: Lc.EmbedID(7, 3), None, 1),
    "RNN": (lambda: Lc.RNN(4), (5, 3), 2),
    "LSTM": (lambda: Lc.LSTM(4), (5, 3), 2),
}


@needs_gpu
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_every_layer_gives_the_same_values_and_gradients_on_both_devices(name):
    make, shape, calls = LAYERS[name]
    x = IDS if shape is None else np.random.default_rng(0).normal(size=shape)
    results = []
    for device in (np.asarray, cuda.as_cupy):
        np.random.seed(0)
        layer = make()
        layer(x)  # creates the parameters on the CPU, from the same seed on both devices
        if hasattr(layer, "reset_state"):
            layer.reset_state()
        layer.cleargrads()
        if device is cuda.as_cupy:
            layer.to_gpu()
        v = dz.Variable(device(x)) if shape is not None else device(x)
        ys = [layer(v) for _ in range(calls)]
        w = np.random.default_rng(1).normal(size=ys[-1].shape)
        F.sum(ys[-1] * device(w)).backward()
        results.append([cuda.as_numpy(y.data) for y in ys]
                       + ([cuda.as_numpy(v.grad.data)] if shape is not None else [])
                       + [cuda.as_numpy(p.data) for p in layer.params()]
                       + [cuda.as_numpy(p.grad.data) for p in layer.params() if p.grad is not None])
    for c, g in zip(*results, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-7, err_msg=name)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_kernels_agree_with_the_unfused_path(dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 10)).astype(dtype) * 5
    t = rng.integers(0, 10, size=64)
    cpu, gpu = [], []
    for out, device in ((cpu, np.asarray), (gpu, cuda.as_cupy)):
        v = dz.Variable(device(x))
        s = F.sigmoid(v)
        loss = F.softmax_cross_entropy(s * 3, device(t))
        loss.backward()
        out += [cuda.as_numpy(s.data), cuda.as_numpy(loss.data), cuda.as_numpy(v.grad.data)]
    tol = 2e-6 if dtype == np.float32 else 1e-12
    for c, g in zip(cpu, gpu):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, c, rtol=tol, atol=tol)


@needs_gpu
@pytest.mark.parametrize("label_dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                         np.uint32, np.int64, np.uint64])
def test_softmax_cross_entropy_takes_labels_of_every_integer_dtype_on_the_gpu(label_dtype):
    """The fused backward reads the labels with the kernel's own C type for their dtype."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 4))
    t = np.array([0, 1, 2, 3, 1, 0], label_dtype)
    results = []
    for device in (np.asarray, cuda.as_cupy):
        v = dz.Variable(device(x))
        loss = F.softmax_cross_entropy(v, device(t))
        loss.backward()
        results.append((cuda.as_numpy(loss.data), cuda.as_numpy(v.grad.data)))
    for c, g in zip(*results, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-12, atol=1e-14)


@needs_gpu
@pytest.mark.parametrize("rows, classes", [(40, 2000), (700, 3)])
def test_large_losses_and_long_bias_sums_take_the_array_path_with_the_same_numbers(
        rows, classes, monkeypatch):
    """The one-block softmax kernel is for a batch's logits (at most ``fused_max_size``), and
    ``sum_rows`` for up to 512 rows; past either, CuPy's own kernels run, with the same numbers."""
    from dezero_like import cuda_kernels

    used = []
    for name in ("softmax_cross_entropy", "sum_rows"):
        kernel = getattr(cuda_kernels, name)
        monkeypatch.setattr(cuda_kernels, name,
                            lambda *a, k=kernel, n=name: used.append(n) or k(*a))
    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows, 8))
    t = rng.integers(0, classes, size=rows)
    W0, b0 = rng.normal(size=(8, classes)), rng.normal(size=classes)
    results = []
    for device in (np.asarray, cuda.as_cupy):
        W, b = dz.Parameter(device(W0)), dz.Parameter(device(b0))
        loss = F.softmax_cross_entropy(F.linear(device(x), W, b), device(t))
        loss.backward()
        results.append([cuda.as_numpy(a) for a in (loss.data, W.grad.data, b.grad.data)])
    # 80,000 logits: the array path, and sum_rows for the 40 rows; 700 rows: the fused loss
    # for its 2,100 logits, and CuPy's reduction for the bias
    assert used == (["sum_rows"] if rows == 40 else ["softmax_cross_entropy"])
    for c, g in zip(*results, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-10, atol=1e-12)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float16, np.complex64, np.complex128, np.int32])
def test_sigmoid_takes_on_the_gpu_every_dtype_it_takes_on_the_cpu(dtype):
    """float16 goes through the fused kernels; complex and integer input must not (CuPy's
    complex type has no ``int + complex`` in C: tests/test_kernels_compile.py)."""
    x = (np.linspace(-2, 2, 12) + (1j * np.linspace(0, 1, 12) if dtype().dtype.kind == "c"
                                   else 0)).reshape(3, 4).astype(dtype)
    results = []
    for device in (np.asarray, cuda.as_cupy):
        v = dz.Variable(device(x))
        y = F.sigmoid(v)
        F.sum(y * device(np.arange(12).reshape(3, 4).astype(y.dtype))).backward()
        results.append((cuda.as_numpy(y.data), cuda.as_numpy(v.grad.data)))
    (cpu_y, cpu_g), (gpu_y, gpu_g) = results
    # complex64: CuPy's complex exp and division (thrust's) are other formulas than NumPy's,
    # a few float32 ulp apart on y, and the gradient multiplies them by weights up to 11
    tol = {np.float16: 5e-3, np.complex64: 1e-5}.get(dtype, 1e-6)
    for c, g in ((cpu_y, gpu_y), (cpu_g, gpu_g)):
        assert g.dtype == c.dtype
        np.testing.assert_allclose(g.astype(np.complex128), c.astype(np.complex128),
                                   rtol=tol, atol=tol)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_cross_entropy_of_an_empty_batch_is_nan_with_an_empty_gradient(dtype):
    """As on the CPU (and in PyTorch): the mean over no rows is NaN, and backward gives a (0, C)
    gradient; the fused gradient kernel used to divide by the batch size in Python first."""
    for device in (np.asarray, cuda.as_cupy):
        x = dz.Variable(device(np.zeros((0, 3), dtype)))
        loss = F.softmax_cross_entropy(x, device(np.zeros(0, np.int64)))
        assert np.isnan(float(loss.data))
        loss.backward()
        assert x.grad.shape == (0, 3) and x.grad.dtype == dtype


@needs_gpu
def test_labels_on_the_other_device_than_the_logits_are_refused_at_once():
    """A learner who moves the model but not the labels gets a clear error in forward, not
    a hidden copy and then CuPy's failure inside the fused backward."""
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    t = np.array([0, 2, 1, 0])
    with pytest.raises(TypeError, match="logits are on the GPU but the labels are on the CPU"):
        F.softmax_cross_entropy(dz.Variable(cuda.as_cupy(x)), dz.Variable(t))
    with pytest.raises(TypeError, match="logits are on the CPU but the labels are on the GPU"):
        F.softmax_cross_entropy(dz.Variable(x), dz.Variable(cuda.as_cupy(t)))
    # a bare array is refused as it becomes an input, by as_array, for every function
    with pytest.raises(TypeError, match=r"shape \(4,\) on the CPU .* Variable on the GPU"):
        F.softmax_cross_entropy(dz.Variable(cuda.as_cupy(x)), t)
    with pytest.raises(TypeError, match=r"shape \(4,\) on the GPU .* Variable on the CPU"):
        F.softmax_cross_entropy(dz.Variable(x), cuda.as_cupy(t))


@needs_gpu
def test_a_numpy_array_mixed_into_gpu_arithmetic_gets_a_clear_error_and_0d_is_a_number():
    v = dz.Variable(cuda.as_cupy(np.ones((2, 3), np.float32)))
    with pytest.raises(TypeError, match=r"shape \(2, 3\) on the CPU .*cuda\.as_cupy"):
        v + np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="on the CPU"):
        F.matmul(v, np.ones((3, 2), np.float32))
    y = v * np.array(2.0, np.float32)  # a 0-d NumPy array is a number: filled on the device
    assert cuda.is_cupy_array(y.data) and y.dtype == np.float32
    np.testing.assert_array_equal(cuda.as_numpy(y.data), np.full((2, 3), 2.0))


@needs_gpu
@pytest.mark.parametrize("mode", ["graph", "no_grad"])
def test_two_variables_on_two_devices_get_a_clear_error_in_every_function(mode):
    """CuPy says only "Unsupported type" when a CPU array meets a GPU one. Whatever the
    function, and with or without a graph, the error names the two devices and the fix."""
    a = dz.Variable(cuda.as_cupy(np.ones((2, 3), np.float32)))
    b = dz.Variable(np.ones((2, 3), np.float32))
    model = L.Linear(4)
    model(np.ones((1, 3), np.float32))  # weights made on the CPU, the input is on the GPU
    calls = {"add": lambda: a + b, "sub, CPU first": lambda: b - a,
             "matmul": lambda: F.matmul(a, b.T), "layer": lambda: model(a),
             "conv": lambda: F.conv2d(dz.Variable(cuda.as_cupy(np.ones((1, 1, 4, 4)))),
                                      dz.Variable(np.ones((2, 1, 3, 3))))}
    for name, call in calls.items():
        with dz.using_config("enable_backprop", mode == "graph"), \
                pytest.raises(TypeError, match=r"on two devices \(.* on the (CPU|GPU).*to_gpu"):
            call()
            pytest.fail(f"{name}: no error")
    # the original error stays attached, and the package's own device error is left as it was
    with pytest.raises(TypeError) as info:
        a + b
    assert info.value.__cause__ is not None
    logits = dz.Variable(cuda.as_cupy(np.ones((2, 3), np.float32)))
    with pytest.raises(TypeError, match="the labels are on the CPU") as info:
        F.softmax_cross_entropy(logits, dz.Variable(np.array([0, 1])))
    assert "two devices" not in str(info.value)


@needs_gpu
def test_accuracy_takes_a_list_of_labels_for_gpu_scores():
    y = cuda.as_cupy(np.eye(3, dtype=np.float32))
    assert float(F.accuracy(y, [0, 1, 2]).data) == 1.0
    assert float(F.accuracy(y, [0, 2, 1]).data) == pytest.approx(1 / 3)


@needs_gpu
@pytest.mark.parametrize("labels", [[0, 1, 3], [0, -1, 2], [0.0, 1.5, 2.0], [0.0, np.nan, 2.0],
                                    [0.0, np.inf, 2.0]],
                         ids=["too large", "negative", "a fraction", "nan", "inf"])
def test_accuracy_on_the_gpu_is_nan_for_a_label_that_is_no_class(labels):
    """The CPU refuses such a label (reading it is free there); on a GPU reading it back would
    wait for the device, so the accuracy is nan, as softmax_cross_entropy's loss is. Before, it
    was counted as a wrong prediction: an accuracy that looked plausible."""
    y = cuda.as_cupy(np.eye(3, dtype=np.float32))
    t = cuda.as_cupy(np.array(labels))
    assert np.isnan(float(F.accuracy(y, t).data))
    with pytest.raises(ValueError):
        F.accuracy(np.eye(3, dtype=np.float32), np.array(labels))
    good = cuda.as_cupy(np.array([0.0, 1.0, 1.0]) if t.dtype.kind == "f" else np.array([0, 1, 1]))
    assert float(F.accuracy(y, good).data) == pytest.approx(2 / 3)


@needs_gpu
def test_a_backward_seed_on_the_other_device_is_refused():
    y = dz.Variable(cuda.as_cupy(np.ones(3, np.float32))) * 2.0
    with pytest.raises(TypeError, match="is on the CPU, but the output is on the GPU"):
        y.backward(gradient=np.ones(3, np.float32))
    z = dz.Variable(np.ones(3, np.float32)) * 2.0
    with pytest.raises(TypeError, match="is on the GPU, but the output is on the CPU"):
        z.backward(gradient=cuda.as_cupy(np.ones(3, np.float32)))


@needs_gpu
@pytest.mark.parametrize("bad", [4, 7, -1, -5])
def test_embed_id_on_the_gpu_gives_nan_rows_for_ids_out_of_range_and_refuses_cpu_ids(bad):
    """CuPy's indexing wraps an id out of range around to another row: embed_id on a GPU reads
    nothing back (that would wait for the device), and gives NaN for that row instead, and a
    NaN gradient; the other rows are exact. NumPy ids for a CuPy W are refused."""
    W = dz.Variable(cuda.as_cupy(np.arange(12.0).reshape(4, 3)))
    y = F.embed_id(cuda.as_cupy(np.array([[0, bad], [2, 1]])), W)
    out = cuda.as_numpy(y.data)
    assert np.isnan(out[0, 1]).all()  # never W[bad % 4], the row CuPy would wrap to
    np.testing.assert_array_equal(out[[0, 1, 1], [0, 0, 1]], [[0, 1, 2], [6, 7, 8], [3, 4, 5]])
    F.sum(y * cuda.as_cupy(np.ones((2, 2, 3)))).backward()
    grad = cuda.as_numpy(W.grad.data)
    assert np.isnan(grad[bad % 4]).all()  # the wrapped row learns nothing but NaN
    for row in {0, 1, 2, 3} - {bad % 4}:  # the rows of ids 0, 2, 1 (and 3, unused)
        np.testing.assert_array_equal(grad[row], [float(row != 3)] * 3)
    with pytest.raises(IndexError, match=r"ids must be in \[0, 4\)"):  # the CPU: an error
        F.embed_id(np.array([0, bad]), dz.Variable(np.arange(12.0).reshape(4, 3)))
    with pytest.raises(TypeError, match="ids are on the CPU but W is on the GPU"):
        F.embed_id(np.array([0, 1]), W)
    y = F.embed_id([3, 0], W)  # a list goes to W's device
    np.testing.assert_array_equal(cuda.as_numpy(y.data), [[9, 10, 11], [0, 1, 2]])


@needs_gpu
@pytest.mark.parametrize("index", [5, -6, [0, 5], np.array([1, -7]), (slice(None), [3]),
                                   (Ellipsis, np.array([[0], [3]])), (None, 0, [1, 2, 9]),
                                   (np.array([True, False, True, True, False]), 3)])
def test_an_index_out_of_range_on_the_host_is_an_index_error_on_the_gpu_as_in_numpy(index):
    """CuPy's gather and scatter wrap an index array around (5 on an axis of 5 is 0):
    get_item checks an index that is still on the host (an int, a list, a NumPy array)
    before indexing, with NumPy's message, and waits for nothing."""
    import cupy

    x = np.arange(15.0).reshape(5, 3)
    with pytest.raises(IndexError) as on_cpu:
        F.get_item(dz.Variable(x), index)
    with pytest.raises(IndexError) as on_gpu:
        F.get_item(dz.Variable(cupy.asarray(x)), index)
    if "out of bounds" in str(on_cpu.value):  # (a too long mask is NumPy's own error)
        assert str(on_gpu.value) == str(on_cpu.value)


@needs_gpu
def test_indices_in_range_on_the_host_index_a_gpu_array_as_numpy_does():
    import cupy

    x = np.arange(24.0).reshape(2, 3, 4)
    for index in (-1, (1, -3), [1, -2], (slice(None), [2, 0, 2]), (Ellipsis, [3, -4]),
                  (None, 1, np.array([[0], [2]]), slice(1, 3)), np.array([True, False]),
                  (0, [], slice(None)), (..., None, 3)):
        v = dz.Variable(cupy.asarray(x))
        y = F.get_item(v, index)
        np.testing.assert_array_equal(cuda.as_numpy(y.data), x[index])
        F.sum(y).backward()
        expected = np.zeros_like(x)
        np.add.at(expected, index, 1.0)
        np.testing.assert_array_equal(cuda.as_numpy(v.grad.data), expected)


@needs_gpu
def test_a_list_of_gpu_scalars_indexes_a_gpu_array_as_before():
    """get_item copies a list index into a NumPy array; one holding CuPy scalars cannot become
    one (CuPy refuses the implicit copy to the host), so it is copied as a list and CuPy reads
    it, as it did before the copy."""
    import cupy

    x = np.arange(12.0).reshape(4, 3)
    t = cupy.asarray(np.array([2, 0]))
    v = dz.Variable(cupy.asarray(x))
    y = v[[t[0], t[1]]]
    np.testing.assert_array_equal(cuda.as_numpy(y.data), x[[2, 0]])
    F.sum(y).backward()
    np.testing.assert_array_equal(cuda.as_numpy(v.grad.data), [[1, 1, 1], [0] * 3, [1] * 3,
                                                               [0] * 3])


@needs_gpu
@pytest.mark.parametrize(("dtype", "upstream"), [(np.float32, np.float64),
                                                 (np.float16, np.float32),
                                                 (np.float64, np.float32)])
def test_max_pooling_gives_the_input_its_own_dtype_of_gradient_on_both_devices(dtype, upstream):
    """The GPU's pooling kernel wrote its gradient in the upstream gradient's dtype, so with a
    float64 loss every layer below a float32 pooling ran its backward in float64 on the GPU
    only. Both devices give the pooling's input a gradient of its own dtype."""
    import cupy

    x = np.random.default_rng(1).standard_normal((2, 3, 4, 6)).astype(dtype)
    w = np.random.default_rng(2).standard_normal((2, 3, 2, 3)).astype(upstream)
    grads = []
    for to in (np.asarray, cupy.asarray):
        v = dz.Variable(to(x))
        h = v * 1  # a computed input, whose gradient is the pooling's own
        F.sum(F.pooling(h, 2, 2) * to(w)).backward(retain_grad=True)
        assert h.grad.dtype == dtype, (to, h.grad.dtype)
        grads.append(cuda.as_numpy(h.grad.data))
    np.testing.assert_array_equal(grads[1], grads[0])


@needs_gpu
@pytest.mark.parametrize("in_channels", [1, 8])
def test_a_convolution_weight_gradient_is_c_ordered_on_the_gpu_and_equal_to_the_cpus(in_channels):
    """On a GPU Conv2DGradW multiplies in the order that gives gW C-ordered, so SGD updates it
    in its multi-tensor launch with the other parameters (a transposed view took a launch of
    its own). The numbers are the CPU's."""
    import cupy

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, in_channels, 6, 6))
    W = rng.standard_normal((5, in_channels, 3, 3))
    grads = []
    for to in (np.asarray, cupy.asarray):
        xv, Wv = dz.Variable(to(x)), dz.Variable(to(W))
        F.sum(F.conv2d(xv, Wv, pad=1) ** 2).backward()
        grads.append(Wv.grad.data)
    assert grads[1].flags.c_contiguous
    np.testing.assert_allclose(cuda.as_numpy(grads[1]), grads[0], rtol=1e-10, atol=1e-12)


@needs_gpu
def test_sgd_updates_many_parameters_in_few_launches_as_on_the_cpu(monkeypatch):
    """SGD.update_all on a GPU: eight float32 parameters per launch of one kernel, float64 in
    its own, and the rest (float16, integers, a strided parameter or gradient, memory shared
    with another parameter) one by one, as update_one does; a gradient of another shape is
    refused on both devices."""
    from dezero_like import cuda_kernels

    rng = np.random.default_rng(0)
    f32 = [(rng.normal(size=shape).astype(np.float32), rng.normal(size=shape))  # float64 grads
           for shape in [(3, 4), (4,), (), (5, 2, 3), (7,), (2, 2), (1,), (6,), (3,), (9, 2)]]
    f64 = [(rng.normal(size=(4, 3)), rng.normal(size=(4, 3))) for _ in range(2)]
    others = [(rng.normal(size=4).astype(np.float16), rng.normal(size=4).astype(np.float16)),
              (np.arange(4), np.ones(4, int)),  # integers: -= with lr 1, as NumPy
              (rng.normal(size=(3, 4)).astype(np.float32).T, rng.normal(size=(4, 3))),  # copied C
              (rng.normal(size=(3, 4)), rng.normal(size=(4, 3)).T)]
    shared = rng.normal(size=8).astype(np.float32)
    launches = []
    real = cuda_kernels.sgd_update_many
    monkeypatch.setattr(cuda_kernels, "sgd_update_many", lambda pairs, lr: (
        launches.append(sorted(w.dtype.name for w, _ in pairs)), real(pairs, lr)))
    results = []
    for device in (np.asarray, cuda.as_cupy):
        model = Model()
        base = device(shared.copy())
        params = [dz.Parameter(device(w.copy())) for w, _ in [*f32, *f64, *others]]
        params += [dz.Parameter(base), dz.Parameter(base), dz.Parameter(base[:6]),
                   dz.Parameter(base[2:]),  # one array twice, and two views that overlap it
                   dz.Parameter(device(np.arange(24, dtype=np.float32).reshape(4, 6))[:, ::2])]
        grads = [g for _, g in [*f32, *f64, *others]] + [np.ones(8), np.ones(8), np.ones(6),
                                                         np.ones(6), np.ones((4, 3))]
        for i, (p, g) in enumerate(zip(params, grads)):
            setattr(model, f"p{i}", p)
            p.grad = dz.Variable(device(g))
        optimizers.SGD(lr=1).setup(model).update()  # lr 1: integer parameters too
        results.append([cuda.as_numpy(p.data) for p in params])
    assert launches == [["float32"] * 12 + ["float64"] * 2], launches  # one view of base
    for i, (cpu, gpu) in enumerate(zip(*results)):
        assert cpu.dtype == gpu.dtype and cpu.shape == gpu.shape, i
        np.testing.assert_allclose(gpu, cpu, rtol=1e-3 if cpu.dtype == np.float16 else 1e-6,
                                   atol=1e-6, err_msg=f"parameter {i}")  # float64 g cast first
    for device in (np.asarray, cuda.as_cupy):  # NumPy's -= would broadcast it into the step
        model = Model()
        model.p = dz.Parameter(device(np.ones((2, 3))))
        model.p.grad = dz.Variable(device(np.ones(3)))
        with pytest.raises(ValueError, match=r"of shape \(3,\)"):
            optimizers.SGD(lr=1).setup(model).update()


@needs_gpu
def test_sgd_updates_float16_parameters_in_one_kernel_as_on_the_cpu():
    w = np.linspace(-1, 1, 8, dtype=np.float16)
    out = []
    for device in (np.asarray, cuda.as_cupy):
        p = dz.Parameter(device(w.copy()))
        p.grad = dz.Variable(device(np.full(8, 0.5, np.float16)))
        optimizers.SGD(lr=0.1).update_one(p)
        out.append(cuda.as_numpy(p.data))
    assert out[1].dtype == np.float16
    np.testing.assert_allclose(out[1], out[0], rtol=1e-3, atol=1e-3)


@needs_gpu
def test_float16_times_a_python_number_rounds_once_on_the_gpu_too():
    """float16 * 0.1, / 70000 and 7 / x (step 67) are computed in float32 and rounded once on
    CuPy as on NumPy, values and gradients (with create_graph), and stay float16 there."""
    a = np.arange(1, 2001).astype(np.float16)
    for f in (lambda v: v * 0.1, lambda v: v / 70000, lambda v: 7 / v):
        exact = f(a.astype(np.float32)).astype(np.float16)
        x = dz.Variable(cuda.as_cupy(a))
        y = f(x)
        y.backward(create_graph=True)
        assert y.dtype == x.grad.dtype == np.float16 and cuda.get_array_module(y) is not np
        np.testing.assert_array_equal(cuda.as_numpy(y.data), exact)
        xc = dz.Variable(a.copy())
        f(xc).backward()
        np.testing.assert_array_equal(cuda.as_numpy(x.grad.data), xc.grad.data)


@needs_gpu
def test_sgd_on_the_gpu_casts_the_gradient_to_the_parameter_and_refuses_what_numpy_refuses():
    """The kernel takes one dtype: a float64 gradient of a float32 parameter is cast, as
    NumPy's ``-=`` casts. An integer parameter takes ``-=`` on the GPU too: in the kernel the
    learning rate would become int(0.1) == 0 and nothing would be updated."""
    w = np.linspace(-1, 1, 6, dtype=np.float32)
    g = np.linspace(0.5, 2, 6)  # float64
    cases = [(w, g, 0.1), (np.arange(6), np.ones(6, int), 1), (np.arange(6), np.ones(6, int), 0.1),
             (np.arange(6), np.ones(6), 0.1), (w.astype(np.float16), g.astype(np.float32), 0.1),
             (w, g.astype(np.complex64), 0.1)]  # complex into reals: refused, never truncated
    for w0, g0, lr in cases:
        out = []
        for device in (np.asarray, cuda.as_cupy):
            p = dz.Parameter(device(w0.copy()))
            p.grad = dz.Variable(device(g0))
            try:
                optimizers.SGD(lr=lr).update_one(p)
            except TypeError:  # NumPy's UFuncTypeError is one: a float into an integer
                out.append("TypeError")
                continue
            out.append(cuda.as_numpy(p.data))
        assert type(out[1]) is type(out[0]), (w0.dtype, g0.dtype, lr, out)
        if isinstance(out[0], np.ndarray):
            assert out[1].dtype == w0.dtype, (w0.dtype, g0.dtype, lr)
            np.testing.assert_allclose(out[1], out[0], rtol=1e-3, atol=1e-3)
        else:
            assert out[1] == out[0] == "TypeError", (w0.dtype, g0.dtype, lr, out)


@needs_gpu
def test_second_derivatives_on_the_gpu_fall_back_to_differentiable_steps():
    x = np.linspace(-3, 3, 12).reshape(3, 4)
    t = np.array([0, 3, 1])
    hess = []
    for device in (np.asarray, cuda.as_cupy):
        v = dz.Variable(device(x))
        loss = F.softmax_cross_entropy(F.sigmoid(v) * 4, device(t))
        loss.backward(create_graph=True)
        g = v.grad
        v.cleargrad()
        F.sum(g * g).backward()
        hess.append(cuda.as_numpy(v.grad.data))
    np.testing.assert_allclose(hess[1], hess[0], rtol=1e-10, atol=1e-12)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])  # the kernel, the array path
@pytest.mark.parametrize("label", [7, 3, -1])
def test_a_wrong_label_gives_nan_on_the_gpu_not_a_read_out_of_bounds(dtype, label):
    x = dz.Variable(cuda.as_cupy(np.zeros((2, 3), dtype)))
    loss = F.softmax_cross_entropy(x, cuda.as_cupy(np.array([0, label])))
    assert np.isnan(float(loss.data))  # CuPy's indexing wraps 3 to class 0: a finite loss
    loss.backward()
    assert np.isnan(cuda.as_numpy(x.grad.data)[1]).all()  # and so would the gradient


def _training_step(kind):
    """A model, its batch already on the device, and one training step of it.

    ``mlp``: the book's MLP with sigmoid (fused kernels); ``cnn``: SimpleConvNet on 28x28
    images (im2col, kept columns, the bias step, pooling, deconv); ``loss_scale``: the MLP
    with a scaled loss (mixed-precision training's seed and the optimizer's unscaling);
    ``clip_grad``: the MLP with gradient clipping (its norm stays on the device); ``embed``:
    EmbedID then Linear on integer ids (a language model's first layer: embed_id).
    """
    import cupy

    from dezero_like.models_conv import SimpleConvNet

    rng = np.random.default_rng(0)
    np.random.seed(0)
    if kind == "cnn":
        x = cupy.asarray(rng.normal(size=(16, 1, 28, 28)).astype(np.float32))
        model = SimpleConvNet(channels=(4, 8), hidden_size=20)
    elif kind == "embed":  # ids in: embed_id's range check must not read the ids back
        x = cupy.asarray(rng.integers(0, 50, size=64))
        model = _EmbedModel()
    else:
        x = cupy.asarray(rng.normal(size=(64, 20)).astype(np.float32))
        model = MLP((30, 10), activation=F.sigmoid)
    t = cupy.asarray(rng.integers(0, 10, size=len(x)))
    # weights drawn by NumPy (seeded above), then moved: made on the GPU they would come from
    # cupy.random, which np.random.seed does not reach, and the losses would vary run to run
    model(cuda.as_numpy(x[:2]))
    model.to_gpu()
    optimizer = optimizers.SGD(lr=0.05).setup(model)  # the losses fall smoothly for all
    if kind == "clip_grad":
        optimizer.add_hook(optimizers.ClipGrad(0.1))  # the norm is about 0.48: clipped
    scale = 1024.0 if kind == "loss_scale" else None

    def step():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward(loss_scale=scale)
        optimizer.update()
        return loss

    return step


class _EmbedModel(Model):
    def __init__(self):
        super().__init__()
        self.embed = Lc.EmbedID(50, 16)
        self.out = L.Linear(10)

    def forward(self, ids):
        return self.out(F.tanh(self.embed(ids)))


STEP_KINDS = ["mlp", "cnn", "loss_scale", "clip_grad", "embed"]


@needs_gpu
@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_training_step_copies_nothing_from_host_to_device(kind, monkeypatch):
    """With the batch on the device, forward, backward and update make no host->device copy.

    Every host -> device copy CuPy makes from Python goes through ``cupy.asarray`` /
    ``cupy.array``; both are counted here. Python numbers in the graph (``1 - y``,
    ``gy / n``, the learning rate, the loss scale) must stay kernel arguments or device
    fills.
    """
    import cupy

    step = _training_step(kind)
    step()  # warm-up: kernels compile, the weights are created
    copies = []
    for name in ("asarray", "array"):
        original = getattr(cupy, name)

        def counting(obj, *args, _original=original, _name=name, **kwargs):
            if not isinstance(obj, cupy.ndarray):  # a device array is no copy from the host
                copies.append(f"{_name}({type(obj).__name__})")
            return _original(obj, *args, **kwargs)

        monkeypatch.setattr(cupy, name, counting)
    for _ in range(3):
        step()
    assert copies == [], f"host->device copies in 3 training steps: {copies}"
    monkeypatch.undo()
    losses = [float(step().data) for _ in range(5)]
    assert losses[-1] < losses[0]


@needs_gpu
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 2)])
def test_batch_norm_matches_numpy_on_the_gpu_and_refuses_mixed_devices(shape):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    g, b = rng.normal(size=3), rng.normal(size=3)
    out = []
    for device in (np.asarray, cuda.as_cupy):
        xv, gv, bv = (dz.Variable(device(a)) for a in (x, g, b))
        mean, var = device(np.zeros(3)), device(np.ones(3))
        y = F.batch_norm(xv, gv, bv, mean, var)
        F.sum(y * device(np.arange(y.size).reshape(y.shape))).backward()
        out.append([cuda.as_numpy(a) for a in (y.data, xv.grad.data, gv.grad.data, mean, var)])
    for c, gpu in zip(*out):
        np.testing.assert_allclose(gpu, c, rtol=1e-9, atol=1e-10)
    with pytest.raises(TypeError, match="same device"):
        F.batch_norm(dz.Variable(cuda.as_cupy(x)), g, b, np.zeros(3), np.ones(3))


@needs_gpu
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 2)])
def test_fused_batch_norm_matches_the_composed_one_on_the_gpu(shape, dtype, train):
    """Fc.batch_norm (one Function, closed-form gradient) against Fc.batch_norm_simple on
    the device: outputs, running statistics, gradients and a second derivative."""
    import dezero_like.functions_conv as Fc

    rng = np.random.default_rng(1)
    x = rng.normal(1.0, 2.0, size=shape).astype(dtype)
    g, b, w = (rng.normal(size=s).astype(dtype) for s in (3, 3, shape))
    out = []
    for bn in (Fc.batch_norm, Fc.batch_norm_simple):
        xv, gv, bv = (dz.Variable(cuda.as_cupy(a)) for a in (x, g, b))
        mean, var = cuda.as_cupy(np.full(3, 0.5, dtype)), cuda.as_cupy(np.full(3, 1.5, dtype))
        with dz.using_config("train", train):
            y = bn(xv, gv, bv, mean, var)
        assert cuda.get_array_module(y.data) is not np and y.dtype == dtype
        F.sum(y * cuda.as_cupy(w)).backward(create_graph=dtype == np.float32)
        first = [xv.grad.data, gv.grad.data, bv.grad.data]
        second = []
        if dtype == np.float32:
            gx = xv.grad
            gv.cleargrad()
            F.sum(gx * gx).backward()  # gx depends on gamma in both modes (on x in training)
            second = [gv.grad.data]
        out.append([cuda.as_numpy(a).astype(np.float64)
                    for a in [y.data, mean, var] + first + second])
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == np.float32 else dict(rtol=2e-2, atol=2e-2)
    for fused, composed in zip(*out):
        np.testing.assert_allclose(fused, composed, **tol)


@needs_gpu
@pytest.mark.parametrize("kind", STEP_KINDS)
def test_a_training_step_never_waits_for_the_device(kind, monkeypatch):
    """Forward, backward and update only queue work: nothing reads a device value back, but
    the one count of inf/NaN gradients that an update with a loss scale reads (step 67).

    Every way a value comes back to the host (``.get()``, ``cupy.asnumpy``, ``.item()``,
    ``float()``/``int()``/``bool()``/``tolist()`` of an array) is counted during three
    training steps whose batch is already on the device. (Explicit ``synchronize()``
    calls cannot be counted this way: CuPy's Device and Stream types are immutable.)
    """
    import cupy

    step = _training_step(kind)
    step()
    waits = []

    def counting(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            waits.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for name in ("get", "item", "__float__", "__int__", "__bool__", "tolist"):
        counting(cupy.ndarray, name)
    counting(cupy, "asnumpy")
    losses = [step() for _ in range(3)]
    # a scaled update reads one count back, its inf/NaN check (step 67), as GradScaler does
    expected = ["get"] * 3 if kind == "loss_scale" else []
    assert waits == expected, f"the training step waited for the device: {waits}"
    monkeypatch.undo()
    assert float(losses[-1].data) < float(losses[0].data)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float16])
def test_a_gradient_through_fancy_indexing_on_the_gpu_in_complex_and_float16(dtype):
    """CuPy's add.at (atomic additions) takes no complex numbers: the halves are scattered."""
    import cupy

    x = np.arange(4).astype(dtype) * (1 + 1j if np.dtype(dtype).kind == "c" else 1)
    index = np.array([0, 0, 3, 1, 0])
    grads = []
    for data in (x, cupy.asarray(x)):
        v = dz.Variable(data)
        (F.get_item(v, index) * dz.Variable(data[index] + 2)).backward()
        grads.append(cuda.as_numpy(v.grad.data))
    assert grads[1].dtype == dtype
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-3)


def _mlp_run(move_at, optimizer_class, x, t, steps=4):
    """Losses of an MLP trained on the CPU, moved to the GPU before step ``move_at``."""
    np.random.seed(0)
    model = MLP((5, 3))
    optimizer = optimizer_class().setup(model)
    losses = []
    for i in range(steps):
        if i == move_at:
            model.to_gpu()
        xs, ts = (cuda.as_cupy(x), cuda.as_cupy(t)) if i >= move_at else (x, t)
        loss = F.softmax_cross_entropy(model(xs), ts)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
    return losses


@needs_gpu
@pytest.mark.parametrize("name", ["MomentumSGD", "AdaGrad", "AdaDelta", "Adam"])
def test_optimizer_state_follows_the_model_to_the_gpu_mid_training(name):
    x = np.random.default_rng(0).random((4, 3)).astype(np.float32)
    t = np.array([0, 1, 2, 0])
    cls = getattr(optimizers, name)
    np.testing.assert_allclose(_mlp_run(2, cls, x, t), _mlp_run(99, cls, x, t), rtol=1e-5)


@needs_gpu
def test_a_model_put_on_the_gpu_creates_its_lazy_weights_there_or_refuses_a_cpu_input(tmp_path):
    import cupy

    x = np.random.default_rng(0).random((4, 3)).astype(np.float32)
    model = MLP((5, 3)).to_gpu()
    with pytest.raises(TypeError, match=r"layer 'l0' \(Linear\) was put on the GPU .* "
                                        r"first input is on the CPU"):
        model(x)
    assert isinstance(model(cuda.as_cupy(x)).data, cupy.ndarray)  # nothing half-made before
    conv = Lc.Conv2d(2, 3, pad=1).to_gpu()
    with pytest.raises(TypeError, match="was put on the GPU"):
        conv(np.ones((1, 1, 4, 4), np.float32))
    np.random.seed(0)
    trained = MLP((5, 3))
    expected = trained(x).data
    trained.save_weights(tmp_path / "w.npz")
    loaded = MLP((5, 3)).to_gpu()
    loaded.load_weights(tmp_path / "w.npz")  # lazy weights: created on the GPU
    assert all(isinstance(p.data, cupy.ndarray) for p in loaded.params())
    # float32 through two layers: cuBLAS sums in another order than NumPy, and one rounding
    # of the terms' size is already 0.6e-6 of the smallest output here (a relative 1e-6 is
    # too tight); the GPU's sigmoid is another exp, 1-2 ulp apart
    np.testing.assert_allclose(cuda.as_numpy(loaded(cuda.as_cupy(x)).data), expected, rtol=1e-5,
                               atol=1e-6)


@needs_gpu
def test_to_gpu_moves_gradients_and_an_lstms_state():
    import cupy

    v = dz.Variable(np.ones(3))
    (v * 2).sum().backward()
    v.to_gpu()
    assert isinstance(v.grad.data, cupy.ndarray)
    lstm = L.LSTM(4)
    lstm(np.ones((2, 3), np.float32))  # h and c are kept, on the CPU, with their graph
    with pytest.raises(RuntimeError, match="keeps 'h', computed by a graph .* reset_state"):
        lstm.to_gpu()
    lstm(np.ones((2, 3), np.float32))  # nothing moved: the CPU sequence goes on
    lstm.h.unchain_backward()
    lstm.c.unchain_backward()
    lstm.to_gpu()  # the state, cut from its graph, moves with the layer
    y = lstm(cuda.as_cupy(np.ones((2, 3), np.float32)))
    assert isinstance(y.data, cupy.ndarray) and isinstance(lstm.c.data, cupy.ndarray)


@needs_gpu
def test_gpu_helpers_numerical_grad_accuracy_and_drawing_take_gpu_arrays():
    from dezero_like.animate import record_backward
    from dezero_like.graph import get_dot_graph
    from dezero_like.utils import gradient_check

    rng = np.random.default_rng(0)
    W = cuda.as_cupy(rng.normal(size=(3, 2)))
    assert gradient_check(lambda x: F.matmul(x, W), cuda.as_cupy(rng.normal(size=(4, 3))))
    with pytest.raises(TypeError, match="scores are on the GPU but the labels are on the CPU"):
        F.accuracy(cuda.as_cupy(np.eye(3)), np.arange(3))
    x = dz.Variable(cuda.as_cupy(np.array([1.0, 2.0])), name="x")
    y = F.sum(x * x)
    assert "data 5" in get_dot_graph(y, values=True)  # the value, copied to the host
    known = [g for _, grads in record_backward(y).frames for g in grads.values()]
    assert known and all(isinstance(g, np.ndarray) for g in known)  # host copies of the grads


@needs_gpu
def test_clip_takes_numpy_and_gpu_array_bounds_without_waiting_for_the_device(monkeypatch):
    """NumPy bounds with GPU data failed inside CuPy; GPU bounds were compared on the host
    (x_min > x_max read back: a wait for the device on every call)."""
    import cupy

    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    lo, hi = np.full(4, -1.0), np.array([0.5, 1.0, 1.5, 2.0])
    cpu = dz.Variable(x)
    F.sum(F.clip(cpu, lo, hi) * 2.0).backward()
    waits = []

    def counted_bool(self):
        waits.append("__bool__")
        return bool(self.get())

    for bounds in ((lo, hi), (cupy.asarray(lo), cupy.asarray(hi)), (lo, cupy.asarray(hi))):
        gpu = dz.Variable(cupy.asarray(x))
        monkeypatch.setattr(cupy.ndarray, "__bool__", counted_bool)
        y = F.clip(gpu, *bounds)
        monkeypatch.undo()
        F.sum(y * 2.0).backward()
        assert waits == []
        np.testing.assert_array_equal(cuda.as_numpy(y.data), F.clip(x, lo, hi).data)
        np.testing.assert_array_equal(cuda.as_numpy(gpu.grad.data), cpu.grad.data)


@needs_gpu
def test_a_model_moved_between_forward_and_backward_is_refused_with_the_fix():
    """model.to_gpu() after the forward, then backward: CuPy failed inside the graph, or in the
    update, with 'Unsupported type numpy.ndarray'. A move ticks step 37's clock, so a backward
    that reads the moved array stops first; one that does not (W's gradient needs only x)
    leaves a CPU gradient on a GPU parameter, which update() refuses. Both say to move the model
    before its forward; moving before the forward, or after backward, still trains."""
    v = dz.Variable(np.ones(3))
    y = F.sin(v)
    v.to_gpu()
    with pytest.raises(RuntimeError, match=r"Sin's input 0 .*to_gpu\(\) or to_cpu\(\).*"
                                           r"move a model to the GPU \(model.to_gpu\(\)\) before"):
        y.backward()
    model = L.Linear(3, in_size=4)
    x = dz.Variable(np.ones((2, 4), np.float32))
    loss = F.sum(F.sigmoid(model(x)))
    model.to_gpu()
    with pytest.raises(RuntimeError, match=r"Linear's input 1 \(a Variable 'W'\)"):
        loss.backward()  # x's gradient reads W
    optimizer = optimizers.SGD().setup(model)
    loss = F.sum(F.sigmoid(model.to_cpu()(x.data)))
    model.to_gpu()
    loss.backward()  # the gradients of W and b read x and the output only: no refusal yet
    with pytest.raises(TypeError, match=r"gradient of W \(4, 3\) is not on the GPU.*moved.*"
                                        r"between the forward and the backward"):
        optimizer.update()
    model.cleargrads()
    loss = F.sum(F.sigmoid(model(cuda.as_cupy(x.data))))  # moved before the forward: trains
    loss.backward()
    model.to_cpu()  # after backward: the gradients move with it
    optimizer.update()
    assert isinstance(model.W.data, np.ndarray) and isinstance(model.W.grad.data, np.ndarray)
    z = dz.Variable(np.ones(3))
    w = F.sin(z)
    z.to_cpu()  # already there: no move, no tick
    w.backward()
    np.testing.assert_allclose(z.grad.data, np.cos(1.0))


# --- GPU code that no test above reached (a line trace of `pytest -m gpu`) -----------------
@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_on_the_gpu_drops_scales_and_backpropagates_through_its_mask(dtype):
    import cupy

    x = dz.Variable(cupy.ones((200, 300), dtype))
    y = F.dropout(x, 0.3)
    assert isinstance(y.data, cupy.ndarray) and y.dtype == dtype
    out = cuda.as_numpy(y.data)
    kept = out != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01  # 60,000 draws: the share dropped is near 0.3
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    y.backward(cupy.full((200, 300), 2.0, dtype))
    np.testing.assert_allclose(cuda.as_numpy(x.grad.data), np.where(kept, 2 / 0.7, 0.0),
                               rtol=1e-6)
    with dz.test_mode():
        assert F.dropout(x, 0.3) is x


@needs_gpu
def test_second_derivative_of_max_pooling_and_of_zero_to_the_x_match_numpy_on_the_gpu():
    rng = np.random.default_rng(5)
    image = rng.standard_normal((2, 3, 6, 6))
    upstream = rng.standard_normal((2, 3, 3, 3))
    exponents = np.array([-1.5, 0.0, 0.5, 2.0])
    results = []
    for device in (np.asarray, cuda.as_cupy):
        x = dz.Variable(device(image))
        y = F.pooling(x ** 2, 2)  # the square makes the second derivative not zero
        F.sum(y * device(upstream)).backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        F.sum(gx * gx).backward()
        e = dz.Variable(device(exponents))
        with np.errstate(divide="ignore"):  # 0 ** -1.5 is inf, as intended
            z = 0.0 ** e
        z.backward(device(np.ones(4)))
        results.append([cuda.as_numpy(v) for v in (y.data, gx.data, x.grad.data, z.data,
                                                     e.grad.data)])
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-12)  # a GPU may fuse a*b+c


@needs_gpu
def test_plot_curves_draws_losses_kept_on_the_gpu():
    """A GPU training loop appends GPU losses (Variables, or their 0-d data); NumPy refuses
    to read GPU memory itself, so plot_curves copies them to the host."""
    import cupy
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dezero_like.plot import plot_curves

    losses = [F.sum(dz.Variable(cupy.full(3, v))) for v in (3.0, 2.0, 1.5)]
    fig = plot_curves({"loss": losses, "0-d": [loss.data for loss in losses],
                       "array": cupy.asarray([3.0, 2.0]),
                       "variable": dz.Variable(cupy.asarray([1.0, 0.5]))})
    drawn = [line.get_ydata() for ax in fig.axes for line in ax.lines]
    np.testing.assert_allclose(drawn[0], [9.0, 6.0, 4.5])
    np.testing.assert_allclose(drawn[1], [9.0, 6.0, 4.5])
    np.testing.assert_allclose(drawn[2], [3.0, 2.0])
    np.testing.assert_allclose(drawn[3], [1.0, 0.5])
    plt.close(fig)


@needs_gpu
def test_an_overflowing_loss_scale_skips_sgds_fused_gpu_update_as_on_the_cpu():
    """Step 67's check runs before SGD.update_all (step 71's fused launch on a GPU): a scale
    that overflows one float32 gradient leaves every parameter as it was, on both devices,
    with one warning; a good scale then steps both devices alike."""
    import warnings

    class Weights(Model):
        def __init__(self):
            super().__init__()
            for i in range(10):  # more than one launch's worth of float32 parameters
                setattr(self, f"w{i}", dz.Parameter(np.linspace(-1, 1, 6, dtype=np.float32) * i))

        def forward(self, x):
            return sum(F.sum(p * x * (1e3 if i == 0 else 1.0))
                       for i, p in enumerate(self.params()))

    results = []
    for device in (np.asarray, cuda.as_cupy):
        model = Weights()
        if device is cuda.as_cupy:
            model.to_gpu()
        start = [cuda.as_numpy(p.data).copy() for p in model.params()]
        optimizer = optimizers.SGD(lr=0.1).setup(model)
        x = dz.Variable(device(np.arange(6, dtype=np.float32)), requires_grad=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with np.errstate(over="ignore", invalid="ignore"):
                model(x).backward(loss_scale=1e36)  # 5e3 * 1e36 is inf in float32
            optimizer.update()
        messages = [str(w.message) for w in caught]
        assert len(messages) == 1 and messages[0].startswith(
            "update() skipped: the gradients of 1 of 10 parameters hold inf or NaN"), messages
        for p, w in zip(model.params(), start):
            np.testing.assert_array_equal(cuda.as_numpy(p.data), w)
        model.cleargrads()
        model(x).backward(loss_scale=8.0)
        optimizer.update()
        results.append([cuda.as_numpy(p.data) for p in model.params()])
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-6, atol=1e-6)


@needs_gpu
def test_a_model_moved_between_devices_between_steps_trains_as_on_one_device():
    """The parameter list a model keeps between steps (step 45) holds the same Parameters
    whatever device they are on: stepped on the GPU, moved to the CPU, stepped, moved back and
    stepped again, the model ends where three CPU steps take it, and each step ran where its
    parameters were (SGD's GPU path only on CuPy arrays, step 71)."""
    np.random.seed(0)
    x = np.random.rand(4, 3).astype(np.float32)
    reference, moved = MLP((5, 2)), MLP((5, 2))
    reference(x), moved(x)
    for p, q in zip(reference.params(), moved.params()):
        q.data[...] = p.data
    steps = []
    for model, devices in ((reference, "ccc"), (moved, "gcg")):
        optimizer = optimizers.SGD(lr=0.5).setup(model)
        for device in devices:
            (model.to_gpu if device == "g" else model.to_cpu)()
            xb = cuda.as_cupy(x) if device == "g" else x
            loss = F.sum(model(xb) * model(xb))
            model.cleargrads()
            loss.backward()
            optimizer.update()
            steps.append((device, {cuda.is_cupy_array(p.data) for p in model.params()}))
    assert steps[3:] == [("g", {True}), ("c", {False}), ("g", {True})], steps
    moved.to_cpu()
    for p, q in zip(reference.params(), moved.params()):
        np.testing.assert_allclose(q.data, p.data, rtol=1e-5)

