import numpy as np
import pytest


@pytest.mark.parametrize("seed", range(5))
def test_derivatives_of_random_polynomials_match_polyder(load_step, seed):
    step = load_step(32)
    rng = np.random.default_rng(seed)
    coeffs = list(rng.normal(size=rng.integers(2, 7)))
    xs = rng.uniform(-2, 2, size=4)
    values = step.derivatives(step.poly(coeffs), xs, 3)
    for k in range(4):
        assert np.allclose(values[k], np.polyval(np.polyder(coeffs, k), xs), rtol=1e-10, atol=1e-10)


def test_second_derivative_agrees_with_finite_differences_of_the_first(load_step):
    step = load_step(32)
    p = step.poly([1.0, -3.0, 0.5, 2.0])
    h = 1e-5
    d1 = lambda x: step.derivatives(p, x, 1)[1]  # noqa: E731
    fd = (d1(0.7 + h) - d1(0.7 - h)) / (2 * h)
    assert np.isclose(step.derivatives(p, 0.7, 2)[2], fd, rtol=1e-6)


def test_grid_matches_oracle(load_step):
    assert load_step(32).max_error < 1e-12


def test_mixed_partials(load_step):
    step = load_step(32)
    assert step.gx.data == -6.0 and step.y.grad.data == 6.0 and step.x.grad.data == -2.0


def test_demo_output(load_step):
    out = load_step(32).output
    assert "x^3 - 2x at x = 1.5: [0.375, 4.75, 9.0, 6.0]" in out
    assert "self-check passed" in out
