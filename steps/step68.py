# %% [markdown]
# # Step 68: Benchmarking forward and backward per iteration
#
# "Training is slow" is not something you can fix. "The backward of `Linear`
# takes 60% of an iteration" is. To find where the time goes, time each
# **pass** of a training iteration separately:
#
# * **forward**: the model and the loss;
# * **backward**: clearing old gradients and `loss.backward()`;
# * **update**: the optimizer step.
#
# and report each as **mean, min and max** over many iterations:
#
# * *min* is the speed the code can reach when nothing disturbs it (the best
#   number to compare two versions of the code);
# * *mean* is what training will actually cost;
# * *max* shows the hiccups: garbage collection, other programs, a first call
#   that allocates memory.
#
# This answers a narrower question than end-to-end benchmarks do. MLPerf
# Training, for example, measures the wall-clock time to train a model until it
# reaches a target quality (Mattson et al., 2020, "MLPerf Training Benchmark"),
# which also counts how many iterations an optimizer needs. Per-pass timings
# explain where one iteration's time goes; they cannot tell you how many
# iterations you will need.
#
# Three rules make the numbers trustworthy:
#
# 1. **Warm up.** The first iterations create lazily initialised weights, fill
#    caches and start BLAS threads. They are run but not measured.
# 2. **Use a monotonic, high-resolution clock**: `time.perf_counter()`.
# 3. **On a GPU, synchronise before reading the clock.** GPU work is queued
#    and runs asynchronously; without a synchronisation you time the queueing,
#    not the work. (`cupy.cuda.Device().synchronize()`,
#    `torch.cuda.synchronize()`.)

# %%
import os
import platform
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import TimerHook
from dezero_like.models import MLP
from dezero_like.optimizers import SGD
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(68)  # every file this step writes goes here

# %% [markdown]
# ## A timing loop
#
# The model: an MLP 784 → 1000 → 10 with ReLU, as for MNIST, on random
# MNIST-shaped batches (no download needed: the speed does not depend on the
# pixel values).

# %%
def sync(x):
    """Wait until the device that holds ``x`` has finished (a no-op on the CPU)."""
    if dz.cuda.is_cupy_array(x):
        dz.cuda.require_gpu().cuda.Device().synchronize()


def time_passes(model, optimizer, x, t, iters=20, warmup=3):
    """Seconds per iteration of forward, backward and update: ``{pass: [s, ...]}``."""
    times = {"forward": [], "backward": [], "update": []}
    for i in range(warmup + iters):
        sync(x)
        t0 = time.perf_counter()
        loss = F.softmax_cross_entropy(model(x), t)
        sync(x)
        t1 = time.perf_counter()
        model.cleargrads()
        loss.backward()
        sync(x)
        t2 = time.perf_counter()
        optimizer.update()
        sync(x)
        t3 = time.perf_counter()
        if i >= warmup:
            times["forward"].append(t1 - t0)
            times["backward"].append(t2 - t1)
            times["update"].append(t3 - t2)
    return times


def print_table(times):
    print(f"{'pass':<10}{'mean ms':>10}{'min ms':>10}{'max ms':>10}")
    for name, seconds in times.items():
        ms = np.array(seconds) * 1e3
        print(f"{name:<10}{ms.mean():>10.3f}{ms.min():>10.3f}{ms.max():>10.3f}")


rng = np.random.default_rng(0)
x = rng.random((100, 784), dtype=np.float32)
t = rng.integers(0, 10, size=100)
np.random.seed(0)
model = MLP((1000, 10), activation=F.relu)
optimizer = SGD(lr=0.1).setup(model)
times = time_passes(model, optimizer, x, t)
print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, numpy {np.__version__}")
print_table(times)
ratio = min(times["backward"]) / min(times["forward"])
print(f"backward / forward (fastest iterations): {ratio:.1f}")

# %% [markdown]
# The numbers depend on your machine (and, on a shared one, on your
# neighbours), which is why a benchmark always prints what it ran on.
# Expect backward to cost one to two forwards (the ratio is printed above):
# for each `Linear`, forward does one matrix product ($xW$) and backward up to
# two ($g_y W^\top$ and $x^\top g_y$) of the same size. The first layer's input
# is data, which needs no gradient, so its backward computes only $x^\top g_y$;
# that is why the ratio here is close to one.
#
# A histogram of the iterations shows why mean and min differ:

# %%
total_ms = 1e3 * (np.array(times["forward"]) + np.array(times["backward"])
                  + np.array(times["update"]))
plt.hist(total_ms, bins=15)
plt.xlabel("ms per iteration")
plt.ylabel("iterations")
plt.title("MLP 784-1000-10, batch 100")
save_figure(plt.gcf(), out_dir / "iteration_times.png")
plt.show()

# %% [markdown]
# ## Where the time goes inside a pass
#
# The pass totals say *which* pass is slow; the `TimerHook` of step 65 says
# which function. Both views together are what a profiler gives you:

# %%
with TimerHook() as timer:
    time_passes(model, optimizer, x, t, iters=5, warmup=0)
timer.print_report()

