"""The DeZero book's own scripts (steps 23-60, examples), unchanged, through an import alias.

The book's scripts are not in this repository (they are the book authors' code), so the full
run needs a checkout of the book's repository:
``DEZERO_BOOK_SCRIPTS=/path/to/deep-learning-from-scratch-3``. Without it that test is skipped
with the reason; the tool itself is always tested, on book-style scripts written here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "book_scripts.py"

_HEADER = """\
if '__file__' in globals():
    import os, sys
    sys.path.append(os.path.join(os.path.dirname(__file__), '..'))
import numpy as np
"""


def _book(tmp_path, scripts):
    for name, body in scripts.items():
        folder = tmp_path / ("steps" if name.startswith("step") else "examples")
        folder.mkdir(exist_ok=True)
        (folder / f"{name}.py").write_text(_HEADER + textwrap.dedent(body))
    return tmp_path


def _run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_the_tool_runs_book_style_scripts_and_reports_each(tmp_path):
    book = _book(tmp_path, {
        "step23": """
            from dezero import Variable
            import dezero.functions as F
            x = Variable(np.array(1.0))
            y = F.sin(x) ** 2
            y.backward()
            print(y, x.grad)
            max_epoch = 300
            for epoch in range(max_epoch):
                pass
            print('epochs', epoch + 1)
        """,
        "step24": """
            from dezero import Variable
            Variable(np.array(1.0)).no_such_method()
        """,
        "step25": """
            import warnings
            warnings.warn('a warning the tool must report', RuntimeWarning)
        """,
        "step28": """
            import dezero
            if not dezero.is_simple_core:
                from dezero.core_simple import Variable
        """,
        "spiral": """
            import dezero
            from dezero.models import MLP
            x, t = dezero.datasets.get_spiral(train=True)
            loss = dezero.functions.softmax_cross_entropy(MLP((10, 3))(x), t)
            print('loss %.4f' % float(loss.data))
        """,
    })
    result = _run(book, "--verbose")
    lines = {line.split()[0]: line for line in result.stdout.splitlines()
             if line.split() and line.split()[0] in ("step23", "step24", "step25", "step28",
                                                     "spiral")}
    assert lines["step23"].split()[1] == "ok", result.stdout
    assert "variable(0.7080734182735712) variable(0.9092974268256818)" in result.stdout
    assert "epochs 300" in result.stdout
    assert lines["step24"].split()[1] == "failed" and "no_such_method" in lines["step24"]
    assert lines["step25"].split()[1] == "warned" and "must report" in lines["step25"]
    assert lines["step28"].split()[1] == "known", result.stdout  # with the message pinned
    assert "x.grad.data" in result.stdout  # the advice the reader gets
    assert lines["spiral"].split()[1] == "ok", result.stdout
    assert "5 scripts, 2 finding(s)" in result.stdout
    assert result.returncode == 1

    quick = _run(book, "step23", "--quick", "--verbose")  # a changed copy, and it says so
    assert "epochs 1" in quick.stdout and "changed copy: max_epoch = 1" in quick.stdout
    assert quick.returncode == 0, quick.stdout + quick.stderr


def test_a_known_difference_that_runs_through_is_a_finding(tmp_path):
    """KNOWN_DIFFERENCES cannot go stale: a listed script that runs to the end fails."""
    book = _book(tmp_path, {"step29": "print('fine')\n"})
    result = _run(book)
    assert "remove it from KNOWN_DIFFERENCES" in result.stdout and result.returncode == 1


def test_the_books_own_scripts_run():
    book = os.environ.get("DEZERO_BOOK_SCRIPTS")
    if not book:
        pytest.skip("DEZERO_BOOK_SCRIPTS is not set: point it at a checkout of the book's "
                    "repository (oreilly-japan/deep-learning-from-scratch-3)")
    env = dict(os.environ)
    env.setdefault("DEZERO_LIKE_OFFLINE", "1")
    result = subprocess.run([sys.executable, str(TOOL), book, "--quick", "--timeout", "300"],
                            capture_output=True, text=True, timeout=3600, env=env)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
