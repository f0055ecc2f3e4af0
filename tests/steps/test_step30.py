import re

import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def test_default_backward_records_nothing():
    x = dz.Variable(np.array(0.3))
    F.sin(x).backward()
    assert x.grad.creator is None
    assert np.isclose(x.grad.data, np.cos(0.3))


def test_create_graph_records_the_backward_of_sin(load_step):
    step = load_step(30)
    labels = re.findall(r'label="(.*?)"', step.backward_dot)
    assert sorted(labels) == sorted(["gx", "Mul", "1", "", "Cos", "x"])
    assert step.gx.creator is not None
    # the gradient's graph leads back to the leaf x (a leaf, holding 1.0)
    cos_fn = [v for v in step.gx.creator.inputs if v.creator is not None][0].creator
    leaf = cos_fn.inputs[0]
    assert type(cos_fn).__name__ == "Cos" and leaf.creator is None
    assert leaf.name == "x" and leaf.data == 1.0


def test_gradient_graph_is_differentiable_wrt_the_same_x():
    x = dz.Variable(np.array(0.3))
    F.sin(x).backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    assert np.isclose(x.grad.data, -np.sin(0.3))


def test_demo_output(load_step):
    out = load_step(30).output
    assert "creator: None" in out and "creator: <Mul" in out
    assert "dy/dx at 2 = 12.0" in out and "3 functions in the gradient's graph" in out
    assert "self-check passed" in out
