"""Shared fixtures: running a step script, and finding the real MNIST files."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import types
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "steps"
SHARED_MNIST = ROOT.parent / "shared" / "data" / "mnist"

os.environ.setdefault("MPLBACKEND", "Agg")  # steps that plot must not open windows


def run_step(number, cwd):
    """Execute ``steps/stepNN.py`` as a script; return its globals and what it printed.

    The script runs exactly as ``python steps/stepNN.py`` would (its demo
    included), from ``cwd``, so a test can check both the demo's output and the
    classes and functions the step defines, without copying any code.
    """
    path = STEPS / f"step{number:02d}.py"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    buffer = io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buffer):
            namespace = runpy.run_path(str(path), run_name="__main__")
    finally:
        os.chdir(old)
        import matplotlib.pyplot as plt

        plt.close("all")
    namespace = dict(namespace)
    namespace["output"] = buffer.getvalue()
    return types.SimpleNamespace(**namespace)


@pytest.fixture(scope="session")
def load_step(tmp_path_factory):
    """``load_step(14)`` runs step 14 once per test session and returns its namespace.

    The namespace's ``output`` attribute holds what the demo printed.
    """
    cache = {}

    def load(number):
        if number not in cache:
            np.random.seed(0)
            cache[number] = run_step(number, tmp_path_factory.mktemp(f"step{number:02d}"))
        return cache[number]

    return load


@pytest.fixture
def rng():
    """A fixed-seed random generator for tests."""
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def mnist_dir():
    """Directory with the real MNIST test files shipped beside the project (never downloaded)."""
    if not (SHARED_MNIST / "t10k-images-idx3-ubyte.gz").exists():
        pytest.skip(f"real MNIST files not found at {SHARED_MNIST}")
    return SHARED_MNIST
