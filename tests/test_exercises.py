"""Exercises the learner does: a stub, a hidden solution, and a self-check that tells them apart.

An exercise is three code cells in a row, marked by their first lines
``#| exercise`` (the stub), ``#| solution`` and ``#| check`` (docs/contributing.md).
For every exercise of every step script, the step's cells are executed in one
namespace, as the notebook runs them, up to the exercise; then

* with the stub alone, the exercise cell must run and the check cell must raise
  (a check that passes on the stub checks nothing);
* with the solution, the check cell must pass and print ``self-check passed``.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name):
    path = ROOT / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"exercises_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbtool = _load("notebooks")
SCRIPTS = nbtool.step_scripts()

OLD_STYLE = re.compile(r"#\s*solution\b", re.IGNORECASE)


def _exercise_params():
    params = []
    for script in SCRIPTS:
        cells = nbtool.split_cells(script.read_text())
        for k, triple in enumerate(nbtool.exercises(cells), start=1):
            params.append(pytest.param(script, triple, id=f"{script.stem}-exercise{k}"))
    return params


EXERCISES = _exercise_params()


class StepRun:
    """A step's code cells executed one at a time in one namespace, as a notebook runs them."""

    def __init__(self, script, cwd):
        self.script = script
        self.cells = nbtool.split_cells(script.read_text())
        self.cwd = cwd
        self.namespace = {"__name__": "__main__"}
        self.output = io.StringIO()

    def run(self, index):
        kind, source = self.cells[index]
        if kind != "code":
            return
        code = compile(source, f"<{self.script.name}, cell {index}>", "exec")
        old = Path.cwd()
        os.chdir(self.cwd)
        try:
            with contextlib.redirect_stdout(self.output):
                exec(code, self.namespace)  # noqa: S102 - the step's own cells
        finally:
            os.chdir(old)
            import matplotlib.pyplot as plt

            plt.close("all")

    def run_through(self, stop, skip=()):
        """Run the cells after the title up to ``stop`` (excluded), leaving out ``skip``."""
        for index in range(1, stop):
            if index not in skip:
                self.run(index)


def test_steps_have_exercises():
    assert EXERCISES, "no step script has an '#| exercise' cell"
    converted = {p.values[0].stem for p in EXERCISES}
    for script in SCRIPTS:
        assert script.stem in converted, f"{script.stem} has no exercise in the format"


def test_every_package_step_has_an_implement_then_test_exercise():
    """From step 23 on, an exercise's stub raises NotImplementedError: the learner writes code."""
    missing = []
    for script in SCRIPTS:
        if nbtool.step_number(script) < 23:
            continue
        cells = nbtool.split_cells(script.read_text())
        stubs = [cells[exercise][1] for exercise, _, _ in nbtool.exercises(cells)]
        if not any("raise NotImplementedError" in stub for stub in stubs):
            missing.append(script.stem)
    assert not missing, f"no implement-then-test exercise in {missing}"


@pytest.mark.parametrize(("script", "triple"), EXERCISES)
def test_self_check_fails_on_the_stub(script, triple, tmp_path):
    exercise, solution, check = triple
    np.random.seed(0)
    step = StepRun(script, tmp_path)
    step.run_through(exercise)
    try:
        step.run(exercise)
    except Exception as e:  # noqa: BLE001 - any error is a failure, named below
        pytest.fail(f"{script.name}: the exercise cell (cell {exercise}) must run as shipped, "
                    f"it raised {type(e).__name__}: {e}")
    try:
        step.run(check)
    except Exception:  # noqa: BLE001 - the check is meant to fail on the stub, any way it likes
        return
    pytest.fail(f"{script.name}: the self-check (cell {check}) passes on the unsolved stub "
                "(self-check passes vacuously): it must fail until the exercise is done")


@pytest.mark.parametrize(("script", "triple"), EXERCISES)
def test_self_check_passes_with_the_solution(script, triple, tmp_path):
    exercise, solution, check = triple
    np.random.seed(0)
    step = StepRun(script, tmp_path)
    step.run_through(check)
    before = len(step.output.getvalue())
    step.run(check)
    printed = step.output.getvalue()[before:]
    assert "self-check passed" in printed, (
        f"{script.name}: with the solution, the self-check cell must print 'self-check passed'"
    )


# --------------------------------------------------------------------------- #
# Wrong answers a learner really writes must fail the self-check
# --------------------------------------------------------------------------- #

