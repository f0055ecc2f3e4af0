"""The GPU tests, run on CI's CPU machines against an emulator of CuPy.

Every test marked ``gpu`` needs CuPy and a CUDA GPU and skips without one, so on
CI the package's GPU code (its ``xp is not np`` branches and the CUDA C of
``dezero_like.cuda_kernels``) would never run. Here those tests run in a second
pytest, with tests/cupy_on_cpu.py standing in for CuPy: NumPy arrays that refuse
what CuPy refuses, and the package's own kernel sources compiled by g++ for the
CPU. A wrong index in a kernel, an argument of the wrong C type, a NumPy call on
a GPU array or a NumPy array slipped into a GPU computation fails here.

It checks logic, not the GPU: speed, memory and CUDA's own arithmetic are
measured only on a real GPU (``python -m pytest -m gpu`` there).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_emulator():
    spec = importlib.util.spec_from_file_location("cupy", ROOT / "tests" / "cupy_on_cpu.py")
    emulator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emulator)
    return emulator


PROBLEM = _load_emulator().compiler_problem()
needs_compiler = pytest.mark.skipif(
    PROBLEM is not None, reason=f"the CuPy emulator compiles CUDA C with g++: {PROBLEM}")


# the test files with GPU tests (marked ``gpu`` or skipped without a GPU), run whole: their
# CPU tests must pass too with a CuPy that imports and sees a device
GPU_TEST_FILES = ["tests/test_gpu.py", "tests/test_cuda.py", "tests/test_conv.py",
                  "tests/test_functions.py", "tests/test_layers.py", "tests/test_dataloaders.py",
                  "tests/test_stage6.py", "tests/test_book_suite.py",
                  "tests/steps/test_step54.py", "tests/steps/test_step71.py",
                  "tests/test_learner_mistakes_sweep11.py",
                  "tests/test_learner_mistakes_sweep13.py", "tests/test_oracle_sweep12.py",
                  "tests/test_learner_mistakes_gpu.py"]
# what may skip there: the tests of what a machine without a GPU is told
CPU_ONLY_SKIPS = ("without a GPU is told", "CPU-only error message", "CPU-only machine is told")


def test_the_list_of_gpu_test_files_is_complete():
    tests = ROOT / "tests"
    with_gpu = {str(p.relative_to(ROOT)) for p in tests.rglob("test_*.py")
                if "gpu_available()" in p.read_text() or "mark.gpu" in p.read_text()}
    assert with_gpu - {"tests/test_cupy_on_cpu.py"} <= set(GPU_TEST_FILES), (
        f"add {sorted(with_gpu - set(GPU_TEST_FILES))} to GPU_TEST_FILES")


def _refused_by_real_cupy(calls):
    """What the real CuPy would refuse of ``calls`` ({(name, keywords)}, as the emulator
    records them), asked in a process of its own (here ``cupy`` may be the emulator); None
    where the real CuPy does not import (it does without a GPU: only its names are read)."""
    import json

    probe = subprocess.run(
        [sys.executable, "-c",
         "import importlib.util, json, sys, cupy\n"
         "spec = importlib.util.spec_from_file_location('emu', sys.argv[1])\n"
         "emu = importlib.util.module_from_spec(spec); spec.loader.exec_module(emu)\n"
         "calls = {(name, tuple(keywords)) for name, keywords in json.load(sys.stdin)}\n"
         "print(json.dumps(emu.calls_cupy_refuses(cupy, calls)))",
         str(ROOT / "tests" / "cupy_on_cpu.py")],
        input=json.dumps(sorted(calls)), capture_output=True, text=True, cwd="/",
        env={**os.environ, "PYTHONPATH": ""})
    if probe.returncode:
        return None
    return json.loads(probe.stdout)


def _recorded_calls(folder):
    import ast

    return {ast.literal_eval(line) for path in Path(folder).glob("calls_*.txt")
            for line in path.read_text().splitlines()}


def test_the_check_of_names_and_keywords_against_the_real_cupy_can_fail():
    """np.sum's ``where=`` and ``initial=``, ufuncs' ``where=`` and ``np.insert`` are NumPy's,
    not CuPy's: the emulator runs them (on NumPy), the check below refuses them."""
    refused = _refused_by_real_cupy({
        ("cupy.sum", ("axis", "where")), ("cupy.ndarray.sum", ("axis", "keepdims")),
        ("cupy.ndarray.max", ("initial",)), ("cupy.exp", ("out",)), ("cupy.exp", ("where",)),
        ("cupy.add.at", ()), ("cupy.random.randn", ("dtype",)), ("cupy.insert", ()),
        ("cupy.pad", ("constant_values", "mode")), ("cupy.add.reduce", ("initial",))})
    if refused is None:
        pytest.skip("the real CuPy does not import here (pip install cupy-cuda12x: no GPU "
                    "needed to read its names)")
    assert refused == ["cupy.add.reduce: no keyword 'initial'", "cupy.exp: no keyword 'where'",
                       "cupy.insert: CuPy has no such name",
                       "cupy.ndarray.max: no keyword 'initial'", "cupy.sum: no keyword 'where'"]


