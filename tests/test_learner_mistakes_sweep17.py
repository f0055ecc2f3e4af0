"""Seventeenth sweep: learner mistakes that still gave wrong numbers without a word.

* a loss left unreduced, ``loss = (y - t) ** 2``, then ``loss.backward()`` and the update written
  by hand as in steps 43-46 (``p.data -= lr * p.grad.data``): the gradients are those of the sum
  of the ``N`` elements, so every step is ``N`` times too long. Only ``optimizer.update()``
  warned. And its warning read one note of the *last* backward: a non-scalar backward of other
  variables between the loss's backward and the update warned about a loss that was fine, and a
  scalar backward of something else there hid a loss that was not. Now ``backward`` notes
  which gradients it made from ones (step 67), and the update of a parameter that holds one
  warns, with ``optimizer.update()`` or by hand.
* examples appended to a dataset after its ``DataLoader`` was made: the loader counted its
  batches and drew its order from the old length, so the new examples were never read, and
  examples removed gave an ``IndexError`` from deep inside. Now each epoch compares the length
  with the count and says to make the loader again (step 52).
* ``opt = Adam().setup(model)`` written inside the training loop: every step started from zero
  state, so Adam's steps were ``alpha * sign(g)`` and MomentumSGD had no momentum, without a
  word. Now ``setup`` warns when a new optimizer of the same class replaces one that made a
  single update and keeps state (step 47).
"""

import warnings

import numpy as np
import pytest

import dezero_like.functions as F
from dezero_like import Variable, optimizers
from dezero_like.models import MLP

_SUMMED = r"update\(\) uses gradients from backward\(\) of a loss of shape"
_BY_HAND = r"data changed while its gradient comes from backward\(\) of a loss of shape"


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 1))
    return x, np.sin(2 * np.pi * x)


def _model(seed=0):
    np.random.seed(seed)
    model = MLP((10, 1))
    return model


def _hand_step(loss_of, lr=0.1):
    """One step of step 45's regression, updated by hand as in step 46; the first layer's step."""
    x, t = _data()
    model = _model()
    loss = loss_of(model(x), t)
    before = model.l0.W.data.copy()
    model.cleargrads()
    loss.backward()
    for p in model.params():
        p.data -= lr * p.grad.data
    return model.l0.W.data - before


# --- 1. a loss left unreduced, and the update of its parameters ----------------------------------

def test_a_hand_written_update_after_an_unreduced_loss_warns_once_and_is_n_times_too_long():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean_step = _hand_step(F.mean_squared_error)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        summed_step = _hand_step(lambda y, t: (y - t) ** 2)
    mine = [w for w in record if "comes from backward() of a loss of shape" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in record]  # one per backward, not per parameter
    assert mine[0].filename == __file__  # the line of the update, not the package's
    message = str(mine[0].message)
    assert "(20, 1)" in message and "20 times" in message and "F.mean(loss)" in message
    # what it warns about: the sum of the 20 squared errors is 20 times the mean's gradient
    np.testing.assert_allclose(summed_step, 20 * mean_step, rtol=1e-3)  # float32 weights


def test_another_non_scalar_backward_before_the_update_is_no_false_alarm():
    x, t = _data()
    model = _model()
    optimizer = optimizers.SGD(0.1).setup(model)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", _SUMMED)
        warnings.filterwarnings("error", _BY_HAND)
        for _ in range(2):
            model.cleargrads()
            F.mean_squared_error(model(x), t).backward()
            v = Variable(np.linspace(0, 1, 5))  # an elementwise look at something else
            F.sin(v).backward()
            optimizer.update()
            v.data -= 0.1 * v.grad.data  # a plain Variable's elementwise step is no mistake


def test_a_scalar_backward_of_something_else_does_not_hide_an_unreduced_loss():
    x, t = _data()
    model = _model()
    optimizer = optimizers.SGD(0.1).setup(model)
    model.cleargrads()
    ((model(x) - t) ** 2).backward()
    v = Variable(np.array(2.0))
    (v ** 2).backward()  # a scalar backward of another graph between them
    with pytest.warns(RuntimeWarning, match=_SUMMED):
        optimizer.update()


def test_each_of_two_models_updated_after_its_own_unreduced_loss_warns():
    x, t = _data()
    models = [_model(0), _model(1)]
    opts = [optimizers.SGD(0.1).setup(m) for m in models]
    losses = [(m(x) - t) ** 2 for m in models]
    for m, loss in zip(models, losses):
        m.cleargrads()
        loss.backward()
    for opt in opts:
        with pytest.warns(RuntimeWarning, match=_SUMMED):
            opt.update()


