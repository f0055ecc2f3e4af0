"""Each optimizer against its update rule written by hand in NumPy, over several steps."""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import optimizers as O
from dezero_like.core import Parameter, Variable


class Quadratic(L.Layer):
    """loss = sum(a * w**2) / 2 + sum(b * w): gradient a*w + b, known in closed form."""

    def __init__(self, w0, dtype=np.float64):
        super().__init__()
        self.w = Parameter(np.array(w0, dtype=dtype))
        rng = np.random.default_rng(3)
        self.a = rng.uniform(0.5, 2.0, size=self.w.shape).astype(dtype)
        self.b = rng.normal(size=self.w.shape).astype(dtype)

    def loss(self):
        return F.sum(self.a * self.w**2) / 2 + F.sum(self.b * self.w)

    def grad(self, w):
        return self.a * w + self.b


def backward(loss, loss_scale=None):
    loss.backward(loss_scale=loss_scale)  # a 0-d loss, as in training


def run(optimizer, steps=5, dtype=np.float64, w0=(1.0, -2.0, 0.5, 3.0), loss_scale=None):
    model = Quadratic(list(w0), dtype)
    optimizer.setup(model)
    history = []
    for _ in range(steps):
        model.cleargrads()
        backward(model.loss(), loss_scale)
        optimizer.update()
        history.append(model.w.data.copy())
    return model, history


def hand(rule, steps=5, w0=(1.0, -2.0, 0.5, 3.0)):
    model = Quadratic(list(w0))
    w = model.w.data.copy()
    state = {}
    out = []
    for t in range(1, steps + 1):
        w = rule(w, model.grad(w), state, t)
        out.append(w.copy())
    return out


def sgd(lr):
    return lambda w, g, s, t: w - lr * g


def momentum(lr, mu):
    def rule(w, g, s, t):
        s["v"] = mu * s.get("v", 0.0) - lr * g
        return w + s["v"]

    return rule


def adagrad(lr, eps):
    def rule(w, g, s, t):
        s["h"] = s.get("h", 0.0) + g * g
        return w - lr * g / (np.sqrt(s["h"]) + eps)

    return rule


def adadelta(rho, eps):
    def rule(w, g, s, t):
        s["msg"] = rho * s.get("msg", 0.0) + (1 - rho) * g * g
        dx = np.sqrt((s.get("msdx", 0.0) + eps) / (s["msg"] + eps)) * g
        s["msdx"] = rho * s.get("msdx", 0.0) + (1 - rho) * dx * dx
        return w - dx

    return rule


def adam(alpha, b1, b2, eps):
    def rule(w, g, s, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        lr_t = alpha * np.sqrt(1 - b2**t) / (1 - b1**t)
        return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)

    return rule


