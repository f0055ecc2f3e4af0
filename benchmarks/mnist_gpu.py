"""Seconds per MNIST epoch: dezero_like against the same math by hand and PyTorch eager.

    PYTHONPATH=$PWD python benchmarks/mnist_gpu.py [--device gpu|cpu] [--epochs 3]
                                                   [--hidden 1000] [--layers 1]

The book's Appendix C workload: an MLP 784-H-10 (``--layers 2``: 784-H-H-10)
with sigmoid, softmax cross entropy, plain SGD (lr 1.0), batch 100, one epoch
of 60,000 float32 rows, each batch copied host -> device as a real loader
would. Columns, all in one run on the same data:

* ``dezero_like``: ``models.MLP`` + ``optimizers.SGD``, exactly as a step writes it;
* ``by hand``: the same forward, backward and update written with the array
  module (CuPy on the GPU, NumPy on the CPU), one library call per operation;
* ``by hand, fused`` (GPU): the elementwise chains fused into single kernels
  (``cupy.ElementwiseKernel`` / ``cupy.RawKernel``), as step 71 builds them;
* ``PyTorch eager``: ``nn.Linear``, ``torch.sigmoid``, ``F.cross_entropy``,
  ``torch.optim.SGD`` (when PyTorch is installed).

Then a small CNN (conv16-pool-conv32-pool-fc100-fc10, 3x3 convolutions,
10,000 images, batch 100): dezero_like against PyTorch.

Each figure is the median of ``--epochs`` timed epochs after one untimed
warm-up epoch (CuPy compiles and caches its kernels on first use). The columns
take turns, one epoch each per round, so a slow spell of a shared machine
falls on all of them alike. The training images are MNIST's when cached
(``DEZERO_LIKE_DATA``), else the 10,000 test images repeated six times (the
timing does not depend on which digits they are); the script says which.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time

import _machine  # benchmarks/_machine.py, beside this script
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import cuda, optimizers
from dezero_like.models import MLP

BATCH = 100
LR = 1.0


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def load_rows(rows=60000):
    """(x float32 (rows, 784) in [0, 1], t int64 (rows,), where they came from)."""
    try:
        train = dz.datasets.MNIST(train=True)
        x, t = train.data, train.label
        where = "MNIST training images"
    except Exception:  # the training images are not cached here: tile the test images
        test = dz.datasets.MNIST(train=False)
        x, t = test.data, test.label
        where = f"MNIST test images x{-(-rows // len(x))} (training images not cached)"
    x = np.asarray(x, np.float32).reshape(len(x), -1) / np.float32(255)
    t = np.asarray(t, np.int64)
    reps = -(-rows // len(x))
    return np.tile(x, (reps, 1))[:rows], np.tile(t, reps)[:rows], where


def batches(x, t):
    order = np.random.default_rng(0).permutation(len(x))
    for i in range(0, len(x), BATCH):
        idx = order[i:i + BATCH]
        yield x[idx], t[idx]


def init_weights(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((i, o)).astype(np.float32) * np.float32(np.sqrt(1 / i)),
             np.zeros(o, np.float32)) for i, o in zip(sizes[:-1], sizes[1:])]


# --------------------------------------------------------------------------- #
# The columns: each returns run_epoch() -> mean loss (a float, read once)
# --------------------------------------------------------------------------- #


def mlp_model(sizes):
    """The book's MLP (``sizes`` = (784, H, 10)), its weights from ``init_weights``."""
    model = MLP(sizes[1:], activation=F.sigmoid)
    model(np.zeros((1, sizes[0]), np.float32))
    for layer, (W, b) in zip(model.layers, init_weights(sizes)):
        layer.W.data[...] = W
        layer.b.data[...] = b
    return model


