"""Eleventh sweep: learner mistakes that gave wrong numbers without a word, or an error that
pointed at the wrong cause.

* recurrent layers kept in a plain list (``self.rnns = [L.LSTM(10), L.LSTM(10)]``, PyTorch's
  ``ModuleList`` habit): ``model.reset_state()`` did not reach them, so they carried the last
  sequence's state into the next without a word, and a new batch size was then refused with
  "call reset_state()", which had been called; ``model.to_gpu()`` left them on the CPU and the
  first forward said "model.to_gpu() for a model", which had been called too. ``setup`` warned
  about the list, but saying nothing of either.
* ``dz.test_mode()`` alone on a line, written as PyTorch's ``model.eval()`` is (and
  ``dz.no_grad()`` the same way): the object was thrown away unused, so the evaluation that
  followed ran with dropout still dropping, without a word.
* ``Variable(v)`` or ``Parameter(v)`` of a Variable ``v`` (PyTorch's ``nn.Parameter(tensor)``)
  was told to "use Variable(np.array(...))", which fails on a Variable too;
* an optimizer set up with one model and a loss computed by another: ``update()`` warned that no
  parameter had a gradient and told to call ``loss.backward()``, which had been called;
* ``params = model.params()`` written once before the epochs of a hand-written update loop: the
  generator ran out in the first epoch and every later loop over it updated nothing, silently.
"""

import contextlib
import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Parameter, Variable, cuda, models
from dezero_like import optimizers as O
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
                      r"reset_state\(\) does not reach them either \(a recurrent layer among "
                      r"them carries the last sequence's state into the next\).*own attribute"
                      ) as record:
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
    model = _ListedRNNs()
    model.scale = Variable(np.ones(1))  # a forgotten Parameter
    with pytest.warns(UserWarning) as record:
        O.SGD().setup(model)
    messages = [str(w.message) for w in record]
    assert any("scale is a Variable, not a Parameter" in m for m in messages)
    assert any("rnns is a list" in m and "reset_state" not in m for m in messages)


# --- step 23: a with-block object called alone on a line -----------------------------------------

@pytest.mark.parametrize("make, call, setting", [
    (lambda: dz.test_mode(), r"dz\.test_mode\(\)", r"Config\.train is still True.*"
     r"model\.eval\(\) is a call"),
    (lambda: dz.no_grad(), r"dz\.no_grad\(\)", r"Config\.enable_backprop is still True"),
    (lambda: dz.using_config("train", False), r"dz\.using_config\('train', False\)",
     r"Config\.train is still True"),
], ids=["test_mode", "no_grad", "using_config"])
def test_a_config_block_made_alone_on_a_line_warns_that_it_changed_nothing(make, call, setting):
    np.random.seed(0)
    with pytest.warns(UserWarning, match=call + r" was made and thrown away without a with "
                      r"statement, so it changed nothing: " + setting) as record:
        make()  # PyTorch's model.eval() habit: a call, then the evaluation
    assert [w.filename for w in record] == [__file__]
    # what it says is so: dropout still drops after it
    assert (F.dropout(np.ones((4, 50))).data == 0).any()


def test_config_blocks_used_by_with_a_decorator_or_an_exit_stack_stay_quiet():
    @dz.no_grad()
    def predict(x):
        return x * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dz.test_mode(), dz.no_grad():
            assert (F.dropout(np.ones((4, 50))).data == 1).all()
        kept = dz.using_config("train", False)  # made first, entered later
        with kept:
            pass
        del kept
        with contextlib.ExitStack() as stack:
            stack.enter_context(dz.no_grad())
            assert (dz.Variable(np.ones(2)) * 2).creator is None
        assert predict(dz.Variable(np.ones(2))).creator is None
        del predict
        with pytest.raises(AttributeError, match="no setting named"):
            dz.using_config("trian", False)  # refused when made: nothing to warn about


# --- steps 23 and 70: a Variable made of a Variable ---------------------------------------------

@pytest.mark.parametrize("kind", [Variable, Parameter])
def test_a_variable_or_parameter_of_a_variable_says_to_use_it_or_its_data(kind):
    v = Variable(np.ones(3))
    with pytest.raises(TypeError, match=r"got Variable; it is a Variable already: use it as it "
                       rf"is \(as_variable\(x\) takes both\), or {kind.__name__}\(v\.data\)"):
        kind(v)
    assert np.array_equal(kind(v.data).data, v.data)  # what it says works
    with pytest.raises(TypeError, match=r"got list; use Variable\(np\.array"):
        kind([1.0, 2.0])


# --- step 47: the loss of another model -----------------------------------------------------------

def test_an_update_without_gradients_names_a_loss_from_another_model():
    np.random.seed(0)
    trained, other = models.MLP((3, 1)), models.MLP((3, 1))
    optimizer = O.SGD(lr=0.1).setup(trained)
    x = np.ones((2, 2))
    trained(x)
    before = [p.data.copy() for p in trained.params()]
    loss = F.sum(other(x))
    other.cleargrads()
    loss.backward()
    with pytest.warns(RuntimeWarning, match=r"no parameter has a gradient.*the loss came from "
                      r"another model than the one given to setup\(\)"):
        optimizer.update()
    assert all(np.array_equal(b, p.data) for b, p in zip(before, trained.params()))


# --- step 45: params() kept and looped over again -------------------------------------------------

def test_a_params_kept_for_a_second_loop_is_refused_with_the_fix():
    np.random.seed(0)
    model = models.MLP((3, 1))
    x, t = np.random.randn(8, 2), np.random.randn(8, 1)
    params = model.params()  # once, before the loop over the epochs
    losses = []
    with pytest.raises(RuntimeError, match=r"this params\(\) has run out: .*Call model\.params\(\) "
                       r"again for each loop, or keep a list: params = list\(model\.params\(\)\)"):
        for _ in range(3):
            loss = F.mean_squared_error(model(x), t)
            losses.append(float(loss.data))
            model.cleargrads()
            loss.backward()
            for p in params:
                p.data -= 0.1 * p.grad.data
    assert len(losses) == 2  # refused at the second epoch's loop, not after silent epochs


def test_params_is_still_an_iterator_that_each_call_gives_afresh():
    np.random.seed(0)
    shared = L.Linear(2, in_size=2)
    model = Sequential(shared, shared, L.Linear(1))
    model(np.ones((1, 2)))
    first = model.params()
    assert next(first) is shared.W  # PyTorch's next(model.parameters()) habit
    assert [p.name for p in first] == ["b", "W", "b"]  # the rest; a tied one only once
    assert len(list(model.params())) == len(list(model.params())) == 4
    assert next(model.params(), None) is not None
    empty = L.Layer().params()
    assert next(empty, None) is None and next(empty, None) is None  # next() after the end
    with pytest.raises(TypeError, match="SGD\\(lr=0.1\\).setup\\(model\\)"):
        O.SGD(model.params(), lr=0.1)  # still recognised as PyTorch's way
    assert len(O.FreezeParam(model.params()).frozen) == 4
