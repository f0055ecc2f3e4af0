"""Shared fixtures: running a step, importing a benchmark, finding the real MNIST files."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import os
import re
import runpy
import shutil
import sys
import tempfile
import types
from pathlib import Path

# Set before NumPy loads its BLAS: with pytest-xdist's workers on a small
# machine, multi-threaded BLAS oversubscribes the cores and runs 5-10x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "steps"
SHARED_MNIST = ROOT.parent / "shared" / "data" / "mnist"

os.environ.setdefault("MPLBACKEND", "Agg")  # steps that plot must not open windows
# Tests never download. MNIST comes from $DEZERO_LIKE_DATA when it is set, else from the real
# files shipped beside the project (CI), else from the user's cache: a folder of links to its
# test files (and training labels), so the tests meet what CI has and nothing more, the
# training images absent (steps, notebooks and subprocesses inherit these settings).
os.environ.setdefault("DEZERO_LIKE_OFFLINE", "1")
MNIST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")  # the offline split's
CACHE_MNIST = Path("~/.dezero_like/mnist").expanduser()


def _have_mnist(folder):
    return all((folder / name).exists() for name in MNIST_FILES)


def _linked_cache():
    """A temporary data folder whose mnist/ links to the cache's test files."""
    root = Path(tempfile.mkdtemp(prefix="dezero_like-tests-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "mnist").mkdir()
    for name in (*MNIST_FILES, "train-labels-idx1-ubyte.gz"):
        if (CACHE_MNIST / name).exists():
            (root / "mnist" / name).symlink_to(CACHE_MNIST / name)
    return root


if "DEZERO_LIKE_DATA" not in os.environ:
    if _have_mnist(SHARED_MNIST):
        os.environ["DEZERO_LIKE_DATA"] = str(SHARED_MNIST.parent)
    elif _have_mnist(CACHE_MNIST):
        os.environ["DEZERO_LIKE_DATA"] = str(_linked_cache())
MNIST_DIR = Path(os.environ.get("DEZERO_LIKE_DATA", str(SHARED_MNIST.parent))) / "mnist"
MNIST_MISSING = None if _have_mnist(MNIST_DIR) else (
    f"needs the real MNIST test files ({', '.join(MNIST_FILES)}), found in neither "
    f"{MNIST_DIR} nor {CACHE_MNIST}, and tests never download: copy them to one of these "
    "(or set DEZERO_LIKE_DATA to a folder holding mnist/)")
# the steps that load MNIST, and the docs build, which executes them
MNIST_STEPS = (53, 54, 60, 74)

if os.environ.get("DEZERO_LIKE_CUPY_ON_CPU") == "1":
    # The GPU tests against tests/cupy_on_cpu.py, an emulator of CuPy that runs the
    # package's CUDA C on the CPU (tests/test_cupy_on_cpu.py runs them this way in CI).
    _spec = importlib.util.spec_from_file_location("cupy", Path(__file__).with_name(
        "cupy_on_cpu.py"))
    sys.modules["cupy"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["cupy"])


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
def load_benchmark(monkeypatch):
    """``load_benchmark("passes")`` imports ``benchmarks/passes.py`` as a module.

    Run as scripts, the benchmarks import their neighbours (``_machine.py``,
    ``overhead.py``, ``mnist_gpu.py``) because Python puts a script's folder on ``sys.path``.
    Imported from a test they are not there, so each neighbour is imported from
    its file and registered under its name, and removed again after the test.
    """

    def load(name):
        for neighbour in ("_machine", "overhead", "mnist_gpu"):
            if neighbour != name:
                module = _import_file(neighbour, ROOT / "benchmarks" / f"{neighbour}.py")
                monkeypatch.setitem(sys.modules, neighbour, module)
        return _import_file(name, ROOT / "benchmarks" / f"{name}.py")

    return load


def _import_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rng():
    """A fixed-seed random generator for tests."""
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def mnist_dir():
    """The folder of the real MNIST test files (beside the project, or cached; never downloaded)."""
    if MNIST_MISSING:
        pytest.skip(MNIST_MISSING)
    return MNIST_DIR


# the tests that run a step (or its exercises, notebook or package snapshot) as a whole
RUNS_A_STEP = {"test_self_check_fails_on_the_stub", "test_self_check_passes_with_the_solution",
               "test_notebook_form_says_not_solved_and_goes_on_until_the_switch_is_ticked",
               "test_notebook_executes_headless", "test_a_step_runs_on_the_package_as_it_stood",
               "test_every_step_runs_to_its_end_with_the_solutions_off"}


def _needs_mnist(item):
    """Does this test run an MNIST step (its own tests, or a whole-step run of it elsewhere),
    or the docs build (which executes them)?"""
    if item.path.name in {f"test_step{n}.py" for n in MNIST_STEPS}:
        return True
    if "site" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.originalname not in RUNS_A_STEP:
        return False
    steps = {f"step{n}" for n in MNIST_STEPS}
    return (any(part in steps for part in re.split(r"[-\[\]]", callspec.id))
            or callspec.params.get("number") in MNIST_STEPS)


def pytest_collection_modifyitems(config, items):
    """Without the MNIST files, the tests that need them skip with the reason (not fail)."""
    if MNIST_MISSING is None:
        return
    skip = pytest.mark.skip(reason=MNIST_MISSING)
    for item in items:
        if _needs_mnist(item):
            item.add_marker(skip)


# =========================================================================== #
# Notebooks and the docs site: executed once per test run, and timed.
# (Section owned by the docs tooling; see docs/contributing.md.)
# =========================================================================== #


def run_tmp_root(tmp_path_factory):
    """A temporary directory of this test run that every xdist worker shares.

    Under xdist each worker's basetemp is ``<run basetemp>/popen-gwN``, so the
    parent is common to the run and new for each run.
    """
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def notebook_cache(tmp_path_factory):
    """Where this run keeps executed notebooks (``tools/notebooks.py execute``'s cache).

    Empty at the start of every run, shared by the workers: whichever test needs a
    notebook first (its own test, or the docs build) executes it, the other reuses it.
    """
    path = run_tmp_root(tmp_path_factory) / "executed-notebooks"
    path.mkdir(exist_ok=True)
    return path


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Print how long the notebooks (and the docs build) took; keep them in .pytest_cache."""
    times, docs = {}, None
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for key, value in getattr(report, "user_properties", ()):
                if key == "notebook_seconds":
                    times[report.nodeid.rsplit("[", 1)[-1].rstrip("]")] = value
                elif key == "docs_build_seconds":
                    docs = value
    if not times and docs is None:
        return
    write = terminalreporter.write_line
    terminalreporter.section("notebook execution times")
    if times:
        slowest = sorted(times.items(), key=lambda kv: -kv[1])[:5]
        write("slowest: " + ", ".join(f"{name} {sec:.1f} s" for name, sec in slowest))
        write(f"total: {sum(times.values()):.1f} s for {len(times)} notebooks (kernel time)")
    if docs is not None:
        write(f"docs site build (sphinx, notebooks excluded): {docs:.1f} s")
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    if cache is not None:
        cache.set("dezero_like/notebook-times", {"notebooks": times, "docs_build": docs})