def ours(sizes, x, t, gpu):
    model = mlp_model(sizes)
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=LR).setup(model)
    to_device = cuda.as_cupy if gpu else (lambda a: a)

    def run_epoch():
        total = 0
        for xb, tb in batches(x, t):
            loss = F.softmax_cross_entropy(model(to_device(xb)), to_device(tb))
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total = total + loss.data  # stays on the device: no synchronisation per batch
        return float(total) / (len(x) // BATCH)

    return run_epoch


def by_hand(sizes, x, t, xp, fused=False):
    params = [(xp.asarray(W), xp.asarray(b)) for W, b in init_weights(sizes)]
    if fused and (t.dtype != np.int64 or t.min() < 0 or t.max() >= sizes[-1]):
        # the fused loss kernel reads labels as 64-bit ints and indexes a row with them unchecked
        raise ValueError(f"the fused column needs int64 labels in [0, {sizes[-1]}), got "
                         f"{t.dtype} labels from {t.min()} to {t.max()}")
    k = kernels(xp) if fused else None

    def step(xb, tb):
        acts = [xb]
        for W, b in params[:-1]:
            h = acts[-1] @ W
            if fused:
                acts.append(k["bias_sigmoid"](h, b))
            else:
                h += b
                acts.append(1 / (1 + xp.exp(-h)))
        W, b = params[-1]
        y = acts[-1] @ W
        y += b
        n = len(tb)
        if fused:
            gy = xp.empty_like(y)
            rows = xp.empty(n, y.dtype)
            # one thread per row, in blocks of 32
            k["softmax_ce"](((n + 31) // 32,), (32,),
                            (y, tb, gy, rows, np.int32(y.shape[1]), np.int32(n)))
            loss = rows.sum()
        else:
            m = y.max(axis=1, keepdims=True)
            e = xp.exp(y - m)
            s = e.sum(axis=1, keepdims=True)
            loss = -(y - m - xp.log(s))[xp.arange(n), tb].sum() / n
            gy = e / s
            gy[xp.arange(n), tb] -= 1
            gy /= n
        grads = []
        for i in range(len(params) - 1, -1, -1):
            W, b = params[i]
            a = acts[i]
            grads.append((a.T @ gy, gy.sum(axis=0)))
            if i:
                ga = gy @ W.T
                gy = k["sigmoid_grad"](ga, a) if fused else ga * a * (1 - a)
        for (W, b), (gW, gb) in zip(reversed(params), grads):
            if fused:
                k["sgd"](gW, np.float32(LR), W)
                k["sgd"](gb, np.float32(LR), b)
            else:
                W -= LR * gW
                b -= LR * gb
        return loss

    to_device = xp.asarray

    def run_epoch():
        total = 0
        for xb, tb in batches(x, t):
            total = total + step(to_device(xb), to_device(tb))
        return float(total) / (len(x) // BATCH)

    return run_epoch


def kernels(cp):
    """The fused kernels of the hand-written column (step 71 builds the package's)."""
    return {
        "bias_sigmoid": cp.ElementwiseKernel(
            "T h, T b", "T y", "y = 1 / (1 + exp(-(h + b)))", "bench_bias_sigmoid"),
        "sigmoid_grad": cp.ElementwiseKernel(
            "T gy, T y", "T gx", "gx = gy * y * (1 - y)", "bench_sigmoid_grad"),
        "sgd": cp.ElementwiseKernel("T g, T lr", "T w", "w -= lr * g", "bench_sgd"),
        "softmax_ce": cp.RawKernel(r"""
extern "C" __global__ void bench_softmax_ce(const float* y, const long long* t, float* gy,
                                           float* rows, int c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* r = y + (long long)i * c;
    float m = r[0];
    for (int j = 1; j < c; ++j) m = fmaxf(m, r[j]);
    float s = 0.f;
    for (int j = 0; j < c; ++j) s += expf(r[j] - m);
    int label = (int)t[i];
    rows[i] = (logf(s) + m - r[label]) / n;
    for (int j = 0; j < c; ++j)
        gy[(long long)i * c + j] = (expf(r[j] - m) / s - (j == label)) / n;
}""", "bench_softmax_ce"),
    }


def pytorch(sizes, x, t, device, conv=False):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if conv:
        model = torch_cnn(nn)
    else:
        mods = []
        for i, (W, b) in enumerate(init_weights(sizes)):
            lin = nn.Linear(*W.shape)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(W.T.copy()))
                lin.bias.copy_(torch.from_numpy(b))
            mods += [lin] + ([nn.Sigmoid()] if i < len(sizes) - 2 else [])
        model = nn.Sequential(*mods)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR if not conv else 0.1)

    def run_epoch():
        total = torch.zeros((), device=device)
        for xb, tb in batches(x, t):
            xb = torch.from_numpy(xb).to(device)
            if conv:
                xb = xb.reshape(-1, 1, 28, 28)
            loss = nn.functional.cross_entropy(model(xb), torch.from_numpy(tb).to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        return float(total) / (len(x) // BATCH)

    return run_epoch


# --------------------------------------------------------------------------- #
# The small CNN
# --------------------------------------------------------------------------- #


def torch_cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 100), nn.ReLU(), nn.Linear(100, 10))


def small_cnn(size=28):
    """The small CNN conv16-pool-conv32-pool-fc100-fc10, its weights made (seed 0) for images of
    ``size`` x ``size`` pixels."""
    import dezero_like.layers as L
    from dezero_like.functions_conv import pooling
    from dezero_like.layers_conv import Conv2d
    from dezero_like.models import Model

    class SmallCNN(Model):
        def __init__(self):
            super().__init__()
            self.c1 = Conv2d(16, 3, pad=1)
            self.c2 = Conv2d(32, 3, pad=1)
            self.l1 = L.Linear(100)
            self.l2 = L.Linear(10)

        def forward(self, v):
            v = pooling(F.relu(self.c1(v)), 2, 2)
            v = pooling(F.relu(self.c2(v)), 2, 2)
            return self.l2(F.relu(self.l1(F.reshape(v, (len(v), -1)))))

    np.random.seed(0)
    model = SmallCNN()
    model(np.zeros((1, 1, size, size), np.float32))
    return model


def ours_cnn(x, t, gpu):
    model = small_cnn()
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    to_device = cuda.as_cupy if gpu else (lambda a: a)

    def run_epoch():
        total = 0
        for xb, tb in batches(x, t):
            loss = F.softmax_cross_entropy(model(to_device(xb.reshape(-1, 1, 28, 28))),
                                           to_device(tb))
            model.cleargrads()
            loss.backward()
            optimizer.update()
            total = total + loss.data
        return float(total) / (len(x) // BATCH)

    return run_epoch


# --------------------------------------------------------------------------- #


def timed(columns, epochs):
    """Time ``columns`` ``[(name, run_epoch, sync), ...]``, taking turns epoch by epoch.

    Every column is warmed up once (kernel compilation, allocator pools, BLAS
    handles), then each round runs one epoch of every column in turn. Taking
    turns puts the same machine state under every column: a slow minute on a
    shared machine slows all of them, not just the one measured then. Returns
    ``{name: (median, min, max, last loss, [seconds per round])}``.
    """
    for _, run_epoch, sync in columns:
        run_epoch()
        sync()
    times = {name: [] for name, _, _ in columns}
    losses = {}
    for _ in range(epochs):
        for name, run_epoch, sync in columns:
            start = time.perf_counter()
            losses[name] = run_epoch()  # reads the loss: the epoch's work is finished
            sync()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(ts), min(ts), max(ts), losses[name], ts)
            for name, ts in times.items()}


