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

# %%
import copy

import matplotlib.pyplot as plt
import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import distributed as D
from dezero_like.models import Sequential

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
# The differences are at the level of float64 rounding ($10^{-16}$ or so):
# the two halves' averaged gradient is the whole batch's gradient. The
# equal-size condition matters, though. With slices of 24 and 8 examples, a
# plain average gives the 8 examples of the small slice three times the
# weight they should have:

# %%
uneven = [gradients(workers[0], x[:24], t[:24]), gradients(workers[1], x[24:], t[24:])]
plain = {k: (uneven[0][k] + uneven[1][k]) / 2 for k in whole}
weighted = {k: (24 * uneven[0][k] + 8 * uneven[1][k]) / 32 for k in whole}
print("plain average of 24 + 8:   ", f"{np.abs(plain['l0/W'] - whole['l0/W']).max():.1e}")
print("weighted by slice size:    ", f"{np.abs(weighted['l0/W'] - whole['l0/W']).max():.1e}")

# %% [markdown]
# That is why the data loader of step 73 only hands out whole batches, cut
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
def ring_allreduce(arrays):
    """Sum ``arrays`` (one per worker) with the ring algorithm; return (results, bytes sent)."""
    p = len(arrays)
    chunks = [np.array_split(a.astype(float), p) for a in arrays]
    sent = [0] * p
    for step in range(p - 1):  # reduce-scatter
        outgoing = [(k, (k - step) % p, chunks[k][(k - step) % p].copy()) for k in range(p)]
        for k, c, data in outgoing:
            chunks[(k + 1) % p][c] += data
            sent[k] += data.nbytes
    for step in range(p - 1):  # all-gather: worker k owns the sum of chunk k + 1
        outgoing = [(k, (k + 1 - step) % p, chunks[k][(k + 1 - step) % p].copy())
                    for k in range(p)]
        for k, c, data in outgoing:
            chunks[(k + 1) % p][c] = data
            sent[k] += data.nbytes
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
# The count matches the cost model exactly. For the MNIST MLP of step 53
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
plt.show()

# %% [markdown]
# Bytes are half of the story. Each message also pays a fixed **latency**
# (microseconds on one machine, more across a network), and the ring takes
# $2(p-1)$ rounds, so for small arrays and many workers other shapes (trees)
# win; real libraries (MPI implementations, NCCL) pick an algorithm by size.
# Packing all gradients into one buffer, as step 73's communicator does, pays
# the latency once per step instead of once per parameter.
# `benchmarks/allreduce.py` measures both on this machine.
#
# ## Exercise
# Write `naive_allreduce(arrays)` the way the naive scheme works: worker 0
# receives every other array and adds it, then sends the sum back to each.
# Return the results (one per worker) and the bytes *worker 0* sent and
# received together; check it against the cost model.

# %%
def naive_allreduce(arrays):
    # solution:
    total = arrays[0].astype(float)
    moved = 0
    for a in arrays[1:]:
        total = total + a
        moved += a.nbytes  # received by worker 0
    results = [total.copy() for _ in arrays]
    moved += total.nbytes * (len(arrays) - 1)  # sent back by worker 0
    return results, moved


results, moved = naive_allreduce(arrays)
assert all(np.allclose(r, total) for r in results)
assert moved == D.naive_allreduce_bytes(arrays[0].nbytes, len(arrays))
print("self-check passed")
