import numpy as np
import pytest

E = np.e


def test_forward_values_of_the_worked_example(load_step):
    step = load_step(5)
    np.testing.assert_allclose(step.a.data, [np.exp(0.5)], rtol=1e-15)
    np.testing.assert_allclose(step.b.data, [E], rtol=1e-15)
    np.testing.assert_allclose(step.y.data, [E**E], rtol=1e-14)


def test_local_derivatives_of_the_worked_example(load_step):
    step = load_step(5)
    np.testing.assert_allclose(step.dC_db, [E**E], rtol=1e-14)
    np.testing.assert_allclose(step.dB_da, [2 * np.exp(0.5)], rtol=1e-15)
    np.testing.assert_allclose(step.dA_dx, [np.exp(0.5)], rtol=1e-15)


def test_backward_pass_of_the_worked_example(load_step):
    step = load_step(5)
    np.testing.assert_array_equal(step.gy, [1.0])
    np.testing.assert_allclose(step.gb, [E**E], rtol=1e-14)
    np.testing.assert_allclose(step.ga, [E**E * 2 * np.exp(0.5)], rtol=1e-14)
    np.testing.assert_allclose(step.gx, [2 * E * E**E], rtol=1e-14)
    np.testing.assert_allclose(step.gx, [82.387111], rtol=1e-7)


def test_checks_agree(load_step):
    step = load_step(5)
    np.testing.assert_allclose(step.numerical, step.gx, rtol=1e-6)
    np.testing.assert_allclose(step.forward_mode, step.gx, rtol=1e-15)


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(5)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(5).output
    assert "dy/dx = 82.387111" in out
    assert "closed form 2e*e^e = 82.387111" in out
    assert "self-check passed" in out


def test_the_picture_shows_both_passes_with_the_step_numbers(load_step):
    step = load_step(5)
    path = step.figure_path
    assert path.parent.name == "step05" and path.parent.parent.name == "outputs"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    texts = {t.get_text() for t in step.fig.axes[0].texts}
    # the boxes carry the values the step computed, the backward arrows the local derivatives
    for expected in ("x = 0.5", "y = 15.15", "dy/dy = 1", "dy/dx = 82.39",
                     "× A'(x) = 1.649", "× B'(a) = 3.297", "× C'(b) = 15.15"):
        assert expected in texts, f"{expected!r} missing from the picture: {sorted(texts)}"
