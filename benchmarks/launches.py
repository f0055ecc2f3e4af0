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

    python benchmarks/launches.py --calls

also counts the Python work of the two dezero_like columns' training step: the
Python function calls that dezero_like makes (its own functions, and Python code
outside it that it calls, such as the import machinery), with the most frequent.
The emulator's own frames are left out: they stand in for CuPy's compiled code.
On a GPU with batches of 100 this work is paid on every step, next to the
launches, and it is the same on every machine too.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
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


def _columns(emulator, sizes, batch):
    """{column: run_epoch} of mnist_gpu.py, each on one batch (an epoch is one training step)."""
    bench = sys.modules.get("mnist_gpu") or _load("mnist_gpu", HERE / "mnist_gpu.py")
    rng = np.random.default_rng(0)
    x = rng.random((batch, sizes[0]), dtype=np.float32)
    t = rng.integers(0, sizes[-1], batch)
    return {
        "dezero_like": lambda: bench.ours(sizes, x, t, gpu=True),
        "by hand": lambda: bench.by_hand(sizes, x, t, emulator),
        "by hand, fused": lambda: bench.by_hand(sizes, x, t, emulator, fused=True),
        "dezero_like, small CNN": lambda: bench.ours_cnn(x[:, :784], t, gpu=True),
    }


def count_calls(emulator, sizes=(784, 1000, 10), batch=100):
    """{column: Counter of Python calls in one training step} for the dezero_like columns,
    after one warm-up step each, keyed ``"module.py:qualified name"``.

    Counted: every call of a function of the package, and every call the package makes to
    Python code outside it and outside the emulator (the import machinery, say), not what
    that code calls in turn. The emulator's frames stand in for CuPy's compiled code and are
    not counted. ``sys.modules["cupy"]`` must be ``emulator`` while this runs."""
    import dezero_like

    package = os.path.dirname(dezero_like.__file__) + os.sep
    left_out = os.path.realpath(emulator.__file__)
    counts = {}

    def where(code):
        return f"{os.path.basename(code.co_filename)}:{code.co_qualname}"

    for name, make in _columns(emulator, sizes, batch).items():
        if not name.startswith("dezero_like"):
            continue
        run_epoch = make()
        run_epoch()  # warm-up: kernels built, weights created
        calls = collections.Counter()

        def profile(frame, event, arg, calls=calls):
            if event != "call":
                return
            code = frame.f_code
            if code.co_filename.startswith(package):
                calls[where(code)] += 1
            elif (frame.f_back is not None
                  and frame.f_back.f_code.co_filename.startswith(package)
                  and os.path.realpath(code.co_filename) != left_out):
                calls[where(code)] += 1

        sys.setprofile(profile)
        try:
            run_epoch()
        finally:
            sys.setprofile(None)
        counts[name] = calls
    return counts


def count_launches(emulator, sizes=(784, 1000, 10), batch=100, details=False):
    """{column: Counter of launches in one training step}, after one warm-up step each.

    With ``details``, also {column: host-to-device copies} and {column: waits for the
    device} of that step. ``sys.modules["cupy"]`` must be ``emulator`` while this runs."""
    columns = {name: make() for name, make in _columns(emulator, sizes, batch).items()}
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
    parser.add_argument("--calls", action="store_true",
                        help="also count the Python calls dezero_like makes in the step")
    args = parser.parse_args(argv)
    print("command: python " + " ".join(shlex.quote(a) for a in sys.argv))
    print("machine:", _machine.describe(), "(counts do not depend on it)")
    emulator = load_emulator()
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = emulator
    try:
        counts, copies, waits = count_launches(emulator, details=True)
        calls = count_calls(emulator) if args.calls else None
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
    if calls is not None:
        print()
        print("Python calls dezero_like makes in one training step (batch 100), on the CuPy "
              "emulator, whose own frames are left out:")
        print(f"| {'column':<24} | calls | most frequent |")
        print(f"| {'-' * 24} | ----- | ------------- |")
        for name, counter in calls.items():
            top = ", ".join(f"{where} {n}" for where, n in counter.most_common(args.top))
            print(f"| {name:<24} | {sum(counter.values()):>5} | {top} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
