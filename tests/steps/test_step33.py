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
