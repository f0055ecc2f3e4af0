# %% [markdown]
# # Step 63: Seeding backward, and variables that do not require grad
#
# Stage 6 looks at how industrial frameworks (PyTorch, Chainer) run
# backpropagation, and at the small decisions that make their engines safe and
# cheap. We start with the two ends of a backward pass:
#
# * **where it starts**: `y.backward()` needs a first gradient, the *seed*
#   $\partial L / \partial y$. So far it was always "ones". Here we pass our own.
# * **where it stops**: a variable created with `requires_grad=False` is a
#   constant. No gradient flows into it, and a function whose inputs are all
#   constants records no graph at all.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `Variable.backward`: it refuses a variable that does not require
# grad; `core` also gains `_PyTorchName` and `_pytorch_names`, with which `Variable`, `Layer` and
# `Optimizer` answer PyTorch's names (`x.numpy()`, `x.mean()`, `model.zero_grad()`) with what to
# write here; `layers` gains `_pytorch_keywords`, with which the layers answer PyTorch's keyword
# arguments (`padding=`, `bias=`, `momentum=`) the same way.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# `backward` refuses, with a clear error, to start from a variable that does not
# require grad (a constant, or a result computed under `no_grad()`: backward
# through it would reach no leaf) and from a data-less stand-in of step 37. The
# seed itself came with step 38 (`_seed`), and the rule that a function whose
# inputs are all constants records nothing with step 30.

# %%
#| export dezero_like/core.py Variable
from dezero_like.core import _backprop, using_config


def backward(self, gradient=None, retain_grad=False, create_graph=False, retain_graph=False):
    """Compute the gradient of this variable with respect to every leaf.

    * ``gradient``: the seed dL/d(self); default ones, for scalars and arrays alike.
    * ``retain_grad``: also keep ``.grad`` on the intermediate variables.
    * ``create_graph``: record the backward pass itself, so that the gradients
      can be differentiated again (implies ``retain_graph``).
    * ``retain_graph``: keep what the functions saved, so backward can run again.
    """
    if not self.requires_grad:
        raise RuntimeError(
            "backward() was called on a variable that does not require grad "
            "(it was made under no_grad(), or from inputs with requires_grad=False)"
        )
    if self.data is None:
        raise RuntimeError("backward() was called on a graph node that holds no data")
    seed = self._seed(gradient)
    with using_config("enable_backprop", create_graph):
        _backprop(self, seed, retain_grad, retain_graph or create_graph)


# %% [markdown]
# Habits from PyTorch meet names that do not exist here: `x.numpy()`, `x.view(2, 3)`,
# `model.zero_grad()`, `optimizer.step()`. Python would say only "object has no attribute". A
# `_PyTorchName` on the class says what to write instead. It is a descriptor (the object behind
# an attribute of a class) that raises an `AttributeError` when it is read, so `hasattr` still
# answers False, an instance attribute of the same name (`self.step = 0`) or a subclass's own
# method still wins, and no other attribute is touched. (A `__getattr__` would do it too, but
# on CPython 3.11 its mere presence slows every attribute read of the class: a Variable's
# `x.data` in the backward loop.) `x.size()` stays NumPy's property `x.size`. PyTorch's tensor
# methods that are functions here get the same treatment: `x.mean()` says `F.mean(x)`,
# `x.clamp(0, 1)` says `F.clip`, `x.unsqueeze(0)` says `F.expand_dims`, `x.argmax(1)` says
# `x.data.argmax(axis=1)`, `x.float()` says `F.astype(x, np.float32)`. Only names that
# `Variable` lacks get one: `x.sum()`, `x.reshape()`, `x.transpose()` and `x.item()` are real.

# %%
#| export dezero_like/core.py
class _PyTorchName:
    """A name PyTorch has and this class has not: reading it raises, saying what to write."""

    def __init__(self, name, fix):
        self.name, self.fix = name, fix

    def __get__(self, obj, owner=None):
        if obj is None:
            return self  # the class's own attribute, for help() and introspection
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}: "
                             f"that is PyTorch's name; here write {self.fix}")


def _pytorch_names(cls, **fixes):
    """Give ``cls`` a :class:`_PyTorchName` for each ``name=fix`` (a name ``cls`` lacks)."""
    for name, fix in fixes.items():
        setattr(cls, name, _PyTorchName(name, fix))


# %%
#| export dezero_like/core.py
from dezero_like.core import _ABS, Variable

