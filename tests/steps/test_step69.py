"""Step 69: a long chain keeps about one array in the package, one per function in a naive graph."""

import tracemalloc

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F

ARRAY = 256 * 256 * 4  # bytes of the step's (256, 256) float32 array


def test_package_chain_keeps_about_one_array(load_step):
    step = load_step(69)
    kept100, peak100, g100 = step.measure("package", 50)
    kept200, peak200, g200 = step.measure("package", 100)
    assert kept200 < 2.0 * ARRAY, kept200 / ARRAY  # the output plus small graph nodes
    assert kept200 - kept100 < 0.5 * ARRAY  # does not grow with the chain
    assert peak200 < 8 * ARRAY, peak200 / ARRAY
    np.testing.assert_allclose(g200, np.full((256, 256), step.C**100), rtol=1e-4)


def test_naive_chain_keeps_one_array_per_function(load_step):
    step = load_step(69)
    kept100, _, g100 = step.measure("naive", 50)
    kept200, peak200, g200 = step.measure("naive", 100)
    assert 99 * ARRAY < kept100 < 102 * ARRAY, kept100 / ARRAY
    assert 199 * ARRAY < kept200 < 203 * ARRAY, kept200 / ARRAY
    assert kept200 == pytest.approx(2 * kept100, rel=0.02)  # linear growth
    assert peak200 >= kept200
    np.testing.assert_allclose(g200, np.full((256, 256), step.C**100), rtol=1e-4)


def test_keeping_grows_when_backward_needs_the_arrays():
    # y * w with w requiring grad: Mul must keep y to compute w's gradient
    x = dz.Variable(np.ones((128, 128), dtype=np.float32))
    w = dz.Variable(np.array(0.999, dtype=np.float32))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    y = x
    for _ in range(30):
        y = y * w + 0.001
    kept = (tracemalloc.get_traced_memory()[0] - base) / (128 * 128 * 4)
    tracemalloc.stop()
    assert 29.5 < kept < 32, kept  # 29 kept intermediates + the output
    y.backward()
    v, dv = 1.0, 0.0  # every element follows v <- w v + d; dv/dw <- v + w dv/dw
    for _ in range(30):
        v, dv = 0.999 * v + 0.001, v + 0.999 * dv
    np.testing.assert_allclose(w.grad.data, 128 * 128 * dv, rtol=1e-3)


def test_stand_ins_keep_the_graph_shape_without_data():
    x = dz.Variable(np.ones(3, dtype=np.float32))
    h = x * 2.0
    y = h + 1.0
    node = y.creator.inputs[0]
    assert node.data is None
    assert node.creator is h.creator and node.generation == h.generation and node.index == 0
    assert h.creator.inputs[0] is x  # leaves are kept as they are
    np.testing.assert_array_equal(h.creator.inputs[1].data, 2.0)
    del h
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0, 2.0])


def test_naive_classes_backprop_correctly(load_step):
    step = load_step(69)
    x = step.NaiveVariable(np.array([1.0, 2.0]))
    y = step.NaiveAffineAdd(5.0)(step.NaiveAffineMul(3.0)(x))
    np.testing.assert_array_equal(y.data, [8.0, 11.0])
    step.naive_backward(y)
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_sin_chain_exercise(load_step):
    step = load_step(69)
    assert 9.5 < step.kept_by_sin_chain(10) < 11.5
    y = F.sin(F.sin(dz.Variable(np.ones(2))))
    assert y.creator.inputs[0].data is not None  # sin keeps its input


def test_demo_output(load_step):
    out = load_step(69).output
    assert "Add keeps its input h?       False" in out
    assert "Exp keeps its input h?       False   its output? True" in out
    assert "both graphs give the same gradient (c**100): True" in out
    assert "self-check passed" in out
