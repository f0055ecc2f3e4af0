# %% [markdown]
# # Step 72: Data parallelism, and what an all-reduce costs
#
# Every large model today is trained by many workers at once. The simplest and
# by far the most common scheme is **data parallelism**: every worker holds a
# full copy of the model, takes its own slice of each batch, computes the
# gradient of *its* slice, and then all workers **average their gradients**
# before each takes the same optimizer step. Their copies stay identical,
# step after step, and together they have processed the whole batch.
#
# Why is that the same training as one worker with the whole batch? The loss
# of a batch of $B$ examples is the mean of the per-example losses,
# $L = \frac{1}{B}\sum_{n=1}^{B} \ell_n$, and differentiation is linear, so
# $\nabla L = \frac{1}{B}\sum_n \nabla \ell_n$. Cut the batch into $p$ slices
# of $B/p$ examples each, and let worker $k$ compute the gradient of its own
# mean loss $L_k$. Then
#
# $$\frac{1}{p}\sum_{k=1}^{p} \nabla L_k
#   = \frac{1}{p}\sum_{k} \frac{p}{B}\sum_{n \in k} \nabla \ell_n
#   = \frac{1}{B}\sum_{n=1}^{B} \nabla \ell_n = \nabla L .$$
#
# The average of the slices' gradients *is* the whole batch's gradient, as
# long as the slices are the same size. This step checks that with the
# framework you built, then looks at the operation that does the averaging,
# the **all-reduce**, and at what it costs. Steps 73 and 74 run it for real on
# several processes.

# %% [markdown]
# ### The package code of this step
#
# In this step `distributed` gains `MPIUnavailableError`, `mpi_available`, `find_mpiexec`,
# `run_program`, `naive_allreduce_bytes`, `ring_allreduce_bytes`, `Communicator`,
# `AllreduceGrads`, `DistributedDataLoader`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# The new module `distributed` imports nothing from MPI when it is loaded. Its first name is the
# error raised when MPI is missing: a `FixableError`, so the learner sees what to install, and an
# `ImportError`, which is what it is.

# %%
#| export dezero_like/distributed.py
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

from dezero_like._fixable import FixableError


class MPIUnavailableError(FixableError, ImportError):
    """mpi4py (or an MPI library under it) is missing; the message says what to install."""


# %% [markdown]
# `mpi_available` answers without raising, by calling `_mpi` and catching that error. `_mpi` is
# the one place that imports `mpi4py`, so the error message is written once.

# %%
#| export dezero_like/distributed.py
def mpi_available():
    """True when mpi4py and an MPI library can be loaded."""
    try:
        _mpi()
    except MPIUnavailableError:
        return False
    return True


# %%
#| export dezero_like/distributed.py
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


# %% [markdown]
# `find_mpiexec` looks first beside the running Python, where the MPI wheel installs `mpiexec`,
# then on the `PATH`.

# %%
#| export dezero_like/distributed.py
import os
import shutil
import sys