_pytorch_names(
    Variable,
    numpy="x.data, the NumPy array (on a GPU: cuda.as_numpy(x.data))",
    detach="Variable(x.data, requires_grad=False), a constant sharing x's array (or, after "
           "backward(), x.unchain_backward() to cut the graph behind x itself)",
    view="x.reshape(...)", permute="x.transpose(...)", dim="x.ndim", numel="x.size",
    zero_="x.cleargrad() to clear a gradient (PyTorch's x.grad.zero_()), or x.data[...] = 0",
    zero_grad="x.cleargrad() (model.cleargrads() for a whole model)",
    requires_grad_="x.requires_grad = True (or False): an attribute here",
    cuda="x.to_gpu(), which moves x itself", cpu="x.to_cpu(), which moves x itself",
    to="x.to_gpu() or x.to_cpu(), which move x itself",
    # tensor methods that are functions here (F is dezero_like.functions)
    mean="F.mean(x) (F.mean(x, axis=1) for x.mean(1))",
    max="F.max(x) (F.max(x, axis=1) for the values of x.max(1); x.data.argmax(axis=1) for its "
        "indices)",
    min="F.min(x) (F.min(x, axis=1) for the values of x.min(1); x.data.argmin(axis=1) for its "
        "indices)",
    argmax="x.data.argmax(axis=1), an array of indices (no gradient, as in PyTorch)",
    argmin="x.data.argmin(axis=1), an array of indices (no gradient, as in PyTorch)",
    exp="F.exp(x)", sqrt="x ** 0.5", pow="x ** p",
    abs=_ABS,
    clamp="F.clip(x, x_min, x_max) (None leaves a side open, as clamp's min= or max=)",
    unsqueeze="F.expand_dims(x, axis)",
    squeeze="x.reshape(...) without the axes of length 1 (x.reshape(-1) turns (N, 1) into (N,))",
    float="F.astype(x, np.float32) (x.data.astype(np.float32) for the array alone)",
    double="F.astype(x, np.float64) (x.data.astype(np.float64) for the array alone)",
    long="x.data.astype(np.int64), an array (labels need no gradient)",
    tolist="x.data.tolist()",
)

# %%
#| export dezero_like/layers.py
from dezero_like.core import _pytorch_names
from dezero_like.layers import Layer

_pytorch_names(
    Layer,
    zero_grad="model.cleargrads()",
    parameters="model.params(); an optimizer takes the model itself: SGD(lr=0.1).setup(model)",
    eval="with dz.test_mode(): around the evaluation (dropout and BatchNorm read the mode)",
    train="nothing: training is the default mode (evaluate inside with dz.test_mode():)",
    state_dict="model.save_weights(path), which writes the parameters to an .npz file",
    load_state_dict="model.load_weights(path), for a file that save_weights wrote",
    cuda="model.to_gpu(), which moves the model itself",
    cpu="model.to_cpu(), which moves the model itself",
    to="model.to_gpu() or model.to_cpu(), which move the model itself",
)

# %% [markdown]
# Layers answer PyTorch's keyword arguments the same way. `L.Conv2d(16, 3, padding=1)` says
# `pad=1`, `L.Linear(10, bias=False)` says `nobias=True`, `L.BatchNorm(momentum=0.1)` says
# `decay=0.9`; Python's own error ("unexpected keyword argument 'padding'") names the argument
# but not what to write. `_pytorch_keywords` wraps a class's `__init__` in a check of the
# keyword names: it runs once per layer made, never when a layer is called. A name the class
# takes itself is never in the list, and a subclass with an `__init__` of its own that takes
# `bias=` (and passes `nobias=` on) is not affected.

# %%
#| export dezero_like/layers.py
import functools

from dezero_like.core import _refuse_keywords
from dezero_like.functions import _UNAVAILABLE
from dezero_like.layers import Linear


def _pytorch_keywords(cls, **fixes):
    """Make ``cls(...)`` refuse PyTorch's keyword arguments named in ``fixes``, saying what to
    write: each fix is a text, or a function of the value given that returns one (step 25's
    ``_refuse_keywords`` writes the message, as for the functions)."""
    init = cls.__init__

    @functools.wraps(init)  # help() and inspect.signature still show the real arguments
    def __init__(self, *args, **kwargs):
        named = {n: v for n, v in kwargs.items() if n in fixes}
        if named:
            _refuse_keywords(type(self).__name__, named, fixes)
        init(self, *args, **kwargs)

    cls.__init__ = __init__


def _nobias(bias):
    """What to write for PyTorch's ``bias=``."""
    return f"write nobias={not bias}" if isinstance(bias, bool) else \
        "write nobias=True for a layer without bias"


_MADE_ON_CPU = "layers are made on the CPU; model.to_gpu() moves them"  # for device=

