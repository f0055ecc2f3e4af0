import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def test_naive_overflows_package_does_not(load_step):
    step = load_step(49)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(step.naive_softmax(step.logits)).any()
    np.testing.assert_allclose(F.softmax(dz.Variable(step.logits)).data, [[1.0, 0.0, 0.0]])


def test_no_overflow_for_large_logits(load_step):
    step = load_step(49)
    assert step.big_loss.dtype == np.float32
    assert np.isfinite(step.big_loss.data)
    np.testing.assert_allclose(step.big_loss.data, (2e4 + np.log(3)) / 3, rtol=1e-6)
    assert np.all(np.isfinite(step.big.grad.data))
    np.testing.assert_allclose(step.big.grad.data[2], [1 / 9, 1 / 9, -2 / 9], rtol=1e-5)


def test_gradient_is_p_minus_onehot_over_n(load_step):
    step = load_step(49)
    np.testing.assert_allclose(step.x.grad.data, (step.p - np.eye(3)[step.t]) / 2)


def test_exercise(load_step):
    step = load_step(49)
    assert "self-check passed" in step.output
    assert "softmax_cross_entropy: True" in step.output


def test_large_logits_picture(load_step):
    """The figure is written, and it shows what its prose says: the literal formula stops
    (red at s = 52, green past the float32 overflow at 88.7), the package's loss goes on."""
    step = load_step(49)
    path = step.out_dir / "large_logits.png"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and f"wrote {path}" in step.output
    right_stable, right_literal = step.curves["right answer"]
    wrong_stable, wrong_literal = step.curves["wrong answer"]
    assert np.isfinite(right_stable).all() and np.isfinite(wrong_stable).all()
    assert step.margins[~np.isfinite(wrong_literal)][0] == 52
    assert step.margins[~np.isfinite(right_literal)][0] == 89 > step.overflow
    assert np.isnan(right_literal[-1]) and np.isinf(wrong_literal[-1])
    assert wrong_stable[-1] == 300 and right_stable[-1] == 0  # about 2s and about 0
    ax = step.fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    assert len(ax.lines) == 5  # two curves per case and the overflow line
