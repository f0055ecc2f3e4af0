"""Graph drawing: DOT text, and real images from each renderer (system dot, graphviz-pure)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import graph
from dezero_like.utils import get_dot_graph, plot_dot_graph

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HAVE_DOT = shutil.which("dot") is not None
HAVE_PURE = graph._installed_command(graph.FALLBACK_PROGRAM) is not None or bool(
    shutil.which(graph.FALLBACK_PROGRAM)
)


def small_graph():
    x = dz.Variable(np.ones((2, 3), np.float32), name="x")
    W = dz.Variable(np.ones((3, 1), np.float32), name="W")
    y = F.tanh(x @ W) * 2.0
    y.name = "y"
    return x, W, y


def nodes_and_edges(dot):
    nodes = dict(re.findall(r"^\s*(\w+) \[label=\"(.*?)\"", dot, re.M))
    edges = re.findall(r"^\s*(\w+) -> (\w+);", dot, re.M)
    return nodes, edges


def test_dot_text_has_variables_functions_edges_and_verbose_labels():
    x, W, y = small_graph()
    dot = get_dot_graph(y)
    assert dot.startswith("digraph g {") and dot.rstrip().endswith("}")
    nodes, edges = nodes_and_edges(dot)
    labels = set(nodes.values())
    assert {"x: (2, 3) float32", "W: (3, 1) float32", "y: (2, 1) float32"} <= labels
    assert {"MatMul", "Tanh", "Mul"} <= labels
    assert "2: () float32" in labels  # the unnamed constant shows its value
    key = {v: k for k, v in nodes.items()}
    # variables and functions look different; constants are grey
    assert "shape=box" in re.search(rf"{key['MatMul']} \[.*\]", dot).group()
    assert "shape=ellipse" in re.search(rf"{key['x: (2, 3) float32']} \[.*\]", dot).group()
    assert "#dddddd" in re.search(rf"{key['2: () float32']} \[.*\]", dot).group()
    assert (key["x: (2, 3) float32"], key["MatMul"]) in edges
    assert (key["W: (3, 1) float32"], key["MatMul"]) in edges
    assert (key["Mul"], key["y: (2, 1) float32"]) in edges
    assert len(edges) == 3 + 2 + 3  # MatMul: 2 in 1 out; Tanh: 1 in 1 out; Mul: 2 in 1 out
    assert len(nodes) == 3 + 6  # 3 functions; x, W, h, t, constant 2, y


def test_non_verbose_has_names_only():
    _, _, y = small_graph()
    dot = get_dot_graph(y, verbose=False)
    assert 'label="x"' in dot and 'label="y"' in dot
    assert "float32" not in dot


def test_intermediate_variable_is_one_node_even_with_stand_ins():
    # x*x keeps x (a leaf); h = exp(x) is used twice by Mul, which keeps data-less
    # stand-ins of h: they must be drawn as one node, with its name if h is alive
    x = dz.Variable(np.array([1.0, 2.0]), name="x")
    h = F.exp(x)
    h.name = "h"
    y = F.sin(h) + F.cos(h)
    nodes, edges = nodes_and_edges(get_dot_graph(y))
    h_keys = [k for k, v in nodes.items() if v.startswith("h")]
    assert len(h_keys) == 1 and nodes[h_keys[0]] == "h: (2,) float64"
    assert sum(1 for a, _ in edges if a == h_keys[0]) == 2
    del h  # now only stand-ins remain: still one node, without a shape
    nodes2, _ = nodes_and_edges(get_dot_graph(y))
    assert len(nodes2) == len(nodes)


def test_graph_after_backward_still_draws():
    x, W, y = small_graph()
    before = get_dot_graph(y)
    y.backward()
    assert get_dot_graph(y) == before


def test_leaf_alone_and_bad_input():
    x = dz.Variable(np.array(1.0), name="x")
    nodes, edges = nodes_and_edges(get_dot_graph(x))
    assert list(nodes.values()) == ["x: () float64"] and edges == []
    with pytest.raises(TypeError, match="expects a Variable"):
        get_dot_graph(np.array(1.0))


def test_label_is_escaped():
    x = dz.Variable(np.array(1.0), name='say "hi" \\ bye')
    assert 'label="say \\"hi\\" \\\\ bye: () float64"' in get_dot_graph(x)


def check_image(path, fmt, names):
    data = path.read_bytes()
    if fmt == "png":
        assert data.startswith(PNG_MAGIC)
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width > 50 and height > 100
    elif fmt == "svg":
        text = data.decode()
        assert "<svg" in text
        for name in names:
            assert name in text
    else:
        assert data.startswith(b"%PDF")


@pytest.mark.skipif(not HAVE_DOT, reason="system Graphviz (dot) is not installed")
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_renders_with_system_graphviz(tmp_path, fmt):
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=tmp_path / f"g.{fmt}")
    assert image.renderer == "dot"  # auto prefers the system Graphviz
    check_image(image.path, fmt, ["x: (2, 3) float32", "MatMul"])
    assert (tmp_path / "g.dot").read_text() == get_dot_graph(y)
    assert "x: (2, 3) float32" in image._repr_svg_()


@pytest.mark.skipif(not HAVE_PURE, reason="graphviz-pure (pip install graphviz-pure) is missing")
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_falls_back_to_graphviz_pure_without_dot_on_path(tmp_path, monkeypatch, fmt):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no system dot can be found
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=tmp_path / f"g.{fmt}")
    assert image.renderer == "graphviz-pure"
    check_image(image.path, fmt, ["x: (2, 3) float32", "MatMul"])
    assert "W: (3, 1) float32" in image._repr_svg_()


@pytest.mark.skipif(not HAVE_PURE, reason="graphviz-pure (pip install graphviz-pure) is missing")
def test_renderer_can_be_chosen(tmp_path):
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=tmp_path / "g.svg", renderer="graphviz-pure")
    assert image.renderer == "graphviz-pure"
    with pytest.raises(ValueError, match="renderer must be"):
        plot_dot_graph(y, to_file=tmp_path / "g.svg", renderer="neato")


def test_no_renderer_is_a_clear_error_and_the_dot_file_is_kept(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    # as if graphviz-pure had not been installed: its distribution is not found
    monkeypatch.setattr(graph, "FALLBACK_PROGRAM", "graphviz-pure-not-installed")
    _, _, y = small_graph()
    with pytest.raises(graph.RendererNotFoundError) as info:
        plot_dot_graph(y, to_file=tmp_path / "out" / "g.png")
    message = str(info.value)
    assert "apt-get install graphviz" in message and "pip install" in message
    assert "g.dot" in message
    assert (tmp_path / "out" / "g.dot").read_text() == get_dot_graph(y)
    assert not (tmp_path / "out" / "g.png").exists()


@pytest.mark.skipif(not (HAVE_DOT or HAVE_PURE), reason="no DOT renderer installed")
def test_renderer_failure_reports_its_error(tmp_path, monkeypatch):
    name, program = graph.find_renderer()
    (tmp_path / "bad.dot").write_text("digraph { this is not dot")
    with pytest.raises(graph.RenderError, match="failed"):
        graph._run(program, ["-Tsvg", str(tmp_path / "bad.dot")])


def test_unknown_extension_is_rejected(tmp_path):
    _, _, y = small_graph()
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.pdf"):
        plot_dot_graph(y, to_file=tmp_path / "g.jpeg")


@pytest.mark.skipif(not (HAVE_DOT or HAVE_PURE), reason="no renderer: dot or graphviz-pure")
def test_model_plot_renders_the_models_graph(tmp_path):
    model = dz.models.MLP((10, 3))
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    image = model.plot(x, to_file=tmp_path / "model.svg")
    check_image(image.path, "svg", ["Linear", "Sigmoid", "(4, 3) float32"])


RENDERERS = [
    pytest.param("dot", marks=pytest.mark.skipif(not HAVE_DOT, reason="no system dot")),
    pytest.param("graphviz-pure", marks=pytest.mark.skipif(not HAVE_PURE,
                                                           reason="graphviz-pure is missing")),
]


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("fmt", ["png", "pdf"])
def test_file_name_starting_with_a_dash_is_not_an_option(tmp_path, monkeypatch, renderer, fmt):
    monkeypatch.chdir(tmp_path)
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=f"-g.{fmt}", renderer=renderer)
    assert image.path == tmp_path / f"-g.{fmt}"
    check_image(image.path, fmt, [])
    assert (tmp_path / "-g.dot").read_text(encoding="utf-8") == get_dot_graph(y)


@pytest.mark.skipif(not (HAVE_DOT or HAVE_PURE), reason="no DOT renderer installed")
def test_text_files_are_utf8_whatever_the_locale(tmp_path):
    # under the C locale without UTF-8 mode, open() defaults to ASCII
    code = (
        "import numpy as np, dezero_like as dz\n"
        "from dezero_like.utils import plot_dot_graph\n"
        "x = dz.Variable(np.array(2.0), name='\\u03b8')\n"
        f"image = plot_dot_graph(x * x, to_file={str(tmp_path / 'theta.svg')!r})\n"
        "assert '\\u03b8' in image.svg\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, encoding="utf-8", errors="replace")
    assert result.returncode == 0, result.stderr
    assert "θ" in (tmp_path / "theta.dot").read_text(encoding="utf-8")
    assert "θ" in (tmp_path / "theta.svg").read_text(encoding="utf-8")


def test_renderer_warnings_on_success_are_passed_on():
    too_large = "graph is too large for cairo-renderer bitmaps. Scaling by 0.0569 to fit"
    args = ["-c", f"import sys; sys.stderr.write({too_large!r})"]
    with pytest.warns(graph.RenderWarning, match=r"(?s)Scaling by 0\.0569.*\.svg file"):
        graph._run(sys.executable, args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a quiet renderer: no warning at all
        assert graph._run(sys.executable, ["-c", "print('ok')"]).strip() == b"ok"


@pytest.mark.parametrize("renderer", RENDERERS)
def test_a_real_renderer_warning_reaches_the_user(tmp_path, renderer):
    dot = "digraph g { a [color=nosuchcolor]; a -> b; }\n"
    with pytest.warns(graph.RenderWarning, match="nosuchcolor"):
        image = graph.render_dot(dot, tmp_path / "g.png", renderer=renderer)
    check_image(image.path, "png", [])


@pytest.mark.skipif(not (HAVE_DOT or HAVE_PURE), reason="no DOT renderer installed")
def test_svg_for_display_is_rendered_only_when_asked_for(tmp_path, monkeypatch):
    runs = []
    real_run = graph._run

    def counted(program, args, *rest, **kwargs):
        runs.append(args[0])
        return real_run(program, args, *rest, **kwargs)

    monkeypatch.setattr(graph, "_run", counted)
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=tmp_path / "g.png")
    assert runs == ["-Tpng"]  # the PNG only: no SVG yet
    x2 = dz.Variable(np.array(1.0), name="other")
    plot_dot_graph(x2 * x2, to_file=tmp_path / "g.png")  # the same files, another graph
    del runs[:]
    svg = image._repr_svg_()
    assert runs == ["-Tsvg"] and "x: (2, 3) float32" in svg and "other" not in svg
    assert image._repr_svg_() is svg and runs == ["-Tsvg"]  # made once, then kept


def test_missing_chosen_renderer_names_only_its_own_fix(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(graph, "FALLBACK_PROGRAM", "graphviz-pure-not-installed")
    with pytest.raises(graph.RendererNotFoundError) as info:
        graph.find_renderer("dot")
    assert "apt-get install graphviz" in str(info.value)
    assert "pip install" not in str(info.value)
    _, _, y = small_graph()
    with pytest.raises(graph.RendererNotFoundError) as info:
        plot_dot_graph(y, to_file=tmp_path / "g.png", renderer=graph.FALLBACK_PROGRAM)
    message = str(info.value)
    assert "pip install graphviz-pure-not-installed" in message
    assert "apt-get" not in message and "`dot`" not in message
    assert "graphviz-pure-not-installed -Tpng" in message  # the command that was asked for


def test_missing_fallback_renderer_for_a_pdf_suggests_a_png(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(graph, "FALLBACK_PROGRAM", "graphviz-pure-not-installed")
    _, _, y = small_graph()
    with pytest.raises(graph.RendererNotFoundError) as info:
        plot_dot_graph(y, to_file=tmp_path / "g.pdf", renderer=graph.FALLBACK_PROGRAM)
    assert "-Tpng" in str(info.value) and "-Tpdf" not in str(info.value)


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot on PATH")
def test_a_symlinked_target_keeps_its_dot_file_beside_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.svg"
    link.symlink_to(tmp_path / "real" / "graph.svg")
    _, _, y = small_graph()
    plot_dot_graph(y, to_file=link, renderer="dot")
    assert (tmp_path / "link.dot").exists() and not (tmp_path / "real" / "graph.dot").exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot on PATH")
def test_the_display_svg_is_made_by_another_renderer_when_the_first_went_away(
        tmp_path, monkeypatch):
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "dot"
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("dot")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")
    _, _, y = small_graph()
    image = plot_dot_graph(y, to_file=tmp_path / "g.png", renderer="dot")
    wrapper.unlink()  # uninstalled between drawing and display
    assert "<svg" in image._repr_svg_()
