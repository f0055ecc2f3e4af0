# %% [markdown]
# # Step 69: Graph nodes without data, keeping only what backward needs
#
# In DeZero's design (and ours up to step 22) a function keeps its input
# Variables, and a Variable *is* its data. So as long as the graph is alive,
# every intermediate array of the forward pass is alive too, whether backward
# will read it or not. For a chain of $n$ functions on a large array that is
# $n$ arrays.
#
# Industrial frameworks split the two roles:
#
# * the **graph** is made of small nodes that remember only structure (which
#   function made them, which output slot, the generation). Chainer calls them
#   `VariableNode`s. PyTorch goes further and keeps no variable nodes at all:
#   its graph is made of the function nodes (the `grad_fn` objects), linked by
#   edges that name a node and one of its input slots.
# * each function **saves only the arrays its backward reads**: Chainer's
#   `retain_inputs`/`retain_outputs`, PyTorch's `ctx.save_for_backward` and the
#   `_saved_...` attributes of a `grad_fn`.
#
# `dezero_like` does the same (see `core.py`). A function calls
# `self.retain_inputs(indexes)` in forward to say which inputs its backward
# needs; the other intermediate inputs are replaced by data-less stand-ins with
# the same creator, index and generation. Gradients of intermediate results
# are gathered in slots of the function that created them, so backprop never
# needs the Variable objects the user threw away.
#
# The derivatives tell what must be kept:
#
# | function | derivative | keeps |
# | --- | --- | --- |
# | $y = x + d$ | $1$ | nothing (only shapes) |
# | $y = x \cdot c$, $c$ constant | $c$ | $c$ only |
# | $y = e^x$ | $e^x = y$ | the output $y$ |
# | $y = \sin x$ | $\cos x$ | the input $x$ |

# %%
import tracemalloc
import weakref

import numpy as np

import dezero_like as dz
import dezero_like.functions as F

x = dz.Variable(np.ones((2, 2), dtype=np.float32))
h = x * 3.0
y = h + 1.0
add, mul = y.creator, h.creator
print("Add keeps its input h?      ", add.inputs[0].data is not None)
print("Mul keeps the leaf x?       ", mul.inputs[0] is x, "(leaves are alive anyway)")
print("Mul keeps the constant 3.0: ", mul.inputs[1].data)
z = F.exp(h)
print("Exp keeps its input h?      ", z.creator.inputs[0].data is not None,
      "  its output?", z.creator._retained_out is not None)

# %% [markdown]
# The stand-in keeps its place in the graph, so the graph can still be walked
# (and drawn) even though the array is gone:

# %%
node = add.inputs[0]
print("stand-in:", node, " creator:", type(node.creator).__name__,
      " generation:", node.generation)

# %% [markdown]
# ## A naive graph for comparison
#
# To see the difference, here is a tiny self-contained graph in DeZero's
# design: every function holds its input Variables, and every Variable holds
# its array. (Outputs are held weakly, as in step 18, so there are no cycles.)

# %%
class NaiveVariable:
    def __init__(self, data):
        self.data = data
        self.creator = None
        self.grad = None


class NaiveFunction:
    def __call__(self, x):
        y = NaiveVariable(self.forward(x.data))
        y.creator = self
        self.input = x  # the whole input Variable, data included, lives as long as y
        self.output = weakref.ref(y)
        return y


class NaiveAffineMul(NaiveFunction):
    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x * self.c

    def backward(self, gy):
        return gy * self.c


class NaiveAffineAdd(NaiveFunction):
    def __init__(self, d):
        self.d = d

    def forward(self, x):
        return x + self.d

    def backward(self, gy):
        return gy


def naive_backward(y):
    """Walk the chain from y back to the leaf (a chain needs no priority queue)."""
    g = np.ones_like(y.data)
    f = y.creator
    while f is not None:
        g = f.backward(g)
        x = f.input
        f = x.creator
    x.grad = g


# %% [markdown]
# ## Measuring with `tracemalloc`
#
# `tracemalloc` records every allocation Python makes, NumPy arrays included.
# We build a chain of 200 functions, $y \leftarrow y \cdot c + d$ repeated 100
# times, on a 256×256 float32 array (256 KiB), and measure what stays
# allocated once the forward pass is done (the graph plus the output) and the
# peak during forward and backward.

# %%
C, D = 0.999, 0.001


def package_chain(x, steps):
    y = x
    for _ in range(steps):
        y = y * C + D
    return y


def naive_chain(x, steps):
    y = x
    for _ in range(steps):
        y = NaiveAffineAdd(D)(NaiveAffineMul(C)(y))
    return y


def measure(kind, steps, shape=(256, 256)):
    """Bytes kept after forward, and peak bytes during forward + backward, beyond the input."""
    data = np.random.default_rng(0).random(shape, dtype=np.float32)
    x = dz.Variable(data) if kind == "package" else NaiveVariable(data)
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    if kind == "package":
        y = package_chain(x, steps)
    else:
        y = naive_chain(x, steps)
    kept = tracemalloc.get_traced_memory()[0] - base
    if kind == "package":
        y.backward()
    else:
        naive_backward(y)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    grad = x.grad.data if kind == "package" else x.grad
    return kept, peak, grad


array_bytes = 256 * 256 * 4
print(f"one array: {array_bytes / 2**20:.2f} MiB")
print(f"{'graph':<9}{'functions':>10}{'kept after forward':>22}{'peak':>12}")
results = {}
for kind in ("package", "naive"):
    for steps in (50, 100):
        kept, peak, grad = measure(kind, steps)
        results[kind, steps] = kept, peak, grad
        print(f"{kind:<9}{2 * steps:>10}{kept / array_bytes:>15.1f} arrays"
              f"{peak / array_bytes:>7.1f} arrays")

same = np.allclose(results["package", 100][2], results["naive", 100][2])
print("both graphs give the same gradient (c**100):", same,
      float(results["package", 100][2][0, 0]), C**100)

# %% [markdown]
# The naive graph keeps one array per function, and its memory grows with the
# length of the chain: twice the chain, twice the memory. The package keeps
# about one array (the output) however long the chain is: a `Mul` by a
# constant keeps only the constant and an `Add` keeps nothing. Its peak is a
# few arrays: the current value, the temporary of the next operation, and in
# backward the gradient being passed along.
#
# This is what lets industrial frameworks train deep networks: the memory of
# a training step is dominated by the arrays that backward truly needs
# (activations of nonlinear functions, inputs of matrix products), not by
# every intermediate result.

# %% [markdown]
# ## Exercise
# `sin` needs its input for backward ($\cos x$), so a chain of `F.sin` cannot be
# as frugal as the affine chain. Predict how many arrays a chain of 20 `sin`
# calls keeps after forward, then complete `kept_by_sin_chain` and check.

# %%
def kept_by_sin_chain(n, shape=(128, 128)):
    x = dz.Variable(np.ones(shape, dtype=np.float32))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    # solution:
    y = x
    for _ in range(n):
        y = F.sin(y)
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept / (np.prod(shape) * 4)


arrays = kept_by_sin_chain(20)
print(f"20 sin calls keep {arrays:.1f} arrays")
assert 19.5 < arrays < 22, arrays  # 19 kept inputs + the output (the leaf x is not counted)
print("self-check passed")
