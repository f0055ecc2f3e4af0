"""All-reduce time against bytes, and an MLP epoch on 1 vs 2 processes (steps 72-74).

    python benchmarks/allreduce.py                 # both parts, 2 processes
    python benchmarks/allreduce.py --procs 4       # more processes (if you have the cores)

Part 1 runs ``Communicator.allreduce_mean`` on float32 buffers from 4 KB to
16 MB under ``mpiexec -n P`` and prints the time per call, the bytes each
process sends by the ring cost model ``2 (P-1)/P * N``, and the bandwidth that
implies. Part 2 trains the MNIST-shaped MLP 784-1000-10 (random data, float32,
global batch 100, 60 steps) on 1 and on P processes and prints seconds per step
and the speed-up. Every process uses one BLAS thread. The command and the
machine are printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

sys.dont_write_bytecode = True

ALLREDUCE = textwrap.dedent("""
    import time
    import numpy as np
    from dezero_like import distributed as D

    comm = D.Communicator()
    for n_bytes in [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20]:
        a = np.ones(n_bytes // 4, np.float32)
        comm.allreduce_mean([a]); comm.barrier()          # warm-up
        reps = max(5, min(200, (64 << 20) // n_bytes))
        start = time.perf_counter()
        for _ in range(reps):
            comm.allreduce_mean([a])
        comm.barrier()
        seconds = (time.perf_counter() - start) / reps
        if comm.rank == 0:
            model = D.ring_allreduce_bytes(n_bytes, comm.size)
            print(f"{n_bytes:>10,d} B  {seconds * 1e6:10.1f} us  ring model sends "
                  f"{model:>12,.0f} B/process  -> {model / seconds / 1e9:6.2f} GB/s", flush=True)
""")

EPOCH = textwrap.dedent("""
    import time
    import numpy as np
    import dezero_like.functions as F
    from dezero_like import distributed as D
    from dezero_like.datasets import Dataset
    from dezero_like.models import MLP
    from dezero_like.optimizers import SGD

    class Random(Dataset):
        def prepare(self):
            rng = np.random.default_rng(0)
            self.data = rng.random((6000, 784), dtype=np.float32)
            self.label = rng.integers(0, 10, size=6000)

    comm = D.Communicator()
    np.random.seed(0)
    model = MLP((1000, 10))
    model(np.zeros((1, 784), np.float32))
    comm.bcast_params(model)
    loader = D.DistributedDataLoader(Random(), 100, comm, seed=0)
    opt = SGD(0.1).setup(model).add_hook(D.AllreduceGrads(comm))

    def epoch():
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            opt.update()

    epoch()                                                 # warm-up
    comm.barrier()
    start = time.perf_counter()
    epoch()
    comm.barrier()
    seconds = time.perf_counter() - start
    if comm.rank == 0:
        print(f"{seconds / len(loader) * 1e3:.2f}", flush=True)
""")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=2, help="processes (default 2)")
    args = parser.parse_args(argv)
    from _machine import describe  # beside this script

    from dezero_like.distributed import mpi_available, ring_allreduce_bytes, run_program

    if not mpi_available():
        raise SystemExit('mpi4py and mpiexec are needed: pip install -e ".[mpi]"')
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))
    print("machine:", describe())
    print(f"MPI: mpiexec -n {args.procs}, one BLAS thread per process\n")
    print(f"1. allreduce_mean of one float32 buffer, {args.procs} processes")
    print(run_program(ALLREDUCE, args.procs, timeout=900))
    print("2. MLP 784-1000-10, float32, global batch 100, 60 steps (random MNIST-shaped data)")
    one = float(run_program(EPOCH, 1, timeout=900))
    many = float(run_program(EPOCH, args.procs, timeout=900))
    print(f"   1 process:  {one:7.2f} ms per step")
    print(f"   {args.procs} processes: {many:7.2f} ms per step  (speed-up {one / many:.2f}x)")
    grad_bytes = (784 * 1000 + 1000 + 1000 * 10 + 10) * 4
    print(f"   gradients per step: {grad_bytes / 1e6:.2f} MB; the ring sends "
          f"{ring_allreduce_bytes(grad_bytes, args.procs) / 1e6:.2f} MB per process per step")


if __name__ == "__main__":
    main()
