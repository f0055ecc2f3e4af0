"""Sixteenth sweep: learner mistakes of the training loops (steps 47-67) that gave wrong numbers
without a word.

* a loss left unreduced, ``loss = (y - t) ** 2`` then ``loss.backward()`` and
  ``optimizer.update()``: ``backward()`` starts from ones, so the gradients were those of the sum
  of the ``N`` elements, ``N`` times those of the mean, and every step ``N`` times too long
  (PyTorch refuses ``backward()`` of a non-scalar without a gradient). ``backward()`` itself
  still takes it (the elementwise demos of the early steps need it); now ``backward`` notes the
  shape of an output it seeded with ones untold, and the next ``update()`` warns (step 67).
* ``it = iter(loader)`` kept for an epoch loop (``for x, t in it:`` in every epoch): an
  iterator read to its end is spent, so every epoch after the first trained on nothing and its
  loss read 0. Now a loop started on a spent epoch of a ``DataLoader`` warns (step 52).
* an assignment to a name no optimizer reads, ``sgd.momentum = 0.9`` (plain SGD has none),
  ``sgd.alpha = 0.01`` (Adam's name), ``adam.eps_ = 1e-6``: a new attribute, and training went
  on as before. Only ``adam.lr = ...`` was refused. Now any name an optimizer does not have is
  refused from outside its own methods, with the settings it has (step 47); those stay
  settable while training (``optimizer.lr *= 0.5``).
"""

import copy
import pickle
import warnings

import numpy as np
import pytest

import dezero_like.functions as F
from dezero_like import DataLoader, SeqDataLoader, Variable, optimizers
from dezero_like.datasets import SinCurve, Spiral
from dezero_like.models import MLP

_SUMMED = r"update\(\) uses gradients from backward\(\) of a loss of shape"
_SPENT = "this loop runs over an epoch of a DataLoader that was read to its end already"


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 1))
    return x, np.sin(2 * np.pi * x)


def _model_and_optimizer(cls=optimizers.SGD, *args):
    np.random.seed(0)
    model = MLP((10, 1))
    return model, cls(*args).setup(model)


# --- 1. a loss that is not a single number -----------------------------------------------------

def _one_step(loss_of, **backward_args):
    """One training step of step 45's regression with ``loss_of(y, t)``; the first layer's step."""
    x, t = _data()
    model, optimizer = _model_and_optimizer(optimizers.SGD, 0.1)
    loss = loss_of(model(x), t)
    before = model.l0.W.data.copy()  # made by the first forward
    model.cleargrads()
    loss.backward(**backward_args)
    optimizer.update()
    return model.l0.W.data - before


def test_an_unreduced_loss_warns_at_the_update_and_its_step_is_n_times_too_long():
    mean_step = _one_step(F.mean_squared_error)
    with pytest.warns(RuntimeWarning, match=_SUMMED) as record:
        summed_step = _one_step(lambda y, t: (y - t) ** 2)
    mine = [w for w in record if "uses gradients from backward()" in str(w.message)]
    assert len(mine) == 1
    assert mine[0].filename == __file__  # the line of the update, not the package's
    message = str(mine[0].message)
    assert "(20, 1)" in message and "20 times" in message
    assert "F.mean_squared_error(y, t)" in message and "F.mean(loss)" in message
    # what it warns about: the sum of the 20 squared errors is 20 times the mean's gradient
    np.testing.assert_allclose(summed_step, 20 * mean_step, rtol=1e-3)  # float32 weights


def test_an_unreduced_loss_warns_with_a_loss_scale_and_with_adam_too():
    x, t = _data()
    model, optimizer = _model_and_optimizer(optimizers.Adam)
    with pytest.warns(RuntimeWarning, match=_SUMMED):
        loss = (model(x) - t) ** 2
        loss.backward(loss_scale=8)
        optimizer.update()


