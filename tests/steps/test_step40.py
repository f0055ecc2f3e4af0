import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_sum_backward_broadcasts_the_gradient(load_step):
    out = load_step(40).output
    assert "x.grad = variable([[  1.  10. 100.]\n          [  1.  10. 100.]])" in out
    assert "(2, 1) (2,) ()" in out


def test_sum_to_values_and_backward(load_step):
    out = load_step(40).output
    assert "sum_to (1, 3): variable([[3. 5. 7.]])" in out
    assert "sum_to (2, 1): variable([[ 3.]\n          [12.]])" in out
    assert "x.grad = variable([[1. 1. 1.]\n          [2. 2. 2.]])" in out


def test_mean_solution(load_step):
    step = load_step(40)
    data = np.random.default_rng(0).normal(size=(3, 5))
    assert gradient_check(lambda v: step.mean(v, 1) * np.arange(3.0), data)
    x = dz.Variable(data)
    step.mean(x, 0).backward()
    np.testing.assert_allclose(x.grad.data, 1 / 3)


def test_sum_to_and_broadcast_are_transposes():
    rng = np.random.default_rng(2)
    a, g = rng.normal(size=(2, 3)), rng.normal(size=(1, 3))
    # <sum_to(a), g> == <a, broadcast_to(g)>
    lhs = (F.sum_to(dz.Variable(a), (1, 3)).data * g).sum()
    rhs = (a * F.broadcast_to(dz.Variable(g), (2, 3)).data).sum()
    np.testing.assert_allclose(lhs, rhs)


def test_self_check(load_step):
    assert "self-check passed" in load_step(40).output
