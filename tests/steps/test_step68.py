"""Step 68: timing forward, backward and update per iteration."""

import numpy as np

import dezero_like.functions as F
from dezero_like.models import MLP
from dezero_like.optimizers import SGD


def test_time_passes_measures_each_pass_after_warmup(load_step):
    step = load_step(68)
    rng = np.random.default_rng(1)
    x = rng.random((8, 20), dtype=np.float32)
    t = rng.integers(0, 3, size=8)
    model = MLP((16, 3), activation=F.relu)  # lazy weights: created during warm-up
    opt = SGD(lr=0.1).setup(model)
    times = step.time_passes(model, opt, x, t, iters=4, warmup=2)
    assert list(times) == ["forward", "backward", "update"]
    for name, values in times.items():
        assert len(values) == 4, name
        assert all(0 < v < 5 for v in values), (name, values)
    # the passes really ran: the model was trained for 6 iterations
    assert model.l0.W.data is not None and model.l0.W.grad is not None


def test_training_in_the_timing_loop_learns(load_step):
    step = load_step(68)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    t = (x[:, 0] > 0).astype(np.int64)
    np.random.seed(0)
    model = MLP((16, 2), activation=F.relu)
    opt = SGD(lr=0.5).setup(model)
    before = float(F.softmax_cross_entropy(model(x), t).data)
    step.time_passes(model, opt, x, t, iters=30, warmup=0)
    after = float(F.softmax_cross_entropy(model(x), t).data)
    assert after < 0.5 * before


def test_demo_output_and_table(load_step):
    step = load_step(68)
    out = step.output
    assert "machine: " in out
    lines = out.splitlines()
    i = lines.index(next(ln for ln in lines if ln.startswith("pass ")))
    assert lines[i].split() == ["pass", "mean", "ms", "min", "ms", "max", "ms"]
    for row, name in zip(lines[i + 1:i + 4], ["forward", "backward", "update"]):
        fields = row.split()
        assert fields[0] == name
        mean, lo, hi = map(float, fields[1:])
        assert 0 < lo <= mean <= hi
    assert all(len(v) == 20 for v in step.times.values())
    assert "Linear" in out and "bwd ms" in out
    assert "self-check passed" in out


def test_robust_stats(load_step):
    step = load_step(68)
    assert step.robust_stats([1.0, 3.0, 2.0]) == (2.0, 2.0)
    mean, median = step.robust_stats([1.0, 1.0, 1.0, 101.0])
    assert mean == 26.0 and median == 1.0
