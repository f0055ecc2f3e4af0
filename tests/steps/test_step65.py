"""Step 65: function hooks see every function once, in order."""

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import core


def test_recorder_sees_forward_in_call_order_and_backward_in_generation_order(load_step):
    step = load_step(65)
    rec = step.CallRecorder()
    x = dz.Variable(np.array([0.3, 0.1]))
    with rec:
        a = F.tanh(x)
        b = F.exp(a)
        c = F.square(b)  # a -> b -> c and a -> d: generations 0, 1, 2, 1
        d = F.sin(a)
        y = F.sum(c * d)
    forward = [f for p, f in rec.calls if p == "forward"]
    assert [type(f).__name__ for f in forward] == ["Tanh", "Exp", "Square", "Sin", "Mul", "Sum"]
    rec2 = step.CallRecorder()
    with rec2:
        y.backward()
    backward = [f for p, f in rec2.calls if p == "backward"]
    # Sin and Exp share generation 1; Sin's gradient arrived first (from Mul, before Square ran)
    assert [type(f).__name__ for f in backward] == ["Sum", "Mul", "Square", "Sin", "Exp", "Tanh"]
    assert {id(f) for f in backward} == {id(f) for f in forward}  # each function exactly once
    gens = [f.generation for f in backward]
    assert gens == sorted(gens, reverse=True)
    assert core._global_hooks == []


def test_step_known_graph_order(load_step):
    step = load_step(65)
    fwd = [type(f).__name__ for _, f in step.forward_rec.calls]
    assert fwd == ["Exp", "Square", "Sin", "Add", "Sum"]
    bwd = [type(f).__name__ for p, f in step.backward_rec.calls if p == "backward"]
    assert bwd == ["Sum", "Add", "Square", "Sin", "Exp"]


def test_per_function_hook_and_timer(load_step):
    step = load_step(65)
    assert [(p, type(f).__name__) for p, f in step.only_exp.calls] == [
        ("forward", "Exp"), ("backward", "Exp")]
    s = step.summary
    assert s["Linear"]["forward"]["calls"] == 3 and s["Linear"]["backward"]["calls"] == 3
    assert s["Sigmoid"]["forward"]["calls"] == 2
    assert set(s) == {"Linear", "Sigmoid", "MeanSquaredError"}


def test_exercise_hook_catches_float64(load_step):
    step = load_step(65)
    hook = step.DtypeCheckHook()
    with hook:
        F.sin(dz.Variable(np.ones(3, dtype=np.float32)))
        try:
            F.sin(dz.Variable(np.ones(3)))
        except TypeError as e:
            assert "Sin" in str(e)
        else:
            raise AssertionError("float64 input was not caught")
    assert core._global_hooks == []


def test_demo_output(load_step):
    out = load_step(65).output
    assert "backward Square  generation 1\nbackward Sin     generation 1" in out
    assert "    forward  Cos: in (1, 2) float32 -> out (1, 2) float32" in out
    assert "the per-function hook saw: [('forward', 'Exp'), ('backward', 'Exp')]" in out
    assert "fwd ms" in out and "Linear" in out
    assert "self-check passed" in out