@needs_compiler
def test_every_gpu_test_passes_on_the_cupy_emulator(tmp_path):
    """... and, where the real CuPy imports, every CuPy name and keyword they used (as the
    emulator recorded them) is one the real CuPy has: NumPy, which computes here, takes more."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
    env.update(DEZERO_LIKE_CUPY_ON_CPU="1", CUPY_ON_CPU_CACHE=str(tmp_path / "kernels"),
               CUPY_ON_CPU_RECORD=str(tmp_path / "calls"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-rs",
         *GPU_TEST_FILES], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    tail = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, f"tests failed on the CuPy emulator:\n{tail}"
    assert int(re.search(r"(\d+) passed", done.stdout).group(1)) >= 300, tail
    # the GPU tests ran: nothing skipped for want of a GPU (only for want of PyTorch, the
    # oracle, where it is not installed, and the tests of what a CPU-only machine is told)
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    for line in skips:
        assert any(reason in line for reason in CPU_ONLY_SKIPS) or not re.search(
            "GPU|CuPy", line.split(":", 2)[-1]) or "PyTorch is not installed" in line, tail
    calls = _recorded_calls(tmp_path / "calls")
    assert len(calls) > 50, f"the emulator recorded only {len(calls)} calls"
    refused = _refused_by_real_cupy(calls)
    assert not refused, f"the real CuPy would refuse: {refused}"


@needs_compiler
def test_the_emulator_runs_the_kernels_own_source_so_a_wrong_kernel_fails(monkeypatch, tmp_path):
    """Max pooling's kernels on the emulator: right with the package's source, and wrong
    (so the check can fail) with a backward that tests the winner with the axes swapped."""
    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = _load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    from dezero_like import cuda_kernels

    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    x = np.array([[9, 1, 0, 0], [0, 0, 0, 8], [0, 7, 6, 0], [0, 0, 0, 0]], np.float32)
    expected_gx = np.array([[1, 0, 0, 0], [0, 0, 0, 2], [0, 3, 4, 0], [0, 0, 0, 0]], np.float32)

    def pool_forward_backward():
        y, win = cuda_kernels.max_pool_tiles(emulator.asarray(x.reshape(1, 1, 4, 4)), (2, 2))
        gy = emulator.asarray(np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2))
        gx = cuda_kernels.max_pool_tiles_grad(gy, win, (1, 1, 4, 4), (2, 2))
        return y.get().reshape(2, 2), gx.get().reshape(4, 4)

    y, gx = pool_forward_backward()
    np.testing.assert_array_equal(y, [[9, 8], [7, 6]])
    np.testing.assert_array_equal(gx, expected_gx)

    right = "win[o] == (h % KH) * KW + w % KW"
    assert right in cuda_kernels._CONV_RAW
    monkeypatch.setattr(cuda_kernels, "_CONV_RAW", cuda_kernels._CONV_RAW.replace(
        right, "win[o] == (w % KW) * KH + h % KH"))
    cuda_kernels._built.clear()
    _, gx = pool_forward_backward()
    assert not np.array_equal(gx, expected_gx)


@needs_compiler
def test_a_gpu_training_step_launches_about_as_many_kernels_as_the_math_fused_by_hand(
        load_benchmark, monkeypatch, tmp_path):
    """benchmarks/launches.py: the book's MLP step makes at most 1.2x the launches of the
    same math written by hand with fused kernels (19 against 17 when this was written), and
    less than half of the unfused hand-written version. Undoing a fused path of step 71
    that saves launches (the sigmoid, the loss and its gradient) breaks this."""
    from dezero_like import cuda_kernels

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    launches = load_benchmark("launches")
    emulator = launches.load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    counts = {name: sum(c.values()) for name, c in launches.count_launches(emulator).items()}
    assert counts["dezero_like"] <= 1.2 * counts["by hand, fused"], counts
    assert counts["dezero_like"] < counts["by hand"] / 2, counts


@needs_compiler
def test_the_hand_fused_column_computes_what_the_unfused_one_does(load_benchmark, monkeypatch,
                                                                  tmp_path):
    """benchmarks/mnist_gpu.py's hand-written columns, fused and unfused, train the same MLP
    on the same 300 rows (a batch of 100 rows, a grid of 4 blocks of 32 threads, one per row):
    a wrong launch of the fused softmax cross entropy (rows left out, or rows done twice)
    changes the losses."""
    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = load_benchmark("launches").load_emulator()
    bench = load_benchmark("mnist_gpu")
    rng = np.random.default_rng(0)
    x = rng.random((300, 20), dtype=np.float32)
    t = rng.integers(0, 10, 300)
    epochs = [bench.by_hand((20, 16, 10), x, t, emulator, fused=fused) for fused in (False, True)]
    losses = [[run_epoch() for _ in range(2)] for run_epoch in epochs]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
    assert losses[0][1] < losses[0][0]


@needs_compiler
def test_a_training_step_looks_up_no_kernel_once_they_are_built(
        load_benchmark, monkeypatch, tmp_path):
    """CuPy's ``RawModule.get_function`` makes a new kernel object on every call, so
    ``cuda_kernels`` keeps what it looked up: the small CNN's second step (im2col, col2im,
    pooling, the loss, the bias gradient) looks up nothing."""
    from dezero_like import cuda_kernels

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    launches = load_benchmark("launches")
    emulator = launches.load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    looked_up = []
    get_function = emulator.RawModule.get_function
    monkeypatch.setattr(emulator.RawModule, "get_function",
                        lambda module, name: looked_up.append(name) or get_function(module, name))
    rng = np.random.default_rng(0)
    step = load_benchmark("mnist_gpu").ours_cnn(
        rng.random((100, 784), dtype=np.float32), rng.integers(0, 10, 100), gpu=True)
    step()
    assert "im2col_cf_f32" in looked_up and "softmax_ce_f32" in looked_up, looked_up
    looked_up.clear()
    step()
    assert looked_up == []


@needs_compiler
def test_a_gpu_training_step_runs_no_import_statement_in_the_package(
        load_benchmark, monkeypatch, tmp_path):
    """The kernels' launchers take CuPy from ``cuda_kernels._built`` and the functions reach
    ``cuda_kernels`` through a module-level import: once the models of mnist_gpu.py have trained
    a step on the GPU, a second step (forward, loss, cleargrads, backward, update) executes no
    ``import`` statement in the package. Each would be a trip through the import machinery on
    every step, up to half a microsecond of Python (``from package import module``)."""
    import builtins

    import dezero_like
    import dezero_like.functions as F
    from dezero_like import cuda, cuda_kernels, optimizers

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = load_benchmark("launches").load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    bench = load_benchmark("mnist_gpu")
    package = os.path.dirname(dezero_like.__file__) + os.sep
    rng = np.random.default_rng(0)
    t = cuda.as_cupy(rng.integers(0, 10, 100))
    models = {"MLP": (bench.mlp_model((784, 32, 10)), (100, 784)),
              "small CNN": (bench.small_cnn(), (100, 1, 28, 28))}
    real_import = builtins.__import__
    imported = []

    def recording_import(name, *rest):  # rest: globals, locals, fromlist, level
        caller = sys._getframe(1).f_code
        if caller.co_filename.startswith(package):
            imported.append(f"{name} {rest[2:3] or ''} in {caller.co_qualname}")
        return real_import(name, *rest)

    for name, (model, shape) in models.items():
        model.to_gpu()
        optimizer = optimizers.SGD(lr=0.1).setup(model)
        x = cuda.as_cupy(rng.random(shape, dtype=np.float32))
        for watched in (False, True):  # the first step builds the kernels
            if watched:
                monkeypatch.setattr(builtins, "__import__", recording_import)
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            monkeypatch.setattr(builtins, "__import__", real_import)
        assert cuda_kernels._built, f"the {name} ran no kernel of cuda_kernels"
        assert imported == [], f"the {name}'s step imported: {imported}"


@needs_compiler
def test_a_gpu_training_step_asks_nothing_it_was_told_in_the_step_before(
        load_benchmark, monkeypatch, tmp_path):
    """After a first step, the MLP's and the small CNN's GPU steps of benchmarks/launches.py
    neither ask again whether CuPy sees a GPU (``require_gpu`` per batch copy, a driver call on
    a real GPU) nor ask of a result whether it is a GPU array (``as_array``, ``is_cupy_array``,
    ``_is_array``: a dictionary of the CuPy types met answers), nor fetch CuPy by a call.
    ``as_array`` still takes the inputs given as arrays, as on the CPU, where a test of the
    array's type before it would cost every number a function is given."""
    from dezero_like import cuda_kernels

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    launches = load_benchmark("launches")
    emulator = launches.load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    asked = []
    count = emulator.cuda.runtime.getDeviceCount
    monkeypatch.setattr(emulator.cuda.runtime, "getDeviceCount",
                        lambda: asked.append(1) or count())
    calls = launches.count_calls(emulator)  # one step watched, after one step of warm-up
    assert set(calls) == {"dezero_like", "dezero_like, small CNN"}
    not_per_step = ("cuda.py:require_gpu", "cuda.py:_cupy", "cuda_kernels.py:_cupy",
                    "cuda.py:is_cupy_array", "core.py:_is_array")
    for name, counter in calls.items():
        assert counter["cuda.py:as_cupy"] == 2, (name, counter)  # the batch, x and t
        # as_array only for the two inputs given as arrays (x to the first layer, t to the
        # loss), not for the results of the operators (ReLU's backward, say)
        assert counter["core.py:as_array"] <= 2, (name, counter)
        repeated = {k: counter[k] for k in not_per_step if counter[k]}
        assert repeated == {}, f"{name}: {repeated}"
    assert len(asked) == 1, asked  # the first batch of the first model found the GPU


