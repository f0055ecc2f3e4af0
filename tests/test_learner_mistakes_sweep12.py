"""Twelfth sweep: learner mistakes that gave wrong numbers without a word.

* a ``forward`` written with NumPy's in-place habits (``x[x < 0] = 0; return x``,
  ``x *= 2``) changed the arrays of its input Variables: a parameter's values moved on every
  call, and an earlier function that keeps its output for backward (``tanh``, ``exp``)
  computed its gradient from the changed array. Step 46 guarded ``backward`` this way; now
  ``forward`` is guarded too.
* a recurrent model trained on one sequence (batch 1, as in step 61) and then asked to predict
  another under ``no_grad()`` without ``model.reset_state()``: the batch sizes agree, so nothing
  was refused, and the first predictions started from the state at the end of the training
  sequence. Now a warning says to reset.
* a loss computed from ``y.data`` (an array) refused ``backward()`` with a list of causes that
  did not include it; the message now names ``.data``.
* a forward that went on from ``h.data`` (``F.relu(h.data)``, ``Variable(h.data)``) cut the
  layers before it off the loss, and a layer made in ``__init__`` but never called in ``forward``
  was no part of the network: the rest trained, those parameters never changed, no word. Now
  ``update()`` warns once about parameters that got no gradient in the first three updates.
"""

import copy
import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Function, Parameter, Variable
from dezero_like import optimizers as O
from dezero_like.layers_conv import LSTM, RNN, BatchNorm
from dezero_like.models import MLP, Model

# --- step 46: a forward that writes into its input ----------------------------------------------


class InPlaceDouble(Function):
    """y = 2x, written in place."""

    def forward(self, x):
        x *= 2
        return x

    def backward(self, gy):
        return gy * 2


class InPlaceReLU(Function):
    """The NumPy habit: zero the negatives of the input and hand it back."""

    def forward(self, x):
        self.mask = x > 0
        x[~self.mask] = 0
        return x

    def backward(self, gy):
        return gy * self.mask


class Double(Function):
    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2


_MESSAGE = (r"InPlace\w+\.forward wrote into an input array \(.*read-only\)\. The arrays handed "
            r"to forward are the input Variables' data: a parameter's values, or an array an "
            r"earlier function keeps for its backward.*Make a new array: y = x \* mask")


def test_a_forward_that_doubles_tanhs_output_in_place_is_stopped_before_a_wrong_gradient():
    """Before: tanh's backward read the doubled output, 1 - (2 tanh x)^2 in place of
    1 - tanh(x)^2, and x.grad was [2 - 8 tanh(x)^2] with no error."""
    x_data = np.array([-1.0, 0.5, 2.0])
    x = Variable(x_data.copy())
    h = F.tanh(x)
    with pytest.raises(ValueError, match=_MESSAGE):
        InPlaceDouble()(h)
    np.testing.assert_array_equal(h.data, np.tanh(x_data))  # tanh's output is as it was
    assert h.data.flags.writeable  # and writeable again
    F.sum(Double()(h)).backward()
    np.testing.assert_allclose(x.grad.data, 2 * (1 - np.tanh(x_data) ** 2))


def test_a_forward_that_zeroes_a_parameter_in_place_leaves_it_unchanged():
    """Before: every call of InPlaceReLU on W set W's negative weights to 0, W = [0, 2]."""
    W = Parameter(np.array([-1.0, 2.0]))
    for _ in range(2):
        with pytest.raises(ValueError, match=_MESSAGE):
            InPlaceReLU()(W)
    np.testing.assert_array_equal(W.data, [-1.0, 2.0])
    assert W.data.flags.writeable
    W.data -= 0.5  # an optimizer's step still writes into it
    np.testing.assert_array_equal(W.data, [-1.5, 1.5])


