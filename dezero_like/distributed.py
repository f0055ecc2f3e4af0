"""Data-parallel training over MPI: every process trains on its slice of each batch.

::

    comm = Communicator()                       # MPI.COMM_WORLD through mpi4py
    comm.bcast_params(model)                    # every process starts from rank 0's weights
    loader = DistributedDataLoader(train_set, 100, comm)   # 100 examples per step in total
    optimizer = SGD(lr).setup(model).add_hook(AllreduceGrads(comm))
    for x, t in loader:                         # this process's 100 / size examples
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()                      # gradients averaged over processes first

Run it as ``mpiexec -n 2 python train.py``. Averaging the processes' gradients
of their mean losses gives the gradient of the mean loss over the whole batch,
so two processes with half a batch each take the same steps as one process with
the whole batch (up to float rounding).

mpi4py is imported when a :class:`Communicator` is made, not with the package:
``pip install -e ".[mpi]"`` installs it together with an MPI library (MPICH's
wheel). CuPy arrays are reduced through host memory (copied to NumPy and back);
a CUDA-aware MPI, or NCCL, would reduce them on the device.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from dezero_like import cuda
from dezero_like._fixable import FixableError
from dezero_like.core import Variable
from dezero_like.dataloaders import DataLoader

__all__ = [
    "MPIUnavailableError", "Communicator", "AllreduceGrads", "DistributedDataLoader",
    "ring_allreduce_bytes", "naive_allreduce_bytes", "mpi_available", "find_mpiexec",
    "run_program",
]


class MPIUnavailableError(FixableError, ImportError):
    """mpi4py (or an MPI library under it) is missing; the message says what to install."""


def mpi_available():
    """True when mpi4py and an MPI library can be loaded."""
    try:
        _mpi()
    except MPIUnavailableError:
        return False
    return True


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise MPIUnavailableError(
            f"Data-parallel training needs mpi4py and an MPI library, and importing mpi4py "
            f"failed ({e}). To fix: pip install -e \".[mpi]\" (from a clone) or pip install "
            "mpi4py mpich (anywhere, Colab included): both come as wheels, nothing to compile. "
            "Then start the processes with mpiexec -n 2 python your_script.py."
        ) from None
    return MPI


def find_mpiexec():
    """The ``mpiexec`` of this Python's environment (MPICH's wheel puts it beside python)."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def run_program(source, n=2, args=(), timeout=600):
    """Run the Python program ``source`` on ``n`` processes with mpiexec; return its stdout.

    The program is written to a temporary file, so this works the same from a
    script, Jupyter and Colab (a notebook cannot become several processes
    itself). Every process gets one BLAS thread: otherwise each starts one per
    core and the processes' threads fight over the same cores.
    """
    launcher = find_mpiexec()
    if launcher is None or not mpi_available():
        raise MPIUnavailableError(
            "running several processes needs mpiexec, mpi4py and an MPI library. To fix: "
            "pip install -e \".[mpi]\" (or pip install mpi4py mpich), which puts mpiexec beside "
            "python; then run this again."
        )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               # Open MPI refuses to start as root (Colab and containers run as root) unless
               # told twice; MPICH ignores these
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "program.py")
        with open(path, "w") as f:
            f.write(source)
        done = subprocess.run([launcher, "-n", str(n), sys.executable, path, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"mpiexec -n {n} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# --------------------------------------------------------------------------- #
# The cost model of step 72
# --------------------------------------------------------------------------- #


def naive_allreduce_bytes(n_bytes, p):
    """Bytes the busiest process sends when everyone sends to rank 0, which sends the sum back.

    Rank 0 receives ``(p - 1) * n`` and sends ``(p - 1) * n``: its link carries
    ``2 (p - 1) n`` bytes, growing with the number of processes.
    """
    return 2 * (p - 1) * n_bytes


def ring_allreduce_bytes(n_bytes, p):
    """Bytes each process sends in a ring all-reduce: ``2 (p - 1) / p * n``.

    The array is cut into ``p`` chunks; ``p - 1`` rounds of reduce-scatter and
    ``p - 1`` rounds of all-gather each pass one chunk (``n / p`` bytes) to the
    next process, so the traffic per process stays below ``2 n`` for any ``p``.
    """
    return 2 * (p - 1) * n_bytes / p


# --------------------------------------------------------------------------- #
# Communicator
# --------------------------------------------------------------------------- #


class Communicator:
    """The processes of an MPI job, seen from this one: ``rank`` of ``size``.

    ``comm`` is an mpi4py communicator (``MPI.COMM_WORLD`` by default). The
    collective methods must be called by every process, in the same order.
    """

    def __init__(self, comm=None):
        MPI = _mpi()
        self._MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    def __repr__(self):
        return f"Communicator(rank={self.rank}, size={self.size})"

    def allreduce_mean(self, arrays):
        """The element-wise mean over processes of each array in ``arrays`` (a list).

        The arrays are packed into one buffer per dtype, so the whole list costs
        one all-reduce (one latency) instead of one per array. CuPy arrays go
        through host memory and come back as CuPy arrays.
        """
        arrays = list(arrays)
        out = [None] * len(arrays)
        groups = {}
        for i, a in enumerate(arrays):
            groups.setdefault(np.dtype(a.dtype), []).append(i)
        for dtype, idx in groups.items():
            host = [cuda.as_numpy(arrays[i]) for i in idx]
            send = np.concatenate([h.ravel() for h in host]) if host else np.empty(0, dtype)
            recv = np.empty_like(send)
            self.comm.Allreduce(send, recv, op=self._MPI.SUM)
            recv /= self.size
            offset = 0
            for i, h in zip(idx, host):
                piece = recv[offset:offset + h.size].reshape(h.shape)
                offset += h.size
                xp = cuda.get_array_module(arrays[i])
                out[i] = piece.copy() if xp is np else cuda.as_cupy(piece)
        return out

    def allreduce_grads(self, params):
        """Replace each parameter's gradient by its mean over processes (None stays None)."""
        params = [p for p in params if p.grad is not None]
        means = self.allreduce_mean([p.grad.data for p in params])
        for p, g in zip(params, means):
            p.grad = Variable(g, requires_grad=False)

    def bcast_params(self, model, root=0):
        """Give every process the parameters of process ``root`` (call once, before training)."""
        for key, p in sorted(model._flatten_params().items()):
            if p.data is None:
                raise ValueError(
                    f"bcast_params: {key} is not initialised yet (a layer without in_size makes "
                    "its weights on the first call); run one forward pass on every process first"
                )
            host = np.ascontiguousarray(cuda.as_numpy(p.data))
            self.comm.Bcast(host, root=root)
            p.data = host if isinstance(p.data, np.ndarray) else cuda.as_cupy(host)

    def bcast(self, obj, root=0):
        """A Python object from ``root`` to every process (small things: settings, seeds)."""
        return self.comm.bcast(obj, root=root)

    def barrier(self):
        self.comm.Barrier()


class AllreduceGrads:
    """Optimizer hook: average the gradients over processes before the update.

    ``optimizer.add_hook(AllreduceGrads(comm))``; add it before hooks that read
    gradients (WeightDecay, ClipGrad), so they see the averaged ones.
    """

    def __init__(self, comm):
        self.comm = comm

    def __call__(self, params):
        self.comm.allreduce_grads(params)


class DistributedDataLoader(DataLoader):
    """Each process gets its own slice of every batch of ``batch_size`` examples.

    All processes draw the same order (same ``seed``), cut it into batches of
    ``batch_size`` (the *global* batch) and take the ``rank``-th of ``size``
    equal slices. Only whole batches are used, so every slice has
    ``batch_size / size`` examples and the averaged gradient equals the
    whole batch's exactly; ``batch_size`` must be a multiple of ``size``.
    """

    def __init__(self, dataset, batch_size, comm, shuffle=True, seed=0, gpu=False):
        size = comm.size
        if batch_size % size:
            raise ValueError(
                f"batch_size {batch_size} must be a multiple of the number of processes ({size}),"
                " so that every process gets the same number of examples"
            )
        if len(dataset) < batch_size:
            raise ValueError(f"the dataset has {len(dataset)} examples, fewer than one batch "
                             f"({batch_size})")
        self.comm = comm
        self.local_size = batch_size // size
        super().__init__(dataset, batch_size, shuffle=shuffle, gpu=gpu, seed=seed)
        self.max_iter = len(dataset) // batch_size  # whole batches only

    def _batch_index(self):
        i, size = self.iteration, self.batch_size
        batch = self.index[i * size:(i + 1) * size]
        r, n = self.comm.rank, self.local_size
        return batch[r * n:(r + 1) * n]
