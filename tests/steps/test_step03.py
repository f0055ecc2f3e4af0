import numpy as np
import pytest


def test_exp_square_exp_value(load_step):
    step = load_step(3)
    data = np.array([-1.0, 0.0, 0.5, 1.0])
    y = step.Exp()(step.Square()(step.Exp()(step.Variable(data))))
    assert isinstance(y, step.Variable)
    np.testing.assert_allclose(y.data, np.exp(np.exp(2 * data)), rtol=1e-15)
    # at x = 0.5 the chain is e ** e
    np.testing.assert_allclose(y.data[2], np.e**np.e, rtol=1e-15)


def test_exp_forward(load_step):
    step = load_step(3)
    y = step.Exp()(step.Variable(np.array([0.0, 1.0])))
    np.testing.assert_allclose(y.data, [1.0, np.e], rtol=1e-15)


def test_intermediate_results_are_variables(load_step):
    step = load_step(3)
    for name in ("a", "b"):
        assert isinstance(getattr(step, name), step.Variable)
    np.testing.assert_allclose(step.b.data, [np.e], rtol=1e-15)


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(3)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(3).output
    assert "y = exp(b)    = [15.15426224]" in out
    assert "equal: True" in out
    assert "self-check passed" in out
