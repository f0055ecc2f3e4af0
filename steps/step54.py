# %% [markdown]
# # Step 54: GPU with CuPy: one code path for both devices
#
# Training is mostly matrix products, and a GPU does thousands of
# multiply-adds at once. To use one from Python we need arrays that live in
# GPU memory and operations that run there. **CuPy** provides exactly that,
# with the NumPy API: `cupy.exp`, `cupy.zeros`, `x @ W`, `x.sum(axis=1)` work
# as in NumPy, only on the GPU.
#
# That similarity is what lets the framework support GPUs without writing
# everything twice. Every function asks which module holds its input and
# calls the same code on it:
#
# ```python
# xp = dz.cuda.get_array_module(x)   # numpy for a NumPy array, cupy for a CuPy array
# return xp.exp(x)
# ```
#
# Moving things between devices is explicit and rare: `to_gpu()` on a model
# (all its parameters) and on the `DataLoader` (every batch it produces), and
# `to_cpu()` (or `cuda.as_numpy`) to bring results back for printing and
# plotting. The training loop itself does not change.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Variable.to_cpu`, `Variable.to_gpu`; `cuda` gains
# `gpu_available`; `layers` gains `Layer.to_cpu`, `Layer.to_gpu`, `Layer._creation_xp`;
# `dataloaders` gains `DataLoader.to_cpu`, `DataLoader.to_gpu`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# These two functions become methods of `Variable` (the class name after the module in the first
# line says so). They replace `data` by a copy on the other device and return the Variable itself,
# so calls can be chained. A gradient moves with its Variable (as in PyTorch, whose `Module.to`
# moves `.grad` too), so moving between `backward` and `update` works. A Variable without data
# is left as it is.

# %%
#| export dezero_like/core.py Variable
from dezero_like import cuda
from dezero_like.core import _changed_in_place


def to_cpu(self):
    if self.data is not None:
        self._moved(cuda.as_numpy(self.data))
    if self.grad is not None:
        self.grad.to_cpu()
    return self


def to_gpu(self):
    if self.data is not None:
        self._moved(cuda.as_cupy(self.data))
    if self.grad is not None:
        self.grad.to_gpu()
    return self


def _moved(self, array):
    """Hold ``array``, the same numbers on the other device; an actual move ticks the clock of
    step 37, so a graph built before it refuses to backward with a clear message, instead of
    failing inside a backward that meets arrays of both devices."""
    if array is not self._data:
        self._data = array
        _changed_in_place(self)


# %% [markdown]
# `gpu_available` asks `_cupy` whether a GPU can be used. The module-level `__getattr__` makes
# `cuda.gpu_enable` a value computed on first access and then stored in the module, so importing
# `cuda` never starts CuPy.

# %%
#| export dezero_like/cuda.py
from dezero_like.cuda import _cupy


def gpu_available():
    """True when CuPy is installed and a CUDA GPU can be used."""
    return _cupy() is not None


