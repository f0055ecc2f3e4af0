"""Fifteenth sweep: learner mistakes of the training loops (steps 43-74) that gave wrong numbers
without a word.

* ``model.cleargrads()`` left out of a training loop (PyTorch's forgotten ``zero_grad()``), with
  an optimizer or with step 43's update by hand (``p.data -= lr * p.grad.data``): each backward
  added its gradient to the one the last update had used, so every step went further in all the
  old directions, and the loss went elsewhere than the book's. Now a leaf notes the tick of the
  clock at which its gradient began (step 70); a backward that adds to a gradient begun before
  the leaf's last change marks the leaf, and its next change (the update) warns. The mark is on
  the leaf, not on the gradient, so an optimizer's hooks and ``backward(loss_scale=)``, which
  hand the update new gradient objects, do not hide it.
"""

import warnings

import numpy as np
import pytest

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Variable, optimizers
from dezero_like.models import MLP
from dezero_like.utils import gradient_check

_FORGOT = r"is being updated with a gradient that a backward\(\) added to the one it held before"


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 1))
    return x, np.sin(2 * np.pi * x) + 0.1 * rng.random((20, 1))


def _train(iters, clear=True, by_hand=False):
    """Step 45/46's regression loop; ``clear=False`` is the learner's loop without cleargrads."""
    np.random.seed(0)
    x, t = _data()
    model = MLP((10, 1))
    optimizer = optimizers.SGD(0.2).setup(model)
    losses = []
    for _ in range(iters):
        loss = F.mean_squared_error(model(x), t)
        if clear:
            model.cleargrads()
        loss.backward()
        if by_hand:  # step 43/44's update
            for p in model.params():
                p.data -= 0.2 * p.grad.data
        else:
            optimizer.update()
        losses.append(float(loss.data))
    return losses


@pytest.mark.parametrize("by_hand", [False, True], ids=["optimizer", "by_hand"])
def test_a_training_loop_without_cleargrads_warns_once_per_update_with_the_fix(by_hand):
    right = _train(30, by_hand=by_hand)
    with pytest.warns(RuntimeWarning, match=_FORGOT) as record:
        wrong = _train(30, clear=False, by_hand=by_hand)
    # the first backward had nothing to add to; each later one warned once, not per parameter
    mine = [w for w in record if "is being updated with a gradient" in str(w.message)]
    assert len(mine) == 29  # the first update was right: one warning each for the others
    assert all(w.filename == __file__ for w in mine)  # the line of the update, not the package
    message = str(mine[0].message)
    assert "model.cleargrads()" in message and "zero_grad()" in message
    assert wrong[0] == right[0]  # the first step is the same; then they part
    assert abs(wrong[-1] - right[-1]) > 0.01, (wrong[-1], right[-1])


@pytest.mark.parametrize("kind", ["weight_decay", "loss_scale"])
def test_hooks_and_loss_scaling_do_not_hide_a_forgotten_cleargrads(kind):
    # both give update() new gradient objects: WeightDecay adds rate * p, the scale divides
    np.random.seed(0)
    x, t = _data()
    model = MLP((10, 1))
    optimizer = optimizers.SGD(0.2).setup(model)
    if kind == "weight_decay":
        optimizer.add_hook(optimizers.WeightDecay(1e-4))
    scale = 8.0 if kind == "loss_scale" else None
    with pytest.warns(RuntimeWarning, match=_FORGOT) as record:
        for _ in range(4):
            F.mean_squared_error(model(x), t).backward(loss_scale=scale)
            optimizer.update()
    assert len([w for w in record if "is being updated" in str(w.message)]) == 3


def test_a_variable_updated_by_hand_without_cleargrad_warns_and_names_it():
    # step 28's gradient descent on Rosenbrock, x0.cleargrad() and x1.cleargrad() left out
    x0 = Variable(np.array(0.0), name="x0")
    x1 = Variable(np.array(2.0), name="x1")
    with pytest.warns(RuntimeWarning, match=r"^x0 is being updated with a gradient") as record:
        for _ in range(3):
            y = 100 * (x1 - x0**2) ** 2 + (1 - x0) ** 2
            y.backward()
            x0.data -= 0.001 * x0.grad.data
            x1.data -= 0.001 * x1.grad.data
    assert len(record) == 2  # the second and third update, once each


def test_a_sum_dropped_before_the_update_or_never_used_for_one_stays_quiet(load_step):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # step 36's descent: the first backward adds to W's old gradient, cleargrad drops it
        step = load_step(36)
        W = Variable(step.W0.copy())
        for _ in range(3):
            p = step.gradient_penalty(W)
            W.cleargrad()
            p.backward()
            W.data = W.data - 0.1 * W.grad.data
        # a gradient check of a trained model's function adds to its gradients, updates nothing
        step = load_step(44)
        assert gradient_check(step.predict, np.linspace(0, 1, 5)[:, None])


def test_loops_that_clear_accumulate_on_purpose_or_share_weights_stay_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train(5)
        _train(5, by_hand=True)
        # cleargrads after the update, not before the backward: just as right
        np.random.seed(0)
        x, t = _data()
        model = MLP((10, 1))
        optimizer = optimizers.MomentumSGD(0.1).setup(model)
        optimizer.add_hook(optimizers.WeightDecay(1e-4))
        for _ in range(3):
            F.mean_squared_error(model(x), t).backward(loss_scale=8.0)
            optimizer.update()
            model.cleargrads()
        # the gradients of two half batches added up on purpose, then one step
        for _ in range(3):
            model.cleargrads()
            for half in (slice(0, 10), slice(10, 20)):
                F.mean_squared_error(model(x[half]), t[half]).backward()
            optimizer.update()
        # a recurrent layer's weights get one gradient per time step in one backward
        rnn = L.RNN(4)
        fc = L.Linear(1)
        opt = optimizers.Adam().setup(rnn)
        for _ in range(3):
            rnn.reset_state()
            loss = sum(F.sum(fc(rnn(x[i:i + 1]))) for i in range(5))
            rnn.cleargrads()
            fc.cleargrads()
            loss.backward()
            opt.update()
        # two backwards with no change between them add up (step 37): not a slip
        v = Variable(np.array(3.0))
        (v * v).backward()
        (v * v).backward()
        assert float(v.grad.data) == 12.0
        # a value changed, then cleargrad, then backward: what step 33's Newton loop does
        v.data = np.array(1.0)
        v.cleargrad()
        (v * v).backward()
        assert float(v.grad.data) == 2.0
