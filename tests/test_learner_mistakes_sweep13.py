"""Thirteenth sweep: learner mistakes of Stages 4-6 that gave wrong numbers without a word.

* ``loss.backward(loss_scale=S)`` followed by step 46's update written by hand
  (``p.data -= lr * p.grad.data``): only ``optimizer.update()`` divides the scale out, so each
  step went ``S`` times too far. Now step 67's ``.data`` setter warns when a parameter that
  still carries a scale is changed.
* a recurrent model fed by a shuffling ``DataLoader`` (``DataLoader(SinCurve(), 30)`` where
  ``SeqDataLoader`` is meant): the state carried from one batch to the next linked unrelated
  points. Now step 61's ``_check_batch`` warns when a kept state meets the very batch a
  shuffling loader just handed out.
* ``model.reset_state()`` forgotten between epochs: the state from the end of the series was
  carried into its start. The same check warns when a kept state meets the first batch of an
  epoch.
"""

import gc
import re
import warnings
import weakref
from collections import deque

import numpy as np
import pytest

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import cuda
from dezero_like import optimizers as O
from dezero_like.dataloaders import DataLoader
from dezero_like.datasets_seq import SeqDataLoader, SinCurve
from dezero_like.layers_conv import LSTM, RNN
from dezero_like.models import MLP, Model