def __getattr__(name):
    # ``cuda.gpu_enable`` (the book's name) is computed on first use, not at import.
    if name == "gpu_enable":
        value = gpu_available()
        globals()["gpu_enable"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# %% [markdown]
# A layer moves to a device by moving each of its parameters, and every other Variable it keeps, in
# itself and in every sub-layer, so a whole model moves with one call. Kept state that still has a
# graph behind it (an RNN's or LSTM's `h` in the middle of a sequence, steps 61-62) is refused: its
# graph would stay behind, and backward would mix the devices. `to_gpu` checks for a GPU first, so a
# failed call leaves the model as it was. It also remembers the device, in every layer: a
# lazy layer creates its weight from the first input, on that input's device, and after
# `model.to_gpu()` a first batch left on the CPU would otherwise create `W` on the CPU next to a
# bias on the GPU.
# `_creation_xp` refuses that input instead, before anything is created, so the next call with
# the batch on the GPU works; `load_weights` (step 55) creates lazy weights on that device too.
# `_refuse_kept_graph` is the check on kept state; step 55 uses it again before a model is copied.

# %%
#| export dezero_like/layers.py
from dezero_like.core import Variable


def _refuse_kept_graph(layers, why, action):
    """Raise if a layer keeps a Variable computed by a graph (``why`` says what goes wrong)."""
    for layer in layers:
        for name, value in layer.__dict__.items():
            if isinstance(value, Variable) and value.creator is not None:
                raise RuntimeError(
                    f"{layer._describe()} keeps {name!r}, computed by a graph {why}; call "
                    f"reset_state() (or {name}.unchain_backward()) before {action}")


# %%
#| export dezero_like/layers.py Layer
import numpy as np

from dezero_like import cuda
from dezero_like.core import Variable
from dezero_like.optimizers import _warn_unregistered


def to_cpu(self):
    return self._move("cpu", lambda v: v.to_cpu())


def to_gpu(self):
    cuda.require_gpu()  # before anything moves: a machine without a GPU keeps its model
    return self._move("gpu", lambda v: v.to_gpu())


def _move(self, device, move):
    """Move every Variable of every layer with ``move``; then mark the layers ``device``."""
    layers = list(self._walk_layers())
    # state with a graph behind it (an LSTM's h mid-sequence): backward would mix devices
    _refuse_kept_graph(layers, "that would stay on the other device", "moving")
    for layer in layers:
        for value in list(layer.__dict__.values()):
            if isinstance(value, Variable):
                move(value)
        object.__setattr__(layer, "_device", device)
    # layers kept in a list stay behind: their weights would meet the moved inputs in forward
    _warn_unregistered(self, f"to_{device}() does not move them, so forward would meet "
                       "weights on another device", stacklevel=4)
    return self


def _creation_xp(self, x):
    """The array module a lazy parameter is created with: the first input's, which must be on
    the device ``to_gpu()``/``to_cpu()`` put this layer on."""
    xp = cuda.get_array_module(x)
    device = self.__dict__.get("_device")
    if device is not None and (device == "gpu") != (xp is not np):
        here, there = ("GPU", "CPU") if device == "gpu" else ("CPU", "GPU")
        move = "cuda.as_cupy(x), or loader.to_gpu()" if device == "gpu" else "cuda.as_numpy(x)"
        raise TypeError(
            f"{self._describe()} was put on the {here} (to_{here.lower()}()), but its first "
            f"input is on the {there}; its weights are created from the first input, on that "
            f"input's device, so move the input first: x = {move}")
    return xp


# %% [markdown]
# A DataLoader does not move any data when it is told to: it only sets `gpu`, and `_collate` copies
# each batch when it is made. `to_gpu` checks first that a GPU can be used, so the error comes at
# this call and not at the first batch.

# %%
#| export dezero_like/dataloaders.py DataLoader
from dezero_like import cuda


def to_cpu(self):
    """Return NumPy batches from now on."""
    self.gpu = False
    return self


def to_gpu(self):
    """Return CuPy batches from now on; a clear error when no GPU can be used."""
    cuda.require_gpu()
    self.gpu = True
    return self


# %%
import time

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import DataLoader, cuda, optimizers
from dezero_like.models import MLP

# %% [markdown]
# ## Is there a GPU?
#
# `cuda.gpu_available()` is True when CuPy is installed *and* sees a CUDA GPU.
# This notebook runs everywhere: without a GPU it says so and does everything
# on the CPU. (In Colab this notebook asks for a GPU runtime when it opens; if
# none was given, Runtime → Change runtime type → GPU. CuPy is preinstalled
# there. Should that CuPy be built for another CUDA version than the runtime's
# libraries, it fails to import, and the error two cells below names the wheel
# for the CUDA that the NVIDIA driver runs.)

# %%
use_gpu = cuda.gpu_available()
if use_gpu:
    print("GPU found: this step trains on the CPU, then on the GPU, and compares.")
else:
    print("No GPU available (CuPy is missing, fails to import, or sees no CUDA device): "
          "this step runs on the CPU. Everything below still works; only the GPU "
          "timings are skipped.")

# %% [markdown]
# Asking for the GPU where there is none is a clear error that says how to get
# one, not a confusing `ImportError` deep inside a function:

# %%
x = dz.Variable(np.ones(3, dtype=np.float32))
if not use_gpu:
    try:
        x.to_gpu()
    except RuntimeError as e:
        print("RuntimeError:", e)
else:
    x.to_gpu()
    print("x lives on the GPU:", cuda.is_cupy_array(x.data), "- and after to_cpu() it is a",
          type(x.to_cpu().data).__name__)

# %% [markdown]
# ## Writing code once
#
# A function written with `xp` works on either device. Here is softplus,
# $\log(1 + e^x)$, a smooth version of ReLU, written once. `cuda.as_numpy`
# brings any array (or Variable) back to the host, and is a no-op for NumPy
# arrays.

# %%
def softplus(a):
    xp = cuda.get_array_module(a)
    return xp.log1p(xp.exp(a))


a = np.array([-2.0, 0.0, 2.0], dtype=np.float32)
print("module for a NumPy array:", cuda.get_array_module(a).__name__)
print("softplus on the CPU:", softplus(a))
if use_gpu:
    print("softplus on the GPU:", cuda.as_numpy(softplus(cuda.as_cupy(a))))

# %% [markdown]
# ## Training on either device
#
# The training function below contains no device logic at all. What decides
# where it runs is only where the model's parameters and the batches are.
# One detail: a `Linear` layer creates its weights on the first call, using the
# random generator of the device it runs on. To get the *same* starting point
# on both devices we run one dummy batch on the CPU first, then move the
# model. The model is 784-1000-10 with ReLU.
#
# Two details decide whether a GPU timing means anything:
#
# * **Warm up first.** The first time CuPy meets an operation (an `exp` on
#   float32, a reduction of some shape) it *compiles* a kernel for it, which
#   takes milliseconds to a second, and caches it (in memory, and on disk in
#   `~/.cupy/kernel_cache`, or `$CUPY_CACHE_DIR`: CuPy's "Environment variables"
#   page). The first epoch pays for every compilation; later
#   ones do not. So we train a few batches untimed, then time. This is the rule
#   of step 68, and on a GPU it matters more.
# * **Do not read results every batch.** A GPU works *asynchronously*: Python
#   queues kernels and moves on. `float(loss.data)` copies a number to the host,
#   which must wait for the queue to drain. Adding the losses up on the device
#   and reading the sum once per epoch keeps the GPU busy.

# %%
def make_model(hidden=1000, seed=0):
    np.random.seed(seed)
    model = MLP((hidden, 10), activation=F.relu)
    model(np.zeros((1, 784), dtype=np.float32))  # create the weights on the CPU
    return model


def train_epoch(model, loader, optimizer, limit=None):
    """One epoch (or ``limit`` batches); returns the mean loss as a Python float."""
    sum_loss, count = 0, 0
    for i, (x, t) in enumerate(loader):
        if limit is not None and i == limit:
            break
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        sum_loss = sum_loss + loss.data * len(t)  # stays on the device: no waiting
        count += len(t)
    loader.reset()
    return float(sum_loss) / count  # one read per epoch


def evaluate_accuracy(model, dataset, gpu):
    correct = 0
    with dz.no_grad():
        for x, t in DataLoader(dataset, 500, shuffle=False, gpu=gpu):
            correct = correct + F.accuracy(model(x), t).data * len(t)
    return float(correct) / len(dataset)


train_set, test_set = dz.datasets.mnist_train_test(progress=False)
print(train_set.summary)

results = {}
for device in ["cpu", "gpu"] if use_gpu else ["cpu"]:
    gpu = device == "gpu"
    model = make_model()
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=0.2).setup(model)
    loader = DataLoader(train_set, 100, seed=0, gpu=gpu)
    warm = make_model(seed=1)  # a throw-away model for the untimed warm-up
    if gpu:
        warm.to_gpu()
    start = time.perf_counter()
    train_epoch(warm, loader, optimizers.SGD(lr=0.2).setup(warm), limit=5)
    warm_up = time.perf_counter() - start
    start = time.perf_counter()
    loss = train_epoch(model, loader, optimizer)
    seconds = time.perf_counter() - start
    results[device] = (loss, evaluate_accuracy(model, test_set, gpu), seconds)
    print(f"{device}: warm-up (5 batches) {warm_up:.2f} s, then one epoch in {seconds:.2f} s, "
          f"loss {loss:.4f}, test accuracy {results[device][1]:.4f}")

