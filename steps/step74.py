# %% [markdown]
# # Step 74: Training the MNIST MLP on two processes
#
# Everything is in place: step 72 showed that averaged half-batch gradients
# are the whole batch's gradient and wrote the communicator, the
# gradient-averaging hook and the sharded loader, and step 73 ran them on MPI
# processes. Now a 784-100-10 MLP like step 53's trains with them on MNIST (here
# with sigmoid, float64 weights, learning rate 1.0 and a 6,000-image subset, so
# that the two runs can be compared number for number), the way a real
# data-parallel job does:
#
#     mpiexec -n 2 python train.py
#
# Every process runs the same training script. The distributed part adds four
# lines to an ordinary training loop: make a `Communicator`, broadcast the
# initial weights, use a `DistributedDataLoader`, add the `AllreduceGrads` hook.
# Only rank 0 prints.
#
# This step needs MNIST (downloaded once, as in step 53) and mpi4py with an
# MPI library (`pip install -e ".[mpi]"`).

# %%
import os
import re
import tempfile
import textwrap

import numpy as np

import dezero_like as dz
from dezero_like import distributed as D

# %% [markdown]
# ## The training script
#
# One epoch over the first 6,000 training images (offline, without the training
# files, over test images instead: the output says which), a global batch of 100
# (50 per process with two), float64 weights so that the comparison below is
# not blurred by float32 rounding. Rank 0 writes the final weights to the file
# named on the command line, and the loss of every step beside them, for the
# plot below (each process keeps the losses of its slices; one all-reduce after
# the timed loop averages them into the whole batches' losses).

# %%
TRAIN = textwrap.dedent("""
    import sys, time
    import numpy as np
    import dezero_like as dz
    import dezero_like.functions as F
    import dezero_like.layers as L
    from dezero_like import distributed as D
    from dezero_like.models import Sequential
    from dezero_like.optimizers import SGD

    comm = D.Communicator()
    train_set, test_set = dz.datasets.mnist_train_test(progress=False)
    train_set.data, train_set.label = train_set.data[:6000], train_set.label[:6000]

    np.random.seed(comm.rank)        # each process draws different weights...
    model = Sequential(L.Linear(100, dtype=np.float64), F.sigmoid, L.Linear(10, dtype=np.float64))
    model(np.zeros((1, 784)))
    comm.bcast_params(model)         # ...and rank 0's win
    loader = D.DistributedDataLoader(train_set, 100, comm, seed=0)
    optimizer = SGD(lr=1.0).setup(model).add_hook(D.AllreduceGrads(comm))

    start, losses = time.perf_counter(), []
    for i, (x, t) in enumerate(loader):
        loss = F.softmax_cross_entropy(model(x.astype(np.float64)), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))  # this process's slice: averaged once, after timing
        if i % 20 == 0 or i == len(loader) - 1:
            (mean_loss,) = comm.allreduce_mean([loss.data])
            if comm.rank == 0:
                print(f"step {i + 1:3d}/{len(loader)}  loss {float(mean_loss):.4f}", flush=True)
    seconds = time.perf_counter() - start
    (losses,) = comm.allreduce_mean([np.array(losses)])  # every step's whole-batch loss
    if comm.rank == 0:
        x = np.stack([test_set[i][0] for i in range(len(test_set))]).astype(np.float64)
        t = np.array([test_set[i][1] for i in range(len(test_set))])
        with dz.no_grad():
            acc = float(F.accuracy(model(x), t).data)
        print(f"{comm.size} process(es): {len(loader)} steps of {loader.local_size} examples "
              f"each, {seconds:.2f} s; test accuracy {acc:.4f}", flush=True)
        np.savez(sys.argv[1], **{k: p.data for k, p in model._flatten_params().items()})
        np.save(sys.argv[1] + ".losses.npy", losses)
""")


def train(n, folder):
    """Run the training script on ``n`` processes; return (its output, the final weights,
    the loss of every step).

    ``D.run_program`` (step 72) starts it with mpiexec, one BLAS thread per process.
    """
    weights = os.path.join(folder, f"w{n}.npz")
    out = D.run_program(TRAIN, n, args=[weights])
    return out, dict(np.load(weights)), np.load(weights + ".losses.npy")


