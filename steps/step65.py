# %% [markdown]
# # Step 65: Function hooks
#
# How long does the backward of `Linear` take? Which function is called with
# a float64 array in a float32 model? Where does the first NaN appear? To
# answer such questions without editing every function, frameworks offer
# **hooks**: objects whose methods the engine calls around each function.
# Chainer calls them *function hooks*; PyTorch has hooks on modules and on
# tensors, and its profiler is built on the same idea.
#
# `dezero_like.hooks.FunctionHook` has four methods, which do nothing unless a
# subclass overrides them:
#
# | method | called | receives |
# | --- | --- | --- |
# | `forward_preprocess(f, in_data)` | before `f.forward` | input arrays |
# | `forward_postprocess(f, in_data, out_data)` | after `f.forward` | inputs, outputs |
# | `backward_preprocess(f, grad_outputs)` | before `f.backward` | output gradients |
# | `backward_postprocess(f, grad_outputs, grad_inputs)` | after it | and input gradients |
#
# The calls live in two places of `core.py`: `Function.__call__` (forward) and
# the backward loop. When no hook is active the cost is one check of an empty
# list per function.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import FunctionHook, PrintHook, TimerHook
from dezero_like.models import MLP

# %% [markdown]
# ## A hook that records
#
# Our first hook writes down every function it sees. We run it on a graph
# whose shape we know: `exp` feeds both `square` and `sin`, whose results are
# added and summed.

# %%
class CallRecorder(FunctionHook):
    """Remembers (pass, function) for every forward and backward it sees."""

    def __init__(self):
        self.calls = []

    def forward_preprocess(self, function, in_data):
        self.calls.append(("forward", function))

    def backward_preprocess(self, function, grad_outputs):
        self.calls.append(("backward", function))


def known_graph(x):
    a = F.exp(x)
    b = F.square(a)
    c = F.sin(a)
    return F.sum(b + c)


x = dz.Variable(np.array([0.1, 0.2]))
forward_rec = CallRecorder()
with forward_rec:
    y = known_graph(x)
for phase, f in forward_rec.calls:
    print(f"{phase:8} {type(f).__name__:7} generation {f.generation}")

# %% [markdown]
# Forward hooks fire in the order the program calls the functions. Backward
# hooks fire in the order backprop visits them: newest generation first, and
# each function exactly once, after all gradients of its outputs have arrived
# (step 17). `Square` and `Sin` have the same generation; they run in the order
# their gradients arrived.

# %%
backward_rec = CallRecorder()
with backward_rec:
    y.backward()
for phase, f in backward_rec.calls:
    if phase == "backward":
        print(f"{phase:8} {type(f).__name__:7} generation {f.generation}")

# %% [markdown]
# Why did we print only the backward entries? Because a backward is itself
# computed with functions (`Sin`'s backward is `gy * cos(x)`), so forward hooks
# also fire *during* backward. `PrintHook`, shipped with the package, shows
# them indented under the backward they belong to:

# %%
x = dz.Variable(np.array([[1.0, 2.0]], dtype=np.float32))
with PrintHook():
    y = F.sum(F.sin(x))
    y.backward()

# %% [markdown]
# One more kind of call can appear between backward steps: when a variable
# feeds two functions (like `a` in `known_graph`), the core adds the two
# gradients it receives, and that `Add` is a forward call outside any backward.

# %% [markdown]
# ## Switching hooks on
#
# * `with hook:` adds the hook to a global list for the duration of the block
#   and removes it afterwards, even after an exception. Blocks nest; the outer
#   hook runs first.
# * `f.add_hook(hook)` attaches a hook to one function object only.

# %%
only_exp = CallRecorder()
f = F.Exp().add_hook(only_exp)
x = dz.Variable(np.array([1.0]))
y = F.sin(f(x))
y.backward()
print("the per-function hook saw:", [(p, type(g).__name__) for p, g in only_exp.calls])

# %% [markdown]
# ## Timing a training step
#
# `TimerHook` adds up the time of each function type, forward and backward
# separately. Forward calls made inside a backward count as that backward's
# time, so nothing is counted twice. Here it profiles one training step of a
# small MLP:

# %%
rng = np.random.default_rng(0)
model = MLP((100, 100, 1))
xb = rng.standard_normal((256, 64)).astype(np.float32)
tb = rng.standard_normal((256, 1)).astype(np.float32)
model(xb)  # first call creates the weights; not part of the measurement

with TimerHook() as timer:
    loss = F.mean_squared_error(model(xb), tb)
    model.cleargrads()
    loss.backward()
timer.print_report()
summary = timer.summary()
print("Linear forward calls:", summary["Linear"]["forward"]["calls"],
      " backward calls:", summary["Linear"]["backward"]["calls"])

# %% [markdown]
# ## Exercise
# Write `DtypeCheckHook`, a hook that raises `TypeError` in
# `forward_preprocess` when a function receives a float64 array (a common bug
# in a float32 model: a NumPy constant that silently promoted). The
# self-check feeds it a float64 input.

# %%
class DtypeCheckHook(FunctionHook):
    # solution:
    def forward_preprocess(self, function, in_data):
        for i, a in enumerate(in_data):
            if a.dtype == np.float64:
                raise TypeError(f"{type(function).__name__} got float64 in input {i}")


with DtypeCheckHook():
    F.exp(dz.Variable(np.ones(2, dtype=np.float32)))  # fine
    try:
        F.exp(dz.Variable(np.ones(2)))
        raise AssertionError("the float64 input was not caught")
    except TypeError as e:
        assert "Exp" in str(e)
print("self-check passed")
