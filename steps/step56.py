# %% [markdown]
# # Step 56: Dropout and test mode
#
# A network with many parameters and little data can do something useless
# very well: memorise the training examples, noise included. Training error
# goes to almost zero while the error on new data stays high. This is
# **overfitting**.
#
# **Dropout** is a simple defence. During training, every time the network
# runs, each hidden unit is switched off (its output set to zero) with
# probability $p$, independently. No unit can rely on one particular other
# unit being present, so the network has to spread what it learns over many
# units, and it cannot build the fragile, very specific combinations that
# memorising noise needs. One way to see it: every example of every mini-batch
# trains its own random "thinned" sub-network, all sharing the same weights.
#
# At test time we want one deterministic prediction, so dropout is switched
# off. That raises a question of scale, answered below, and it means the
# framework needs to know whether it is training or testing: **test mode**.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `test_mode`; `functions` gains `dropout`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `test_mode()` is `using_config("train", False)` under a name that says what it is for; it is used
# in a `with` block, like `no_grad()`.

# %%
#| export dezero_like/core.py
from dezero_like.core import using_config


def test_mode():
    """Run code in test mode (dropout becomes the identity)."""
    return using_config("train", False)


# %% [markdown]
# `dropout` keeps each element with probability $1 - r$ and multiplies the kept ones by
# $1/(1 - r)$, so the expected value of each element is unchanged and nothing needs rescaling at
# test time, when it returns `x` itself. It is built from `*` with a constant array, so it needs no
# backward of its own: the gradient is multiplied by the same mask. Integer input (pixels) is
# scaled in float64, as `sigmoid` computes it: a scaled pixel is no longer an integer.
#
# `no_grad()` and `test_mode()` switch different things: the first stops recording the graph,
# the second switches dropout (and step 58's batch norm) to their evaluation behaviour. An
# evaluation loop written with `no_grad()` alone (as in steps 52-55, whose models have no
# dropout) keeps dropping values at random, and the accuracy it reports is noisy and too low.
# Dropout in training mode with recording off is nearly always that mistake, so
# `_training_without_graph` warns.

# %% [markdown]
# The warning should point at the learner's line, not at the package's: through a `Sequential`,
# dropout is called from `models.py`. `_outside_package` walks up the call stack past the frames
# whose code belongs to `dezero_like` (the module a frame runs in says so) and counts them, which
# is the `stacklevel` `warnings.warn` needs. Step 66's debug mode finds its call sites with it too.

# %%
#| export dezero_like/core.py
def _outside_package(frame):
    """``frame``, or the first frame it was called from whose code is not dezero_like's, and the
    number of frames stepped over (``None`` and the count when every frame is the package's)."""
    steps = 0
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == \
            "dezero_like":
        frame, steps = frame.f_back, steps + 1
    return frame, steps


# %%
#| export dezero_like/functions.py
import sys
import warnings

from dezero_like import cuda
from dezero_like.core import Config, _outside_package, as_variable


def _training_without_graph(name, effect):
    """Warn when ``name`` (dropout, batch norm) runs in training mode under ``no_grad()``:
    nearly always an evaluation loop that forgot ``test_mode()``. The warning names the first
    line outside the package (the model's forward, or the loop calling a Sequential)."""
    if Config.enable_backprop:
        return
    _, level = _outside_package(sys._getframe(1))
    warnings.warn(
        f"{name} ran in training mode under no_grad(): no_grad() only stops recording the "
        f"graph, so {effect}. To evaluate, add dezero_like.test_mode() (PyTorch's "
        "model.eval()): with dz.no_grad(), dz.test_mode(): ... (On purpose, as in Monte Carlo "
        "dropout? warnings.filterwarnings('ignore', 'dropout ran in training mode'))",
        stacklevel=level + 2)


def dropout(x, dropout_ratio=0.5):
    """Zero each element with probability ``dropout_ratio`` and scale the rest by 1/(1-ratio).

    Only in training (``Config.train``); under ``dezero_like.test_mode()`` it is
    the identity, and thanks to the scaling the expected value is the same in
    both modes ("inverted dropout"). Built from ``*``, so backward multiplies by
    the same mask.
    """
    x = as_variable(x)
    if not 0.0 <= dropout_ratio <= 1.0:
        raise ValueError(f"dropout_ratio must be in [0, 1], got {dropout_ratio}")
    if not Config.train:
        return x
    if dropout_ratio:  # a ratio of 0 drops nothing: nothing to warn about
        _training_without_graph("dropout", "it still drops values at random")
    xp = cuda.get_array_module(x)
    keep = xp.random.random(x.shape) > dropout_ratio
    scale = keep.astype(x.dtype if x.dtype.kind in "fc" else "float64")
    if dropout_ratio < 1.0:  # at 1 every element is dropped: all zeros, as in PyTorch
        scale *= 1.0 / (1.0 - dropout_ratio)
    return x * scale


