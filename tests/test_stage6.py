"""Stage 6 together: hooks with real models, loss scaling with optimizers, the pass benchmark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import core, cuda
from dezero_like.hooks import DebugError, TimerHook
from dezero_like.models import MLP
from dezero_like.optimizers import MomentumSGD

ROOT = Path(__file__).resolve().parent.parent
gpu = pytest.mark.skipif(not cuda.gpu_available(), reason="no CUDA GPU with CuPy on this machine")


def test_passes_benchmark_runs_and_prints_command_machine_and_table(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "passes.py"), "--iters", "3", "--warmup",
           "1", "--arch", "784-1000-10", "--batch", "16", "--profile"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("command: python ")
    assert "machine: " in out and "numpy " in out
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("784-1000-10 ")]
    assert [r[2] for r in rows] == ["forward", "backward", "update", "total"]
    for r in rows:
        mean, lo, hi = map(float, r[3:6])
        assert 0 < lo <= mean <= hi
    assert "Linear" in out and "fwd ms" in out


def test_passes_helpers(load_benchmark):
    passes = load_benchmark("passes")
    s = passes.stats_ms([0.001, 0.002, 0.003])
    assert s == pytest.approx({"mean": 2.0, "min": 1.0, "max": 3.0})
    x, t = passes.make_data(4)
    times = passes.time_dezero([784, 8, 10], x, t, iters=2, warmup=1)
    assert {k: len(v) for k, v in times.items()} == {"forward": 2, "backward": 2, "update": 2}
    text = passes.table([("784-8-10", "dezero_like", times)])
    assert text.splitlines()[0].split()[:3] == ["network", "framework", "pass"]
    assert len(text.splitlines()) == 2 + 4


def test_hooks_leave_double_backprop_unchanged():
    x = dz.Variable(np.array([0.7, -0.3]))
    with TimerHook() as timer, dz.debug_mode():
        y = F.sum(F.sin(x) * x)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        F.sum(gx).backward()
    a = np.array([0.7, -0.3])
    np.testing.assert_allclose(gx.data, np.cos(a) * a + np.sin(a))
    np.testing.assert_allclose(x.grad.data, 2 * np.cos(a) - a * np.sin(a))
    assert "Sin" in timer.summary()
    assert core._global_hooks == []


def test_debug_mode_catches_a_diverging_training_run():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    t = rng.integers(0, 3, 16)
    np.random.seed(0)
    model = MLP((8, 3), activation=F.relu)
    opt = MomentumSGD(lr=1e5).setup(model)  # absurd learning rate: weights blow up
    with pytest.raises(DebugError, match=r"(forward|backward) of \w+"), \
            np.errstate(all="ignore"):
        with dz.debug_mode():
            for _ in range(50):
                loss = F.softmax_cross_entropy(model(x), t)
                model.cleargrads()
                loss.backward()
                opt.update()
    assert core._global_hooks == []


def test_float16_mlp_with_loss_scale_follows_float32():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6))
    t = rng.integers(0, 3, 64)

    def run(dtype, scale):
        np.random.seed(0)
        model = MLP((16, 3), activation=F.tanh)
        model(x[:1].astype(dtype))
        for p in model.params():
            p.data = p.data.astype(dtype)
        opt = MomentumSGD(lr=0.1).setup(model)
        for _ in range(5):
            loss = F.softmax_cross_entropy(model(x.astype(dtype)), t)
            model.cleargrads()
            loss.backward(loss_scale=scale)
            opt.update()
        return [p.data.astype(np.float64) for p in model.params()]

    ref = run(np.float32, None)
    for a, b in zip(run(np.float16, 256.0), ref):
        np.testing.assert_allclose(a, b, atol=5e-3)


@pytest.mark.gpu  # tools/gpu_check.sh runs the tests marked gpu
@gpu
def test_hooks_and_benchmark_on_gpu(load_benchmark):
    cp = cuda.require_gpu()
    x = dz.Variable(cp.asarray(np.array([1.0, 0.0, 2.0], dtype=np.float32)))
    with TimerHook() as timer:
        F.sum(F.exp(x)).backward()
    assert timer.summary()["Exp"]["backward"]["calls"] == 1
    with pytest.raises(DebugError, match="forward of Log produced -inf"):
        with dz.debug_mode():
            F.log(x)
    passes = load_benchmark("passes")
    xb, tb = passes.make_data(8)
    times = passes.time_dezero([784, 16, 10], xb, tb, iters=2, warmup=1, device="gpu")
    assert all(len(v) == 2 for v in times.values())
