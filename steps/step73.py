# %% [markdown]
# # Step 73: A communicator on MPI
#
# Step 72 averaged gradients between two copies of a model inside one Python
# process. Real workers are separate **processes**, often on separate
# machines, and the standard way for such processes to talk is **MPI** (the
# Message Passing Interface). One command starts $p$ copies of the same
# program; each copy learns its **rank** ($0 \dots p-1$) and the **size** $p$,
# and they call collective operations (`Allreduce`, `Bcast`, ...) together:
#
#     mpiexec -n 2 python train.py
#
# From Python, MPI comes through **mpi4py**; an MPI library comes as a wheel
# too (MPICH's), so `pip install -e ".[mpi]"` (or `pip install mpi4py mpich`,
# in Colab as well) is the whole set-up. Chainer taught this with ChainerMN
# (Akiba et al., 2017); PyTorch's `DistributedDataParallel` (Li et al., 2020,
# "PyTorch Distributed") does the same job with the same idea.
#
# This step runs `dezero_like.distributed`, whose code step 72 wrote; three small pieces:
#
# * `Communicator`: the processes of the job, with `allreduce_mean` (the
#   averaging of step 72, for a list of arrays) and `bcast_params` (every
#   process starts from the same weights);
# * `AllreduceGrads`: an **optimizer hook** (step 47's mechanism) that averages
#   the gradients before each update;
# * `DistributedDataLoader`: a `DataLoader` (step 52) that gives each process
#   its own equal slice of every batch.

# %%
import inspect
import textwrap

import numpy as np

from dezero_like import distributed as D

# %% [markdown]
# ## The communicator
#
# Here is the code, as the package has it. `allreduce_mean` packs every
# array into one buffer per dtype, so a whole model's gradients cost **one**
# `Allreduce` (one latency, step 72) instead of one per parameter, and then
# divides the sum by the number of processes:

# %%
print(inspect.getsource(D.Communicator.allreduce_mean))
print(inspect.getsource(D.Communicator.allreduce_grads))
print(inspect.getsource(D.Communicator.bcast_params))

# %% [markdown]
# The optimizer hook only calls `allreduce_grads`; the loader overrides the one
# method of `DataLoader` that picks a batch's examples: every process draws
# the same order (same seed), cuts whole batches, and keeps its slice:

# %%
print(inspect.getsource(D.AllreduceGrads))
print(inspect.getsource(D.DistributedDataLoader._batch_index))

# %% [markdown]
# ## One process is a world too
#
# Run as a plain script (or in a notebook), this program is an MPI job of one
# process: rank 0 of size 1. Everything works, and does nothing: the mean of
# one array is the array. If mpi4py is missing, the next line stops with one
# paragraph saying what to install.

# %%
comm = D.Communicator()
print(comm)
print(comm.allreduce_mean([np.array([1.0, 2.0])]))

# %% [markdown]
# ## Two processes
#
# To see two processes we need `mpiexec`. A notebook cannot become two
# processes itself, so the package's `run_program` writes a small program to
# a temporary folder and starts it with `mpiexec -n 2` through `subprocess`
# (this works the same in a script, in Jupyter and in Colab; MPICH's
# `mpiexec` also runs as root, which Colab is). Its code is printed below the
# worker. Each process prints what it holds before and after:

# %%
WORKER = textwrap.dedent("""
    import numpy as np
    from dezero_like import distributed as D
    from dezero_like.models import MLP

    comm = D.Communicator()
    r = comm.rank
    mean = comm.allreduce_mean([np.array([10.0 * r, 1.0 + r])])[0]
    np.random.seed(r)                       # different random weights on each process...
    model = MLP((3, 2))
    model(np.zeros((1, 4), np.float32))
    before = float(model.l0.W.data[0, 0])
    comm.bcast_params(model)                # ...until rank 0's are broadcast
    after = float(model.l0.W.data[0, 0])
    print(f"rank {r} of {comm.size}: mean of [10r, 1+r] = {mean}, "
          f"W[0,0] {before:+.4f} -> {after:+.4f}", flush=True)
""")