def find_mpiexec():
    """The ``mpiexec`` of this Python's environment (MPICH's wheel puts it beside python)."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


# %% [markdown]
# `run_program` starts `n` processes on a program written to a temporary file, so a notebook can
# use it. It limits each process to one BLAS thread, passes the command as a list (no shell), and
# raises with both output streams when a process fails.

# %%
#| export dezero_like/distributed.py
import os
import subprocess
import sys
import tempfile


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


# %% [markdown]
# Two formulas, used by the step to compare costs: the bytes the busiest process sends when one
# process collects and sends back all gradients, which grows with `p`, and the bytes each process
# sends in a ring all-reduce, which stays below $2n$ for any `p`.

# %%
#| export dezero_like/distributed.py
def naive_allreduce_bytes(n_bytes, p):
    """Bytes the busiest process sends when everyone sends to rank 0, which sends the sum back.

    Rank 0 sends the sum to each of the ``p - 1`` others: ``(p - 1) * n`` bytes,
    growing with the number of processes (it receives as many again; like
    :func:`ring_allreduce_bytes`, this counts what is sent).
    """
    return (p - 1) * n_bytes


def ring_allreduce_bytes(n_bytes, p):
    """Bytes each process sends in a ring all-reduce: ``2 (p - 1) / p * n``.

    The array is cut into ``p`` chunks; ``p - 1`` rounds of reduce-scatter and
    ``p - 1`` rounds of all-gather each pass one chunk (``n / p`` bytes) to the
    next process, so the traffic per process stays below ``2 n`` for any ``p``.
    """
    return 2 * (p - 1) * n_bytes / p


# %% [markdown]
# `Communicator` wraps an mpi4py communicator. `allreduce_mean` packs all arrays of one dtype into
# one buffer, so a whole model's gradients cost one `Allreduce`; it sums, divides by the number of
# processes and cuts the result back into arrays of the original shapes and devices. The sum is
# taken element by element, so on its first call the processes also exchange the shapes and
# dtypes they pass (one small message, once): a process with a (3, 2) array where the others
# have (2, 3) would otherwise be added to them without an error.
# `bcast_params` copies rank 0's parameters to every process, in the sorted order of their keys,
# so that every process walks them in the same order.

# %%
#| export dezero_like/distributed.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable



def _arrays_to_reduce(arrays):
    """``arrays`` as a list of arrays; one array, or a number in it, is refused with the fix."""
    if hasattr(arrays, "shape") and hasattr(arrays, "dtype"):  # one array (or a Variable)
        raise TypeError(
            f"allreduce_mean takes a list of arrays, got one {type(arrays).__name__} of shape "
            f"{tuple(arrays.shape)}, whose rows would be averaged as separate arrays; write "
            "comm.allreduce_mean([a])[0]")
    arrays = list(arrays)
    for i, a in enumerate(arrays):
        if not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise TypeError(
                f"allreduce_mean takes arrays, got {type(a).__name__} {a!r} at position {i}; "
                "make it one first: np.asarray(value) (a loss: loss.data)")
    return arrays

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
        through host memory and come back as CuPy arrays. The mean of integer
        (or bool) arrays is a float64 array, as ``np.mean`` gives. On the first
        call the processes compare the shapes and dtypes they pass (one small
        message, once): the same sizes with other shapes would be added
        element by element without an error.
        """
        arrays = _arrays_to_reduce(arrays)
        if not self.__dict__.get("_layout_agreed"):
            self._agree_on_layout(arrays)
        out = [None] * len(arrays)
        groups = {}
        for i, a in enumerate(arrays):
            groups.setdefault(np.dtype(a.dtype), []).append(i)
        for dtype, idx in groups.items():
            host = [cuda.as_numpy(arrays[i]) for i in idx]
            send = np.concatenate([h.ravel() for h in host]) if host else np.empty(0, dtype)
            if send.dtype.kind == "b":
                send = send.astype(np.int64)  # MPI adds counts, not truth values
            recv = np.empty_like(send)
            try:
                self.comm.Allreduce(send, recv, op=self._MPI.SUM)
            except self._MPI.Exception as e:
                raise RuntimeError(
                    f"allreduce_mean: MPI's Allreduce failed on rank {self.rank} "
                    f"({str(e).splitlines()[0]}). This process sent {send.size} {dtype} values, "
                    f"from arrays of shapes {[h.shape for h in host]}; every process must pass "
                    "the same number of arrays with the same shapes and dtypes, in the same "
                    "order (the same model, and a gradient for the same parameters on every "
                    "process)") from None
            if recv.dtype.kind in "iu":
                recv = recv / self.size  # the mean of integers is not an integer
            else:
                recv /= self.size
            offset = 0
            for i, h in zip(idx, host):
                piece = recv[offset:offset + h.size].reshape(h.shape)
                offset += h.size
                xp = cuda.get_array_module(arrays[i])
                out[i] = piece.copy() if xp is np else cuda.as_cupy(piece)
        return out

    def _agree_on_layout(self, arrays):
        """Refuse, on every process alike, arrays whose shapes or dtypes differ between ranks."""
        layout = [(str(np.dtype(a.dtype)), tuple(a.shape)) for a in arrays]
        layouts = self.comm.allgather(layout)
        for r, other in enumerate(layouts):
            if other == layouts[0]:
                continue
            first = next((i for i, (a, b) in enumerate(zip(layouts[0], other)) if a != b), None)
            if first is None:
                where = f"rank 0 passed {len(layouts[0])} arrays, rank {r} passed {len(other)}"
            else:
                (dtype0, shape0), (dtype_r, shape_r) = layouts[0][first], other[first]
                where = (f"array {first} is {dtype0} {shape0} on rank 0 but {dtype_r} {shape_r} on "
                         f"rank {r}")
            raise ValueError(
                f"allreduce_mean: the processes passed different arrays ({where}); the mean is "
                "taken element by element, so every process must pass the same number of arrays "
                "with the same shapes and dtypes, in the same order: build the same model on every "
                "process (same layer sizes, same input size) and give every parameter a gradient "
                "on all of them")
        self._layout_agreed = True

    def allreduce_grads(self, params):
        """Replace each parameter's gradient by its mean over processes (None stays None)."""
        if callable(getattr(params, "params", None)):
            raise TypeError(
                f"allreduce_grads takes the parameters, got the {type(params).__name__} itself; "
                "write comm.allreduce_grads(model.params()) (bcast_params is the one that takes "
                "the model)")
        params = [p for p in params if p.grad is not None]
        means = self.allreduce_mean([p.grad.data for p in params])
        for p, g in zip(params, means):
            p.grad = Variable(g, requires_grad=False)

    def bcast_params(self, model, root=0):
        """Give every process the parameters of process ``root`` (call once, before training)."""
        if not callable(getattr(model, "_flatten_params", None)):
            raise TypeError(
                f"bcast_params takes the model (a Layer), got {type(model).__name__}; write "
                "comm.bcast_params(model): the model names its parameters, and every process "
                "sends and receives them in the sorted order of those names")
        for key, p in sorted(model._flatten_params().items()):
            if p.data is None:
                raise ValueError(
                    f"bcast_params: {key} is not initialised yet (a layer without in_size makes "
                    "its weights on the first call); run one forward pass on every process first"
                )
            host = np.ascontiguousarray(cuda.as_numpy(p.data))
            self.comm.Bcast(host, root=root)
            # an assignment, new values: it ticks step 37's clock (a graph built before this
            # refuses to backward with them)
            p.data = host if isinstance(p.data, np.ndarray) else cuda.as_cupy(host)

    def bcast(self, obj, root=0):
        """A Python object from ``root`` to every process (small things: settings, seeds)."""
        return self.comm.bcast(obj, root=root)

    def barrier(self):
        self.comm.Barrier()


