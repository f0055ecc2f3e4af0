# %% [markdown]
# # Step 49: Softmax and softmax cross entropy, without overflow
#
# For classification a network outputs one score (a *logit*) per class. Softmax
# turns a row of logits $x$ into probabilities:
#
# $$p_k = \frac{e^{x_k}}{\sum_j e^{x_j}} .$$
#
# The loss is the **cross entropy** with the correct class $t$: $-\log p_t$,
# averaged over the batch. It is small when the network gives the right class a
# high probability, and large when it is confidently wrong.
#
# Written literally, both formulas break for large logits: $e^{1000}$ is `inf`
# in floating point, and `inf / inf` is `nan`. Two observations fix this:
#
# 1. Softmax does not change when the same number is subtracted from every
#    logit (it cancels between numerator and denominator). Subtracting the row
#    maximum $m$ makes every exponent $\le 0$, so nothing overflows.
# 2. The log of the softmax needs no division at all:
#    $\log p_k = x_k - \operatorname{logsumexp}(x)$ with
#    $\operatorname{logsumexp}(x) = m + \log\sum_j e^{x_j - m}$.

# %%
import warnings

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

logits = np.array([[1000.0, 0.0, -1000.0]])


def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about the overflow
    print("naive softmax:", naive_softmax(logits))
print("F.softmax:    ", F.softmax(dz.Variable(logits)).data)

# %% [markdown]
# ## The gradient of softmax cross entropy
#
# For one row, with $p = \text{softmax}(x)$ and one-hot target $y$,
# $\partial(-\log p_t)/\partial x_k = p_k - y_k$: the predicted probabilities
# minus the target. It is bounded by 1 in size, whatever the logits, which is
# one reason this loss trains so well. Averaged over $N$ rows the gradient is
# $(p - y)/N$.
#
# `F.softmax_cross_entropy(x, t)` takes the logits and the **integer labels**
# $t$ (not one-hot vectors). Its forward uses log-sum-exp; its backward
# computes $(\text{softmax}(x) - \text{onehot}(t)) / N$ from differentiable
# functions, so even its second derivative is available.

# %%
x = dz.Variable(np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]]))
t = np.array([0, 2])
loss = F.softmax_cross_entropy(x, t)
loss.backward()
p = np.exp(x.data) / np.exp(x.data).sum(axis=1, keepdims=True)
print("loss:", loss.data, "by hand:", -np.log(p[np.arange(2), t]).mean())
print("grad:\n", x.grad.data)
print("(p - onehot) / N:\n", (p - np.eye(3)[t]) / 2)

# %% [markdown]
# ## Large logits stay finite
#
# A confident right answer costs (almost) nothing, a confident wrong answer
# costs exactly the margin by which it is wrong, and a tie between $K$ classes
# costs $\log K$ — even with logits of $\pm 10^4$ in float32:

# %%
big = dz.Variable(np.array([[1e4, -1e4, 0.0],
                            [-1e4, 1e4, 0.0],
                            [1e4, 1e4, 1e4]], dtype=np.float32))
labels = np.array([0, 0, 2])
big_loss = F.softmax_cross_entropy(big, labels)
big_loss.backward()
print("loss:", big_loss.data, big_loss.dtype, "expected:", (0 + 2e4 + np.log(3)) / 3)
print("grad finite:", bool(np.all(np.isfinite(big.grad.data))))
print("grad:\n", big.grad.data)

# %% [markdown]
# `F.log_softmax` applies the same log-sum-exp trick when you need the
# log-probabilities themselves. All three pass the gradient check:

# %%
rng = np.random.default_rng(0)
z = rng.normal(size=(4, 5)) * 3
w = rng.normal(size=(4, 5))
lab = rng.integers(0, 5, size=4)
print("softmax:", gradient_check(lambda v: F.softmax(v) * w, z))
print("log_softmax:", gradient_check(lambda v: F.log_softmax(v) * w, z))
print("softmax_cross_entropy:", gradient_check(F.softmax_cross_entropy, z, lab))

# %% [markdown]
# ## Exercise
# Compute the cross entropy of the logits `big` with labels `[1, 1, 0]` with
# `F.log_softmax` and `get_item` (step 48) instead of `softmax_cross_entropy`:
# pick $\log p_{n, t_n}$ from each row, average and negate. Store it in `ce`.

# %%
lab2 = np.array([1, 1, 0])
ce = -F.sum(F.log_softmax(big)[np.arange(3), lab2]) / 3  # solution:
assert np.isfinite(ce.data)
assert np.isclose(ce.data, F.softmax_cross_entropy(big, lab2).data, rtol=1e-6)
print("self-check passed")