# %% [markdown]
# `test_mode` is imported into the package's namespace: `with dezero_like.test_mode():`.

# %%
#| export dezero_like/__init__.py
from dezero_like.core import test_mode


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import optimizers
from dezero_like.models import Model
from dezero_like.plot import output_dir, plot_curves

out_dir = output_dir(56)  # every file this step writes goes here

# %% [markdown]
# ## `F.dropout` in training mode
#
# In training, `F.dropout(x, p)` multiplies `x` by a random mask of zeros and
# ones (each one with probability $1 - p$) and by $1 / (1 - p)$:
#
# $$y = x \cdot \frac{m}{1 - p}, \qquad m_i \sim \mathrm{Bernoulli}(1 - p).$$
#
# The scaling is the answer to the question of scale: it keeps the expected
# value of every unit unchanged, $\mathbb{E}[y] = x$, so the next layer sees
# inputs of the same size whether dropout is on or off. (This is "inverted"
# dropout; the original paper, Srivastava et al. 2014, scaled the weights at
# test time instead.)

# %%
np.random.seed(0)
x = np.ones(10, dtype=np.float32)
y = F.dropout(x, dropout_ratio=0.5)
print("one draw:", y.data)

big = np.ones(100_000, dtype=np.float32)
y = F.dropout(big, 0.5).data
print(f"fraction dropped: {np.mean(y == 0):.3f}   mean: {y.mean():.3f}   dtype: {y.dtype}")

# %% [markdown]
# ## Test mode
#
# `dz.Config.train` says which mode we are in. The context manager
# `dz.test_mode()` sets it to False for the code inside the `with` block (and
# restores it afterwards, even after an error); there `F.dropout` returns its
# input unchanged.

# %%
print("Config.train:", dz.Config.train)
with dz.test_mode():
    print("inside test_mode, Config.train:", dz.Config.train)
    print("dropout is the identity:", F.dropout(x, 0.5).data)
print("after the block, Config.train:", dz.Config.train)

# %% [markdown]
# ## The gradient goes through the same mask
#
# Dropout is a multiplication by a constant mask, so its derivative is that
# mask (times the scale). The mask is drawn per element, so per example: for
# an example where a unit was dropped, no gradient flows back through it, and
# that example adds nothing to the unit's incoming weights. Other examples of
# the batch, where the unit was kept, still do (and an optimizer with momentum,
# like Adam, moves the weights even on a step whose gradient is zero).

# %%
np.random.seed(0)
v = dz.Variable(np.arange(1.0, 7.0, dtype=np.float32))
out = F.dropout(v, 0.5)
out.backward()
print("output:  ", out.data)
print("gradient:", v.grad.data)

# %% [markdown]
# ## Dropout in a model
#
# A model uses dropout after its hidden activations. Here is an MLP with a
# dropout ratio as a parameter; `ratio=0` gives the plain network. It has two
# hidden layers of 200 units: tens of thousands of weights for a data set of
# 20 noisy points of a sine curve, a recipe for overfitting.

# %%
class DropoutMLP(Model):
    def __init__(self, hidden_size, out_size, ratio=0.5):
        super().__init__()
        self.ratio = ratio
        self.l1 = L.Linear(hidden_size)
        self.l2 = L.Linear(hidden_size)
        self.l3 = L.Linear(out_size)

    def forward(self, x):
        h = F.dropout(F.relu(self.l1(x)), self.ratio)
        h = F.dropout(F.relu(self.l2(h)), self.ratio)
        return self.l3(h)


rng = np.random.default_rng(0)
x_train = rng.random((20, 1)).astype(np.float32)
t_train = (np.sin(2 * np.pi * x_train) + 0.3 * rng.standard_normal((20, 1))).astype(np.float32)
x_test = np.linspace(0, 1, 200, dtype=np.float32).reshape(-1, 1)
t_test = np.sin(2 * np.pi * x_test)  # the curve behind the noise


def errors(model):
    """MSE on the training points and against the true curve, in test mode."""
    with dz.test_mode(), dz.no_grad():
        train_mse = float(F.mean_squared_error(model(x_train), t_train).data)
        test_mse = float(F.mean_squared_error(model(x_test), t_test).data)
    return train_mse, test_mse


def fit(ratio, iters=2000):
    np.random.seed(0)
    model = DropoutMLP(200, 1, ratio)
    optimizer = optimizers.Adam(0.01).setup(model)
    history = []  # errors() every 100 iterations
    for i in range(iters):
        loss = F.mean_squared_error(model(x_train), t_train)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        if (i + 1) % 100 == 0:
            history.append(errors(model))
    return model, history