_pytorch_keywords(
    Linear, bias=_nobias,
    in_features=lambda v: f"write in_size={v!r} (or leave it out: the first batch gives it)",
    out_features=lambda v: f"the output size is the first argument: Linear({v!r})",
    device=_MADE_ON_CPU)

# %%
#| export dezero_like/layers_conv.py
from dezero_like.functions import _UNAVAILABLE
from dezero_like.functions_conv import _momentum, _pad  # step 57's and step 58's, as for F.conv2d
from dezero_like.layers import _MADE_ON_CPU, _nobias, _pytorch_keywords
from dezero_like.layers_conv import LSTM, RNN, BatchNorm, Conv2d, Deconv2d, EmbedID


for _conv in (Conv2d, Deconv2d):
    _pytorch_keywords(
        _conv, padding=_pad, bias=_nobias, dilation=_UNAVAILABLE, groups=_UNAVAILABLE,
        padding_mode=_UNAVAILABLE + " (the padding is zeros)",
        output_padding="outsize=(H, W) chooses the output size of Deconv2d",
        device=_MADE_ON_CPU)
_pytorch_keywords(
    BatchNorm, momentum=_momentum,
    num_features="not an argument here: BatchNorm takes the number of channels from the first "
                 "batch, so BatchNorm1d(16) is L.BatchNorm()",
    affine=_UNAVAILABLE, track_running_stats=_UNAVAILABLE)
_pytorch_keywords(
    EmbedID, num_embeddings=lambda v: f"write in_size={v!r} (EmbedID(in_size, out_size))",
    embedding_dim=lambda v: f"write out_size={v!r} (EmbedID(in_size, out_size))",
    padding_idx=_UNAVAILABLE, max_norm=_UNAVAILABLE)
for _rnn in (RNN, LSTM):
    _pytorch_keywords(
        _rnn, input_size=lambda v: f"write in_size={v!r} (or leave it out: the first batch "
                                   "gives it)",
        num_layers="one layer per object here: stack them, each feeding the next",
        batch_first="the layer takes one time step (N, in_size) per call: feed x[:, t]",
        bidirectional=_UNAVAILABLE, dropout="apply F.dropout to the outputs",
        nonlinearity=_UNAVAILABLE + " (RNN uses tanh)")
del _conv, _rnn  # the loops' names are no part of the module

# %%
#| export dezero_like/optimizers.py
from dezero_like.core import _pytorch_names
from dezero_like.optimizers import Optimizer

_pytorch_names(
    Optimizer,
    zero_grad="model.cleargrads() (optimizer.target.cleargrads()): the gradients are the model's",
    step="optimizer.update()",
    param_groups="the settings themselves: optimizer.lr = 0.01 (Adam: alpha; AdaDelta has none)",
    state_dict="copy.deepcopy(optimizer) or pickle (the state is kept per parameter)",
)


# %% [markdown]
# ## The seed is a vector–Jacobian product
#
# For a non-scalar output $y = f(x)$ with Jacobian $J = \partial y / \partial x$,
# backprop never builds $J$. It pushes a vector $v$ (shaped like $y$) backwards
# and lands on $x.\mathrm{grad} = v^\top J$, the *vector–Jacobian product*.
# Choosing $v$ is choosing which scalar we differentiate: $v^\top J$ is the
# gradient of $L = \sum_i v_i y_i$.
#
# DeZero's rule, which we keep: without a seed, $v$ is all ones, i.e. the
# gradient of `y.sum()`. `backward(gradient=v)` lets us choose another $v$.

# %%
x = dz.Variable(np.array([1.0, 2.0, 3.0]))
y = x**2  # dy_i/dx_i = 2 x_i, the Jacobian is diagonal
y.backward()
print("seed = ones:            x.grad =", x.grad.data)

x.cleargrad()
y = x**2
v = np.array([1.0, 0.0, -1.0])
y.backward(gradient=v)
print("seed = [1, 0, -1]:      x.grad =", x.grad.data)

# the same number, by differentiating the scalar sum(v * y)
x2 = dz.Variable(np.array([1.0, 2.0, 3.0]))
F.sum(x2**2 * v).backward()
print("gradient of sum(v * y): x.grad =", x2.grad.data)

# %% [markdown]
# A seed is checked before any work is done. It must be an array (or a
# Variable) of exactly the output's shape. A list, or an array that would only
# *broadcast* to the right shape, is refused: silently broadcasting a seed would
# differentiate a different loss from the one the caller had in mind.

# %%
y = x**2
try:
    y.backward(gradient=[1.0, 0.0, -1.0])
