import numpy as np


def analytic_grad(x0, x1):
    return np.array([-400 * x0 * (x1 - x0**2) + 2 * (x0 - 1), 200 * (x1 - x0**2)])


def test_gradient_at_start(load_step):
    step = load_step(28)
    assert step.x0.grad.data == -2.0 and step.x1.grad.data == 400.0


def test_path_follows_the_gradient_descent_rule(load_step):
    step = load_step(28)
    path = step.path
    for i in [0, 1, 500, 9000]:
        expected = path[i] - 0.001 * analytic_grad(*path[i])
        assert np.allclose(path[i + 1], expected, rtol=1e-12, atol=1e-14)


def test_converges_towards_one_one(load_step):
    step = load_step(28)
    path = step.path
    dist = np.linalg.norm(path - np.array([1.0, 1.0]), axis=1)
    assert dist[-1] < 0.015
    assert dist[1000] > dist[5000] > dist[-1]
    assert step.rosenbrock(*path[-1]) < 1e-4


def test_large_learning_rate_diverges(load_step):
    final = load_step(28).final
    assert not np.all(np.isfinite(final)) or np.any(np.abs(final) > 10)


def test_demo_output(load_step):
    out = load_step(28).output
    assert "iteration 10000: x = (0.99450, 0.98901)" in out
    assert "self-check passed" in out
