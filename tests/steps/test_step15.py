import numpy as np


def test_naive_inplace_accumulation_aliases_and_corrupts_y_grad(load_step):
    step = load_step(15)
    x = step.InplaceVariable(np.array(3.0))
    y = step.add(x, x)
    y.backward()
    assert y.grad is x.grad
    assert y.grad == 2.0  # wrong: dy/dy is 1
    assert x.grad == 2.0


def test_fixed_accumulation_keeps_distinct_arrays(load_step):
    step = load_step(15)
    x = step.Variable(np.array(3.0))
    y = step.add(x, x)
    y.backward()
    assert y.grad == 1.0
    assert x.grad == 2.0
    assert y.grad is not x.grad
    assert not np.shares_memory(y.grad, x.grad)


def test_fixed_accumulation_on_arrays(load_step, rng):
    step = load_step(15)
    v = rng.normal(size=(3,))
    x = step.Variable(v.copy())
    y = step.add(step.add(x, x), x)
    y.backward()
    np.testing.assert_array_equal(y.grad, np.ones(3))
    np.testing.assert_array_equal(x.grad, np.full(3, 3.0))


def test_accumulate_grad_never_writes_into_the_incoming_array(load_step):
    step = load_step(15)
    x = step.Variable(np.array(1.0))
    first = np.array(2.0)
    x.accumulate_grad(first)
    x.accumulate_grad(np.array(5.0))
    assert x.grad == 7.0
    assert first == 2.0  # untouched


def test_demo_output(load_step):
    out = load_step(15).output
    assert "after b += 1:    a = 2.0" in out
    assert "naive  x.grad += gx:       y.grad = 2.0  x.grad = 2.0  same array: True" in out
    assert "fixed  x.grad = x.grad + gx: y.grad = 1.0  x.grad = 2.0  same array: False" in out
    assert "self-check passed" in out
