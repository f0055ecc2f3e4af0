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


def test_the_picture_is_the_graph_of_the_gradient(load_step):
    step = load_step(31)
    path = step.image.path
    assert path.name == "gradient_graph.svg" and path.parent.name == "step31"
    assert path.parent.parent.name == "outputs"
    svg = path.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "</svg>" in svg
    dot = step.image.dot_path.read_text()
    # drawn from gx, the graph made by the backward methods, reaches x: f'(2) = 24, f''(2) = 44
    for label in ("gx = f'(x)\\ndata 24", "x\\ndata 2\\ngrad 44", "data 8", "data -8"):
        assert label in dot, f"{label!r} missing from the drawn graph:\n{dot}"
    assert dot.count('label="Pow"') == 2 and dot.count('label="Add"') == 1
    assert dot.count('label="Mul"') == 4