# %% [markdown]
# First the data, in this process: it is downloaded (or found in the cache)
# once here, so the worker processes only read the cache. Offline without the
# files, this stops with a paragraph saying how to get them.

# %%
train_set, test_set = dz.datasets.mnist_train_test()
print(train_set.summary)

# %% [markdown]
# ## One process, then two
#
# The same script, started with `-n 1` and then `-n 2`:

# %%
with tempfile.TemporaryDirectory() as folder:
    out1, w1, losses1 = train(1, folder)
    print(out1)
    out2, w2, losses2 = train(2, folder)
    print(out2)

# %% [markdown]
# With two processes each step used 50 examples per process instead of 100,
# yet the loss curve and the test accuracy are the same. They should be:
# both runs took the same steps. The weights after the epoch agree to
# float64 rounding:

# %%
for key in w1:
    print(f"{key:5}: largest difference, 1 process vs 2: {np.abs(w1[key] - w2[key]).max():.1e}")

# %% [markdown]
# Every step's loss, both runs on one plot: the two curves lie on top of each
# other (the largest difference is printed under it).

# %%
from dezero_like.plot import output_dir, plot_curves, save_figure  # noqa: E402

fig = plot_curves({"training loss": {"1 process": losses1, "2 processes (dashed)": losses2}},
                  xlabel="step", title="One process against two: the same steps")
fig.axes[0].lines[1].set_linestyle("--")
fig.axes[0].legend()
save_figure(fig, output_dir(74) / "losses.png")
print(f"largest difference between the two loss curves: {np.abs(losses1 - losses2).max():.1e}")

# %% [markdown]
# Were two processes also *faster*? The scripts timed their training loops:

# %%
t1, t2 = (float(re.search(r"each, ([\d.]+) s", out).group(1)) for out in (out1, out2))
print(f"training loop: {t1:.2f} s on 1 process, {t2:.2f} s on 2: speed-up {t1 / t2:.2f}x")

# %% [markdown]
# That depends on the machine. Each process needs a core of its own, and
# each must use **one** BLAS thread (`D.run_program` sets `OPENBLAS_NUM_THREADS=1`):
# otherwise every process starts one thread per core and the processes'
# threads fight over the same cores, which can make two processes many times
# *slower* than one. The all-reduce after every step (this MLP has 79,510
# parameters: 0.64 MB of float64 gradients) costs time too, and with slices of
# 50 examples the matrix products are small. Data parallelism pays when each
# worker has a lot of arithmetic per step (big models, big slices) and fast
# links between the workers. `benchmarks/allreduce.py` measures the epoch time
# on 1 and 2 processes and the all-reduce time against the bytes sent.
#
# **In Colab** the same cells run as they are: `pip install mpi4py mpich`
# brings MPI, and MPICH's `mpiexec` runs as root. To start your own script
# from a cell, `!mpiexec -n 2 python train.py` works there too (Open MPI, if
# you use it instead, needs `--allow-run-as-root`).
#
# ## Exercise
# 1. With `p` processes and a global batch `B`, each step sends the gradients
#    once through the all-reduce. Write `allreduce_mb_per_epoch(n_params,
#    n_examples, batch, p)`: the megabytes each process sends per epoch with
#    the ring all-reduce, for float64 gradients (use `D.ring_allreduce_bytes`).
#    Check: with two processes, this step's run sent 0.64 MB per step for 60
#    steps.
# 2. **Implement then test: the whole scheme in one process.** Write
#    `data_parallel_grads(model, x, t, p)`, what `p` processes compute
#    together in one step: process `r` takes a copy of the model
#    (`copy.deepcopy`: it copies any gradient the model holds too), the `r`-th
#    of `p` equal slices of the batch (as `DistributedDataLoader` cuts it), and
#    the gradient of its mean softmax cross entropy; the result is the mean
#    over processes of each gradient, as a dict `{name: array}` keyed like
#    `model._flatten_params()` (what `AllreduceGrads` leaves). The self-check
#    compares it with the whole batch's gradient for 1 to 4 processes.