def test_as_cupy_asks_for_a_gpu_once_per_cupy_module(monkeypatch):
    """``cuda.as_cupy`` copies a batch on every training step: once a CuPy module has found a
    GPU, it is not asked again. Another module put in its place is asked (a stand-in that sees
    no device gets the clear error on every call)."""
    from dezero_like import cuda

    first, second = _load_emulator(), _load_emulator()
    asked = []
    for module in (first, second):
        count = module.cuda.runtime.getDeviceCount
        monkeypatch.setattr(module.cuda.runtime, "getDeviceCount",
                            lambda m=module, c=count: asked.append(m) or c())
    monkeypatch.setitem(sys.modules, "cupy", first)
    for _ in range(3):
        a = cuda.as_cupy(np.arange(3.0))
    assert type(a) is first.ndarray and asked == [first]
    assert cuda.require_gpu() is first and cuda.gpu_available() and asked == [first]
    monkeypatch.setitem(sys.modules, "cupy", second)
    monkeypatch.setattr(second.cuda.runtime, "getDeviceCount", lambda: asked.append(second) or 0)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="GPU was requested but no CUDA GPU is visible"):
            cuda.as_cupy(np.arange(3.0))
    assert asked == [first, second, second]
    monkeypatch.setitem(sys.modules, "cupy", first)
    assert type(cuda.as_cupy(np.arange(3.0))) is first.ndarray
    assert asked == [first, second, second]  # the one that found a GPU is still known


