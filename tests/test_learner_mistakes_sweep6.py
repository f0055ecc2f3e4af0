"""Sixth sweep: drawings, data pipelines and training loops that gave a silently wrong picture
or number, or an error that did not say what to do."""

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import graph
from dezero_like.graph import get_dot_graph


@pytest.mark.parametrize("values, shown", [
    ([5.5e-06, 2.7e-06], "[5.5e-06, 2.7e-06]"),  # drawn as [0., 0.] before: suppress_small
    ([2e-4, -3e-4, 1e-4], "[0.0002, -0.0003, 0.0001]"),
    ([0.001, 0.0005], "[0.001, 0.0005]"),  # rounded to [0.001, 0.001] before
    ([1.25, -2.0], "[1.25, -2]"),
])
def test_node_values_keep_four_significant_digits(values, shown):
    assert graph.format_array(np.array(values)) == shown


def test_a_vanishing_gradient_is_drawn_as_it_is():
    x = dz.Variable(np.array([1.0, 2.0]), name="x")
    h = x
    for _ in range(8):
        h = F.sigmoid(h)
    F.sum(h).backward()
    dot = get_dot_graph(F.sum(h), values=True)
    expected = graph.format_array(x.grad.data)
    assert "e-06" in expected and expected in dot


def test_a_file_name_passed_as_verbose_is_refused(tmp_path):
    y = F.sin(dz.Variable(np.array(1.0)))
    with pytest.raises(TypeError, match=r"to_file='sphere\.png'"):
        graph.plot_dot_graph(y, "sphere.png")
    with pytest.raises(TypeError, match=r"second argument is verbose"):
        graph.plot_dot_graph(y, tmp_path / "g.png")


def _has_renderer():
    try:
        graph.find_renderer()
    except graph.RendererNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _has_renderer(), reason="no DOT renderer installed")
def test_a_graph_too_big_to_lay_out_quickly_is_announced(monkeypatch, tmp_path):
    monkeypatch.setattr(graph, "MANY_NODES", 10)
    x = dz.Variable(np.array(1.0))
    y = x
    for _ in range(6):
        y = F.sin(y)  # 13 nodes
    with pytest.warns(graph.RenderWarning, match=r"drawing 13 nodes"):
        graph.plot_dot_graph(y, to_file=tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph.plot_dot_graph(F.sin(x), to_file=tmp_path / "small.png")


def test_unchain_backward_before_backward_warns():
    """The cut loss is a leaf: backward reaches nothing and training silently stands still."""
    w = dz.Variable(np.array([1.0, 2.0]))
    loss = F.sum(w * w)
    loss.unchain_backward()
    with pytest.warns(RuntimeWarning, match=r"Call loss\.backward\(\) first, then"):
        loss.backward()
    assert w.grad is None


def test_unchain_backward_after_backward_stays_quiet():
    w = dz.Variable(np.array([1.0, 2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.sum(w * w)
        loss.backward()
        loss.unchain_backward()
        dz.Variable(np.array(1.0)).backward()  # a leaf that was never cut
    np.testing.assert_array_equal(w.grad.data, [2.0, 4.0])


def test_a_loaders_batch_size_cannot_change_under_it():
    loader = dz.DataLoader(dz.datasets.Spiral(), 100)
    with pytest.raises(AttributeError, match=r"DataLoader\(dataset, 10\)"):
        loader.batch_size = 10
    assert sum(len(x) for x, _ in loader) == 300


@pytest.mark.parametrize("make", [
    lambda T: T.Compose([T.ToFloat]),
    lambda T: dz.datasets.Spiral(transform=T.Flatten),
    lambda T: dz.datasets.Spiral(target_transform=T.Compose),
])
def test_a_transform_class_without_parentheses_is_refused(make):
    from dezero_like import transforms as T

    with pytest.raises(TypeError, match=r"got the class \w+, not a transform: write \w+\(\)"):
        make(T)


def test_a_type_that_converts_is_still_a_transform():
    data = dz.datasets.Spiral(transform=np.float32)
    assert data[0][0].dtype == np.float32


def test_gradient_check_of_an_empty_array_has_nothing_to_check():
    from dezero_like.utils import gradient_check, numerical_grad

    assert numerical_grad(F.sin, np.zeros((0, 3))).shape == (0, 3)
    assert gradient_check(F.sin, np.zeros((0, 3)))
