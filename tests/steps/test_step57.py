import numpy as np
import pytest

import dezero_like.functions_conv as Fc


def test_edge_kernel_lights_up_at_the_edge(load_step):
    step = load_step(57)
    expected = np.tile([0.0, 3.0, 3.0, 0.0], (4, 1))
    np.testing.assert_array_equal(step.response, expected)


def test_padding_keeps_the_size_and_stride_halves_it(load_step):
    step = load_step(57)
    assert step.same.shape == (6, 6)
    assert step.strided.shape == (3, 3)
    np.testing.assert_array_equal(step.strided, step.same[::2, ::2])


@pytest.mark.parametrize("H, K, S, P", [
    (6, 3, 1, 0), (6, 3, 1, 1), (7, 3, 2, 0), (8, 3, 2, 0), (9, 4, 3, 2), (5, 5, 1, 0),
    (10, 1, 3, 0),
])
def test_output_size_formula_matches_the_step_loop(load_step, H, K, S, P):
    step = load_step(57)
    x = np.random.default_rng(H * K).standard_normal((H, H))
    k = np.random.default_rng(S).standard_normal((K, K))
    y = step.correlate2d(x, k, S, P)
    assert y.shape == (Fc.get_conv_outsize(H, K, S, P),) * 2
    # and the loop's values are the package's conv2d with one channel
    np.testing.assert_allclose(y, Fc.conv2d(x[None, None], k[None, None], None, S, P).data[0, 0])


def test_multichannel_example_sums_over_channels(load_step):
    step = load_step(57)
    assert step.y.shape == (2, 2, 3, 3)
    np.testing.assert_allclose(step.y.data, step.y_loop)


def test_demo_output(load_step):
    out = load_step(57).output
    assert "loop and conv2d agree: True" in out
    assert "parameters: 56 (a dense layer from 3x6x6 to 2x3x3 needs 1962)" in out
    assert "self-check passed" in out
