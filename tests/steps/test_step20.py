import numpy as np
import pytest


def test_name_defaults_to_none(load_step):
    step = load_step(20)
    assert step.Variable(np.array(1.0)).name is None
    assert step.Variable(np.array(1.0), name="w").name == "w"


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 4)])
def test_array_attributes_follow_the_data(load_step, shape):
    step = load_step(20)
    data = np.zeros(shape, dtype=np.float32)
    x = step.Variable(data)
    assert x.shape == shape
    assert x.ndim == len(shape)
    assert x.size == data.size
    assert x.dtype == np.float32
    if shape:
        assert len(x) == shape[0]
    else:
        with pytest.raises(TypeError):
            len(x)  # like a 0-d ndarray


def test_attributes_are_read_only_views_of_data(load_step):
    step = load_step(20)
    x = step.Variable(np.ones((2, 2)))
    x.data = np.ones((5,))
    assert x.shape == (5,) and len(x) == 5


def test_repr(load_step):
    step = load_step(20)
    assert repr(step.Variable(np.array(3.5))) == "variable(3.5)"
    assert repr(step.Variable(None)) == "variable(None)"
    assert repr(step.Variable(np.array([1.0, 2.0]))) == "variable([1. 2.])"
    assert repr(step.Variable(np.array([[1, 2], [3, 4]]))) == (
        "variable([[1 2]\n          [3 4]])"
    )


def test_backprop_is_unchanged(load_step):
    step = load_step(20)
    x = step.Variable(np.array(2.0))
    a = step.square(x)
    step.add(step.square(a), step.square(a)).backward()
    assert x.grad == 64.0 and a.grad is None


def test_demo_output(load_step):
    out = load_step(20).output
    assert "shape: (2, 3)  ndim: 2  size: 6  dtype: float64" in out
    assert "variable([[1. 2. 3.]\n          [4. 5. 6.]])" in out
    assert "self-check passed" in out
