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
# on the CPU. (In Colab: Runtime → Change runtime type → GPU; CuPy is
# preinstalled there.)

# %%
use_gpu = cuda.gpu_available()
if use_gpu:
    print("GPU found: the model and the batches will live on the GPU.")
else:
    print("No GPU available (CuPy is missing or sees no CUDA device): "
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
    print("x lives on:", type(x.data).__module__, "and comes back with to_cpu():",
          type(x.to_cpu().data).__module__)

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
# model.

# %%
def make_model(seed=0):
    np.random.seed(seed)
    model = MLP((100, 10), activation=F.relu)
    model(np.zeros((1, 784), dtype=np.float32))  # create the weights on the CPU
    return model


def train_epoch(model, loader, optimizer):
    """One epoch; returns the mean loss (as a Python float, on any device)."""
    sum_loss = 0.0
    for x, t in loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        sum_loss += float(loss.data) * len(t)
    return sum_loss / len(loader.dataset)


def evaluate_accuracy(model, dataset, gpu):
    correct = 0.0
    with dz.no_grad():
        for x, t in DataLoader(dataset, 500, shuffle=False, gpu=gpu):
            correct += float(F.accuracy(model(x), t).data) * len(t)
    return correct / len(dataset)


train_set, test_set = dz.datasets.mnist_train_test(progress=False)
print(train_set.summary)

results = {}
for device in ["cpu", "gpu"] if use_gpu else ["cpu"]:
    gpu = device == "gpu"
    model = make_model()
    if gpu:
        model.to_gpu()
    optimizer = optimizers.SGD(lr=0.5).setup(model)
    loader = DataLoader(train_set, 100, seed=0, gpu=gpu)
    start = time.perf_counter()
    loss = train_epoch(model, loader, optimizer)
    seconds = time.perf_counter() - start
    results[device] = (loss, evaluate_accuracy(model, test_set, gpu), seconds)
    print(f"{device}: one epoch in {seconds:.2f} s, loss {loss:.4f}, "
          f"test accuracy {results[device][1]:.4f}")

# %% [markdown]
# With a GPU, the two runs start from the same weights and see the same
# batches, so they agree to rounding error: float32 sums are done in a
# different order on the GPU, which changes the last digits, not the result.
# The speed-up grows with the size of the matrices; for a model this small,
# launching GPU kernels costs as much as the arithmetic, and bigger layers
# or the CNNs of the next stage show the difference better.

# %%
if use_gpu:
    (l_cpu, a_cpu, s_cpu), (l_gpu, a_gpu, s_gpu) = results["cpu"], results["gpu"]
    print(f"loss difference {abs(l_cpu - l_gpu):.2e}, accuracy difference {abs(a_cpu - a_gpu):.4f}")
    print(f"speed-up {s_cpu / s_gpu:.1f}x")
else:
    print("No GPU: only the CPU run above. Run this notebook on a GPU machine to compare.")

# %% [markdown]
# ## Exercise
# Write `normalize_rows(m)`, which divides each row of a 2-D array by its
# Euclidean length, using `xp = cuda.get_array_module(m)` so it runs on either
# device. The self-check runs it on the CPU (and on the GPU, if there is one).

# %%
# solution:
def normalize_rows(m):
    xp = cuda.get_array_module(m)
    return m / xp.sqrt((m * m).sum(axis=1, keepdims=True))


m = np.array([[3.0, 4.0], [1.0, 0.0]])
assert np.allclose(normalize_rows(m), [[0.6, 0.8], [1.0, 0.0]])
if use_gpu:
    assert np.allclose(cuda.as_numpy(normalize_rows(cuda.as_cupy(m))), [[0.6, 0.8], [1.0, 0.0]])
print("self-check passed")