def test_the_warning_comes_once_per_backward():
    x, t = _data()
    model, optimizer = _model_and_optimizer(optimizers.SGD, 0.1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            model.cleargrads()
            ((model(x) - t) ** 2).backward()
            optimizer.update()
        optimizer.update()  # again without a backward: that warning only, not this one again
    summed = [w for w in record if "uses gradients from backward()" in str(w.message)]
    repeated = [w for w in record if "got the very gradients" in str(w.message)]
    assert len(summed) == 3 and len(repeated) == 1


@pytest.mark.parametrize("case", ["mean", "told", "one_element", "no_update", "scalar_after",
                                  "sum"])
def test_no_false_alarm(case):
    x, t = _data()
    model, optimizer = _model_and_optimizer(optimizers.SGD, 0.1)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", _SUMMED)
        y = model(x)
        model.cleargrads()
        if case == "mean":
            F.mean_squared_error(y, t).backward()
        elif case == "told":  # an explicit seed is the learner's choice
            ((y - t) ** 2).backward(gradient=np.full(y.shape, 1 / len(x)))
        elif case == "one_element":  # a (1, 1) loss is one number: ones is the right seed
            F.sum(F.mean_squared_error(y, t), axis=None, keepdims=True).backward()
        elif case == "no_update":  # an elementwise backward outside training: no update follows
            v = Variable(np.linspace(0, 1, 5))
            F.sin(v).backward()
            np.testing.assert_allclose(v.grad.data, np.cos(v.data))
            return
        elif case == "scalar_after":  # a look at the elementwise gradients, then the real loss
            y.backward(retain_graph=True)
            model.cleargrads()
            F.mean_squared_error(y, t).backward()
        else:
            F.sum((y - t) ** 2).backward()
        optimizer.update()


# --- 2. one epoch iterator kept for every epoch --------------------------------------------------

def _epoch_batches(loader, keep_iterator, epochs=3):
    """The number of batches each epoch of a loop saw."""
    it = iter(loader)
    seen = []
    for _ in range(epochs):
        batches = it if keep_iterator else loader
        seen.append(sum(1 for _ in batches))
    return seen


@pytest.mark.parametrize("make", [lambda: DataLoader(Spiral(), 30),
                                  lambda: SeqDataLoader(SinCurve(), 10)],
                         ids=["DataLoader", "SeqDataLoader"])
def test_a_spent_epoch_iterator_looped_again_warns(make):
    loader = make()
    n = len(loader)
    with pytest.warns(RuntimeWarning, match=_SPENT) as record:
        seen = _epoch_batches(loader, keep_iterator=True)
    assert seen == [n, 0, 0]  # what it warns about: the later epochs train on nothing
    mine = [w for w in record if _SPENT in str(w.message)]
    assert len(mine) == 2  # one per empty epoch
    assert all(w.filename == __file__ for w in mine)
    assert "for x, t in loader" in str(mine[0].message)


def test_epochs_over_the_loader_and_a_resumed_iterator_stay_quiet():
    loader = DataLoader(Spiral(), 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _epoch_batches(loader, keep_iterator=False) == [10, 10, 10]
        it = iter(loader)
        first = [batch for _, batch in zip(range(4), it)]  # a loop left half way ...
        rest = list(it)  # ... and finished by another: one epoch, read once
        assert len(first) + len(rest) == 10
        with pytest.raises(StopIteration):  # an iterator's end is still the end
            next(it)


# --- 3. an assignment to a name the optimizer does not have --------------------------------------

@pytest.mark.parametrize("cls, name, value, says", [
    (optimizers.SGD, "alpha", 0.01, "alpha is a setting of Adam"),
    (optimizers.SGD, "momentum", 0.9, "MomentumSGD(lr=0.01, momentum=0.9)"),
    (optimizers.Adam, "eps_", 1e-6, "alpha, beta1, beta2, eps"),
    (optimizers.Adam, "betas", (0.9, 0.99), "beta1=0.9, beta2=0.99"),
    (optimizers.MomentumSGD, "learning_rate", 0.1, "are lr, momentum"),
    (optimizers.SGD, "weight_decay", 1e-4, "add_hook(WeightDecay(0.0001))"),
    (optimizers.AdaDelta, "alpha", 1.0, "are rho, eps"),
])
def test_a_setting_the_optimizer_does_not_have_is_refused(cls, name, value, says):
    optimizer = cls()
    with pytest.raises(AttributeError, match="has no setting") as error:
        setattr(optimizer, name, value)
    assert says in str(error.value)
    assert name not in vars(optimizer)  # nothing was made that no update reads


def test_the_real_settings_stay_settable_while_training():
    x, t = _data()
    steps = {}
    for halve in (False, True):
        model, optimizer = _model_and_optimizer(optimizers.MomentumSGD, 0.1)
        for i in range(4):
            if halve and i == 2:
                optimizer.lr *= 0.5  # a schedule
                optimizer.momentum = 0.5
            model.cleargrads()
            F.mean_squared_error(model(x), t).backward()
            optimizer.update()
        steps[halve] = model.l0.W.data.copy()
    assert not np.allclose(steps[False], steps[True])
    adam = optimizers.Adam()
    adam.alpha *= 0.5
    adam.eps = 1e-6
    adam._note = "mine"  # a name of one's own starts with _
    assert (adam.alpha, adam.eps, adam._note) == (0.0005, 1e-6, "mine")
    assert copy.deepcopy(adam).alpha == 0.0005 and pickle.loads(pickle.dumps(adam)).eps == 1e-6


def test_a_subclass_makes_its_own_attributes_in_its_methods():
    class Nesterov(optimizers.Optimizer):  # a learner's optimizer, without _settings
        def __init__(self, lr=0.1, momentum=0.9):
            super().__init__()
            self.lr, self.momentum = lr, momentum

        def update_one(self, param):
            if not hasattr(self, "vs"):  # state made on the first update
                self.vs = {}
            v = self.vs.setdefault(id(param), np.zeros_like(param.data))
            v *= self.momentum
            v -= self.lr * param.grad.data
            param.data += self.momentum * v - self.lr * param.grad.data

    x, t = _data()
    model, optimizer = _model_and_optimizer(Nesterov)
    F.mean_squared_error(model(x), t).backward()
    optimizer.update()
    optimizer.lr = 0.05
    assert len(optimizer.vs) == 4
    with pytest.raises(AttributeError, match="The settings of Nesterov are lr, momentum, vs"):
        optimizer.mometum = 0.5
