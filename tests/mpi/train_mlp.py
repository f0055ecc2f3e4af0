"""Train a small MLP data-parallel: ``mpiexec -n P python tests/mpi/train_mlp.py OUT.npz``.

The same script with any number of processes takes the same steps: each step
uses a global batch of 24 examples, split evenly over the P processes, and the
gradients are averaged. Rank 0 writes the final parameters to OUT.npz. The
exactness test runs it with 1 and 2 processes and compares the files.
"""

import sys

import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.datasets import Dataset
from dezero_like.distributed import AllreduceGrads, Communicator, DistributedDataLoader
from dezero_like.models import Sequential
from dezero_like.optimizers import SGD


class Blobs(Dataset):
    """480 points in 4 dimensions, 3 classes, the same on every process (fixed seed)."""

    def prepare(self):
        rng = np.random.default_rng(1)
        self.label = rng.integers(0, 3, size=480)
        self.data = rng.normal(size=(480, 4)) + self.label[:, None]


def main(out):
    comm = Communicator()
    np.random.seed(comm.rank)  # different initial weights per process on purpose...
    model = Sequential(L.Linear(16, dtype=np.float64), F.sigmoid, L.Linear(3, dtype=np.float64))
    model(np.zeros((1, 4)))
    comm.bcast_params(model)  # ...which bcast_params makes equal
    loader = DistributedDataLoader(Blobs(), 24, comm, seed=5)
    optimizer = SGD(lr=0.1).setup(model).add_hook(AllreduceGrads(comm))
    for _ in range(3):
        for x, t in loader:
            assert len(x) == 24 // comm.size
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
    (mean_loss,) = comm.allreduce_mean([loss.data])  # the loss of the whole last batch
    if comm.rank == 0:
        np.savez(out, **{k: p.data for k, p in model._flatten_params().items()})
        print(f"{comm.size} processes, {len(loader)} steps per epoch, "
              f"last batch loss {float(mean_loss):.12f}")


if __name__ == "__main__":
    main(sys.argv[1])
