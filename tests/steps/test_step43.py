import numpy as np


def test_loss_falls(load_step):
    step = load_step(43)
    losses = step.losses
    assert len(losses) == 100
    assert losses[-1] < 0.1 * losses[0]
    assert all(b <= a + 1e-12 for a, b in zip(losses[5:], losses[6:]))  # monotone after start


def test_fitted_line_is_close_to_the_truth(load_step):
    step = load_step(43)
    # after the exercise's 1000 iterations W, b are the last trained values
    assert abs(step.W.data[0, 0] - 2.0) < 0.3
    assert abs(step.b.data[0] - 5.5) < 0.15
    np.testing.assert_allclose([step.W.data[0, 0], step.b.data[0]],
                               [step.slope, step.intercept], atol=0.05)


def test_demo_output(load_step):
    out = load_step(43).output
    assert "iter   0  loss" in out and "least squares:" in out
    assert "self-check passed" in out
