"""Peak memory of backprop through a deep chain: retain_graph and retain_grad on and off.

    python benchmarks/memory.py                  # 200 functions on a 1000x1000 float32 array
    python benchmarks/memory.py --depth 50 --size 500

Two chains of DEPTH functions on one large array x:

* ``affine``: y = y * c + d, with scalar parameters c and d (Mul keeps its
  input y, since dL/dc needs it; Add keeps nothing);
* ``const``: y = y * c + d with Python-number constants (Mul keeps only c,
  so the graph holds no copy of y: peak memory stays near a few arrays);
* ``tanh``: y = tanh(y) (Tanh keeps its output).

Each combination of retain_graph and retain_grad runs in a fresh child process
(forked after the imports, so that NumPy's and PyTorch's import is paid once),
so the numbers do not depend on the order of the runs. Reported, in MB and in
units of one array (SIZE*SIZE*4 bytes):

* peak: the most memory in use during forward + backward, above what was in use
  just before the forward pass (x itself is not counted);
* held: what is still in use after backward while the user holds x and y (the
  graph stays reachable from y).

dezero_like is measured with tracemalloc (NumPy reports its arrays to it) and
with the process's resident memory (RSS, Linux only). PyTorch, when installed, is
measured by RSS only (its allocator is invisible to tracemalloc).

retain_grad=True means: the user wants every intermediate's gradient, so the
run holds every intermediate variable in a list (and in PyTorch calls
``.retain_grad()`` on each). That keeps their data and their gradients alive.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import _machine  # benchmarks/_machine.py, beside this script

ROOT = Path(__file__).resolve().parent.parent


def _rss_kib(field):
    """VmRSS / VmHWM of this process in KiB (Linux), or None elsewhere."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss():
    """Make VmHWM (peak RSS) restart from the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_dezero(chain, size, depth, retain_graph, retain_grad):
    import numpy as np

    import dezero_like as dz
    import dezero_like.functions as F

    x = dz.Variable(np.full((size, size), 0.5, dtype=np.float32))
    c = dz.Variable(np.array(0.99, dtype=np.float32))
    d = dz.Variable(np.array(0.01, dtype=np.float32))
    tracemalloc.start()
    rss0 = _rss_kib("VmRSS")
    can_peak = _reset_peak_rss()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    y, intermediates = x, []
    for _ in range(depth):
        if chain == "affine":
            y = y * c + d
        elif chain == "const":
            y = y * 0.99 + 0.01
        else:
            y = F.tanh(y)
        if retain_grad:
            intermediates.append(y)  # held, to read their .grad afterwards
    loss = F.sum(y)
    loss.backward(retain_graph=retain_graph, retain_grad=retain_grad)
    current, peak = tracemalloc.get_traced_memory()
    result = {
        "tm_peak": peak - base, "tm_held": current - base,
        "rss_peak": (_rss_kib("VmHWM") - rss0) * 1024 if can_peak and rss0 else None,
        "rss_held": (_rss_kib("VmRSS") - rss0) * 1024 if rss0 else None,
    }
    tracemalloc.stop()
    assert x.grad is not None and x.grad.shape == x.shape
    assert all(v.grad is not None for v in intermediates)
    return result


def run_torch(chain, size, depth, retain_graph, retain_grad):
    import torch

    torch.set_num_threads(1)
    x = torch.full((size, size), 0.5, dtype=torch.float32, requires_grad=True)
    c = torch.tensor(0.99, requires_grad=True)
    d = torch.tensor(0.01, requires_grad=True)
    rss0 = _rss_kib("VmRSS")
    can_peak = _reset_peak_rss()
    y, intermediates = x, []
    for _ in range(depth):
        if chain == "affine":
            y = y * c + d
        elif chain == "const":
            y = y * 0.99 + 0.01
        else:
            y = torch.tanh(y)
        if retain_grad:
            y.retain_grad()
            intermediates.append(y)
    loss = y.sum()
    loss.backward(retain_graph=retain_graph)
    assert x.grad is not None
    assert all(v.grad is not None for v in intermediates)
    return {
        "tm_peak": None, "tm_held": None,
        "rss_peak": (_rss_kib("VmHWM") - rss0) * 1024 if can_peak and rss0 else None,
        "rss_held": (_rss_kib("VmRSS") - rss0) * 1024 if rss0 else None,
    }


def have_torch():
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _child(conn, framework, *args):
    run = run_dezero if framework == "dezero_like" else run_torch
    conn.send(run(*args))
    conn.close()


def measure(ctx, framework, *args):
    """One measurement in a fresh child process; returns its result dict."""
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, framework, *args))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = None
    proc.join()
    if proc.exitcode != 0 or result is None:
        raise RuntimeError(f"measurement {framework} {args} failed (exit code {proc.exitcode})")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="the array is SIZE x SIZE float32")
    parser.add_argument("--depth", type=int, default=200, help="functions in each chain")
    parser.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

    import numpy as np

    import dezero_like  # noqa: F401  (imported once, before the children fork)

    frameworks = ["dezero_like"] + (["torch"] if have_torch() and not args.no_torch else [])
    print("command:", " ".join([Path(sys.executable).name, *sys.argv]))
    print(f"machine: {platform.platform()}; CPU: {_machine.cpu_name()} ({os.cpu_count()} logical)")
    versions = f"python {platform.python_version()}, numpy {np.__version__}"
    if "torch" in frameworks:
        import torch

        torch.set_num_threads(1)
        versions += f", torch {torch.__version__}"
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    print("versions:", versions)
    array_mb = args.size * args.size * 4 / 2**20
    print(f"one array: {args.size}x{args.size} float32 = {array_mb:.2f} MB; "
          f"chain depth {args.depth}\n")

    def fmt(value):
        if value is None:
            return f"{'-':>15}"
        mb = value / 2**20
        return f"{mb:8.1f} ({mb / array_mb:5.1f})"

    header = (f"{'framework':<12}{'chain':<8}{'retain_graph':<14}{'retain_grad':<13}"
              f"{'peak tracemalloc':>17}{'held tracemalloc':>17}{'peak RSS':>16}{'held RSS':>16}")
    print("MB (in arrays)")
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for framework in frameworks:
        for chain in ("affine", "const", "tanh"):
            for rg in (False, True):
                for rgrad in (False, True):
                    r = measure(ctx, framework, chain, args.size, args.depth, rg, rgrad)
                    print(f"{framework:<12}{chain:<8}{str(rg):<14}{str(rgrad):<13}"
                          f"{fmt(r['tm_peak']):>17}{fmt(r['tm_held']):>17}"
                          f"{fmt(r['rss_peak']):>16}{fmt(r['rss_held']):>16}")
    print(f"\n({time.perf_counter() - start:.1f} s)")
    print("held RSS can stay high after memory is freed: the C allocator may keep freed\n"
          "blocks for reuse instead of returning them to the system (tracemalloc counts\n"
          "what NumPy actually holds).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
