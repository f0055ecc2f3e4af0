"""``import dezero_like`` stays light: no plotting, graph-drawing or GPU library is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "graphviz", "cupy")

PROBE = """
import json
import sys
import dezero_like
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})))
"""


def _run(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT.parent, check=False)


def test_import_does_not_load_heavy_modules():
    result = _run("-c", PROBE.format(heavy=set(HEAVY)))
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"import dezero_like loaded {loaded}; import them lazily"


def test_import_time_is_reported():
    """Measure with ``python -X importtime``; printed (run pytest -s to see it), not asserted."""
    result = _run("-X", "importtime", "-c", "import dezero_like")
    assert result.returncode == 0, result.stderr
    rows = [line.split("|") for line in result.stderr.splitlines()
            if line.startswith("import time:") and "|" in line]
    total = {}
    for row in rows:
        name = row[2].strip()
        if name in ("dezero_like", "numpy"):
            total[name] = int(row[1].strip())  # cumulative microseconds
    assert "dezero_like" in total, result.stderr[-2000:]
    own = total["dezero_like"] - total.get("numpy", 0)
    print(f"\nimport dezero_like: {total['dezero_like'] / 1000:.1f} ms cumulative "
          f"(numpy {total.get('numpy', 0) / 1000:.1f} ms; the rest {own / 1000:.1f} ms)")


def test_numpy_1_is_named_at_import_with_the_fix():
    """The package follows NumPy 2's dtype rules (NEP 50); under NumPy 1 it runs (the book's
    tests with Chainer, which needs NumPy 1, are run that way) but some dtypes differ, so
    the import warns and says how to upgrade. NumPy 1 is not installed here: the probe gives
    the real NumPy 2 an old version string."""
    result = _run("-c", "import numpy\nnumpy.__version__ = '1.26.4'\nimport dezero_like\n"
                  "print(dezero_like.Variable(numpy.array(2.0)) * 3)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "variable(6.0)", result.stdout
    said = result.stderr
    assert "UserWarning: dezero_like is written for NumPy 2" in said, said
    assert "NumPy 1.26.4" in said and 'pip install --upgrade "numpy>=2"' in said, said
    assert "restart the kernel" in said and said.count("UserWarning") == 1, said


def test_numpy_2_of_any_minor_version_imports_without_a_word():
    result = _run("-W", "error", "-c",
                  "import numpy\nnumpy.__version__ = '2.0.0rc1'\nimport dezero_like")
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_star_import_gives_the_package_names_only():
    """``from dezero_like import *`` brings the package's names, not the modules it uses
    (``np``, ``warnings``): a learner's own ``np`` must not be replaced by a star import."""
    import types

    import dezero_like

    own = {"cuda", "datasets", "functions", "layers", "models", "optimizers", "utils",
           "dataloaders", "transforms", "core", "hooks", "plot"}
    for name in dezero_like.__all__:
        value = getattr(dezero_like, name)
        if isinstance(value, types.ModuleType):
            assert value.__name__.startswith("dezero_like"), (name, value)
            assert name in own or value.__name__ == f"dezero_like.{name}", name