def report(results):
    for name, (med, lo, hi, loss, _) in results.items():
        print(f"  {name:16s} {med:7.3f} s/epoch (min {lo:.3f}, max {hi:.3f})  loss {loss:.4f}")


def round_ratios(results, name):
    """dezero_like's epoch over ``name``'s, round by round (both measured back to back)."""
    ours, theirs = results["dezero_like"][4], results[name][4]
    return ", ".join(f"{a / b:.2f}" for a, b in zip(ours, theirs))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per column")
    parser.add_argument("--hidden", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=1, help="hidden layers (1 or 2)")
    parser.add_argument("--skip-mlp", action="store_true", help="time only the small CNN")
    parser.add_argument("--skip-cnn", action="store_true", help="time only the MLP")
    args = parser.parse_args(argv)
    print("command: python " + " ".join(shlex.quote(a) for a in sys.argv))
    print("machine:", _machine.describe())
    gpu = args.device == "gpu"
    if gpu and not cuda.gpu_available():
        print("gpu: not measured: no GPU available (CuPy is not installed or sees no CUDA "
              "device). Run with --device cpu, or on a machine with an NVIDIA GPU and CuPy.")
        return 0
    if gpu:
        cp = cuda.require_gpu()
        props = cp.cuda.runtime.getDeviceProperties(0)
        print(f"gpu: {props['name'].decode()}, CuPy {cp.__version__}")
        sync = cp.cuda.Device().synchronize
        xp = cp
    else:
        sync = lambda: None  # noqa: E731
        xp = np
    try:
        import torch

        print(f"PyTorch {torch.__version__}" + (f", {torch.get_num_threads()} CPU threads"
                                                if not gpu else ""))
        tdev = "cuda" if gpu else "cpu"
        tsync = torch.cuda.synchronize if gpu else (lambda: None)
    except ImportError:
        torch = None
        print("PyTorch: not installed; its column is left out")

    x, t, where = load_rows()
    print(f"data: {where}")
    if not args.skip_mlp:
        sizes = (784,) + (args.hidden,) * args.layers + (10,)
        print(f"MLP {'-'.join(map(str, sizes))}, sigmoid, SGD lr {LR}, batch {BATCH}, "
              f"{len(x)} rows per epoch, float32, each batch copied to the device")
        columns = [("dezero_like", ours(sizes, x, t, gpu), sync),
                   ("by hand", by_hand(sizes, x, t, xp), sync)]
        if gpu:
            columns.append(("by hand, fused", by_hand(sizes, x, t, xp, fused=True), sync))
        if torch is not None:
            columns.append(("PyTorch eager", pytorch(sizes, x, t, tdev), tsync))
        results = timed(columns, args.epochs)
        report(results)
        ref = results["dezero_like"][0]
        print("ratios (dezero_like / column, of the medians): " + ", ".join(
            f"{name} {ref / res[0]:.2f}" for name, res in results.items() if name != "dezero_like"))

    if args.skip_cnn:
        return 0
    xc, tc = x[:10000], t[:10000]
    print("small CNN conv16-pool-conv32-pool-fc100-fc10 (3x3, ReLU, max pooling), "
          f"10,000 images, batch {BATCH}, SGD lr 0.1")
    columns = [("dezero_like", ours_cnn(xc, tc, gpu), sync)]
    if torch is not None:
        columns.append(("PyTorch eager", pytorch(None, xc, tc, tdev, conv=True), tsync))
    cnn = timed(columns, args.epochs)
    report(cnn)
    if torch is not None:
        print(f"ratio dezero_like / PyTorch: {cnn['dezero_like'][0] / cnn['PyTorch eager'][0]:.2f}"
              f" (of the medians; round by round: {round_ratios(cnn, 'PyTorch eager')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