# %% [markdown]
# With a GPU, the two runs start from the same weights and see the same
# batches, so they agree to rounding error: float32 sums are done in a
# different order on the GPU, which changes the last digits, not the result.
# How much faster the GPU is depends on the machine and on warm-up: the cell
# above prints both times when a GPU is present (the stored notebook was made
# without one, so it shows only the CPU run).

# %%
if use_gpu:
    (l_cpu, a_cpu, s_cpu), (l_gpu, a_gpu, s_gpu) = results["cpu"], results["gpu"]
    print(f"loss difference {abs(l_cpu - l_gpu):.2e}, accuracy difference {abs(a_cpu - a_gpu):.4f}")
    print(f"speed-up {s_cpu / s_gpu:.1f}x")
else:
    print("No GPU: only the CPU run above. Run this notebook on a GPU machine to compare.")

# %% [markdown]
# ## Where the GPU pays off
#
# Every operation on the GPU costs a fixed few microseconds to *launch*
# (Python, CuPy and the driver prepare it), however little arithmetic it does;
# the arithmetic itself is very fast. On the CPU the fixed cost per operation is
# the framework's Python, a floor that the smallest widths of the table below
# stay close to (so close that 16 and 64 can swap places from run to run); past
# that, the time grows with the arithmetic. So for small layers the CPU wins and
# for wide ones the GPU wins, and somewhere between the lines cross.
#
# We time one training step (forward, backward, update) of a 784-H-10 MLP,
# batch 100, for several widths H, after a warm-up, on each device. Each time
# is the fastest of twenty single steps, as step 68 recommends: the minimum is
# the speed the code can reach, and on a busy machine most steps are slowed by
# other programs. The widths take turns, one step of each per round, so a busy
# second slows one step of every width, not all the steps of one. On a machine
# shared with much other work a wide layer can still come out barely slower than
# a narrower one: run the cell again.

