# %% [markdown]
# # Step 62: LSTM and a time-series DataLoader
#
# The plain RNN of step 61 has a weakness. Its state is rewritten at every
# step by $h_t = \tanh(x_t W_x + h_{t-1} W_h + b)$, so the gradient that
# flows from step $t$ back to step $t-k$ is multiplied $k$ times by $W_h$
# and by $\tanh'$ (at most 1). Over many steps it tends to vanish (or, with
# large weights, explode), and the network cannot learn long-range
# dependencies.
#
# The **LSTM** (long short-term memory; Hochreiter and Schmidhuber, 1997,
# "Long Short-Term Memory", introduced the cell with input and output gates,
# and Gers, Schmidhuber and Cummins, 2000, "Learning to Forget: Continual
# Prediction with LSTM", added the forget gate used here) adds a second
# state, the **cell** $c$, that is changed only by an elementwise product and
# a sum. Three **gates**, each a sigmoid between 0
# and 1, decide what happens to it:
#
# $$f = \sigma(x W_{xf} + h W_{hf} + b_f), \quad i = \sigma(x W_{xi} + h W_{hi} + b_i),$$
#
# $$o = \sigma(x W_{xo} + h W_{ho} + b_o), \quad u = \tanh(x W_{xu} + h W_{hu} + b_u),$$
#
# $$c_t = f \odot c_{t-1} + i \odot u, \qquad h_t = o \odot \tanh(c_t).$$
#
# The forget gate $f$ keeps or erases old memory, the input gate $i$ admits
# the new candidate $u$, the output gate $o$ decides how much of the cell is
# shown. Along the direct path through $c$, the gradient from $c_t$ to
# $c_{t-1}$ is just $f$ (elementwise; the gates also depend on $c_{t-1}$
# through $h_{t-1}$, which adds other paths): when the network learns to keep
# $f$ near 1, information and gradients travel many steps along it almost
# unchanged.

# %% [markdown]
# ### The package code of this step
#
# In this step `layers_conv` gains `LSTM`; `datasets_seq` gains `SeqDataLoader`, which
# `dataloaders` finds too.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `LSTM` holds eight `Linear` layers: four read the input and four the previous `h` (without bias,
# since the input side has one). Each gate is a sigmoid, a factor between 0 and 1; `u` is the
# candidate value. The cell state `c` changes only by `f * c + i * u`, so its gradient from one step
# to the previous is multiplied by `f`, with no derivative of a squashing function in between. On
# the first step there is no `h` and no `c`, and those terms are left out.

# %%
#| export dezero_like/layers_conv.py
import dezero_like.functions as F
from dezero_like.layers import Layer, Linear
from dezero_like.layers_conv import _check_batch


