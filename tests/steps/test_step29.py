import numpy as np


def test_hand_written_second_derivative_matches_finite_differences(load_step):
    step = load_step(29)
    for x in [-1.5, 0.3, 2.0]:
        h = 1e-5
        fd = (step.f(x + h) - 2 * step.f(x) + step.f(x - h)) / h**2
        assert np.isclose(step.gx2(x), fd, rtol=1e-4)


def test_newton_converges_in_a_handful_of_iterations(load_step):
    it = np.array(load_step(29).iterates)
    assert it[0] == 2.0
    assert np.isclose(it[1], 2 - 24 / 44)  # f'(2) = 24, f''(2) = 44
    assert abs(it[7] - 1) < 1e-12  # 7 Newton steps from x = 2
    assert abs(it[4] - 1) > 1e-4  # ...and not long before: it is not a trivial problem
    err = np.abs(it[1:7] - 1)
    assert np.all(err[1:] < err[:-1] ** 2 * 2)  # quadratic convergence


def test_gradient_descent_is_slower(load_step):
    step = load_step(29)
    assert abs(step.gd_iterates[-1] - 1) > 0.1


def test_newton_can_find_a_maximum(load_step):
    assert abs(load_step(29).x_end) < 1e-10


def test_demo_output(load_step):
    out = load_step(29).output
    assert "iteration 7: x = 1.000000000000" in out
    assert "self-check passed" in out