# %%
WIDTHS = [16, 64, 256, 1024, 4096]


def make_step(hidden, gpu):
    """One training step (forward, backward, update) of a 784-hidden-10 MLP on a batch of 100."""
    model = make_model(hidden)
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    x = np.random.default_rng(0).random((100, 784), dtype=np.float32)
    t = np.arange(100) % 10
    if gpu:
        x, t = cuda.as_cupy(x), cuda.as_cupy(t)

    def step():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()

    return step


def time_per_step(widths, gpu, steps=1, repeats=20):
    """The best time of one step for each width; in every round each width runs once."""
    sync = cuda.require_gpu().cuda.Device().synchronize if gpu else (lambda: None)
    runs = {h: make_step(h, gpu) for h in widths}
    for step in runs.values():
        step()  # warm-up
    sync()
    best = dict.fromkeys(widths, float("inf"))
    for _ in range(repeats):
        for h, step in runs.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            sync()  # the GPU may still be working: wait before reading the clock
            best[h] = min(best[h], (time.perf_counter() - start) / steps)
    return [best[h] for h in widths]


timings = {"cpu": time_per_step(WIDTHS, False)}
if use_gpu:
    timings["gpu"] = time_per_step(WIDTHS, True)
for i, h in enumerate(WIDTHS):
    row = "  ".join(f"{d} {timings[d][i] * 1e3:7.2f} ms" for d in timings)
    print(f"H = {h:5d}: {row}")

import matplotlib.pyplot as plt  # noqa: E402

from dezero_like.plot import output_dir, save_figure  # noqa: E402

