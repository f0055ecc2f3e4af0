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
# probability $r$, the **dropout ratio** (`dropout_ratio` in `F.dropout`, `p`
# in PyTorch's `nn.Dropout`), independently. No unit can rely on one particular
# other unit being present, so the network has to spread what it learns over
# many units, and it cannot build the fragile, very specific combinations that
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
# in a `with` block, like `no_grad()`, and is a class like it (step 23), so `with dz.test_mode:`
# without the call says what to write.

# %%
#| export dezero_like/core.py
from dezero_like.core import using_config


class test_mode(using_config):
    """Run code in test mode (dropout becomes the identity): ``with test_mode():``."""

    def __init__(self):
        super().__init__("train", False)


# %% [markdown]
# `dropout` keeps each element with probability $1 - r$ and multiplies the kept ones by
# $1/(1 - r)$, so the expected value of each element is unchanged and nothing needs rescaling at
# test time, when it returns `x` itself. It is built from `*` with a constant array, so it needs no
# backward of its own: the gradient is multiplied by the same mask. Integer input (pixels) is
# refused in training, as PyTorch refuses it: a scaled pixel is no longer an integer, and in test
# mode the same call returns the integers unchanged, so the output's dtype would depend on the
# mode. The error says to cast to a float first.
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
from dezero_like.core import Config, _outside_package, _refuse_keywords, as_variable
from dezero_like.functions import _INPLACE

_DROPOUT_KEYWORDS = {  # PyTorch's F.dropout(x, p=0.5, training=True, inplace=False)
    "p": lambda v: f"write dropout_ratio={v!r}, the same number (the probability of zeroing an "
                   "element, as PyTorch's p)",
    "training": lambda v: "nothing to write: dropout reads the mode, training by default" if v
    else "evaluate inside with dz.test_mode(): (dropout is then the identity)",
    "inplace": _INPLACE,
}


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


def dropout(x, dropout_ratio=0.5, **others):
    """Zero each element with probability ``dropout_ratio`` and scale the rest by 1/(1-ratio).

    Only in training (``Config.train``); under ``dezero_like.test_mode()`` it is
    the identity, and thanks to the scaling the expected value is the same in
    both modes ("inverted dropout"). Built from ``*``, so backward multiplies by
    the same mask. A ratio of 0 returns ``x`` as it is, and a ratio of 1 zeros of its dtype;
    integers are refused in training between the two, as PyTorch refuses them (scaled, they
    would become floats).
    """
    if others:  # PyTorch's F.dropout(x, p=0.3), say
        _refuse_keywords("F.dropout", others, _DROPOUT_KEYWORDS)
    x = as_variable(x)
    try:
        in_range = 0.0 <= dropout_ratio <= 1.0
    except TypeError:  # a string from a command line or a config file, None, a Variable
        fix = ("a value read from a command line or a config file is a string: float(value)"
               if isinstance(dropout_ratio, str) else "pass a float, e.g. 0.5")
        raise TypeError(f"dropout_ratio must be a number in [0, 1], got {dropout_ratio!r} "
                        f"({type(dropout_ratio).__name__}); {fix}") from None
    if not in_range:
        raise ValueError(f"dropout_ratio must be in [0, 1], got {dropout_ratio}")
    if type(dropout_ratio).__name__ in ("bool", "bool_"):  # F.dropout(x, True): a mode, not a
        raise TypeError(  # ratio (True would be 1, every element dropped)
            f"dropout_ratio must be a number in [0, 1], got {dropout_ratio!r}, a bool: the mode "
            "is no argument here (dropout drops in training and is the identity under "
            "dezero_like.test_mode()); pass the probability of dropping, e.g. 0.5")
    if not Config.train or not dropout_ratio:  # a ratio of 0 drops nothing: x, dtype and all,
        return x  # as PyTorch (scaled by 1.0 an integer x would turn into float64)
    if x.dtype.kind in "biu" and dropout_ratio < 1.0:  # kept elements scaled by a fraction
        raise TypeError(
            f"dropout of {'a bool' if x.dtype.kind == 'b' else 'an integer'} input (dtype "
            f"{x.dtype}) in training: the elements kept are "
            f"scaled by 1/(1 - {dropout_ratio}), which {x.dtype} cannot hold, and under "
            "test_mode() dropout returns x unchanged, so the output's dtype would depend on the "
            "mode (PyTorch refuses it too). Cast it to a float first: F.astype(x, np.float32)")
    _training_without_graph("dropout", "it still drops values at random")
    xp = cuda.get_array_module(x)
    keep = xp.random.random(x.shape) > dropout_ratio
    scale = keep.astype(x.dtype)
    if dropout_ratio < 1.0:  # at 1 every element is dropped: zeros of x's dtype, as in PyTorch
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
from dezero_like.plot import output_dir, plot_curves, save_figure

