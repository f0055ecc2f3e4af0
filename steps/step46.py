# %% [markdown]
# # Step 46: `Model`, `MLP` and `Sequential`
#
# A **model** is the whole network: a Layer at the top of the tree, the thing
# we train, save and draw. `dezero_like.models.Model` is a `Layer` with one
# extra: `model.plot(x, to_file="model.png")` runs the model on `x` and renders
# the computational graph with the renderer of step 26 (Graphviz's `dot`, or the
# pip-installed `graphviz-pure`). In this step we print the model's structure, and draw it.
#
# With a Model class we can also ship ready-made networks:
#
# * **`MLP(fc_output_sizes, activation=F.sigmoid)`**, the multi-layer perceptron:
#   fully connected `Linear` layers with an activation between them.
#   `MLP((10, 1))` is step 44's network; `MLP((100, 100, 10), F.relu)` a
#   deeper classifier. Input sizes are inferred on the first call.
# * **`Sequential(*layers)`**: apply layers, or plain functions such as `F.relu`,
#   one after the other.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `ReLU`, `relu`, `LeakyReLU`, `leaky_relu`; `core` gains
# `_guard_backward` and `_guard_forward`, and `Function` gains `__init_subclass__` (a Function
# you write may not change the gradients it is handed, nor its inputs); `models` gains `Model`,
# `MLP`, `Sequential`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `ReLU`: the derivative is 1 where $x > 0$ and 0 elsewhere, so backward needs only *where* $x$
# was positive. Forward keeps that as a boolean mask (one byte per element) instead of the input
# (`retain_inputs(())`), and only when a graph is recorded (`needs_input_grad` is then not
# empty). Backward, `gy * self.mask`, is linear in `gy`: it can be differentiated again, and the
# second derivative of ReLU is zero. The mask is read off the output, `y != 0`: one comparison,
# where `~(x <= 0)` would take a comparison and a negation. It says the same as `x > 0`
# everywhere but at `nan`, where the output is `nan` as well and `nan != 0` is true: there the
# gradient passes, as in PyTorch (whose backward zeroes the gradient where `x <= 0`).

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function


class ReLU(Function):
    """y = max(x, 0); dy/dx = 0 where x <= 0, else 1.

    Backward needs only *where* x was positive, so a boolean mask (one byte per
    element) is kept instead of the input. The derivative is piecewise constant,
    so the second derivative is zero: ``gy * mask`` is differentiable in ``gy``.
    """

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        y = xp.maximum(x, 0)
        if self.needs_input_grad:
            self.mask = y != 0  # x > 0, and nan (whose output is nan): as in PyTorch
        return y

    def backward(self, gy):
        return gy * self.mask


# %%
#| export dezero_like/functions.py
def relu(x):
    """Rectified linear unit max(x, 0), elementwise; see :class:`ReLU`."""
    return ReLU()(x)


# %% [markdown]
# `LeakyReLU` lets a little gradient through where ReLU passes none: $y = x$ for $x > 0$ and
# $y = a x$ elsewhere, with a small slope $a$. A unit whose inputs have all become negative still
# learns. Forward computes the factor, 1 or $a$, once and keeps it: it is both what $x$ is
# multiplied by and the derivative. (The book's DeZero has it with $a = 0.2$ by default;
# PyTorch's `negative_slope` is 0.01.) For float16 the factor is kept in float32 and each
# product rounded to float16 once, as PyTorch does: a float16 $a$ would be rounded first
# (0.2 is 0.199951171875 there), and about one negative element in three would be a unit off.

# %%
#| export dezero_like/functions.py
import numbers

import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _float_dtype, astype


class LeakyReLU(Function):
    """y = x where x > 0, else slope * x; dy/dx = 1 where x > 0, else slope (also at 0).
    float16 is multiplied in float32 and rounded once, forward and backward."""

    def __init__(self, slope=0.2):
        if isinstance(slope, bool) or not isinstance(slope, numbers.Real):
            raise TypeError(f"leaky_relu's slope must be a number, got {type(slope).__name__}")
        self.slope = slope

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        dtype = _float_dtype(x.dtype, complex_ok=False)
        half = dtype.type is np.float16  # the slope as a float32, the product rounded once
        if half:
            dtype = np.dtype(np.float32)
        scale = xp.where(x > 0, dtype.type(1), dtype.type(self.slope))  # nan: slope * nan
        if self.needs_input_grad:
            self.scale = scale
        y = x * scale
        return y.astype(np.float16) if half else y

    def backward(self, gy):
        gx = gy * self.scale
        return astype(gx, gy.dtype) if gx.dtype != gy.dtype else gx  # float16: back from float32


