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

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Parameter`; `layers` gains `Layer`, `Linear`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Parameter` adds nothing to `Variable`: it computes, differentiates and prints the same way.
# Only its type differs, and that type is what a layer looks for to tell its weights from other
# values. One thing is refused: PyTorch's manual update `for p in model.params(): p -= lr * p.grad`.
# A Variable has no in-place arithmetic, so Python would compute `p - lr * p.grad` and bind the
# *name* `p` to that new Variable, leaving the weights unchanged. A Parameter's `-=`, `+=`, `*=`,
# `/=`, `**=` and `@=` raise a TypeError that says to write `p.data -= lr * p.grad.data` instead.
# (A plain Variable keeps them: `total_loss += loss` is meant to rebind.)

# %%
#| export dezero_like/core.py
from dezero_like.core import Variable


def _refuse_in_place(op):
    """A method for ``p op= value`` on a Parameter that raises, saying how to update ``p.data``."""
    def method(self, other):
        raise TypeError(
            f"p {op} ... on a Parameter p would only rebind the name p to a new Variable; the "
            f"weights would not change. Update the array in place: p.data {op} ..., e.g. "
            "p.data -= lr * p.grad.data (or use an optimizer)")
    return method


class Parameter(Variable):
    """A Variable that a Layer owns and an optimizer updates."""

    __slots__ = ()

    __iadd__ = _refuse_in_place("+=")
    __isub__ = _refuse_in_place("-=")
    __imul__ = _refuse_in_place("*=")
    __itruediv__ = _refuse_in_place("/=")
    __ipow__ = _refuse_in_place("**=")
    __imatmul__ = _refuse_in_place("@=")


# %% [markdown]
# `Layer` registers parameters in `__setattr__`: assigning a `Parameter` or a `Layer` to an
# attribute adds the name to `_param_names`, in order, and assigning something else under that
# name (`l.W = None`, another object) removes it; an array assigned over a Parameter is refused,
# with the fix `l.W.data = array`, since the array would silently stop being trained and saved,
# and a plain Variable that requires grad gets a warning for the same reason. `params()` walks the
# names, going into sub-layers, and gives a parameter shared by two layers only once. It gives
# them one after the other, once, as a generator would; but where a generator run out gives
# nothing, silently (`params = model.params()` written once before the loop over the epochs
# updates the model in the first epoch only), a second loop over the same `params()` is refused by
# `_OnePass`, with the fix. `__init__` creates the list with `object.__setattr__`, which bypasses
# the registering `__setattr__`. `params()` does not look inside lists, tuples or dicts (step 47's
# `setup` warns when one holds layers that are not registered otherwise, and when a weight is a
# plain Variable). PyTorch's `model.parameters()` and `model.zero_grad()` are `params()` and
# `cleargrads()` here (step 63 makes PyTorch's names say what to write). A `forward` that makes a
# Parameter or a sub-layer anew over one that already holds weights (`self.W = Parameter(...)`
# inside `forward`) starts it from its initial values on every call, so the layer never
# learns: `_replaced_in_forward` warns (a Parameter of another shape, or one the layer already
# holds, is left alone). Calling a layer runs its
# `forward`; a `forward` that computes its result and forgets `return` gives `None`, which would
# fail later in some other function, so `__call__` says so at once.
#
# `cleargrads()`, and an optimizer's update (step 47), need the parameters on every training
# step, and the walk through the sub-layers gives the same list each time. So a layer keeps
# the list it made (`_param_list`) with the value of a counter, `Layer._edits`, that
# `__setattr__` and `__delattr__` raise whenever some layer registers, replaces or drops a
# Parameter or a sub-layer; a list made before the last such edit is made again. One counter
# for all layers, because a layer does not know which models hold it: a sub-layer added to
# `model.l1` changes `model`'s list too.

# %%
#| export dezero_like/layers.py
"""Layers: objects that own Parameters, ``import dezero_like.layers as L``.

A :class:`Layer` registers every :class:`~dezero_like.core.Parameter` and every
sub-layer assigned to one of its attributes, so ``params()`` can walk them all
(an optimizer updates exactly these). Weights are saved to and loaded from
NumPy ``.npz`` files, never with pickle.
"""

import sys
import warnings

from dezero_like import cuda
from dezero_like.core import Parameter, Variable, _is_array


