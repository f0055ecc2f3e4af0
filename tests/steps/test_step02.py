import numpy as np
import pytest


def test_forward_gets_the_raw_array(load_step):
    step = load_step(2)
    seen = []

    class Spy(step.Function):
        def forward(self, x):
            seen.append(x)
            return x + 1.0

    data = np.array([1.0, 2.0])
    Spy()(step.Variable(data))
    assert len(seen) == 1
    assert seen[0] is data  # the array itself, not the Variable


def test_call_wraps_the_result_in_a_new_variable(load_step):
    step = load_step(2)
    x = step.Variable(np.array([[1.0, -2.0], [3.0, 0.5]]))
    y = step.Square()(x)
    assert isinstance(y, step.Variable)
    assert y is not x
    np.testing.assert_array_equal(y.data, [[1.0, 4.0], [9.0, 0.25]])
    np.testing.assert_array_equal(x.data, [[1.0, -2.0], [3.0, 0.5]])


def test_non_variable_input_and_missing_forward_are_clear_errors(load_step):
    step = load_step(2)
    with pytest.raises(TypeError, match="Square takes a Variable, got ndarray"):
        step.Square()(np.array([1.0]))
    with pytest.raises(NotImplementedError, match="must implement forward"):
        step.Function()(step.Variable(np.array([1.0])))


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(2)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable([1.0])


def test_demo_output(load_step):
    out = load_step(2).output
    assert "Variable [100.]" in out
    assert "ndarray ** 2 gives float64" in out
    assert "self-check passed" in out
