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
from dezero_like.plot import output_dir, plot_curves

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
    print(f"step {t}: h = {np.round(h.data[0], 3)}, functions behind h: {graph_size(h)}")

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
plot_curves({"mean squared error per step": epoch_losses}, to_file=out_dir / "loss.png")

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
plt.plot(ts[:, 0], label="next value (truth)")
plt.plot(preds, "--", label="RNN prediction")
plt.legend()
plt.show()

# %% [markdown]
# ## Exercise
# Truncation is a trade-off: a shorter window is cheaper but lets gradients
# reach fewer steps back. With 999 steps per epoch, how many times per epoch
# does the loop above call `backward()` when `bptt_length` is 50? (The last,
# shorter window counts too.) Set `n_backward`.

# %%
n_backward = 20  # solution: ceil(999 / 50)
assert n_backward == -(-len(train_set) // 50), "count the full windows, plus the last partial one"
print("self-check passed")