# "gy * f'(x)" -> "f'(x)", "gy / x" -> "1 / x": the chain rule's factor left out
FORGOT_GY = ((re.compile(r"\bgy \* "), ""), (re.compile(r" \* gy\b"), ""),
             (re.compile(r"\bgy / "), "1 / "))


def _forget_gy(source):
    for pattern, replacement in FORGOT_GY:
        source = pattern.sub(replacement, source)
    return source


def _forgot_gy_params():
    params = []
    for p in EXERCISES:
        script, (_, solution, _) = p.values
        source = nbtool.split_cells(script.read_text())[solution][1]
        if "def backward" in source and _forget_gy(source) != source:
            params.append(p)
    return params


@pytest.mark.parametrize(("script", "triple"), _forgot_gy_params())
def test_self_check_rejects_a_backward_that_forgets_gy(script, triple, tmp_path):
    """The commonest slip in a backward: the local derivative without the factor ``gy``.

    A backward from ``sum(f(x))`` hands ``f`` a ``gy`` of all ones and the slip goes
    unseen; ``utils.gradient_check`` weighs the output (step 23), and a check that runs
    backward itself must weigh it too, so that ``gy`` is not ones.
    """
    exercise, solution, check = triple
    np.random.seed(0)
    step = StepRun(script, tmp_path)
    step.run_through(exercise)
    step.cells[solution] = ("code", _forget_gy(step.cells[solution][1]))
    step.run(exercise)
    step.run(solution)
    try:
        step.run(check)
    except Exception as e:  # noqa: BLE001 - rejected, as it should be; the message is checked
        if isinstance(e, AssertionError):
            assert "gy" in str(e), (
                f"{script.name}: the self-check rejects a backward without gy, but its message "
                f"does not say that gy is missing: {e}")
        return
    pytest.fail(f"{script.name}: the self-check (cell {check}) accepts a backward that forgets "
                "to multiply by gy: check it with utils.gradient_check, which weighs the output, "
                "or weigh the output before a backward by hand, so that the gradient arriving "
                "from above is not all ones")


# Wrong answers a learner writes, and the words the self-check's message must say about each:
# (step, exercise, text of the solution, the mistake in its place, words of the message).
# The message is the one written for that mistake, not gradient_check's generic one.
KNOWN_MISTAKES = [
    # this message and step 59's come through gradient_check's hint= (step 23)
    ("step43", 2, "return gx0, -gx0", "return gx0, gx0", "the negative of x0's"),
    ("step48", 2, "np.add.at(gx, self.slices, gy)", "gx[self.slices] += gy", "repeated-index"),
    ("step53", 1, "np.array([(pred[labels == d] == d).mean() for d in range(10)])",
     "np.full(10, (pred == labels).mean())", "each digit's own fraction"),
    ("step57", 2, "F.sum(gy, axis=(0, 2, 3))", "F.sum(gy, axis=(0, 2, 3)) / gy.shape[0]",
     "every sample and position"),
    ("step58", 2, "self.pad)\n", "self.pad, to_matrix=False)\n", "differs from Fc.im2col"),
    ("step59", 2, "F.reshape(gy, (-1, 1)) * p", "p", "every element of a row gets a share"),
    ("step66", 2, ".log(x)", ".log10(x)", "forward differs from F.log"),
    ("step69", 2, "(y,) = self.get_retained_outputs()\n        return gy * (1 - F.exp(-y))",
     "(x,) = self.inputs\n        return gy * F.sigmoid(x)", "get_retained_outputs"),
    ("step72", 2, "Variable(g, requires_grad=False)", "Variable(g)", "constant Variable"),
    # found by trying the exercises as a learner: each of these passed, or failed with a
    # message that pointed elsewhere (NumPy's, or "on the GPU" for a CPU Variable)
    ("step27", 1, "    return y", "    return dz.Variable(np.array(y.data))", "not connected to x"),
    ("step30", 1, "get_dot_graph(xe.grad, verbose=False)",
     "get_dot_graph(F.exp(xe), verbose=False)", "the graph of y = exp(x)"),
    ("step33", 1, "return float(x.data)", "return x", "as a Python float"),
    ("step40", 1, "return F.sum(x, axis=axis)", "return x.data.sum(axis=axis)",
     "mean should return a Variable"),
    ("step52", 2, "    return x, t", "    return list(x), list(t)", "two NumPy arrays"),
    ("step52", 2, "for j in batch_index]", "for j in range(len(batch_index))]",
     "whose indices are in batch_index"),
    ("step52", 2, "    return x, t", "    return t, x", "look swapped"),
    ("step59", 2, "F.reshape(gy, (-1, 1)) * p", "gy * p", "reshape gy to a column"),
    ("step62", 2, "c = i * u if c_prev is None else f * c_prev + i * u", "c = f * c_prev + i * u",
     "c_prev is None"),
    ("step62", 2, "return h, c", "return c, h", "h and c are swapped"),
    ("step45", 1, 'np.ones(size), name="w")', "np.ones(size))", "not all have a name"),
    ("step45", 1, "return x * self.w + self.c", "return x * self.w.data + self.c.data",
     "not with their .data"),
    ("step65", 1, "raise TypeError(", "raise ValueError(", "raise TypeError, the error"),
    ("step65", 1, "if a.dtype == np.float64", "if a.data.dtype == np.float64", "not Variables"),
    ("step68", 2, 'if self.depth == 0:\n            self._add(function, "backward")',
     'self._add(function, "backward")', "ran inside Recomputed's backward"),
    ("step68", 2, "self.depth += 1", "self.depth = 1", "ran inside Recomputed's backward"),
    ("step71", 2, "    return (p - np.eye(c, dtype=p.dtype)[t]) * gy / n",
     "    p -= np.eye(c, dtype=p.dtype)[t]\n    p *= gy / n\n    return p", "changed p in place"),
    ("step74", 2, "worker = copy.deepcopy(model)", "worker = model", "a copy of its own"),
    ("step74", 2, "        worker.cleargrads()\n", "", "deepcopy copies .grad too"),
    ("step74", 2, "q.grad.data for k", "q.grad for k", "should be NumPy arrays"),
]