def test_forwards_that_make_new_arrays_views_or_read_only_outputs_are_unchanged():
    class Flat(Function):  # a view of the input
        def forward(self, x):
            return x.reshape(-1)

        def backward(self, gy):
            return F.reshape(gy, self.inputs[0].shape)

    class Wide(Function):  # a broadcast view: read-only for its own reason
        def forward(self, x):
            return np.broadcast_to(x, (2,) + x.shape)

        def backward(self, gy):
            return F.sum(gy, axis=0)

    class Split(Function):  # two outputs, both views of the input
        def forward(self, x):
            return x[:1], x[1:]

        def backward(self, g0, g1):
            return F.reshape(g0, (1,)) * 0 + 1  # not used by the test

    x = Variable(np.arange(6.0).reshape(2, 3))
    y = Flat()(x)
    assert y.shape == (6,) and y.data.flags.writeable and x.data.flags.writeable
    y.backward()
    np.testing.assert_array_equal(x.grad.data, np.ones((2, 3)))
    wide = Wide()(Variable(np.arange(3.0)))
    assert wide.shape == (2, 3) and not wide.data.flags.writeable
    a, b = Split()(Variable(np.arange(3.0)))
    assert a.data.flags.writeable and b.data.flags.writeable
    fixed = np.arange(3.0)
    fixed.flags.writeable = False  # read-only before: left so
    np.testing.assert_array_equal(Double()(Variable(fixed)).data, [0.0, 2.0, 4.0])
    assert not fixed.flags.writeable


def test_only_functions_written_outside_the_package_have_their_forward_guarded_once():
    assert not getattr(F.Tanh.forward, "_guarded", False)  # the package pays nothing
    assert InPlaceReLU.forward._guarded and InPlaceReLU.forward.__name__ == "forward"

    class Child(Double):  # inherits the guarded forward: not wrapped twice
        pass

    assert Child.forward is Double.forward

    class Outer(Function):  # a guarded forward that calls a guarded one: said once
        def forward(self, x):
            return InPlaceDouble().forward(x)

    with pytest.raises(ValueError) as error:
        Outer()(Variable(np.ones(2)))
    assert str(error.value).count("wrote into an input array") == 1
    assert str(error.value).startswith("Outer.forward")  # whose input it was


# --- step 61: a state kept from training, used by a prediction under no_grad -------------------


class _Forecaster(Model):
    def __init__(self, recurrent):
        super().__init__()
        self.rnn = recurrent(6)
        self.fc = L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def _trained(recurrent):
    """Step 61's loop, shortened: one sequence, batch 1, truncated every 10 steps."""
    np.random.seed(0)
    model = _Forecaster(recurrent)
    optimizer = O.Adam(0.01).setup(model)
    xs = np.sin(np.linspace(0, 6, 41)).reshape(-1, 1, 1)
    loss = 0
    for i, (x, t) in enumerate(zip(xs[:-1], xs[1:])):
        loss = loss + F.mean_squared_error(model(x), t)
        if (i + 1) % 10 == 0:
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()
            loss = 0
    return model


def _predict(model, n=5):
    xs = np.cos(np.linspace(0, 2, n)).reshape(-1, 1, 1)
    with dz.no_grad():
        return np.array([model(x).data.item() for x in xs])


@pytest.mark.parametrize("recurrent", [RNN, LSTM])
def test_a_prediction_that_goes_on_from_the_training_state_warns_once(recurrent):
    model = _trained(recurrent)
    fresh = copy.deepcopy(model)
    fresh.reset_state()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = _predict(fresh)  # reset first: quiet
        _predict(fresh)  # a second prediction goes on from a no_grad state: quiet too
    name = recurrent.__name__
    with pytest.warns(UserWarning, match=name + r" starts from the state it kept from training "
                      r".*under no_grad\(\).*Call model.reset_state\(\) before a new "
                      r"sequence") as record:
        forgot = _predict(model)  # reset_state() forgotten: the same batch size, no error
    assert len(record) == 1  # once: the states made under no_grad do not require grad
    assert record[0].filename == __file__  # the model's forward, the first line outside
    assert not np.allclose(forgot[0], expected[0])  # what it warns about: another prediction


def test_training_going_on_from_its_own_state_stays_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _trained(LSTM)  # the state is carried across the truncated windows
        model(np.ones((1, 1)))  # and into more training


# --- step 67: a loss computed from y.data ----------------------------------------------------


def test_backward_of_a_loss_computed_from_data_names_data():
    np.random.seed(0)
    model = MLP((3, 1))
    y = model(np.ones((2, 4)))
    loss = F.mean_squared_error(y.data, np.zeros((2, 1)))  # .data: the graph stops here
    with pytest.raises(RuntimeError, match=r"does not require grad.*from arrays only \(a loss "
                       r"of y\.data, not of the Variable y: \.data is an array, outside the "
                       r"graph"):
        loss.backward()
    F.mean_squared_error(y, np.zeros((2, 1))).backward()  # the Variable: every layer learns
    assert all(p.grad is not None for p in model.params())