print(inspect.getsource(D.run_program))
run_mpi = D.run_program  # the name this step's text uses

report = run_mpi(WORKER)  # what the two processes printed
print(report)

# %% [markdown]
# Both processes received the same mean, 5.0 and 1.5, and after
# `bcast_params` both hold rank 0's weights (the lines can come in either
# order: the processes run at the same time). The exactness check of the
# whole scheme, two processes against one with the whole batch, is in the
# tests (`tests/test_distributed.py`) and step 74.
#
# The allreduce as a picture, drawn from the lines the two processes printed. On the
# left, each process holds its own "gradient" $[10r, 1 + r]$: the bars of rank 0
# and rank 1 differ. On the right, after `allreduce_mean`, both ranks hold the same
# two numbers, the mean of the left-hand bars.

# %%
import re

import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

held = {r: np.array([10.0 * r, 1.0 + r]) for r in range(2)}  # as the worker makes them
reported = re.findall(r"rank (\d) of 2: mean of \[10r, 1\+r\] = \[([^\]]*)\]", report)
means = {int(r): np.array(text.split(), dtype=float) for r, text in reported}

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True, layout="constrained")
for ax, arrays, title in ((axes[0], held, "before: each process's own gradient"),
                          (axes[1], means, "after allreduce_mean: the same mean")):
    for r in sorted(arrays):
        bars = ax.bar(np.arange(2) + 0.2 * (2 * r - 1), arrays[r], width=0.4,
                      label=f"rank {r}", color=["#69c", "#e96"][r])
        ax.bar_label(bars, fmt="%g")
    ax.set_xticks([0, 1], ["element 0", "element 1"])
    ax.set(title=title, xlabel="element of the gradient array")
    ax.legend()
axes[0].set_ylabel("value on that process")
figure_path = save_figure(fig, output_dir(73) / "allreduce_mean.png")
plt.show()

# %% [markdown]
# **On a GPU.** `allreduce_mean` copies CuPy arrays to host memory, reduces
# there and copies back. With a CUDA-aware MPI the device buffers could be
# passed directly, and **NCCL** (NVIDIA's collective library, what PyTorch
# uses on GPUs) goes further: it runs ring (or tree) all-reduces over NVLink (or PCIe)
# between the GPUs of a machine, without the copies to and from NumPy arrays that
# `allreduce_mean` makes.
#
# ## Exercise
# **Implement then test: each process's slice.** Write
# `my_slice(batch, rank, size)`: the part of a global batch (an array of
# example indices) that process `rank` of `size` trains on, as
# `DistributedDataLoader` cuts it: equal, contiguous slices in rank order. The
# self-check compares it with the loader's own slices for every `rank` and
# `size`, using a stand-in for the communicator (no MPI needed).

# %%
#| exercise
def my_slice(batch, rank, size):
    raise NotImplementedError(
        "Exercise (step 73): the equal, contiguous share of batch that process rank trains on"
    )

# %%
#| solution
def my_slice(batch, rank, size):
    n = len(batch) // size
    return batch[rank * n:(rank + 1) * n]

# %%
#| check
class _World:
    """Stands for a communicator of ``size`` processes seen from ``rank``."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size


from dezero_like.datasets import Spiral  # noqa: E402

data = Spiral()
for size in (1, 2, 3, 4):
    slices = []
    for rank in range(size):
        loader = D.DistributedDataLoader(data, 12, _World(rank, size), seed=1)
        order = loader.index.copy()
        first = loader._batch_index()
        assert np.array_equal(my_slice(order[:12], rank, size), first), (
            f"rank {rank} of {size}: expected {first}, got {my_slice(order[:12], rank, size)}; "
            "the batch is cut into size equal, contiguous slices, the first one for rank 0"
        )
        slices.append(first)
    assert np.array_equal(np.concatenate(slices), order[:12]), "the slices should cover the batch"
print("self-check passed: my_slice cuts the batch as DistributedDataLoader does")