@needs_compiler
def test_a_kernel_looked_up_on_one_gpu_is_looked_up_again_on_another(monkeypatch, tmp_path):
    """A function CuPy's ``RawModule`` hands out is loaded on the GPU that was current then:
    launched on a second GPU it would fail. ``cuda_kernels`` keeps one per device."""
    from dezero_like import cuda_kernels

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = _load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", emulator)
    monkeypatch.setattr(cuda_kernels, "_built", {})  # the GPU's kernels, if any, come back after
    f32 = np.dtype(np.float32)
    on_0 = cuda_kernels._raw("sum_rows", f32)
    assert cuda_kernels._raw("sum_rows", f32) is on_0
    monkeypatch.setattr(emulator.cuda.runtime, "getDevice", lambda: 1)
    on_1 = cuda_kernels._raw("sum_rows", f32)
    assert on_1 is not on_0
    assert cuda_kernels._raw("sum_rows", f32) is on_1
    modules = [v for v in cuda_kernels._built.values() if isinstance(v, emulator.RawModule)]
    assert len(modules) == 2


def test_the_emulator_has_cupys_flags_and_refuses_lists_and_reductions_as_cupy_does():
    """What real CuPy 14 refuses, the emulator refuses, so that CI catches it: ``flags`` has
    only c_contiguous, f_contiguous and owndata (cupy/_core/flags.pyx: no ``writeable``), a
    list is no operand (``a + [1, 2]``), and ufuncs reduce and accumulate only as add and
    multiply (cupy/_core/_kernel.pyx)."""
    from dezero_like import core

    emulator = _load_emulator()
    a = emulator.asarray(np.arange(3.0))
    assert (a.flags.c_contiguous, a.flags.f_contiguous, a.flags["OWNDATA"]) == (True, True, True)
    assert not hasattr(a.flags, "writeable") and not a[1:].flags.owndata
    with pytest.raises(KeyError, match="WRITEABLE is not defined for cupy.ndarray.flags"):
        a.flags["WRITEABLE"]
    # core._writeable falls back on the strides: a broadcast view (stride 0) is read-only
    assert core._writeable(a) and not core._writeable(emulator.broadcast_to(a, (2, 3)))
    for operation in (lambda: a + [1, 2, 3], lambda: [1, 2, 3] * a, lambda: a - (1, 2, 3),
                      lambda: emulator.add(a, [1, 2, 3]), lambda: np.maximum(a, [0, 0, 0])):
        with pytest.raises(TypeError, match="Unsupported type"):
            operation()
    assert float(emulator.add.reduce(a)) == 3.0 and float(np.multiply.reduce(a + 1)) == 6.0
    np.testing.assert_array_equal(emulator.add.accumulate(a).get(), [0, 1, 3])
    for operation in (lambda: emulator.maximum.reduce(a), lambda: np.minimum.reduce(a),
                      lambda: emulator.subtract.accumulate(a), lambda: np.logical_or.reduce(a)):
        with pytest.raises(NotImplementedError, match="is not supported yet"):
            operation()


