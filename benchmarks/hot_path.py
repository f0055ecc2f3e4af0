"""Step 70's before and after: the plain core of step 69 against the finished one.

    python benchmarks/hot_path.py            # best of 7 repeats
    python benchmarks/hot_path.py --quick    # best of 3

``tools/export.py upto 69`` writes the package as it stood at step 69 into a
temporary folder; the same timing probe then runs in two processes, one that
imports that package and one that imports the finished package. Each line is
microseconds per operation (best of the repeats) and the ratio plain / fast,
measured in the same run, so the ratio is what to compare between machines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _machine  # benchmarks/_machine.py, beside this script

ROOT = Path(__file__).resolve().parents[1]

PROBE = r'''
import json, sys, timeit
import numpy as np
import dezero_like as dz
import dezero_like.functions as F

repeat = int(sys.argv[1])
a1 = np.ones(1)
big = np.ones((1000, 1000), dtype=np.float32)


def chain_sin(data, n):
    x = dz.Variable(data)
    y = x
    for _ in range(n):
        y = F.sin(y)
    y.backward()


def chain_affine(data, n):
    x = dz.Variable(data)
    y = x
    for _ in range(n):
        y = y * 0.5 + 0.25
    y.backward()


cases = {
    "sin chain, 1 element (per step)": (lambda: chain_sin(a1, 1000), 1000, 3),
    "affine chain, 1 element (per step)": (lambda: chain_affine(a1, 1000), 1000, 3),
    "with no_grad(): F.sin(x) (per call)": (None, 1, 20000),
    "sin chain, 1000x1000 float32 (per step)": (lambda: chain_sin(big, 20), 20, 1),
}
x = dz.Variable(a1)
out = {}
for name, (fn, steps, number) in cases.items():
    if fn is None:
        def fn():
            with dz.no_grad():
                F.sin(x)
    best = min(timeit.repeat(fn, number=number, repeat=repeat))
    out[name] = best / number / steps * 1e6
print(json.dumps(out))
'''


def measure(pythonpath, repeat):
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", PROBE, str(repeat)], env=env,
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(run.stdout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="best of 3 instead of 7")
    parser.add_argument("--json", metavar="FILE",
                        help='also write the timings to FILE: {"step 69": {case: us}, '
                             '"step 70": {...}} (step 70 reads it to draw its chart)')
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    print("command: python benchmarks/hot_path.py" + (" --quick" if args.quick else ""))
    print(f"machine: {_machine.describe()}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(ROOT / "tools" / "export.py"), "upto", "69", tmp],
                       check=True, capture_output=True)
        plain = measure(tmp, repeat)
    fast = measure(ROOT, repeat)
    print()
    print(f"{'microseconds, best of ' + str(repeat):42s} {'step 69':>9s} {'step 70':>9s} "
          f"{'ratio':>7s}")
    print("-" * 70)
    for name in plain:
        print(f"{name:42s} {plain[name]:9.2f} {fast[name]:9.2f} {plain[name] / fast[name]:6.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"step 69": plain, "step 70": fast}, f, indent=1)


if __name__ == "__main__":
    main()