# %%
#| export dezero_like/functions.py
from dezero_like.core import _refuse_keywords

_UNAVAILABLE = "not available here"
_INPLACE = _UNAVAILABLE + ": every function returns a new Variable (drop inplace=)"


def leaky_relu(x, slope=0.2, **others):
    """Leaky ReLU: x where x > 0, else ``slope * x``; see :class:`LeakyReLU`."""
    if others:  # PyTorch's F.leaky_relu(x, negative_slope=0.1), say
        _refuse_keywords("F.leaky_relu", others, {
            "negative_slope": lambda v: f"write slope={v!r}, the same number (the slope for "
                                        "x < 0); note the default is 0.2 here, 0.01 in PyTorch",
            "inplace": _INPLACE})
    return LeakyReLU(slope)(x)


# %% [markdown]
# `ReLU`'s backward makes a new array, `gy * self.mask`. Code that computes gradients by hand
# often zeroes them in place instead, `gy.data[~self.mask] = 0`, and here that is wrong in a way
# no error shows: a gradient object is shared. `x0 + x1` hands one `gy` to both inputs, so in
# `relu(h) + h` zeroing it inside `ReLU.backward` also zeroes part of the gradient that reaches
# `h` along the other branch (the `+=` pitfall of step 15, one level up). So the package guards
# the Functions you write: while their `backward` runs, the NumPy arrays of the gradients it was
# handed are read-only (NumPy's `writeable` flag), and a write into one fails at once with a
# message that says to make a new array. `__init_subclass__` runs for every new subclass of
# `Function`; it wraps the subclass's `backward` when the class is written outside the package,
# so the package's own Functions pay nothing. (PyTorch protects its saved tensors with a
# version counter, as step 37's clock does here for assignments to `.data`; this guard checks
# the gradients.)
#
# The same habit in `forward`, `x[x < 0] = 0; return x` (or `x *= self.mask`,
# `np.maximum(x, 0, out=x)`), changes the arrays of the *input* Variables: a parameter's values,
# or an array that an earlier function keeps for its backward (`tanh` and `exp` keep their
# output, `x0 * x1` its inputs), so the model or a gradient comes out wrong with no error. So
# `forward` is guarded the same way: the NumPy arrays it is handed are read-only while it runs.

# %%
#| export dezero_like/core.py Function
import types


def __init_subclass__(cls, **kwargs):
    """Guard the ``forward`` and ``backward`` of a Function written outside the package:
    _guard_forward, _guard_backward."""
    super().__init_subclass__(**kwargs)  # a mixin's own hook still runs
    if cls.__module__.split(".")[0] == "dezero_like":
        return
    forward = cls.__dict__.get("forward")  # a staticmethod is left as it is
    if type(forward) is types.FunctionType:
        cls.forward = _guard_forward(forward)
    backward = cls.__dict__.get("backward")
    if type(backward) is types.FunctionType:
        cls.backward = _guard_backward(backward)


# %%
#| export dezero_like/core.py
import functools

import numpy as np
from dezero_like.core import Variable


class _SharedGradientError(ValueError):
    """A backward wrote into a gradient it was handed (see _guard_backward)."""


class _ChangedInputError(ValueError):
    """A forward wrote into an input array it was handed (see _guard_forward)."""


def _freeze(arrays):
    """Make the writeable NumPy arrays among ``arrays`` read-only; return them."""
    frozen = [a for a in arrays if type(a) is np.ndarray and a.flags.writeable]
    for a in frozen:
        a.flags.writeable = False
    return frozen


def _view_of(y, frozen):
    """True when ``y`` is a view into the memory of one of ``frozen`` and not a broadcast (a
    zero stride: its elements alias, as ``np.broadcast_to`` makes it, read-only for its own
    reason). NumPy's ``base`` names the array that owns the memory, which may be the input's
    own base, so the memory is compared (bounds only: cheap)."""
    if y.size > 1 and 0 in y.strides:
        return False
    return any(np.may_share_memory(y, a) for a in frozen)


