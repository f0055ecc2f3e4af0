import numpy as np

import dezero_like.layers_conv as Lc


def test_graph_grows_per_step_and_unchain_backward_cuts_it(load_step):
    step = load_step(61)
    out = step.output
    for t, n in [(1, 2), (2, 6), (3, 10), (5, 18)]:
        assert f"step {t}: " in out and f"functions behind h: {n}" in out
    assert "after unchain_backward: functions behind h: 0" in out
    assert "one step later: 4 functions" in out


def test_graph_size_counts_the_functions(load_step):
    step = load_step(61)
    rnn = Lc.RNN(2, in_size=1)
    x = np.ones((1, 1), np.float32)
    h = None
    for _ in range(4):
        h = rnn(x)
    assert step.graph_size(h) == 2 + 4 * 3
    assert step.graph_size((h * 2).sum()) == 2 + 4 * 3 + 2


def test_truncation_bounds_the_graph(load_step):
    step = load_step(61)
    # 30 steps of (linear, linear, add, tanh, linear, mse, add) at most
    assert 30 * 4 < step.largest_graph <= 30 * 7 + 2


def test_rnn_learns_the_noisy_sine_and_predicts_the_cosine(load_step):
    step = load_step(61)
    assert step.epoch_losses[-1] < step.epoch_losses[0] / 10
    assert step.test_mse < 0.02
    assert "self-check passed" in step.output