def test_the_emulator_wraps_an_index_array_around_in_gathers_and_scatters_as_cupy_does():
    """CuPy's take and its scatter kernels (assignment, ``add.at``) take an index array
    modulo the axis' length (``i % n``, then ``+ n`` if negative); a Python int is checked."""
    emulator = _load_emulator()
    a = emulator.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(a[:, emulator.asarray([4, -4])].get(), [[1, 2], [4, 5]])
    np.testing.assert_array_equal(a[[3, -3]].get(), a[[1, 1]].get())  # a list: an array in CuPy
    with pytest.raises(IndexError):
        a[2]
    z = emulator.zeros((2, 3))
    emulator.add.at(z, (slice(None), emulator.asarray([4, -4, 0, 3])), 1.0)
    emulator.add.at(z, (np.array([2]), np.array([5])), 10.0)  # NumPy indices: copied, wrapped
    np.testing.assert_array_equal(z.get(), [[2, 1, 11], [2, 1, 1]])
    z[emulator.asarray([-3]), [7]] = -1.0
    assert float(z[1, 1]) == -1.0


@needs_compiler
def test_the_emulator_takes_a_launch_as_cupy_does_and_refuses_what_cuda_refuses(tmp_path,
                                                                               monkeypatch):
    """Its loop would run any grid and block it is given; CUDA refuses a block of more than
    1024 threads (64 in z) and a grid of more than 2**31 - 1 blocks in x (65535 in y, z), and
    CuPy raises an empty grid to one block, so a kernel that writes without an index check
    still writes once."""
    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = _load_emulator()
    kernel = emulator.RawModule(code='extern "C" __global__ void mark(int* out, int n) {\n'
                                     '    if (threadIdx.x == 0) out[blockIdx.x % n] += 1; }'
                                ).get_function("mark")
    out = emulator.zeros(2, np.int32)
    kernel((0,), (0,), (out, np.int32(2)))  # as CuPy: one block of one thread
    kernel((3,), (1024,), (out, np.int32(2)))  # the largest block CUDA takes
    np.testing.assert_array_equal(out.get(), [1 + 2, 1])
    for grid, block in [((1,), (2048,)), ((1,), (32, 64)), ((1,), (1, 1, 128)),
                        ((2**31,), (256,)), ((1, 65536), (1,))]:
        with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_VALUE"):
            kernel(grid, block, (out, np.int32(2)))
    np.testing.assert_array_equal(out.get(), [3, 1])  # nothing ran


