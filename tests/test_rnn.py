"""Recurrent layers, embeddings, truncated BPTT and the time-series loader."""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like import optimizers
from dezero_like.datasets_seq import SeqDataLoader, SinCurve, get_sin_curve
from dezero_like.graph import graph_functions
from dezero_like.models import Model
from dezero_like.utils import gradient_check


def _float64(layer):
    for p in layer.params():
        p.data = p.data.astype(np.float64)
    return layer


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# --------------------------------------------------------------------------- #
# EmbedID
# --------------------------------------------------------------------------- #


def test_embed_id_picks_rows_and_accumulates_repeated_ids():
    np.random.seed(0)
    emb = Lc.EmbedID(5, 3)
    ids = np.array([[1, 3], [1, 1]])
    y = emb(ids)
    assert y.shape == (2, 2, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y.data, emb.W.data[ids])
    y.backward()
    expected = np.zeros((5, 3), np.float32)
    expected[1] = 3  # id 1 used three times
    expected[3] = 1
    np.testing.assert_array_equal(emb.W.grad.data, expected)


@pytest.mark.parametrize("ids", [np.array([0, 2, 2, 4]), np.array([[1, 0], [3, 1]]),
                                 np.array(2)])
def test_gradient_check_embed_id(ids):
    W = np.random.default_rng(1).standard_normal((5, 3))
    w = np.random.default_rng(2).standard_normal(ids.shape + (3,))
    assert gradient_check(lambda v: Fc.embed_id(ids, v) ** 2 * w, W)


def test_embed_id_rejects_bad_ids():
    W = np.zeros((4, 2))
    with pytest.raises(TypeError, match="integer ids"):
        Fc.embed_id(np.array([0.0, 1.0]), W)
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        Fc.embed_id(np.array([0, 4]), W)


# --------------------------------------------------------------------------- #
# RNN and LSTM: values, state, gradients
# --------------------------------------------------------------------------- #


def test_rnn_matches_its_formula_and_keeps_state():
    np.random.seed(1)
    rnn = Lc.RNN(4, in_size=3)
    xs = np.random.default_rng(3).standard_normal((3, 2, 3)).astype(np.float32)
    Wx, b, Wh = rnn.x2h.W.data, rnn.x2h.b.data, rnn.h2h.W.data
    h = None
    for x in xs:
        ours = rnn(x)
        h = np.tanh(x @ Wx + b) if h is None else np.tanh(x @ Wx + b + h @ Wh)
        np.testing.assert_allclose(ours.data, h, rtol=1e-5, atol=1e-6)
    assert rnn.h is ours
    rnn.reset_state()
    assert rnn.h is None
    np.testing.assert_allclose(rnn(xs[0]).data, np.tanh(xs[0] @ Wx + b), rtol=1e-5)


def test_rnn_infers_in_size_on_first_call():
    rnn = Lc.RNN(6)
    y = rnn(np.zeros((2, 5), np.float32))
    assert y.shape == (2, 6) and rnn.x2h.W.shape == (5, 6)


def test_lstm_matches_its_formula():
    np.random.seed(2)
    lstm = Lc.LSTM(3, in_size=2)
    xs = np.random.default_rng(4).standard_normal((4, 5, 2)).astype(np.float32)

    def lin(name, v):
        layer = getattr(lstm, name)
        out = v @ layer.W.data
        return out if layer.b is None else out + layer.b.data

    h = c = None
    for x in xs:
        ours = lstm(x)
        gate = {g: lin(f"x2{g}", x) + (0 if h is None else lin(f"h2{g}", h)) for g in "fiou"}
        f, i, o = (_sigmoid(gate[g]) for g in "fio")
        u = np.tanh(gate["u"])
        c = i * u if c is None else f * c + i * u
        h = o * np.tanh(c)
        np.testing.assert_allclose(ours.data, h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lstm.c.data, c, rtol=1e-5, atol=1e-6)
    assert ours.dtype == np.float32
    lstm.reset_state()
    assert lstm.h is None and lstm.c is None


@pytest.mark.parametrize("cell", [Lc.RNN, Lc.LSTM])
# the check puts a Variable in a weight's place on purpose: its warning is expected
@pytest.mark.filterwarnings("ignore:.*was a Parameter and is now a plain Variable:UserWarning")
def test_gradient_check_through_three_time_steps(cell):
    np.random.seed(3)
    layer = _float64(cell(3, in_size=2))
    xs = np.random.default_rng(5).standard_normal((3, 4, 2))

    def unrolled(x0):
        layer.reset_state()
        h = layer(x0)
        for x in xs[1:]:
            h = layer(x)
        return h * h

    assert gradient_check(unrolled, xs[0])

    # with respect to a recurrent weight that every step shares: put the
    # checked Variable in the layer's place for the duration of the check
    sub = layer.h2h if cell is Lc.RNN else layer.h2f
    W = sub.W

    def by_weight(v):
        sub.W = v
        try:
            return unrolled(xs[0])
        finally:
            sub.W = W

    assert gradient_check(by_weight, W.data)


