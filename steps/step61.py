# %% [markdown]
# # Step 61: RNN and truncated backprop through time
#
# The networks so far map one input to one output. Time series, text and
# audio are *sequences*: what comes next depends on what came before. A
# **recurrent** neural network (RNN) reads a sequence one element at a time
# and carries a **hidden state** $h$ from step to step:
#
# $$h_t = \tanh(x_t W_x + b + h_{t-1} W_h).$$
#
# The same weights are used at every step; $h_t$ is the network's memory of
# everything it has read. `dezero_like.layers_conv.RNN` is this formula as a
# layer that *keeps* `h` between calls: call it once per time step, and call
# `reset_state()` before a new sequence.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Variable.unchain`, `Variable.unchain_backward`; `layers` gains
# `Layer.reset_state`; `layers_conv` gains `RNN`; `datasets_seq` gains `get_sin_curve`,
# `SinCurve`; `dataloaders` changes `DataLoader._epoch` and `DataLoader.__next__` (they note
# the batch they hand out).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Two new methods of `Variable`. `unchain` drops the link to the creator, so backward stops at this
# variable. `unchain_backward` walks the graph behind it, function by function (`seen` visits each
# once), and unchains every variable it meets, outputs included; once nothing refers to the old
# functions, Python can free them and the arrays they keep.
#
# This is not PyTorch's `h.detach()`, which makes a new, cut-off variable and leaves the graph as
# it is. `unchain_backward` cuts the graph itself, so it belongs **after** `loss.backward()`: cut
# before, and the backward stops at the cut, leaving the recurrent weights without gradients.
# That mistake would be silent (the loss would simply stop improving), so the variable cut is
# remembered in `_cut`, a set that holds it only weakly, and a `backward()` on it warns.

# %%
#| export dezero_like/core.py
import weakref

_cut = weakref.WeakSet()  # variables whose graph unchain_backward() cut (backward warns)


# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _cut


def unchain(self):
    """Cut this variable from its creator: it becomes a leaf."""
    self.creator = None


def unchain_backward(self):
    """Cut every link of the graph behind this variable.

    Used by truncated backprop through time: after the cut, backward stops
    here and the old graph can be freed. The graph itself is cut (unlike
    PyTorch's ``detach``), so call it after ``backward()``, not before.
    """
    funcs = [self.creator] if self.creator is not None else []
    self.unchain()
    if funcs:
        _cut.add(self)
    seen = set()
    while funcs:
        f = funcs.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for ref in f.outputs:  # the real outputs (a layer's state, say); the
            y = ref()  # inputs below may be data-less stand-ins of them
            if y is not None:
                y.unchain()
        for x in f.inputs:
            if x.creator is not None:
                funcs.append(x.creator)
                x.unchain()


# %% [markdown]
# `datasets` gains a `__getattr__` that finds `SinCurve` in the new module `datasets_seq`.

# %%
#| export dezero_like/datasets.py
from dezero_like.utils import forward_names


# SinCurve: written in dezero_like/datasets_seq.py (step 61), found here too, as in the book
__getattr__ = forward_names(__name__, {
    "SinCurve": "dezero_like.datasets_seq",
})


# %% [markdown]
# The `RNN` layer holds two `Linear` layers, registered by assignment, and one plain attribute `h`,
# the hidden state, which is not a Parameter. Each call computes the next state from the input and
# the previous state and stores it, so the layer is called once per time step; on the first step
# there is no previous state and `h2h` is skipped. `reset_state` starts a new sequence.
#
# The kept state has one row per sequence of the batch. An input with another number of rows
# would broadcast against it without any error: a state of 30 rows and one new sequence give 30
# outputs. `_check_batch` refuses that and says to call `reset_state()` (after training on batches
# of 30, before predicting one sequence; or before a last, smaller batch). It also refuses what is
# not one time step of a batch, shape `(N, in_size)`: a whole sequence `(N, T, in_size)` is fed
# one step at a time, `x[:, t]`.
#
# When the batch size does not change (trained on one sequence, batch 1, and tested on one),
# a forgotten `reset_state()` gives no error: the first predictions start from the state at the
# end of the training sequence. That state was computed with a graph (it requires grad), while
# the prediction runs under `no_grad()`, so `_check_batch` warns once when a kept state that
# requires grad meets a call under `no_grad()` (the states made from then on do not require it).
#
# Two more slips keep the batch size and give no error either. A `DataLoader` shuffles a
# training set, so the rows of its next batch are not the next time steps of the rows the state
# was made from: the state links unrelated points (step 62's `SeqDataLoader` keeps each row in
# time order). And a loop that forgets `reset_state()` between epochs carries the state from the
# end of the series into its start. The loaders note the batch they handed out last (below), and
# `_check_batch` warns when a kept state meets that very batch and it came shuffled, or opened an
# epoch. They note it by a weak reference (`weakref.ref`), which does not keep the batch alive:
# once a loop is done, its last batch, perhaps a GPU array, is freed as before.

