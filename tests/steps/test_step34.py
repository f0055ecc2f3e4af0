import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def test_nth_derivative_cycles_sin_cos_minus_sin_minus_cos(load_step):
    step = load_step(34)
    xs = step.xs
    cycle = [np.sin(xs), np.cos(xs), -np.sin(xs), -np.cos(xs)]
    assert len(step.curves) == 5
    for n, curve in enumerate(step.curves):
        assert np.allclose(curve, cycle[n % 4], atol=1e-12)


def test_eighth_derivative_is_sin_again():
    x = dz.Variable(np.array([0.2, 1.0, -2.5]))
    g = F.sin(x)
    for _ in range(8):
        x.cleargrad()
        g.backward(create_graph=True)
        g = x.grad
    assert np.allclose(g.data, np.sin(x.data), atol=1e-12)


def test_graph_of_sin_derivatives_stays_small(load_step):
    sizes = load_step(34).sizes
    assert sizes[0] == 1 and max(sizes) <= 4


def test_seventh_derivative(load_step):
    assert np.isclose(load_step(34).d7, -np.cos(0.3))


def test_demo_output(load_step):
    out = load_step(34).output
    assert "order 3: max |error| = 0.0e+00" in out
    assert "self-check passed" in out