# %% [markdown]
# ## The full benchmark
#
# `benchmarks/passes.py` in the repository does the same for two networks by
# default (784-1000-10 and 784-1000-1000-10; `--arch` picks others),
# optionally beside PyTorch on the same weights and data (`--torch`), on a GPU
# (`--device gpu`) and with the per-function table (`--profile`). It prints the
# command and the machine first, so a number can always be traced back to
# where it came from:
#
#     python benchmarks/passes.py --iters 100 --warmup 10 --torch
#
# ## Exercise
# 1. One slow iteration (a garbage collection, another program) drags the mean
#    up but leaves the **median** almost unchanged. Write `robust_stats(ms)`
#    returning `(mean, median)` as Python floats; the self-check tries it on a
#    run with one outlier.
# 2. **Implement then test: a profiler's counter.** Write the callbacks of
#    `CallCounter`, a hook that counts calls per function type and pass, the
#    way `TimerHook` attributes them: `counts[(name, "forward")]` and
#    `counts[(name, "backward")]`, with `name = type(function).__name__`. A
#    function run *inside* a backward (the `MatMul` of `Linear`'s backward) is
#    part of that backward's cost, so it is not counted, and neither is a
#    backward run inside another backward. `self.depth` should always tell
#    how many backwards are running: which callbacks mark a backward's start
#    and its end? The self-check runs one iteration under both hooks and
#    compares, then runs a function whose backward runs a backward of its own
#    (as gradient checkpointing does, step 65), and checks that your counter
#    leaves that inner backward out. (`TimerHook` times it as a call of its
#    own and takes it out of the outer backward's self time, so each second
#    is counted once; a count has no such share to take out.)

# %%
#| exercise
def robust_stats(ms):
    raise NotImplementedError(
        "Exercise (step 68): the mean and the median of ms, as two Python floats"
    )

# %%
#| solution
def robust_stats(ms):
    ms = np.asarray(ms, dtype=float)
    return float(ms.mean()), float(np.median(ms))

# %%
#| check
mean, median = robust_stats([2.0, 2.1, 1.9, 2.0, 40.0])
assert np.isclose(mean, 9.6), f"the mean of [2, 2.1, 1.9, 2, 40] is 9.6, got {mean}"
assert np.isclose(median, 2.0), f"the median is 2.0 (the middle value once sorted), got {median}"
print(f"self-check passed: one outlier moves the mean to {mean:.1f}, the median stays {median:.1f}")

# %%
#| exercise
from dezero_like.hooks import FunctionHook


class CallCounter(FunctionHook):
    def __init__(self):
        self.counts = {}  # (function name, "forward" or "backward") -> calls
        self.depth = 0  # how many backwards are running right now

    def forward_postprocess(self, function, in_data, out_data):
        raise NotImplementedError(
            "Exercise (step 68): count this forward, unless it runs inside a backward"
        )

    def backward_preprocess(self, function, grad_outputs):
        raise NotImplementedError("Exercise (step 68): a backward starts")

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        raise NotImplementedError(
            "Exercise (step 68): a backward ends; count it unless it ran inside another one"
        )

# %%
#| solution
from dezero_like.hooks import FunctionHook


class CallCounter(FunctionHook):
    def __init__(self):
        self.counts = {}  # (function name, "forward" or "backward") -> calls
        self.depth = 0  # how many backwards are running right now

    def _add(self, function, phase):
        key = (type(function).__name__, phase)
        self.counts[key] = self.counts.get(key, 0) + 1

    def forward_postprocess(self, function, in_data, out_data):
        if self.depth == 0:
            self._add(function, "forward")

    def backward_preprocess(self, function, grad_outputs):
        self.depth += 1

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        self.depth -= 1
        if self.depth == 0:
            self._add(function, "backward")

# %%
#| check
rng_check = np.random.default_rng(0)
xc = rng_check.random((8, 20))
tc = rng_check.integers(0, 3, size=8)
np.random.seed(0)
small = MLP((10, 3), activation=F.relu)
small(xc)
with TimerHook() as timer, CallCounter() as counter:
    loss = F.softmax_cross_entropy(small(xc), tc)
    small.cleargrads()
    loss.backward()
expected = {(name, phase): row[phase]["calls"] for name, row in timer.summary().items()
            for phase in ("forward", "backward") if row[phase]["calls"]}
extra = sorted(set(counter.counts) - set(expected))
assert not extra, (
    f"counted {extra}, which TimerHook puts inside a backward: count a forward only when no "
    "backward is running"
)
assert counter.counts == expected, f"expected the counts {expected}, got {counter.counts}"


class Recomputed(dz.Function):
    """exp(x), whose backward computes exp again on a graph of its own and runs a backward
    through it, as gradient checkpointing does: a backward inside a backward."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        (x,) = self.inputs
        inner = dz.Variable(x.data.copy())
        with dz.using_config("enable_backprop", True):
            F.sum(F.exp(inner) * gy.data).backward()
        return inner.grad


with CallCounter() as nested:
    F.sum(Recomputed()(dz.Variable(np.array([0.1, 0.2])))).backward()
outer = {("Recomputed", "forward"): 1, ("Sum", "forward"): 1, ("Sum", "backward"): 1,
         ("Recomputed", "backward"): 1}
inner_counted = sorted(set(nested.counts) - set(outer))
assert not inner_counted, (
    f"counted {inner_counted}, which ran inside Recomputed's backward: count a backward only "
    "when it ends with no other backward still running (self.depth tells)"
)
assert nested.counts == outer, (
    f"around a backward that runs a backward of its own, expected the counts {outer}, got "
    f"{nested.counts}: self.depth must count the backwards running (up at each start, down "
    "at each end), not just say whether one is"
)
assert nested.depth == 0, f"after the backward, depth should be back to 0, got {nested.depth}"
print("self-check passed: CallCounter counts calls as TimerHook attributes them, and counts "
      "no backward run inside another")
