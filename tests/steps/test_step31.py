import numpy as np

import dezero_like as dz


def test_enable_backprop_decides_whether_backward_records(load_step):
    step = load_step(31)
    assert step.g_plain.creator is None
    assert type(step.g_graph.creator).__name__ == "Mul"
    assert step.g_plain.data == step.g_graph.data == np.cos(1.0)


def test_forgetting_cleargrad_adds_the_second_derivative_to_the_first(load_step):
    step = load_step(31)
    assert step.wrong == 24.0 + 44.0
    assert step.right == 44.0


def test_derivatives_of_every_order(load_step):
    assert load_step(31).orders == [8.0, 24.0, 44.0, 48.0, 24.0, 0.0]


def test_create_graph_implies_retain_graph():
    x = dz.Variable(np.array(2.0))
    y = x**3
    y.backward(create_graph=True)
    y.backward()  # would raise if the first pass had freed the graph
    assert x.grad.data == 24.0  # 12 + 12: gradients accumulate


def test_demo_output(load_step):
    out = load_step(31).output
    assert "without cleargrad: 68.0 = 24 + 44" in out and "with cleargrad:    44.0" in out
    assert "self-check passed" in out