def test_hand_written_updates_of_a_scalar_loss_and_loading_weights_stay_quiet(tmp_path):
    x, t = _data()
    model = _model()
    model(x)
    model.save_weights(str(tmp_path / "w.npz"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _hand_step(lambda y, t: F.sum((y - t) ** 2) / len(t))
        model.cleargrads()
        ((model(x) - t) ** 2).backward()
        model.load_weights(str(tmp_path / "w.npz"))  # the package's write is no update by hand
    with pytest.warns(RuntimeWarning, match=_BY_HAND):  # the gradient is still the sum's
        for p in model.params():
            p.data -= 0.1 * p.grad.data


# --- 2. a dataset whose length changes under its loader -----------------------------------------

class _Growing:
    """A list of (x, t) pairs that the learner appends to, as a PyTorch map-style dataset."""

    def __init__(self, n):
        self.items = [(np.full(2, float(i)), i % 2) for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


_RESIZED = "the dataset has 14 examples now, and had 10 when the loader was made"


def test_examples_appended_after_the_loader_was_made_are_not_dropped_silently():
    from dezero_like import DataLoader

    data = _Growing(10)
    loader = DataLoader(data, 4, shuffle=True, seed=0)
    assert sum(len(x) for x, _ in loader) == 10
    data.items += [(np.full(2, 99.0), 1)] * 4
    with pytest.raises(ValueError, match=_RESIZED) as error:  # before: 10 of the 14, silently
        for _ in loader:
            pass
    assert "4 added would never be read" in str(error.value)
    assert "DataLoader(dataset, 4, shuffle=True)" in str(error.value)
    with pytest.raises(ValueError, match=_RESIZED):  # the book's next(loader) form
        next(loader)
    seen = sum(len(x) for x, _ in DataLoader(data, 4, shuffle=True, seed=0))  # the fix
    assert seen == 14


def test_examples_removed_in_the_middle_of_an_epoch_are_named_not_an_index_error():
    from dezero_like import DataLoader

    data = _Growing(10)
    loader = DataLoader(data, 4, shuffle=False)
    with pytest.raises(ValueError, match="has 6 examples now, and had 10") as error:
        for _ in loader:
            del data.items[6:]
    assert "positions up to 9" in str(error.value)
    assert isinstance(error.value.__cause__, IndexError)


def test_a_dataset_of_a_fixed_length_and_its_own_index_errors_are_unchanged():
    from dezero_like import DataLoader

    class Broken(_Growing):
        def __getitem__(self, i):
            raise IndexError("my own bug")

    loader = DataLoader(_Growing(10), 4)
    for _ in range(3):
        assert sum(len(x) for x, _ in loader) == 10
    with pytest.raises(IndexError, match="my own bug"):
        next(iter(DataLoader(Broken(10), 4)))


# --- 3. an optimizer made inside the training loop ----------------------------------------------

_IN_LOOP = "an optimizer made inside the training loop starts each step from zero state"


def _train(cls, in_loop, steps=30):
    """Step 45's regression trained with ``cls``; the final loss."""
    x, t = _data()
    model = _model()
    optimizer = cls().setup(model)
    for _ in range(steps):
        if in_loop:
            optimizer = cls().setup(model)
        loss = F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return float(loss.data)


@pytest.mark.parametrize("cls", [optimizers.MomentumSGD, optimizers.Adam, optimizers.AdaGrad])
def test_a_stateful_optimizer_made_in_the_loop_warns_and_loses_its_state(cls):
    with pytest.warns(RuntimeWarning, match=_IN_LOOP) as record:
        in_loop = _train(cls, in_loop=True)
    mine = [w for w in record if _IN_LOOP in str(w.message)]
    assert mine[0].filename == __file__
    assert f"{cls.__name__}(...).setup(model)" in str(mine[0].message)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", _IN_LOOP)
        once = _train(cls, in_loop=False)
    assert in_loop != once  # what it warns about: another training, not the one written


def test_sgd_in_the_loop_a_second_run_and_two_models_stay_quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("error", _IN_LOOP)
        _train(optimizers.SGD, in_loop=True)  # no state: nothing lost
        x, t = _data()
        model = _model()
        for alpha in (1e-3, 1e-4):  # a second phase after a whole run, as a notebook does
            optimizer = optimizers.Adam(alpha).setup(model)
            for _ in range(5):
                model.cleargrads()
                F.mean_squared_error(model(x), t).backward()
                optimizer.update()
        for model in (_model(0), _model(1)):  # each model its own optimizer, once
            optimizer = optimizers.Adam().setup(model)
            model.cleargrads()
            F.mean_squared_error(model(x), t).backward()
            optimizer.update()
