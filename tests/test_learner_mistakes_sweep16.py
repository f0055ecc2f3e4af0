"""Sixteenth sweep: learner mistakes of the training loops (steps 47-67) that gave wrong numbers
without a word.

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
from dezero_like import DataLoader, SeqDataLoader, optimizers
from dezero_like.datasets import SinCurve, Spiral
from dezero_like.models import MLP

_SPENT = "this loop runs over an epoch of a DataLoader that was read to its end already"


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 1))
    return x, np.sin(2 * np.pi * x)


def _model_and_optimizer(cls=optimizers.SGD, *args):
    np.random.seed(0)
    model = MLP((10, 1))
    return model, cls(*args).setup(model)


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
