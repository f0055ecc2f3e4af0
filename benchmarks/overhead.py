"""Per-function overhead of forward + backward, beside NumPy, DeZero and PyTorch.

    python benchmarks/overhead.py            # full run
    python benchmarks/overhead.py --quick    # fewer repeats

Three chains of 1,000 functions each, timed forward + backward:

* ``sin``: y = sin(y) on a 1-element array (pure framework overhead) and on a
  1000x1000 float32 array;
* ``affine``: y = y * c + d with Python-number constants (the chain of step 69),
  on a 1-element array and on a 1000x1000 float32 array.

Every framework runs the same math. "numpy" is the forward and the backward
written by hand with NumPy calls, the floor any framework pays. Frameworks run
interleaved, repeat after repeat, and the best time of each is kept, so the
ratios printed at the end compare runs made under the same machine load.

DeZero (``pip install dezero``, the book's framework) still uses ``np.int``,
which NumPy 2 removed; this script restores that alias before importing it.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import _machine  # benchmarks/_machine.py, beside this script
import numpy as np

N = 1000


# --------------------------------------------------------------------------- #
# The chains, one function per framework
# --------------------------------------------------------------------------- #


def numpy_sin(a):
    ys = [a]
    y = a
    for _ in range(N):
        y = np.sin(y)
        ys.append(y)
    g = np.ones_like(y)
    for i in range(N, 0, -1):
        g = g * np.cos(ys[i - 1])
    return g


def numpy_affine(a, c=0.999, d=0.001):
    y = a
    for _ in range(N):
        y = y * c + d
    g = np.ones_like(y)
    for _ in range(N):
        g = g * c
    return g


def framework_sin(mod, F):
    def run(a):
        x = mod.Variable(a)
        y = x
        for _ in range(N):
            y = F.sin(y)
        y.backward()
        return x.grad

    return run


def framework_affine(mod):
    def run(a, c=0.999, d=0.001):
        x = mod.Variable(a)
        y = x
        for _ in range(N):
            y = y * c + d
        y.backward()
        return x.grad

    return run


def torch_sin(torch):
    def run(a):
        x = torch.from_numpy(a).requires_grad_()
        y = x
        for _ in range(N):
            y = torch.sin(y)
        y.backward(torch.ones_like(y))
        return x.grad

    return run


def torch_affine(torch):
    def run(a, c=0.999, d=0.001):
        x = torch.from_numpy(a).requires_grad_()
        y = x
        for _ in range(N):
            y = y * c + d
        y.backward(torch.ones_like(y))
        return x.grad

    return run


def load_frameworks():
    import dezero_like
    import dezero_like.functions as F

    found = {"numpy": None, "dezero_like": (dezero_like, F)}
    notes = []
    try:
        if not hasattr(np, "int"):
            np.int = int  # DeZero 0.0.13 uses the alias NumPy 2 removed
        import dezero
        import dezero.functions as DF

        found["dezero"] = (dezero, DF)
    except ImportError as e:
        notes.append(f"dezero not installed ({e}); pip install dezero to compare")
    try:
        import torch

        torch.set_num_threads(1)
        found["torch"] = torch
    except ImportError as e:
        notes.append(f"torch not installed ({e}); pip install torch to compare")
    return found, notes


def chains(found):
    out = {}
    for name, obj in found.items():
        if name == "numpy":
            out[name] = {"sin": numpy_sin, "affine": numpy_affine}
        elif name == "torch":
            out[name] = {"sin": torch_sin(obj), "affine": torch_affine(obj)}
        else:
            mod, F = obj
            out[name] = {"sin": framework_sin(mod, F), "affine": framework_affine(mod)}
    return out


def measure(fns, make_input, repeats):
    """Best seconds per run of each function, interleaved repeat by repeat."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            a = make_input()
            gc.collect()
            t0 = time.perf_counter()
            fn(a)
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = parser.parse_args(argv)
    found, notes = load_frameworks()
    table = chains(found)
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))
    print("machine:", _machine.describe())
    for line in notes:
        print("note:", line)
    cases = [
        ("sin", "1 element, float64", lambda: np.full((1,), 0.5), 7),
        ("sin", "1000x1000, float32", lambda: np.full((1000, 1000), 0.5, np.float32), 2),
        ("affine", "1 element, float64", lambda: np.full((1,), 0.5), 7),
        ("affine", "1000x1000, float32", lambda: np.full((1000, 1000), 0.5, np.float32), 3),
    ]
    rows = []
    for chain, label, make, repeats in cases:
        if args.quick:
            repeats = min(repeats, 2)
        fns = {name: table[name][chain] for name in table}
        best = measure(fns, make, repeats)
        rows.append((chain, label, best))
    names = list(table)
    print(f"\nmicroseconds per chain step, forward + backward, best of repeats, {N} steps "
          "(a sin step is one function, an affine step two: * and +)")
    header = f"{'chain':8} {'input':20}" + "".join(f"{n:>13}" for n in names)
    print(header)
    print("-" * len(header))
    for chain, label, best in rows:
        print(f"{chain:8} {label:20}" + "".join(f"{best[n] / N * 1e6:13.2f}" for n in names))
    print("\nratios in the same run")
    for chain, label, best in rows:
        ours = best["dezero_like"]
        parts = [f"dezero_like/numpy = {ours / best['numpy']:.2f}"]
        if "dezero" in best:
            parts.append(f"dezero_like/dezero = {ours / best['dezero']:.2f}")
            theirs = best["dezero"] - best["numpy"]
            if theirs > 0.05 * best["numpy"]:
                overhead = (ours - best["numpy"]) / theirs
                parts.append(f"overhead vs dezero's = {overhead:.2f}")
            else:  # large arrays: both frameworks are within noise of NumPy
                parts.append("overhead vs dezero's = n/a (dezero within 5% of numpy)")
        if "torch" in best:
            parts.append(f"torch/numpy = {best['torch'] / best['numpy']:.2f}")
        print(f"{chain:8} {label:20} " + ", ".join(parts))


if __name__ == "__main__":
    main()
