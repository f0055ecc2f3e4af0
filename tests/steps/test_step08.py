import sys

import numpy as np
import pytest


def test_100000_function_chain_backprops_without_recursion_error(load_step):
    step = load_step(8)
    n = 100_000
    assert n > 10 * sys.getrecursionlimit()
    x, y = step.long_chain(n)
    y.grad = np.ones_like(y.data)
    y.backward()  # a RecursionError here would fail the test
    np.testing.assert_array_equal(y.data, [0.5 + n])
    np.testing.assert_array_equal(x.grad, [1.0])


def test_recursive_version_is_what_fails(load_step):
    step = load_step(8)
    x, y = step.long_chain(3 * sys.getrecursionlimit())
    y.grad = np.ones_like(y.data)
    with pytest.raises(RecursionError):
        step.backward_recursive(y)


def test_loop_gives_the_same_grads_as_before(load_step):
    step = load_step(8)
    data = np.array([-1.0, 0.0, 0.5])
    x = step.Variable(data)
    y = step.f(x)
    y.grad = np.ones_like(y.data)
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * np.exp(2 * data) * np.exp(np.exp(2 * data)),
                               rtol=1e-14)
    np.testing.assert_allclose(x.grad, step.numerical_diff(step.f, x, eps=1e-5), rtol=1e-7)


def test_backward_on_an_input_is_harmless(load_step):
    step = load_step(8)
    x = step.Variable(np.array([2.0]))
    x.grad = np.ones_like(x.data)
    x.backward()
    np.testing.assert_array_equal(x.grad, [1.0])


def test_missing_seed_is_a_clear_error(load_step):
    step = load_step(8)
    with pytest.raises(ValueError, match="set y.grad"):
        step.Square()(step.Variable(np.array([1.0]))).backward()


def test_variable_still_rejects_non_arrays(load_step):
    step = load_step(8)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        step.Variable(0.5)


def test_demo_output(load_step):
    out = load_step(8).output
    assert "RecursionError" in out
    assert "100,000 functions: y = [100000.5], x.grad = [1.]" in out
    assert "self-check passed" in out
