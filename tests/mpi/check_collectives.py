"""Collective operations on 2 processes: ``mpiexec -n 2 python tests/mpi/check_collectives.py``.

Every process checks what it received and prints one line; the test reads them.
"""

import numpy as np

from dezero_like.core import Variable
from dezero_like.datasets import Dataset
from dezero_like.distributed import Communicator, DistributedDataLoader


class Numbers(Dataset):
    def prepare(self):
        self.data = np.arange(40.0)[:, None]
        self.label = np.arange(40)


comm = Communicator()
r = comm.rank
# allreduce_mean: one message for arrays of several shapes and two dtypes
arrays = [np.full((2, 3), r + 1.0), np.array(float(r)), np.full(4, r + 1, np.float32)]
means = comm.allreduce_mean(arrays)
assert np.array_equal(means[0], np.full((2, 3), 1.5)) and means[0].shape == (2, 3)
assert means[1].shape == () and means[1] == 0.5
assert means[2].dtype == np.float32 and np.array_equal(means[2], np.full(4, 1.5, np.float32))
# gradients: averaged; None stays None
p, q = Variable(np.zeros(2)), Variable(np.zeros(2))
p.grad = Variable(np.array([2.0 * r, 4.0]))
comm.allreduce_grads([p, q])
assert np.array_equal(p.grad.data, [1.0, 4.0]) and q.grad is None
# the loader: equal, disjoint slices whose union is the global batch
loader = DistributedDataLoader(Numbers(), 8, comm, seed=3)
order = loader.index.copy()  # this epoch's order (the loader draws a new one at the end)
mine = [t.copy() for _, t in loader]
everyone = comm.comm.allgather(mine)
assert len(mine) == 5 and all(len(t) == 4 for t in mine)
for step in range(5):
    a, b = everyone[0][step], everyone[1][step]
    assert not set(a) & set(b)
    assert np.array_equal(np.concatenate([a, b]), order[step * 8:(step + 1) * 8])
try:
    DistributedDataLoader(Numbers(), 7, comm)
except ValueError as e:
    assert "multiple of the number of processes (2)" in str(e)
else:
    raise AssertionError("an odd batch for 2 processes must be refused")
print(f"rank {r} of {comm.size}: collectives ok")
