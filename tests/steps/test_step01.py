import numpy as np
import pytest


def test_variable_holds_data_without_copying(load_step):
    step = load_step(1)
    data = np.array([1.0, 2.0])
    x = step.Variable(data)
    assert x.data is data


def test_list_is_rejected_with_clear_type_error(load_step):
    step = load_step(1)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable([1, 2])
    with pytest.raises(TypeError, match="np.array"):
        step.Variable(1.0)


def test_demo_output(load_step):
    out = load_step(1).output
    assert "same object: True" in out
    assert "TypeError: Variable data must be a numpy.ndarray" in out
    assert "self-check passed" in out