except TypeError as e:
    print("TypeError:", e)
try:
    y.backward(gradient=np.ones((3, 1)))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# ## How PyTorch differs
#
# PyTorch refuses to guess: `y.backward()` on a non-scalar `y` raises
# "grad can be implicitly created only for scalar outputs", and you must write
# `y.backward(gradient=torch.ones_like(y))` (or `y.sum().backward()`). Its
# argument name `gradient` is the one we use. DeZero (and we) pick ones for
# convenience; the price is that a forgotten `.sum()` or a wrong loss shape goes
# unnoticed. The cell runs the real thing if PyTorch is installed.

# %%
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: it would raise RuntimeError('grad can be implicitly "
          "created only for scalar outputs') here.")
if torch is not None:
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ty = tx**2
    try:
        ty.backward()
    except RuntimeError as e:
        print("PyTorch says:", e)
    ty.backward(gradient=torch.tensor([1.0, 0.0, -1.0]))
    print("PyTorch with the seed:", tx.grad.numpy())

# %% [markdown]
# Other PyTorch habits meet names that do not exist here. The package code of this step made
# them errors that say what to write instead (`hasattr(x, "numpy")` is still False):

# %%
from dezero_like.models import MLP
from dezero_like.optimizers import SGD

model = MLP((3, 1))
optimizer = SGD(lr=0.1).setup(model)
for obj, name in [(x, "numpy"), (x, "view"), (x, "mean"), (model, "zero_grad"),
                  (model, "eval"), (optimizer, "step")]:
    try:
        getattr(obj, name)
    except AttributeError as e:
        print(e)

# %% [markdown]
# ## `requires_grad=False`: constants
#
# Most arrays in a network never need a gradient: the input images, the
# labels, a frozen pretrained layer. Marking them `requires_grad=False` saves
# two things:
#
# * **gradient work**: a function's backward reads `self.needs_input_grad`
#   (step 23) and returns `None` for inputs that do not need a gradient;
# * **memory** (from step 69 on): `Mul` needs a factor only if the *other*
#   factor needs a gradient ($\partial (a b) / \partial a = b$). In `h * data`
#   with a constant `data`, the intermediate `h` need not be kept: only `data`'s
#   gradient would read it. Step 69 makes functions keep only what they need,
#   and measures what this saves.
#
# A function whose inputs *all* do not require grad records nothing: its output
# is a constant too, with no creator, exactly as under `no_grad()`.

# %%
data = dz.Variable(np.array([0.5, -1.0, 2.0]), requires_grad=False)  # an input batch
w = dz.Variable(np.array([2.0, 2.0, 2.0]))  # a parameter
y = F.sum(w * data)
y.backward()
print("w.grad   =", w.grad.data)
print("data.grad =", data.grad)
mul = y.creator.inputs[0].creator
print("Mul.needs_input_grad =", mul.needs_input_grad)

z = F.exp(data) * 3.0
print("constant in, constant out: creator =", z.creator, " requires_grad =", z.requires_grad)
try:
    z.backward()
except RuntimeError as e:
    print("RuntimeError:", e)

# %% [markdown]
# Numbers and arrays mixed into an expression (`w * 3.0`, `w + np.ones(3)`)
# become such constants automatically, which is why `x * 2.0` never computes
# a gradient for the `2.0`.

# %% [markdown]
# Here is the graph that backward walks, for $y = \sum w \cdot e^{\text{data}}$. Each node shows
# its value and its gradient. Look at the grey node: `exp(data)` is a constant, because `Exp` had
# only a constant input and recorded nothing. So neither `Exp` nor `data` is in the graph at all.
# Backward walks the blue boxes, `Sum` then `Mul`, and stops there: `w` (orange) gets its gradient,
# and the grey node shows `grad -`.

# %%
from dezero_like.graph import keep_values_for_drawing, plot_dot_graph  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402

w = dz.Variable(np.array([2.0, 2.0, 2.0]), name="w")
data = dz.Variable(np.array([0.5, -1.0, 2.0]), name="data", requires_grad=False)
with keep_values_for_drawing():  # intermediate values and gradients kept, for the drawing
    scaled = F.exp(data)  # a constant: Exp records nothing
    scaled.name = "exp(data)"
    y = F.sum(w * scaled)
    y.name = "y"
    y.backward()
print("exp(data) has a creator:", scaled.creator is not None, " w.grad =", w.grad.data)
image = written(plot_dot_graph(y, values=True, to_file=output_dir(63) / "constant_branch.svg"))
image

