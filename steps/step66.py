# %% [markdown]
# # Step 66: Debug mode, finding the first NaN
#
# A NaN ("not a number") spreads: every operation that touches it returns NaN.
# By the time the loss prints `nan`, the function that produced the first one
# is long gone, and so is the evidence. Infinity behaves much the same:
# `inf - inf` and `0 * inf` are NaN.
#
# Industrial frameworks offer switches for this. Chainer's debug mode
# (`chainer.set_debug(True)`) checks every result of the forward and the
# backward computation and raises `RuntimeError` at the first NaN (Chainer
# documentation, "Debug Mode"). PyTorch's
# `torch.autograd.set_detect_anomaly(True)` checks only the **backward** pass:
# it raises when a backward function produces NaN, and it records during
# forward the traceback of each operation, so the error can point at the
# forward line whose backward failed (PyTorch documentation,
# `torch.autograd.detect_anomaly`). A NaN made in the forward pass itself goes
# unreported there until it reaches a backward. Ours, like Chainer's, checks
# both passes: `with dz.debug_mode():`. It is built entirely from the hooks of step 65: a
# `DebugHook` whose `forward_postprocess` and `backward_postprocess` run
# `isfinite` on each new array and raise `DebugError` (a `RuntimeError`) that
# names the function, the pass, the line of your code that called it, and what
# the function was given. Nothing in the core knows about it.

# %%
import time

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import DebugError, FunctionHook
from dezero_like.models import MLP

print("debug mode is a function hook:", isinstance(dz.debug_mode(), FunctionHook))

# %% [markdown]
# ## A NaN in the forward pass
#
# Cross entropy written straight from the formula, $-\frac1N\sum t \log
# \mathrm{softmax}(x)$, overflows for large logits: $e^{1000}$ is `inf` in
# floating point, and `inf / inf` is NaN. Without debug mode we only see the
# result (and a NumPy warning on stderr that names no function):

# %%
def naive_cross_entropy(logits, t_onehot):
    e = F.exp(logits)
    p = e / F.sum(e, axis=1, keepdims=True)
    return -F.sum(t_onehot * F.log(p)) / len(logits)


logits = dz.Variable(np.array([[1000.0, 0.0], [0.5, 1.5]]))
t = np.array([[1.0, 0.0], [0.0, 1.0]])
loss = naive_cross_entropy(logits, t)
loss.backward()
print("loss =", loss.data, " grad has NaN:", bool(np.isnan(logits.grad.data).any()))

# %% [markdown]
# With debug mode the first non-finite value stops the program at its source:

# %%
logits.cleargrad()
try:
    with dz.debug_mode():
        loss = naive_cross_entropy(logits, t)
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# ## A NaN in the backward pass
#
# Some functions are fine forwards and break backwards. The Euclidean norm
# $\lVert v \rVert = (\sum v_i^2)^{1/2}$ is $0$ at $v = 0$, but its derivative
# $\frac{1}{2}(\sum v_i^2)^{-1/2} \cdot 2v$ is $\infty \cdot 0$ there. Debug mode
# catches the `inf` where it appears, inside the backward of `Pow`, and says
# where that `Pow` was called in the forward pass:

# %%
v = dz.Variable(np.zeros(3))
try:
    with dz.debug_mode():
        norm = F.sum(v**2) ** 0.5
        norm.backward()
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# ## Bad data, not a bad function
#
# When a function receives NaN, the message says so: the bug is upstream, in
# the data or in code that ran outside debug mode.

# %%
try:
    with dz.debug_mode():
        F.tanh(dz.Variable(np.array([0.0, np.nan])))
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# ## What it costs
#
# Every array is scanned once more, and every call looks up the caller's line.
# That is cheap next to big matrix products but not free, which is why debug
# mode is a switch you turn on to hunt a bug, not a default:

# %%
rng = np.random.default_rng(0)
model = MLP((50, 50, 10))
xb = rng.standard_normal((64, 20)).astype(np.float32)
tb = rng.integers(0, 10, 64)


def train_step():
    loss = F.softmax_cross_entropy(model(xb), tb)
    model.cleargrads()
    loss.backward()


def best_time(fn, repeat=20):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


train_step()
plain = best_time(train_step)
with dz.debug_mode():
    debug = best_time(train_step)
print(f"one training step: {plain * 1e3:.2f} ms plain, {debug * 1e3:.2f} ms in debug mode")

# %% [markdown]
# ## Exercise
# Rewrite the cross entropy so that debug mode finds nothing for the same
# logits. Hint: $\log \mathrm{softmax}(x) = x - \log\sum e^{x}$, and
# `F.log_softmax` computes it with the max subtracted first.

# %%
def stable_cross_entropy(logits, t_onehot):
    # solution:
    return -F.sum(t_onehot * F.log_softmax(logits, axis=1)) / len(logits)


logits = dz.Variable(np.array([[1000.0, 0.0], [0.5, 1.5]]))
with dz.debug_mode():
    loss = stable_cross_entropy(logits, t)
    loss.backward()
expected = (0.0 + np.log1p(np.exp(-1.0))) / 2  # sample 1 is certain; sample 2: log(1 + e^-1)
assert np.isclose(loss.data, expected), loss.data
assert np.isfinite(logits.grad.data).all()
print("self-check passed")
