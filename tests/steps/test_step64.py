"""Step 64: the same variable in several input slots is accumulated inside the function."""

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import FunctionHook
from dezero_like.utils import gradient_check


class GradRecorder(FunctionHook):
    """Keeps every gradient array that flows through backward."""

    def __init__(self):
        self.arrays = []
        self.grad_inputs = {}

    def backward_preprocess(self, function, grad_outputs):
        self.arrays += [g.data for g in grad_outputs if g is not None]

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        self.grad_inputs[type(function).__name__] = grad_inputs
        self.arrays += [g.data for g in grad_inputs if g is not None]


@pytest.mark.parametrize("op", ["mul", "add", "concat"])
def test_one_accumulated_gradient_in_a_fresh_array(load_step, op):
    step = load_step(64)
    a = np.array([1.0, -2.0, 3.0])
    x = dz.Variable(a.copy())
    f = {"mul": lambda v: v * v, "add": lambda v: v + v, "concat": lambda v: step.concat(v, v)}[op]
    y = f(x)
    rec = GradRecorder()
    with rec:
        y.backward(retain_grad=True)
    expected = {"mul": 2 * a, "add": 2 * np.ones(3), "concat": 2 * np.ones(3)}[op]
    np.testing.assert_allclose(x.grad.data, expected)
    # the function handed back one gradient for x and None for the duplicate slot
    (name,) = rec.grad_inputs
    gxs = rec.grad_inputs[name]
    assert gxs[0] is not None and gxs[1] is None
    # x.grad shares memory with no gradient that flowed through backward but its own
    for arr in rec.arrays:
        if arr is not x.grad.data:
            assert not np.shares_memory(x.grad.data, arr)
    np.testing.assert_array_equal(y.grad.data, np.ones_like(y.data))


def test_backward_accumulate_is_used_only_for_duplicates(load_step):
    step = load_step(64)
    calls = []

    class CountingConcat(step.Concat):
        def backward_accumulate(self, *gys):
            calls.append(1)
            return super().backward_accumulate(*gys)

    x = dz.Variable(np.ones(2))
    w = dz.Variable(np.ones(3))
    F.sum(CountingConcat()(x, w)).backward()
    assert calls == []
    F.sum(CountingConcat()(x, w, x)).backward()
    assert calls == [1]
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])  # 1 + 2 (second call: two slots)
    np.testing.assert_array_equal(w.grad.data, [2.0, 2.0, 2.0])


def test_intermediate_variable_twice_accumulates_once(load_step):
    x = dz.Variable(np.array([0.3, -0.4]))
    h = F.exp(x)
    y = h * h
    rec = GradRecorder()
    with rec:
        y.backward()
    np.testing.assert_allclose(x.grad.data, 2 * np.exp(2 * x.data))
    assert rec.grad_inputs["Mul"][1] is None


@pytest.mark.parametrize("shape, axis", [((3,), 0), ((2, 3), 0), ((2, 3), 1), ((1, 4, 2), 2)])
def test_concat_gradient_check(load_step, rng, shape, axis):
    step = load_step(64)
    other = dz.Variable(rng.standard_normal(shape))
    a = rng.standard_normal(shape)
    assert gradient_check(lambda x: step.concat(x, other, axis=axis) ** 2, a)
    assert gradient_check(lambda x: step.concat(x, x, other, x, axis=axis) ** 2, a)
    assert gradient_check(lambda x: F.sin(step.concat(other, x, axis=axis)) * 3.0, a)


def test_concat_value_and_dtype(load_step):
    step = load_step(64)
    a = dz.Variable(np.ones((2, 1), dtype=np.float32))
    b = dz.Variable(np.zeros((2, 2), dtype=np.float32))
    y = step.concat(a, b, axis=1)
    np.testing.assert_array_equal(y.data, [[1, 0, 0], [1, 0, 0]])
    F.sum(y * 2.0).backward()
    assert a.grad.dtype == np.float32 and a.grad.shape == (2, 1)


def test_fused_mul_agrees_with_the_default_and_double_backprop(load_step):
    step = load_step(64)
    a = np.array([0.5, -1.5, 2.0])
    x1, x2 = dz.Variable(a), dz.Variable(a)
    (x1 * x1).backward(create_graph=True)
    step.FusedMul()(x2, x2).backward(create_graph=True)
    np.testing.assert_array_equal(x1.grad.data, x2.grad.data)
    g = x2.grad
    x2.cleargrad()
    F.sum(g).backward()
    np.testing.assert_array_equal(x2.grad.data, [2.0, 2.0, 2.0])
    # with two different variables FusedMul is an ordinary Mul
    u, v = dz.Variable(np.array(3.0)), dz.Variable(np.array(4.0))
    step.FusedMul()(u, v).backward()
    assert (u.grad.data, v.grad.data) == (4.0, 3.0)


def test_demo_output(load_step):
    out = load_step(64).output
    assert "d(x*x)/dx = [2. 4. 6.]" in out
    assert "d(x+x)/dx = [2. 2. 2.]" in out
    assert "x.grad shares memory with y.grad: False" in out
    assert "y.grad is still ones: [1. 1. 1.]" in out
    assert "x.grad = [4. 6.]" in out
    assert "fused d(x*x)/dx = [2. 4. 6.]" in out
    assert "self-check passed" in out


def test_h_times_h_graph(load_step):
    """Two arrows from h into Mul, and one gradient on h: 2h."""
    import xml.etree.ElementTree as ET

    step = load_step(64)
    assert ET.fromstring(step.image.path.read_text()).tag.endswith("svg")
    dot = step.image.dot_path.read_text()
    h_key = next(line.split()[0] for line in dot.splitlines() if 'label="h\\n' in line)
    mul_key = next(line.split()[0] for line in dot.splitlines() if 'label="Mul"' in line)
    assert dot.count(f"{h_key} -> {mul_key};") == 2
    h_node = next(line for line in dot.splitlines() if line.startswith(f"  {h_key} ["))
    assert "grad [3.297]" in h_node  # one gradient, the sum of both slots' (2h)
    assert 'label="x\\ndata [0.5]\\ngrad [5.437]"' in dot  # 2 exp(2x) at x = 0.5