# --------------------------------------------------------------------------- #
# Truncated BPTT
# --------------------------------------------------------------------------- #


class SeqNet(Model):
    def __init__(self, hidden, cell=Lc.LSTM):
        super().__init__()
        self.rnn = cell(hidden)
        self.fc = L.Linear(1)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def test_unchain_backward_cuts_the_graph_and_keeps_the_values():
    np.random.seed(4)
    rnn = Lc.RNN(3, in_size=1)
    x = np.ones((1, 1), np.float32)
    hs = [rnn(x) for _ in range(5)]
    h = hs[-1]
    before = h.data.copy()
    h.unchain_backward()
    assert h.creator is None
    assert all(earlier.creator is None for earlier in hs[:-1])  # the whole history is cut
    np.testing.assert_array_equal(h.data, before)
    loss = rnn(x).sum()
    loss.backward()  # only one step deep now: the gradient of one step from the kept state
    reference = Lc.RNN(3, in_size=1)
    for name in ("x2h", "h2h"):
        for p, q in zip(getattr(rnn, name).params(), getattr(reference, name).params()):
            q.data = p.data.copy()
    reference.h = dz.Variable(before.copy())  # the state as a constant: one step from it
    reference(x).sum().backward()
    np.testing.assert_allclose(rnn.x2h.W.grad.data, reference.x2h.W.grad.data, rtol=1e-6)
    np.testing.assert_allclose(rnn.h2h.W.grad.data, reference.h2h.W.grad.data, rtol=1e-6)


@pytest.mark.parametrize("cell", [Lc.RNN, Lc.LSTM])
def test_truncated_bptt_runs_several_windows(cell):
    """After backward + unchain_backward, the next window backprops only through itself."""
    np.random.seed(5)
    model = SeqNet(4, cell)
    opt = optimizers.SGD(0.01).setup(model)
    xs = np.random.default_rng(6).standard_normal((12, 2, 1)).astype(np.float32)
    loss = 0
    sizes = []
    for k, x in enumerate(xs, start=1):
        loss = loss + F.mean_squared_error(model(x), x)
        if k % 4 == 0:
            sizes.append(len(graph_functions(loss)))  # the functions behind the loss
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            opt.update()
            loss = 0
    # every window's graph holds its own 4 steps only (the first has no h2h at its first step):
    # without the cut the second and third would also hold the windows before them
    assert len(sizes) == 3 and sizes[1] == sizes[2] < 2 * sizes[0]
    assert model.rnn.h is not None


def test_unchain_backward_after_backward_cuts_the_layer_state():
    np.random.seed(6)
    rnn = Lc.RNN(3, in_size=1)
    x = np.ones((2, 1), np.float32)
    loss = rnn(x).sum()
    loss = loss + rnn(x).sum()
    loss.backward()
    loss.unchain_backward()
    assert rnn.h.creator is None


def test_lstm_learns_the_noisy_sine():
    """Truncated BPTT on the noisy sine: the mean squared error falls by a clear factor."""
    np.random.seed(0)
    loader = SeqDataLoader(SinCurve(train=True), batch_size=10)
    model = SeqNet(20, Lc.LSTM)
    opt = optimizers.Adam(0.01).setup(model)
    bptt_length = 20
    epoch_losses = []
    for _ in range(6):
        model.reset_state()
        loss, total, count = 0, 0.0, 0
        for x, t in loader:
            loss = loss + F.mean_squared_error(model(x), t)
            count += 1
            if count % bptt_length == 0 or count == len(loader):
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                opt.update()
                total += float(loss.data)
                loss = 0
        epoch_losses.append(total / count)
    assert epoch_losses[-1] < epoch_losses[0] / 10, epoch_losses
    # and it predicts the clean test curve (a cosine) one step ahead
    xs, ts = get_sin_curve(train=False)
    model.reset_state()
    with dz.no_grad():
        preds = np.array([model(x.reshape(1, 1)).data.item() for x in xs])
    assert np.mean((preds[20:] - ts[20:, 0]) ** 2) < 0.02


# --------------------------------------------------------------------------- #
# SinCurve and SeqDataLoader
# --------------------------------------------------------------------------- #


