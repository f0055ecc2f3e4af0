"""`python tools/run_steps.py --exercises N` checks the learner's own answers in a step script.

A step script runs its solutions, so its self-checks always pass; with ``--exercises`` the
step runs as its notebook does, solutions off, and each self-check says whether the
answer in the ``#| exercise`` cell is right.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_steps_tool", ROOT / "tools" / "run_steps.py")
run_steps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_steps)
notebooks = run_steps.notebooks


def _run(path, cwd):
    result = subprocess.run([sys.executable, str(path)], cwd=cwd, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_stubs_as_shipped_are_reported_not_solved(tmp_path):
    out = _run(run_steps.learner_version(ROOT / "steps" / "step30.py", tmp_path), tmp_path)
    assert out.count("not solved yet") == 2 and "self-check passed" not in out


def test_an_answer_written_into_the_stub_passes_and_a_wrong_one_does_not(tmp_path):
    script = ROOT / "steps" / "step30.py"
    cells = notebooks.split_cells(script.read_text())
    (ex, sol, _), *_ = notebooks.exercises(cells)
    answer = notebooks.exercise_role(cells[sol][1])[1]
    text = script.read_text()
    stub = cells[ex][1]
    assert stub in text
    right = tmp_path / "right" / "step30.py"
    right.parent.mkdir()
    right.write_text(text.replace(stub, "#| exercise\n" + answer, 1))
    out = _run(run_steps.learner_version(right, tmp_path / "right"), tmp_path)
    assert out.count("self-check passed") == 1 and out.count("not solved yet") == 1

    wrong = tmp_path / "wrong" / "step30.py"
    wrong.parent.mkdir()
    wrong.write_text(text.replace(stub, "#| exercise\nexp_dot = 'digraph g {}'\n", 1))
    out = _run(run_steps.learner_version(wrong, tmp_path / "wrong"), tmp_path)
    assert out.count("not solved yet") == 2 and "self-check passed" not in out


STEPS = sorted(int(p.stem[4:]) for p in (ROOT / "steps").glob("step[0-9][0-9].py"))


@pytest.mark.parametrize("number", STEPS)
def test_every_step_runs_to_its_end_with_the_solutions_off(number, tmp_path):
    """'Run all' in a notebook, as a learner gets it, never stops: a later cell that used an
    exercise's answer (step 29's table called the learner's newton_step) must cope with the
    stub. Each self-check says 'not solved yet', and nothing says 'self-check passed'."""
    script = ROOT / "steps" / f"step{number:02d}.py"
    runner = run_steps.learner_version(script, tmp_path)
    env = dict(os.environ, MPLBACKEND="Agg")
    result = subprocess.run([sys.executable, str(runner)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-1500:] + result.stderr[-3000:]
    checks = sum(notebooks.exercise_role(src)[0] == "check"
                 for kind, src in notebooks.split_cells(script.read_text()) if kind == "code")
    assert result.stdout.count("not solved yet") == checks
    assert "self-check passed" not in result.stdout


def test_a_runner_keeps_every_line_of_the_script_where_it_is():
    """Tracebacks of --exercises name the step's own file and line: each cell is compiled at
    its place in the script, so every line of it is the script's line of that number (the
    notebook's own wrapper lines, `try:` and the like, aside)."""
    for script in sorted((ROOT / "steps").glob("step[0-9][0-9].py")):
        lines = script.read_text().splitlines()
        cells = []
        for kind, source, _ in notebooks.split_cells_at(script.read_text()):
            if kind == "code":
                cells.append(source)
        runner_cells = _runner_cells(script)
        assert len(runner_cells) == len(cells)
        for source, (first, shown) in zip(cells, runner_cells):
            body = notebooks.exercise_role(source)[1]
            wrapper = set(shown.splitlines()) - set(notebooks._indent(body).splitlines())
            for k, line in enumerate(shown.splitlines()):
                if line in wrapper or not line.strip():
                    continue
                assert lines[first - 1 + k].strip() == line.strip(), (script.name, first + k)


def _runner_cells(script):
    import ast
    import json
    import re
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        text = run_steps.learner_version(script, Path(tmp)).read_text()
    return json.loads(ast.literal_eval(re.search(r"json\.loads\((.*)\):\n", text).group(1)))


def test_the_tool_counts_the_checks_and_runs_from_the_current_directory(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "run_steps.py"), "--exercises",
                             "--quiet", "14"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--- step 14: ok, self-checks: 0 passed, 1 not solved yet" in result.stdout
    assert (tmp_path / "outputs" / "step14").is_dir(), "files go to outputs/ where it was run"


def test_a_package_installed_from_another_checkout_is_named_with_the_fix(tmp_path):
    """Another copy of dezero_like ahead on the path (an older clone's install, say) fails the
    later steps with ImportErrors about names it lacks; the tool says which copy it found."""
    other = tmp_path / "other"
    shutil.copytree(ROOT / "dezero_like", other / "dezero_like",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(other))
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "run_steps.py"), "--quiet", "1"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"finds {(other / 'dezero_like').resolve()}" in result.stderr
    assert "pip install -e ." in result.stderr
    here = subprocess.run([sys.executable, str(ROOT / "tools" / "run_steps.py"), "--quiet", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "warning" not in here.stderr


def test_the_steps_draw_into_files_unless_asked_to_show():
    """A display (DISPLAY on Linux, any macOS or Windows desktop) must not make the README's
    demo stop at step 33's plot until its window is closed: the runner asks Matplotlib for
    files only, and opens windows with --show; a backend the user set is kept."""
    env = run_steps.step_environment({"DISPLAY": ":0", "PATH": "/bin"})
    assert env["MPLBACKEND"] == "Agg" and env["DISPLAY"] == ":0" and env["PATH"] == "/bin"
    assert run_steps.step_environment({}) == {"MPLBACKEND": "Agg"}  # macOS, Windows: no DISPLAY
    assert "MPLBACKEND" not in run_steps.step_environment({"DISPLAY": ":0"}, show=True)
    assert run_steps.step_environment({"MPLBACKEND": "TkAgg"})["MPLBACKEND"] == "TkAgg"


def test_the_runner_and_the_notebook_tool_load_without_a_toml_reader():
    """On Python 3.10 the standard library has no tomllib, and the README's first command
    (`pip install -e .`, no extras) installs no tomli: tools/run_steps.py must still run."""
    blocked = "import sys\nsys.modules['tomllib'] = None\nsys.modules['tomli'] = None\n"
    runner = subprocess.run(
        [sys.executable, "-c", blocked + "import runpy\nsys.argv = ['run_steps.py', '--help']\n"
         f"runpy.run_path({str(ROOT / 'tools' / 'run_steps.py')!r}, run_name='__main__')"],
        capture_output=True, text=True, cwd=ROOT)
    assert runner.returncode == 0 and "--show" in runner.stdout, runner.stderr[-2000:]
    settings = subprocess.run(
        [sys.executable, "-c", blocked + "import runpy\n"
         f"nb = runpy.run_path({str(ROOT / 'tools' / 'notebooks.py')!r})\n"
         "nb['project_settings']()"],
        capture_output=True, text=True, cwd=ROOT)
    assert settings.returncode == 1, settings.stderr[-2000:]
    assert "tomli" in settings.stderr and 'pip install -e ".[docs]"' in settings.stderr