class LSTM(Layer):
    r"""Long short-term memory layer (one time step per call; state kept between calls).

    With $\sigma$ the sigmoid and $\odot$ the elementwise product:
    $f = \sigma(x W_{xf} + b_f + h W_{hf})$, $i = \sigma(\dots)$, $o = \sigma(\dots)$
    (gates), $u = \tanh(x W_{xu} + b_u + h W_{hu})$ (candidate), then
    $c_t = f \odot c_{t-1} + i \odot u$ and $h_t = o \odot \tanh(c_t)$. Each bias
    is that of an ``x2*`` layer (``b_f`` is ``x2f.b``); the ``h2*`` layers have none.
    The first call has no ``h`` and no ``c``: the ``h`` terms drop out and $c = i \odot u$.

    The cell state ``c`` is updated by a product and a sum only, so along ``c`` a
    gradient is scaled at each step by the forget gate ``f``, not by a squashing
    derivative: it reaches back as far as ``f`` stays near 1 (the forget gate's bias
    ``x2f.b`` sets where ``f`` starts; step 62 measures it).
    ``reset_state()`` clears ``h`` and ``c``.
    """

    def __init__(self, hidden_size, in_size=None):
        super().__init__()
        H, I = hidden_size, in_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self):
        """Forget ``h`` and ``c``: the next call starts a new sequence."""
        self.h = None
        self.c = None

    def forward(self, x):
        _check_batch("LSTM", x, self.h, self.x2f)  # the kept h and c have one row per sequence
        if self.h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(self.h))
            i = F.sigmoid(self.x2i(x) + self.h2i(self.h))
            o = F.sigmoid(self.x2o(x) + self.h2o(self.h))
            u = F.tanh(self.x2u(x) + self.h2u(self.h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new


# %% [markdown]
# `SeqDataLoader` changes only what `DataLoader` lets a subclass change: `reset` (no shuffling),
# `max_iter` (`jump` batches per epoch) and `_batch_index`. Batch `k` holds element `k` of each of
# the `batch_size` streams, so row `i` of the next batch is the next time step of row `i`, and the
# hidden state carried between calls matches.

# %%
#| export dezero_like/datasets_seq.py
import warnings

import numpy as np
from dezero_like.dataloaders import DataLoader


class SeqDataLoader(DataLoader):
    """Mini-batches for truncated BPTT: ``batch_size`` parallel streams, in time order.

    The data set (length ``L``) is cut into ``batch_size`` consecutive pieces
    of ``jump = L // batch_size`` steps. Batch ``k`` holds element ``k`` of every
    piece: indexes ``[k, jump + k, 2*jump + k, ...]``. One epoch has ``jump``
    batches, so each stream advances one time step per batch and the hidden
    state a model carries from batch to batch belongs to the same stream.
    With ``batch_size=1`` this is simply the series in order. Nothing is
    shuffled. The last ``L % batch_size`` steps belong to no stream and are not
    used; a warning says so when that is more than a tenth of the series.
    """

    def __init__(self, dataset, batch_size, gpu=False):
        super().__init__(dataset, batch_size, shuffle=False, gpu=gpu)
        self.jump = self.data_size // self.batch_size
        if self.jump < 1:
            raise ValueError(
                f"SeqDataLoader: batch_size {batch_size} is larger than the series "
                f"({self.data_size} steps); every stream needs at least one step"
            )
        dropped = self.data_size - self.jump * self.batch_size
        if dropped * 10 > self.data_size:
            warnings.warn(
                f"SeqDataLoader: {self.batch_size} streams of {self.jump} steps use "
                f"{self.data_size - dropped} of the {self.data_size} steps; the last {dropped} "
                "are never seen. Choose a batch_size that divides the series (or a smaller one)",
                stacklevel=2)
        self.max_iter = self.jump

    def reset(self):
        """Start again at time step 0 of every stream."""
        self.iteration = 0
        self.index = np.arange(self.data_size)

    def __len__(self):
        return self.max_iter

    def _batch_index(self, i=None, index=None):
        """Element ``i`` (default: ``iteration``) of every stream: ``[i, jump + i, ...]``."""
        return np.arange(self.batch_size) * self.jump + (self.iteration if i is None else i)

    def __repr__(self):
        return (f"SeqDataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"steps per stream={self.jump})")


# %% [markdown]
# `SeqDataLoader` is imported into the package's namespace, next to `DataLoader`, and
# `dataloaders` finds it too (`dezero_like.dataloaders.SeqDataLoader`, where the book keeps it).

# %%
#| export dezero_like/__init__.py
from dezero_like.datasets_seq import SeqDataLoader


# %%
#| export dezero_like/dataloaders.py
from dezero_like.utils import forward_names


# SeqDataLoader: written in dezero_like/datasets_seq.py (which imports this module), found
# here too, as in the book
__getattr__ = forward_names(__name__, {"SeqDataLoader": "dezero_like.datasets_seq"})


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.layers_conv as Lc
from dezero_like import optimizers
from dezero_like.datasets_seq import SeqDataLoader, SinCurve, get_sin_curve
from dezero_like.models import Model
from dezero_like.plot import output_dir, plot_curves, save_figure

out_dir = output_dir(62)  # every file this step writes goes here

np.random.seed(0)

# %% [markdown]
# The cell as a picture: the cell state runs along the top, touched only by
# one product ($\odot f$) and one sum ($+\, i \odot u$); the four gates below
# all read $x_t$ and $h_{t-1}$.

# %%
def node(ax, xy, text, color):
    ax.text(*xy, text, ha="center", va="center", fontsize=11,
            bbox={"boxstyle": "round,pad=0.3", "fc": color, "ec": "k"})


def arrow(ax, start, end):
    ax.annotate("", end, start, arrowprops={"arrowstyle": "->", "lw": 1.2,
                                             "shrinkA": 12, "shrinkB": 12})


fig, ax = plt.subplots(figsize=(9, 3.8))
pos = {"c_prev": (0, 3), "mul_f": (3, 3), "add": (5, 3), "c": (9, 3), "tanh_c": (7, 2),
       "mul_o": (7, 1), "h": (9, 0.2), "f": (3, 1), "i": (4.3, 1), "u": (5.6, 1),
       "o": (6.3, 0), "mul_iu": (5, 2), "in": (1.3, 0)}
node(ax, pos["c_prev"], "$c_{t-1}$", "white")
node(ax, pos["c"], "$c_t$", "white")
node(ax, pos["h"], "$h_t$", "white")
node(ax, pos["in"], r"$x_t,\ h_{t-1}$", "white")
for name, label in [("f", "f = σ"), ("i", "i = σ"), ("u", "u = tanh"), ("o", "o = σ")]:
    node(ax, pos[name], label, "#fdc")
for name, label in [("mul_f", "⊙"), ("add", "+"), ("mul_iu", "⊙"), ("mul_o", "⊙")]:
    node(ax, pos[name], label, "#cde")
node(ax, pos["tanh_c"], "tanh", "#dfd")
for a, b in [("c_prev", "mul_f"), ("mul_f", "add"), ("add", "c"), ("f", "mul_f"),
             ("i", "mul_iu"), ("u", "mul_iu"), ("mul_iu", "add"), ("add", "tanh_c"),
             ("tanh_c", "mul_o"), ("o", "mul_o"), ("mul_o", "h"),
             ("in", "f"), ("in", "i"), ("in", "u"), ("in", "o")]:
    arrow(ax, pos[a], pos[b])
ax.set_xlim(-0.7, 9.7)
ax.set_ylim(-0.5, 3.6)
ax.axis("off")
ax.set_title("one LSTM step (with the forget gate of Gers et al., 2000)")
save_figure(fig, out_dir / "lstm_cell.png")
plt.show()

# %% [markdown]
# ## The LSTM layer
#
# `Lc.LSTM(hidden_size)` has eight `Linear` layers (one from `x` and one
# from `h` per gate), keeps `h` and `c` between calls, and forgets both on
# `reset_state()`. Its gradients, like every layer's, come from backprop
# through the formulas above:

# %%
lstm = Lc.LSTM(4, in_size=1)
x = np.ones((2, 1), np.float32)
for _ in range(3):
    h = lstm(x)
print("h:", h.shape, " c:", lstm.c.shape, " parameters:", sum(p.size for p in lstm.params()))
h.sum().backward()
print("gradient reached the forget gate's recurrent weights:", lstm.h2f.W.grad is not None)
lstm.reset_state()
print("after reset_state:", lstm.h, lstm.c)

# %% [markdown]
# ## Mini-batches for sequences: SeqDataLoader
#
# Step 61 fed one value at a time. To use mini-batches we cannot shuffle
# (the state links consecutive steps), and we cannot simply take
# consecutive values as a batch either (they would be one step of one
# sequence, not several sequences). `SeqDataLoader` cuts the series into
# `batch_size` equally long **streams** and returns, at each call, the next
# time step of *every* stream. Row $i$ of batch $k+1$ is the time step right
# after row $i$ of batch $k$, so the state the model carries for row $i$
# always belongs to the same stream.
#
# On a series of 12 steps with 3 streams, each stream has 4 steps; the batches
# hold these time indexes:

# %%
class TimeSteps(dz.datasets.Dataset):
    """12 examples whose value is their own time index, and whose target is the next one."""

    def prepare(self):
        self.data = np.arange(12).reshape(12, 1)
        self.label = self.data + 1


tiny = TimeSteps()
tiny_loader = SeqDataLoader(tiny, batch_size=3)
for k, (xb, tb) in enumerate(tiny_loader):
    print(f"batch {k}: time steps {xb[:, 0].tolist()}, targets {tb[:, 0].tolist()}")

# %% [markdown]
# The same in a picture. Top: the series, each stream in its own colour. Bottom:
# the batches as columns, one row per stream; reading a row from left to right
# walks through one stream in time order, which is the order the model's state
# for that row sees.

# %%
batches = np.stack([xb[:, 0] for xb, _ in tiny_loader], axis=1)  # (streams, batches)
colours = plt.cm.tab10(np.arange(len(batches)))
fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 3.6), height_ratios=(1, 2.2))
for i, steps in enumerate(batches):
    for t in steps:
        top.add_patch(plt.Rectangle((t, 0), 0.9, 0.9, color=colours[i], alpha=0.6))
        top.text(t + 0.45, 0.45, str(t), ha="center", va="center", fontsize=9)
        k = int(np.argmax(steps == t))
        bottom.add_patch(plt.Rectangle((k, len(batches) - 1 - i), 0.9, 0.9, color=colours[i],
                                       alpha=0.6))
        bottom.text(k + 0.45, len(batches) - 0.55 - i, str(t), ha="center", va="center",
                    fontsize=9)