def _leaving_training(layer, name, value):
    """``layer.name``, a Parameter, is being replaced by ``value``, which is not one.

    An array (or a torch tensor) would silently leave training and the saved weights: refused.
    A Variable that requires grad would too (an optimizer never sees it), a computed one as
    well (``l.W = l.W * 0.5`` for ``l.W.data *= 0.5``): a warning. ``None``, or a Variable
    without a gradient (a constant), says what it means and passes quietly.
    """
    if isinstance(value, Variable):
        if value.requires_grad:
            warnings.warn(
                f"{type(layer).__name__}.{name} was a Parameter and is now a plain Variable: "
                "params() no longer sees it, so optimizers stop training it, cleargrads stops "
                f"clearing it and save_weights stops saving it. Set its values with "
                f"layer.{name}.data = array, or assign dz.Parameter(array)", stacklevel=3)
    elif _is_array(value) or hasattr(value, "__array__"):
        raise TypeError(
            f"{type(layer).__name__}.{name} is a Parameter; to set its values write "
            f"layer.{name}.data = array (or assign a new Parameter(array))")


def _replaced_in_forward(layer, name, value):
    """Warn when ``layer``'s own ``forward`` replaces its Parameter (one holding data) or its
    sub-layer ``name`` with a new one: made on every call, the weights start from random each
    time and the optimizer's steps go to the object just thrown away. Checked only when an
    attribute is replaced, never on the usual path. A Parameter of another shape (a layer
    that makes its weights again when the input's size changes) and one the layer already
    holds (tied weights, sub-layers swapped) are no mistake."""
    old = layer.__dict__.get(name)
    kind = Parameter if isinstance(value, Parameter) else Layer
    if old is value or not isinstance(old, kind) or (kind is Parameter and old.data is None):
        return
    caller = sys._getframe(2)  # the code that assigned (1 is Layer.__setattr__)
    if caller.f_code.co_name != "forward" or caller.f_locals.get("self") is not layer:
        return
    if kind is Parameter and (value.data is None or value.data.shape != old.data.shape):
        return  # made again for an input of another size (a layer that adapts): on purpose
    if any(v is value for v in (layer.params() if kind is Parameter else layer._walk_layers())):
        return  # one the layer already holds (tied weights, two sub-layers swapped): not new
    if kind is Layer and "_attr_name" in value.__dict__:
        return  # a layer some layer held before (the second half of a swap): not new
    made = "Parameter" if kind is Parameter else type(value).__name__
    where = ("in __init__, or only when it is still empty (if self.{0}.data is None: "
             "self.{0}.data = ...)" if kind is Parameter else "in __init__").format(name)
    warnings.warn(
        f"{type(layer).__name__}.forward replaced self.{name}, which already held weights, with "
        f"a new {made}: made in forward, it starts again from its initial values on every "
        "call, and the optimizer's steps went to the one just thrown away, so the layer never "
        "learns. Create it once, " + where, RuntimeWarning, stacklevel=3)


class _OnePass:
    """What ``params()`` returns: the parameters' generator, which gives them once, wrapped so
    that a loop over it after it has run out is refused, where the generator alone would give
    nothing, silently (``params = model.params()`` kept for every epoch would update the model
    once). A loop runs the generator itself: nothing is added per parameter."""

    def __init__(self, items):
        self._items = items

    def __iter__(self):
        if self._items.gi_frame is None:  # a generator that has run out has no frame left
            raise RuntimeError(
                "this params() has run out: it gives the parameters once, as a generator (and "
                "PyTorch's parameters()) does, so this loop would see none of them, silently. "
                "Call model.params() again for each loop, or keep a list: "
                "params = list(model.params())")
        return self._items

    def __next__(self):  # next(model.params()), PyTorch's habit for the first parameter
        return next(self._items)


class _KeptParams:
    """A layer's parameter list (``Layer._param_list``) and the count of edits it was made at."""

    def __init__(self, edits, params):
        self.edits = edits
        self.params = params


