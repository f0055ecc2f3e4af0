import numpy as np


def _numerical(f, x, eps=1e-6):
    """Central difference of a scalar function of a float."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_sum_of_squares_gradients(load_step):
    step = load_step(13)
    x = step.Variable(np.array(2.0))
    y = step.Variable(np.array(3.0))
    z = step.add(step.square(x), step.square(y))
    z.backward()
    assert z.data == 13.0
    assert x.grad == 4.0 and y.grad == 6.0


def test_several_inputs_match_numerical_gradients(load_step, rng):
    step = load_step(13)
    xv, yv = rng.normal(size=2)
    x, y = step.Variable(np.array(xv)), step.Variable(np.array(yv))
    z = step.add(step.square(x), step.exp(y))
    z.backward()
    assert np.isclose(x.grad, _numerical(lambda t: t**2 + np.exp(yv), xv))
    assert np.isclose(y.grad, _numerical(lambda t: xv**2 + np.exp(t), yv))


def test_array_inputs_get_elementwise_gradients(load_step, rng):
    step = load_step(13)
    a = step.Variable(rng.normal(size=(2, 3)))
    b = step.Variable(rng.normal(size=(2, 3)))
    c = step.add(step.square(a), step.square(b))
    c.backward()
    np.testing.assert_allclose(a.grad, 2 * a.data)
    np.testing.assert_allclose(b.grad, 2 * b.data)


def test_add_backward_returns_one_gradient_per_input(load_step):
    step = load_step(13)
    f = step.Add()
    gy = np.array(5.0)
    gxs = f.backward(gy)
    assert isinstance(gxs, tuple) and len(gxs) == 2
    assert gxs[0] == 5.0 and gxs[1] == 5.0


def test_demo_output(load_step):
    out = load_step(13).output
    assert "x.grad = 4.0" in out and "y.grad = 6.0" in out
    assert "agree: True" in out
    assert "self-check passed" in out
