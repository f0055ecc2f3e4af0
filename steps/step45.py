# %% [markdown]
# # Step 45: `Parameter` and `Layer`
#
# In step 44 we carried four Variables around by hand: clear four gradients,
# update four arrays. Real networks have hundreds of parameter arrays. Two
# small ideas take this bookkeeping off our hands:
#
# * A **`Parameter`** is a `Variable` that a model *owns* and an optimizer
#   *updates*. It behaves exactly like a Variable; only its type differs, so
#   code can tell "weights to learn" apart from "data" and "intermediate results".
# * A **`Layer`** is an object that collects its Parameters automatically. Its
#   `__setattr__` (the hook Python calls on `self.name = value`) notices when the
#   value is a Parameter — or another Layer — and records the name. Then
#   `params()` can walk them all, and `cleargrads()` can clear them all.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Parameter
from dezero_like.plot import output_dir, plot_curves

out_dir = output_dir(45)  # every file this step writes goes here

p = Parameter(np.array(2.0))
v = dz.Variable(np.array(2.0))
print("p * v =", p * v, "| p is a Variable:", isinstance(p, dz.Variable),
      "| v is a Parameter:", isinstance(v, Parameter))

# %% [markdown]
# ## A layer of our own
#
# A layer subclasses `L.Layer`, calls `super().__init__()`, assigns its
# Parameters as attributes and writes `forward`. Calling the layer calls
# `forward`. Here is a layer that scales its input elementwise by learned
# factors; the integer and the plain Variable are *not* registered:

# %%
class Scale(L.Layer):
    def __init__(self, size):
        super().__init__()
        self.w = Parameter(np.ones(size), name="w")
        self.size = size  # an int: not a parameter
        self.note = dz.Variable(np.zeros(1))  # a Variable but not a Parameter

    def forward(self, x):
        return x * self.w


scale = Scale(3)
print("registered:", [q.name for q in scale.params()])
y = scale(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
F.sum(y).backward()
print("w.grad =", scale.w.grad)
scale.cleargrads()
print("after cleargrads:", scale.w.grad)

# %% [markdown]
# ## `Linear`: the layer behind $xW + b$
#
# `L.Linear(out_size)` owns `W` (in_size × out_size) and `b` (out_size) and calls
# `F.linear`. We only give the *output* size: the input size is read from the
# first batch the layer sees, and only then is `W` created ("lazy"
# initialisation). Its entries start as `randn * sqrt(1/in_size)`, which keeps
# the outputs roughly at the scale of the inputs however wide the layer is.
# The default dtype is float32, the usual precision for training.

# %%
np.random.seed(0)
linear = L.Linear(5)
print("before the first call W is", linear.W.data)
out = linear(np.random.randn(100, 400).astype(np.float32))
print("W:", linear.W.shape, linear.W.dtype, " b:", linear.b.shape, " out:", out.shape)
print(f"input std 1.00 -> output std {out.data.std():.2f}")

# %% [markdown]
# ## Layers inside layers
#
# Assigning a Layer to an attribute registers it too, and `params()` walks into
# it. So a network is just a Layer whose attributes are layers. Step 44's network
# becomes:

# %%
np.random.seed(0)
x = np.random.rand(100, 1)
y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)


class TwoLayerNet(L.Layer):
    def __init__(self, hidden, out):
        super().__init__()
        self.l1 = L.Linear(hidden, dtype=np.float64)
        self.l2 = L.Linear(out, dtype=np.float64)

    def forward(self, x):
        return self.l2(F.sigmoid(self.l1(x)))


np.random.seed(1)
net = TwoLayerNet(10, 1)
net(x)  # the first call creates the weights
net.l1.W.data *= 5.0  # wide first-layer weights, as in step 44
print("parameters:", [(q.name, q.shape) for q in net.params()])

lr = 0.3
losses = []
for _ in range(4000):
    loss = F.mean_squared_error(y, net(x))
    net.cleargrads()
    loss.backward()
    for q in net.params():
        q.data -= lr * q.grad.data
    losses.append(float(loss.data))
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
plot_curves({"training loss (MSE)": losses}, xlabel="iteration", logy=True,
            to_file=out_dir / "loss.png")

# %% [markdown]
# The loop no longer names a single parameter: `cleargrads()` and `params()`
# find them all, whatever the network looks like. Step 46 adds a `Model` class
# and ready-made networks; step 47 moves the update rule into optimizers.
#
# ## Exercise
# Give `Scale` a bias: write `ScaleShift(size)` with Parameters `w` (ones) and
# `c` (zeros) computing `x * w + c`. It must register exactly two parameters.

# %%
class ScaleShift(L.Layer):
    def __init__(self, size):  # solution:
        super().__init__()
        self.w = Parameter(np.ones(size), name="w")
        self.c = Parameter(np.zeros(size), name="c")

    def forward(self, x):
        return x * self.w + self.c


ss = ScaleShift(4)
assert len(list(ss.params())) == 2
F.sum(ss(np.ones((3, 4)))).backward()
assert np.allclose(ss.c.grad.data, 3.0) and np.allclose(ss.w.grad.data, 3.0)
print("self-check passed")