# %% [markdown]
# `AllreduceGrads` is an optimizer hook, like `WeightDecay`: it replaces every gradient by its mean
# over the processes before the update. Every process then applies the same update to the same
# weights, and the copies stay equal.

# %%
#| export dezero_like/distributed.py
class AllreduceGrads:
    """Optimizer hook: average the gradients over processes before the update.

    ``optimizer.add_hook(AllreduceGrads(comm))``; add it before hooks that read
    gradients (WeightDecay, ClipGrad), so they see the averaged ones.
    """

    def __init__(self, comm):
        if not callable(getattr(comm, "allreduce_grads", None)):
            raise TypeError(
                f"AllreduceGrads needs a dezero_like Communicator, got {type(comm).__name__}; "
                "write AllreduceGrads(Communicator()) (an mpi4py communicator goes inside: "
                "Communicator(MPI.COMM_WORLD))")
        self.comm = comm

    def __call__(self, params):
        self.comm.allreduce_grads(params)


# %% [markdown]
# `DistributedDataLoader` overrides only `_batch_index` (and sets `max_iter`). Every process
# draws the same order (same `seed`), takes the same global batch, and keeps its own slice of
# `batch_size / size` examples; `max_iter` counts whole batches only, so every slice has the same
# size and the mean of the processes' gradients is the gradient of the whole batch.

# %%
#| export dezero_like/distributed.py
from dezero_like.dataloaders import DataLoader


class DistributedDataLoader(DataLoader):
    """Each process gets its own slice of every batch of ``batch_size`` examples.

    All processes draw the same order (same ``seed``), cut it into batches of
    ``batch_size`` (the *global* batch) and take the ``rank``-th of ``size``
    equal slices. Only whole batches are used, so every slice has
    ``batch_size / size`` examples and the averaged gradient equals the
    whole batch's exactly; ``batch_size`` must be a multiple of ``size``. It is a training
    loader, so it shuffles unless ``shuffle=False`` (``DataLoader``'s default follows
    ``dataset.train``).
    """

    def __init__(self, dataset, batch_size, comm, shuffle=True, seed=0, gpu=False):
        if not (isinstance(getattr(comm, "rank", None), int)
                and isinstance(getattr(comm, "size", None), int)):
            raise TypeError(
                f"DistributedDataLoader needs the communicator, got {comm!r}; write "
                "DistributedDataLoader(dataset, batch_size, Communicator()). Training in one "
                "process without MPI? Use DataLoader(dataset, batch_size, shuffle=True)")
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

    def _batch_index(self, i=None, index=None):
        batch = super()._batch_index(i, index)  # the same batch in every process
        r, n = self.comm.rank, self.local_size
        return batch[r * n:(r + 1) * n]


