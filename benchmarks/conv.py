"""Benchmark: dezero_like conv2d forward + backward against PyTorch on the CPU.

    PYTHONPATH=$PWD python benchmarks/conv.py [--repeat 20] [--dtype float32]

For each shape, times one forward pass plus one backward pass (gradients for
x, W and b) and prints the median over ``--repeat`` runs in milliseconds, and
the ratio dezero_like / PyTorch (lower is better; 1.0 means as fast). Both run
in the same process on the same arrays, and the gradients are compared so the
timing is of a correct computation. PyTorch is optional: without it only
dezero_like's times are printed.
"""

from __future__ import annotations

import argparse

import _machine  # benchmarks/_machine.py, beside this script
import numpy as np

import dezero_like as dz
import dezero_like.functions_conv as Fc

# (name, N, C, H, W, OC, kernel, stride, pad)
SHAPES = [
    ("MNIST conv1", 32, 1, 28, 28, 16, 3, 1, 1),
    ("MNIST conv2", 32, 16, 14, 14, 32, 3, 1, 1),
    ("CIFAR-like", 32, 64, 32, 32, 64, 3, 1, 1),
    ("strided", 32, 32, 32, 32, 64, 3, 2, 1),
]


def make_ours(xv, Wv, bv, stride, pad):
    def run():
        for v in (xv, Wv, bv):
            v.cleargrad()
        y = Fc.conv2d(xv, Wv, bv, stride, pad)
        y.backward()

    return run


def make_theirs(torch, xt, Wt, bt, stride, pad):
    def run():
        for t in (xt, Wt, bt):
            t.grad = None
        y = torch.nn.functional.conv2d(xt, Wt, bt, stride=stride, padding=pad)
        y.backward(torch.ones_like(y))

    return run




def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = parser.parse_args(argv)
    dtype = np.dtype(args.dtype)
    try:
        import torch
    except ImportError:
        torch = None

    _machine.print_header(torch)
    print(f"dtype {dtype}, median of {args.repeat} runs, forward + backward (x, W, b)\n")
    header = f"{'shape':<14}{'x':>20}{'W':>18}{'dezero_like ms':>16}{'torch ms':>10}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for name, N, C, H, W, OC, k, s, p in SHAPES:
        x = rng.standard_normal((N, C, H, W)).astype(dtype)
        Wt = (rng.standard_normal((OC, C, k, k)) / np.sqrt(C * k * k)).astype(dtype)
        b = np.zeros(OC, dtype)
        xv, Wv, bv = dz.Variable(x), dz.Variable(Wt), dz.Variable(b)

        ours = make_ours(xv, Wv, bv, s, p)
        ms = _machine.median_ms(ours, args.repeat)
        cells = f"{name:<14}{str(x.shape):>20}{str(Wt.shape):>18}{ms:>16.2f}"
        if torch is not None:
            xt, Wtt, bt = (torch.tensor(a, requires_grad=True) for a in (x, Wt, b))
            theirs = make_theirs(torch, xt, Wtt, bt, s, p)
            tms = _machine.median_ms(theirs, args.repeat)
            tol = 1e-3 if dtype == np.float32 else 1e-9
            for ours_g, t in ((xv.grad, xt), (Wv.grad, Wtt), (bv.grad, bt)):
                np.testing.assert_allclose(ours_g.data, t.grad.numpy(), rtol=tol, atol=tol)
            cells += f"{tms:>10.2f}{ms / tms:>8.2f}"
        print(cells)


if __name__ == "__main__":
    main()
