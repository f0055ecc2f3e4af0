import numpy as np
import pytest


def test_add_of_two_variables(load_step):
    step = load_step(12)
    x0, x1 = step.Variable(np.array(2.0)), step.Variable(np.array(3.0))
    y = step.add(x0, x1)
    assert isinstance(y, step.Variable)  # a single output is not wrapped in a list
    assert type(y.data) is np.ndarray and y.data.shape == () and y.data == 5.0
    assert isinstance(y.creator, step.Add)
    assert y.creator.inputs == (x0, x1) and y.creator.outputs == [y]


def test_call_with_separate_arguments(load_step, rng):
    step = load_step(12)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    y = step.Add()(step.Variable(a), step.Variable(b))
    np.testing.assert_array_equal(y.data, a + b)
    x = step.Variable(np.array([1.0, -2.0]))
    np.testing.assert_array_equal(step.Square()(x).data, [1.0, 4.0])


def test_forward_gets_separate_arrays(load_step):
    step = load_step(12)
    seen = []

    class Spy(step.Function):
        def forward(self, *xs):
            seen.append(xs)
            return xs[0]

    a, b, c = np.array(1.0), np.array(2.0), np.array(3.0)
    Spy()(step.Variable(a), step.Variable(b), step.Variable(c))
    assert len(seen[0]) == 3 and all(s is t for s, t in zip(seen[0], (a, b, c)))


def test_several_outputs_come_back_as_a_list(load_step):
    step = load_step(12)
    outputs = step.AddSub()(step.Variable(np.array(7.0)), step.Variable(np.array(2.0)))
    assert isinstance(outputs, list) and len(outputs) == 2
    s, d = outputs
    assert s.data == 9.0 and d.data == 5.0 and s.creator is d.creator


def test_composition_and_backprop_still_work(load_step, rng):
    step = load_step(12)
    x0, x1 = step.Variable(np.array(2.0)), step.Variable(np.array(3.0))
    assert step.add(step.square(x0), step.square(x1)).data == 13.0
    x = step.Variable(np.array(0.5))
    step.exp(step.square(step.exp(x))).backward()
    np.testing.assert_allclose(x.grad, 2 * np.e * np.exp(np.e), rtol=1e-14)
    assert step.gradient_check(step.square, rng.standard_normal((3, 2)))
    assert step.gradient_check(step.exp, rng.standard_normal(4))


def test_list_call_is_a_clear_error(load_step):
    step = load_step(12)
    x = step.Variable(np.array(1.0))
    with pytest.raises(TypeError, match="got list; wrap arrays with Variable"):
        step.Add()([x, x])
    with pytest.raises(TypeError, match="got ndarray"):
        step.add(x, np.array(1.0))


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(12)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(12).output
    assert "add(x0, x1) = 5.0: a single Variable, created by Add" in out
    assert "square(x0) + square(x1) = 13.0" in out
    assert "self-check passed" in out
