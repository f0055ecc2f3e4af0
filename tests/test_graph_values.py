"""Values and gradients written into graph nodes; keep_values_for_drawing; step snapshots."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import dezero_like as dz
from dezero_like import core, graph
from dezero_like.graph import get_dot_graph, keep_values_for_drawing, plot_dot_graph

HAVE_DOT = shutil.which("dot") is not None
HAVE_PURE = graph._installed_command(graph.FALLBACK_PROGRAM) is not None or bool(
    shutil.which(graph.FALLBACK_PROGRAM)
)


def labels(dot):
    return [s.replace("\\n", "\n") for s in re.findall(r'\[label="(.*?)"', dot)]


def variable_labels(dot):
    return sorted(lab for lab in labels(dot) if "data " in lab)


def chain():
    """y = (x*x)*3 + x at x = 2: y = 14, a = x*x = 4, b = 3a = 12, dy/dx = 6x + 1 = 13."""
    x = dz.Variable(np.array(2.0), name="x")
    y = (x * x) * 3.0 + x
    return x, y


def test_without_keeping_intermediate_nodes_have_no_value_or_grad():
    x, y = chain()
    y.backward()
    found = variable_labels(get_dot_graph(y, values=True))
    assert "x\ndata 2\ngrad 13" in found
    assert found.count("data ?\ngrad -") == 2  # a and b: dropped by the functions


def test_keep_values_for_drawing_shows_every_value_and_gradient():
    x, y = chain()
    with dz.keep_values_for_drawing():  # the top-level name is the same hook
        y = (x * x) * 3.0 + x
        y.backward()
    found = variable_labels(get_dot_graph(y, values=True))
    assert found == sorted([
        "data 14\ngrad 1",  # y
        "data 12\ngrad 1",  # b = 3a
        "data 4\ngrad 3",  # a = x*x: dy/da = 3
        "data 3\ngrad -",  # the constant 3.0 needs no gradient
        "x\ndata 2\ngrad 13",
    ])
    assert core._global_hooks == []  # the block leaves no hook behind


def test_keeping_is_off_outside_the_block():
    x, y = chain()
    with keep_values_for_drawing():
        pass
    f = y.creator
    assert not hasattr(f, "_drawing_values") and not hasattr(f, "_drawing_grads")


def test_big_arrays_are_shown_by_shape_small_ones_in_full():
    assert graph.format_array(np.arange(3.0)) == "[0, 1, 2]"
    assert graph.format_array(np.zeros((4, 5), np.float32)) == "(4, 5) float32"
    assert graph.format_array(dz.Variable(np.array(1.5))) == "1.5"


def test_step_snapshot_graph_draws_by_duck_typing(load_step):
    step = load_step(16)
    x = step.Variable(np.array(2.0))
    a = step.square(x)
    y = step.add(step.square(a), step.square(a))
    y.backward()
    found = variable_labels(get_dot_graph(y, values=True))
    # x = 2, a = 4, the two squares 16 each, y = 32; dy/dx = 8 x^3 = 64
    assert found == sorted(["data 2\ngrad 64", "data 4\ngrad 16", "data 16\ngrad 1",
                            "data 16\ngrad 1", "data 32\ngrad 1"])
    functions = [lab for lab in labels(get_dot_graph(y)) if "float64" not in lab]
    assert sorted(functions) == ["Add", "Square", "Square", "Square"]


def test_non_variable_is_refused():
    with pytest.raises(TypeError, match="expects a Variable"):
        get_dot_graph([1, 2])


@pytest.mark.parametrize("renderer", [
    pytest.param("dot", marks=pytest.mark.skipif(not HAVE_DOT, reason="no system Graphviz")),
    pytest.param("graphviz-pure", marks=pytest.mark.skipif(
        not HAVE_PURE, reason="graphviz-pure is not installed")),
])
def test_values_render_into_the_image(tmp_path, renderer):
    x, y = chain()
    with keep_values_for_drawing():
        y = (x * x) * 3.0 + x
        y.backward()
    image = plot_dot_graph(y, to_file=tmp_path / "g.svg", values=True, renderer=renderer)
    svg = image.path.read_text()
    for text in ("data 14", "grad 13", "data 4", "grad 3"):
        assert text in svg
