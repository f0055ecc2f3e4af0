import numpy as np


def test_same_iterates_as_step_29(load_step):
    auto = np.array(load_step(33).iterates)
    by_hand = np.array(load_step(29).iterates)
    assert len(auto) == len(by_hand) == 11
    assert np.allclose(auto, by_hand, rtol=0, atol=1e-15)


def test_approaches_one_within_seven_iterations(load_step):
    it = load_step(33).iterates
    assert it[0] == 2.0
    assert abs(it[7] - 1) < 1e-12
    assert all(abs(b - 1) < abs(a - 1) for a, b in zip(it[:7], it[1:8]))


def test_second_minimisation(load_step):
    x_min = load_step(33).x_min
    assert np.isclose(x_min, 0.351733711249196, atol=1e-12)


def test_demo_output(load_step):
    out = load_step(33).output
    assert "f'' = 44.000000" in out  # f''(2) = 12*4 - 4
    assert "iteration 7: x = 1.000000000000" in out
    assert "self-check passed" in out


def test_the_picture_shows_each_parabola_bottoming_out_at_the_next_iterate(load_step):
    step = load_step(33)
    path = step.figure_path
    assert path.name == "newton_parabolas.png" and path.parent.name == "step33"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    ax = step.fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    lines = {line.get_label(): line for line in ax.get_lines()}
    for k in range(3):
        parabola = lines[f"parabola at iterate {k}"]
        t, q = parabola.get_xdata(), parabola.get_ydata()
        spacing = t[1] - t[0]
        assert abs(t[np.argmin(q)] - step.iterates[k + 1]) <= spacing, (
            f"parabola {k} is lowest at {t[np.argmin(q)]}, the next iterate is "
            f"{step.iterates[k + 1]}")
        # it touches f at iterate k: same value there
        at = np.argmin(abs(t - step.iterates[k]))
        assert abs(q[at] - step.f(t[at])) < 0.05
    np.testing.assert_array_equal(lines["iterates"].get_xdata(), step.iterates)
