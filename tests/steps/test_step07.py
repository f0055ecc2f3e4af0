import numpy as np
import pytest


def _chain(step, data):
    A, B, C = step.Exp(), step.Square(), step.Exp()
    x = step.Variable(data)
    a = A(x)
    b = B(a)
    y = C(b)
    return (A, B, C), (x, a, b, y)


def test_creator_links(load_step):
    step = load_step(7)
    (A, B, C), (x, a, b, y) = _chain(step, np.array([0.5]))
    assert y.creator is C and C.input is b and C.output is y
    assert b.creator is B and B.input is a and B.output is b
    assert a.creator is A and A.input is x and A.output is a
    assert x.creator is None


def test_backward_fills_x_grad(load_step):
    step = load_step(7)
    data = np.array([-1.0, 0.0, 0.5, 0.8])
    _, (x, a, b, y) = _chain(step, data)
    y.grad = np.ones_like(y.data)
    y.backward()
    expected = 2 * np.exp(2 * data) * np.exp(np.exp(2 * data))
    np.testing.assert_allclose(x.grad, expected, rtol=1e-14)
    np.testing.assert_allclose(b.grad, np.exp(b.data), rtol=1e-15)

    def f(v):
        return step.Exp()(step.Square()(step.Exp()(v)))

    np.testing.assert_allclose(x.grad, step.numerical_diff(f, x, eps=1e-5), rtol=1e-7)


def test_backward_uses_the_seed(load_step):
    step = load_step(7)
    _, (x, _, _, y) = _chain(step, np.array([0.5]))
    y.grad = np.array([3.0])
    y.backward()
    np.testing.assert_allclose(x.grad, [3 * 2 * np.e * np.exp(np.e)], rtol=1e-14)


def test_missing_seed_is_a_clear_error(load_step):
    step = load_step(7)
    _, (_, _, _, y) = _chain(step, np.array([0.5]))
    with pytest.raises(ValueError, match="set y.grad before calling y.backward"):
        y.backward()


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(7)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(7).output
    assert "y <- Exp <- b <- Square <- a <- Exp <- x" in out
    assert "x.grad = [82.38711135]" in out
    assert "self-check passed" in out
