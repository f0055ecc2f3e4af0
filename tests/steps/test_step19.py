import tracemalloc
import weakref

import numpy as np
import pytest


def _diamond(step, value=2.0):
    x = step.Variable(np.array(value))
    a = step.square(x)
    y = step.add(step.square(a), step.square(a))
    return x, a, y


def test_intermediate_grads_are_none_by_default(load_step):
    step = load_step(19)
    x, a, y = _diamond(step)
    y.backward()
    assert x.grad == 64.0
    assert a.grad is None
    assert y.grad is None


def test_retain_grad_keeps_intermediate_grads(load_step):
    step = load_step(19)
    x, a, y = _diamond(step)
    y.backward(retain_grad=True)
    assert x.grad == 64.0
    assert a.grad == 16.0
    assert y.grad == 1.0


def test_no_grad_builds_no_graph(load_step):
    step = load_step(19)
    x = step.Variable(np.array(2.0))
    with step.no_grad():
        assert step.Config.enable_backprop is False
        y = step.exp(step.square(x))
    assert step.Config.enable_backprop is True
    assert y.creator is None and y.generation == 0
    assert np.isclose(y.data, np.exp(4.0))
    z = step.square(x)
    assert isinstance(z.creator, step.Square)


def test_using_config_restores_on_error(load_step):
    step = load_step(19)
    with pytest.raises(RuntimeError, match="boom"):  # the error goes on, not swallowed
        with step.using_config("enable_backprop", False):
            raise RuntimeError("boom")
    assert step.Config.enable_backprop is True


def _chain(step, n, size):
    x = step.Variable(np.ones(size))
    y, funcs = x, []
    for _ in range(n):
        y = step.square(y)
        f = y.creator
        funcs.append(weakref.ref(f) if f is not None else None)
    return y, funcs


def test_no_functions_stay_alive_under_no_grad(load_step):
    step = load_step(19)
    y, funcs = _chain(step, 20, 10)
    assert sum(r is not None and r() is not None for r in funcs) == 20
    with step.no_grad():
        y, funcs = _chain(step, 20, 10)
    assert funcs == [None] * 20  # no creator recorded


def test_memory_stays_flat_under_no_grad(load_step):
    step = load_step(19)
    size, n = 50_000, 40  # 0.4 MB per array

    def peak():
        tracemalloc.start()
        try:
            y, _ = _chain(step, n, size)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    array_bytes = size * 8
    with_graph = peak()
    with step.no_grad():
        without_graph = peak()
    assert with_graph > (n - 1) * array_bytes  # every intermediate is kept
    assert without_graph < 4 * array_bytes  # a couple of arrays at a time


def test_demo_output(load_step):
    out = load_step(19).output
    assert "default:          x.grad = 64.0  a.grad = None  y.grad = None" in out
    assert "retain_grad=True: x.grad = 64.0  a.grad = 16.0  y.grad = 1.0" in out
    assert "under no_grad: y = 16.0  creator: None" in out
    assert "enable_backprop after the error: True" in out
    assert "self-check passed" in out
