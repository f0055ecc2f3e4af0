import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_reshape_backward_returns_grads_to_their_elements(load_step):
    step = load_step(39)
    np.testing.assert_array_equal(step.x.grad.data.shape, (2, 3, 4))
    assert "x.grad = variable([[10. 20. 30.]\n          [40. 50. 60.]])" in step.output


def test_transpose_inverse_permutation(load_step):
    step = load_step(39)
    assert step.inverse == (1, 2, 0)
    assert "x.grad equals the weights moved back: True" in step.output


def test_swap_last_two_is_differentiable(load_step):
    step = load_step(39)
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    w = np.random.default_rng(1).normal(size=(2, 4, 3))
    assert gradient_check(lambda v: step.swap_last_two(v) * w, x)


def test_variable_methods():
    x = dz.Variable(np.arange(6.0).reshape(2, 3))
    F.sum(x.T * np.arange(6.0).reshape(3, 2)).backward()
    np.testing.assert_array_equal(x.grad.data, np.arange(6.0).reshape(3, 2).T)


def test_demo_output(load_step):
    out = load_step(39).output
    assert "(3, 2) (6, 1) (3, 2)" in out
    assert "round trip is identity: True" in out
    assert "self-check passed" in out
