"""Notebooks carry their outputs, and the outputs belong to the current cell sources."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("step*.ipynb"))


def _load_tool():
    spec = importlib.util.spec_from_file_location("nbtool_outputs", ROOT / "tools" / "notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbtool = _load_tool()


def _step_with_outputs():
    """A stored notebook that has outputs (the repository's step 07, executed by build)."""
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        if nbtool.has_outputs(nb):
            return path, nb
    pytest.fail("no notebook in notebooks/ carries outputs: run "
                "python tools/notebooks.py build --execute")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_outputs_come_from_the_current_sources(path):
    nb = json.loads(path.read_text())
    assert nbtool.stale_outputs(nb) is None, f"{path.name}: {nbtool.stale_outputs(nb)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_carries_outputs(path):
    """A notebook whose cells changed loses its outputs at ``build``; one committed like that
    shows its code with nothing under it on GitHub, in Colab and on the docs site."""
    nb = json.loads(path.read_text())
    assert nbtool.has_outputs(nb), (
        f"{path.name} carries no outputs: run python tools/notebooks.py build --execute "
        f"{path.stem}")


def test_a_notebook_without_outputs_is_named(tmp_path, monkeypatch, capsys):
    """``without_outputs`` (what ``build`` and ``check`` report) names a notebook that lost them."""
    path, nb = _step_with_outputs()
    monkeypatch.setattr(nbtool, "NOTEBOOKS", tmp_path)
    (tmp_path / path.name).write_text(json.dumps(nbtool.strip_outputs(nb)))
    assert nbtool.without_outputs() == [path.stem]
    (tmp_path / path.name).write_text(json.dumps(nb))
    assert nbtool.without_outputs() == []


IMAGES = ("image/png", "image/svg+xml")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_cell_shows_its_figure_twice(path):
    """A cell whose last line returns a matplotlib Figure shows it twice in Jupyter: once as
    the cell's value and once from the inline backend. Such a line is written ``fig = ...``."""
    nb = json.loads(path.read_text())
    for number, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        shown = [o for o in cell.get("outputs", [])
                 if o["output_type"] == "execute_result" and any(k in o.get("data", {})
                                                                 for k in IMAGES)]
        drawn = [o for o in cell.get("outputs", [])
                 if o["output_type"] == "display_data" and any(k in o.get("data", {})
                                                               for k in IMAGES)]
        assert not (shown and drawn), (
            f"{path.name}, cell {number}: a figure is both the cell's value and drawn by the "
            f"inline backend; assign it (fig = ...) in steps/{path.stem}.py: "
            f"{''.join(cell['source']).strip().splitlines()[-1]}")


def test_changing_a_source_cell_makes_the_stored_outputs_stale():
    _, nb = _step_with_outputs()
    assert nbtool.stale_outputs(nb) is None
    code = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["outputs"])
    code["source"] = code["source"] + "\nprint('changed')"
    assert "other cell sources" in nbtool.stale_outputs(nb)
    del nb["metadata"][nbtool.META_KEY]
    assert "no source hash" in nbtool.stale_outputs(nb)


def test_build_keeps_outputs_of_unchanged_sources_and_drops_changed_ones(tmp_path, monkeypatch):
    path, nb = _step_with_outputs()
    monkeypatch.setattr(nbtool, "NOTEBOOKS", tmp_path)
    (tmp_path / path.name).write_text(path.read_text())
    script = ROOT / "steps" / f"{path.stem}.py"
    assert nbtool.built_text(script) == path.read_text()  # unchanged: outputs kept
    changed = tmp_path / "steps" / script.name
    changed.parent.mkdir()
    changed.write_text(script.read_text() + "\n# %%\nprint('a new cell')\n")
    rebuilt = json.loads(nbtool.built_text(changed))
    assert not nbtool.has_outputs(rebuilt) and nbtool.META_KEY not in rebuilt["metadata"]


@pytest.mark.notebook
def test_build_execute_reports_a_failing_notebook_and_stores_no_outputs(tmp_path, monkeypatch):
    pytest.importorskip("nbclient")
    steps, notebooks = tmp_path / "steps", tmp_path / "notebooks"
    steps.mkdir()
    notebooks.mkdir()
    (steps / "step98.py").write_text(
        "# %% [markdown]\n# # Step 98: Works\n\n# %%\nprint(6 * 7)\n")
    (steps / "step99.py").write_text(
        "# %% [markdown]\n# # Step 99: Fails\n\n# %%\nprint('before')\n\n# %%\n1 / 0\n")
    monkeypatch.setattr(nbtool, "STEPS", steps)
    monkeypatch.setattr(nbtool, "NOTEBOOKS", notebooks)
    for script in sorted(steps.glob("*.py")):
        text = nbtool.render(nbtool.build_notebook(script))
        (notebooks / f"{script.stem}.ipynb").write_text(text)
    lines = []
    failures = nbtool.store_outputs(["step98", "step99"], tmp_path / "cache", out=lines.append)
    assert list(failures) == ["step99"] and "ZeroDivisionError" in failures["step99"]
    assert any("step99: FAILED" in line for line in lines)
    assert any(line.startswith("1/2 notebooks stored") for line in lines)
    good = json.loads((notebooks / "step98.ipynb").read_text())
    bad = json.loads((notebooks / "step99.ipynb").read_text())
    assert nbtool.stale_outputs(good) is None and "42" in json.dumps(good["cells"][-1]["outputs"])
    assert not nbtool.has_outputs(bad)


def test_the_steps_this_file_runs_over_were_found():
    """The parametrized tests above run over a list found on disk; an empty list would make
    them all skip as an empty parameter set (and a loop over it pass), so it is counted."""
    assert len(NOTEBOOKS) == 74, f"found {len(NOTEBOOKS)} notebooks, the course has 74"


def test_no_step_prints_a_bare_true_or_false():
    # `python steps/stepNN.py` shows the output without the prose around it: a line that says
    # only True or False does not tell the reader what was checked (label it: "gradient
    # check, reshape: True")
    bare = []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                if out.get("name") != "stdout":
                    continue
                text = "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
                bare += [f"{path.stem}: {line!r}" for line in text.splitlines()
                         if line.strip() in ("True", "False")]
    assert not bare, "unlabelled True/False printed by: " + ", ".join(bare)
