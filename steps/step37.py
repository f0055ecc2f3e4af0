# %% [markdown]
# # Step 37: `retain_graph`: the graph is freed after backward
#
# To run backward, functions keep arrays from the forward pass: `Mul` keeps its
# inputs, `Tanh` its output, and so on. For a network trained on large batches
# those saved arrays (the *activations*) are often most of the memory a
# training step uses; the weights, their gradients and the optimizer's state
# are the rest. Once backward has read them, a
# training loop never needs them again: the next iteration builds a new graph.
#
# So, as in PyTorch, **backward releases what the functions saved**. The graph's
# structure stays (you can still draw it), but its saved arrays are gone, and a
# second backward through it cannot work. The framework says so clearly instead
# of computing garbage:

# %%
import tracemalloc

import numpy as np

import dezero_like as dz
import dezero_like.functions as F

x = dz.Variable(np.array(2.0))
y = x**3
y.backward()
print("first backward:", x.grad.data)
try:
    y.backward()
except RuntimeError as e:
    error_message = str(e)
    print("RuntimeError:", error_message)

# %% [markdown]
# ## Keeping the graph: `retain_graph=True`
#
# When you *do* need a second pass, ask the first one to keep the saved arrays.
# Gradients of leaves then accumulate, as always (step 14):

# %%
x = dz.Variable(np.array(2.0))
y = x**3
y.backward(retain_graph=True)
first = float(x.grad.data)
y.backward()  # allowed: the first pass kept the graph; this one frees it
print("after two passes x.grad =", x.grad.data, "=", first, "+", first)

# %% [markdown]
# `create_graph=True` implies `retain_graph=True`: the graph of the gradient
# refers back to the forward graph (steps 30–33), so the forward graph must stay
# usable.
#
# ## Two losses that share a trunk
#
# The common reason for `retain_graph` is multi-task learning: one shared
# "trunk" $h = \tanh(xW)$ feeds two heads, each with its own loss. Calling
# backward on each loss in turn sends both gradients into the shared $W$.
# The first call must keep the trunk's graph, which the second call walks again:

# %%
rng = np.random.default_rng(0)
X = rng.normal(size=(4, 3))
W_init = rng.normal(size=(3, 2))
a = rng.normal(size=(2,))


def two_losses(W):
    h = F.tanh(F.sum(X[:, :, None] * W, axis=1))  # the shared trunk: X W, without @ (step 42)
    loss1 = F.sum(h * a)  # head 1
    loss2 = F.sum(h**2)  # head 2
    return loss1, loss2


W = dz.Variable(W_init.copy(), name="W")
loss1, loss2 = two_losses(W)
loss1.backward(retain_graph=True)
grad_after_loss1 = W.grad.data.copy()
loss2.backward()
grad_two_calls = W.grad.data.copy()

W_sum = dz.Variable(W_init.copy())
loss1, loss2 = two_losses(W_sum)
(loss1 + loss2).backward()
print("two backward calls == one backward of the sum:",
      np.allclose(grad_two_calls, W_sum.grad.data, rtol=1e-12, atol=1e-15))

# %% [markdown]
# Without `retain_graph=True` in the first call, the second one stops at the
# first freed function of the trunk:

# %%
loss1, loss2 = two_losses(dz.Variable(W_init.copy()))
loss1.backward()
try:
    loss2.backward()
except RuntimeError as e:
    trunk_error = str(e)
    print("RuntimeError:", trunk_error.split(",")[0])

# %% [markdown]
# The two ways agree: gradients are linear, so the gradient of
# $L_1 + L_2$ is the sum of the two gradients. Backward of the sum is usually
# better (one pass through the trunk instead of two, and no need to retain);
# separate calls are useful when the losses are computed at different times.
#
# Gradients keep accumulating across calls until `cleargrad()`, which is why
# training loops clear them at the start of every iteration:

# %%
loss1, loss2 = two_losses(W)
loss1.backward()  # the third pass into W.grad
print("accumulated:", np.allclose(W.grad.data, grad_two_calls + grad_after_loss1))
W.cleargrad()
print("after cleargrad:", W.grad)

# %% [markdown]
# ## What the release saves
#
# A chain of 20 `tanh` on a 1000×1000 float64 array (8 MB each). `tracemalloc`
# measures the memory held by NumPy arrays after backward, with and without
# `retain_graph` (`benchmarks/memory.py` does this at full size):

# %%
def memory_after_backward(retain_graph, depth=20):
    tracemalloc.start()
    x = dz.Variable(np.ones((1000, 1000)))
    y = x
    for _ in range(depth):
        y = F.tanh(y)
    y.backward(retain_graph=retain_graph)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del x, y
    return held / 8e6  # in units of one array


kept = memory_after_backward(retain_graph=True)
freed = memory_after_backward(retain_graph=False)
print(f"arrays held after backward: retain_graph=True {kept:.1f}, False {freed:.1f}")

# %% [markdown]
# With `retain_graph=True` every `Tanh` still holds its output (about one array
# per function); without it, only what we hold ourselves remains: `x`, its
# gradient and the final `y`.
#
# ## Exercise
# Build $z = \sin(x) \cdot x$ at $x = 1$, call `z.backward(retain_graph=True)`
# twice, and store `x.grad` as a float in `twice`. It should be twice the
# derivative $\cos 1 + \sin 1$.

# %%
xe = dz.Variable(np.array(1.0))  # solution:
z = F.sin(xe) * xe
z.backward(retain_graph=True)
z.backward(retain_graph=True)
twice = float(xe.grad.data)
assert np.isclose(twice, 2 * (np.cos(1.0) + np.sin(1.0))), "two passes: twice the derivative"
print("self-check passed")
