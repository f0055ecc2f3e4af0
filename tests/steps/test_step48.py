import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_repeated_indices_accumulate(load_step):
    step = load_step(48)
    np.testing.assert_array_equal(step.naive, [1, 0, 0, 1])  # the trap
    np.testing.assert_array_equal(step.correct, [2, 0, 0, 1])
    np.testing.assert_array_equal(step.v.grad.data, [2, 0, 0, 1])


def test_second_derivative_through_get_item(load_step):
    step = load_step(48)
    np.testing.assert_allclose(step.x.grad.data, 6 * step.counts * step.x.data)
    assert step.gx.creator is not None and type(step.gx.creator) is F.GetItemGrad


def test_get_item_grad_backward_is_get_item():
    gy = dz.Variable(np.array([1.0, 2.0, 3.0]))
    idx = np.array([1, 1, 0])
    gx = F.GetItemGrad(idx, (3,))(gy)
    np.testing.assert_array_equal(gx.data, [3.0, 3.0, 0.0])
    w = np.array([5.0, 7.0, 11.0])
    F.sum(gx * w).backward()
    np.testing.assert_array_equal(gy.grad.data, w[idx])
    assert gradient_check(lambda g: F.GetItemGrad(idx, (3,))(g) * w, np.array([1.0, 2.0, 3.0]))


def test_step_second_derivative_checker(load_step):
    step = load_step(48)
    assert gradient_check(step.d_dx, np.random.default_rng(9).normal(size=(3, 4)))


def test_demo_output(load_step):
    out = load_step(48).output
    assert "<gather(a), b> == <a, scatter(b)>: True" in out
    assert "made by GetItemGrad" in out
    assert "self-check passed" in out
