import gc
import weakref

import numpy as np
import pytest


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _graph(step, make):
    x = step.Variable(np.ones(4))
    a = make(x)
    b = step.exp(a)
    y = step.add(make(b), a)  # a is used twice: a small diamond
    refs = [weakref.ref(o) for o in (a, b, y, a.creator, b.creator, y.creator,
                                     y.creator.inputs[0], y.creator.inputs[0].creator)]
    return x, y, refs


def test_dropping_the_output_frees_the_whole_graph_without_gc(load_step, no_gc):
    step = load_step(18)
    x, y, refs = _graph(step, step.square)
    assert all(r() is not None for r in refs)
    del y
    assert all(r() is None for r in refs), [r() for r in refs]
    assert x.data is not None  # the leaf the user holds survives


def test_functions_hold_outputs_weakly(load_step):
    step = load_step(18)
    y = step.square(step.Variable(np.array(2.0)))
    f = y.creator
    assert all(isinstance(o, weakref.ref) for o in f.outputs)
    assert f.outputs[0]() is y


def test_strong_outputs_leak_until_the_cycle_collector_runs(load_step, no_gc):
    step = load_step(18)
    x, y, refs = _graph(step, step.square_with_strong_outputs)
    y_creator = weakref.ref(y.creator)
    del y
    assert y_creator() is None  # y's own creator (an Add) is weak-output: freed
    leaked = [r for r in refs if r() is not None]
    assert len(leaked) >= 4  # the strong-output Squares and what they hold
    gc.collect()
    assert all(r() is None for r in refs)


def test_backward_still_works_with_weak_outputs(load_step):
    step = load_step(18)
    x = step.Variable(np.array(1.5))
    y = step.square(step.square(step.square(x)))  # intermediates not held by the user
    y.backward()
    assert np.isclose(x.grad, 8 * 1.5**7)


def test_demo_output(load_step):
    out = load_step(18).output
    assert ("weak outputs,   gc off: {'y': True, 'y.creator': True, 'a': True, "
            "'a.creator': True}") in out
    assert ("strong outputs, gc off: {'y': False, 'y.creator': False, 'a': False, "
            "'a.creator': False}") in out
    assert "weak outputs 0.0 MiB" in out
    assert "self-check passed" in out
