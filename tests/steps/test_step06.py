import numpy as np
import pytest


def test_variable_has_an_empty_grad(load_step):
    step = load_step(6)
    assert step.Variable(np.array([1.0])).grad is None


def test_function_remembers_its_input(load_step):
    step = load_step(6)
    x = step.Variable(np.array([1.0]))
    f = step.Square()
    f(x)
    assert f.input is x


def test_each_backward_multiplies_by_its_local_derivative(load_step):
    step = load_step(6)
    x = step.Variable(np.array([-1.5, 0.0, 2.0]))
    gy = np.array([1.0, 3.0, -0.5])
    sq, ex = step.Square(), step.Exp()
    sq(x)
    ex(x)
    np.testing.assert_allclose(sq.backward(gy), 2 * x.data * gy, rtol=1e-15)
    np.testing.assert_allclose(ex.backward(gy), np.exp(x.data) * gy, rtol=1e-15)


def test_hand_chained_grads_equal_numerical_ones(load_step):
    step = load_step(6)
    A, B, C = step.Exp(), step.Square(), step.Exp()
    x = step.Variable(np.array([-1.0, -0.2, 0.3, 0.7]))
    a = A(x)
    b = B(a)
    y = C(b)
    y.grad = np.ones_like(y.data)
    b.grad = C.backward(y.grad)
    a.grad = B.backward(b.grad)
    x.grad = A.backward(a.grad)

    def f(v):
        return step.Exp()(step.Square()(step.Exp()(v)))

    np.testing.assert_allclose(x.grad, step.numerical_diff(f, x, eps=1e-5), rtol=1e-7)
    np.testing.assert_allclose(b.grad, np.exp(b.data), rtol=1e-15)


def test_demo_reproduces_step05_number(load_step):
    step = load_step(6)
    assert "x.grad = [82.38711135]" in step.output
    assert "close: True" in step.output


def test_missing_backward_is_a_clear_error(load_step):
    step = load_step(6)
    with pytest.raises(NotImplementedError, match="must implement backward"):
        step.Function().backward(np.array([1.0]))


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(6)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    assert "self-check passed" in load_step(6).output
