# %% [markdown]
# # Step 67: Loss scaling for float16 training
#
# Half precision (`float16`) halves the memory of every array and runs much
# faster on GPUs with tensor cores, which is why large models are trained with
# it. Its weakness is range: it has 5 exponent bits instead of float32's 8.

# %%
import numpy as np

import dezero_like.functions as F
from dezero_like.layers import Linear
from dezero_like.optimizers import SGD

fi = np.finfo(np.float16)
print(f"float16: largest {fi.max}, smallest normal {fi.smallest_normal:.3g}, "
      f"smallest subnormal {fi.smallest_subnormal:.3g}")
with np.errstate(over="ignore"):
    print("np.float16(1e-8) =", np.float16(1e-8), "   np.float16(70000) =", np.float16(70000.0))

# %% [markdown]
# Anything below about $3 \times 10^{-8}$ rounds to zero ("underflow"). The
# loss and the weights are rarely that small, but gradients often are: the
# gradient of a mean over $N$ samples carries a factor $1/N$, and backprop
# multiplies many small factors together. A gradient that underflows is not
# slightly wrong; it is zero, and that part of the model stops learning.
#
# ## The fix: scale the loss, then unscale the gradients
#
# Backprop is linear in its seed: starting it from $S$ instead of $1$ gives
# $S\,\partial L / \partial \theta$ everywhere, as if we had differentiated
# $S \cdot L$. Choosing $S$ (a power of two, so scaling is exact) moves every
# gradient of the backward pass up out of the underflow zone. Before the
# update the optimizer divides by $S$ again, and the step is the one float32
# would have taken.
#
# In `dezero_like`: `loss.backward(loss_scale=S)` multiplies the seed by $S$;
# every leaf that receives a gradient remembers $S$ in `.loss_scale`; the
# optimizer divides each gradient by it before `update` and resets it.

# %% [markdown]
# ## An experiment: linear regression with small targets
#
# We fit $t = x w$ with $N = 32768$ samples and small true weights (about
# $3 \times 10^{-5}$). The mean squared error gives each sample's prediction the
# gradient $2(y_n - t_n)/N \approx 10^{-8}$: below float16's range.

# %%
rng = np.random.default_rng(0)
N, D = 32768, 8
x_data = rng.standard_normal((N, D))
w_true = rng.uniform(0.5, 1.5, (D, 1)) * 3e-5
t_data = x_data @ w_true


def train(dtype, loss_scale=None, steps=1, lr=0.25):
    """Fit w from zero with SGD; return the weights (as float64) after ``steps`` updates."""
    layer = Linear(1, in_size=D, nobias=True, dtype=dtype)
    layer.W.data[...] = 0
    optimizer = SGD(lr=lr).setup(layer)
    x, t = x_data.astype(dtype), t_data.astype(dtype)
    for _ in range(steps):
        loss = F.mean_squared_error(layer(x), t)
        layer.cleargrads()
        loss.backward(loss_scale=loss_scale)
        optimizer.update()
    return layer.W.data.astype(np.float64)


w32 = train(np.float32)
w16 = train(np.float16)
w16_scaled = train(np.float16, loss_scale=1024.0)
print("first update of w[:3]")
print("  float32, no scale:       ", w32[:3, 0])
print("  float16, no scale:       ", w16[:3, 0])
print("  float16, loss_scale=1024:", w16_scaled[:3, 0])
rel = np.abs(w16_scaled - w32).max() / np.abs(w32).max()
print(f"float16 with scale vs float32: max relative difference {rel:.1e}")

# %% [markdown]
# Without the scale, float16 learned nothing: every per-sample gradient
# rounded to zero, so the gradient of `W` is exactly zero. With $S = 1024$ the
# update agrees with float32 to a fraction of a percent. Over a few steps:

# %%
def mse(w):
    return float(((x_data @ w - t_data) ** 2).mean())


print(f"{'steps':>5} {'float32':>10} {'float16':>10} {'float16 S=1024':>15}")
for steps in (0, 2, 5, 10):
    row = [mse(train(dt, s, steps)) for dt, s in
           ((np.float32, None), (np.float16, None), (np.float16, 1024.0))]
    print(f"{steps:>5} {row[0]:>10.2e} {row[1]:>10.2e} {row[2]:>15.2e}")

# %% [markdown]
# ## Too large a scale overflows
#
# The seed lives in the loss's dtype, so in float16 $S$ itself must stay below
# 65504, and so must every scaled gradient. Overshoot and the gradients become
# `inf`, and the update NaN:

# %%
with np.errstate(over="ignore", invalid="ignore"):
    w_bad = train(np.float16, loss_scale=2.0**16)
print("loss_scale=2**16:", w_bad[:3, 0])

# %% [markdown]
# Frameworks therefore pick $S$ *dynamically* (PyTorch's `GradScaler`, Chainer's
# dynamic loss scaling): start high; when a gradient contains inf or NaN, skip
# that update and halve $S$; after many good steps in a row, double it again.
# Real mixed-precision training also keeps a float32 "master" copy of the
# weights, so that tiny updates are not lost when added to large weights; here
# the whole model is float16 to keep the experiment small.

# %% [markdown]
# ## Exercise
# Write `has_overflow(params)`, the test a dynamic loss scaler runs before
# each update: True when any parameter's gradient contains inf or NaN.

# %%
def has_overflow(params):
    # solution:
    return any(not np.isfinite(p.grad.data).all() for p in params if p.grad is not None)


def scaled_grads(scale):
    layer = Linear(1, in_size=D, nobias=True, dtype=np.float16)
    layer.W.data[...] = 0
    loss = F.mean_squared_error(layer(x_data.astype(np.float16)), t_data.astype(np.float16))
    with np.errstate(over="ignore", invalid="ignore"):
        loss.backward(loss_scale=scale)
    return list(layer.params())


assert has_overflow(scaled_grads(2.0**16)) is True
assert has_overflow(scaled_grads(1024.0)) is False
print("self-check passed")