# %%
import copy

import matplotlib.pyplot as plt
import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import distributed as D
from dezero_like.models import Sequential
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(72)  # every file this step writes goes here

# %% [markdown]
# ## Two workers, one batch
#
# A small MLP on a batch of 32 random examples (float64, so that rounding
# does not hide anything). First the gradient of the whole batch; then two
# "workers", each a copy of the model, each with half the batch.

# %%
rng = np.random.default_rng(0)
x = rng.normal(size=(32, 5))
t = rng.integers(0, 3, size=32)
np.random.seed(0)
model = Sequential(L.Linear(8, dtype=np.float64), F.sigmoid, L.Linear(3, dtype=np.float64))


def gradients(model, x, t):
    """{parameter name: gradient} of the mean cross-entropy of (x, t)."""
    model.cleargrads()
    F.softmax_cross_entropy(model(x), t).backward()
    return {k: p.grad.data.copy() for k, p in model._flatten_params().items()}


whole = gradients(model, x, t)
workers = [copy.deepcopy(model) for _ in range(2)]
halves = [gradients(w, x[k * 16:(k + 1) * 16], t[k * 16:(k + 1) * 16])
          for k, w in enumerate(workers)]
averaged = {k: (halves[0][k] + halves[1][k]) / 2 for k in whole}
for k in whole:
    print(f"{k:5}: largest difference, whole batch vs average of halves: "
          f"{np.abs(whole[k] - averaged[k]).max():.1e}")

# %% [markdown]
# The differences are at the level of float64 rounding (below $10^{-16}$ here):
# the two halves' averaged gradient is the whole batch's gradient. The
# equal-size condition matters, though. With slices of 24 and 8 examples, a
# plain average gives each of the 8 examples of the small slice twice the
# weight it should have (1/16 instead of 1/32), three times that of an example
# of the larger slice:

# %%
uneven = [gradients(workers[0], x[:24], t[:24]), gradients(workers[1], x[24:], t[24:])]
plain = {k: (uneven[0][k] + uneven[1][k]) / 2 for k in whole}
weighted = {k: (24 * uneven[0][k] + 8 * uneven[1][k]) / 32 for k in whole}
print("plain average of 24 + 8:   ", f"{np.abs(plain['l0/W'] - whole['l0/W']).max():.1e}")
print("weighted by slice size:    ", f"{np.abs(weighted['l0/W'] - whole['l0/W']).max():.1e}")

# %% [markdown]
# That is why `DistributedDataLoader` above only hands out whole batches, cut
# into equal slices.
#
# ## All-reduce
#
# The averaging needs an operation that takes one array from every worker and
# leaves the sum (or the mean) of all of them **on every worker**. MPI calls
# it `Allreduce`. How it moves the bytes decides what it costs.
#
# **Naive**: every worker sends its array to worker 0, which adds them up and
# sends the sum back to each. Worker 0's network link carries $(p-1)N$ bytes in
# and $(p-1)N$ bytes out for arrays of $N$ bytes: $2(p-1)N$, growing with $p$.
# Counting only what is sent, as below for both schemes, worker 0 sends $(p-1)N$.
#
# **Ring**: the workers sit in a ring, and each array is cut into $p$ chunks.
#
# 1. *Reduce-scatter*, $p-1$ rounds: in each round every worker sends one
#    chunk to its right-hand neighbour, which adds it to its own copy of that
#    chunk. After $p-1$ rounds, worker $k$ holds the complete sum of chunk
#    $k+1$ (mod $p$).
# 2. *All-gather*, $p-1$ rounds: the finished chunks travel round the ring
#    once more, copied instead of added, until every worker has all of them.
#
# Each round, each worker sends $N/p$ bytes, so each sends
# $2(p-1)N/p$ bytes in all: less than $2N$ however many workers there are, and
# every link is busy at once. (Patarasuk and Yuan, "Bandwidth optimal
# all-reduce algorithms for clusters of workstations", 2009, show that no
# algorithm can send less.) Here is the ring, simulated with NumPy arrays as
# the workers' memories, counting what each worker sends:

# %%
def ring_allreduce(arrays, rounds=None):
    """Sum ``arrays`` (one per worker) with the ring algorithm; return (results, bytes sent).

    ``rounds``, a list, receives after each round the chunks every worker holds and the
    (worker, chunk) pairs that were just written (for the picture below)."""
    p = len(arrays)
    chunks = [np.array_split(a.astype(float), p) for a in arrays]
    sent = [0] * p
    for step in range(p - 1):  # reduce-scatter
        outgoing = [(k, (k - step) % p, chunks[k][(k - step) % p].copy()) for k in range(p)]
        for k, c, data in outgoing:
            chunks[(k + 1) % p][c] += data
            sent[k] += data.nbytes
        if rounds is not None:
            rounds.append(([[c.copy() for c in w] for w in chunks],
                           [((k + 1) % p, c) for k, c, _ in outgoing]))
    for step in range(p - 1):  # all-gather: worker k owns the sum of chunk k + 1
        outgoing = [(k, (k + 1 - step) % p, chunks[k][(k + 1 - step) % p].copy())
                    for k in range(p)]
        for k, c, data in outgoing:
            chunks[(k + 1) % p][c] = data
            sent[k] += data.nbytes
        if rounds is not None:
            rounds.append(([[c.copy() for c in w] for w in chunks],
                           [((k + 1) % p, c) for k, c, _ in outgoing]))
    return [np.concatenate(c) for c in chunks], sent


p = 4
arrays = [np.random.default_rng(k).normal(size=1000) for k in range(p)]
results, sent = ring_allreduce(arrays)
total = np.sum(arrays, axis=0)
print("every worker holds the sum:", all(np.allclose(r, total) for r in results))
print("bytes sent per worker:     ", sent)
print("cost model 2(p-1)/p * N:   ", D.ring_allreduce_bytes(arrays[0].nbytes, p))
print("naive, busiest worker:     ", D.naive_allreduce_bytes(arrays[0].nbytes, p))

# %% [markdown]
# The rounds are easier to follow as a picture. Give worker $k$ the number
# $2^k$ in every chunk: a sum of such numbers says, bit by bit, whose data it
# holds, so counting its bits counts the workers already added into that copy
# of the chunk. Each panel below is the ring after one round: a row per worker,
# a column per chunk, the count in each cell (4 is the complete sum), and a
# frame around each cell that was just written. In the three reduce-scatter
# rounds the counts climb along a diagonal until each worker holds one complete
# chunk; in the three all-gather rounds the complete chunks are copied round.

# %%
rounds = []
ring_allreduce([np.full(p, 2.0**k) for k in range(p)], rounds)
fig, axes = plt.subplots(1, len(rounds), figsize=(2.1 * len(rounds), 2.6))
for r, (ax, (held, written)) in enumerate(zip(axes, rounds)):
    counts = np.array([[bin(int(chunk[0])).count("1") for chunk in w] for w in held])
    ax.imshow(counts, cmap="Blues", vmin=0, vmax=p)
    for (k, c), n in np.ndenumerate(counts):
        ax.text(c, k, n, ha="center", va="center", color="white" if 2 * n > p else "black")
    for k, c in written:
        ax.add_patch(plt.Rectangle((c - 0.5, k - 0.5), 1, 1, fill=False, lw=2.5, ec="tab:red"))
    phase = "reduce-scatter" if r < p - 1 else "all-gather"
    ax.set_title(f"round {r + 1}\n{phase}", fontsize=9)
    ax.set_xticks(range(p), [f"c{c}" for c in range(p)], fontsize=8)
    ax.set_yticks(range(p), [f"w{k}" for k in range(p)] if r == 0 else [], fontsize=8)
fig.suptitle("ring all-reduce, 4 workers (rows) x 4 chunks (columns): how many workers' "
             "data each copy sums", fontsize=10)
fig.tight_layout()
save_figure(fig, out_dir / "ring_rounds.png")
plt.show()
assert (counts == p).all(), "after the last round every worker should hold every complete chunk"

# %% [markdown]
# The count matches the cost model exactly. For the MNIST MLP of step 54
# (784-1000-10: 795,010 float32 parameters, 3.2 MB of gradients per step),
# this is how the traffic of the busiest worker grows with the number of
# workers:

# %%
n_bytes = 795_010 * 4
ps = np.arange(2, 33)
plt.figure(figsize=(6, 3.5))
plt.plot(ps, [D.naive_allreduce_bytes(n_bytes, p) / 1e6 for p in ps], label="naive (via worker 0)")
plt.plot(ps, [D.ring_allreduce_bytes(n_bytes, p) / 1e6 for p in ps], label="ring")
plt.axhline(2 * n_bytes / 1e6, color="gray", linestyle=":", label="2N, the ring's limit")
plt.xlabel("workers p")
plt.ylabel("MB sent by the busiest worker, per step")
plt.title("All-reduce of 3.2 MB of gradients")
plt.legend()
plt.tight_layout()
save_figure(plt.gcf(), out_dir / "allreduce_bytes.png")
plt.show()

# %% [markdown]
# Bytes are half of the story. Each message also pays a fixed **latency**
# (microseconds on one machine, more across a network), and the ring takes
# $2(p-1)$ rounds, so for small arrays and many workers other shapes (trees)
# win; real libraries (MPI implementations, NCCL) pick an algorithm by size.
# Packing all gradients into one buffer, as `Communicator.allreduce_mean` above does, pays
# the latency once per step instead of once per parameter.
# `benchmarks/allreduce.py` measures both on this machine.
#
# ## Exercise
# 1. Write `naive_allreduce(arrays)` the way the naive scheme works: worker 0
#    receives every other array and adds it, then sends the sum back to each.
#    Return the results (one per worker) and the bytes *worker 0* sent; the
#    self-check compares them with the cost model.
# 2. **Implement then test: the gradient hook's work.** Write
#    `allreduce_grads(comm, params)`, what `Communicator.allreduce_grads` does:
#    average across the processes the gradient of every parameter that has
#    one, with a single call of `comm.allreduce_mean` for all of them (one
#    call: one latency; what does it take and give back?), and hand each
#    parameter its mean as a new constant Variable (never in place: step 15;
#    a constant: step 63). Parameters without a gradient are left alone. The
#    self-check uses a stand-in communicator (no MPI needed) and compares with
#    the package's method.

# %%
#| exercise
def naive_allreduce(arrays):
    raise NotImplementedError(
        "Exercise (step 72): the result of each worker, and the bytes worker 0 sent"
    )

# %%
#| solution
def naive_allreduce(arrays):
    total = arrays[0].astype(float)
    for a in arrays[1:]:  # received by worker 0
        total = total + a
    results = [total.copy() for _ in arrays]
    sent = total.nbytes * (len(arrays) - 1)  # the sum, sent back to each other worker
    return results, sent

# %%
#| check
arrays_before = [a.copy() for a in arrays]
results, sent = naive_allreduce(arrays)
assert all(np.array_equal(a, b) for a, b in zip(arrays, arrays_before)), (
    "the workers' own arrays changed: add them up into a new array, not in place into "
    "the first worker's"
)
assert len(results) == len(arrays), f"one result per worker: expected {len(arrays)}"
assert not any(np.shares_memory(r, q) for i, r in enumerate(results) for q in results[i + 1:]), (
    "two workers share one result array: each worker ends with its own copy of the sum"
)
assert all(np.allclose(r, total) for r in results), "every worker should end with the sum"
expected = D.naive_allreduce_bytes(arrays[0].nbytes, len(arrays))
assert sent == expected, (
    f"worker 0 sent {sent} bytes, the cost model says {expected}: it sends the sum to each of "
    "the p - 1 other workers (what it receives is not counted)"
)
print(f"self-check passed: worker 0 sends {sent} bytes, (p - 1)N, against the ring's < 2N")

# %%
#| exercise
def allreduce_grads(comm, params):
    raise NotImplementedError(
        "Exercise (step 72): one allreduce_mean for all the gradients; each mean back to its "
        "parameter"
    )

# %%
#| solution
from dezero_like.core import Variable


def allreduce_grads(comm, params):
    params = [p for p in params if p.grad is not None]
    means = comm.allreduce_mean([p.grad.data for p in params])
    for p, g in zip(params, means):
        p.grad = Variable(g, requires_grad=False)

# %%
#| check
class StandInComm:
    """Two processes, seen from one: the other one's gradients are ours shifted by 1."""

    size = 2

    def __init__(self):
        self.calls = 0

    def allreduce_mean(self, arrays):
        self.calls += 1
        return [a + 0.5 for a in arrays]