# --- step 67: parameters that never get a gradient -------------------------------------------


class _CutByData(Model):
    """A forward that goes on from h.data (l1 is cut off the loss), or, with ``unused``, a
    layer l3 made in __init__ and never called."""

    def __init__(self, unused=False):
        super().__init__()
        self.unused = unused
        self.l1 = L.Linear(5)
        self.l2 = L.Linear(1)
        if unused:
            self.l3 = L.Linear(1)

    def forward(self, x):
        h = self.l1(x)
        return self.l2(F.relu(h if self.unused else h.data))


def _fit(model, updates=5, hooks=()):
    np.random.seed(0)
    optimizer = O.SGD(0.1).setup(model)
    for hook in hooks:
        optimizer.add_hook(hook)
    x, t = np.random.rand(8, 3), np.random.rand(8, 1)
    for _ in range(updates):
        loss = F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return optimizer


@pytest.mark.parametrize("unused, names", [(False, r"l1/W, l1/b"), (True, r"l3/b")],
                         ids=["cut by .data", "never called"])
def test_parameters_without_a_gradient_in_the_first_updates_are_named_once(unused, names):
    model = _CutByData(unused)
    model(np.ones((1, 3)))
    before = {name: p.data.copy() for name, p in model._flatten_params().items()
              if p.data is not None}
    with pytest.warns(RuntimeWarning, match=r"update\(\): " + names + r" got no gradient in "
                      r"any of the first 3 updates, so they have not changed while the rest of "
                      r"the _CutByData learns.*\.data.*not called in forward.*"
                      r"FreezeParam\(layer\)") as record:
        _fit(model)
    assert len(record) == 1 and record[0].filename == __file__  # once, at the update() line
    first = names.split(",")[0]
    np.testing.assert_array_equal(model._flatten_params()[first].data, before[first])


def test_batch_norm_statistics_frozen_layers_and_a_first_rnn_step_stay_quiet():
    class Normed(Model):
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(4)
            self.bn = BatchNorm()
            self.l2 = L.Linear(1)

        def forward(self, x):
            return self.l2(F.relu(self.bn(self.l1(x))))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(MLP((5, 1)))
        _fit(Normed())  # avg_mean and avg_var never get a gradient
        cut = _CutByData()
        _fit(cut, hooks=[O.FreezeParam(cut.l1)])  # kept fixed, and said so
        # an update after every time step: h2h gets no gradient in the first one only
        np.random.seed(0)
        rnn = _Forecaster(RNN)
        optimizer = O.SGD(0.01).setup(rnn)
        for x in np.sin(np.linspace(0, 3, 6)).reshape(-1, 1, 1):
            loss = F.sum(rnn(x) ** 2)
            rnn.cleargrads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()


# ---- FreezeParam of another model ------------------------------------------------------------

def test_freezeparam_of_another_models_layer_is_refused_and_the_models_own_is_taken():
    """``FreezeParam(original.l1)`` added to the optimizer of ``copy.deepcopy(original)`` froze
    nothing, silently: the copy's layer has Parameters of its own. It is refused when the
    optimizer already has its model, and warned about when setup() comes after add_hook()."""
    import copy

    import dezero_like.models as M
    from dezero_like import optimizers

    original = M.MLP((4, 2))
    original(np.zeros((1, 3)))
    model = copy.deepcopy(original)
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    with pytest.raises(ValueError, match=r"FreezeParam holds 2 parameters, and none of them "
                                         r"belongs to the MLP this optimizer trains"):
        optimizer.add_hook(optimizers.FreezeParam(original.l0))
    assert optimizer.hooks == []  # refused: nothing was added
    optimizer.add_hook(optimizers.FreezeParam(model.l0))  # the model's own layer
    before = model.l0.W.data.copy()
    model.cleargrads()
    F.sum(model(np.ones((2, 3)))).backward()
    optimizer.update()
    np.testing.assert_array_equal(model.l0.W.data, before)

    later = optimizers.SGD(lr=0.1)
    later.add_hook(optimizers.FreezeParam(original.l0))  # no model yet: nothing to compare
    with pytest.warns(UserWarning, match="none of them belongs to the MLP"):
        later.setup(model)
