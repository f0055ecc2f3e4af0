"""Step 70's promise: the fast core computes what step 69's plain core computes.

The package as it stood at step 69 (``tools/export.py upto 69``) and the finished
package run the same probe in two processes; values, dtypes, gradients, the shape
of the recorded graphs and the trace a function hook sees must agree exactly.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _package_upto(step, out):
    """The package as it stood at ``step``, written by the export tool into ``out``."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "export.py"), "upto", str(step), str(out)],
                   check=True, capture_output=True, text=True)


PROBE = r'''
import json
import numpy as np
import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import FunctionHook

out = {}


def describe(v):
    return {"value": np.asarray(v.data).tolist(), "dtype": str(v.data.dtype),
            "requires_grad": bool(v.requires_grad), "has_creator": v.creator is not None}


def graph(y):
    """The recorded graph as nested tuples of function names, generations and leaves."""
    def walk(v):
        f = v.creator
        if f is None:
            return ["leaf", v.name, bool(v.requires_grad)]
        return [type(f).__name__, f.generation, [walk(x) for x in f.inputs]]
    return walk(y)


class Trace(FunctionHook):
    def __init__(self):
        self.events = []

    def forward_postprocess(self, f, xs, ys):
        self.events.append(["forward", type(f).__name__, [str(y.dtype) for y in ys]])

    def backward_postprocess(self, f, gys, gxs):
        self.events.append(["backward", type(f).__name__,
                            [None if g is None else str(g.data.dtype) for g in gxs]])


rng = np.random.default_rng(0)
for dtype in ("float32", "float64"):
    x = dz.Variable(rng.normal(size=(3, 4)).astype(dtype), name="x")
    w = dz.Variable(rng.normal(size=(4,)).astype(dtype), name="w")
    c = dz.Variable(np.ones(4, dtype=dtype), name="c", requires_grad=False)
    trace = Trace()
    with trace:
        h = F.sin(x) * w + 2.0 - x / 3 + x ** 2 * c
        y = F.sum(F.tanh(h) * h - 1.5 / (h * h + 1.0))
        y.backward(retain_grad=True)
    out[dtype] = {
        "y": describe(y), "x.grad": describe(x.grad), "w.grad": describe(w.grad),
        "c.grad": c.grad is None, "h.grad": describe(h.grad), "graph": graph(y),
        "trace": trace.events,
    }

# f(x, x), a repeated input
x = dz.Variable(np.array([1.0, -2.0, 3.0]))
y = F.sum(x * x + x + x)
y.backward()
out["repeated"] = describe(x.grad)

# second derivatives with create_graph
x = dz.Variable(np.array(0.7))
y = F.sin(x) * x ** 3
y.backward(create_graph=True)
gx = x.grad
x.cleargrad()
gx.backward()
out["second"] = [describe(gx), describe(x.grad)]

# no graph: no_grad, and constants only
with dz.no_grad():
    z = F.exp(dz.Variable(np.array([1.0, 2.0]))) * 3.0 - 1.0
out["no_grad"] = describe(z)
z = dz.Variable(np.array([1.0]), requires_grad=False) * 2.0
out["constants"] = describe(z)

# seeds, loss scaling, retain_graph, freed graph
x = dz.Variable(np.array([1.0, 2.0, 3.0], dtype=np.float32))
y = x ** 2
y.backward(gradient=np.array([1.0, 0.0, -1.0]), retain_graph=True)
first = describe(x.grad)
y.backward(loss_scale=8.0)
out["seed"] = [first, describe(x.grad), float(x.loss_scale)]
try:
    y.backward()
    out["freed"] = "no error"
except RuntimeError as e:
    out["freed"] = str(e)

# a dropped intermediate with retained outputs (tanh keeps its output)
x = dz.Variable(np.linspace(-1, 1, 5))
y = F.sum(F.exp(F.tanh(x)))
y.backward()
out["dropped"] = describe(x.grad)

print(json.dumps(out))
'''


def _run(pythonpath, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_fast_path_matches_the_plain_core_of_step_69(tmp_path):
    plain_dir = tmp_path / "step69"
    _package_upto(69, plain_dir)
    assert "_binary" not in (plain_dir / "dezero_like" / "core.py").read_text()
    root = ROOT
    plain = _run(plain_dir, tmp_path)
    fast = _run(root, tmp_path)
    for key in plain:
        assert fast[key] == plain[key], f"the fast core differs from step 69's on {key!r}"


@pytest.mark.parametrize("number", [23, 37, 63, 69])
def test_the_plain_cores_agree_on_values(number, tmp_path):
    """Earlier cores compute the same values and gradients (graphs may differ in what they keep)."""
    root = ROOT
    _package_upto(number, tmp_path / "pkg")
    probe = r'''
import json, numpy as np, dezero_like as dz, dezero_like.functions as F
x = dz.Variable(np.array([0.3, -1.2, 2.0]))
w = dz.Variable(np.array([1.5, 0.5, -2.0]))
y = F.sin(x) * w + 2.0 - x / 3 + x ** 2 * w
y.backward(retain_grad=True)
print(json.dumps([y.data.tolist(), x.grad.data.tolist(), w.grad.data.tolist()]))
'''
    results = []
    for path in (tmp_path / "pkg", root):
        env = {**os.environ, "PYTHONPATH": str(path)}
        run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        results.append(json.loads(run.stdout))
    assert results[0] == results[1]