def _thaw(frozen):
    """Give ``frozen`` (from _freeze) their writeable flag back."""
    # arrays that own their memory first: NumPy refuses to make a view writeable
    # while its base is read-only (one gradient may be a view of another)
    for a in sorted(frozen, key=lambda a: a.base is not None):
        a.flags.writeable = True


def _call_read_only(method, self, args, frozen, error_type, message):
    """``method(self, *args)`` while the arrays ``frozen`` (from _freeze) are read-only, and
    they are writeable again after it. A write into one of them becomes ``error_type`` with
    ``message`` (its ``{error}`` is NumPy's words), naming the Function."""
    try:
        return method(self, *args)
    except (_SharedGradientError, _ChangedInputError):
        raise  # a guarded method called from this one (super().backward) said it all
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        raise error_type(f"{type(self).__name__}." + message.format(error=error)) from error
    finally:
        _thaw(frozen)


def _guard_backward(backward):
    """``backward`` with the gradients it is handed read-only while it runs.

    Several variables may share one gradient object (``x0 + x1`` hands the same ``gy`` to
    both), so a backward that changed it in place would change another branch's gradient
    too. CuPy arrays have no read-only flag and are not guarded.
    """
    if getattr(backward, "_guarded", False):
        return backward

    @functools.wraps(backward)
    def guarded(self, *gys):
        frozen = _freeze([g.data for g in gys if isinstance(g, Variable)])
        return _call_read_only(backward, self, gys, frozen, _SharedGradientError, (
            "backward wrote into an array it may not change ({error}). The gradients handed to "
            "backward are shared: x0 + x1 hands one gy to both inputs, so changing it in place "
            "would change the other branch's gradient too. Make a new array: gx = gy * "
            "self.mask, or gx = gy.data.copy(); gx[~self.mask] = 0"))

    guarded._guarded = True
    return guarded


def _guard_forward(forward):
    """``forward`` with the input arrays it is handed read-only while it runs.

    They are the data of the input Variables: a parameter's values, or an array an earlier
    function keeps for its backward (``exp`` and ``tanh`` keep their output), so a forward
    that changed one in place would change the model or a gradient, silently. An output that
    is a view of an input (``x.reshape(...)``) is made writeable again with it. CuPy arrays
    have no read-only flag and are not guarded.
    """
    if getattr(forward, "_guarded", False):
        return forward

    @functools.wraps(forward)
    def guarded(self, *xs):
        frozen = _freeze(xs)
        if not frozen:
            return forward(self, *xs)
        ys = _call_read_only(forward, self, xs, frozen, _ChangedInputError, (
            "forward wrote into an input array ({error}). The arrays handed to forward are the "
            "input Variables' data: a parameter's values, or an array an earlier function keeps "
            "for its backward (exp and tanh keep their output), so changing them in place would "
            "change the model or a gradient. Make a new array: y = x * mask, or y = x.copy(); "
            "y[~mask] = 0"))
        for y in ys if type(ys) is tuple else (ys,):
            if type(y) is np.ndarray and y.base is not None and not y.flags.writeable \
                    and _view_of(y, frozen):
                try:
                    y.flags.writeable = True  # read-only because of the guard: not any more
                except ValueError:  # its memory is read-only for another reason
                    pass
        return ys

    guarded._guarded = True
    return guarded


# %% [markdown]
# The new module `models` starts with `Model`: a `Layer` that is a whole network, with one
# addition, `plot`, which runs the model on sample inputs and draws the graph of the result.
# `plot_dot_graph` is imported inside `plot`, so that import runs only when a model is drawn.

# %%
#| export dezero_like/models.py
"""Models: layers that are whole networks, ``from dezero_like.models import MLP``."""

from dezero_like.layers import Layer


class Model(Layer):
    """A Layer that is a whole network; adds :meth:`plot`."""

    def plot(self, *inputs, to_file="model.png"):
        """Run the model on ``inputs`` and draw the resulting graph to ``to_file``."""
        from dezero_like.utils import plot_dot_graph  # graphviz is needed only here

        y = self.forward(*inputs)
        return plot_dot_graph(y, verbose=True, to_file=to_file)