fig, ax = plt.subplots(figsize=(6, 3.5))
for device, ts in timings.items():
    ax.plot(WIDTHS, [s * 1e3 for s in ts], "o-", label=device.upper())
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("hidden width H (784-H-10, batch 100)")
ax.set_ylabel("ms per training step")
ax.set_title("CPU against GPU: a fixed launch cost against arithmetic")
ax.legend()
if use_gpu:
    faster = [h for h, c, g in zip(WIDTHS, timings["cpu"], timings["gpu"]) if g < c]
    if faster:
        ax.axvline(faster[0], color="gray", ls=":")
        print(f"the GPU is faster from H = {faster[0]} on (in this run)")
    else:
        print("the GPU was not faster at any width in this run")
else:
    print("GPU curve not measured: no GPU here. The CPU curve grows with the arithmetic; "
          "on a GPU the curve stays nearly flat until the arithmetic outgrows the launches.")
save_figure(fig, output_dir(54) / "cpu_gpu_crossover.png")
plt.show()

# %% [markdown]
# On a GPU machine the plot has a GPU curve too (the stored notebook, made
# without a GPU, shows only the CPU). Read it as two regimes. Where the GPU
# curve is flat, its time is all
# launches: making the layer four times wider costs nothing. That flat part is
# what step 71 attacks, by doing several operations in one launch (*fusing*
# kernels). Where the CPU curve rises, its time is arithmetic; there, only a
# faster processor helps.

# %% [markdown]
# ## Exercise
# 1. Write `normalize_rows(m)`, which divides each row $m_i$ of a 2-D array by
#    its Euclidean length $\sqrt{\sum_j m_{ij}^2}$ (one length per row, kept as
#    an (N, 1) column so that it broadcasts). Any array function it needs must
#    come from the module of `m` (`cuda.get_array_module`, this step), so that
#    it runs on either device. The self-check runs it on the CPU (and on the
#    GPU, if there is one).
# 2. **Implement then test: a Function for both devices.** Write `MyELU`,
#    the exponential linear unit, as a `Function` with a parameter $\alpha$
#    (the stub's `__init__` keeps it): $y = x$ where $x > 0$ and
#    $y = \alpha\,(e^x - 1)$ elsewhere. Its derivative is $1$ where $x > 0$
#    and $\alpha\, e^x$ elsewhere (at $x = 0$ too, as in PyTorch). The package
#    has no ELU. `forward` computes it on the raw array, and `backward` returns
#    $g_y$ times that derivative, computed on the raw array of the input
#    (`self.inputs`); both take their functions from the array module of that
#    array, as `softplus` above does, so one code runs on NumPy and on CuPy.
#    Mind one trap: choosing elementwise between two results (`where`) computes
#    both, and $e^x$ overflows for a large positive $x$; take the exponential
#    only of the part of $x$ at or below zero. The self-check compares with the
#    formulas evaluated in NumPy for $\alpha = 0.5$, runs `gradient_check`,
#    tries $x = \pm 800$, and repeats the comparison on the GPU when there is one.

# %%
#| exercise
def normalize_rows(m):
    raise NotImplementedError(
        "Exercise (step 54): divide each row by its length, with the array module of m"
    )

# %%
#| solution
def normalize_rows(m):
    xp = cuda.get_array_module(m)
    return m / xp.sqrt((m * m).sum(axis=1, keepdims=True))

# %%
#| check
m = np.array([[3.0, 4.0], [1.0, 0.0]])
assert np.allclose(normalize_rows(m), [[0.6, 0.8], [1.0, 0.0]]), (
    f"expected [[0.6, 0.8], [1, 0]], got {normalize_rows(m)}: divide each row by its length"
)
if use_gpu:
    on_gpu = normalize_rows(cuda.as_cupy(m))
    assert cuda.get_array_module(on_gpu) is not np, "on the GPU the result should stay on the GPU"
    assert np.allclose(cuda.as_numpy(on_gpu), [[0.6, 0.8], [1.0, 0.0]])
print("self-check passed: normalize_rows works on", "both devices" if use_gpu else "the CPU")

