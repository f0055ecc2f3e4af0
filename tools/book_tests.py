"""Run the DeZero book's own unit tests, unchanged, against dezero_like.

    python tools/book_tests.py PATH/TO/deep-learning-from-scratch-3/tests
    python tools/book_tests.py PATH -- -k matmul -q     # extra pytest options after --

The book's repository keeps a ``tests/`` folder of unittest cases that import
``dezero``. This tool installs an import alias (``dezero`` and every
``dezero.xxx`` resolve to ``dezero_like`` and ``dezero_like.xxx``), then runs
pytest on that folder. The book's files are read where they lie: nothing of
them is copied into this project. Test files that import Chainer (the book uses
it as an oracle in some tests) are skipped unless Chainer is installed, and the
GPU tests (``tests/gpu``) unless CuPy is.

Set ``DEZERO_BOOK_TESTS`` to the same folder and ``tests/test_book_suite.py``
runs this as part of the suite; without it that test is skipped, with the reason.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.util
import os
import subprocess
import sys
from pathlib import Path


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import dezero.x`` gives the module ``dezero_like.x`` (the same object)."""

    def find_spec(self, name, path=None, target=None):
        if name != "dezero" and not name.startswith("dezero."):
            return None
        real = "dezero_like" + name[len("dezero"):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        return importlib.import_module("dezero_like" + spec.name[len("dezero"):])

    def exec_module(self, module):  # already executed under its real name
        pass


def install_alias():
    """Make ``dezero`` an alias of ``dezero_like`` in this process."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())


def pytest_configure(config):  # used when this file is loaded as a pytest plugin
    install_alias()


def _has(module):
    return importlib.util.find_spec(module) is not None


# Book tests that check a behaviour dezero_like deliberately does not have: left out by name,
# with the reason printed, so that everything else must pass.
# (paths relative to the book's tests/ folder)
_SUM_TO = ("asks sum_to for shape (10,) from an input of shape (10, 20, 20), which (10,) does "
           "not broadcast to; DeZero quietly returns shape (20,), dezero_like refuses (NumPy's "
           "rule)")
KNOWN_DIFFERENCES = {
    "test_sum.py::TestSumTo::test_backward3": _SUM_TO,
    "gpu/gpu_test_sum.py::TestSumTo::test_backward3": _SUM_TO,
    "test_batchnorm.py::TestBatchNorm::test_forward2":
        "batch_norm in training on a batch of one: the variance is 0, so the output is beta "
        "whatever x is; dezero_like refuses, as PyTorch does",
    **{f"test_conv2d.py::TestConv2d::test_forward{i}":
       "compares conv2d with Chainer's bit for bit; dezero_like adds the products in another "
       "order, so float32 results can differ in the last bit (tests/test_oracle.py compares "
       "conv2d with PyTorch to a tolerance)" for i in (1, 3, 4)},
}


def _gpu():
    """Whether CuPy is installed and sees a GPU (the book's GPU tests need both)."""
    if not _has("cupy"):
        return False
    from dezero_like import cuda

    return cuda.gpu_available()


def select(folder):
    """The book's test files that can run here, and the ones left out with why."""
    folder = Path(folder)
    chosen, left_out = [], []
    gpu = None
    for path in sorted(folder.rglob("*test*.py")):
        text = path.read_text(encoding="utf-8")
        if "import chainer" in text and not _has("chainer"):
            left_out.append((path, "imports Chainer (the book's oracle), which is not installed"))
        elif "gpu" in path.relative_to(folder).parts and not (gpu := _gpu() if gpu is None
                                                               else gpu):
            left_out.append((path, "a GPU test, and no GPU with CuPy is usable here"))
        else:
            chosen.append(path)
    return chosen, left_out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the book repository's tests/ folder")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest options (after --)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder. Point this tool at the tests/ folder of "
              "a checkout of the book's repository (oreilly-japan/deep-learning-from-scratch-3).",
              file=sys.stderr)
        return 2
    chosen, left_out = select(args.folder)
    for path, why in left_out:
        print(f"left out {path.name}: {why}")
    chosen_files = {path.relative_to(args.folder).as_posix() for path in chosen}
    deselect = []
    for test, why in KNOWN_DIFFERENCES.items():
        if test.split("::")[0] in chosen_files:
            print(f"left out {test}: a known difference: {why}")
            deselect += ["--deselect", test]
    if not chosen:
        print("no test file of the book can run here", file=sys.stderr)
        return 2
    tools = Path(__file__).resolve().parent
    command = [
        sys.executable, "-m", "pytest", "-p", "book_tests", "-p", "no:cacheprovider",
        "--rootdir", str(args.folder), "-o", "addopts=", "-q",
        *map(str, chosen), *deselect, *args.pytest_args,
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tools), env.get("PYTHONPATH", "")]))
    return subprocess.run(command, env=env, cwd=args.folder).returncode


if __name__ == "__main__":
    sys.exit(main())