# %% [markdown]
# ## Exercise
# 1. The full Jacobian can be built from vector–Jacobian products: seeding with
#    the one-hot vector $e_i$ gives row $i$ of $J$. Write `jacobian(f, x)` that
#    returns the $m \times n$ matrix of any `f` from $\mathbb{R}^n$ to
#    $\mathbb{R}^m$ (one row per output), running `f` once and backward $m$
#    times. Two things from earlier steps matter: the graph must survive more
#    than one backward (step 37), and gradients accumulate across calls
#    (step 14).
# 2. **Implement then test: skip the gradients nobody needs.** Write `backward`
#    of `MyMul` ($y = x_0 x_1$, two arrays of the same shape): the gradient of
#    $x_0$ is $g_y x_1$ and that of $x_1$ is $g_y x_0$, but return `None` in
#    the place of an input whose `self.needs_input_grad` entry is False. The
#    self-check runs `gradient_check`, and a product with a constant, whose
#    gradient must not be computed.

# %%
#| exercise
def jacobian(f, x_data):
    raise NotImplementedError(
        "Exercise (step 63): one forward, then one seeded backward per output, one row each"
    )

# %%
#| solution
def jacobian(f, x_data):
    x = dz.Variable(x_data)
    y = f(x)
    rows = []
    for i in range(y.size):
        x.cleargrad()
        e = np.zeros_like(y.data)
        e[i] = 1.0
        y.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.data.copy())
    return np.stack(rows)

# %%
#| check
xs = np.array([1.0, 2.0, 3.0])
J = jacobian(lambda x: x**2, xs)
assert np.allclose(J, np.diag(2 * xs)), f"the Jacobian of x**2 is diag(2x), got\n{J}"
J2 = jacobian(lambda x: x * F.sum(x), xs)  # y_i = x_i * s: dy_i/dx_j = s [i=j] + x_i
assert np.allclose(J2, np.eye(3) * xs.sum() + xs[:, None]), (
    f"the Jacobian of x * sum(x) is sum(x) I + x 1^T, got\n{J2}: row i comes from the "
    "seed e_i alone; does x.grad still hold the rows before it?"
)
try:
    J3 = jacobian(lambda x: x[:2] * F.sum(x), xs)  # from R^3 to R^2: 2 rows of 3
except IndexError as e:
    raise AssertionError(
        f"jacobian fails for f from R^3 to R^2 ({e}): one row per output, so one backward "
        "per element of y, not of x"
    ) from None
assert np.shape(J3) == (2, 3), (
    f"for f from R^3 to R^2 the Jacobian is 2 x 3, got shape {np.shape(J3)}: one row per "
    "output (an element of y), one column per input (an element of x)"
)
assert np.allclose(J3, (np.eye(3) * xs.sum() + xs[:, None])[:2]), (
    f"the Jacobian of x[:2] * sum(x) should be the first two rows of the one above, got\n{J3}"
)
print("self-check passed: one vector-Jacobian product per output gives the whole Jacobian")

# %%
#| exercise
from dezero_like.core import Function


class MyMul(Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 63): one gradient per input, or None for an input that needs none"
        )

# %%
#| solution
from dezero_like.core import Function


class MyMul(Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs
        n0, n1 = self.needs_input_grad
        return (gy * x1 if n0 else None, gy * x0 if n1 else None)

# %%
#| check
from dezero_like.utils import gradient_check  # noqa: E402

rng = np.random.default_rng(0)
a_data, b_data = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
for which, f, at in (("x0", lambda v: MyMul()(v, dz.Variable(b_data)), a_data),
                     ("x1", lambda v: MyMul()(dz.Variable(a_data), v), b_data)):
    gradient_check(f, at, hint=f"the gradient of {which} is wrong: gy, the gradient from above "
                               "(not all ones here), times the other input")
weight = dz.Variable(a_data.copy())
batch = dz.Variable(b_data.copy(), requires_grad=False)
y = MyMul()(weight, batch)
grads = y.creator.backward(dz.Variable(np.ones((2, 3))))
assert grads[1] is None, (
    "the constant input (requires_grad=False) got a gradient: which attribute says "
    "whether each input needs one?"
)
y_first = MyMul()(batch, weight)  # the constant in the first slot this time
grads_first = y_first.creator.backward(dz.Variable(np.ones((2, 3))))
assert grads_first[0] is None, (
    "the constant input in the first slot got a gradient: check self.needs_input_grad for "
    "x0 too, not only for x1"
)
F.sum(y).backward()
assert np.allclose(weight.grad.data, b_data) and batch.grad is None, "weight.grad should be b"
print("self-check passed: MyMul passes the gradient check and skips the constant's gradient")
