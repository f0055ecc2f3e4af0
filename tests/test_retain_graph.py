"""retain_graph: what backward frees, the error on a second pass, and accumulation."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F

N = 500  # 500x500 float64: 2 MB per array
ARRAY = N * N * 8
DEPTH = 10


def chain(x):
    y = x
    for _ in range(DEPTH):
        y = F.tanh(y) * 0.9 + 0.1  # Tanh keeps its output; Mul keeps nothing it needs
    return y


def held_after(fn):
    """Bytes still traced after ``fn`` returns its (kept) results."""
    gc.collect()
    tracemalloc.start()
    try:
        keep = fn()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del keep
    return held


def test_backward_releases_saved_arrays_but_retain_graph_keeps_them():
    def run(retain):
        def fn():
            x = dz.Variable(np.ones((N, N)))
            y = chain(x)
            before = tracemalloc.get_traced_memory()[0]
            y.backward(retain_graph=retain)
            return x, y, before

        return fn

    # memory held with the graph alive, before backward
    gc.collect()
    tracemalloc.start()
    x = dz.Variable(np.ones((N, N)))
    y = chain(x)
    before = tracemalloc.get_traced_memory()[0]
    y.backward()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # before: x, y and DEPTH retained tanh outputs; after: x, x.grad, y
    assert before > (DEPTH + 1) * ARRAY
    assert after < before - (DEPTH - 2) * ARRAY, (before / ARRAY, after / ARRAY)
    assert after < 4 * ARRAY
    del x, y

    kept = held_after(run(True))
    freed = held_after(run(False))
    assert kept > (DEPTH + 2) * ARRAY
    assert freed < 4 * ARRAY
    assert kept - freed > (DEPTH - 1) * ARRAY


def test_second_backward_raises_and_names_the_fix():
    x = dz.Variable(np.array([1.0, 2.0]))
    y = F.sum(F.exp(x) * x)
    y.backward()
    with pytest.raises(RuntimeError, match=r"freed.*retain_graph=True"):
        y.backward()


def test_retain_graph_keeps_it_for_another_pass():
    x = dz.Variable(np.array([1.0, 2.0]))
    y = F.sum(F.exp(x) * x)
    y.backward(retain_graph=True)
    y.backward()
    assert np.allclose(x.grad.data, 2 * (np.exp(x.data) * (1 + x.data)))


def test_create_graph_implies_retain_graph():
    x = dz.Variable(np.array(0.7))
    y = F.sin(x) * x
    y.backward(create_graph=True)
    y.backward()
    assert np.isclose(x.grad.data, 2 * (np.cos(0.7) * 0.7 + np.sin(0.7)))


def test_two_losses_sharing_parameters_sum_their_gradients(rng):
    X = rng.normal(size=(5, 3))
    W0 = rng.normal(size=(3, 4))

    def losses(W):
        h = F.tanh(X @ W)
        return F.sum(h * h), F.sum(F.exp(h))

    W = dz.Variable(W0.copy())
    l1, l2 = losses(W)
    l1.backward(retain_graph=True)
    l2.backward()
    W_sum = dz.Variable(W0.copy())
    l1, l2 = losses(W_sum)
    (l1 + l2).backward()
    assert np.allclose(W.grad.data, W_sum.grad.data, rtol=1e-12, atol=1e-14)
    # accumulation goes on until cleargrad
    l1, _ = losses(W)
    l1.backward()
    W1 = dz.Variable(W0.copy())
    losses(W1)[0].backward()
    assert np.allclose(W.grad.data, W_sum.grad.data + W1.grad.data)
    W.cleargrad()
    assert W.grad is None


def test_graph_structure_survives_release_for_drawing():
    x = dz.Variable(np.ones(3), name="x")
    y = F.sum(F.tanh(x))
    dot = dz.utils.get_dot_graph(y)
    y.backward()
    assert dz.utils.get_dot_graph(y) == dot
