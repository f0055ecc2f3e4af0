"""Step 67: loss scaling makes float16 training match float32; without it gradients underflow."""

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.layers import Linear
from dezero_like.optimizers import SGD


def test_float16_without_scale_underflows_to_exactly_zero(load_step):
    step = load_step(67)
    layer = Linear(1, in_size=step.D, nobias=True, dtype=np.float16)
    layer.W.data[...] = 0
    loss = F.mean_squared_error(layer(step.x_data.astype(np.float16)),
                                step.t_data.astype(np.float16))
    loss.backward()
    assert layer.W.grad.dtype == np.float16
    assert np.count_nonzero(layer.W.grad.data) == 0
    np.testing.assert_array_equal(step.train(np.float16, None, steps=3), 0.0)


@pytest.mark.parametrize("scale", [256.0, 1024.0, 8192.0])
def test_float16_with_scale_gives_the_float32_update(load_step, scale):
    step = load_step(67)
    w32 = step.train(np.float32)
    w16 = step.train(np.float16, loss_scale=scale)
    assert np.abs(w32).min() > 1e-6  # a real, non-trivial update
    np.testing.assert_allclose(w16, w32, rtol=2e-2)


def test_float32_with_and_without_scale_agree(load_step):
    step = load_step(67)
    np.testing.assert_allclose(step.train(np.float32, 1024.0, steps=3),
                               step.train(np.float32, None, steps=3), rtol=1e-5)


def test_leaves_remember_the_scale_and_the_optimizer_resets_it():
    x = dz.Variable(np.array([1.0, 2.0], dtype=np.float16), requires_grad=False)
    layer = Linear(1, in_size=2, nobias=True, dtype=np.float16)
    layer.W.data[...] = np.float16(0.5)
    loss = F.sum(layer(x.reshape(1, 2)))
    loss.backward(loss_scale=128.0)
    assert layer.W.loss_scale == 128.0
    np.testing.assert_array_equal(layer.W.grad.data, [[128.0], [256.0]])
    SGD(lr=0.25).setup(layer).update()
    assert layer.W.loss_scale is None
    np.testing.assert_array_equal(layer.W.data, [[0.25], [0.0]])


def test_seed_is_scaled_for_scalar_and_array_outputs():
    x = dz.Variable(np.array([1.0, 2.0, 3.0]))
    F.sum(x * x).backward(loss_scale=4.0)  # scalar (0-d) loss
    np.testing.assert_array_equal(x.grad.data, [8.0, 16.0, 24.0])
    assert x.loss_scale == 4.0
    y = dz.Variable(np.array([1.0, 2.0]))
    (y * 3.0).backward(gradient=np.array([1.0, -1.0]), loss_scale=2.0)
    np.testing.assert_array_equal(y.grad.data, [6.0, -6.0])


def test_overflow_detection(load_step):
    step = load_step(67)
    assert step.has_overflow(step.scaled_grads(2.0**16))
    assert not step.has_overflow(step.scaled_grads(512.0))
    assert np.isnan(step.w_bad).all()


def test_demo_output(load_step):
    out = load_step(67).output
    assert "np.float16(1e-8) = 0.0" in out
    assert "  float16, no scale:        [0. 0. 0.]" in out
    rel = float(out.split("max relative difference ")[1].split()[0])
    assert rel < 1e-2
    assert "self-check passed" in out