# %%
#| export dezero_like/dataloaders.py
import weakref


def _no_batch():
    return None


class _Handed:
    """The input of the batch a loader handed out last, and how: shuffled, or the first of an
    epoch. A recurrent layer that carries its state into that batch can tell (step 61).
    ``x`` is a weak reference, called to get the array: a batch outlives its loop no longer
    for being noted here (on a GPU it holds device memory)."""

    __slots__ = ("x", "shuffled", "first", "loader")

    def __init__(self):
        self.x = _no_batch


_handed = _Handed()


def _hand_out(loader, batch, first):
    """Note ``batch`` (x, t) as the one ``loader`` hands out now; return it."""
    try:
        x = weakref.ref(batch[0])
    except TypeError:  # an array type that takes no weak references: its batches go unwatched
        x = _no_batch
    _handed.x, _handed.shuffled, _handed.first = x, loader.shuffle, first
    _handed.loader = type(loader).__name__
    return batch


# %%
#| export dezero_like/dataloaders.py DataLoader
from dezero_like.dataloaders import _refuse_resized


def _epoch(self, index):
    for i in range(self.max_iter):
        self._stale = True
        yield _hand_out(self, self._collate(self._batch_index(i, index)), i == 0)
    self.reset()  # the epoch is complete: the next order, drawn when the book draws it
    self._stale = False


def __next__(self):
    # the book's way, next(loader): the loader itself keeps the place
    if self.iteration >= self.max_iter:
        self.reset()
        raise StopIteration
    if self.iteration == 0 and len(self.dataset) != self.data_size:  # a new epoch: resized?
        _refuse_resized(self)
    batch = _hand_out(self, self._collate(self._batch_index()), self.iteration == 0)
    self.iteration += 1
    return batch


# %%
#| export dezero_like/layers_conv.py
import sys
import warnings

from dezero_like.core import Config, _outside_package, as_variable
from dezero_like.dataloaders import _handed


def _warn_training_state(layer):
    """Warn that ``layer`` goes on, under ``no_grad()``, from a state kept from training."""
    _, level = _outside_package(sys._getframe(2))  # 1 is _check_batch
    warnings.warn(
        f"{layer} starts from the state it kept from training (made with a graph), but runs "
        "under no_grad(), an evaluation: its first outputs depend on the end of the training "
        "sequence, not on this one alone. Call model.reset_state() before a new sequence. "
        "(Going on from the training state on purpose? warnings.filterwarnings('ignore', "
        "'.* starts from the state it kept from training'))", stacklevel=level + 3)


def _check_batch(layer, x, h, x2h=None):
    """Refuse an input that is not one time step ``(N, in_size)`` (of the ``in_size`` of the
    input layer ``x2h``, once known), or whose batch size differs from that of the state ``h``;
    warn when a state kept from training (it requires grad) meets a call under ``no_grad()``."""
    if isinstance(x, (list, tuple)):
        x = as_variable(x)  # refuses a list, saying how to make an array of it
    shape = tuple(getattr(x, "shape", ()))
    if len(shape) != 2:
        raise ValueError(
            f"{layer} takes one time step of a batch, shape (N, in_size), got shape {shape}; "
            "feed a sequence (N, T, in_size) one step at a time (x[:, t]), and a single value "
            "as x.reshape(1, 1)")
    if x2h is not None and x2h.in_size is not None and shape[1] != x2h.in_size:
        swapped = x2h.out_size == shape[1]  # LSTM(1, 20) fed 1 feature: PyTorch's order
        raise ValueError(
            f"{layer} was made for inputs of {x2h.in_size} features (its in_size, or its first "
            f"input's width), got {shape[1]}" + (
                f". The arguments here are {layer}(hidden_size, in_size=...), not PyTorch's "
                f"(input_size, hidden_size): write {layer}({x2h.in_size}, in_size={shape[1]})"
                if swapped else ""))
    if h is not None and len(x) != len(h):
        raise ValueError(
            f"{layer}: the input has a batch of {len(x)} but the kept state has {len(h)} "
            "rows; call reset_state() when the batch size changes (a new set of sequences, "
            "a last smaller batch, or one sequence to predict after training on batches)")
    if h is not None and not Config.enable_backprop and h.requires_grad:
        _warn_training_state(layer)  # once: the states made under no_grad do not require grad
    if h is not None and x is _handed.x() and (_handed.shuffled or _handed.first):
        _warn_loader_order(layer)  # the batch a loader just handed out: shuffled, or an epoch's 1st


