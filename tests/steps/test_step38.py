import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_grads_keep_the_input_shape(load_step):
    step = load_step(38)
    for shape in [(3,), (2, 3), (2, 1, 4)]:
        x = dz.Variable(np.random.default_rng(0).normal(size=shape))
        F.sum(step.f(x)).backward()
        assert x.grad.shape == shape


def test_step_function_passes_gradient_check(load_step):
    step = load_step(38)
    assert gradient_check(step.f, np.random.default_rng(1).normal(size=(2, 5)))


def test_elementwise_backward_is_elementwise_derivative():
    x = dz.Variable(np.linspace(-2, 2, 12).reshape(3, 4))
    F.sin(x).backward()
    np.testing.assert_allclose(x.grad.data, np.cos(x.data))


def test_demo_output(load_step):
    step = load_step(38)
    out = step.output
    assert "x.grad.shape: (2, 3) == x.shape: True" in out
    assert "equals cos(x): True" in out
    np.testing.assert_allclose(step.grad_a.data, np.tanh(step.a.data) + step.a.data
                               * (1 - np.tanh(step.a.data) ** 2))
    assert "weighted grad: variable([ 0.  0. 40.])" in out
    assert "self-check passed" in out