top.set(xlim=(0, 12), ylim=(0, 1), yticks=[], xticks=[], title="the series: time steps 0-11")
bottom.set(xlim=(0, batches.shape[1]), ylim=(0, len(batches)), xlabel="batch",
           xticks=np.arange(batches.shape[1]) + 0.45, xticklabels=range(batches.shape[1]),
           yticks=np.arange(len(batches)) + 0.45,
           yticklabels=[f"stream {i}" for i in reversed(range(len(batches)))])
for side in ("top", "right"):
    bottom.spines[side].set_visible(False)
fig.tight_layout()
save_figure(fig, out_dir / "streams.png")
plt.show()

# %% [markdown]
# ## Training an LSTM on the noisy sine
#
# 10 streams of about 100 steps each, an LSTM with 20 units, truncation every
# 20 steps. One epoch is now 99 batches instead of 999 single steps.

# %%
class BetterRNN(Model):
    def __init__(self, hidden_size, out_size):
        super().__init__()
        self.rnn = Lc.LSTM(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


train_set = SinCurve(train=True)
loader = SeqDataLoader(train_set, batch_size=10)
model = BetterRNN(20, 1)
optimizer = optimizers.Adam(0.01).setup(model)
bptt_length = 20
epoch_losses = []
for epoch in range(10):
    model.reset_state()
    loss, count, total = 0, 0, 0.0
    for xb, tb in loader:
        loss = loss + F.mean_squared_error(model(xb), tb)
        count += 1
        if count % bptt_length == 0 or count == len(loader):
            model.cleargrads()
            loss.backward()
            loss.unchain_backward()
            optimizer.update()
            total += float(loss.data)
            loss = 0
    epoch_losses.append(total / count)
    print(f"epoch {epoch + 1}: mean squared error per batch {epoch_losses[-1]:.4f}")
fig = plot_curves({"mean squared error per batch": epoch_losses}, to_file=out_dir / "loss.png")

# %% [markdown]
# As in step 61, the trained model reads the unseen cosine one value at a time
# (a batch of one stream) and predicts the next:

# %%
xs, ts = get_sin_curve(train=False)
model.reset_state()
with dz.no_grad():
    preds = np.array([model(x.reshape(1, 1)).data.item() for x in xs])
test_mse = float(np.mean((preds - ts[:, 0]) ** 2))
print(f"test mean squared error: {test_mse:.4f}")
plt.figure()  # a new figure: run as a script, the loss curve's is still the current one
plt.plot(ts[:, 0], label="next value (truth)")
plt.plot(preds, "--", label="LSTM prediction")
plt.legend()
save_figure(plt.gcf(), out_dir / "prediction.png")
plt.show()

# %% [markdown]
# The noisy sine is an easy task: a plain RNN learns it too. The LSTM is
# meant to win on sequences where what matters happened many steps ago
# (language, long signals), where the RNN's gradient has faded. Does its
# gradient really reach further back? The next section measures it.

# %% [markdown]
# ## How far back does the gradient reach? RNN against LSTM
#
# Step 61 measured, for its RNN, the size of the gradient that the last state
# sends back to each input, $|\partial (\sum_i h_{40,i}) / \partial x_{40-k}|$,
# $k$ steps back. Here is the same measurement for `Lc.RNN` and `Lc.LSTM` side
# by side: 10 hidden units, weights drawn with seed 0 (the RNN is step 61's,
# with $W_h$ unscaled), 40 steps of random inputs. One sequence gives a jagged
# curve, so a batch of 32 sequences goes through at once and, for each $k$, we
# take the norm of the gradient over the batch (each sequence's state depends
# only on its own inputs, so these are 32 separate gradients side by side).
# The layers are untrained: this is where training starts.
#
# The third curve is the same LSTM with one change. Its forget gate is
# $f = \sigma(x W_{xf} + h W_{hf} + b_f)$, and the bias $b_f$ (`x2f.b`) starts
# at 0 like every bias, so $f$ starts spread around $\sigma(0) = 1/2$: on
# average each step the cell keeps about half of its old value, and the gradient
# along the cell path is multiplied by about one half. Setting $b_f$ to 1 shifts
# the gate towards $\sigma(1) \approx 0.73$. This is a common practice (Jozefowicz,
# Zaremba and Sutskever, 2015, "An Empirical Exploration of Recurrent Network
# Architectures", recommend it; Keras's LSTM does it by default, PyTorch's does
# not). Only the bias changes; the weights are the same. The code also prints
# the forget gate's mean value over the run, and the factor by which each
# curve $g_k$ falls per step back from $k = 10$ to 39: $e^s$, with $s$ the
# slope of a straight line fitted to $\log g_k$.

# %%
def gradient_reach(layer, steps=40, batch=32, seed=0):
    """||d sum(h_T) / d x_{T-k}|| over the batch, for k = 0, 1, ..., T-1; the inputs; the states."""
    gen = np.random.default_rng(seed)
    inputs = [dz.Variable(gen.normal(size=(batch, 1)).astype(np.float32)) for _ in range(steps)]
    states = [layer(x_t) for x_t in inputs]
    F.sum(states[-1]).backward()
    norms = np.array([np.linalg.norm(x_t.grad.data) for x_t in inputs[::-1]])
    return norms, inputs, states


def mean_forget_gate(lstm, inputs, states):
    """The mean of f over the steps that have an old cell to keep (all but the first)."""
    with dz.no_grad():
        return float(np.mean([F.sigmoid(lstm.x2f(x_t) + lstm.h2f(h_prev)).data
                              for x_t, h_prev in zip(inputs[1:], states[:-1])]))


def make(layer_class, seed=0, forget_bias=None):
    np.random.seed(seed)  # the same weights for the two LSTMs
    layer = layer_class(10, in_size=1)
    if forget_bias is not None:
        layer.x2f.b.data[...] = forget_bias
    return layer


seed = 0
layers = {"RNN": make(Lc.RNN, seed), "LSTM, b_f = 0": make(Lc.LSTM, seed),
          "LSTM, b_f = 1": make(Lc.LSTM, seed, forget_bias=1.0)}
runs = {name: gradient_reach(layer, seed=seed) for name, layer in layers.items()}
reach = {name: run[0] for name, run in runs.items()}
print("steps back" + "".join(f"{name:>16}" for name in reach))
for k in (0, 1, 2, 5, 10, 20, 30, 39):
    print(f"{k:>10}" + "".join(f"{g[k]:>16.2e}" for g in reach.values()))
far = np.arange(10, 40)
print("factor per step" + "".join(f"{np.exp(np.polyfit(far, np.log(g[far]), 1)[0]):>11.2f}"
                                  for g in reach.values()))
for name in ("LSTM, b_f = 0", "LSTM, b_f = 1"):
    print(f"{name}: mean forget gate {mean_forget_gate(layers[name], *runs[name][1:]):.2f}")
for name in ("LSTM, b_f = 0", "LSTM, b_f = 1"):
    print(f"{name}, over the RNN's: {reach[name][0] / reach['RNN'][0]:.3g} at 0 steps back, "
          f"{reach[name][39] / reach['RNN'][39]:.3g} at 39 steps back")

fig, ax = plt.subplots(figsize=(6.5, 3.8))
for name, g in reach.items():
    ax.semilogy(np.arange(len(g)), g, label=name.replace("b_f", "$b_f$"))
ax.set_xlabel("steps back, $k$")
ax.set_ylabel("norm of the gradient reaching $x_{40-k}$")
ax.set_title(f"gradient reaching the input $k$ steps back (untrained layers, seed {seed})")
ax.grid(alpha=0.3)
ax.legend()
save_figure(fig, out_dir / "gradient_reach.png")
plt.show()

# %% [markdown]
# A check that the measurement is what it claims to be: at the last step the
# RNN's gradient can be written directly. $h_{40} = \tanh(x_{40} W_x + b + h_{39}
# W_h)$, so $\partial (\sum_i h_{40,i}) / \partial x_{40} = (1 - h_{40}^2)
# W_x^\top$, one row per sequence of the batch.

# %%
rnn_inputs, rnn_states = runs["RNN"][1:]
direct = (1 - rnn_states[-1].data ** 2) @ layers["RNN"].x2h.W.data.T
assert rnn_inputs[-1].grad.shape == direct.shape == (32, 1)
assert np.allclose(rnn_inputs[-1].grad.data, direct, rtol=1e-4, atol=1e-6), (
    "the gradient backward gives x_40 differs from (1 - h_40^2) W_x^T")
print("checked: backward's gradient for the last input equals (1 - h_40^2) W_x^T")

# %% [markdown]
# What this run shows (the numbers are printed above the plot). For the first
# few steps back the RNN's gradient is the largest: in the untrained LSTM the
# input reaches $h$ through an input gate and an output gate, both near one
# half. Further back, each curve falls roughly along a straight line on the log
# axis, that is, by a roughly constant factor per step. The LSTM with
# $b_f = 0$ falls *faster* than the RNN here: at this initialisation it has no
# advantage at all. Its forget gate averages about one half, and its factor per
# step is not far above that (not equal to it: the gradient also flows through
# $h$ and the gates, and the sequences and units whose gate happens to be
# higher count the most). With $b_f = 1$ the mean forget gate is higher, so is
# the factor per step, and at the far end ($k = 39$) the gradient is many times the RNN's
# (the printed ratio).
#
# Even that curve does not stay flat: it still loses a fixed fraction per step.
# What the LSTM brings is a path whose factor per step follows the forget gate,
# a number between 0 and 1 that one bias sets at the start and that training
# can push towards 1 for the units that need a long memory. The RNN's factor
# comes from $W_h$ and the slope of tanh, which depend on all its weights and
# its state (step 61: too small, it fades; too large, it explodes). Try other
# values of `seed`: the RNN's curve moves the most (its rate depends on its
# random $W_h$) and can end above or below the LSTM with $b_f = 0$; try
# `forget_bias=2.0` too.

# %% [markdown]
# ## Exercise
# 1. The loader above splits 999 steps into 10 streams of 99 steps. Which index
#    of the data set is in row 2 (the third stream) of batch 5 (the sixth
#    batch)? Set `index`; the check reads the loader's real batch.
# 2. **Implement then test: the LSTM's memory update.** Given the gates `f`,
#    `i`, `o` (after the sigmoid), the candidate `u` (after the tanh) and the
#    previous cell state `c_prev` (`None` at the first step), write
#    `lstm_update(f, i, o, u, c_prev)` returning the new `(h, c)`:
#    $c = f \odot c_{prev} + i \odot u$ (just $i \odot u$ without a previous
#    state) and $h = o \odot \tanh(c)$. The self-check computes the gates of an
#    `Lc.LSTM` layer for three steps and compares your states with the layer's.

# %%
#| exercise
index = ...  # the data set index in row 2 of batch 5

# %%
#| solution
index = 2 * 99 + 5  # stream start (row * jump) plus the batch number

# %%
#| check
batches = list(loader)
assert isinstance(index, (int, np.integer)), f"index should be an int, got {type(index).__name__}"
assert batches[5][0][2, 0] == train_set.data[index, 0], (
    f"index {index} is not in row 2 of batch 5: stream r starts r jumps into the series "
    f"(jump = {loader.jump}), and each batch moves every stream one step on"
)
print(f"self-check passed: row 2 of batch 5 is step {index} of the series")

# %%
#| exercise
def lstm_update(f, i, o, u, c_prev):
    raise NotImplementedError(
        "Exercise (step 62): the new cell state, then the new h from it; return both"
    )

# %%
#| solution
def lstm_update(f, i, o, u, c_prev):
    c = i * u if c_prev is None else f * c_prev + i * u
    h = o * F.tanh(c)
    return h, c

# %%
#| check
rng = np.random.default_rng(0)
np.random.seed(3)
cell = Lc.LSTM(hidden_size=4, in_size=2)
cell.reset_state()


def gate(x2, h2, act, x_t):
    return act(x2(x_t) if cell.h is None else x2(x_t) + h2(cell.h))


for step, x_t in enumerate(rng.normal(size=(3, 5, 2)).astype(np.float32)):
    f = gate(cell.x2f, cell.h2f, F.sigmoid, x_t)
    i = gate(cell.x2i, cell.h2i, F.sigmoid, x_t)
    o = gate(cell.x2o, cell.h2o, F.sigmoid, x_t)
    u = gate(cell.x2u, cell.h2u, F.tanh, x_t)
    try:
        h_mine, c_mine = lstm_update(f, i, o, u, cell.c)
    except TypeError as e:
        if cell.c is not None:
            raise
        raise AssertionError(
            f"at the first step c_prev is None (no old state yet) and lstm_update raised "
            f"{type(e).__name__} on it: then the new cell state is the input gate times the "
            "candidate alone"
        ) from None
    h_ref = cell(x_t)  # the layer's own step, from the same state
    swapped = np.allclose(c_mine.data, h_ref.data) and np.allclose(h_mine.data, cell.c.data)
    assert not swapped, f"step {step + 1}: h and c are swapped: return (h, c), h first"
    assert np.allclose(c_mine.data, cell.c.data, atol=1e-6), (
        f"step {step + 1}: the cell state differs: the forget gate scales the old state, the "
        "input gate scales the candidate (and there is no old state at the first step)"
    )
    assert np.allclose(h_mine.data, h_ref.data, atol=1e-6), (
        f"step {step + 1}: h differs: the output gate scales the tanh of the new cell state"
    )
print("self-check passed: lstm_update gives the LSTM's h and c over three steps")