# %%
#| exercise
def allreduce_mb_per_epoch(n_params, n_examples, batch, p):
    raise NotImplementedError(
        "Exercise (step 74): the megabytes one process sends in one epoch"
    )

# %%
#| solution
def allreduce_mb_per_epoch(n_params, n_examples, batch, p):
    steps = n_examples // batch
    return steps * D.ring_allreduce_bytes(n_params * 8, p) / 1e6

# %%
#| check
n_params = sum(a.size for a in w1.values())
assert n_params == 784 * 100 + 100 + 100 * 10 + 10
mb = allreduce_mb_per_epoch(n_params, 6000, 100, 2)
assert abs(mb - 60 * n_params * 8 / 1e6) < 1e-9, (
    f"expected 60 steps of {n_params * 8 / 1e6:.2f} MB = {60 * n_params * 8 / 1e6:.1f} MB, got "
    f"{mb}: count the steps of an epoch (whole batches), and the bytes of one float64 "
    "gradient of every parameter"
)
mb4 = allreduce_mb_per_epoch(n_params, 6000, 100, 4)
assert abs(mb4 - 60 * 1.5 * n_params * 8 / 1e6) < 1e-9, (
    "with 4 processes the ring sends 2 (p - 1) / p = 1.5 times the array per step, "
    f"{60 * 1.5 * n_params * 8 / 1e6:.1f} MB per epoch, got {mb4}: use D.ring_allreduce_bytes"
)
print(f"{mb:.1f} MB per process per epoch")
print("self-check passed: 60 steps of a ring all-reduce of 0.64 MB")

# %%
#| exercise
import copy

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.models import Sequential


def data_parallel_grads(model, x, t, p):
    raise NotImplementedError(
        "Exercise (step 74): p workers, each with its own model and slice; the mean of their "
        "gradients"
    )

# %%
#| solution
import copy

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.models import Sequential


def data_parallel_grads(model, x, t, p):
    n = len(x) // p
    grads = []
    for r in range(p):
        worker = copy.deepcopy(model)
        worker.cleargrads()
        F.softmax_cross_entropy(worker(x[r * n:(r + 1) * n]), t[r * n:(r + 1) * n]).backward()
        grads.append({k: q.grad.data for k, q in worker._flatten_params().items()})
    return {k: sum(g[k] for g in grads) / p for k in grads[0]}

# %%
#| check
rng = np.random.default_rng(0)
xb = rng.normal(size=(24, 6))
tb = rng.integers(0, 3, size=24)
np.random.seed(0)
net = Sequential(L.Linear(5, dtype=np.float64), F.sigmoid, L.Linear(3, dtype=np.float64))
net(xb)
net.cleargrads()
F.softmax_cross_entropy(net(xb), tb).backward()
whole = {k: q.grad.data.copy() for k, q in net._flatten_params().items()}
for p in (1, 2, 3, 4):
    got = data_parallel_grads(net, xb, tb, p)
    assert set(got) == set(whole), f"expected the keys {sorted(whole)}, got {sorted(got)}"
    kinds = sorted({type(g).__name__ for g in got.values()} - {"ndarray"})
    assert not kinds, (
        f"the gradients should be NumPy arrays, got {kinds}: take each gradient's .data"
    )
    held = {k: q.grad for k, q in net._flatten_params().items()}
    assert all(held[k] is not None and np.array_equal(held[k].data, whole[k]) for k in whole), (
        f"with {p} processes, data_parallel_grads changed the gradients the model holds: each "
        "process works on a copy of its own (copy.deepcopy(model)), and the model is left "
        "as it was"
    )
    worst = max(np.abs(got[k] - whole[k]).max() for k in whole)
    if p == 1:
        assert worst < 1e-12, (
            f"with 1 process the gradient differs from the whole batch's by {worst:.1e}: the "
            "copy starts with the gradient the model held (deepcopy copies .grad too), and a "
            "backward adds to it; clear the copy's gradients before its backward"
        )
    assert worst < 1e-12, (
        f"with {p} processes the averaged gradient differs from the whole batch's by {worst:.1e}: "
        "give every process an equal slice and average the gradients over processes"
    )
print("self-check passed: p equal slices, their gradients averaged, give the whole batch's")