models, mse, histories = {}, {}, {}
for ratio in (0.0, 0.5):
    models[ratio], histories[ratio] = fit(ratio)
    mse[ratio] = list(histories[ratio][-1])
    print(f"dropout {ratio}: train MSE {mse[ratio][0]:.4f}   error against the true curve "
          f"{mse[ratio][1]:.4f}")
for ratio, history in histories.items():  # one checkpoint is noisy: the last ten
    last = [h[1] for h in history[-10:]]
    print(f"dropout {ratio}: error against the true curve over the last 10 checkpoints: "
          f"mean {np.mean(last):.4f}, from {min(last):.4f} to {max(last):.4f}")

# %% [markdown]
# Without dropout, the network follows the noise: its training error is the
# lowest, its curve wiggles through the points, and it is furthest from the true
# sine. With dropout the training error is higher (it can no longer memorise the
# noise) and the curve is smoother. How much dropout helps depends on the data
# and the model; on another draw of 20 points it may help less. With dropout the
# error also jumps from one checkpoint to the next (each checkpoint's weights
# come from a different random mask history), so compare the means over the last
# ten checkpoints, not one final value. The ratio is a setting to choose on
# held-out data, like the learning rate. The curves show both errors during
# training (measured in test mode every 100 iterations):

# %%
fig = plot_curves({"train MSE": {f"dropout {r}": [h[0] for h in histories[r]] for r in histories},
                   "error against the true curve": {f"dropout {r}": [h[1] for h in histories[r]]
                                                    for r in histories}},
                  xlabel="hundreds of iterations", logy=True, to_file=out_dir / "errors.png")

# %% [markdown]
# Overfitting as it happens: without dropout the training error keeps falling
# while the error against the true curve reaches its lowest point early and
# then climbs. With dropout both stay closer together.

# %%
with dz.test_mode(), dz.no_grad():
    for ratio, style in ((0.0, "-"), (0.5, "-")):
        plt.plot(x_test, models[ratio](x_test).data, style, label=f"dropout {ratio}")
plt.plot(x_test, t_test, "k:", label="true curve")
plt.scatter(x_train, t_train, s=15, color="k", label="training points")
plt.legend()
plt.show()

# %% [markdown]
# ## Forgetting test mode
#
# A classic bug: evaluating without `test_mode()`. Dropout stays on, and the
# "prediction" changes from one call to the next. `no_grad()` alone does not
# help (it only stops recording), and the package warns about exactly that.

# %%
model = models[0.5]
with dz.no_grad():
    first, second = model(x_test[:3]).data.ravel(), model(x_test[:3]).data.ravel()
print("training mode, two calls:", first, second)
with dz.test_mode(), dz.no_grad():
    first, second = model(x_test[:3]).data.ravel(), model(x_test[:3]).data.ravel()
print("test mode, two calls:    ", first, second)

# %% [markdown]
# ## Exercise
# **Implement then test: dropout.** Write your own `my_dropout(x, ratio)` on
# NumPy arrays: in training mode (the flag `dz.Config.train`) drop each element
# with probability `ratio` and scale the kept ones by $1 / (1 - \mathrm{ratio})$;
# in test mode return `x` unchanged. Draw the mask the way `F.dropout` does
# (reread its code above: which NumPy random function, called once, and which
# comparison), since the self-check compares your output with `F.dropout`'s
# from the same random seed. It tests both modes too.

# %%
#| exercise
def my_dropout(x, ratio=0.5):
    raise NotImplementedError(
        "Exercise (step 56): x itself in test mode; in training, x with a random mask of "
        "kept elements applied, the kept ones scaled up"
    )

# %%
#| solution
def my_dropout(x, ratio=0.5):
    if not dz.Config.train:
        return x
    mask = np.random.random(x.shape) > ratio
    return x * mask / (1.0 - ratio)

# %%
#| check
np.random.seed(0)
sample = my_dropout(np.ones(200_000), 0.3)
assert abs(np.mean(sample == 0) - 0.3) < 0.01, (
    f"{np.mean(sample == 0):.3f} of the elements were dropped, expected about 0.3"
)
assert abs(sample.mean() - 1.0) < 0.01, (
    f"the mean is {sample.mean():.3f}, expected 1: scale the kept elements by 1 / (1 - ratio)"
)
x_check = np.random.default_rng(0).normal(size=(4, 6))
np.random.seed(5)
mine = my_dropout(x_check, 0.4)
np.random.seed(5)
ref = F.dropout(x_check, 0.4).data
assert np.allclose(mine, ref), (
    "with the same seed your output differs from F.dropout's: draw the mask once, from "
    "np.random, exactly as F.dropout does (one uniform number per element)"
)
with dz.test_mode():
    assert np.array_equal(my_dropout(np.arange(5.0), 0.3), np.arange(5.0)), (
        "in test mode (dz.Config.train is False) dropout must return x unchanged"
    )
print("self-check passed: my_dropout matches F.dropout in training, is the identity in test mode")