def _shown(run, *args, **kwargs):
    """The warnings ``run`` shows under Python's default filter (once per message and line)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        run(*args, **kwargs)
    return record


# --- step 67: a hand-written update of a scaled gradient ---------------------------------------


def _scaled_grads(scale):
    np.random.seed(0)
    model = MLP((4, 1))
    rng = np.random.default_rng(0)
    x, t = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))
    F.mean_squared_error(model(x), t).backward(loss_scale=scale)
    return model


def _hand_update(model, lr=0.1):
    for p in model.params():
        p.data -= lr * p.grad.data  # step 46's loop


def test_a_hand_written_update_of_a_scaled_gradient_warns_once_with_the_fix():
    plain = _scaled_grads(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _hand_update(plain)  # no scale: the loop of step 46 stays quiet
    scaled = _scaled_grads(1024.0)
    before = [p.data.copy() for p in scaled.params()]
    record = _shown(_hand_update, scaled)
    assert len(record) == 1  # one message for the whole loop, not one per parameter
    assert record[0].category is RuntimeWarning and record[0].filename == __file__  # p.data -=
    assert re.fullmatch(
        r"a Parameter's data changed while its gradient is still multiplied by loss_scale=1024 "
        r"\(backward\(loss_scale=1024\)\): an update written by hand with p\.grad steps 1024 "
        r"times too far\. Call optimizer\.update\(\), which divides the scale out first; or "
        r"divide it out yourself before the update: p\.grad = p\.grad / p\.loss_scale; "
        r"p\.loss_scale = None", str(record[0].message))
    for p, q, old in zip(scaled.params(), plain.params(), before):  # what it warns about
        np.testing.assert_allclose(p.data - old, 1024 * (q.data - old), rtol=1e-3)  # float32


def test_the_fix_the_message_gives_and_the_optimizer_step_as_unscaled_and_stay_quiet():
    plain = _scaled_grads(None)
    _hand_update(plain)
    fixed = _scaled_grads(1024.0)
    by_optimizer = _scaled_grads(1024.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in fixed.params():  # the message's fix, written as it says
            p.grad = p.grad / p.loss_scale
            p.loss_scale = None
        _hand_update(fixed)
        O.SGD(lr=0.1).setup(by_optimizer).update()
    for p, q, r in zip(fixed.params(), by_optimizer.params(), plain.params()):
        np.testing.assert_allclose(p.data, r.data, rtol=1e-12)
        np.testing.assert_allclose(q.data, r.data, rtol=1e-12)


def test_the_package_loading_weights_over_a_skipped_scaled_step_stays_quiet(tmp_path):
    # a dynamic loss scaler skips the update when the scaled gradients overflow (step 67's
    # exercise), so the parameters still carry the scale; restoring a checkpoint then is no
    # update by hand, and neither is moving the model between devices
    saved = _scaled_grads(None)
    saved.save_weights(tmp_path / "w.npz")
    skipped = _scaled_grads(2.0**16)
    next(iter(skipped.params())).grad.data[...] = np.inf  # as if float16 had overflowed
    with pytest.warns(RuntimeWarning, match=r"update\(\) skipped"):
        O.SGD(lr=0.1).setup(skipped).update()  # skipped: the gradients keep their scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skipped.load_weights(tmp_path / "w.npz")
        skipped.to_cpu()
    for p, q in zip(skipped.params(), saved.params()):
        np.testing.assert_array_equal(p.data, q.data)
    assert _shown(_hand_update, skipped)  # the scale is still there: a hand update warns
    by_hand = _scaled_grads(1024.0)
    optimizer = O.SGD(lr=0.1).setup(by_hand)
    record = _shown(lambda: [optimizer.update_one(p) for p in by_hand.params()])
    assert [(r.category, r.filename) for r in record] == [(RuntimeWarning, __file__)]  # the
    # division skipped, shown at the line that called update_one


# --- step 61: a recurrent state carried into a batch that does not follow the last one -------


class _Forecaster(Model):
    def __init__(self, recurrent):
        super().__init__()
        self.rnn = recurrent(5)
        self.fc = L.Linear(1)

    def forward(self, x):
        return self.fc(self.rnn(x))


def _epochs(model, loader, epochs=2, reset=True):
    """The loop of step 62: truncated every 5 batches; the losses of the last epoch."""
    optimizer = O.Adam(0.01).setup(model)
    for _ in range(epochs):
        if reset:
            model.reset_state()
        loss, count = 0, 0
        for x, t in loader:
            loss = loss + F.mean_squared_error(model(x), t)
            count += 1
            if count % 5 == 0 or count == len(loader):
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                optimizer.update()
                loss = 0
    return model


def _series():
    return SinCurve(train=True, num_data=101)  # 100 (value, next value) pairs


@pytest.mark.parametrize("recurrent", [RNN, LSTM])
def test_a_shuffling_loader_into_a_carried_state_warns_and_names_seq_data_loader(recurrent):
    np.random.seed(0)
    loader = DataLoader(_series(), 10)  # a training set: shuffled
    record = _shown(_epochs, _Forecaster(recurrent), loader, epochs=1)
    assert len(record) == 1  # once: the message does not change from batch to batch
    assert record[0].filename == __file__  # the model's forward
    assert re.match(recurrent.__name__ + r" carries its state into a batch that a shuffling "
                    r"DataLoader just handed out: its rows are not the next time steps.*use "
                    r"SeqDataLoader\(dataset, batch_size\)", str(record[0].message))


@pytest.mark.parametrize("recurrent", [RNN, LSTM])
def test_a_state_carried_into_a_new_epoch_warns_to_reset(recurrent):
    np.random.seed(0)
    loader = SeqDataLoader(_series(), 10)
    record = _shown(_epochs, _Forecaster(recurrent), loader, epochs=3, reset=False)
    assert len(record) == 1 and record[0].filename == __file__  # epochs 2 and 3, one line
    assert re.match(recurrent.__name__ + r" carries its state into the first batch of a new "
                    r"epoch of SeqDataLoader: the series starts again.*Call "
                    r"model\.reset_state\(\) at the start of each epoch", str(record[0].message))
    assert _shown(_epochs, _Forecaster(recurrent), loader, epochs=3) == []  # reset: quiet


def test_the_books_next_loader_form_is_watched_too():
    np.random.seed(0)
    model = _Forecaster(RNN)
    loader = DataLoader(_series(), 10, shuffle=False)
    model(next(loader)[0])
    model(next(loader)[0])  # in order, not the first: quiet
    with pytest.warns(UserWarning, match="a batch that a shuffling DataLoader"):
        model(next(iter(DataLoader(_series(), 10, shuffle=True)))[0])


def test_loops_that_reset_or_keep_the_order_stay_quiet():
    np.random.seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _epochs(_Forecaster(LSTM), SeqDataLoader(_series(), 10), epochs=3)  # step 62's loop
        model = _Forecaster(RNN)
        for x, _ in DataLoader(_series(), 10):  # shuffled examples that each stand alone
            model.reset_state()
            model(x)
        _epochs(_Forecaster(RNN), DataLoader(_series(), 10, shuffle=False), epochs=1)
        model = _Forecaster(LSTM)  # a batch of whole sequences, read one time step at a time
        for x, _ in DataLoader([(np.ones((4, 1)), 0.0)] * 6, 3):
            model.reset_state()
            for step in range(x.shape[1]):
                model(x[:, step])


def test_a_loader_keeps_no_batch_alive_once_the_loop_is_done():
    # the loaders note the batch they hand out for the check above; a GPU batch noted for good
    # would hold its device memory after training, until another loader handed one out
    np.random.seed(0)
    for loader in (DataLoader(_series(), 10), SeqDataLoader(_series(), 10)):
        (x, t), = deque(loader, maxlen=1)  # a whole epoch, and its last batch
        gone = weakref.ref(x)
        del x, t
        gc.collect()
        assert gone() is None, f"{type(loader).__name__} kept its last batch alive"
        x, _ = next(loader)  # the book's form
        gone = weakref.ref(x)
        del x
        gc.collect()
        assert gone() is None, f"{type(loader).__name__}'s next() kept its batch alive"


def _on_gpu(recurrent):
    model = _Forecaster(recurrent)
    model.to_gpu()
    return model


@pytest.mark.gpu
@pytest.mark.skipif(not cuda.gpu_available(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("recurrent", [RNN, LSTM])
def test_the_loader_checks_see_gpu_batches_too(recurrent):
    np.random.seed(0)
    shuffled = _shown(_epochs, _on_gpu(recurrent), DataLoader(_series(), 10, gpu=True), epochs=1)
    restarted = _shown(_epochs, _on_gpu(recurrent), SeqDataLoader(_series(), 10, gpu=True),
                       epochs=2, reset=False)
    name = recurrent.__name__
    assert {str(r.message).split(":")[0] for r in shuffled} == {
        f"{name} carries its state into a batch that a shuffling DataLoader just handed out"}
    assert {str(r.message).split(":")[0] for r in restarted} == {
        f"{name} carries its state into the first batch of a new epoch of SeqDataLoader"}
    assert _shown(_epochs, _on_gpu(recurrent), SeqDataLoader(_series(), 10, gpu=True),
                  epochs=2) == []


def test_dropout_names_a_bool_input_and_refuses_a_bool_ratio():
    """A bool array is no integer, and ``F.dropout(x, True)`` passes a mode where the ratio goes
    (True would be a ratio of 1: every element dropped, silently)."""
    with pytest.raises(TypeError, match=r"dropout of a bool input \(dtype bool\)"):
        F.dropout(np.array([True, False]), 0.5)
    for mode in (True, np.True_):
        with pytest.raises(TypeError, match="a bool: the mode is no argument here"):
            F.dropout(np.ones(3), mode)
    assert F.dropout(np.ones(3), 1.0).data.tolist() == [0.0, 0.0, 0.0]  # a real ratio of 1
