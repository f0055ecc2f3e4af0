"""A value the graph saved, changed between forward and backward (step 37).

Assigning ``x.data`` (``x.data = a``, ``x.data += 1``, an optimizer's step) after a function
read it makes that function's backward refuse to run, as PyTorch's version counter does;
what a backward does not read may change freely.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.models as M
import dezero_like.optimizers as O

CHANGED = "given a new .data after"


def test_an_input_changed_after_forward_stops_backward_and_names_it():
    x = dz.Variable(np.array([0.5, 1.0]), name="x")
    y = F.sin(x)
    x.data += 1  # ends with x.data = ...: the property sees it
    with pytest.raises(RuntimeError, match=CHANGED) as info:
        y.backward()
    msg = str(info.value)
    assert "Sin's input 0 (a Variable 'x')" in msg
    assert "optimizer.update()" in msg and "x.data.copy()" in msg  # what to do
    assert x.grad is None  # nothing half-done reached the leaf


@pytest.mark.parametrize("change", [
    lambda x: setattr(x, "data", x.data + 1),
    lambda x: setattr(x, "data", x.data.copy()),  # same values, a new array: still a change
])
def test_an_assignment_of_a_new_array_counts_too(change):
    x = dz.Variable(np.array([0.5, 1.0]))
    y = F.sum(F.sin(x) * x)
    change(x)
    with pytest.raises(RuntimeError, match=r"input \d \(a Variable of shape \(2,\)\)"):
        y.backward()


@pytest.mark.parametrize("optimizer", [O.SGD(0.1), O.MomentumSGD(0.1), O.Adam(0.1)],
                         ids=["SGD", "MomentumSGD", "Adam"])
def test_an_optimizer_step_between_two_backwards_through_one_graph(optimizer):
    rng = np.random.default_rng(0)
    model = M.MLP((4, 3))  # the second layer's W is read by the backward into the first
    optimizer.setup(model)
    loss = F.sum(model(rng.normal(size=(4, 2))) ** 2)
    loss.backward(retain_graph=True)
    optimizer.update()
    with pytest.raises(RuntimeError, match=CHANGED):
        loss.backward()


def test_an_update_written_through_indexing_is_counted_by_the_optimizer():
    """``param.data[...] -= ...`` bypasses the property; Optimizer.update marks the params."""

    class IndexSGD(O.Optimizer):
        def update_one(self, param):
            param.data[...] -= 0.1 * param.grad.data

    W = dz.Parameter(np.array([1.0, 2.0]), name="W")
    model = L.Layer()
    model.W = W
    opt = IndexSGD().setup(model)
    loss = F.sum(F.sin(W))
    loss.backward(retain_graph=True)
    opt.update()
    with pytest.raises(RuntimeError, match="Sin's input 0 \\(a Variable 'W'\\)"):
        loss.backward()


@pytest.mark.parametrize("fn", [F.exp, F.tanh, F.sigmoid], ids=["exp", "tanh", "sigmoid"])
def test_a_saved_output_changed_stops_backward(fn):
    y = fn(dz.Variable(np.array([0.3, -0.2])))
    y.data *= 2
    with pytest.raises(RuntimeError, match=r"output 0 .*z = y\.data\.copy\(\)"):
        y.backward()


def test_load_weights_between_forward_and_backward_is_a_change(tmp_path):
    rng = np.random.default_rng(1)
    model = M.MLP((4, 2))
    model(rng.normal(size=(1, 3)))  # the layers make their weights on the first call
    path = tmp_path / "w.npz"
    model.save_weights(path)
    loss = F.sum(model(rng.normal(size=(5, 3))) ** 2)
    model.load_weights(path)
    with pytest.raises(RuntimeError, match=CHANGED):
        loss.backward()


def test_what_backward_does_not_read_may_change():
    """Add keeps no input and x * 2.0 keeps only the 2.0, as in PyTorch: no error, right grads."""
    x = dz.Variable(np.array([1.0, 2.0]))
    y = F.sum(x + 1.0) + F.sum(x * 2.0)
    x.data += 10
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])


def test_the_training_loop_and_repeated_backwards_stay_quiet():
    rng = np.random.default_rng(2)
    X, t = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))
    model = L.Linear(1, in_size=3)
    opt = O.SGD(0.05).setup(model)
    losses = []
    for _ in range(3):  # update after backward, then a new forward: the normal order
        model.cleargrads()
        loss = F.mean_squared_error(model(X), t)
        loss.backward()
        opt.update()
        losses.append(float(loss))
    assert losses[2] < losses[0]
    x = dz.Variable(np.array(0.7))
    y = F.tanh(F.sin(x) * x)
    y.backward(retain_graph=True)
    first = float(x.grad)
    y.backward()  # nothing changed in between
    assert np.isclose(float(x.grad), 2 * first)
    with dz.no_grad():  # an evaluation between forward and backward writes nothing
        F.sin(x)
    x.to_cpu()  # already on the CPU: no move, so no change


def test_a_second_order_gradient_is_unaffected():
    x = dz.Variable(np.array(0.4))
    y = F.sin(x) * x
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    assert np.isclose(float(x.grad), 2 * np.cos(0.4) - 0.4 * np.sin(0.4))


def test_pytorch_refuses_the_same_changes():
    """The oracle: each change refused here is refused by PyTorch's version counter."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    a = x * 1.0
    y = torch.sin(a)
    with torch.no_grad():
        a += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = torch.exp(x)
    with torch.no_grad():
        y *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_model_pickled_here_trains_in_a_fresh_process(tmp_path):
    """A saved Variable's stamp is a tick of this process's clock; loaded in a process whose
    clock is younger, it must not look changed (fine-tuning a pickled backbone with a new
    head, whose lazily made weights tick the clock between the backbone's forward and the
    backward)."""
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    model = M.MLP((5, 3))
    opt = O.SGD(0.01).setup(model)
    x = np.ones((2, 4))
    for _ in range(30):  # 30 updates: the weights' stamps are far ahead of a fresh clock
        model.cleargrads()
        F.sum(model(x)).backward()
        opt.update()
    path = tmp_path / "backbone.pkl"
    path.write_bytes(pickle.dumps(model))
    code = (
        "import pickle, numpy as np, dezero_like.functions as F, dezero_like.layers as L\n"
        f"backbone = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "head = L.Linear(2)\n"
        "loss = F.sum(head(F.relu(backbone(np.ones((2, 4))))))\n"
        "loss.backward()\n"
        "print(backbone.l0.W.grad.shape)\n")
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, env={**__import__("os").environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr[-600:]
    assert done.stdout.strip() == "(4, 5)"


def test_a_copied_variable_counts_as_unchanged():
    import copy
    import pickle

    x = dz.Variable(np.array([1.0, 2.0]))
    x.data += 1
    for twin in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert twin._version == 0
        np.testing.assert_array_equal(twin.data, [2.0, 2.0 + 1])
        y = F.sum(twin * twin)
        twin.data += 1  # a copy is still watched: a change after its forward is refused
        with pytest.raises(RuntimeError, match=CHANGED):
            y.backward()


@pytest.mark.parametrize("fn, change, refused", [
    (F.relu, "output", False),  # a mask is kept: PyTorch refuses, it keeps relu's output
    (lambda x: F.clip(x, 0.2, 0.8), "input", False),  # a mask (PyTorch keeps clamp's input)
    (lambda x: 2.0 / x, "input", True),  # reads x (PyTorch keeps the reciprocal)
    (lambda x: F.mean_squared_error(x, np.ones((2, 3))), "input", True),  # reads x
])
def test_the_refusals_follow_what_this_librarys_backward_reads(fn, change, refused):
    """docs/pytorch.md: where this backward reads other arrays than PyTorch saves."""
    x = dz.Variable(np.linspace(0.1, 0.9, 6).reshape(2, 3))
    y = fn(x)
    expected = None
    if not refused:  # the gradient with nothing changed, to compare with
        x2 = dz.Variable(x.data.copy())
        F.sum(fn(x2)).backward()
        expected = x2.grad.data
    target = y if change == "output" else x
    target.data = target.data + 1.0
    if refused:
        with pytest.raises(RuntimeError, match=CHANGED):
            F.sum(y).backward()
    else:
        F.sum(y).backward()
        np.testing.assert_array_equal(x.grad.data, expected)  # the mask: the right gradient