def fresh_params():
    net = Sequential(L.Linear(4, in_size=3, dtype=np.float64), F.sigmoid,
                     L.Linear(2, in_size=4, dtype=np.float64))
    net.cleargrads()
    F.sum(net(np.random.default_rng(0).normal(size=(5, 3)))).backward()
    net.l2.b.grad = None  # one parameter without a gradient
    return list(net.params())


np.random.seed(0)
mine = fresh_params()
np.random.seed(0)
ref = fresh_params()
comm_mine, comm_ref = StandInComm(), StandInComm()
grad_arrays = [None if p.grad is None else p.grad.data for p in mine]
old = [None if a is None else a.copy() for a in grad_arrays]
allreduce_grads(comm_mine, mine)
D.Communicator.allreduce_grads(comm_ref, ref)
assert comm_mine.calls == 1, (
    f"allreduce_mean was called {comm_mine.calls} times: pass all gradients in one list"
)
for p, q, g, a in zip(mine, ref, old, grad_arrays):
    if q.grad is None:
        assert p.grad is None, "a parameter without a gradient must keep grad = None"
        continue
    assert np.array_equal(a, g), (
        "the old gradient array was written into: give the parameter a new Variable, never "
        "change a gradient in place (it may be shared)"
    )
    assert np.allclose(p.grad.data, q.grad.data), "each parameter should get its own mean back"
    assert not p.grad.requires_grad, (
        "the mean should be a constant Variable (requires_grad=False, step 63), as the package's "
        "method gives: it is a number the processes agreed on, not the result of a graph"
    )
    assert np.allclose(g + 0.5, p.grad.data) and not np.shares_memory(g, p.grad.data), (
        "give each parameter a new Variable holding the mean"
    )
print("self-check passed: allreduce_grads averages the gradients as the Communicator does")

# %% [markdown]
# ## Open experiment: what if the workers skip the all-reduce?
#
# *What happens if two workers train on their own halves of every batch and
# never average their gradients? And if they average, but forgot to start from
# the same weights (no `bcast_params`)?* Guess before running: do the copies
# drift apart, and does the distance between them grow, shrink or stay? The
# cell trains both variants of two workers with plain SGD on the batch above
# and prints the largest difference between the two copies' weights and the
# whole-batch loss of worker 0.

# %%
def train_two_workers(average, same_start, steps=200, lr=1.0):
    np.random.seed(0)
    first = copy.deepcopy(model)
    if not same_start:  # the second worker made its own random weights
        np.random.seed(1)
        second = Sequential(L.Linear(8, dtype=np.float64), F.sigmoid,
                            L.Linear(3, dtype=np.float64))
        second(x)
    else:
        second = copy.deepcopy(model)
    pair = [first, second]
    history = []
    for step in range(steps + 1):
        grads = [gradients(w, x[k * 16:(k + 1) * 16], t[k * 16:(k + 1) * 16])
                 for k, w in enumerate(pair)]
        if average:
            grads = [{k: (grads[0][k] + grads[1][k]) / 2 for k in grads[0]}] * 2
        if step % 50 == 0:
            a, b = first._flatten_params(), second._flatten_params()
            gap = max(np.abs(a[k].data - b[k].data).max() for k in a)
            loss = float(F.softmax_cross_entropy(first(x), t).data)
            history.append((step, gap, loss))
        for w, g in zip(pair, grads):
            for k, p in w._flatten_params().items():
                p.data -= lr * g[k]
    return history


variants = {"all-reduce, same start": (True, True),
            "no all-reduce": (False, True),
            "all-reduce, different starts": (True, False)}
print(f"{'variant':<30}{'step':>6}{'largest weight gap':>20}{'loss of worker 0':>18}")
for name, (average, same_start) in variants.items():
    for step, gap, loss in train_two_workers(average, same_start):
        print(f"{name:<30}{step:>6}{gap:>20.2e}{loss:>18.4f}")

# %% [markdown]
# With the all-reduce the two copies stay identical (gap 0) and the loss falls
# as for one worker with the whole batch. Without it each worker fits its own
# 16 examples: the gap keeps growing, and worker 0's loss on the whole batch
# stalls and even rises, since it never learns from the other half. With
# different starting weights both copies receive the *same* averaged update
# at every step, so their difference never changes at all: the gap printed
# at step 0 is still there at step 200, and the two workers compute their
# gradients on two different models. That is why a data-parallel run
# broadcasts the weights once before training (`bcast_params`). Try more
# workers, or a larger learning rate.