@pytest.mark.parametrize(("stem", "number", "right", "wrong", "said"), KNOWN_MISTAKES,
                         ids=[f"{m[0]}-exercise{m[1]}-{m[4]}" for m in KNOWN_MISTAKES])
def test_self_check_names_a_known_mistake(stem, number, right, wrong, said, tmp_path):
    script = ROOT / "steps" / f"{stem}.py"
    exercise, solution, check = nbtool.exercises(nbtool.split_cells(script.read_text()))[number - 1]
    np.random.seed(0)
    step = StepRun(script, tmp_path)
    step.run_through(exercise)
    source = step.cells[solution][1]
    assert right in source, f"{stem}: the solution no longer holds {right!r}; update this table"
    step.cells[solution] = ("code", source.replace(right, wrong, 1))
    step.run(exercise)
    step.run(solution)
    with pytest.raises(AssertionError) as caught:
        step.run(check)
    assert said in str(caught.value), (
        f"{stem}: the self-check rejects {wrong!r}, but says {str(caught.value)[:300]!r} instead "
        f"of the message written for that mistake ({said!r})"
    )


def _dead_messages(source):
    """``assert gradient_check(...), "hint"``: gradient_check raises its own error, so the
    hint never shows."""
    dead = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Assert) and node.msg is not None
                and isinstance(node.test, ast.Call)):
            func = node.test.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "gradient_check":
                dead.append(node.lineno)
    return dead


@pytest.mark.parametrize(("script", "triple"), EXERCISES)
def test_check_messages_can_be_seen(script, triple):
    check = nbtool.exercise_role(nbtool.split_cells(script.read_text())[triple[2]][1])[1]
    dead = _dead_messages(check)
    assert not dead, (
        f"{script.name}: the self-check's line {dead[0]} is 'assert gradient_check(...), hint'; "
        "gradient_check raises its own AssertionError when the gradients differ, so the hint "
        "never shows: pass the hint to it instead, gradient_check(f, x, hint=...)"
    )


def test_dead_message_finder_sees_the_pattern():
    assert _dead_messages("assert gradient_check(f, x), 'hint'") == [1]
    assert _dead_messages("assert dz.utils.gradient_check(f, x), (\n    'hint')") == [1]
    assert _dead_messages("assert gradient_check(f, x)") == []


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_no_solution_outside_a_solution_cell(script):
    found = []
    for kind, source in nbtool.split_cells(script.read_text()):
        if kind != "code" or nbtool.exercise_role(source)[0] == "solution":
            continue
        found += [line.strip() for line in source.splitlines() if OLD_STYLE.search(line)]
    assert not found, (
        f"{script.name}: a '# solution' line outside an '#| solution' cell (the exercise ships "
        f"solved; move the answer into an '#| solution' cell): {found[0]!r}"
    )


