"""Sixteenth sweep: learner mistakes of the training loops (steps 47-67) that gave wrong numbers
without a word.

* an assignment to a name no optimizer reads, ``sgd.momentum = 0.9`` (plain SGD has none),
  ``sgd.alpha = 0.01`` (Adam's name), ``adam.eps_ = 1e-6``: a new attribute, and training went
  on as before. Only ``adam.lr = ...`` was refused. Now any name an optimizer does not have is
  refused from outside its own methods, with the settings it has (step 47); those stay
  settable while training (``optimizer.lr *= 0.5``).
"""

import copy
import pickle

import numpy as np
import pytest

import dezero_like.functions as F
from dezero_like import optimizers
from dezero_like.models import MLP


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((20, 1))
    return x, np.sin(2 * np.pi * x)


def _model_and_optimizer(cls=optimizers.SGD, *args):
    np.random.seed(0)
    model = MLP((10, 1))
    return model, cls(*args).setup(model)


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
