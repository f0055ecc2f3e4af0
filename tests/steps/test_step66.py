"""Step 66: debug mode names the function and the pass that produced NaN/Inf."""

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import core
from dezero_like.hooks import DebugError


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the step provokes overflow on purpose
def test_forward_overflow_is_caught_at_exp(load_step):
    step = load_step(66)
    logits = dz.Variable(np.array([[800.0, 1.0]]))
    with pytest.raises(DebugError, match=r"^forward of Exp produced inf .* at index \(0, 0\)"), \
            np.errstate(over="ignore"):
        with dz.debug_mode():
            step.naive_cross_entropy(logits, np.array([[1.0, 0.0]]))
    assert core._global_hooks == []


def test_without_debug_mode_the_nan_passes_silently(load_step):
    step = load_step(66)
    logits = dz.Variable(np.array([[800.0, 1.0]]))
    with np.errstate(all="ignore"):
        loss = step.naive_cross_entropy(logits, np.array([[1.0, 0.0]]))
    assert np.isnan(loss.data)


def test_backward_inf_names_the_backward_and_the_forward_line():
    v = dz.Variable(np.zeros(2))
    with pytest.raises(DebugError) as info, np.errstate(divide="ignore"):
        with dz.debug_mode():
            norm = F.sum(v**2) ** 0.5
            norm.backward()
    msg = str(info.value)
    assert "inside the backward of Pow" in msg
    assert "test_step66.py:" in msg


def test_stable_cross_entropy_passes_debug_mode_and_is_right(load_step, rng):
    step = load_step(66)
    x = rng.standard_normal((4, 3)) * 300
    t = np.eye(3)[[0, 2, 1, 1]]
    logits = dz.Variable(x)
    with dz.debug_mode():
        loss = step.stable_cross_entropy(logits, t)
        loss.backward()
    m = x.max(axis=1, keepdims=True)
    log_p = x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss.data, -(t * log_p).sum() / 4)
    np.testing.assert_allclose(logits.grad.data, (np.exp(log_p) - t) / 4, atol=1e-12)


def test_demo_output(load_step):
    out = load_step(66).output
    assert "debug mode is a function hook: True" in out
    assert "loss = nan  grad has NaN: True" in out
    assert ("DebugError: forward of Exp produced inf in output 0 at index (0, 0), "
            "called at step66.py:") in out
    assert ("DebugError: forward of Pow (inside the backward of Pow, whose forward was "
            "called at step66.py:") in out
    assert "DebugError: forward of Tanh produced nan" in out and "started earlier" in out
    assert "ms in debug mode" in out
    assert "self-check passed" in out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the step provokes overflow on purpose
def test_first_nan_graph_highlights_exp(load_step):
    import xml.etree.ElementTree as ET

    step = load_step(66)
    assert type(step.finder.first).__name__ == "Exp"
    assert ET.fromstring(step.image.path.read_text()).tag.endswith("svg")
    dot = step.image.dot_path.read_text()
    highlighted = [line for line in dot.splitlines() if "penwidth=3" in line]
    assert len(highlighted) == 1 and 'label="Exp"' in highlighted[0]
    assert "data [[inf, 1]," in dot and "data [[nan, 0]," in dot
    assert 'label="data nan\\ngrad -"' in dot  # the loss
    assert "first function with a non-finite output: Exp" in step.output