# %% [markdown]
# `MLP` builds one `Linear` layer per output size, with `activation` between them (not after the
# last). Each layer is registered by assigning it to an attribute, `l0`, `l1`, ... (`setattr`),
# and `forward` reads the layers back from those attributes (`layers` is a property that lists
# them in order, as a tuple: assign `model.layers = [...]` to change the list). So a layer
# replaced later, `model.l1 = L.Linear(2)` (a new head to fine-tune), is the one that runs,
# trains and is saved: a list of layers kept aside would still hold the old one. Both models
# share the two functions behind the property, `_get_layers` and `_set_layers`.
# `MLP(10)` is refused at once: the sizes are a tuple, `MLP((10,))` or `MLP((10, 1))`. The
# activation is a plain function and has no parameters. It is checked when the model is made:
# PyTorch's habit `activation=nn.ReLU` translates to the class `F.ReLU`, which would fail only
# at the first forward ("ReLU() takes no arguments"), and an object `F.ReLU()` is one node of
# a graph, so the second layer would call it a second time (step 70 refuses that). Both are
# refused with the function to pass instead, `F.relu`.

# %%
#| export dezero_like/models.py
import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.core import Function


def _check_step(what, f):
    """Refuse, with the fix, what would fail only in forward: not callable, a class, a
    Function object (one graph node, callable once per graph)."""
    function = f if isinstance(f, type) else type(f)
    if issubclass(function, Function):
        name = function.__name__.lower()
        fix = f"F.{name}" if callable(getattr(F, name, None)) else \
            f"a function, such as lambda x: {function.__name__}()(x)"
        kind = f"the Function class {function.__name__}" if isinstance(f, type) else \
            f"a {function.__name__} object, one node of a graph that every forward would call again"
        raise TypeError(f"{what} is {kind}; pass {fix} instead")
    if isinstance(f, type):  # L.Linear instead of L.Linear(10)
        raise TypeError(f"{what} is the class {f.__name__}; pass an instance such as "
                        f"{f.__name__}(...)")
    if isinstance(f, (list, tuple)):  # Sequential([l1, l2]): PyTorch's ModuleList habit
        raise TypeError(f"{what} is a {type(f).__name__}; pass the layers one by one, "
                        "Sequential(l1, l2), or unpack the list: Sequential(*layers)")
    if not callable(f):
        raise TypeError(f"{what} is of type {type(f).__name__}, not callable; pass a "
                        "function such as F.relu, or a layer")


def _set_layers(model, items):
    """``model.layers = items``: register each Layer as ``l0``, ``l1``, ... by position, and keep
    the order in ``_order`` (a layer's attribute name, a plain function itself)."""
    for name in model.__dict__.get("_order", ()):  # the layers of a list assigned before
        if isinstance(name, str):
            setattr(model, name, None)  # unregistered
    order = []
    for i, item in enumerate(items):
        if isinstance(item, L.Layer):
            setattr(model, f"l{i}", item)
            item = f"l{i}"
        order.append(item)
    model._order = order


def _get_layers(model):
    """The items in order, each layer read from its attribute, so a layer replaced there
    (``model.l1 = L.Linear(2)``) is the one that runs; a tuple, since editing a copy would
    change nothing: assign ``model.layers = [...]`` instead."""
    return tuple(getattr(model, f) if isinstance(f, str) else f for f in model._order)


class MLP(Model):
    """Multi-layer perceptron: Linear layers with ``activation`` between them.

    ``MLP((10, 1))`` is Linear(10) -> activation -> Linear(1). Input sizes are
    inferred on the first call.
    """

    def __init__(self, fc_output_sizes, activation=F.sigmoid):
        super().__init__()
        sizes = list(fc_output_sizes) if isinstance(fc_output_sizes, (tuple, list, range,
                                                                      np.ndarray)) else []
        if not sizes or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                                for n in sizes):
            raise TypeError(
                "MLP: fc_output_sizes must be a non-empty tuple or list of ints, the output size "
                f"of each layer, got {fc_output_sizes!r}; e.g. MLP((10, 1)) is Linear(10) -> "
                "Linear(1), and MLP((10,)) one layer")
        _check_step("MLP's activation", activation)
        self.activation = activation
        self.layers = [L.Linear(int(n)) for n in sizes]  # registered as l0, l1, ...

    layers = property(_get_layers, _set_layers, doc="The layers in order, from their attributes")

    def forward(self, x):
        *hidden, last = self.layers
        for layer in hidden:
            x = self.activation(layer(x))
        return last(x)


