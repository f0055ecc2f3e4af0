"""Time one MNIST training epoch of an MLP on the CPU and on the GPU, with the same code.

    PYTHONPATH=$PWD python benchmarks/mnist_gpu.py [--hidden 1000] [--batch-size 100]

Uses the official training set when it is cached (or downloadable), else the
8,000-image split of the test images (see ``dz.datasets.mnist_train_test``).
Both devices start from the same weights and see the same batches; the script
prints seconds per epoch, images per second, the final losses and the
speed-up. Without CuPy or a GPU it says so after the CPU figure and exits 0.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import DataLoader, cuda, optimizers
from dezero_like.models import MLP


def run_epoch(train_set, hidden, batch_size, gpu, warmup_batches=3):
    np.random.seed(0)
    model = MLP((hidden, hidden, 10), activation=F.relu)
    model(np.zeros((1, 784), dtype=np.float32))  # same initial weights on both devices
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    loader = DataLoader(train_set, batch_size, seed=0, gpu=gpu)

    def step(x, t):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        return loss

    # warm-up (CuPy compiles its kernels on first use); not timed
    for i, (x, t) in enumerate(loader):
        step(x, t)
        if i + 1 == warmup_batches:
            break
    loader.reset()
    sync = cuda.require_gpu().cuda.Device().synchronize if gpu else (lambda: None)
    sync()
    start = time.perf_counter()
    total = 0.0
    for x, t in loader:
        total += float(step(x, t).data) * len(t)
    sync()
    return time.perf_counter() - start, total / len(train_set)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args(argv)

    train_set, _ = dz.datasets.mnist_train_test()
    print(train_set.summary)
    print(f"MLP 784-{args.hidden}-{args.hidden}-10, ReLU, SGD, batch size {args.batch_size}")
    cpu_s, cpu_loss = run_epoch(train_set, args.hidden, args.batch_size, gpu=False)
    n = len(train_set)
    print(f"cpu: {cpu_s:7.2f} s/epoch  {n / cpu_s:9.0f} images/s  loss {cpu_loss:.5f}")
    if not cuda.gpu_available():
        print("gpu: not measured: no GPU available (CuPy is not installed or sees no CUDA "
              "device). Install cupy-cuda12x on a machine with an NVIDIA GPU to compare.")
        return 0
    gpu_s, gpu_loss = run_epoch(train_set, args.hidden, args.batch_size, gpu=True)
    print(f"gpu: {gpu_s:7.2f} s/epoch  {n / gpu_s:9.0f} images/s  loss {gpu_loss:.5f}")
    print(f"speed-up: {cpu_s / gpu_s:.1f}x   loss difference: {abs(cpu_loss - gpu_loss):.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