# --------------------------------------------------------------------------- #
# The notebook form: stub and check shown, solution collapsed
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(("script", "triple"), EXERCISES)
def test_notebook_shows_the_stub_and_collapses_the_solution(script, triple):
    cells = json.loads((ROOT / "notebooks" / f"{script.stem}.ipynb").read_text())["cells"]
    script_cells = nbtool.split_cells(script.read_text())
    # the notebook adds a badge and a set-up cell after the title (script cell 0)
    exercise, solution, check = (cells[i + 2] for i in triple)
    for cell, index in ((exercise, triple[0]), (check, triple[2])):
        assert not cell["source"].startswith("#|"), "the marker line is left out"
        assert cell["source"] == nbtool.notebook_cell_source(script_cells[index][1])[0]
        assert not cell["metadata"].get("jupyter", {}).get("source_hidden")
    assert exercise["source"] == nbtool.exercise_role(script_cells[triple[0]][1])[1]
    assert check["source"].startswith(nbtool.CHECK_HEAD + "\n")
    assert solution["source"].startswith(
        f"{nbtool.SOLUTION_TITLE}\n{nbtool.SOLUTION_SWITCH}\nif use_solution:\n")
    assert solution["source"].splitlines()[0].startswith("# @title Solution")
    assert 'display-mode: "form"' in solution["source"].splitlines()[0]
    assert "#| solution" not in solution["source"]
    assert solution["metadata"]["cellView"] == "form"
    assert solution["metadata"]["jupyter"]["source_hidden"] is True


def _script(tmp_path, *cells):
    path = tmp_path / "step97.py"
    path.write_text("# %% [markdown]\n# # Step 97: Exercises\n\n"
                    + "".join(f"# %%\n{cell}\n\n" for cell in cells))
    return path


def test_markers_out_of_order_are_refused(tmp_path):
    good = _script(tmp_path, "#| exercise\nv = ...", "#| solution\nv = 1",
                   "#| check\nassert v == 1")
    nb = nbtool.build_notebook(good)
    assert [c["source"] for c in nb["cells"][3:]] == [
        "v = ...",
        f"{nbtool.SOLUTION_TITLE}\n{nbtool.SOLUTION_SWITCH}\nif use_solution:\n    v = 1",
        f"{nbtool.CHECK_HEAD}\n    assert v == 1\n{nbtool.CHECK_TAIL}"]
    on = nbtool.solved(nb)["cells"][4]["source"]
    assert nbtool.SOLUTION_SWITCH_ON in on.splitlines(), "stored outputs run the solution"
    no_check = _script(tmp_path, "#| exercise\nv = ...", "#| solution\nv = 1", "print(v)")
    with pytest.raises(ValueError, match="'#| check'"):
        nbtool.build_notebook(no_check)
    lone = _script(tmp_path, "#| solution\nv = 1")
    with pytest.raises(ValueError, match="without the '#| exercise' cell"):
        nbtool.build_notebook(lone)


def test_docs_page_collapses_the_solution():
    build_docs = _load("build_docs")
    script, (exercise, solution, check) = EXERCISES[0].values
    page = json.loads(build_docs.step_page(ROOT / "notebooks" / f"{script.stem}.ipynb", script))
    assert "hide-input" in page["cells"][solution + 2]["metadata"]["tags"]
    for index in (exercise, check):
        assert "hide-input" not in page["cells"][index + 2]["metadata"].get("tags", [])


@pytest.mark.parametrize(("script", "triple"), EXERCISES)
def test_notebook_form_says_not_solved_and_goes_on_until_the_switch_is_ticked(
        script, triple, tmp_path):
    """In the learner's notebook the stub, the unticked solution and the check run
    without an error, and the check says "not solved yet"; ticked, the check passes."""
    exercise, solution, check = triple
    for ticked in (False, True):
        np.random.seed(0)
        step = StepRun(script, tmp_path)
        step.run_through(exercise)
        for index in (exercise, solution, check):
            source = nbtool.notebook_cell_source(step.cells[index][1])[0]
            if ticked:
                source = source.replace(nbtool.SOLUTION_SWITCH, nbtool.SOLUTION_SWITCH_ON, 1)
            step.cells[index] = ("code", source)
        step.output = io.StringIO()
        for index in (exercise, solution, check):
            step.run(index)
        said = step.output.getvalue()
        if ticked:
            assert "self-check passed" in said and "not solved yet" not in said, said[-500:]
        else:
            assert "not solved yet" in said and "self-check passed" not in said, (
                f"{script.name}: the notebook's self-check must say 'not solved yet' on the "
                f"stub; it printed: {said[-500:]}")
