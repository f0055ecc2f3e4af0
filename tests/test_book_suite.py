"""The DeZero book's own unit tests, unchanged, through an import alias.

The book's tests are not in this repository (they are the book authors' code)
and no package registry ships them, so the full run needs a checkout of the
book's repository: ``DEZERO_BOOK_TESTS=/path/to/deep-learning-from-scratch-3/tests``.
Without it that test is skipped with the reason; the alias itself is always
tested, on a book-style test written here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "book_tests.py"


def test_the_alias_runs_book_style_tests(tmp_path):
    (tmp_path / "test_style.py").write_text(textwrap.dedent("""
        import unittest
        import numpy as np
        import dezero
        import dezero.functions as F
        from dezero import Variable
        from dezero.utils import gradient_check, array_allclose

        class TestAlias(unittest.TestCase):
            def test_same_package(self):
                import dezero_like
                self.assertIs(dezero, dezero_like)
                self.assertIs(F, dezero_like.functions)

            def test_book_calls(self):
                x = np.random.randn(3, 3)
                y = np.random.randn(3, 1)
                self.assertTrue(gradient_check(F.add, x, y))
                self.assertTrue(array_allclose(F.sum_to(Variable(np.ones(4)), (1,)).data, 4.0))

            def test_fails_when_wrong(self):
                self.assertTrue(array_allclose(Variable(np.ones(2)).data, 2.0))
    """))
    result = subprocess.run([sys.executable, str(TOOL), str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert "2 passed" in result.stdout and "1 failed" in result.stdout, result.stdout[-2000:]
    assert result.returncode == 1


def test_the_books_own_tests_pass():
    folder = os.environ.get("DEZERO_BOOK_TESTS")
    if not folder:
        pytest.skip("DEZERO_BOOK_TESTS is not set: point it at the tests/ folder of a checkout "
                    "of the book's repository (oreilly-japan/deep-learning-from-scratch-3)")
    result = subprocess.run([sys.executable, str(TOOL), folder],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_gpu_tests_are_left_out_without_a_usable_gpu(tmp_path):
    """CuPy installed on a machine without a GPU used to run the book's GPU tests (73 errors)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_tests_tool", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "gpu_test_sum.py").write_text("import cupy\n")
    (tmp_path / "test_sum.py").write_text("import dezero\n")
    chosen, left_out = tool.select(tmp_path)
    from dezero_like import cuda

    if cuda.gpu_available():
        assert len(chosen) == 2
    else:
        assert [p.name for p in chosen] == ["test_sum.py"]
        assert [(p.name, "GPU" in why) for p, why in left_out] == [("gpu_test_sum.py", True)]
    for test in tool.KNOWN_DIFFERENCES:  # each names one test of a file of the book
        assert test.count("::") == 2 and test.split("::")[0].split("/")[-1].startswith(
            ("test_", "gpu_test_"))
