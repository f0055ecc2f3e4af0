import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_matmul_gradients_follow_the_formulas(load_step):
    out = load_step(42).output
    assert "x.grad.shape: (2, 3)  W.grad.shape: (3, 4)" in out
    assert "g_x = g_y W^T: True" in out and "g_W = x^T g_y: True" in out
    assert "numerical agrees: True True" in out


def test_matmul_gradient_check_both_inputs():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(2, 5))
    assert gradient_check(lambda u: F.matmul(u, dz.Variable(b)), a)
    assert gradient_check(lambda v: F.matmul(dz.Variable(a), v), b)


def test_exercise(load_step):
    step = load_step(42)
    np.testing.assert_allclose(step.by_hand, step.W3.grad.data)
    assert "self-check passed" in step.output