def _warn_loader_order(layer):
    """Warn that ``layer`` carries its state into a batch that does not follow the last one."""
    _, level = _outside_package(sys._getframe(2))  # 1 is _check_batch
    loader = _handed.loader
    if _handed.shuffled:
        what = (f"a batch that a shuffling {loader} just handed out: its rows are not the next "
                "time steps of the rows the state was made from, so the state links unrelated "
                "points. For a time series use SeqDataLoader(dataset, batch_size), which keeps "
                "each row in time order; if every example stands alone, call "
                "model.reset_state() before each batch")
    else:
        what = (f"the first batch of a new epoch of {loader}: the series starts again, but the "
                "state is the one from its end. Call model.reset_state() at the start of each "
                "epoch, before the loop over the loader")
    warnings.warn(f"{layer} carries its state into {what}", stacklevel=level + 3)


# %% [markdown]
# A model made of layers that keep a state (a `Sequential` holding an LSTM, say) is reset as a
# whole: `Layer.reset_state` asks each sub-layer to reset, and a layer with a state of its own,
# such as `RNN` below, replaces it with one that forgets that state. It reaches the sub-layers
# that `params()` reaches, those assigned to attributes; layers kept in a plain list
# (`self.rnns = [RNN(10), RNN(10)]`, PyTorch's `ModuleList` habit) would keep the state of the
# last sequence, and a new batch size would then be refused with "call reset_state()", which
# was called. So a call from your code warns about such a list (step 47's check, which
# `setup` runs too), naming the attribute; the calls it makes to the sub-layers do not check
# again.

# %%
#| export dezero_like/layers.py Layer
import sys

from dezero_like.core import _outside_package
from dezero_like.optimizers import _warn_unregistered


def reset_state(self):
    """Forget the kept state of every sub-layer that has one (an RNN's h, an LSTM's h, c)."""
    for name in self._names():
        obj = self.__dict__[name]
        if isinstance(obj, Layer):
            obj.reset_state()
    if _outside_package(sys._getframe(1))[1] == 0:  # the user's call, not a sub-layer's
        _warn_unregistered(self, "reset_state() does not reach them either (a recurrent layer "
                           "among them carries the last sequence's state into the next)")


# %%
#| export dezero_like/layers_conv.py
import dezero_like.functions as F
from dezero_like.layers import Layer, Linear


class RNN(Layer):
    r"""Elman recurrent layer: $h_t = \tanh(x_t W_x + b + h_{t-1} W_h)$.

    The layer *remembers* ``h`` between calls: call it once per time step.
    ``reset_state()`` forgets it (start of a new sequence). The first step has
    no ``h_{t-1}`` term. ``in_size`` is inferred on the first call when omitted.
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        self.x2h = Linear(hidden_size, in_size=in_size)
        self.h2h = Linear(hidden_size, in_size=hidden_size, nobias=True)
        self.h = None

    def reset_state(self):
        """Forget the hidden state: the next call starts a new sequence."""
        self.h = None

    def forward(self, x):
        _check_batch("RNN", x, self.h, self.x2h)
        if self.h is None:
            h_new = F.tanh(self.x2h(x))
        else:
            h_new = F.tanh(self.x2h(x) + self.h2h(self.h))
        self.h = h_new
        return h_new


# %% [markdown]
# `get_sin_curve` returns pairs `(x[i], x[i+1])`: the target is the next value of the series,
# obtained by slicing one array twice. The training curve is a noisy sine drawn from its own
# generator; the test curve is a clean cosine. Its arguments are checked first, so that
# `num_data=100.0` or `"100"` is refused with their name, not with an error from inside NumPy, and
# `train="False"` (a true string) by step 50's `_flag`, as in `get_spiral`.

# %%
#| export dezero_like/datasets_seq.py
"""Time series: a noisy sine data set and a loader that keeps time in order.

