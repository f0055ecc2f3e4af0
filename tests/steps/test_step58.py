import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions_conv as Fc
from dezero_like.utils import gradient_check

CASES = [  # (N, C, H, W, OC, K, stride, pad)
    (2, 3, 7, 7, 4, 3, 1, 1),
    (1, 2, 8, 6, 3, 3, 2, 0),
    (2, 1, 9, 9, 2, 5, 2, 2),
]


def _arrays(case, seed):
    N, C, H, W, OC, K, S, P = case
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, C, H, W)), rng.standard_normal((OC, C, K, K)),
            rng.standard_normal(OC), S, P)


def test_im2col_rows_are_windows(load_step):
    step = load_step(58)
    np.testing.assert_array_equal(step.col[0], [0, 1, 2, 4, 5, 6, 8, 9, 10])
    np.testing.assert_array_equal(step.col[3], [5, 6, 7, 9, 10, 11, 13, 14, 15])


@pytest.mark.parametrize("case", CASES)
def test_conv2d_simple_and_package_conv2d_match_direct_loops(load_step, case):
    step = load_step(58)
    x, W, b, S, P = _arrays(case, 1)
    ref = step.conv2d_direct(x, W, b, S, P)
    np.testing.assert_allclose(step.conv2d_simple(dz.Variable(x), dz.Variable(W),
                                                  dz.Variable(b), S, P).data, ref)
    np.testing.assert_allclose(Fc.conv2d(x, W, b, S, P).data, ref)


@pytest.mark.parametrize("case", CASES)
def test_gradient_check_conv2d_simple(load_step, case):
    step = load_step(58)
    x, W, b, S, P = _arrays(case, 2)

    def f(v, which):
        args = [dz.Variable(x), dz.Variable(W), dz.Variable(b)]
        args[which] = v
        return step.conv2d_simple(*args, S, P) ** 2

    for which, value in enumerate((x, W, b)):
        assert gradient_check(lambda v, w=which: f(v, w), value)


@pytest.mark.parametrize("case", CASES)
def test_gradient_check_package_conv2d(case):
    x, W, b, S, P = _arrays(case, 3)
    assert gradient_check(lambda v: Fc.conv2d(v, W, b, S, P) ** 2, x)
    assert gradient_check(lambda v: Fc.conv2d(x, v, b, S, P) ** 2, W)
    assert gradient_check(lambda v: Fc.conv2d(x, W, v, S, P) ** 2, b)


def test_demo_output(load_step):
    out = load_step(58).output
    assert "im2col version == direct loops: True" in out
    assert "package conv2d == direct loops: True" in out
    assert "same gradients (x, W, b): True" in out
    assert "same result: True" in out
    assert "self-check passed" in out


def test_batchnorm_warns_about_channels_last_images_as_conv2d_does(rng):
    import warnings

    import dezero_like.layers_conv as Lc

    nhwc = rng.standard_normal((4, 28, 28, 1)).astype(np.float32)  # MNIST, channels last
    for layer in (Lc.BatchNorm(), Lc.Conv2d(8, 3, pad=1)):
        with pytest.warns(UserWarning, match=rf"{type(layer).__name__} takes its 28 channels "
                          r"from axis 1.*\(N, C, H, W\): x\.transpose\(0, 3, 1, 2\)") as caught:
            layer(nhwc)
        assert caught[0].filename == __file__  # points at the call of the layer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for shape in [(4, 1, 28, 28), (4, 16, 14, 14), (4, 3, 32, 32), (8, 20), (8, 4, 50)]:
            Lc.BatchNorm()(rng.standard_normal(shape))


@pytest.mark.parametrize("shape", [(4, 0), (2, 0, 5, 5)])
@pytest.mark.parametrize("bn", [Fc.batch_norm, Fc.batch_norm_simple])
def test_batch_norm_in_training_of_an_input_with_no_channels_says_so(shape, bn):
    """C = 0 in training divided by zero (ZeroDivisionError) deep in the forward; in test
    mode there is nothing to divide, and the result is as empty as the input."""
    x, g, b = np.ones(shape), np.ones(0), np.zeros(0)
    with pytest.raises(ValueError, match="no channels"):
        bn(x, g, b, np.zeros(0), np.ones(0))
    for dtype in (np.float16, np.float32):
        with pytest.raises(ValueError, match="no channels"):
            bn(x.astype(dtype), g.astype(dtype), b.astype(dtype), np.zeros(0, dtype),
               np.ones(0, dtype))
    with dz.test_mode():
        assert bn(x, g, b, np.zeros(0), np.ones(0)).shape == shape