@needs_compiler
def test_the_emulator_refuses_what_numpy_has_and_cupy_does_not(tmp_path, monkeypatch):
    """The emulator takes what it does not define from NumPy, so a NumPy-only name would pass
    here and fail on a GPU: ``cupy.errstate`` (CuPy has none), ``np.insert(gpu_array, ...)``
    (CuPy's ``__array_function__`` runs ``cupy.insert``, which does not exist),
    ``gpu_array.resize(...)``, ``cupy.random.get_state()``. And a CuPy array is no integer
    (``cupy.ndarray`` has no ``__index__``), nor a number a raw kernel's grid (CuPy's
    ``Function.__call__`` takes tuples)."""
    import operator

    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    emulator = _load_emulator()
    a = emulator.arange(6.0)
    for refused in (lambda: emulator.errstate, lambda: emulator.geomspace,
                    lambda: a.resize, lambda: emulator.random.get_state):
        with pytest.raises(AttributeError, match="CuPy 14 does not have it"):
            refused()
    for refused in (lambda: np.insert(a, 0, 1.0), lambda: np.linalg.multi_dot([a, a])):
        with pytest.raises(TypeError, match="no implementation found for 'numpy"):
            refused()
    assert float(np.linalg.norm(a)) == pytest.approx(np.linalg.norm(np.arange(6.0)))
    two = emulator.asarray(2)
    for refused in (lambda: operator.index(two), lambda: [1, 2, 3][two], lambda: range(two)):
        with pytest.raises(TypeError):
            refused()
    assert int(two) == 2 and [1, 2, 3][int(two)] == 3  # what to write instead
    b = emulator.ones((2, 2))
    before = b
    b @= emulator.ones((2, 2))  # no __imatmul__ in CuPy: a new array, b rebound
    assert b is not before and float(before.sum()) == 4.0 and float(b.sum()) == 8.0
    kernel = emulator.RawKernel('extern "C" __global__ void one(int* out) { out[0] = 1; }',
                                "one")
    out = emulator.zeros(1, np.int32)
    for grid, block in [(1, (1,)), ((1,), 1), ([1], (1,))]:
        with pytest.raises(TypeError, match="expected tuple"):
            kernel(grid, block, (out,))
    kernel((1,), (1,), (out,))
    assert int(out[0]) == 1


def test_the_emulators_list_of_names_cupy_lacks_is_cupys():
    """``_NOT_IN_CUPY`` against the real CuPy, where one imports (it does without a GPU): no
    name listed is one CuPy has (the emulator would refuse what a GPU runs), and, with the
    NumPy and CuPy the list was made with, every public NumPy name CuPy lacks is listed."""
    probe = subprocess.run(
        [sys.executable, "-c", "import json, numpy, cupy\n"
         "def lacks(a, b):\n"
         "    return sorted(n for n in dir(a) if not n.startswith('_') and not hasattr(b, n))\n"
         "print(json.dumps({'versions': [numpy.__version__, cupy.__version__],\n"
         "                  'numpy': lacks(numpy, cupy),\n"
         "                  'numpy.linalg': lacks(numpy.linalg, cupy.linalg),\n"
         "                  'ndarray': lacks(numpy.ndarray, cupy.ndarray),\n"
         "                  'random': lacks(numpy.random.RandomState, cupy.random)}))"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}, cwd="/")
    if probe.returncode:
        pytest.skip(f"the real CuPy does not import here: {probe.stderr.strip()[-200:]}")
    import json

    lacking = json.loads(probe.stdout)
    versions = lacking.pop("versions")
    emulator = _load_emulator()
    listed = emulator._NOT_IN_CUPY
    has = {"numpy": dir(np), "numpy.linalg": dir(np.linalg), "ndarray": dir(np.ndarray),
           "random": dir(np.random.RandomState)}
    for where, names in lacking.items():
        wrongly = (listed[where] & set(has[where])) - set(names)
        assert not wrongly, f"{where}: CuPy {versions[1]} has {sorted(wrongly)}: take them off"
    same = [v.split(".")[:2] for v in versions] == [v.split(".")[:2]
                                                      for v in emulator.NOT_IN_CUPY_MADE_WITH]
    for where, names in lacking.items() if same else ():
        missing = set(names) - listed[where]
        assert not missing, f"{where}: add {sorted(missing)} to the emulator's _NOT_IN_CUPY"


