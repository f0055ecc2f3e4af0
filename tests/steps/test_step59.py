import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions_conv as Fc
from dezero_like.utils import gradient_check


def test_max_and_average_pooling_values(load_step):
    step = load_step(59)
    np.testing.assert_array_equal(Fc.pooling(step.x, 2).data[0, 0], [[4, 5], [3, 7]])
    np.testing.assert_array_equal(Fc.average_pooling(step.x, 2).data[0, 0],
                                  [[2.5, 2.0], [1.5, 2.5]])


def test_max_gradient_goes_to_the_winners_and_average_spreads(load_step):
    step = load_step(59)
    expected = np.zeros((4, 4))
    expected[1, 0] = expected[1, 3] = expected[2, 2] = expected[3, 0] = 1
    np.testing.assert_array_equal(step.xv.grad.data[0, 0], expected)
    np.testing.assert_array_equal(step.xa.grad.data[0, 0], np.full((4, 4), 0.25))


@pytest.mark.parametrize("shape, k, s", [((2, 3, 6, 6), 2, None), ((1, 2, 7, 5), 3, 2),
                                         ((2, 1, 5, 8), (2, 3), (1, 2))])
def test_pooling_simple_matches_package_and_gradients_check(load_step, shape, k, s):
    step = load_step(59)
    x = np.random.default_rng(1).permutation(np.prod(shape)).reshape(shape) / 5.0
    np.testing.assert_array_equal(step.pooling_simple(dz.Variable(x), k, s).data,
                                  Fc.pooling(x, k, s).data)
    assert gradient_check(lambda v: step.pooling_simple(v, k, s) ** 2, x)
    assert gradient_check(lambda v: Fc.pooling(v, k, s, 1) ** 2, x)
    assert gradient_check(lambda v: Fc.average_pooling(v, k, s, 1) ** 2, x)


def test_pooling_output_size_follows_the_conv_formula():
    x = np.zeros((1, 2, 9, 7))
    assert Fc.pooling(x, 3, 2, 1).shape == (1, 2, Fc.get_conv_outsize(9, 3, 2, 1),
                                            Fc.get_conv_outsize(7, 3, 2, 1))
    assert Fc.average_pooling(x, 2).shape == (1, 2, 4, 3)


def test_demo_output(load_step):
    step = load_step(59)
    assert (step.raw_same, step.pooled_same) == (0, 4)
    assert "pooling_simple == Fc.pooling: True" in step.output
    assert "self-check passed" in step.output