out_dir = output_dir(56)  # every file this step writes goes here

# %% [markdown]
# ## `F.dropout` in training mode
#
# In training, `F.dropout(x, r)` multiplies `x` by a random mask of zeros and
# ones (each one with probability $1 - r$) and by $1 / (1 - r)$:
#
# $$y = x \cdot \frac{m}{1 - r}, \qquad m_i \sim \mathrm{Bernoulli}(1 - r).$$
#
# The scaling is the answer to the question of scale: it keeps the expected
# value of every unit unchanged, $\mathbb{E}[y] = x$, so the next layer sees
# inputs of the same size whether dropout is on or off. (This is "inverted"
# dropout; the papers that introduced dropout, Hinton et al. 2012 and
# Srivastava et al. 2014, scaled the weights at test time instead.)

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
plt.figure()  # a new figure: run as a script, the one above is still the current one
with dz.test_mode(), dz.no_grad():
    for ratio, style in ((0.0, "-"), (0.5, "-")):
        plt.plot(x_test, models[ratio](x_test).data, style, label=f"dropout {ratio}")
plt.plot(x_test, t_test, "k:", label="true curve")
plt.scatter(x_train, t_train, s=15, color="k", label="training points")
plt.legend()
save_figure(plt.gcf(), out_dir / "dropout_fits.png")
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
# **Implement then test: Gaussian dropout.** `F.dropout` multiplies each element
# by a random factor $a = m / (1 - r)$ with $m \sim \mathrm{Bernoulli}(1 - r)$:
# the factor is $0$ or $1/(1 - r)$, and its mean is $1$, which is why test mode
# needs no rescaling. Srivastava et al. (2014, section 10) found that a factor
# drawn from a **normal distribution** $\mathcal{N}(1, \sigma^2)$ regularises as
# well, when $\sigma^2$ is the variance of the Bernoulli factor $a$: no element is
# switched off, every one is shaken by its own noise.
#
# Write `my_gaussian_dropout(x, ratio)`:
#
# * in training mode (the flag `dz.Config.train`), multiply `x` by one such
#   factor per element, drawn from `np.random` (the self-check seeds it). Work out
#   $\sigma^2 = \mathbb{E}[a^2] - \mathbb{E}[a]^2$ on paper first, and mind that
#   NumPy's normal sampler takes a standard deviation, not a variance;
# * in test mode, return `x` unchanged, as `F.dropout` does;
# * build it from `*` with a constant array, as `F.dropout` is, so that a
#   `Variable` input gets a gradient through the same factors; a float32 input
#   gives a float32 output (how does `F.dropout` type its mask?).
#
# The self-check divides your output by a large input (200,000 elements, fixed
# seed) to recover the factors and compares their mean, their variance and how
# they spread (how many lie within one standard deviation of 1, how many are
# negative) with the normal distribution's; then it checks the gradient with
# `gradient_check` (re-seeding before every call, so each draws the same noise)
# and test mode exactly. To think about: a Gaussian factor can be negative and
# flip a sign. How often, for `ratio=0.3`? (Work it out, then compare with what
# the self-check prints.)

# %%
#| exercise
def my_gaussian_dropout(x, ratio=0.5):
    raise NotImplementedError(
        "Exercise (step 56): x itself in test mode; in training, x times normal noise of mean 1 "
        "whose variance is that of dropout's scaled Bernoulli factor"
    )

# %%
#| solution
def my_gaussian_dropout(x, ratio=0.5):
    if not dz.Config.train:
        return x
    std = np.sqrt(ratio / (1.0 - ratio))  # the variance of m / (1 - r) is r / (1 - r)
    noise = np.random.normal(1.0, std, size=x.shape).astype(x.dtype)
    return x * noise

