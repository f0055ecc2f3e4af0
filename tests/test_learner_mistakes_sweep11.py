"""Eleventh sweep: learner mistakes that gave wrong numbers without a word, or an error that
pointed at the wrong cause.

* recurrent layers kept in a plain list (``self.rnns = [L.LSTM(10), L.LSTM(10)]``, PyTorch's
  ``ModuleList`` habit): ``model.reset_state()`` did not reach them, so they carried the last
  sequence's state into the next without a word, and a new batch size was then refused with
  "call reset_state()", which had been called; ``model.to_gpu()`` left them on the CPU and the
  first forward said "model.to_gpu() for a model", which had been called too. ``setup`` warned
  about the list, but saying nothing of either.
"""

import warnings

import numpy as np
import pytest

import dezero_like.layers as L
from dezero_like import cuda
from dezero_like.layers_conv import LSTM, RNN
from dezero_like.models import Model, Sequential

# --- steps 47, 54 and 61: layers kept in a list ------------------------------------------------

class _ListedRNNs(Model):
    """Two recurrent layers kept in a list, PyTorch's ModuleList habit, and a registered head."""

    def __init__(self, layer=LSTM):
        super().__init__()
        self.rnns = [layer(4), layer(4)]
        self.fc = L.Linear(1)

    def forward(self, x):
        for rnn in self.rnns:
            x = rnn(x)
        return self.fc(x)


@pytest.mark.parametrize("layer", [LSTM, RNN])
def test_reset_state_names_recurrent_layers_kept_in_a_list_that_it_does_not_reach(layer):
    np.random.seed(0)
    model = _ListedRNNs(layer)
    model(np.zeros((1, 1), np.float32))
    with pytest.warns(UserWarning, match=r"_ListedRNNs\.rnns is a list holding layers .*"
                      r"reset_state\(\) does not reset them either, so they carry the state of "
                      r"the last sequence into the next.*own attribute") as record:
        model.reset_state()
    assert [w.filename for w in record] == [__file__]  # the line that called reset_state
    # what it says is so: the listed layers kept their state (the package does not guess)
    assert model.rnns[0].h is not None
    # and the error that follows a new batch size now comes after that warning, not alone
    with pytest.raises(ValueError, match="call reset_state"):
        model(np.zeros((3, 1), np.float32))


def test_reset_state_of_registered_recurrent_layers_stays_quiet_and_resets_them():
    np.random.seed(0)

    class Registered(Model):  # the same layers in attributes, and also in a list (the book's way)
        def __init__(self):
            super().__init__()
            self.r0, self.r1 = LSTM(4), LSTM(4)
            self.rnns = [self.r0, self.r1]

        def forward(self, x):
            for rnn in self.rnns:
                x = rnn(x)
            return x

    for model in (Registered(), Sequential(LSTM(4), RNN(3), L.Linear(1))):
        model(np.zeros((1, 1), np.float32))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model.reset_state()
        assert all(getattr(layer, "h", None) is None for layer in model._walk_layers())
        model(np.zeros((3, 1), np.float32))  # a new batch size after a reset


def test_a_model_whose_own_reset_state_walks_its_list_stays_quiet():
    np.random.seed(0)

    class OwnReset(_ListedRNNs):
        def reset_state(self):  # a model that resets its list itself: nothing is missed
            for rnn in self.rnns:
                rnn.reset_state()

    model = OwnReset()
    model(np.zeros((1, 1), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.reset_state()
    assert model.rnns[0].h is None


def test_moving_a_model_names_the_layers_kept_in_a_list_that_stay_behind():
    np.random.seed(0)
    model = _ListedRNNs(RNN)
    with pytest.warns(UserWarning, match=r"_ListedRNNs\.rnns is a list holding layers .*"
                      r"to_cpu\(\) does not move them") as record:
        model.to_cpu()
    assert [w.filename for w in record] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Sequential(RNN(3), L.Linear(1)).to_cpu()


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="needs CuPy and a CUDA GPU")
def test_to_gpu_names_the_listed_layers_it_leaves_on_the_cpu():
    np.random.seed(0)
    model = _ListedRNNs(RNN)
    model(np.zeros((1, 1), np.float32))  # weights made on the CPU
    for rnn in model.rnns:  # no state with a graph may move (reset each, as the warning says)
        rnn.reset_state()
    with pytest.warns(UserWarning, match=r"rnns is a list .*to_gpu\(\) does not move them"):
        model.to_gpu()
    assert isinstance(model.rnns[0].x2h.W.data, np.ndarray)  # what it says is so
    assert not isinstance(model.fc.W.data, np.ndarray)


def test_setup_still_names_a_plain_variable_weight_and_the_list():
    from dezero_like import Variable
    from dezero_like import optimizers as O

    model = _ListedRNNs()
    model.scale = Variable(np.ones(1))  # a forgotten Parameter
    with pytest.warns(UserWarning) as record:
        O.SGD().setup(model)
    messages = [str(w.message) for w in record]
    assert any("scale is a Variable, not a Parameter" in m for m in messages)
    assert any("rnns is a list" in m and "reset_state" not in m for m in messages)