def test_sin_curve_targets_are_the_next_values():
    ds = SinCurve(train=True)
    assert len(ds) == 999
    x, t = ds[10]
    np.testing.assert_array_equal(t, ds[11][0])
    assert x.dtype == np.float32 and x.shape == (1,)
    clean = np.sin(np.linspace(0, 4 * np.pi, 1000))[:-1]
    noise = ds.data[:, 0] - clean
    assert 0.01 < np.abs(noise).max() <= 0.05 + 1e-6
    np.testing.assert_array_equal(SinCurve(train=True).data, ds.data)  # fixed seed


def test_seq_data_loader_streams_advance_one_step_per_batch():
    ds = SinCurve(train=True, num_data=101)  # 100 examples
    loader = SeqDataLoader(ds, batch_size=4)
    assert len(loader) == 25 and loader.jump == 25
    batches = list(loader)
    assert len(batches) == 25
    for (_, t0), (x1, _) in zip(batches, batches[1:]):
        np.testing.assert_array_equal(x1, t0)  # each row continues its own stream
    np.testing.assert_array_equal(batches[0][0][:, 0], ds.data[[0, 25, 50, 75], 0])
    assert len(list(loader)) == 25  # a second epoch starts again at step 0
    with pytest.raises(ValueError, match="larger than the series"):
        SeqDataLoader(ds, batch_size=101)


@pytest.mark.parametrize("make", [lambda: Lc.RNN(5), lambda: Lc.LSTM(5)], ids=["RNN", "LSTM"])
def test_a_new_batch_size_needs_reset_state(make):
    """A kept state of 4 rows and an input of 1 would broadcast to 4 outputs without error."""
    layer = make()
    layer(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match="batch of 1 but the kept state has 4 rows.*reset_state"):
        layer(np.ones((1, 3), np.float32))
    layer.reset_state()
    assert layer(np.ones((1, 3), np.float32)).shape == (1, 5)


def test_truncated_bptt_without_unchaining_names_unchain_backward():
    """The second backward through the first piece's freed graph: retain_graph=True
    (the usual advice) would make the graph grow without end; the fix is to unchain."""
    layer = Lc.RNN(3)
    xs = np.random.default_rng(0).random((4, 2, 2))
    loss = F.sum(layer(xs[0]) * layer(xs[1]))
    loss.backward()
    loss = F.sum(layer(xs[2]))
    with pytest.raises(RuntimeError, match=r"a second time.*retain_graph=True.*unchain_backward"):
        loss.backward()


@pytest.mark.parametrize("make", [lambda: Lc.RNN(5, in_size=1), lambda: Lc.LSTM(5, in_size=1)])
def test_anything_but_one_time_step_of_a_batch_is_refused_with_the_shape(make):
    """A number after the first step failed in len() ("has no len()"); a whole sequence
    (N, T, I) was told to flatten images."""
    layer = make()
    layer(np.ones((2, 1), np.float32))
    for bad in (np.float32(1.0), 1.0, np.ones(2), np.ones((2, 4, 1))):
        with pytest.raises(ValueError, match=r"one time step of a batch, shape \(N, in_size\)"):
            layer(bad)


def test_a_whole_model_resets_the_state_of_its_recurrent_layers():
    from dezero_like.models import Sequential

    model = Sequential(Lc.LSTM(4), L.Linear(1))
    first = model(np.ones((2, 1), np.float32)).data.copy()
    model(np.ones((2, 1), np.float32))
    model.reset_state()  # AttributeError before: only RNN and LSTM had it
    np.testing.assert_array_equal(model(np.ones((2, 1), np.float32)).data, first)


def test_a_seq_data_loader_that_drops_much_of_the_series_warns():
    series = SinCurve(train=True)  # 999 steps
    with pytest.warns(UserWarning, match="use 500 of the 999 steps; the last 499"):
        SeqDataLoader(series, batch_size=500)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(SeqDataLoader(series, batch_size=10)) == 99  # 9 dropped: no warning


@pytest.mark.parametrize("make", [Lc.RNN, Lc.LSTM])
def test_pytorchs_argument_order_is_translated(make):
    """nn.LSTM(1, 20) is LSTM(20, in_size=1) here: the Linear's shape error did not say so."""
    layer = make(1, 20)  # meant: 1 input feature, 20 hidden units
    name = make.__name__
    with pytest.raises(ValueError, match=rf"made for inputs of 20 features .*, got 1.*"
                                         rf"write {name}\(20, in_size=1\)"):
        layer(np.ones((3, 1), np.float32))
    assert make(20, in_size=1)(np.ones((3, 1), np.float32)).shape == (3, 20)
    with pytest.raises(ValueError, match=r"inputs of 8 features .*got 10$"):
        make(16, in_size=8)(np.ones((2, 10)))  # not a swap: no advice to change the sizes
    with pytest.raises(TypeError, match="wrap lists with np.array"):
        make(3)([[1.0]])
