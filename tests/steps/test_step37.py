import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F


def test_second_backward_raises_a_clear_error(load_step):
    msg = load_step(37).error_message
    assert "freed" in msg and "retain_graph=True" in msg and "Pow" in msg


def test_retain_graph_allows_a_second_pass_and_grads_accumulate(load_step):
    step = load_step(37)
    assert step.first == 12.0 and step.x.grad.data == 24.0
    x = dz.Variable(np.array(0.5))
    y = F.tanh(x) * x
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()
    expected = 3 * (np.tanh(0.5) + 0.5 * (1 - np.tanh(0.5) ** 2))
    assert np.isclose(x.grad.data, expected)


def test_multi_task_losses_sum_into_shared_parameters(load_step):
    step = load_step(37)
    assert np.allclose(step.grad_two_calls, step.W_sum.grad.data, rtol=1e-12, atol=1e-15)
    assert not np.allclose(step.grad_after_loss1, step.grad_two_calls)
    # and each head's gradient alone, from a fresh graph, adds up to the same
    W1 = dz.Variable(step.W_init.copy())
    step.two_losses(W1)[1].backward()
    assert np.allclose(step.grad_after_loss1 + W1.grad.data, step.grad_two_calls)
    assert step.W.grad is None  # cleared at the end of the demo


def test_shared_trunk_without_retain_graph_fails(load_step):
    msg = load_step(37).trunk_error
    assert "second time" in msg and ("Tanh" in msg or "MatMul" in msg)


def test_release_frees_the_saved_arrays(load_step):
    step = load_step(37)
    assert step.kept > 15 and step.freed < 4


def test_demo_output(load_step):
    out = load_step(37).output
    assert "two backward calls == one backward of the sum: True" in out
    assert "accumulated: True" in out and "self-check passed" in out


def test_a_value_changed_between_forward_and_backward_is_refused(load_step):
    step = load_step(37)
    assert "Sin's input 0 (a Variable 'u')" in step.changed_error
    assert "optimizer.update()" in step.changed_error  # says what to do
    assert "input 1 (a Variable 'w')" in step.update_error
    assert "Exp's output 0" in step.output_error


def test_the_picture_shows_memory_growing_only_when_the_graph_is_kept(load_step):
    step = load_step(37)
    path = step.figure_path
    assert path.name == "memory_after_backward.png" and path.parent.name == "step37"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    ax = step.fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    lines = {line.get_label(): line for line in ax.get_lines()}
    depths = np.asarray(lines["retain_graph=True"].get_xdata(), dtype=float)
    kept = np.asarray(lines["retain_graph=True"].get_ydata(), dtype=float)
    freed = np.asarray(lines["retain_graph=False (the default)"].get_ydata(), dtype=float)
    assert len(depths) >= 3 and depths[-1] == 20
    # one array more per function when the graph is kept; x, x.grad and y when it is freed
    slope = np.polyfit(depths, kept, 1)[0]
    assert 0.95 < slope < 1.05, f"kept arrays grow by {slope:.2f} per function, expected 1"
    np.testing.assert_allclose(freed, 3.0, atol=0.1)