# %%
#| check
from math import erfc, sqrt


def _values(y):
    """The array of a Variable, or the array itself."""
    return y.data if isinstance(y, dz.Variable) else np.asarray(y)


r = 0.3
values, probs = np.array([0.0, 1 / (1 - r)]), np.array([r, 1 - r])  # dropout's factor a
var_expected = probs @ values**2 - (probs @ values) ** 2  # its variance, from the definition
sd = sqrt(var_expected)
neg_expected = 0.5 * erfc(1 / sd / sqrt(2))  # P(N(1, sd^2) < 0) = Phi(-1/sd)
# positive and not all equal; on [1, 3], E[1/x^2] = 1/3 tells added noise from multiplied
x_big = np.random.default_rng(1).uniform(1.0, 3.0, 200_000)
np.random.seed(0)
a = _values(my_gaussian_dropout(x_big, r)) / x_big  # the factors you drew
assert a.shape == x_big.shape, f"the output has shape {a.shape}, the input {x_big.shape}"
assert np.mean(a == 0) < 0.001, (
    f"{np.mean(a == 0):.1%} of the elements are exactly zero: that is F.dropout's Bernoulli "
    "mask. Gaussian dropout switches nothing off, it multiplies every element by a normal factor"
)
# tolerances: with 200,000 draws the standard error of the mean is sd/447 = 0.0015, of the
# variance var*sqrt(2/n) = 0.0014, of a fraction near 0.68 (0.06) 0.0010 (0.0005): each
# tolerance is 7 to 10 standard errors, and still far from the usual wrong answers
assert abs(a.mean() - 1.0) < 0.01, (
    f"the factors have mean {a.mean():.4f}, expected 1: centre the noise on 1 so that the "
    "expected output in training is x, the test-mode output"
)
assert abs(a.var() - var_expected) < 0.01, (
    f"the factors have variance {a.var():.4f}, expected {var_expected:.4f} (the variance of "
    "dropout's factor for ratio 0.3); is it multiplicative noise, and did you give the sampler "
    "a standard deviation?"
)
within = np.mean(np.abs(a - 1.0) < sd)
assert abs(within - 0.6827) < 0.01, (
    f"{within:.3f} of the factors lie within one standard deviation of 1, a normal distribution "
    "puts 0.683 there: draw the factors from a normal distribution"
)
negative = np.mean(a < 0)
assert abs(negative - neg_expected) < 0.005, (
    f"{negative:.4f} of the factors are negative, a normal N(1, {var_expected:.3f}) gives "
    f"{neg_expected:.4f}"
)
y32 = my_gaussian_dropout(np.ones((3, 4), dtype=np.float32), r)
assert _values(y32).dtype == np.float32, (
    f"a float32 input gave a {_values(y32).dtype} output: give the noise the input's dtype"
)
x_small = np.random.default_rng(2).normal(size=(3, 4))
x_var = dz.Variable(x_small)
np.random.seed(7)
y_var = my_gaussian_dropout(x_var, r)
assert isinstance(y_var, dz.Variable), (
    "a Variable input must give a Variable output: multiply the Variable itself (not its .data) "
    "by the noise, so that backward sees the product"
)
np.random.seed(7)
assert np.array_equal(_values(my_gaussian_dropout(x_small, r)), y_var.data), (
    "after the same np.random.seed(7), two calls drew different noise: draw it from np.random, "
    "the generator the self-check seeds"
)
y_var.backward()
assert x_var.grad is not None, (
    "backward gave the input no gradient: multiply the Variable itself (not its .data) by the "
    "noise, so that the product is recorded in the graph"
)


def _same_noise(v):
    np.random.seed(7)  # every call draws the same factors: a deterministic function to check
    return my_gaussian_dropout(v, r)


dz.utils.gradient_check(_same_noise, x_small)
with dz.test_mode():
    x_five = np.arange(5.0)
    assert np.array_equal(_values(my_gaussian_dropout(x_five, r)), x_five), (
        "in test mode (dz.Config.train is False) Gaussian dropout must return x unchanged"
    )
print(f"self-check passed: my_gaussian_dropout's factors have mean 1, variance {var_expected:.3f} "
      f"and {negative:.1%} negatives, its gradient goes through the same noise, and it is the "
      "identity in test mode")