# %% [markdown]
# `Sequential` applies its items in order. An item may be a layer or a plain function such as
# `F.relu`; only layers are registered (as `l0`, `l1`, ... by position), and `forward` reads
# them back from there, as `MLP` does (`_order` keeps a layer's name, a function itself). An
# item that cannot be called, a class, or a Function object is refused at once, as for `MLP`,
# with its position in the message.

# %%
#| export dezero_like/models.py
class Sequential(Model):
    """Apply layers (or plain functions such as ``F.relu``) one after the other."""

    def __init__(self, *layers):
        super().__init__()
        for i, layer in enumerate(layers):
            _check_step(f"Sequential item {i}", layer)
        self.layers = layers  # each layer registered as l0, l1, ... by position

    layers = property(_get_layers, _set_layers, doc="The items in order, layers from their "
                      "attributes")

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# %% [markdown]
# The package's `__init__` imports `models`, so `dz.models` exists after
# `import dezero_like as dz`, and `Model`, so the book's `from dezero import Model` works as
# `from dezero_like import Model`.

# %%
#| export dezero_like/__init__.py
from dezero_like import models
from dezero_like.models import Model


# %%
import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.models import MLP, Model, Sequential
from dezero_like.plot import output_dir, plot_curves, written

out_dir = output_dir(46)  # every file this step writes goes here


def describe(model, x):
    """Print each layer of an MLP/Sequential with its parameter shapes, then the totals."""
    model(x)  # create lazy weights so their shapes are known
    for i, layer in enumerate(model.layers):
        if isinstance(layer, L.Layer):
            shapes = ", ".join(f"{q.name}{q.shape}" for q in layer.params())
            print(f"  {i}: {type(layer).__name__:<8} {shapes}")
        else:
            print(f"  {i}: {layer.__name__}")
    total = sum(q.size for q in model.params())
    print(f"  {len(list(model.params()))} parameter arrays, {total} numbers")


np.random.seed(0)
mlp = MLP((10, 1))
print("MLP((10, 1)), activation", mlp.activation.__name__)
describe(mlp, np.zeros((1, 1), np.float32))

# %% [markdown]
# `mlp.plot(x, to_file=...)` runs the model on a sample batch `x` (five examples here) and
# draws the graph of the result: Graphviz's `dot` renders it when it is installed, the
# pip-installed `graphviz-pure` otherwise. Blue boxes are functions, orange ellipses the
# variables with their shapes, the parameters `W` and `b` among them; the input batch is grey,
# a constant that wants no gradient. `Linear`, `Sigmoid`, `Linear`: step 44's network, built
# by `MLP((10, 1))`. (The small empty ellipse between `Linear` and `Sigmoid` is an
# intermediate result whose array nobody keeps: the sigmoid's backward needs only its
# output. From step 69 on the graph drops such arrays, and the package you import is the
# finished one, so the ellipse has no shape to show.)

# %%
image = written(mlp.plot(np.zeros((5, 1), np.float32), to_file=out_dir / "mlp.png"))
image

# %% [markdown]
# `Sequential` spells out the same kind of network element by element, which is
# convenient when the activations differ between layers:

# %%
seq = Sequential(L.Linear(32), F.relu, L.Linear(16), F.tanh, L.Linear(3))
print("Sequential:")
describe(seq, np.zeros((1, 8), np.float32))

# %% [markdown]
# ## Writing a model
#
# Your own model is a `Model` subclass; it gains `plot` and everything a Layer
# has (`params`, `cleargrads`; saving and loading weights arrive in step 55):

# %%
class Residual(Model):
    """y = x + f(x): the skip connection behind very deep networks."""

    def __init__(self, size):
        super().__init__()
        self.inner = MLP((size, size), activation=F.tanh)

    def forward(self, x):
        return x + self.inner(x)


res = Residual(4)
print("Residual output shape:", res(np.ones((2, 4), np.float32)).shape,
      "| parameter arrays:", len(list(res.params())))

