"""Function hooks (dezero_like.hooks): the mechanism, TimerHook, PrintHook, debug mode."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import core
from dezero_like.hooks import DebugError, DebugHook, FunctionHook, PrintHook, TimerHook


class Recorder(FunctionHook):
    """Records every callback as (event, function)."""

    def __init__(self):
        self.events = []

    def forward_preprocess(self, function, in_data):
        self.events.append(("fwd-pre", function, list(in_data)))

    def forward_postprocess(self, function, in_data, out_data):
        self.events.append(("fwd-post", function, list(out_data)))

    def backward_preprocess(self, function, grad_outputs):
        self.events.append(("bwd-pre", function, list(grad_outputs)))

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        self.events.append(("bwd-post", function, list(grad_inputs)))

    def functions(self, event):
        return [f for e, f, _ in self.events if e == event]


def known_graph(x):
    """exp -> (square, sin) -> add -> sum, with generations 0, 1, 1, 2, 3."""
    a = F.exp(x)
    b = F.square(a)
    c = F.sin(a)
    d = b + c
    return F.sum(d)


@pytest.fixture(autouse=True)
def no_leftover_hooks():
    yield
    assert core._global_hooks == [], "a test left a hook switched on"


def test_with_block_adds_and_removes_the_hook():
    h = FunctionHook()
    assert h not in core._global_hooks
    with h as entered:
        assert entered is h
        assert core._global_hooks[-1] is h
    assert all(g is not h for g in core._global_hooks)


def test_nested_blocks_run_both_hooks_outer_first():
    a, b = Recorder(), Recorder()
    with a:
        with b:
            assert core._global_hooks[-2:] == [a, b]
            F.exp(dz.Variable(np.ones(2)))
        assert core._global_hooks[-1] is a
        F.sin(dz.Variable(np.ones(2)))
    assert [type(f).__name__ for f in a.functions("fwd-pre")] == ["Exp", "Sin"]
    assert [type(f).__name__ for f in b.functions("fwd-pre")] == ["Exp"]


def test_same_hook_twice_is_refused_and_exception_leaves_no_hook_behind():
    h = FunctionHook()
    with h:
        with pytest.raises(RuntimeError, match="already active"):
            with h:
                pass
        assert core._global_hooks.count(h) == 1
    with pytest.raises(ZeroDivisionError):
        with h:
            1 / 0
    # the autouse fixture checks that nothing is left


def test_base_hook_callbacks_are_no_ops_and_results_unchanged():
    x = dz.Variable(np.array([0.5, 1.5]))
    with FunctionHook():
        y = known_graph(x)
        y.backward()
    x2 = dz.Variable(np.array([0.5, 1.5]))
    y2 = known_graph(x2)
    y2.backward()
    np.testing.assert_array_equal(y.data, y2.data)
    np.testing.assert_array_equal(x.grad.data, x2.grad.data)


def test_forward_hooks_see_every_function_once_in_call_order():
    rec = Recorder()
    x = dz.Variable(np.array([0.1, 0.2, 0.3]))
    with rec:
        y = known_graph(x)
    names = [type(f).__name__ for f in rec.functions("fwd-pre")]
    assert names == ["Exp", "Square", "Sin", "Add", "Sum"]
    assert rec.functions("fwd-pre") == rec.functions("fwd-post")
    # pre and post alternate: pre(f), post(f), pre(g), post(g), ...
    events = [e for e, _, _ in rec.events]
    assert events == ["fwd-pre", "fwd-post"] * 5
    # the arrays handed to the hook are the real inputs and outputs
    assert rec.events[0][2][0] is x.data
    assert rec.events[-1][2][0] is y.data


def test_backward_hooks_see_every_function_once_in_generation_order():
    x = dz.Variable(np.array([0.1, 0.2, 0.3]))
    y = known_graph(x)
    fwd = Recorder()
    rec = Recorder()
    with rec:
        y.backward()
    order = rec.functions("bwd-pre")
    assert [type(f).__name__ for f in order] == ["Sum", "Add", "Square", "Sin", "Exp"]
    assert len({id(f) for f in order}) == 5
    gens = [f.generation for f in order]
    assert gens == sorted(gens, reverse=True) == [3, 2, 1, 1, 0]
    assert order == rec.functions("bwd-post")
    # grad_inputs has one entry per input of the function
    for e, f, gxs in rec.events:
        if e == "bwd-post":
            assert len(gxs) == len(f.inputs)
    del fwd


def test_backward_hook_gradients_are_the_ones_backprop_uses():
    x = dz.Variable(np.array([0.1, 0.2]))
    y = F.exp(x)
    rec = Recorder()
    with rec:
        y.backward()
    (e, f, gxs), = [ev for ev in rec.events if ev[0] == "bwd-post"]
    np.testing.assert_allclose(gxs[0].data, np.exp([0.1, 0.2]))
    np.testing.assert_array_equal(x.grad.data, gxs[0].data)


def test_add_hook_on_one_function_sees_only_that_function():
    rec = Recorder()
    x = dz.Variable(np.array([1.0, 2.0]))
    f = F.Exp()
    assert f.add_hook(rec) is f
    y = F.sin(f(x))
    F.sum(y).backward()
    assert rec.functions("fwd-pre") == [f]
    assert rec.functions("bwd-pre") == [f]
    assert core._global_hooks == []


def test_timer_hook_counts_each_function_type_per_pass():
    # a chain: no variable feeds two functions, so no gradients are summed between steps
    x = dz.Variable(np.random.default_rng(0).standard_normal((20, 30)))
    with TimerHook() as timer:
        y = F.sum(F.square(F.sin(F.exp(x)) + 1.0))
        y.backward()
    s = timer.summary()
    assert set(s) == {"Exp", "Square", "Sin", "Add", "Sum"}
    for name in s:
        assert s[name]["forward"]["calls"] == 1, name
        assert s[name]["backward"]["calls"] == 1, name
        assert s[name]["forward"]["time"] > 0 and s[name]["backward"]["time"] > 0
    # Square's backward computes gy * (2 * x): those Mul calls belong to backward time
    assert "Mul" not in s
    assert timer.total_time() == pytest.approx(
        sum(r[p]["time"] for r in s.values() for p in ("forward", "backward")))
    buf = io.StringIO()
    timer.print_report(file=buf)
    text = buf.getvalue()
    for name in s:
        assert name in text
    assert "fwd ms" in text and "bwd ms" in text
    timer.reset()
    assert timer.summary() == {} and timer.total_time() == 0


def test_timer_measures_real_time():
    x = dz.Variable(np.ones((400, 400)))
    with TimerHook() as timer:
        for _ in range(3):
            F.matmul(x, x)
    row = timer.summary()["MatMul"]["forward"]
    assert row["calls"] == 3
    assert row["time"] > 1e-4  # three 400x400 products take more than 0.1 ms


def test_print_hook_lines_and_indented_inner_calls():
    buf = io.StringIO()
    x = dz.Variable(np.ones((2, 3), dtype=np.float32))
    with PrintHook(file=buf):
        y = F.sum(F.square(x))
        y.backward()
    lines = buf.getvalue().splitlines()
    assert lines[0] == "forward  Square: in (2, 3) float32 -> out (2, 3) float32"
    assert lines[1] == "forward  Sum: in (2, 3) float32 -> out () float32"
    assert lines[2] == "backward Sum: grad out () float32"
    assert any(ln.startswith("    forward  ") for ln in lines), "inner forwards are indented"
    assert "backward Square: grad out (2, 3) float32" in lines
    buf2 = io.StringIO()
    x.cleargrad()  # otherwise the new gradient is added to the old one (a visible Add)
    with PrintHook(file=buf2, backward=False):
        F.sum(F.square(x)).backward()
    assert "backward" not in buf2.getvalue()
    assert buf2.getvalue().count("forward") == 2


def test_debug_mode_names_the_forward_that_made_inf():
    x = dz.Variable(np.array([1.0, 0.0, 2.0], dtype=np.float32))
    with pytest.raises(DebugError) as info, np.errstate(divide="ignore"):
        with dz.debug_mode():
            F.log(x)
    msg = str(info.value)
    assert msg.startswith("forward of Log produced -inf in output 0 at index (1,)")
    assert "test_hooks.py:" in msg
    assert "input 0: (3,) float32, finite range [0, 2]" in msg
    assert "started earlier" not in msg
    assert isinstance(info.value, RuntimeError)


def test_debug_mode_names_the_backward_that_made_nan():
    class BadGrad(dz.Function):
        def forward(self, x):
            return x.copy()

        def backward(self, gy):
            g = gy.data.copy()
            g[..., -1] = np.nan
            return dz.Variable(g)

    x = dz.Variable(np.ones((2, 2)))
    with pytest.raises(DebugError) as info:
        with dz.debug_mode():
            y = BadGrad()(x)  # this line number must appear in the message
            F.sum(y).backward()
    msg = str(info.value)
    assert msg.startswith("backward of BadGrad produced nan in the gradient of input 0 "
                          "at index (0, 1)")
    assert "test_hooks.py:" in msg and "forward called at" in msg
    assert "grad of output 0: (2, 2) float64" in msg
    assert x.grad is None


def test_debug_mode_inner_function_of_a_backward_is_named_with_its_outer_backward():
    x = dz.Variable(np.array([4.0, 0.0]))
    with pytest.raises(DebugError, match=r"forward of \w+ \(inside the backward of Pow"), \
            np.errstate(divide="ignore"):
        with dz.debug_mode():
            F.sum(x ** 0.5).backward()


def test_debug_mode_says_when_nan_came_from_the_input():
    x = dz.Variable(np.array([1.0, np.nan]))
    with pytest.raises(DebugError, match="started earlier"):
        with dz.debug_mode():
            F.exp(x)


def test_debug_mode_is_silent_on_finite_results_and_switches_off():
    x = dz.Variable(np.array([0.5, 1.0]))
    with dz.debug_mode() as hook:
        assert isinstance(hook, DebugHook)
        y = known_graph(x)
        y.backward()
    assert np.isfinite(x.grad.data).all()
    with np.errstate(divide="ignore"):
        z = F.log(dz.Variable(np.array([0.0])))  # outside debug mode: no error
    assert np.isneginf(z.data).all()


def test_debug_mode_ignores_integer_arrays():
    x = dz.Variable(np.array([1, 2, 3]))
    with dz.debug_mode():
        y = x * 2
    np.testing.assert_array_equal(y.data, [2, 4, 6])


def test_a_backward_that_raises_leaves_no_backward_running_for_the_hooks():
    """A backward step that raises must not stay on the stack: the forwards after it
    would all look as if they ran inside that backward (the timer dropped them)."""

    class Boom(dz.Function):
        def forward(self, a):
            return a * 1

        def backward(self, gy):
            raise ValueError("boom")

    x = dz.Variable(np.ones(3))
    out = io.StringIO()
    with TimerHook() as timer, PrintHook(file=out):
        with pytest.raises(ValueError, match="boom"):
            Boom()(x).backward()
        F.exp(x)
    assert core._backward_stack == []
    assert timer.summary()["Exp"]["forward"]["calls"] == 1
    assert out.getvalue().splitlines()[-1].startswith("forward  Exp")  # not indented


def test_a_hook_both_global_and_attached_runs_once_and_cannot_be_attached_twice():
    rec = Recorder()
    f = F.Exp().add_hook(rec)
    with pytest.raises(ValueError, match="already attached"):
        f.add_hook(rec)
    x = dz.Variable(np.ones(2))
    with rec:
        y = f(x)
        y.backward()
    assert [e for e, fn, _ in rec.events if fn is f] == ["fwd-pre", "fwd-post",
                                                         "bwd-pre", "bwd-post"]
    f.delete_hook(rec)
    assert f._hooks is None
    with pytest.raises(ValueError, match="not attached"):
        f.delete_hook(rec)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_debug_mode_catches_a_sum_of_finite_gradients_that_overflows():
    """Gradients added by the backward loop (a variable used twice) or into a leaf's
    .grad are made by no function; debug_mode checks them too."""
    z = dz.Variable(np.array([0.0], np.float16), name="z")
    with pytest.raises(DebugError, match=r"leaf 'z'.*inf.*overflowed"):
        with dz.debug_mode():
            (z * 40000.0 + z * 40000.0).backward()
    z = dz.Variable(np.array([0.0], np.float16))
    with pytest.raises(DebugError, match=r"reached output 0 of Mul.*sum"):
        with dz.debug_mode():
            a = z * dz.Variable(np.array([1.0], np.float16))  # a Mul (z * 1.0: step 67's
            (a * 40000.0 + a * 40000.0).backward()            # Float16WithNumber)
    w = dz.Variable(np.array([1.0]))
    w.grad = dz.Variable(np.array([np.nan]))  # left over from an earlier run
    with pytest.raises(DebugError, match=r"held NaN/Inf before this backward"):
        with dz.debug_mode():
            (w * 2.0).backward()


class _RecomputedExp(dz.Function):
    """exp(x) whose backward runs a backward of its own, as gradient checkpointing does."""

    def forward(self, x):
        time.sleep(0.02)
        return np.exp(x)

    def backward(self, gy):
        (x,) = self.inputs
        inner = dz.Variable(x.data.copy())
        with dz.using_config("enable_backprop", True):
            F.sum(_SlowExp()(inner) * gy.data).backward()
        return inner.grad


class _SlowExp(dz.Function):
    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        time.sleep(0.05)
        return gy * np.exp(self.inputs[0].data)


def test_timer_counts_a_backward_inside_a_backward_once():
    # The inner backward (_SlowExp's 50 ms) runs inside _RecomputedExp's backward: the outer
    # span includes it, so it must count once in total_time, as the inner call's self time.
    x = dz.Variable(np.array([0.1, 0.2]))
    start = time.perf_counter()
    with TimerHook() as timer:
        F.sum(_RecomputedExp()(x)).backward()
    wall = time.perf_counter() - start
    assert np.allclose(x.grad.data, np.exp([0.1, 0.2]))
    s = timer.summary()
    assert s["_SlowExp"]["backward"]["calls"] == 1
    outer = s["_RecomputedExp"]["backward"]
    assert outer["total"] >= 0.05  # inclusive: the inner backward ran inside it
    assert outer["time"] < outer["total"] - 0.045  # self: the inner backward taken out
    assert timer.total_time() <= wall  # each second counted once (0.07 s, not 0.12 s)
    assert timer.total_time() == pytest.approx(
        sum(r[p]["time"] for r in s.values() for p in ("forward", "backward")))
    assert "_SlowExp" in timer.report()
