import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_broadcast_to_sums_back(load_step):
    assert "x.grad = variable([2. 2. 2.]) (each element was used twice)" in load_step(41).output


def test_grads_are_summed_back_to_each_input_shape(load_step):
    step = load_step(41)
    out = step.output
    assert "x1.grad = variable([5. 7. 9.]) == column sums of x0: True" in out
    for s0, s1 in step.pairs:
        assert f"grads {s0}, {s1}; checks True" in out


def test_broadcast_to_gradient_check():
    x = np.random.default_rng(0).normal(size=(3, 1))
    w = np.random.default_rng(1).normal(size=(2, 3, 4))
    assert gradient_check(lambda v: F.broadcast_to(v, (2, 3, 4)) * w, x)


def test_bias_gradient(load_step):
    step = load_step(41)
    np.testing.assert_allclose(step.grad_c.data, 2 * (step.h.data + step.c.data).sum(axis=0))
    x = dz.Variable(np.zeros((2, 3)))
    b = dz.Variable(np.zeros(3))
    (x + b).backward()
    assert b.grad.shape == (3,)
    assert "self-check passed" in step.output
