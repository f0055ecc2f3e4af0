"""One MNIST-sized MLP epoch: dezero_like vs the same math hand-written in NumPy vs PyTorch.

The data is random but shaped like MNIST (60000 x 784 float32, labels 0-9), so
no download is needed. Each implementation starts from the same weights, sees
the same mini-batches in the same order (batch 100, plain SGD), and works in
float32. dezero_like and hand NumPy use the same NumPy and the same BLAS with
the same thread count; PyTorch (when installed) is pinned to the same number
of threads.

    python benchmarks/mlp.py                      # full epoch, all four networks
    python benchmarks/mlp.py --samples 6000       # a quick run
    python benchmarks/mlp.py --arch 784-1000-10 --activation relu --epochs 2
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1, help="epochs per measurement (default 1)")
    p.add_argument("--samples", type=int, default=60000, help="training rows (default 60000)")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS / torch threads for every implementation (default 1)")
    p.add_argument("--arch", action="append", choices=["784-1000-10", "784-1000-1000-10"],
                   help="network(s) to run (default both)")
    p.add_argument("--activation", action="append", choices=["sigmoid", "relu"],
                   help="activation(s) to run (default both)")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    p.add_argument("--repeats", type=int, default=1,
                   help="measure each implementation this many times (round-robin), keep the "
                        "fastest")
    return p.parse_args(argv)


ARGS = parse_args()
# The BLAS reads its thread count when it is loaded: set it before NumPy is imported.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import _machine  # noqa: E402  (benchmarks/_machine.py, beside this script)
import numpy as np  # noqa: E402

import dezero_like as dz  # noqa: E402
import dezero_like.functions as F  # noqa: E402
from dezero_like import optimizers  # noqa: E402
from dezero_like.models import MLP  # noqa: E402

TORCH_MISSING = "skipped (--no-torch)" if ARGS.no_torch else "not installed"
try:
    if ARGS.no_torch:
        raise ImportError
    import torch
except ImportError:
    torch = None


def initial_weights(sizes, seed=0):
    """The same starting point for every implementation: randn * sqrt(1/in), zero biases."""
    rng = np.random.default_rng(seed)
    return [
        ((rng.standard_normal((i, o)) * (1.0 / i) ** 0.5).astype(np.float32),
         np.zeros(o, np.float32))
        for i, o in zip(sizes[:-1], sizes[1:])
    ]


def batches(n, batch, epoch):
    order = np.random.default_rng(1000 + epoch).permutation(n)
    for start in range(0, n, batch):
        yield order[start:start + batch]


# --------------------------------------------------------------------------- #
# dezero_like
# --------------------------------------------------------------------------- #


def run_dezero(x, t, sizes, activation, weights, epochs):
    model = MLP(sizes[1:], activation=getattr(F, activation))
    for layer, (W, b) in zip(model.layers, weights):
        layer.W.data, layer.b.data = W.copy(), b.copy()
    opt = optimizers.SGD(ARGS.lr).setup(model)
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for idx in batches(len(x), ARGS.batch, epoch):
            loss = F.softmax_cross_entropy(model(x[idx]), t[idx])
            model.cleargrads()
            loss.backward()
            opt.update()
            total += float(loss.data)
        losses.append(total / (len(x) // ARGS.batch))
    return losses, [p.data for p in model.params()]


# --------------------------------------------------------------------------- #
# The same forward and backward written by hand in NumPy
# --------------------------------------------------------------------------- #


def run_numpy(x, t, sizes, activation, weights, epochs):
    params = [(W.copy(), b.copy()) for W, b in weights]
    lr = np.float32(ARGS.lr)
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for idx in batches(len(x), ARGS.batch, epoch):
            xb, tb = x[idx], t[idx]
            n = len(xb)
            acts = [xb]
            h = xb
            for i, (W, b) in enumerate(params):
                h = h @ W
                h += b
                if i < len(params) - 1:
                    if activation == "sigmoid":  # 1 / (1 + exp(-h)), as F.sigmoid
                        h = np.negative(h)
                        with np.errstate(over="ignore"):
                            np.exp(h, out=h)
                        h += 1
                        np.reciprocal(h, out=h)
                    else:
                        h = np.maximum(h, 0)
                    acts.append(h)
            m = h.max(axis=1, keepdims=True)
            e = np.exp(h - m)
            s = e.sum(axis=1, keepdims=True)
            total += float((np.log(s[:, 0]) + m[:, 0] - h[np.arange(n), tb]).sum() / n)
            g = e / s
            g[np.arange(n), tb] -= 1
            g /= n
            for i in range(len(params) - 1, -1, -1):
                W, b = params[i]
                a = acts[i]
                gW = a.T @ g
                gb = g.sum(axis=0)
                if i > 0:
                    g = g @ W.T
                    if activation == "sigmoid":
                        g *= a * (1 - a)
                    else:
                        g *= a > 0
                W -= lr * gW
                b -= lr * gb
        losses.append(total / (len(x) // ARGS.batch))
    return losses, [a for W, b in params for a in (W, b)]


# --------------------------------------------------------------------------- #
# PyTorch (CPU), when installed
# --------------------------------------------------------------------------- #


def run_torch(x, t, sizes, activation, weights, epochs):
    params = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True))
              for W, b in weights]
    act = torch.sigmoid if activation == "sigmoid" else torch.relu
    xt, tt = torch.from_numpy(x), torch.from_numpy(t)
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for idx in batches(len(x), ARGS.batch, epoch):
            idx = torch.from_numpy(idx)
            h = xt[idx]
            for i, (W, b) in enumerate(params):
                h = torch.addmm(b, h, W)
                if i < len(params) - 1:
                    h = act(h)
            loss = torch.nn.functional.cross_entropy(h, tt[idx])
            for W, b in params:
                W.grad = b.grad = None
            loss.backward()
            with torch.no_grad():
                for W, b in params:
                    W -= ARGS.lr * W.grad
                    b -= ARGS.lr * b.grad
            total += loss.item()
        losses.append(total / (len(x) // ARGS.batch))
    return losses, [a.detach().numpy() for W, b in params for a in (W, b)]


def machine():
    blas = "unknown"
    try:
        cfg = np.show_config(mode="dicts")
        info = cfg["Build Dependencies"]["blas"]
        blas = f"{info.get('name')} {info.get('version')}"
    except Exception:  # older NumPy without mode="dicts": the BLAS name is only cosmetic
        pass
    lines = [
        f"machine: {platform.platform()}, {_machine.cpu_name()}, "
        f"{os.cpu_count()} CPUs",
        f"python {platform.python_version()}, numpy {np.__version__} ({blas}), "
        f"dezero_like {dz.__version__}, torch {torch.__version__ if torch else TORCH_MISSING}",
        f"threads: {ARGS.threads} (OPENBLAS/OMP/MKL_NUM_THREADS"
        + (", torch.set_num_threads" if torch else "") + ")",
    ]
    return "\n".join(lines)


def main():
    if torch is not None:
        torch.set_num_threads(ARGS.threads)
    print("command: python " + " ".join(sys.argv))
    print(machine())
    rng = np.random.default_rng(0)
    x = rng.random((ARGS.samples, 784), dtype=np.float32)
    t = rng.integers(0, 10, size=ARGS.samples)
    print(f"data: {x.shape} float32, batch {ARGS.batch}, SGD lr {ARGS.lr}, "
          f"{ARGS.epochs} epoch(s), best of {ARGS.repeats}")
    print()
    header = (f"{'network':<18} {'act':<8} {'impl':<12} {'wall s':>8} {'ratio':>8} "
              f"{'cpu s':>8} {'ratio':>8}  loss")
    print("seconds per epoch; ratio = time / hand numpy's time. With one thread, cpu s (process")
    print("time) is the fairer figure on a busy machine: other processes' load inflates wall s.")
    print(header)
    print("-" * len(header))
    archs = ARGS.arch or ["784-1000-10", "784-1000-1000-10"]
    acts = ARGS.activation or ["sigmoid", "relu"]
    for arch in archs:
        sizes = [int(s) for s in arch.split("-")]
        weights = initial_weights(sizes)
        for act in acts:
            impls = [("hand numpy", run_numpy), ("dezero_like", run_dezero)]
            if torch is not None:
                impls.append(("torch", run_torch))
            # Round-robin: under a fluctuating machine load every implementation gets
            # its turns at the same times; the fastest turn of each is reported.
            times = {name: [] for name, _ in impls}
            cpu = {name: [] for name, _ in impls}
            results = {}
            for _ in range(ARGS.repeats):
                for name, fn in impls:
                    start, start_cpu = time.perf_counter(), time.process_time()
                    results[name] = fn(x, t, sizes, act, weights, ARGS.epochs)
                    times[name].append((time.perf_counter() - start) / ARGS.epochs)
                    cpu[name].append((time.process_time() - start_cpu) / ARGS.epochs)
            base, base_cpu = min(times["hand numpy"]), min(cpu["hand numpy"])
            for name, _ in impls:
                secs, secs_cpu = min(times[name]), min(cpu[name])
                print(f"{arch:<18} {act:<8} {name:<12} {secs:8.2f} {secs / base:7.3f}x "
                      f"{secs_cpu:8.2f} {secs_cpu / base_cpu:7.3f}x  {results[name][0][-1]:.4f}",
                      flush=True)
            diff = max(float(np.abs(a - b).max())
                       for a, b in zip(results["dezero_like"][1], results["hand numpy"][1]))
            print(f"{'':<18} {'':<8} final weights, dezero_like vs hand numpy: max |diff| "
                  f"{diff:.1e} (float32 rounding; identical math)")


if __name__ == "__main__":
    main()
