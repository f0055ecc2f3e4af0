import numpy as np
import pytest

import dezero_like as dz


@pytest.mark.parametrize("value", [-2.0, 0.0, np.pi / 4, 1.5, 3.0])
def test_taylor_sin_is_within_the_threshold_of_np_sin(load_step, value):
    step = load_step(27)
    for threshold in [1e-4, 1e-8]:
        y = step.my_sin(dz.Variable(np.array(value)), threshold)
        # the series alternates with shrinking terms: the error is below the first dropped term
        assert abs(y.data - np.sin(value)) < threshold


def test_gradient_through_the_series_is_cos(load_step):
    step = load_step(27)
    x = dz.Variable(np.array(0.7))
    y = step.my_sin(x, 1e-10)
    y.backward()
    assert np.isclose(x.grad.data, np.cos(0.7), atol=1e-9)


def test_graph_grows_as_the_threshold_tightens(load_step):
    step = load_step(27)
    sizes = [n for _, n, _ in step.rows]
    errors = [e for _, _, e in step.rows]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert errors[0] > errors[1] > errors[2]
    # each extra term is a Pow, a Mul and an Add: 3 functions
    assert all((b - a) % 3 == 0 for a, b in zip(sizes, sizes[1:]))


def test_demo_output(load_step):
    out = load_step(27).output
    assert "my_sin(pi/4) = 0.7071064696" in out
    assert "self-check passed" in out
