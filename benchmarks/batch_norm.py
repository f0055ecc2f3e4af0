"""Benchmark: batch norm forward + backward, one Function against the composed definition.

    PYTHONPATH=$PWD python benchmarks/batch_norm.py [--repeat 30] [--shape 100 16 28 28]

Times ``Fc.batch_norm`` (one Function, its gradient in closed form: step 58) and
``Fc.batch_norm_simple`` (the same maths from about nine differentiable functions, what
``batch_norm`` was before) in training mode on the same arrays, in the same process: one
forward and one backward (gradients for x, gamma and beta), median over ``--repeat`` runs in
milliseconds. PyTorch's ``batch_norm``, when installed, is timed too, and the three
gradients are compared so that the timing is of a correct computation.
"""

from __future__ import annotations

import argparse

import _machine  # benchmarks/_machine.py, beside this script
import numpy as np

import dezero_like as dz
import dezero_like.functions_conv as Fc


def make_ours(bn, x, gy):
    C = x.shape[1]
    xv, gv, bv = (dz.Variable(a) for a in (x, np.ones(C, x.dtype), np.zeros(C, x.dtype)))
    mean, var = np.zeros(C, x.dtype), np.ones(C, x.dtype)

    def run():
        for v in (xv, gv, bv):
            v.cleargrad()
        bn(xv, gv, bv, mean, var).backward(gradient=gy)
        return xv.grad.data, gv.grad.data, bv.grad.data

    return run


def make_torch(torch, x, gy):
    C = x.shape[1]
    xt = torch.tensor(x, requires_grad=True)
    gt, bt = torch.ones(C, requires_grad=True), torch.zeros(C, requires_grad=True)
    mean, var, gyt = torch.zeros(C), torch.ones(C), torch.tensor(gy)

    def run():
        for t in (xt, gt, bt):
            t.grad = None
        torch.nn.functional.batch_norm(xt, mean, var, gt, bt, training=True, momentum=0.1,
                                       eps=2e-5).backward(gyt)
        return xt.grad.numpy(), gt.grad.numpy(), bt.grad.numpy()

    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--shape", type=int, nargs="+", default=[100, 16, 28, 28])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    _machine.print_header(torch)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(args.shape) * 2 + 1).astype(args.dtype)
    gy = rng.standard_normal(args.shape).astype(args.dtype)
    print(f"x {tuple(x.shape)} {x.dtype}, training mode, median of {args.repeat} runs, "
          "forward + backward (x, gamma, beta)\n")
    runs = {"batch_norm (one Function)": make_ours(Fc.batch_norm, x, gy),
            "batch_norm_simple (composed)": make_ours(Fc.batch_norm_simple, x, gy)}
    if torch is not None:
        runs["torch batch_norm"] = make_torch(torch, x, gy)
    tol = 1e-3 if x.dtype == np.float32 else 1e-9
    reference = runs["batch_norm_simple (composed)"]()
    ms = {}
    for name, run in runs.items():
        for ours, theirs in zip(run(), reference):
            np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)
        ms[name] = _machine.median_ms(run, args.repeat)
        print(f"{name:<30}{ms[name]:>8.2f} ms")
    fused, composed = ms["batch_norm (one Function)"], ms["batch_norm_simple (composed)"]
    print(f"\ncomposed / one Function: {composed / fused:.2f}x")


if __name__ == "__main__":
    main()
