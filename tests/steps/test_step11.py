import numpy as np
import pytest


def test_add_takes_a_list_and_returns_a_list(load_step):
    step = load_step(11)
    x0, x1 = step.Variable(np.array(2.0)), step.Variable(np.array(3.0))
    f = step.Add()
    ys = f([x0, x1])
    assert isinstance(ys, list) and len(ys) == 1
    y = ys[0]
    assert isinstance(y, step.Variable) and y.data == 5.0
    assert type(y.data) is np.ndarray and y.data.shape == ()
    assert y.creator is f and f.inputs[0] is x0 and f.inputs[1] is x1 and f.outputs == [y]


def test_add_of_arrays(load_step, rng):
    step = load_step(11)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    (y,) = step.Add()([step.Variable(a), step.Variable(b)])
    np.testing.assert_array_equal(y.data, a + b)


def test_forward_gets_a_list_of_arrays_and_may_return_several(load_step):
    step = load_step(11)
    s, d = step.AddSub()([step.Variable(np.array(7.0)), step.Variable(np.array(2.0))])
    assert s.data == 9.0 and d.data == 5.0
    assert s.creator is d.creator


def test_single_input_functions_still_backprop(load_step, rng):
    step = load_step(11)
    x = step.Variable(np.array(0.5))
    step.exp(step.square(step.exp(x))).backward()
    np.testing.assert_allclose(x.grad, 2 * np.e * np.exp(np.e), rtol=1e-14)
    assert step.gradient_check(step.square, rng.standard_normal((3, 2)))
    assert step.gradient_check(step.exp, rng.standard_normal(4))


def test_clear_errors(load_step):
    step = load_step(11)
    v = step.Variable(np.array(1.0))
    with pytest.raises(TypeError, match="takes a list of Variables, got Variable"):
        step.Add()(v)
    with pytest.raises(TypeError, match="takes Variables, got ndarray"):
        step.Add()([v, np.array(1.0)])
    with pytest.raises(NotImplementedError, match="Add must implement backward"):
        step.Add()([v, v])[0].backward()


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(11)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(11).output
    assert "ys is a list of 1; y.data = 5.0" in out
    assert "sum: 9.0  difference: 5.0" in out
    assert "self-check passed" in out
