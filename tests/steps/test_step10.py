import io
import unittest

import numpy as np
import pytest


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (1, 4, 1)])
def test_checker_passes_for_correct_backward(load_step, rng, shape):
    step = load_step(10)
    x = np.asarray(rng.standard_normal(shape))
    assert step.gradient_check(step.square, x) is True
    assert step.gradient_check(step.exp, x) is True

    def chain(v):
        return step.exp(step.square(step.exp(v)))

    assert step.gradient_check(chain, np.asarray(x / 2)) is True


def test_checker_fails_for_the_deliberately_wrong_backward(load_step, rng):
    step = load_step(10)
    x = rng.standard_normal((3, 4))
    with pytest.raises(AssertionError, match=r"square_with_bug on input of shape \(3, 4\)"):
        step.gradient_check(step.square_with_bug, x)


def test_checker_names_the_worst_element_of_a_subtle_bug(load_step, rng):
    step = load_step(10)

    class ExpSlightlyWrong(step.Exp):
        def backward(self, gy):
            g = super().backward(gy).copy()
            g[1, 2] *= 1.001  # one element off by 0.1 %
            return g

    x = rng.standard_normal((2, 3))
    with pytest.raises(AssertionError, match=r"1 of 6 elements differ; worst at index \(1, 2\)"):
        step.gradient_check(lambda v: ExpSlightlyWrong()(v), x)


def test_checker_works_for_functions_that_mix_elements(load_step, rng):
    step = load_step(10)

    class TimesMirror(step.Function):
        """y_j = x_j * x_(n-1-j): every output depends on two inputs."""

        def forward(self, x):
            return x * x[::-1]

        def backward(self, gy):
            x = self.input.data
            return gy * x[::-1] + (gy * x)[::-1]

    class TimesMirrorWrong(TimesMirror):
        def backward(self, gy):
            return gy * self.input.data[::-1]  # forgets the second path

    x = rng.standard_normal(5)
    assert step.gradient_check(lambda v: TimesMirror()(v), x)
    with pytest.raises(AssertionError, match="gradient check failed"):
        step.gradient_check(lambda v: TimesMirrorWrong()(v), x)


def test_checker_refuses_float32(load_step):
    step = load_step(10)
    with pytest.raises(TypeError, match="float64 ndarray, got ndarray of float32"):
        step.gradient_check(step.square, np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match="got float"):
        step.gradient_check(step.square, 0.5)


def test_the_steps_unittest_classes_pass(load_step):
    step = load_step(10)
    for test_class in (step.SquareTest, step.ExpTest):
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(test_class)
        result = unittest.TextTestRunner(stream=io.StringIO()).run(suite)
        assert result.wasSuccessful() and result.testsRun == 3


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(10)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(10).output
    assert "square: True" in out
    assert "AssertionError: gradient check failed for square_with_bug" in out
    assert "all passed: True" in out
    assert "self-check passed" in out


def test_numerical_diff_accepts_a_0d_array(load_step):
    step = load_step(10)
    x = step.Variable(np.array(2.0))
    got = step.numerical_diff(step.square, x)
    assert np.asarray(got).shape == () and abs(float(got) - 4.0) < 1e-8
