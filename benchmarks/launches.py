"""Kernel launches per training step on a GPU, counted on a machine without one.

    python benchmarks/launches.py

With batches of 100, a GPU spends a training step launching kernels, not
computing: each launch costs a few microseconds of Python and driver time
whatever its size (step 71). So the number of launches per step is the GPU's
bill, and it can be counted without a GPU: this script runs one training step
on ``tests/cupy_on_cpu.py``, the CuPy emulator of the test suite, which counts
every launch (each ufunc, reduction, device-side copy, fancy index, ``ElementwiseKernel``
and raw kernel). The columns are those of ``benchmarks/mnist_gpu.py``:

* the book's MLP (784-1000-10, sigmoid, SGD, batch 100) in dezero_like;
* the same math by hand with CuPy array operations, and by hand with fused
  kernels;
* the small CNN of ``mnist_gpu.py`` in dezero_like.

These are counts, the same on every machine; what a launch costs in seconds
is measured on a GPU by ``benchmarks/mnist_gpu.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
from pathlib import Path

import _machine  # benchmarks/_machine.py, beside this script
import numpy as np

HERE = Path(__file__).resolve().parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_emulator():
    """tests/cupy_on_cpu.py, as ``cupy`` (the caller puts it in ``sys.modules``)."""
    return _load("cupy", HERE.parent / "tests" / "cupy_on_cpu.py")


def count_launches(emulator, sizes=(784, 1000, 10), batch=100, details=False):
    """{column: Counter of launches in one training step}, after one warm-up step each.

    With ``details``, also {column: host-to-device copies} and {column: waits for the
    device} of that step. ``sys.modules["cupy"]`` must be ``emulator`` while this runs."""
    bench = sys.modules.get("mnist_gpu") or _load("mnist_gpu", HERE / "mnist_gpu.py")
    rng = np.random.default_rng(0)
    x = rng.random((batch, sizes[0]), dtype=np.float32)
    t = rng.integers(0, sizes[-1], batch)
    columns = {
        "dezero_like": bench.ours(sizes, x, t, gpu=True),
        "by hand": bench.by_hand(sizes, x, t, emulator),
        "by hand, fused": bench.by_hand(sizes, x, t, emulator, fused=True),
        "dezero_like, small CNN": bench.ours_cnn(x[:, :784], t, gpu=True),
    }
    counts, copies, waits = {}, {}, {}
    for name, run_epoch in columns.items():  # one batch per epoch: one training step
        run_epoch()  # warm-up: kernels built, weights created
        for counter in (emulator.LAUNCHES, emulator.HOST_COPIES, emulator.WAITS):
            counter.clear()
        run_epoch()
        counts[name] = emulator.LAUNCHES.copy()
        copies[name] = sum(emulator.HOST_COPIES.values())
        waits[name] = sum(emulator.WAITS.values())
    return counts if not details else (counts, copies, waits)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=6, help="launch kinds listed per column")
    args = parser.parse_args(argv)
    print("command: python " + " ".join(shlex.quote(a) for a in sys.argv))
    print("machine:", _machine.describe(), "(counts do not depend on it)")
    emulator = load_emulator()
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = emulator
    try:
        counts, copies, waits = count_launches(emulator, details=True)
    finally:
        if saved is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = saved
    print("kernel launches in one training step (batch 100), on the CuPy emulator:")
    print(f"| {'column':<24} | launches | host-to-device copies | waits | most frequent |")
    print(f"| {'-' * 24} | -------- | --------------------- | ----- | ------------- |")
    for name, counter in counts.items():
        top = ", ".join(f"{kind} {n}" for kind, n in counter.most_common(args.top))
        print(f"| {name:<24} | {sum(counter.values()):>8} | {copies[name]:>21} | "
              f"{waits[name]:>5} | {top} |")
    print("(copies: the batch, x and t; waits: reading the epoch's loss, once)")
    ours, fused = (sum(counts[c].values()) for c in ("dezero_like", "by hand, fused"))
    print(f"dezero_like / by hand, fused: {ours / fused:.2f} (the MLP)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
