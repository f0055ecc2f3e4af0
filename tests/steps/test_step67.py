"""Step 67: loss scaling makes float16 training match float32; without it gradients underflow."""

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.layers import Linear
from dezero_like.optimizers import SGD, Adam, MomentumSGD


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
    np.testing.assert_array_equal(step.w_bad, 0.0)  # the NaN update was skipped


def test_demo_output(load_step):
    out = load_step(67).output
    assert "np.float16(1e-8) = 0.0" in out
    assert "  float16, no scale:        [0. 0. 0.]" in out
    rel = float(out.split("max relative difference ")[1].split()[0])
    assert rel < 1e-2
    assert "self-check passed" in out
    assert "the gradient of W[:3]: [nan nan nan]" in out
    assert "update() warned: update() skipped: the gradients of 1 of 1 parameters" in out
    assert "W[:3] after the skipped update: [0. 0. 0.]" in out


# --- an update whose scaled gradients overflowed is skipped -------------------------------------


class _TwoWeights(dz.Model):
    """Two float16 weights: ``a`` meets 1000 times ``x``, ``b`` only ``x``, so a scale of 128
    overflows ``a``'s gradient (128000 > 65504) and leaves ``b``'s finite."""

    def __init__(self):
        super().__init__()
        self.a = dz.Parameter(np.array([0.5, -0.25], np.float16), name="a")
        self.b = dz.Parameter(np.array([1.0, 2.0, 3.0], np.float16), name="b")

    def forward(self, x):
        return F.sum(self.a * (x[:2] * 1000.0)) + F.sum(self.b * x)


def _backward(model, scale):
    model.cleargrads()
    x = dz.Variable(np.array([1.0, 1.0, 1.0], np.float16), requires_grad=False)
    with np.errstate(over="ignore", invalid="ignore"):
        model(x).backward(loss_scale=scale)


def _skipped(update):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        update()
    return [str(w.message) for w in caught if "update() skipped" in str(w.message)]


@pytest.mark.parametrize("make", [lambda: SGD(lr=0.1), lambda: MomentumSGD(lr=0.1),
                                  lambda: Adam(alpha=0.01)], ids=["SGD", "MomentumSGD", "Adam"])
def test_an_overflowing_update_is_skipped_and_leaves_weights_and_state_alone(make):
    models = [_TwoWeights(), _TwoWeights()]  # twins: one meets an overflow between its updates
    optimizers = [make().setup(m) for m in models]
    for model, optimizer in zip(models, optimizers):
        _backward(model, 8.0)  # a good update first: momentum and Adam's moments are not zero
        assert _skipped(optimizer.update) == []
    model, optimizer = models[1], optimizers[1]
    weights = {p.name: p.data.copy() for p in model.params()}
    _backward(model, 128.0)
    assert np.isinf(model.a.grad.data).all()
    grads = {p.name: p.grad for p in model.params()}
    (message,) = _skipped(optimizer.update)
    assert "the gradients of 1 of 2 parameters hold inf or NaN with loss_scale=128" in message
    assert "overflowed float16 (largest 65504)" in message
    assert "backward(loss_scale=64)" in message
    for p in model.params():
        np.testing.assert_array_equal(p.data, weights[p.name])  # not one weight stepped
        assert np.isfinite(p.data).all()
        assert p.grad is grads[p.name] and p.loss_scale == 128.0  # still scaled, as backward left
    for model, optimizer in zip(models, optimizers):  # the optimizer's state did not move either:
        _backward(model, 8.0)  # the next good update is the twin's, bit for bit
        assert _skipped(optimizer.update) == []
    for p, q in zip(*(m.params() for m in models)):
        np.testing.assert_array_equal(q.data, p.data, err_msg=p.name)


def test_skipping_can_be_silenced_with_the_filter_the_warning_names():
    model = _TwoWeights()
    optimizer = SGD(lr=0.1).setup(model)
    _backward(model, 1024.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", r"update\(\) skipped")
        optimizer.update()
    np.testing.assert_array_equal(model.a.data, np.array([0.5, -0.25], np.float16))


def test_a_good_scale_steps_exactly_as_the_unscaled_gradient_does():
    model = _TwoWeights()
    optimizer = MomentumSGD(lr=0.1).setup(model)
    start = {p.name: p.data.copy() for p in model.params()}
    _backward(model, 32.0)
    scaled = {p.name: p.grad.data.astype(np.float32) for p in model.params()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer.update()
    for p in model.params():  # v = -lr g, with g divided in float32 and rounded to float16
        g = (scaled[p.name] / 32.0).astype(np.float16)
        v = (-0.1 * g.astype(np.float32)).astype(np.float32)
        np.testing.assert_array_equal(p.data, start[p.name] + v.astype(np.float16))
