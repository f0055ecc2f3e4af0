"""Forward and backward time per iteration of an MLP on MNIST-shaped batches.

Framework benchmarks report each pass of a training iteration on its own:
forward (model and loss), backward (cleargrads and ``loss.backward()``) and
update (optimizer step), each as mean, min and max over many iterations after
a warm-up. This script does that for dezero_like and, with ``--torch``, for
PyTorch running the same network on the same data.

    python benchmarks/passes.py                          # both networks, batch 100
    python benchmarks/passes.py --iters 20 --warmup 2    # a quick run
    python benchmarks/passes.py --arch 784-1000-10 --batch 256 --torch
    python benchmarks/passes.py --arch 784-16-10 --batch 4 --torch   # framework overhead
    python benchmarks/passes.py --device gpu             # CuPy (synchronised timing)
    python benchmarks/passes.py --profile                # + per-function table (TimerHook)

The data is random but shaped like MNIST (batch x 784 float32, labels 0-9):
nothing is downloaded. Every implementation starts from the same weights.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

ARCHS = ["784-1000-10", "784-1000-1000-10", "784-16-10"]
DEFAULT_ARCHS = ARCHS[:2]  # 784-16-10: little arithmetic, so the framework's own Python shows


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", action="append", choices=ARCHS,
                   help="network(s) (default: the first two)")
    p.add_argument("--activation", default="relu", choices=["relu", "sigmoid"])
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--iters", type=int, default=100, help="measured iterations (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="unmeasured iterations first")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS / torch threads (default: the libraries' own default)")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--torch", action="store_true", help="also time PyTorch (if installed)")
    p.add_argument("--profile", action="store_true",
                   help="print dezero_like's time per function type (TimerHook) as well")
    args = p.parse_args(argv)
    if args.iters < 1 or args.warmup < 0 or args.batch < 1:
        p.error("--iters and --batch must be positive and --warmup not negative")
    return args


ARGS = parse_args() if __name__ == "__main__" else parse_args([])
if ARGS.threads is not None:
    # The BLAS reads its thread count when it is loaded: set it before NumPy is imported.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import _machine  # noqa: E402  (benchmarks/_machine.py, beside this script)
import numpy as np  # noqa: E402

import dezero_like as dz  # noqa: E402
import dezero_like.functions as F  # noqa: E402
from dezero_like import cuda, optimizers  # noqa: E402
from dezero_like.hooks import TimerHook  # noqa: E402
from dezero_like.models import MLP  # noqa: E402

PHASES = ("forward", "backward", "update")


def _no_sync():
    """On the CPU every operation has finished when it returns: nothing to wait for."""


def stats_ms(seconds):
    """Mean, min and max of a list of durations, in milliseconds."""
    a = np.asarray(seconds) * 1e3
    return {"mean": float(a.mean()), "min": float(a.min()), "max": float(a.max())}


def make_data(batch, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((batch, 784), dtype=np.float32)
    t = rng.integers(0, 10, size=batch)
    return x, t


def initial_weights(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((i, o)) * (1.0 / i) ** 0.5).astype(np.float32),
             np.zeros(o, np.float32)) for i, o in zip(sizes[:-1], sizes[1:])]


def time_dezero(sizes, x, t, iters, warmup, activation="relu", lr=0.1, device="cpu",
                timer=None):
    """Per-iteration seconds of each pass for dezero_like: ``{phase: [s, ...]}``."""
    model = MLP(sizes[1:], activation=getattr(F, activation))
    for layer, (W, b) in zip(model.layers, initial_weights(sizes)):
        layer.W.data, layer.b.data = W.copy(), b.copy()
    sync = _no_sync
    if device == "gpu":
        cp = cuda.require_gpu()
        model.to_gpu()
        x, t = cp.asarray(x), cp.asarray(t)
        sync = cp.cuda.Device().synchronize
    opt = optimizers.SGD(lr).setup(model)
    times = {p: [] for p in PHASES}
    for i in range(warmup + iters):
        measured = i >= warmup
        if measured and timer is not None:
            timer.__enter__()
        sync()
        t0 = time.perf_counter()
        loss = F.softmax_cross_entropy(model(x), t)
        sync()
        t1 = time.perf_counter()
        model.cleargrads()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt.update()
        sync()
        t3 = time.perf_counter()
        if measured:
            if timer is not None:
                timer.__exit__(None, None, None)
            times["forward"].append(t1 - t0)
            times["backward"].append(t2 - t1)
            times["update"].append(t3 - t2)
    return times


def time_torch(torch, sizes, x, t, iters, warmup, activation="relu", lr=0.1, device="cpu"):
    """The same network, data and passes in PyTorch."""
    dev = "cuda" if device == "gpu" else "cpu"
    params = [(torch.tensor(W, device=dev, requires_grad=True),
               torch.tensor(b, device=dev, requires_grad=True))
              for W, b in initial_weights(sizes)]
    act = torch.relu if activation == "relu" else torch.sigmoid
    xt, tt = torch.from_numpy(x).to(dev), torch.from_numpy(t).to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else _no_sync
    times = {p: [] for p in PHASES}
    for i in range(warmup + iters):
        sync()
        t0 = time.perf_counter()
        h = xt
        for k, (W, b) in enumerate(params):
            h = torch.addmm(b, h, W)
            if k < len(params) - 1:
                h = act(h)
        loss = torch.nn.functional.cross_entropy(h, tt)
        sync()
        t1 = time.perf_counter()
        for W, b in params:
            W.grad = b.grad = None
        loss.backward()
        sync()
        t2 = time.perf_counter()
        with torch.no_grad():
            for W, b in params:
                W -= lr * W.grad
                b -= lr * b.grad
        sync()
        t3 = time.perf_counter()
        if i >= warmup:
            times["forward"].append(t1 - t0)
            times["backward"].append(t2 - t1)
            times["update"].append(t3 - t2)
    return times


def table(rows):
    """Rows of (network, framework, times) as a text table of mean/min/max ms per pass."""
    head = (f"{'network':<18}{'framework':<13}{'pass':<10}"
            f"{'mean ms':>10}{'min ms':>10}{'max ms':>10}")
    lines = [head, "-" * len(head)]
    for net, name, times in rows:
        total = [sum(ts) for ts in zip(*(times[p] for p in PHASES))]
        for phase, values in [*((p, times[p]) for p in PHASES), ("total", total)]:
            s = stats_ms(values)
            lines.append(f"{net:<18}{name:<13}{phase:<10}{s['mean']:>10.3f}{s['min']:>10.3f}"
                         f"{s['max']:>10.3f}")
    return "\n".join(lines)


def machine(torch=None):
    """A few lines that say what the numbers were measured on."""
    lines = [
        f"machine: {platform.platform()}, {_machine.cpu_name()}, "
        f"{os.cpu_count()} CPUs",
        f"python {platform.python_version()}, numpy {np.__version__}, dezero_like "
        f"{dz.__version__}, torch {torch.__version__ if torch else 'not used'}",
        f"BLAS threads: {ARGS.threads if ARGS.threads is not None else 'library default'}",
    ]
    if ARGS.device == "gpu":
        cp = cuda.require_gpu()
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        lines.append(f"GPU: {name}, cupy {cp.__version__}")
    return "\n".join(lines)


def main():
    torch = None
    if ARGS.torch:
        try:
            import torch
        except ImportError:
            print("PyTorch is not installed: timing dezero_like only")
        else:
            if ARGS.threads is not None:
                torch.set_num_threads(ARGS.threads)
    print("command: python " + " ".join(sys.argv))
    print(machine(torch))
    x, t = make_data(ARGS.batch)
    print(f"data: batch {ARGS.batch} x 784 float32 (random, MNIST-shaped), {ARGS.activation}, "
          f"SGD lr {ARGS.lr}; {ARGS.warmup} warm-up + {ARGS.iters} measured iterations; "
          f"device {ARGS.device}")
    print()
    rows = []
    timers = []
    for arch in ARGS.arch or DEFAULT_ARCHS:
        sizes = [int(s) for s in arch.split("-")]
        timer = TimerHook() if ARGS.profile else None
        rows.append((arch, "dezero_like", time_dezero(
            sizes, x, t, ARGS.iters, ARGS.warmup, ARGS.activation, ARGS.lr, ARGS.device, timer)))
        if timer is not None:
            timers.append((arch, timer))
        if torch is not None:
            rows.append((arch, "torch", time_torch(
                torch, sizes, x, t, ARGS.iters, ARGS.warmup, ARGS.activation, ARGS.lr,
                ARGS.device)))
    print(table(rows))
    for arch, timer in timers:
        print(f"\ndezero_like time per function type, {arch}, {ARGS.iters} iterations:")
        timer.print_report()


if __name__ == "__main__":
    main()