# --------------------------------------------------------------------------- noise mode
# The GPU tests that compare the GPU's numbers with NumPy's, run again with CUPY_ON_CPU_NOISE=1
# (sums in another order, exp and friends 1-2 ulp off, FMA in the kernels): a comparison
# that only holds because the emulator is NumPy bit for bit fails here, as it would on a GPU.
# Left out: the tests that count host copies and waits (no numbers), and step 54's MNIST
# epoch (a minute; gpu_check.sh's steps stage runs it).
NOISY_SLICE = ["tests/test_gpu.py", "tests/test_cuda.py", "tests/test_functions.py",
               "tests/test_conv.py"]
NUMBERS_ONLY = "not copies_nothing and not never_waits"


@needs_compiler
def test_the_gpu_tests_allow_what_a_real_gpu_rounds_differently(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST")}
    env.update(DEZERO_LIKE_CUPY_ON_CPU="1", CUPY_ON_CPU_NOISE="1",
               CUPY_ON_CPU_CACHE=str(tmp_path / "kernels"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-rs",
         "-m", "gpu", "-k", NUMBERS_ONLY, *NOISY_SLICE], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=600)
    tail = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, f"GPU tests too tight for a GPU's rounding:\n{tail}"
    # about 220 with PyTorch (the oracle's cases), 130 without
    with_torch = importlib.util.find_spec("torch") is not None
    assert int(re.search(r"(\d+) passed", done.stdout).group(1)) >= (200 if with_torch else 120)
    skips = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert not [line for line in skips if "GPU" in line and "PyTorch" not in line], tail


def _load_noisy_emulator(monkeypatch, tmp_path):
    monkeypatch.setenv("CUPY_ON_CPU_NOISE", "1")
    monkeypatch.setenv("CUPY_ON_CPU_CACHE", str(tmp_path))
    return _load_emulator()


def _ulps_apart(a, b):
    """How many float32 or float64 steps separate a and b, element by element."""
    a, b = np.asarray(a), np.asarray(b)
    signed = {4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia, ib = a.view(signed).astype(np.int64), b.view(signed).astype(np.int64)
    return np.abs(ia - ib)


@needs_compiler
def test_the_noise_mode_rounds_as_a_gpu_may_and_keeps_exact_what_a_gpu_keeps_exact(
        monkeypatch, tmp_path):
    """CUPY_ON_CPU_NOISE=1: sums, matmul and scatter-adds in another order, exp and tanh off
    by at most 2 ulp, in the kernels too, and another random stream: never NumPy's bits, always
    within what another order or another libm can give. Integers, max, argmax, comparisons
    and copies stay exact. Without the variable the emulator is NumPy's bit for bit."""
    cp = _load_noisy_emulator(monkeypatch, tmp_path)
    eps = np.finfo(np.float32).eps
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=shape).astype(np.float32) for shape in [(40, 70), (70, 30)])
    A, B = cp.asarray(a), cp.asarray(b)
    bound = 70 * eps * (np.abs(a) @ np.abs(b))  # the classic bound of any order of K terms
    for noisy in ((A @ B).get(), A.dot(B).get(), cp.matmul(A, B).get(), np.dot(A, B).get(),
                  cp.tensordot(A, B, 1).get(), cp.einsum("ij,jk->ik", A, B).get()):
        assert not np.array_equal(noisy, a @ b)
        assert np.all(np.abs(noisy - a @ b) <= bound)
    for noisy, exact in ((A.sum(axis=1).get(), a.sum(axis=1)), (cp.sum(A, 0).get(), a.sum(0)),
                         (np.mean(A, axis=1).get(), a.mean(1)),
                         (cp.add.reduce(A, axis=1).get(), a.sum(1))):
        assert not np.array_equal(noisy, exact)
        assert np.all(np.abs(noisy - exact) <= 70 * eps * np.abs(a).sum())
    ids = rng.integers(0, 4, size=200)  # about 50 additions into each row: atomics on a GPU
    values = rng.normal(size=(200, 70)).astype(np.float32)
    scattered, by_numpy = cp.zeros((4, 70), np.float32), np.zeros((4, 70), np.float32)
    cp.add.at(scattered, cp.asarray(ids), cp.asarray(values))
    np.add.at(by_numpy, ids, values)
    assert not np.array_equal(scattered.get(), by_numpy)
    np.testing.assert_allclose(scattered.get(), by_numpy, rtol=0,
                               atol=200 * eps * np.abs(values).sum(axis=0).max())
    pos = np.abs(a) + 0.5
    for noisy, f in ((np.exp, np.exp), (np.tanh, np.tanh), (np.log1p, np.log1p),
                     (cp.exp, np.exp), (lambda x: cp.power(x, 3), lambda x: np.power(x, 3))):
        apart = _ulps_apart(noisy(cp.asarray(pos)).get(), f(pos))
        assert apart.max() == 2 and (apart == 0).mean() < 0.5
    assert float(cp.exp(cp.zeros(()))) == 1.0 and float(np.log(cp.ones(()))) == 0.0
    np.testing.assert_array_equal((A ** 2).get(), a ** 2)  # x * x: exact on a GPU too
    np.testing.assert_array_equal(np.sqrt(cp.abs(A)).get(), np.sqrt(np.abs(a)))
    np.testing.assert_array_equal((A / 3).get(), a / 3)
    sigmoid = cp.ElementwiseKernel("T x", "T y", "y = 1 / (1 + exp(-x))", "noisy_sigmoid")
    apart = _ulps_apart(sigmoid(A).get(), 1 / (1 + np.exp(-a)))
    assert 0 < apart.max() <= 4
    if "-mfma" in cp._GXX_FLAGS:  # a * b + c rounded once, as NVRTC's --fmad=true makes it
        fused = cp.ElementwiseKernel("T x, T y, T z", "T w", "w = x * y + z", "noisy_fma")
        d, c = (rng.normal(size=a.shape).astype(np.float32) for _ in range(2))
        once = (a.astype(np.float64) * d + c).astype(np.float32)
        result = fused(A, cp.asarray(d), cp.asarray(c)).get()
        assert not np.array_equal(result, a * d + c)
        assert (result == once).mean() > 0.99  # (float64's sum, rounded again: a rare miss)
    # what a GPU computes exactly stays exact
    ints = rng.integers(-1000, 1000, size=(40, 70))
    np.testing.assert_array_equal(cp.asarray(ints).sum(axis=0).get(), ints.sum(axis=0))
    np.testing.assert_array_equal((cp.asarray(ints) @ cp.asarray(ints.T)).get(), ints @ ints.T)
    np.testing.assert_array_equal(A.max(axis=1).get(), a.max(axis=1))
    np.testing.assert_array_equal(A.argmax(axis=1).get(), a.argmax(axis=1))
    np.testing.assert_array_equal((A > 0).get(), a > 0)
    np.testing.assert_array_equal(A[:, [3, 1]].get(), a[:, [3, 1]])
    np.testing.assert_array_equal((A + A).get(), a + a)
    cp.random.seed(0)
    np.random.seed(0)
    assert not np.array_equal(cp.random.rand(5).get(), np.random.rand(5))
    # the default: NumPy's bits
    monkeypatch.delenv("CUPY_ON_CPU_NOISE")
    plain = _load_emulator()
    np.testing.assert_array_equal((plain.asarray(a) @ plain.asarray(b)).get(), a @ b)
    np.testing.assert_array_equal(plain.exp(plain.asarray(a)).get(), np.exp(a))


def test_the_array_module_is_found_for_each_cupy_module_put_in_place(monkeypatch):
    """``cuda`` remembers every CuPy array type it met, with its module (step 23): a second
    CuPy module put in the first one's place (the emulator, loaded again) answers for its own
    arrays, in ``get_array_module`` and in the functions' results."""
    import dezero_like as dz
    import dezero_like.functions as F
    from dezero_like import cuda

    first, second = _load_emulator(), _load_emulator()
    monkeypatch.setitem(sys.modules, "cupy", first)
    a = first.asarray(np.ones(3, np.float32))
    assert cuda.is_cupy_array(a) and cuda.get_array_module(a) is first
    monkeypatch.setitem(sys.modules, "cupy", second)
    b = second.asarray(np.ones(3, np.float32))
    assert cuda.is_cupy_array(b) and cuda.get_array_module(b) is second
    y = F.sin(dz.Variable(b))
    assert type(y.data) is second.ndarray and cuda.get_array_module(y.data) is second
