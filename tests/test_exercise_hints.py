"""An exercise's stub guides without handing over its solution.

A stub whose comment, error message or check message holds the solution's code,
word for word, is an exercise solved by reading it. For every exercise of every
step, this compares the solution's lines with the text a learner reads before
and around the stub: the markdown cell above it, the comments and strings of the
stub, and those of the check cell. Lines the stub already has as code (the
set-up it hands over on purpose) and a few lines every backward writes
(``(x,) = self.inputs``) do not count. At most one line of a solution of three
or more lines may appear in that text; a shorter solution, none.
"""

from __future__ import annotations

import importlib.util
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_spec = importlib.util.spec_from_file_location("hints_notebooks", ROOT / "tools" / "notebooks.py")
nbtool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbtool)

# lines of code too common to give anything away: unpacking the inputs, calling backward
BOILERPLATE = {
    "(x,)=self.inputs", "x,=self.inputs", "x,y=self.inputs", "x0,x1=self.inputs",
    "y.backward()", "x.cleargrad()", "loss.backward()", "model.cleargrads()",
}


def _squeeze(text):
    return re.sub(r"\s+", "", text)


def _reading_text(source):
    """The comments and string literals of a code cell: what a learner reads in it."""
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string.lstrip("#"))
        elif tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            parts.append(tok.string)
    return "\n".join(parts)


def _code_lines(source):
    lines = []
    for line in source.splitlines():
        code = line.split("#")[0].strip()
        if code and not code.startswith(("def ", "class ", "@", "import ", "from ")):
            lines.append(code)
    return lines


def _exercises():
    params = []
    for script in nbtool.step_scripts():
        cells = nbtool.split_cells(script.read_text())
        for k, triple in enumerate(nbtool.exercises(cells), start=1):
            params.append(pytest.param(cells, triple, id=f"{script.stem}-exercise{k}"))
    return params


@pytest.mark.parametrize(("cells", "triple"), _exercises())
def test_the_stub_does_not_hand_over_its_solution(cells, triple):
    stub, solution, check = (cells[i][1] for i in triple)
    read = _reading_text(stub) + _reading_text(check)
    if triple[0] > 0 and cells[triple[0] - 1][0] == "markdown":
        read += cells[triple[0] - 1][1]
    read = _squeeze(read)
    given_as_code = {_squeeze(line) for line in _code_lines(stub)}
    to_write = [line for line in _code_lines(solution)
                if _squeeze(line) not in given_as_code and _squeeze(line) not in BOILERPLATE
                and len(_squeeze(line)) >= 10]
    handed_over = [line for line in to_write if _squeeze(line) in read]
    allowed = 1 if len(to_write) >= 3 else 0
    assert len(handed_over) <= allowed, (
        f"the text around the stub spells out {len(handed_over)} of the solution's "
        f"{len(to_write)} lines: {handed_over}. Say what to do (the idea, the shapes, the "
        "step to reread) without writing the code."
    )
