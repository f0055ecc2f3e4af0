import numpy as np
import pytest

import dezero_like as dz
from dezero_like import utils


def _grad(f, x0, y0, dtype=np.float64):
    x, y = dz.Variable(np.array(x0, dtype=dtype)), dz.Variable(np.array(y0, dtype=dtype))
    z = f(x, y)
    z.backward()
    return z, x.grad.data, y.grad.data


@pytest.mark.parametrize("name, value, expected", [
    ("sphere", 2.0, (2.0, 2.0)),
    ("matyas", 0.04, (0.04, 0.04)),
    ("goldstein", 1876.0, (-5376.0, 8064.0)),
])
def test_known_gradients_at_one_one(load_step, name, value, expected):
    f = getattr(load_step(24), name)
    z, gx, gy = _grad(f, 1.0, 1.0)
    assert np.isclose(z.data, value)
    np.testing.assert_allclose([gx, gy], expected, rtol=1e-12)


def test_goldstein_price_global_minimum(load_step):
    step = load_step(24)
    z, gx, gy = _grad(step.goldstein, 0.0, -1.0)
    assert z.data == 3.0
    assert abs(gx) < 1e-9 and abs(gy) < 1e-9


@pytest.mark.parametrize("name", ["sphere", "matyas", "goldstein"])
def test_gradients_match_numerical_at_random_points(load_step, rng, name):
    f = getattr(load_step(24), name)
    xv, yv = rng.uniform(-1.5, 1.5, size=(2, 4))
    yvar = dz.Variable(yv.copy())
    assert utils.gradient_check(lambda x: f(x, yvar), xv)
    xvar = dz.Variable(xv.copy())
    assert utils.gradient_check(lambda y: f(xvar, y), yv)


@pytest.mark.parametrize("name", ["sphere", "matyas", "goldstein"])
def test_float32_inputs_stay_float32(load_step, name):
    f = getattr(load_step(24), name)
    z, gx, gy = _grad(f, 1.0, 1.0, dtype=np.float32)
    assert z.dtype == gx.dtype == gy.dtype == np.float32


def test_count_functions(load_step):
    step = load_step(24)
    one = dz.Variable(np.array(1.0))
    assert step.count_functions(step.sphere(one, one)) == 3
    assert step.count_functions(step.matyas(one, one)) == 7
    assert step.count_functions(one) == 0


def test_demo_output(load_step):
    out = load_step(24).output
    assert "sphere    f(1, 1) =     2.00   grad = (2, 2)" in out
    assert "matyas    f(1, 1) =     0.04   grad = (0.04, 0.04)" in out
    assert "goldstein f(1, 1) =  1876.00   grad = (-5376, 8064)" in out
    assert "self-check passed" in out