# %%
#| exercise
from dezero_like.core import Function


class MyELU(Function):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 54): x where x > 0, else alpha * (e^x - 1), with the array module of x"
        )

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 54): gy times the derivative at the input, "
                                  "computed with the array module of the input's data")

# %%
#| solution
from dezero_like.core import Function


class MyELU(Function):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def forward(self, x):
        xp = cuda.get_array_module(x)
        # expm1 of min(x, 0): e^x is never taken of a large positive x
        return xp.maximum(x, 0) + self.alpha * xp.expm1(xp.minimum(x, 0))

    def backward(self, gy):
        (x,) = self.inputs
        xp = cuda.get_array_module(x.data)
        slope = xp.where(x.data > 0, 1.0, self.alpha * xp.exp(xp.minimum(x.data, 0)))
        return gy * slope

# %%
#| check
import warnings  # noqa: E402

from dezero_like.utils import gradient_check  # noqa: E402

rng = np.random.default_rng(0)
z = rng.normal(size=(3, 4)) * 2  # no element nearer than 0.08 to the kink at 0
alpha = 0.5  # not 1: an ELU that forgets alpha fails
want_y = np.where(z > 0, z, alpha * (np.exp(z) - 1))  # the definition, evaluated in NumPy
want_slope = np.where(z > 0, 1.0, alpha * np.exp(z))  # its derivative
x = dz.Variable(z)
y = MyELU(alpha)(x)
assert np.allclose(y.data, want_y), (
    f"forward, alpha={alpha}: expected {want_y.round(4).tolist()}, got {y.data}: "
    "x where x > 0, alpha * (e^x - 1) elsewhere"
)
y.backward()
assert x.grad is not None and np.allclose(x.grad.data, want_slope), (
    f"backward, alpha={alpha}: expected gy times {want_slope.round(4).tolist()}, got "
    f"{None if x.grad is None else x.grad.data}: the slope is 1 where x > 0, alpha * e^x elsewhere"
)
gradient_check(lambda v: MyELU(alpha)(v), z,  # against numerical differentiation
               hint="backward is right when gy is 1 but not for a weighted output: multiply the "
                    "slope by gy, the gradient arriving from the output's side")
big = dz.Variable(np.array([800.0, -800.0]))
with warnings.catch_warnings():
    warnings.simplefilter("error", RuntimeWarning)
    try:
        out = MyELU()(big)
        out.backward()
    except RuntimeWarning as e:
        raise AssertionError(
            f"x = 800 and -800 gave a RuntimeWarning ({e}): the branch that where discards is "
            "computed too; take the exponential only of the part of x at or below zero"
        ) from None
assert np.allclose(out.data, [800.0, -1.0]) and np.allclose(big.grad.data, [1.0, 0.0]), (
    f"for x = [800, -800] expected y = [800, -1] and slope [1, 0], got {out.data} and "
    f"{big.grad.data}"
)
if use_gpu:
    x_gpu = dz.Variable(cuda.as_cupy(z))
    try:
        y_gpu = MyELU(alpha)(x_gpu)
        y_gpu.backward()
    except TypeError as e:
        raise AssertionError(f"on a CuPy input: {e}; take the array module from the input "
                             "(cuda.get_array_module), do not call np") from None
    assert cuda.get_array_module(y_gpu.data) is not np, (
        "on a CuPy input the output should be CuPy: take xp from the input, do not call np"
    )
    assert cuda.get_array_module(x_gpu.grad.data) is not np, (
        "on a CuPy input the gradient should be CuPy: backward takes xp from the input's data"
    )
    assert np.allclose(cuda.as_numpy(y_gpu.data), want_y), "forward on the GPU differs"
    assert np.allclose(cuda.as_numpy(x_gpu.grad.data), want_slope), "backward on the GPU differs"
    gradient_check(lambda v: MyELU(alpha)(v), cuda.as_cupy(z))
print("self-check passed: MyELU matches the formulas and passes the gradient check",
      "on both devices" if use_gpu else "on the CPU")
