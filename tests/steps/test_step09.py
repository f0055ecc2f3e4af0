import numpy as np
import pytest


def test_wrappers_build_the_same_graph_as_the_classes(load_step):
    step = load_step(9)
    x = step.Variable(np.array([0.5, -1.0]))
    y = step.square(x)
    assert isinstance(y, step.Variable)
    assert isinstance(y.creator, step.Square) and y.creator.input is x
    z = step.exp(x)
    assert isinstance(z.creator, step.Exp)
    np.testing.assert_allclose(z.data, np.exp(x.data), rtol=1e-15)


def test_scalar_results_become_0d_arrays(load_step):
    step = load_step(9)
    x = step.Variable(np.array(0.5))
    y = step.exp(step.square(step.exp(x)))
    assert type(y.data) is np.ndarray and y.data.shape == ()
    np.testing.assert_allclose(y.data, np.e**np.e, rtol=1e-14)


def test_as_array(load_step):
    step = load_step(9)
    out = step.as_array(np.float64(2.5))
    assert type(out) is np.ndarray and out.shape == () and out == 2.5
    a = np.array([1.0, 2.0])
    assert step.as_array(a) is a


def test_grad_defaults_to_ones_like(load_step):
    step = load_step(9)
    x = step.Variable(np.array([[1.0, -2.0], [0.5, 3.0]]))
    y = step.square(x)
    y.backward()
    assert y.grad.shape == y.data.shape
    np.testing.assert_array_equal(y.grad, np.ones((2, 2)))
    np.testing.assert_array_equal(x.grad, 2 * x.data)


def test_0d_backward_without_seed_gives_0d_grad(load_step):
    step = load_step(9)
    x = step.Variable(np.array(0.5))
    y = step.exp(step.square(step.exp(x)))
    y.backward()
    assert type(x.grad) is np.ndarray and x.grad.shape == ()
    np.testing.assert_allclose(x.grad, 2 * np.e * np.exp(np.e), rtol=1e-14)


def test_an_explicit_seed_is_still_used(load_step):
    step = load_step(9)
    x = step.Variable(np.array([1.0, 2.0]))
    y = step.square(x)
    y.grad = np.array([10.0, -1.0])
    y.backward()
    np.testing.assert_array_equal(x.grad, [20.0, -4.0])


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(9)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(np.float64(0.5))


def test_demo_output(load_step):
    out = load_step(9).output
    assert "y.data: array(15.15426224)  type: ndarray  shape: ()" in out
    assert "x.grad: array(82.38711135)" in out
    assert "self-check passed" in out