# %% [markdown]
# ## Training an MLP on the sine data
#
# The training loop of step 45 works unchanged for any model. Float64 data
# flows through float32 weights here, so we convert the data once, up front,
# to keep everything in float32.

# %%
np.random.seed(0)
x = np.random.rand(100, 1).astype(np.float32)
y = (np.sin(2 * np.pi * x) + np.random.rand(100, 1)).astype(np.float32)
np.random.seed(1)
model = MLP((10, 1))
model(x)
model.l0.W.data *= 5.0  # wide first layer, as in step 44

lr = 0.3
losses = []
for _ in range(4000):
    loss = F.mean_squared_error(y, model(x))
    model.cleargrads()
    loss.backward()
    for q in model.params():
        q.data -= lr * q.grad.data
    losses.append(float(loss.data))
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, dtype {loss.dtype}")
fig = plot_curves({"training loss (MSE)": losses}, xlabel="iteration", logy=True,
                  to_file=out_dir / "loss.png")

# %% [markdown]
# ## Exercise 1: counting the numbers of a deeper MLP
# Build `deep = MLP((20, 20, 20, 1), activation=F.relu)` and store the number
# of values in its parameters (`sum(q.size for q in deep.params())`), after
# one call on a (1, 1) input, in `count`. By hand:
# $(1\cdot20+20) + 2(20\cdot20+20) + (20\cdot1+1)$.

# %%
#| exercise
deep = ...  # MLP((20, 20, 20, 1), activation=F.relu)
count = ...  # call deep once on np.zeros((1, 1), np.float32), then sum the parameter sizes

# %%
#| solution
deep = MLP((20, 20, 20, 1), activation=F.relu)
deep(np.zeros((1, 1), np.float32))
count = sum(q.size for q in deep.params())

# %%
#| check
assert isinstance(deep, MLP), f"deep should be an MLP, got {type(deep).__name__}"
assert len(deep.layers) == 4, f"MLP((20, 20, 20, 1)) has 4 Linear layers, got {len(deep.layers)}"
expected = (1 * 20 + 20) + 2 * (20 * 20 + 20) + (20 * 1 + 1)
assert count == expected, (
    f"expected {expected} numbers, got {count!r}: call deep once first (the weights are lazy)"
)
print(f"self-check passed: the MLP holds {expected} numbers")

# %% [markdown]
# ## Exercise 2: `ReLU`
# Write the ReLU function of this step yourself, as a `Function`. `forward`
# takes and returns NumPy arrays: the larger of x and 0 elementwise; it also
# keeps what `backward` will need, where the input was positive (a boolean
# array of x's shape). `backward` receives `gy` as a Variable and returns a
# new one: the gradient where the input was positive, 0 everywhere else. The self-check
# compares it with `F.relu` on random inputs (away from 0, where the
# derivative jumps) and runs `gradient_check`.

# %%
#| exercise
from dezero_like import Function


class MyReLU(Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 46): max(x, 0) elementwise; keep where x > 0")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 46): gy where forward's x was > 0, else 0")

# %%
#| solution
from dezero_like import Function


class MyReLU(Function):
    def forward(self, x):
        self.mask = x > 0
        return np.maximum(x, 0)

    def backward(self, gy):
        return gy * self.mask

# %%
#| check
from dezero_like import Variable
from dezero_like.utils import gradient_check

data = np.random.default_rng(0).normal(size=(3, 4))
data = np.where(np.abs(data) < 0.1, 0.5, data)  # central differences need no kink nearby
try:
    out = MyReLU()(Variable(data.copy()))
except NotImplementedError as e:
    raise AssertionError(f"MyReLU is not written yet: {e}") from None
assert np.array_equal(out.data, F.relu(data).data), "forward should match F.relu: max(x, 0)"
gradient_check(lambda v: MyReLU()(v), data,
               hint="backward is wrong: gy passes where x > 0 and is 0 elsewhere; gy, the "
                    "gradient from above, is not all ones here")
# relu(v) + v: Add hands one gradient object to both branches (a backward that changes it in
# place is stopped by the package with a message; by hand it would change v's gradient too)
gradient_check(lambda v: MyReLU()(v) + v, data,
               hint="backward is wrong when its gradient is shared with another branch: return "
                    "a new array")
print("self-check passed: MyReLU matches F.relu, and its gradient is the mask")
