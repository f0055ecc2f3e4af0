import numpy as np
import pytest


def test_central_difference_matches_analytic_derivative_of_exp(load_step):
    step = load_step(4)
    x = np.linspace(-2.0, 2.0, 9)
    numerical = step.numerical_diff(step.Exp(), step.Variable(x))
    np.testing.assert_allclose(numerical, np.exp(x), rtol=1e-8, atol=0)


def test_central_difference_of_a_composition(load_step):
    step = load_step(4)
    x = np.array([-1.0, 0.0, 0.5])
    exact = 2 * np.exp(2 * x) * np.exp(np.exp(2 * x))
    numerical = step.numerical_diff(step.f, step.Variable(x), eps=1e-5)
    np.testing.assert_allclose(numerical, exact, rtol=1e-8, atol=0)


def test_central_difference_is_exact_for_a_quadratic(load_step):
    step = load_step(4)
    x = np.array([-3.0, 0.25, 2.0])
    np.testing.assert_allclose(step.numerical_diff(step.Square(), step.Variable(x)), 2 * x,
                               rtol=1e-10)


def test_error_shrinks_like_eps_squared_for_central_eps_for_forward(load_step):
    step = load_step(4)
    # eps = 1e-2 -> 1e-3 -> 1e-4 (indexes 1..3): truncation error dominates
    for k in (1, 2):
        central_ratio = step.central_errors[k] / step.central_errors[k + 1]
        forward_ratio = step.forward_errors[k] / step.forward_errors[k + 1]
        assert 80 < central_ratio < 120
        assert 8 < forward_ratio < 12
    assert step.central_errors[3] < 1e-6 < step.forward_errors[3]


def test_cost_is_two_evaluations_per_parameter(load_step):
    step = load_step(4)
    w = step.Variable(np.array([0.1, -0.3, 0.2, 0.0]))
    grad, calls = step.numerical_gradient(step.loss, w)
    assert calls == 2 * w.data.size
    np.testing.assert_allclose(grad, 2 * np.exp(2 * w.data) * np.exp(np.exp(2 * w.data)),
                               rtol=1e-6)


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(4)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable([0.5])


def test_demo_output(load_step):
    out = load_step(4).output
    assert "d(x^2)/dx at 2: [4.]" in out
    assert "2000 evaluations of the loss" in out
    assert "self-check passed" in out