CASES = {
    "SGD": (lambda: O.SGD(lr=0.1), sgd(0.1)),
    "MomentumSGD": (lambda: O.MomentumSGD(lr=0.1, momentum=0.8), momentum(0.1, 0.8)),
    "AdaGrad": (lambda: O.AdaGrad(lr=0.3, eps=1e-8), adagrad(0.3, 1e-8)),
    "AdaDelta": (lambda: O.AdaDelta(rho=0.9, eps=1e-4), adadelta(0.9, 1e-4)),
    "Adam": (lambda: O.Adam(alpha=0.1, beta1=0.8, beta2=0.99, eps=1e-8),
             adam(0.1, 0.8, 0.99, 1e-8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_update_rule_by_hand(name):
    make, rule = CASES[name]
    _, ours = run(make(), steps=6)
    expected = hand(rule, steps=6)
    for a, b in zip(ours, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_updates_in_place_in_float32_without_a_graph(name):
    make, _ = CASES[name]
    model = Quadratic([1.0, -2.0], np.float32)
    data = model.w.data
    opt = make().setup(model)
    for _ in range(3):
        model.cleargrads()
        model.loss().backward()
        opt.update()
    assert model.w.data is data  # same array, changed in place
    assert model.w.dtype == np.float32 and model.w.creator is None


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_loss_scale_is_divided_out_and_reset(name):
    make, _ = CASES[name]
    _, plain = run(make(), steps=3)
    model, scaled = run(make(), steps=3, loss_scale=1024.0)
    for a, b in zip(plain, scaled):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert model.w.loss_scale is None


def test_loss_scale_divides_before_hooks():
    seen = []
    model = Quadratic([1.0, 2.0])
    opt = O.SGD(lr=0.0).setup(model).add_hook(lambda ps: seen.append(ps[0].grad.data.copy()))
    backward(model.loss(), loss_scale=8.0)
    assert model.w.loss_scale == 8.0
    opt.update()
    np.testing.assert_allclose(seen[0], model.grad(np.array([1.0, 2.0])))


@pytest.mark.parametrize("scales", [(1024.0, 512.0), (None, 1024.0), (1024.0, None),
                                    (2.0**-3, 8.0)])
def test_gradients_accumulated_under_different_loss_scales_are_divided_right(scales):
    """Two backwards into one .grad (micro-batches) with different scales, or one unscaled:
    the update is that of the plain sum (before, the whole sum was divided by the last
    scale); the sum keeps the larger scale."""
    w0 = [1.0, 2.0]
    plain = Quadratic(w0)
    backward(plain.loss())
    backward(plain.loss())
    O.SGD(lr=0.1).setup(plain).update()
    model = Quadratic(w0)
    for s in scales:
        backward(model.loss(), loss_scale=s)
    assert model.w.loss_scale == max(scales, key=lambda s: 1.0 if s is None else s)  # the larger
    O.SGD(lr=0.1).setup(model).update()
    np.testing.assert_allclose(model.w.data, plain.w.data, rtol=1e-12)


def test_cleargrad_forgets_the_loss_scale():
    model = Quadratic([1.0, 2.0])
    backward(model.loss(), loss_scale=1024.0)
    model.cleargrads()
    assert model.w.loss_scale is None
    backward(model.loss())  # unscaled: must not be divided by the old 1024
    O.SGD(lr=0.1).setup(model).update()
    expected = np.array([1.0, 2.0]) - 0.1 * model.grad(np.array([1.0, 2.0]))
    np.testing.assert_allclose(model.w.data, expected, rtol=1e-12)
    # a gradient dropped by hand (w.grad = None, as in the book) starts a new sum too
    backward(model.loss(), loss_scale=64.0)
    model.w.grad = None
    backward(model.loss())
    assert model.w.loss_scale is None


def test_loss_scales_mixed_in_float16_keep_the_dtype():
    layer = L.Linear(1, in_size=1, dtype=np.float16, nobias=True)
    layer.W.data[:] = 1.0
    x = np.ones((1, 1), np.float16)
    F.sum(layer(x)).backward(loss_scale=1024.0)
    F.sum(layer(x)).backward(loss_scale=2048.0)
    assert layer.W.grad.dtype == np.float16
    O.SGD(lr=1.0).setup(layer).update()
    np.testing.assert_allclose(layer.W.data, [[-1.0]])


def test_shared_gradient_arrays_are_not_modified_in_place():
    class Two(L.Layer):
        def __init__(self):
            super().__init__()
            self.p = Parameter(np.array([1.0, 2.0]))
            self.q = Parameter(np.array([3.0, 4.0]))

    model = Two()
    backward(F.sum(model.p + model.q), loss_scale=2.0)  # p and q may share one grad array
    O.SGD(lr=1.0).setup(model).add_hook(O.WeightDecay(0.5)).update()
    np.testing.assert_allclose(model.p.data, [1.0 - 1 - 0.5, 2.0 - 1 - 1.0])
    np.testing.assert_allclose(model.q.data, [3.0 - 1 - 1.5, 4.0 - 1 - 2.0])


def test_weight_decay_hook():
    model, hist = run(O.SGD(lr=0.1).add_hook(O.WeightDecay(0.2)), steps=3)
    expected = hand(lambda w, g, s, t: w - 0.1 * (g + 0.2 * w), steps=3)
    np.testing.assert_allclose(hist[-1], expected[-1], rtol=1e-12)


def test_clip_grad_hook_scales_the_global_norm():
    model = Quadratic([10.0, -20.0, 5.0, 30.0])
    model.loss().backward()
    g = model.w.grad.data.copy()
    grads = []
    opt = O.SGD(lr=0.0).setup(model).add_hook(O.ClipGrad(1.0))
    opt.add_hook(lambda ps: grads.append(ps[0].grad.data.copy()))
    opt.update()
    assert np.linalg.norm(grads[0]) == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(grads[0] / np.linalg.norm(grads[0]), g / np.linalg.norm(g))
    small = Quadratic([0.01, 0.0, 0.0, 0.0])
    small.loss().backward()
    before = small.w.grad.data.copy()
    O.SGD(lr=0.0).setup(small).add_hook(O.ClipGrad(100.0)).update()
    np.testing.assert_array_equal(small.w.grad.data, before)  # under the limit: untouched


def test_freeze_param_keeps_a_layer_fixed():
    np.random.seed(0)
    model = dz.models.MLP((4, 2))
    x = np.random.randn(3, 5).astype(np.float32)
    model(x)
    frozen = [p.data.copy() for p in model.l0.params()]
    moving = [p.data.copy() for p in model.l1.params()]
    opt = O.SGD(lr=0.5).setup(model).add_hook(O.FreezeParam(model.l0))
    F.sum(model(x) ** 2).backward()
    opt.update()
    assert all(np.array_equal(a, p.data) for a, p in zip(frozen, model.l0.params()))
    assert not any(np.array_equal(a, p.data) for a, p in zip(moving, model.l1.params()))


def test_optimizers_minimise_a_quadratic():
    for name, (make, _) in CASES.items():
        model, _ = run(make(), steps=300)
        optimum = -model.b / model.a
        err = np.abs(model.w.data - optimum).max()
        assert err < 0.3, f"{name} ended {err} away from the optimum"


def test_clear_errors():
    with pytest.raises(RuntimeError, match="setup"):
        O.SGD().update()
    with pytest.raises(TypeError, match="Layer or Model"):
        O.SGD().setup(np.zeros(3))


def test_matches_torch_sgd_momentum_and_adam():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle to compare")
    w0 = [1.0, -2.0, 0.5, 3.0]
    pairs = [
        (O.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
        (O.MomentumSGD(lr=0.1, momentum=0.8), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8)),
        (O.AdaGrad(lr=0.3, eps=1e-10), lambda p: torch.optim.Adagrad(p, lr=0.3, eps=1e-10)),
        (O.Adam(alpha=0.1, eps=1e-12), lambda p: torch.optim.Adam(p, lr=0.1, eps=1e-12)),
    ]
    for ours, make_theirs in pairs:
        model, hist = run(ours, steps=5, w0=w0)
        wt = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
        a, b = torch.tensor(model.a), torch.tensor(model.b)
        opt = make_theirs([wt])
        for _ in range(5):
            opt.zero_grad()
            ((a * wt**2).sum() / 2 + (b * wt).sum()).backward()
            opt.step()
        np.testing.assert_allclose(hist[-1], wt.detach().numpy(), rtol=1e-9,
                                   err_msg=type(ours).__name__)


@pytest.mark.parametrize("frozen_for", [1, 3])
@pytest.mark.filterwarnings("ignore:update\\(\\). v got no gradient")  # unused on purpose
def test_adam_corrects_each_parameter_for_its_own_number_of_updates(frozen_for):
    """A parameter without a gradient in the first updates (unused by those batches, or
    frozen) has averages only as old as its own updates: PyTorch and Chainer count them per
    parameter. A count shared by the optimizer gave its first step 0.64 of the right size."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle to compare")
    ours = L.Layer()
    ours.u = Parameter(np.array([1.0, -2.0]))
    ours.v = Parameter(np.array([0.5, 3.0]))
    u, v = (torch.tensor(p.data.copy(), requires_grad=True) for p in (ours.u, ours.v))
    # eps so small that its two placements (ours after the bias correction, PyTorch's
    # before) agree to rounding
    opt = O.Adam(alpha=0.1, eps=1e-12).setup(ours)
    theirs = torch.optim.Adam([u, v], lr=0.1, eps=1e-12)
    for step in range(6):
        uses_v = step >= frozen_for
        ours.cleargrads()
        loss = F.sum(ours.u**2) + (F.sum(ours.v**3) if uses_v else 0.0)
        loss.backward()
        opt.update()
        theirs.zero_grad(set_to_none=True)
        (u**2).sum().add((v**3).sum() if uses_v else 0.0).backward()
        theirs.step()
        np.testing.assert_allclose(ours.u.data, u.detach().numpy(), rtol=1e-9)
        np.testing.assert_allclose(ours.v.data, v.detach().numpy(), rtol=1e-9)
    assert opt.t == 6


def test_a_float16_sum_is_brought_to_the_larger_scale_without_overflow():
    """The factor between two scales may exceed float16's range (2**14 / 0.25 = 65536):
    the rescale is computed in float32, and the smaller-scaled side is scaled up."""
    x = Variable(np.array([0.01], np.float16))
    (x * 1.0).backward(loss_scale=0.25)
    (x * 1.0).backward(loss_scale=2.0**14)
    assert x.loss_scale == 2.0**14 and x.grad.dtype == np.float16
    np.testing.assert_allclose(float(x.grad.data[0]) / x.loss_scale, 2.0, rtol=1e-3)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "8", True])
def test_a_loss_scale_that_is_not_a_positive_number_is_refused(bad):
    x = Variable(np.array([1.0]))
    with pytest.raises((TypeError, ValueError), match="loss_scale must be a"):
        (x * 2.0).backward(loss_scale=bad)
    assert x.grad is None
    (x * 2.0).backward(loss_scale=np.array(8.0))  # a 0-d array is a number too
    assert x.loss_scale == 8.0


def test_a_gradient_kept_by_retain_grad_is_not_taken_for_a_seed():
    """Only a y.grad set by hand seeds the next backward: one that retain_grad left there
    was scaled once already, and would be scaled again."""
    x = Variable(np.array([1.0, 2.0], np.float32))
    y = F.sum(x * 3.0)
    y.backward(retain_grad=True, retain_graph=True, loss_scale=8.0)
    x.cleargrad()
    y.backward(retain_graph=True, loss_scale=8.0)
    np.testing.assert_allclose(x.grad.data / x.loss_scale, [3.0, 3.0])
    a = Variable(np.array(2.0))
    b = a * a
    c = b * 10.0
    c.backward(retain_grad=True, retain_graph=True)
    a.cleargrad()
    b.backward()
    np.testing.assert_allclose(a.grad.data, 4.0)



def test_settings_are_checked_when_changed_later_too():
    """A schedule writes optimizer.lr = ...: a string or a negative value failed deep in
    update() or quietly climbed the loss."""
    sgd = O.SGD(lr=0.1)
    sgd.lr = 0.05  # a schedule
    assert sgd.lr == 0.05
    with pytest.raises(TypeError, match="SGD: lr must be a number"):
        sgd.lr = "0.01"
    with pytest.raises(ValueError, match="SGD: lr must be >= 0"):
        sgd.lr = -0.1
    adam = O.Adam()
    with pytest.raises(ValueError, match="Adam: alpha must be >= 0"):
        adam.alpha = -1.0
    with pytest.raises(AttributeError, match="set adam.alpha"):
        adam.lr = 0.01
    assert adam.lr == pytest.approx(adam.lr_at(1))  # before any update: the first one's


@pytest.mark.parametrize("make, match", [
    (lambda: O.MomentumSGD(momentum=1.5), r"momentum must be in \[0.0, 1.0\)"),
    (lambda: O.SGD(lr=float("inf")), "lr must be finite"),
    (lambda: O.ClipGrad(0), "max_norm must be > 0"),
    (lambda: O.SGD().add_hook(O.WeightDecay), "the class WeightDecay.*instance"),
    (lambda: O.SGD().add_hook(1e-4), "add_hook.*got 0.0001"),
])
def test_settings_that_would_ruin_training_are_refused(make, match):
    with pytest.raises((TypeError, ValueError), match=match):
        make()


def test_update_without_any_gradient_warns():
    model = Quadratic([1.0, 2.0])
    opt = O.SGD(lr=0.1).setup(model)
    backward(model.loss())
    model.cleargrads()  # cleargrads between backward and update: the classic slip
    with pytest.warns(RuntimeWarning, match="no parameter has a gradient"):
        opt.update()
    np.testing.assert_array_equal(model.w.data, [1.0, 2.0])