A recurrent network reads a series one step at a time and carries a hidden
state from step to step, so its mini-batches must not be shuffled the way
image batches are. :class:`SeqDataLoader` cuts the series into ``batch_size``
equally long streams and returns, at each call, the *next* time step of every
stream: row ``i`` of batch ``k+1`` follows row ``i`` of batch ``k`` in time.
"""

import numbers

import numpy as np
from dezero_like.datasets import _flag


def get_sin_curve(train=True, num_data=1000, periods=2, noise=0.05, seed=None):
    """A sine wave sampled ``num_data`` times over ``periods`` periods, as a next-value task.

    The training curve is ``sin(t)`` plus uniform noise in ``[-noise, noise]``
    (seed 2019 unless ``seed`` is given; the global NumPy random state is not
    touched). The test curve is the clean ``cos(t)``: the same shape, shifted,
    which the model has never seen. Returns ``x`` (num_data-1, 1) and ``t``
    (num_data-1, 1) float32 with ``t[i] = x[i+1]``: predict the next value.
    """
    if isinstance(num_data, bool) or not isinstance(num_data, (int, np.integer)):
        raise TypeError(f"num_data must be an int (a number of samples), got {num_data!r} "
                        f"({type(num_data).__name__})")
    if num_data < 2:
        raise ValueError(f"num_data must be at least 2, got {num_data}")
    for name, value in (("periods", periods), ("noise", noise)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    s = np.linspace(0, 2 * np.pi * periods, num_data)
    if _flag("train", train):  # train="False" would be true
        rng = np.random.default_rng(2019 if seed is None else seed)
        y = np.sin(s) + rng.uniform(-noise, noise, size=num_data)
    else:
        y = np.cos(s)
    y = y.astype(np.float32).reshape(-1, 1)
    return y[:-1], y[1:]


# %% [markdown]
# `SinCurve` is `get_sin_curve` as a Dataset, built like `Spiral`: attributes first, then the base
# constructor, which calls `prepare`.

# %%
#| export dezero_like/datasets_seq.py
from dezero_like.datasets import Dataset


class SinCurve(Dataset):
    """The noisy sine of :func:`get_sin_curve` as a :class:`~dezero_like.datasets.Dataset`.

    ``ds[i]`` is ``(value at time i, value at time i+1)``, each of shape (1,).
    """

    def __init__(self, train=True, transform=None, target_transform=None, num_data=1000,
                 periods=2, noise=0.05, seed=None):
        self.num_data = num_data
        self.periods = periods
        self.noise = noise
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        self.data, self.label = get_sin_curve(self.train, self.num_data, self.periods,
                                              self.noise, self.seed)


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like import optimizers
from dezero_like.datasets_seq import SinCurve, get_sin_curve
from dezero_like.models import Model
from dezero_like.plot import output_dir, plot_curves, save_figure

out_dir = output_dir(61)  # every file this step writes goes here

np.random.seed(0)

# %% [markdown]
# ## The state, and the graph behind it
#
# Feed the layer three steps. Each call reads the previous `h`, so the graph
# of the newest output reaches back through *every* earlier step. The helper
# below counts the functions behind a variable by following `creator` links
# (the same walk backward does):

# %%
def graph_size(v):
    """Number of functions in the graph behind variable ``v``."""
    seen, todo = set(), [v.creator] if v.creator is not None else []
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        todo.extend(x.creator for x in f.inputs if x.creator is not None)
    return len(seen)


rnn = Lc.RNN(hidden_size=3, in_size=1)
x = np.ones((1, 1), np.float32)
for t in range(1, 6):
    h = rnn(x)
    if t == 3:
        h3 = h  # drawn below
    print(f"step {t}: h = {np.round(h.data[0], 3)}, functions behind h: {graph_size(h)}")

# %% [markdown]
# The graph behind `h` after three steps, drawn (grey: the inputs `x`). The same
# `W` and `b` of the input `Linear` feed every step, and the hidden-to-hidden `W`
# every step after the first: one set of weights, used again and again. The chain
# down the middle is what backward walks through.

# %%
from dezero_like.graph import plot_dot_graph  # noqa: E402
from dezero_like.plot import written  # noqa: E402

written(plot_dot_graph(h3, verbose=False, to_file=out_dir / "three_steps.svg"))

# %% [markdown]
# The graph grows by a fixed amount per step (two `linear`s, an addition, a
# `tanh`). Backpropagating through all of it is **backprop through time**
# (BPTT): the RNN unrolled over time is just a very deep network that shares
# its weights between layers.
#
# ## Truncated BPTT
#
# A sequence of a million steps would mean a graph of millions of functions,
# kept in memory until the end. The practical answer is to **truncate**:
# every `bptt_length` steps, backpropagate the loss gathered so far, update
# the weights, and then **cut the graph** behind the current state with
# `unchain_backward()`. The state keeps its *value*, so the network still
# remembers the past in the forward direction, but gradients no longer flow
# back beyond the cut.

# %%
h.unchain_backward()
print("after unchain_backward: functions behind h:", graph_size(h), " value kept:",
      np.round(h.data[0], 3))
h = rnn(x)
print("one step later:", graph_size(h), "functions")
written(plot_dot_graph(h, verbose=False, to_file=out_dir / "after_the_cut.svg"))

# %% [markdown]
# ## The noisy sine
#
# The task: given the value of a noisy sine wave at time $t$, predict the
# value at time $t+1$. A single input value is ambiguous (the wave passes
# 0.5 going up *and* going down), so the network must use its memory of the
# previous values. `SinCurve` holds 999 (value, next value) pairs; the test
# curve is a clean cosine the model never sees during training.

# %%
train_set = SinCurve(train=True)
print(train_set)
for i in range(3):
    value, next_value = train_set[i]
    print(f"  value {value[0]:+.3f} -> next value {next_value[0]:+.3f}")
plt.plot(train_set.data[:, 0], lw=0.8, label="training data (noisy sine)")
plt.plot(get_sin_curve(train=False)[0][:, 0], lw=0.8, label="test data (cosine)")
plt.legend()
save_figure(plt.gcf(), out_dir / "data.png")
plt.show()

# %% [markdown]
# The model: an RNN with 10 hidden units, then a `Linear` layer that reads the
# prediction off the state. The training loop reads the series in order, one
# step at a time, and applies the truncation every 30 steps:

# %%
class SimpleRNN(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = Lc.RNN(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


model = SimpleRNN(10, 1)
optimizer = optimizers.Adam(0.001).setup(model)
bptt_length = 30
epoch_losses = []
largest_graph = 0
for epoch in range(10):
    model.reset_state()  # a new pass over the sequence starts from an empty memory
    loss, count, total = 0, 0, 0.0
    for x, t in zip(train_set.data, train_set.label):
        y = model(x.reshape(1, 1))
        loss = loss + F.mean_squared_error(y, t.reshape(1, 1))
        count += 1
        if count % bptt_length == 0 or count == len(train_set):
            largest_graph = max(largest_graph, graph_size(loss))
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()  # cut: the next window starts a fresh graph
            optimizer.update()
            total += float(loss.data)
            loss = 0
    epoch_losses.append(total / count)
    if epoch % 3 == 0 or epoch == 9:
        print(f"epoch {epoch + 1:2d}: mean squared error per step {epoch_losses[-1]:.4f}")
print(f"largest graph backpropagated: {largest_graph} functions (30 steps, not the whole series)")
fig = plot_curves({"mean squared error per step": epoch_losses}, to_file=out_dir / "loss.png")

# %% [markdown]
# ## Predicting the unseen cosine
#
# At test time no graph is needed (`no_grad`). The model reads the clean
# cosine one value at a time and predicts the next:

# %%
xs, ts = get_sin_curve(train=False)
model.reset_state()
with dz.no_grad():
    preds = np.array([model(x.reshape(1, 1)).data.item() for x in xs])
test_mse = float(np.mean((preds - ts[:, 0]) ** 2))
print(f"test mean squared error: {test_mse:.4f}")
plt.figure()  # a new figure: run as a script, the loss curve's is still the current one
plt.plot(ts[:, 0], label="next value (truth)")
plt.plot(preds, "--", label="RNN prediction")
plt.legend()
save_figure(plt.gcf(), out_dir / "prediction.png")
plt.show()

# %% [markdown]
# ## Exercise
# 1. Truncation is a trade-off: a shorter window is cheaper but lets gradients
#    reach fewer steps back. With 999 steps per epoch, how many times per epoch
#    does the loop above call `backward()` when `bptt_length` is 50? (The last,
#    shorter window counts too.) Set `n_backward`.
# 2. **Implement then test: one step of a GRU.** The gated recurrent unit
#    (GRU) is the RNN with two **gates**, vectors of numbers between 0 and 1
#    that decide how much of the old state to read and how much to keep.
#    PyTorch's `nn.GRUCell` computes, for an input $x$ and the previous state
#    $h$ (rows are samples, as in `Linear`; $\sigma$ is the sigmoid,
#    $\odot$ the elementwise product):
#
#    $$\begin{aligned}
#    r &= \sigma(x W_{xr} + b_{xr} + h W_{hr} + b_{hr}) && \text{reset gate}\\
#    z &= \sigma(x W_{xz} + b_{xz} + h W_{hz} + b_{hz}) && \text{update gate}\\
#    n &= \tanh\big(x W_{xn} + b_{xn} + r \odot (h W_{hn} + b_{hn})\big) && \text{candidate}\\
#    h' &= (1 - z) \odot n + z \odot h.
#    \end{aligned}$$
#
#    Note where $r$ acts: on the whole hidden-to-hidden term of the candidate,
#    its bias $b_{hn}$ included, not on $h$ before the product. Write
#    `gru_step(cell, x, h)` that returns $h'$, with the `F` functions of the
#    package and the six `Linear` layers (each with its bias) that `cell`
#    holds: `cell.x2r`, `cell.x2z`, `cell.x2n` read the input, `cell.h2r`,
#    `cell.h2z`, `cell.h2n` read the state. Unlike `Lc.RNN`, this step keeps
#    no state: `h` comes in, $h'$ goes out. The self-check runs three steps
#    and compares each state with the same equations evaluated in NumPy from
#    the same weights (stacked in PyTorch's layout: the rows of its
#    `weight_ih` are $W_{xr}$, $W_{xz}$, $W_{xn}$ transposed), then checks
#    your gradients with respect to `x` and `h` with `gradient_check`.

# %%
#| exercise
n_backward = ...  # calls to backward() per epoch of 999 steps with bptt_length = 50

# %%
#| solution
n_backward = 20  # ceil(999 / 50): 19 full windows and one of 49 steps

# %%
#| check
expected = -(-len(train_set) // 50)
assert n_backward == expected, (
    f"n_backward = {n_backward}: count the full windows of 50 steps in {len(train_set)}, "
    "plus the last, partial one"
)
print(f"self-check passed: {n_backward} backward calls per epoch")

# %%
#| exercise
def gru_step(cell, x, h):
    raise NotImplementedError(
        "Exercise (step 61): the reset and update gates, the candidate, then the new state"
    )

# %%
#| solution
def gru_step(cell, x, h):
    r = F.sigmoid(cell.x2r(x) + cell.h2r(h))
    z = F.sigmoid(cell.x2z(x) + cell.h2z(h))
    n = F.tanh(cell.x2n(x) + r * cell.h2n(h))
    return (1 - z) * n + z * h

# %%
#| check
from dezero_like.utils import gradient_check  # noqa: E402

np.random.seed(2)
gru = L.Layer()  # a GRU cell: hidden size 4, input size 3
for g in "rzn":
    setattr(gru, f"x2{g}", L.Linear(4, in_size=3))
    setattr(gru, f"h2{g}", L.Linear(4, in_size=4))
for g in ("x2r", "x2z", "x2n", "h2r", "h2z", "h2n"):
    getattr(gru, g).b.data[...] = np.random.randn(4)  # non-zero biases: b_hn's place matters
# the same weights as PyTorch's GRUCell stacks them (gates r, z, n), transposed
W_ih = np.concatenate([getattr(gru, f"x2{g}").W.data for g in "rzn"], axis=1)
W_hh = np.concatenate([getattr(gru, f"h2{g}").W.data for g in "rzn"], axis=1)
b_ih = np.concatenate([getattr(gru, f"x2{g}").b.data for g in "rzn"])
b_hh = np.concatenate([getattr(gru, f"h2{g}").b.data for g in "rzn"])


def gru_numpy(x, h):
    gi, gh = np.split(x @ W_ih + b_ih, 3, axis=1), np.split(h @ W_hh + b_hh, 3, axis=1)
    r, z = (1 / (1 + np.exp(-(gi[k] + gh[k]))) for k in (0, 1))
    return (1 - z) * np.tanh(gi[2] + r * gh[2]) + z * h


rng = np.random.default_rng(0)
xs = rng.normal(size=(3, 2, 3)).astype(np.float32)  # 3 time steps, batch 2, 3 features
h_mine = h_ref = rng.normal(size=(2, 4)).astype(np.float32)
for k, x_t in enumerate(xs):
    h_mine, h_ref = gru_step(gru, x_t, h_mine), gru_numpy(x_t, h_ref)
    assert isinstance(h_mine, dz.Variable) and h_mine.shape == (2, 4), (
        f"step {k + 1}: gru_step returned {type(h_mine).__name__} of shape "
        f"{np.shape(h_mine)}; expected a Variable of shape (2, 4), computed with the layers "
        "and the F functions so that backward reaches x and h"
    )
    assert np.allclose(h_mine.data, h_ref, atol=1e-5), (
        f"step {k + 1}: your new state differs from the GRU equations: the gates r and z use "
        "the sigmoid, the candidate the tanh; r scales the whole output of h2n, bias included; "
        "z weighs the old state, 1 - z the candidate"
    )
    h_mine = h_ref  # each step starts from the same state
gradient_check(lambda v: gru_step(gru, v, h_ref), xs[0])
gradient_check(lambda v: gru_step(gru, xs[0], v), h_ref)
print("self-check passed: gru_step follows the GRU equations over three steps, gradients checked")


# %% [markdown]
# ## Open experiment: how far back does the gradient reach?
#
# *What happens if the recurrent weights $W_h$ are scaled down, or up?*
# Backprop through time multiplies the gradient by $W_h$ (and by the tanh's
# slope) once per step it goes back. Below, an RNN with 10 hidden units reads
# 40 random inputs; we backpropagate from the sum of the last state and look at
# the size of the gradient that reaches each input, $|\partial (\sum_i h_{40,i}) /
# \partial x_{40-k}|$, $k$ steps back, with $W_h$ multiplied by 0.5, 1, 2 and 4.
# Before you run it: which columns do you expect to shrink, and how fast?

# %%
def gradient_reach(scale, steps=40, seed=0):
    """|d sum(h_T) / d x_t| for t = T, T-1, ..., 1, with W_h scaled by ``scale``."""
    np.random.seed(seed)
    layer = Lc.RNN(hidden_size=10, in_size=1)
    layer.h2h.W.data *= scale
    gen = np.random.default_rng(seed)
    inputs = [dz.Variable(gen.normal(size=(1, 1)).astype(np.float32)) for _ in range(steps)]
    for x_t in inputs:
        h_t = layer(x_t)
    F.sum(h_t).backward()
    return [float(np.abs(x_t.grad.data).sum()) for x_t in inputs[::-1]]


scales = (0.5, 1.0, 2.0, 4.0)
reach = {s: gradient_reach(s) for s in scales}
print("steps back" + "".join(f"{f'W_h x {s:g}':>12}" for s in scales))
for k in (0, 1, 2, 5, 10, 20, 39):
    print(f"{k:>10}" + "".join(f"{reach[s][k]:>12.2e}" for s in scales))
print(f"W_h x 4: the gradient 39 steps back is {reach[4.0][39] / reach[4.0][1]:.0f} times "
      "the one 1 step back")
plt.figure()  # a new figure: run as a script, the prediction's is still the current one
for s in scales:
    plt.semilogy(reach[s], label=f"$W_h$ x {s:g}")
plt.xlabel("steps back")
plt.ylabel("gradient reaching the input")
plt.legend()
save_figure(plt.gcf(), out_dir / "gradient_reach.png")
plt.show()

# %% [markdown]
# With small recurrent weights the gradient fades geometrically: halving
# $W_h$ leaves almost nothing 10 steps back, so truncating at 30 steps loses
# nothing that the network could have learned anyway. With large weights it
# no longer fades: it stays large or grows, unevenly because tanh saturates
# (with $W_h$ times 4, the gradient 39 steps back is tens of times the one 1
# step back, the ratio printed under the table: exploding gradients), which
# is why long windows are often paired with gradient clipping (`ClipGrad`,
# step 47). Try other seeds, longer sequences, or inputs ten times larger
# (the tanh saturates, its slope tends to 0, and the gradient fades again).
