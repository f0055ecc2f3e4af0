import numpy as np
import pytest


def _numerical(f, v, eps=1e-6):
    return (f(v + eps) - f(v - eps)) / (2 * eps)


def test_operators_build_the_same_graph_as_functions(load_step):
    step = load_step(21)
    a, b, c = (step.Variable(np.array(v)) for v in (3.0, 2.0, 1.0))
    y = a * b + c
    assert isinstance(y, step.Variable) and y.data == 7.0
    assert isinstance(y.creator, step.Add)
    assert isinstance(y.creator.inputs[0].creator, step.Mul)
    y.backward()
    assert (a.grad, b.grad, c.grad) == (2.0, 3.0, 1.0)


def test_mul_backward_uses_the_other_input(load_step, rng):
    step = load_step(21)
    v0, v1 = rng.normal(size=(2, 5))
    x0, x1 = step.Variable(v0.copy()), step.Variable(v1.copy())
    (x0 * x1).backward()
    np.testing.assert_array_equal(x0.grad, v1)
    np.testing.assert_array_equal(x1.grad, v0)


@pytest.mark.parametrize("v", [-1.3, 0.0, 0.5, 2.0])
def test_polynomial_matches_numerical(load_step, v):
    step = load_step(21)

    def f(t):
        x = step.Variable(np.array(t))
        return x * x * x + x * step.exp(x) + x

    x = step.Variable(np.array(v))
    y = x * x * x + x * step.exp(x) + x
    y.backward()
    assert np.isclose(x.grad, _numerical(lambda t: f(t).data, v), rtol=1e-7)
    assert np.isclose(x.grad, 3 * v**2 + (1 + v) * np.exp(v) + 1)


def test_demo_output(load_step):
    out = load_step(21).output
    assert "a.grad = 2.0 (= b)   b.grad = 3.0 (= a)   c.grad = 1.0" in out
    assert "x*x + x at 3: y = 12.0  dy/dx = 7.0" in out
    assert "self-check passed" in out