class Layer:
    """Base class of layers and models.

    Assigning a Parameter or a Layer to an attribute registers it, in order::

        self.W = Parameter(...)   # a parameter of this layer
        self.l1 = Linear(10)      # a sub-layer: its parameters are ours too

    Subclasses write ``forward(*inputs)``; calling the layer calls it.
    """

    def __init__(self):
        object.__setattr__(self, "_param_names", [])

    def _names(self):
        names = self.__dict__.get("_param_names")
        if names is None:  # a subclass forgot super().__init__(): be forgiving
            names = []
            object.__setattr__(self, "_param_names", names)
        return names

    _edits = 0  # registrations changed, in any layer: a kept parameter list is out of date

    def __setattr__(self, name, value):
        names = self._names()
        if isinstance(value, (Parameter, Layer)):
            Layer._edits += 1
            if name not in names:
                names.append(name)
            else:
                _replaced_in_forward(self, name, value)
            if isinstance(value, Layer) and "_attr_name" not in value.__dict__:
                object.__setattr__(value, "_attr_name", name)  # for error messages
        elif name in names:  # replaced by something that is not a parameter
            if isinstance(self.__dict__.get(name), Parameter):
                _leaving_training(self, name, value)
            names.remove(name)
            Layer._edits += 1
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        names = self._names()
        if name in names:
            names.remove(name)
            Layer._edits += 1
        object.__delattr__(self, name)

    def __call__(self, *inputs):
        outputs = self.forward(*inputs)
        if outputs is None:  # a forward that computes its result and forgets to return it
            raise TypeError(f"{type(self).__name__}.forward returned None: did it forget to "
                            "return its result (return y at its end)?")
        return outputs

    def forward(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def _describe(self):
        """How error messages name this layer: ``layer 'l1' (Linear)``, or ``a Linear layer``."""
        name = self.__dict__.get("_attr_name")
        kind = type(self).__name__
        return f"layer {name!r} ({kind})" if name else f"a {kind} layer"

    # ---- parameters -----------------------------------------------------------
    def params(self):
        """Every Parameter of this layer and of its sub-layers (depth first), once each.

        A parameter shared by two layers (tied weights, or one layer used twice
        in a model) is given the first time it is met only, so an optimizer
        updates it once per step. Like a generator, what it returns gives them once:
        call ``params()`` again for the next loop (a second loop over it is refused).
        """
        return _OnePass(self._unique_params())

    def _unique_params(self):
        seen = set()
        for p in self._walk_params():
            if id(p) not in seen:
                seen.add(id(p))
                yield p

    def _walk_params(self):
        for name in self._names():
            obj = self.__dict__[name]
            if isinstance(obj, Layer):
                yield from obj._walk_params()
            else:
                yield obj

    def _walk_layers(self):
        """This layer and every sub-layer, depth first."""
        yield self
        for name in self._names():
            obj = self.__dict__[name]
            if isinstance(obj, Layer):
                yield from obj._walk_layers()

    def _creation_xp(self, x):
        """The array module a lazy parameter is created with: the first input's (NumPy or
        CuPy). Step 54 makes it respect the device ``to_gpu()``/``to_cpu()`` chose."""
        return cuda.get_array_module(x)

    def _param_list(self):
        """``list(self.params())``, kept for the next call: ``cleargrads`` and an optimizer's
        update ask for it on every training step, and the walk through the sub-layers is the
        same each time. A layer registering, replacing or dropping a Parameter or a sub-layer,
        anywhere, counts in ``Layer._edits``, and a list made before that is made again."""
        if type(self).params is not Layer.params:  # a layer that lists its own
            return list(self.params())
        kept = self.__dict__.get("_kept_params")
        if kept is None or kept.edits != Layer._edits:
            kept = _KeptParams(Layer._edits, list(self._unique_params()))
            object.__setattr__(self, "_kept_params", kept)
        return kept.params

    def cleargrads(self):
        """Reset the gradient of every parameter (call before each backward)."""
        for param in self._param_list():
            param.cleargrad()


# %% [markdown]
# The `Linear` layer owns `W` (in_size, out_size) and `b` (out_size,) and calls `F.linear`.
# Without `in_size`, `W` is registered with no data and filled on the first call from the
# input's width; `_init_W` sets `W.data`, so the registered Parameter stays the same object. The
# scale $\sqrt{1/n_{in}}$ keeps the outputs about as large as the inputs. A shape error from
# `F.linear` is raised again with the layer's name and a hint from `_batch_hint`. A 1-d input
# `(100,)` can be 100 examples of one number, `x.reshape(-1, 1)`, or one example of 100 numbers,
# `x.reshape(1, -1)`: the hint names the one that fits `in_size` when it is known, else both.
# Images `(N, C, H, W)` are flattened first (`F.flatten(x)`). The weights' `dtype` must be a
# floating one (`_weight_dtype`): `Linear(10, dtype=int)` would cut weights of about $\pm 0.3$ to
# mostly 0, a layer that computes nonsense and that no optimizer can train.

# %%
#| export dezero_like/layers.py
import numpy as np
import dezero_like.functions as F
from dezero_like import cuda
from dezero_like.core import Parameter, as_variable


def _weight_dtype(owner, dtype):
    """``np.dtype(dtype)`` when it can hold weights drawn at random around 0; a clear error for
    integers and bools, which would cut them to mostly 0 (and which no optimizer can train)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise TypeError(
            f"{owner}: dtype must be a floating dtype (np.float32, the default, np.float64 or "
            f"np.float16), got {dtype}: the weights are drawn at random around 0 (about "
            f"+-0.3), which {dtype} cannot hold; they would be cut to a few values and could "
            "not be trained")
    return dtype


class Linear(Layer):
    """Fully connected layer: y = x @ W + b.

    ``W`` has shape (in_size, out_size) and is initialised with
    ``randn * sqrt(1 / in_size)``, which keeps the scale of the outputs close
    to that of the inputs. When ``in_size`` is not given, ``W`` is created on
    the first call from the width of the input (a "lazy" layer).
    """

    def __init__(self, out_size, nobias=False, dtype=np.float32, in_size=None):
        super().__init__()
        for what, size in (("out_size", out_size), ("in_size", in_size)):
            if size is not None and not (isinstance(size, (int, np.integer)) and size >= 1):
                raise ValueError(f"Linear: {what} must be a positive integer, got {size!r}")
        if not isinstance(nobias, (bool, np.bool_)):  # Linear(784, 100), PyTorch's order
            raise TypeError(
                f"Linear: nobias must be True or False, got {nobias!r}. The output size comes "
                f"first here: PyTorch's Linear({out_size!r}, {nobias!r}) is written "
                f"Linear({nobias!r}, in_size={out_size!r}), or Linear({nobias!r}) to take the "
                "input size from the first batch"
            )
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = _weight_dtype("Linear", dtype)
        self.W = Parameter(None, name="W")
        if in_size is not None:
            self._init_W()
        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_size, dtype=self.dtype), name="b")

    def _init_W(self, xp=np):
        n_in, n_out = self.in_size, self.out_size
        W = xp.random.randn(n_in, n_out) * (1.0 / n_in) ** 0.5
        self.W.data = W.astype(self.dtype)

    def forward(self, x):
        if self.W.data is None:
            x = as_variable(x)  # a list gets as_variable's clear error, not an AttributeError
            if x.ndim != 2:
                raise ValueError(f"Linear expects a batch of shape (N, in_size), got {x.shape}; "
                                 + _batch_hint(x.shape, self.in_size))
            self.in_size = x.shape[1]
            xp = self._creation_xp(x)
            self._init_W(xp)
            if xp is not np and self.b is not None:
                self.b.to_gpu()  # the input is on the GPU: keep the whole layer there
        try:
            return F.linear(x, self.W, self.b)
        except ValueError as e:  # F.linear checks the shapes; say which layer it was
            shape = x.shape if hasattr(x, "shape") else np.shape(x)
            if "PyTorch" in str(e):  # the weights are transposed: F.linear said what to do
                raise ValueError(f"{self._describe()}: {e}") from None
            raise ValueError(f"{self._describe()}: {e}; {_batch_hint(shape, self.in_size)}"
                             ) from None


def _batch_hint(shape, in_size=None):
    """What to do with an input of ``shape`` that a Linear layer cannot take."""
    if len(shape) == 1:  # N examples of one feature, or one example of N features
        column = f"for {shape[0]} examples of one number each, x.reshape(-1, 1)"
        row = f"for one example of {shape[0]} numbers, x.reshape(1, -1)"
        if in_size == 1:
            return column
        if in_size == shape[0]:
            return row
        if in_size and shape[0] % in_size == 0:
            return (f"for {shape[0] // in_size} examples of {in_size} numbers each, "
                    f"x.reshape(-1, {in_size})")
        return f"{column}; {row}"
    if len(shape) < 1:  # a single number
        return "make a batch of one example of one number: x.reshape(1, 1)"
    if len(shape) > 2:  # images (N, C, H, W)
        return "flatten each example first: F.flatten(x), or x.reshape(len(x), -1)"
    return "check the output size of the layer before it (or the width of the data)"


# %% [markdown]
# The package's `__init__` imports the new module and classes, so `dz.layers`, `dz.Parameter`
# and `dz.Layer` (the book's `from dezero import Layer`) exist after `import dezero_like as dz`;
# the code below imports `Parameter` from there.

# %%
#| export dezero_like/__init__.py
from dezero_like import layers
from dezero_like.core import Parameter
from dezero_like.layers import Layer


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
fig = plot_curves({"training loss (MSE)": losses}, xlabel="iteration", logy=True,
                  to_file=out_dir / "loss.png")

# %% [markdown]
# The loop no longer names a single parameter: `cleargrads()` and `params()`
# find them all, whatever the network looks like. Step 46 adds a `Model` class
# and ready-made networks; step 47 moves the update rule into optimizers.
#
# ## Exercise
# Give `Scale` a bias: write the layer `ScaleShift(size)` with Parameters `w`
# (ones) and `c` (zeros), both of shape (size,), computing $y = x w + c$
# element by element (both broadcast over the rows of $x$). It must register
# exactly two parameters, named `w` and `c`: reread how `Scale` above
# registers its one. The self-check sets random values for `w` and `c`, compares the
# output and both parameter gradients with the formulas, runs
# `gradient_check` with respect to the input, and checks `cleargrads`.

# %%
#| exercise
class ScaleShift(L.Layer):
    def __init__(self, size):
        super().__init__()
        raise NotImplementedError("Exercise (step 45): register two named Parameters of "
                                  "shape (size,), w of ones and c of zeros, as Scale does")

    def forward(self, x):
        raise NotImplementedError("Exercise (step 45): scale x by w, then shift it by c")

# %%
#| solution
class ScaleShift(L.Layer):
    def __init__(self, size):
        super().__init__()
        self.w = Parameter(np.ones(size), name="w")
        self.c = Parameter(np.zeros(size), name="c")

    def forward(self, x):
        return x * self.w + self.c

# %%
#| check
try:
    ss = ScaleShift(4)
except NotImplementedError as e:
    raise AssertionError(f"ScaleShift is not written yet: {e}") from None
names = sorted(str(q.name) for q in ss.params())
assert "None" not in names, (
    f"ScaleShift registers {len(names)} Parameters, but not all have a name (got {names}): "
    "give each its name when you create it, as Scale does"
)
assert names == ["c", "w"], f"ScaleShift should register the Parameters w and c, got {names}"
assert ss.w.shape == (4,) and ss.c.shape == (4,), (
    f"for size 4, w and c should have shape (4,), got {ss.w.shape} and {ss.c.shape}"
)
assert np.array_equal(ss.w.data, np.ones(4)) and np.array_equal(ss.c.data, np.zeros(4)), (
    "w starts at ones and c at zeros"
)
check_rng = np.random.default_rng(0)
ss.w.data, ss.c.data = check_rng.normal(size=4), check_rng.normal(size=4)
xs = check_rng.normal(size=(3, 4))
out = ss(xs)
assert isinstance(out, dz.Variable) and out.creator is not None, (
    "the output has no graph, so no gradient can reach w and c: compute forward with the "
    "Parameters themselves, not with their .data"
)
assert np.allclose(out.data, xs * ss.w.data + ss.c.data), (
    "forward should be x w + c, element by element"
)
F.sum(out).backward()
assert np.allclose(ss.w.grad.data, xs.sum(axis=0)), "w's gradient is the column sums of x"
assert np.allclose(ss.c.grad.data, 3.0), "c's gradient is 3 (the number of rows) everywhere"
dz.utils.gradient_check(
    lambda v: ss(v), xs,
    hint="the gradient of x is wrong: compute forward with the operators on the Variables, not "
         "on their .data, so that backprop reaches x")
ss.cleargrads()
assert ss.w.grad is None and ss.c.grad is None, "cleargrads should reach both parameters"
print("self-check passed: ScaleShift registers w and c, and its gradients are right")
