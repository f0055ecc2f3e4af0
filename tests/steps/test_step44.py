import numpy as np

import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_network_fits_a_sine(load_step):
    step = load_step(44)
    assert step.losses[-1] < 0.1
    assert step.losses[-1] < 0.2 * step.losses[0]
    assert step.mean_abs_error < 0.15
    grid = np.linspace(0.05, 0.95, 10)[:, None]
    np.testing.assert_allclose(step.predict(grid).data, np.sin(2 * np.pi * grid) + 0.5, atol=0.3)


def test_predict_is_differentiable_in_its_input(load_step):
    step = load_step(44)
    assert gradient_check(step.predict, np.linspace(0, 1, 5)[:, None])


def test_sigmoid_is_stable_and_correct():
    a = np.array([-1000.0, -5.0, 0.0, 5.0, 1000.0])
    np.testing.assert_allclose(F.sigmoid(a).data, [0.0, 1 / (1 + np.exp(5)), 0.5,
                                                   1 / (1 + np.exp(-5)), 1.0])


def test_demo_output(load_step):
    out = load_step(44).output
    assert "sigmoid: True" in out and "linear wrt x, W, b: True True True" in out
    assert "self-check passed" in out
