import numpy as np
import pytest

EXPRESSIONS = {
    "2.0 - x": (lambda x: 2.0 - x, lambda v: 2.0 - v),
    "x - 2": (lambda x: x - 2, lambda v: v - 2),
    "-x": (lambda x: -x, lambda v: -v),
    "x / 2": (lambda x: x / 2, lambda v: v / 2),
    "2.0 / x": (lambda x: 2.0 / x, lambda v: 2.0 / v),
    "x ** 3": (lambda x: x**3, lambda v: v**3),
    "x ** 0.5": (lambda x: x**0.5, lambda v: v**0.5),
    "np.array(2.0) * x": (lambda x: np.array(2.0) * x, lambda v: np.array(2.0) * v),
    "np.array(2.0) - x": (lambda x: np.array(2.0) - x, lambda v: np.array(2.0) - v),
    "np.array(2.0) / x": (lambda x: np.array(2.0) / x, lambda v: np.array(2.0) / v),
    "x / x ** 2 + 3 * x - 1": (lambda x: x / x**2 + 3 * x - 1, lambda v: v / v**2 + 3 * v - 1),
}


def _numerical(f, v, eps=1e-6):
    return (f(v + eps) - f(v - eps)) / (2 * eps)


@pytest.mark.parametrize("name", list(EXPRESSIONS))
@pytest.mark.parametrize("v", [0.7, 3.0])
def test_operator_returns_variable_with_value_and_gradient(load_step, name, v):
    step = load_step(22)
    make, reference = EXPRESSIONS[name]
    x = step.Variable(np.array(v))
    y = make(x)
    assert isinstance(y, step.Variable), f"{name} returned {type(y).__name__}"
    assert np.isclose(y.data, reference(v))
    y.backward()
    assert np.isclose(x.grad, _numerical(reference, v), rtol=1e-6), name


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_operators_on_arrays_match_numerical(load_step, rng, name):
    step = load_step(22)
    make, reference = EXPRESSIONS[name]
    v = rng.uniform(0.5, 2.0, size=(2, 3))
    x = step.Variable(v.copy())
    y = make(x)
    np.testing.assert_allclose(y.data, reference(v))
    y.backward()
    np.testing.assert_allclose(x.grad, _numerical(reference, v), rtol=1e-6)


def test_ndarray_on_the_left_hands_over_to_variable(load_step):
    step = load_step(22)
    x = step.Variable(np.array([1.0, 2.0]))
    y = np.array([2.0, 3.0]) * x
    assert isinstance(y, step.Variable)
    assert isinstance(y.data, np.ndarray) and y.data.dtype == np.float64
    np.testing.assert_array_equal(y.data, [2.0, 6.0])


@pytest.mark.parametrize("make", [lambda x: x * 2.0, lambda x: 2 - x, lambda x: x / 3.0,
                                  lambda x: 1.5 + x, lambda x: x**2, lambda x: 2.0 / x])
def test_python_numbers_take_the_data_dtype(load_step, make):
    step = load_step(22)
    x = step.Variable(np.array([1.0, 2.0], dtype=np.float32))
    y = make(x)
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32


def test_integer_data_does_not_truncate_floats(load_step):
    step = load_step(22)
    x = step.Variable(np.array([1, 2]))
    np.testing.assert_array_equal((x * 2.5).data, [2.5, 5.0])


def test_as_array_and_as_variable(load_step):
    step = load_step(22)
    a = step.as_array(2.0, like=np.ones(1, dtype=np.float32))
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == ()
    arr = np.ones(3)
    assert step.as_array(arr) is arr
    v = step.Variable(arr)
    assert step.as_variable(v) is v
    assert isinstance(step.as_variable(arr), step.Variable)


def test_demo_output(load_step):
    out = load_step(22).output
    assert "with opt-out:    '__rmul__(array([1., 2.]))'" in out
    assert "2.0 - x            = -1.000   dy/dx = -1.000   result is a Variable" in out
    assert "np.array(2.0) * x  =  6.000   dy/dx =  2.000   result is a Variable" in out
    assert "x / 3.0, grad:  float32 float32" in out
    assert "self-check passed" in out


def test_numerical_diff_accepts_a_0d_array(load_step):
    step = load_step(22)
    x = step.Variable(np.array(3.0))
    got = step.numerical_diff(lambda v: v**3 - 2 * v, x)
    assert abs(float(got) - (3 * 9.0 - 2.0)) < 1e-6
