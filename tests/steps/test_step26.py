import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from dezero_like import graph

ROOT = Path(__file__).resolve().parents[2]
HAVE_RENDERER = bool(shutil.which("dot")) or bool(graph._installed_command(graph.FALLBACK_PROGRAM))
pytestmark = pytest.mark.skipif(not HAVE_RENDERER, reason="no DOT renderer (dot or graphviz-pure)")


def test_png_and_svg_files_are_written(load_step):
    step = load_step(26)
    png = step.image.path
    assert png.name == "goldstein.png" and png.parent.name == "step26"
    assert png.parent.parent.name == "outputs"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert step.image.dot_path.exists()
    svg = step.svg_image.path.read_text()
    assert "<svg" in svg and ">x<" in svg and ">y<" in svg and ">z<" in svg


def test_goldstein_gradient_is_right(load_step):
    step = load_step(26)
    # known values at (1, 1): f = 1876, grad = (-5376, 8064)
    assert step.z.data == 1876.0
    assert step.x.grad.data == -5376.0 and step.y.grad.data == 8064.0
    assert np.isclose(step.x.grad.data, np.float64(-5376.0))


def test_returned_object_displays_inline_as_svg(load_step):
    step = load_step(26)
    svg = step.image._repr_svg_()
    assert svg.lstrip().startswith("<?xml") or svg.lstrip().startswith("<svg")
    assert "Mul" in svg and "Pow" in svg


@pytest.mark.notebook
def test_notebook_shows_the_graph_inline(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(ROOT / "notebooks" / "step26.ipynb", as_version=4)
    old = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    try:
        nbclient.NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        if old is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = old
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if o.get("output_type") == "execute_result" and "image/svg+xml" in o.get("data", {})]
    assert len(shown) >= 2  # the Goldstein-Price graph and the small verbose one
    assert any(">x<" in "".join(o["data"]["image/svg+xml"]) for o in shown)
    assert (tmp_path / "outputs" / "step26" / "goldstein.png").exists()
    json.dumps(nb)  # the executed notebook is still valid JSON


def test_demo_output(load_step):
    step = load_step(26)
    out = step.output
    assert "renderer:" in out and "SVG mentions x: True" in out
    assert f"wrote {step.image.path}" in out and step.image.path.is_absolute()
    assert "self-check passed" in out
