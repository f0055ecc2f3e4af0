import numpy as np

import dezero_like.functions as F
from dezero_like import Parameter


def test_layer_registers_only_parameters(load_step):
    step = load_step(45)
    scale = step.Scale(2)
    params = list(scale.params())
    assert params == [scale.w]
    assert "registered: ['w']" in step.output


def test_nested_layers_and_lazy_linear(load_step):
    step = load_step(45)
    net = step.TwoLayerNet(4, 2)
    assert all(q.data is None for q in net.params() if q.name == "W")
    net(np.ones((3, 5)))
    shapes = [q.shape for q in net.params()]
    assert shapes == [(5, 4), (4,), (4, 2), (2,)]
    assert all(isinstance(q, Parameter) for q in net.params())


def test_training_through_params_reduces_the_loss(load_step):
    step = load_step(45)
    assert step.losses[-1] < 0.1 < step.losses[0]


def test_linear_default_is_float32_and_scaled(load_step):
    step = load_step(45)
    assert step.linear.W.dtype == np.float32
    assert 0.7 < float(step.out.data.std()) < 1.3


def test_exercise(load_step):
    step = load_step(45)
    ss = step.ScaleShift(2)
    y = ss(np.array([[1.0, 2.0]]))
    F.sum(y).backward()
    np.testing.assert_allclose(ss.w.grad.data, [1.0, 2.0])
    assert "self-check passed" in step.output
