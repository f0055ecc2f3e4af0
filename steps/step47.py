# %% [markdown]
# # Step 47: Optimizers — SGD, MomentumSGD, AdaGrad, AdaDelta, Adam
#
# Until now the update rule was one line in the training loop:
# `q.data -= lr * q.grad.data`. Better rules exist, and they often need
# *memory* per parameter (a running average of past gradients, for example).
# An **optimizer** object holds the rule and that memory:
#
# ```python
# optimizer = SGD(lr=0.1).setup(model)   # which parameters to update
# ...
# loss.backward()
# optimizer.update()                     # one step for every parameter with a grad
# ```
#
# `update()` changes `param.data` **in place**, in the parameter's own dtype,
# without building a graph (so a parameter of integers whose step would be a
# fraction is refused with that reason, before any parameter changes). Before
# the update it runs *hooks* (functions of the parameter list):
# `WeightDecay(rate)` adds `rate * W` to each gradient, `ClipGrad(max_norm)`
# scales all gradients down when their joint norm is too large,
# `FreezeParam(layer)` keeps a layer fixed (it runs before the others).
#
# The rules, for a parameter $W$ with gradient $g$ (products elementwise):
#
# | optimizer | update |
# | --- | --- |
# | SGD | $W \leftarrow W - \eta g$ |
# | MomentumSGD | $v \leftarrow \mu v - \eta g,\; W \leftarrow W + v$ |
# | AdaGrad | $h \leftarrow h + g^2,\; W \leftarrow W - \eta\, g / (\sqrt h + \epsilon)$ |
#
# AdaDelta keeps running averages $s$ of $g^2$ and $d$ of past squared steps:
#
# $$s \leftarrow \rho s + (1-\rho) g^2,\quad
#   \Delta = \sqrt{\tfrac{d+\epsilon}{s+\epsilon}}\, g,\quad
#   d \leftarrow \rho d + (1-\rho)\Delta^2,\quad W \leftarrow W - \Delta .$$
#
# Adam keeps running averages $m$ of $g$ and $v$ of $g^2$, and counts steps $t$:
#
# $$m \leftarrow \beta_1 m + (1-\beta_1) g,\quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\quad
#   W \leftarrow W - \alpha \frac{\sqrt{1-\beta_2^t}}{1-\beta_1^t}\,
#   \frac{m}{\sqrt v + \epsilon} .$$
#
# Momentum lets steps build up speed along a consistent direction; AdaGrad,
# AdaDelta and Adam give every weight its own step size, smaller where the
# gradient has been large. Adam's factor with $t$ is the *bias correction*
# (Kingma and Ba, 2015, "Adam: A Method for Stochastic Optimization", section 3):
# $m$ and $v$ start at zero, so early on they are $(1-\beta_1^t)$ and
# $(1-\beta_2^t)$ times the averages they estimate. Both are too small, but
# $v$ much more so (it enters under a square root), so **without** the factor
# the step $m/\sqrt v$ would be too *large*: with the defaults
# $\beta_1 = 0.9$, $\beta_2 = 0.999$ it is $0.1/\sqrt{0.001} \approx 3.2$ times
# the corrected step at $t = 1$ (the next cell prints the ratio
# $(1-\beta_1^t)/\sqrt{1-\beta_2^t}$ for a few $t$).

# %% [markdown]
# ### The package code of this step
#
# In this step `optimizers` gains `Optimizer`, `SGD`, `MomentumSGD`, `AdaGrad`, `AdaDelta`,
# `Adam`, `WeightDecay`, `ClipGrad`, `FreezeParam`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# The module starts with two helpers. A hook that replaces `param.grad` builds a new gradient
# with `_new_grad`, a Variable that records no graph (`as_array` is there because arithmetic on a
# 0-d array returns a NumPy scalar, not an array). `_checked` refuses a setting that is not a
# finite number in its range: `SGD(lr="0.1")` would otherwise fail deep inside `update()`, and
# `SGD(lr=-0.1)` would quietly make the loss climb.

# %%
#| export dezero_like/optimizers.py
"""Optimizers: turn gradients into parameter updates.

``optimizer = SGD(lr=0.1).setup(model)``; after each ``loss.backward()`` call
``optimizer.update()``. Updates change ``param.data`` in place, in the
parameter's dtype, and build no graph. Hooks (``add_hook``) see the list of
parameters with gradients before the update: weight decay, gradient clipping,
freezing layers (FreezeParam runs first). (Step 67 adds loss scaling: ``update`` divides it
out.)
"""

import inspect
import math
import warnings
from collections.abc import Iterator

from dezero_like.core import Parameter, Variable, as_array


def _new_grad(data):
    """A fresh gradient Variable; arithmetic on a 0-d array gives a NumPy scalar, made an array."""
    return Variable(as_array(data), requires_grad=False)


def _warn_unregistered(target, effect=None, stacklevel=3):
    """Warn about a list, tuple or dict in the model holding layers or parameters that
    ``params()`` does not reach, and about a weight kept as a plain Variable (a model training
    only part of itself, silently).

    Checked in ``setup``, ``save_weights`` and ``load_weights`` (step 55), when the model is
    complete: a list of layers that are also attributes (the book's ``MLP`` kept one) is fine.
    A method that walks the model's layers the same way (``to_gpu``, ``reset_state``) passes
    ``effect``, what it skips; then only the lists are looked at.
    """
    from dezero_like.layers import Layer  # here: layers is imported after optimizers

    if not isinstance(target, Layer):  # another object with params() lists them itself
        return
    layers = list(target._walk_layers())
    reached = {id(layer) for layer in layers} | {id(p) for p in target.params()}
    for layer in layers:
        for name, value in vars(layer).items():
            if effect is None and _plain_weight(value):
                warnings.warn(
                    f"{type(layer).__name__}.{name} is a Variable, not a Parameter, so params() "
                    "does not see it: optimizers do not train it and save_weights does not save "
                    f"it. Write self.{name} = dz.Parameter(...) (or Variable(..., "
                    "requires_grad=False) for a constant)", stacklevel=stacklevel)
            if not isinstance(value, _CONTAINERS):
                continue
            if any(id(v) not in reached for v in _held(value, (Layer, Parameter))):
                warnings.warn(
                    f"{type(layer).__name__}.{name} is a {type(value).__name__} holding layers "
                    "or parameters that params() does not reach: "
                    + (f"{effect}; " if effect else "")
                    + "optimizers do not train them and save_weights and load_weights skip "
                    "them. Assign each to its own attribute (self.l0 = ...), or use Sequential",
                    stacklevel=stacklevel)


def _plain_weight(value):
    """A Variable that looks like a forgotten Parameter: a leaf that requires grad and holds
    floats (not a layer's state, such as an RNN's h: None at setup, or computed by a graph)."""
    return (isinstance(value, Variable) and not isinstance(value, Parameter)
            and value.creator is None and value.requires_grad and value.data is not None
            and value.data.dtype.kind in "fc")


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _held(container, kinds, depth=4):
    """The ``kinds`` objects in a list, tuple, dict (keys and values) or set, and in those
    nested in it (to ``depth``)."""
    items = [*container, *container.values()] if isinstance(container, dict) else container
    for v in items:
        if isinstance(v, kinds):
            yield v
        elif depth > 1 and isinstance(v, _CONTAINERS):
            yield from _held(v, kinds, depth - 1)


def _floats_only(optimizer, params):
    """Refuse, before any parameter changes, a parameter of integers whose step would be a
    fraction: NumPy would refuse to store it ("Cannot cast ufunc 'subtract' output from float64
    to int64") after the parameters before it were updated. The step mixes the gradient with
    the optimizer's numbers (lr, momentum, eps, ...), so an integer gradient with integer
    settings (SGD with lr=1) still takes an integer step, as NumPy's ``p -= 1 * g`` does."""
    numbers = [v for v in vars(optimizer).values()  # NumPy scalars too (lr=np.float32(0.5))
               if type(v) in (int, float) or isinstance(v, np.number)]
    for p in params:
        kind = p._data.dtype.kind  # the slot, not the property: once per parameter per step
        if kind == "c" and not getattr(optimizer, "complex_ok", True):
            raise TypeError(
                f"{type(optimizer).__name__} scales each step by g * g, which for a complex "
                f"parameter ({p.data.dtype} {p.shape}) is not |g|^2: its steps would be wrong. "
                "Use SGD or MomentumSGD, or keep the real and imaginary parts as two real "
                "parameters")
        if kind in "iub":
            step = np.result_type(p.grad.data, *numbers)
            if not np.can_cast(step, p.data.dtype, casting="same_kind"):
                raise TypeError(
                    f"cannot update a parameter of {p.data.dtype} {p.shape}: its step (from its "
                    f"{p.grad.data.dtype} gradient and {type(optimizer).__name__}'s settings) "
                    f"is {step}, and {p.data.dtype} cannot hold it. Create the parameter with "
                    "floats, e.g. Parameter(np.array([0.0, 0.0])) or "
                    "Parameter(data.astype(np.float32))")


def _warn_no_gradient():
    warnings.warn(
        "update(): no parameter has a gradient, so nothing changes. Call loss.backward() "
        "before update(), and cleargrads() before backward() (not between backward() and "
        "update()). Or the loss came from another model than the one given to setup(): the "
        "optimizer updates that one only (optimizer.setup(model) with the model you train)",
        RuntimeWarning, stacklevel=3)


def _same_grads_as_last_update(optimizer, params):
    """Whether every gradient of ``params`` is the very object the previous ``update()`` left:
    no backward ran in between (each backward makes new gradient objects), so the step would
    repeat the last one. Weak references: the optimizer keeps no old gradient alive."""
    last = optimizer.__dict__.get("_last_grads")
    return bool(last) and len(last) == len(params) and all(
        ref() is p.grad for ref, p in zip(last, params))


def _warn_repeated_update():
    warnings.warn(
        "update() got the very gradients the previous update() used: no backward() ran since, "
        "so this repeats the last step (a notebook cell with update() run again?). Call "
        "loss.backward() before each update(); to take several steps with one gradient on "
        "purpose, warnings.filterwarnings('ignore', 'update\\(\\) got the very gradients')",
        RuntimeWarning, stacklevel=3)


def _checked(owner, name, value, low=0.0, high=None, positive=False):
    """``value``, if it is a finite real number in ``[low, high)`` (``> 0`` when ``positive``).

    A learning rate of ``"0.1"`` would fail inside ``update()``, and a negative one
    would quietly climb the loss, so both are refused at once.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:  # np.array(0.1) is a number too
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r} "
                        f"({type(value).__name__})")
    if not (value >= low and (high is None or value < high)):  # nan fails both tests
        bounds = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"{owner}: {name} must be {bounds}, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{owner}: {name} must be finite, got {value!r}")
    if positive and value == 0:
        raise ValueError(f"{owner}: {name} must be > 0, got {value!r}")
    return value


# %% [markdown]
# PyTorch makes an optimizer from the parameters, `torch.optim.SGD(model.parameters(), lr=0.1)`,
# and Adam's learning rate is `lr` there. Here the constructor takes only the settings, and
# Adam's learning rate is `alpha`. Python's own errors for these habits ("got multiple values for
# argument 'lr'") do not say so: `_refuse_torch_style` raises one that gives the line to write.
# (PyTorch's `optimizer.step()` and `optimizer.zero_grad()` are `optimizer.update()` and
# `model.cleargrads()` here; from step 63 on, those names say so.) PyTorch's settings that are
# none here get the same treatment: `SGD(lr=0.1, momentum=0.9)` names `MomentumSGD`,
# `weight_decay=` the `WeightDecay` hook (below), and Adam's `betas=(0.9, 0.99)` is written
# `beta1=0.9, beta2=0.99`.

# %%
#| export dezero_like/optimizers.py
def _pair(v):
    """``beta1=..., beta2=...`` for PyTorch's ``betas=(b1, b2)``."""
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return f"beta1={v[0]!r}, beta2={v[1]!r}"
    return "beta1=..., beta2=..."


_TORCH_SETTINGS = {  # PyTorch's optimizer settings, and what to write here instead
    "momentum": lambda v, lr: f"SGD with momentum is MomentumSGD(lr={lr}, momentum={v!r})",
    "weight_decay": lambda v, lr: f"weight decay is a hook here: optimizer.add_hook(WeightDecay("
                                  f"{v!r})) after setup (it adds rate * W to each gradient, as "
                                  "PyTorch's weight_decay does)",
    "betas": lambda v, lr: f"the betas are two settings here, {_pair(v)}",
    **dict.fromkeys(("nesterov", "amsgrad", "dampening", "lr_decay", "maximize", "foreach",
                     "fused", "capturable", "differentiable", "initial_accumulator_value"),
                    lambda v, lr: "not available here"),
}


def _torch_settings(names, kwargs):
    """``'name=: what to write'`` for each of PyTorch's settings in ``kwargs`` not in ``names``."""
    lr = repr(kwargs["lr"]) if "lr" in kwargs else "..."
    return [f"{n}={kwargs[n]!r}: {_TORCH_SETTINGS[n](kwargs[n], lr)}" for n in kwargs
            if n in _TORCH_SETTINGS and n not in names]


def _refuse_torch_style(cls, args, kwargs):
    """Refuse ``cls(model.params(), lr=0.1)``, ``Adam(lr=...)`` and PyTorch's settings
    (``momentum=`` for SGD, ``weight_decay=``, ``betas=``), saying what to write here."""
    first = args[0] if args else None
    items = first.values() if isinstance(first, dict) else \
        first if isinstance(first, (list, tuple, set)) else ()
    given_params = hasattr(first, "params") or isinstance(first, Iterator) or any(
        isinstance(v, Variable) or (isinstance(v, dict) and "params" in v) for v in items)
    torch_named = any(n in _TORCH_SETTINGS for n in kwargs)
    if not given_params and "lr" not in kwargs and not torch_named:
        return
    signature = inspect.signature(cls.__init__).parameters
    names = [n for n, p in signature.items() if n != "self" and p.kind == p.POSITIONAL_OR_KEYWORD]
    open_ended = any(p.kind == p.VAR_KEYWORD for p in signature.values())
    fixes = [] if open_ended else _torch_settings(names, kwargs)
    if not given_params and ("lr" not in kwargs or "lr" in signature or open_ended):
        if fixes:  # SGD(lr=0.1, momentum=0.9): Python's error would not say what to write
            raise TypeError(
                f"{cls.__name__} got PyTorch's setting{'s' if len(fixes) > 1 else ''} "
                f"{'; '.join(fixes)}. The settings of {cls.__name__} are "
                f"{', '.join(names) or 'none'}")
        return
    settings, left_out = {}, []
    for name, value in kwargs.items():
        if name == "lr" and "lr" not in signature and "alpha" in names:
            settings["alpha"] = value  # Adam
        elif name in names:
            settings[name] = value
        else:
            left_out.append(name)  # momentum=, betas=, weight_decay=: PyTorch's settings
    shown = ", ".join([*map(repr, args[1:] if given_params else args),
                       *(f"{k}={v!r}" for k, v in settings.items())])
    if not shown and names and signature[names[0]].default is not inspect.Parameter.empty:
        shown = f"{names[0]}={signature[names[0]].default!r}"  # SGD(lr=0.01): the default
    unknown = [n for n in left_out if open_ended or n not in _TORCH_SETTINGS]  # no fix to give
    parts = [f"{', '.join(unknown)}: not a setting of {cls.__name__}, whose settings are "
             f"{', '.join(names) or 'none'}"] if unknown else []
    note = f" ({'; '.join(parts + fixes)})" if parts or fixes else ""
    if given_params:
        raise TypeError(
            f"{cls.__name__}(...) takes the settings only, not the model or its parameters: "
            f"write {cls.__name__}({shown}).setup(model), then optimizer.update() after each "
            f"backward (PyTorch's optimizers take model.parameters(); here setup takes the "
            f"model){note}")
    if "alpha" in names:
        raise TypeError(f"{cls.__name__}'s learning rate is alpha: write {cls.__name__}({shown})"
                        + note)
    raise TypeError(f"{cls.__name__} has no learning rate (lr); its settings are "
                    f"{', '.join(names) or 'none'}")


# %% [markdown]
# `Optimizer` holds what every method shares. `__new__` runs that check before `__init__` sees
# the arguments. `setup` remembers the model (and warns when a list,
# tuple or dict in it holds layers that `params()` does not reach, or when a layer keeps a weight
# as a plain Variable, `self.W = Variable(...)`, which `params()` does not see either: it must be
# a `Parameter`), `update` collects the
# parameters that have a gradient, lets the hooks see (and change) them, then calls `update_one`
# on each; a subclass writes only `update_one`. Each backward makes new gradient objects, so
# `update` remembers (by weak reference) the ones it used: when the next `update` finds the very
# same ones, no backward ran in between, and the step would repeat the last one with stale
# gradients (a notebook cell with `optimizer.update()` run again); it warns. `_state` gives each
# parameter its own arrays (velocity, running averages): zeros of the parameter's shape and dtype
# (float32 for a float16 parameter, step 67 says why), made on first use and kept under
# `id(param)`, the book's key. That state is why an optimizer is made once, before the loop:
# `opt = Adam().setup(model)` written inside it starts every step from zero state, so each step
# is a first step (for Adam, `alpha * sign(g)`), with no error. `setup` remembers the optimizer
# last set up on each model (without keeping either alive), and warns when a new one of the
# same class replaces one that made a single update and keeps state; a new optimizer after a
# whole training run, or a stateless `SGD`, says nothing.
# An `id` is only unique among objects alive at the same time: once a model is
# garbage-collected, a parameter of the next model may get the very same number, and would
# inherit the dead one's velocity (or crash on its shape). So each
# entry also keeps a *weak reference* to its parameter: an entry whose parameter is gone (or is
# another object) starts afresh, and the reference's callback drops the entry when the
# parameter dies, so the optimizer does not hold dead models' arrays.
#
# An optimizer's settings are plain attributes, so that a schedule can change them while
# training (`optimizer.lr *= 0.5`). That also lets a slip through: `sgd.momentum = 0.9` (plain
# SGD has none), `sgd.alpha = 0.01` (Adam's name) or `adam.eps_ = 1e-6` would make a new
# attribute that no update ever reads, and the training go on as before without a word.
# `__setattr__` refuses a name the optimizer does not have, unless the assignment comes from one
# of the optimizer's own methods (`__init__` making its settings, or a subclass's `update_one`
# keeping its state); it names the settings there are. A name that starts with `_` is free.

# %%
#| export dezero_like/optimizers.py
import sys
import weakref

import numpy as np
from dezero_like import cuda


# the optimizer last set up on each model, weakly (neither is kept alive here)
_set_up_on = weakref.WeakKeyDictionary()


def _warn_made_in_the_loop(optimizer, target):
    """Warn when ``setup`` gives ``target`` a new optimizer of the class of the one it had, when
    that one made a single update and keeps state: an optimizer made inside the training loop.

    ``opt = Adam().setup(model)`` in the loop starts every step from zero state: each step is a
    first step (Adam's is ``alpha * sign(g)``, MomentumSGD's has no momentum), with no error.
    A new optimizer after training with the old one (a notebook cell run again, a second phase
    with other settings) follows many updates, and stateless SGD loses nothing: both are quiet.
    """
    try:
        ref = _set_up_on.get(target)
        _set_up_on[target] = weakref.ref(optimizer)
    except TypeError:  # a target that takes no weak reference: not watched
        return
    old = None if ref is None else ref()
    if old is None or old is optimizer or type(old) is not type(optimizer) \
            or old.__dict__.get("_stepped") != 1 or not old.__dict__.get("_states"):
        return
    name = type(optimizer).__name__
    warnings.warn(
        f"a new {name} was set up on this {type(target).__name__} after the last one made a "
        f"single update: an optimizer made inside the training loop starts each step from "
        f"zero state, so its state (the velocity of momentum, Adam's running averages) never "
        "builds up and every step is a first step. Make the optimizer once, before the loop "
        f"(optimizer = {name}(...).setup(model)), and call optimizer.update() in it",
        RuntimeWarning, stacklevel=3)


def _warn_replaced_target(optimizer, target):
    """Warn when ``setup`` replaces a model this optimizer never updated by an unrelated one.

    ``setup(model_a)`` then ``setup(model_b)`` (one optimizer for two models, as for a GAN)
    keeps ``model_b`` only: ``model_a`` silently stops training. Setting up a new model after
    training the old one (a notebook cell run again), the same model, or a part of it, is fine.
    """
    old = optimizer.__dict__.get("target")
    if old is None or old is target or optimizer.__dict__.get("_stepped"):
        return
    old_ids, new_ids = {id(p) for p in old.params()}, {id(p) for p in target.params()}
    if old_ids <= new_ids or new_ids <= old_ids:
        return
    name = type(optimizer).__name__
    warnings.warn(
        f"setup() was given a second model ({type(target).__name__}) before any update of the "
        f"first ({type(old).__name__}): an optimizer updates one model, the last one set up, so "
        f"the first would never be trained. Give each model its own optimizer "
        f"(opt_a = {name}(...).setup(model_a); opt_b = {name}(...).setup(model_b)), or make "
        "one Model that holds both", stacklevel=3)


def _refuse_unknown_setting(optimizer, name, value):
    """Refuse ``optimizer.<name> = value`` for a name that no code of ``optimizer`` reads."""
    cls = type(optimizer)
    mine = list(cls._settings) or [n for n in optimizer.__dict__
                                   if n[:1] != "_" and n not in ("target", "hooks")]
    others = []  # the optimizers of this module that have such a setting
    todo = list(Optimizer.__subclasses__())
    while todo:
        other = todo.pop(0)
        todo.extend(other.__subclasses__())
        if name in other._settings and other.__module__ == __name__:
            others.append(other.__name__)
    lr = getattr(optimizer, "lr", "...") if "lr" in mine else "..."
    hint = (f" ({name} is a setting of {', '.join(others)})" if others else "") + (
        f"; {_TORCH_SETTINGS[name](value, lr)}" if name in _TORCH_SETTINGS else "")
    rate = next((n for n in ("lr", "alpha") if n in mine), None)  # a schedule's example
    raise AttributeError(
        f"{cls.__name__} has no setting {name!r}: its update never reads it, so assigning it "
        f"would change nothing{hint}. The settings of {cls.__name__} are "
        f"{', '.join(mine) or 'none'}, and stay settable while training"
        + (f" (optimizer.{rate} *= 0.5 in a schedule)" if rate else "")
        + ". To keep a value of your own on the optimizer, give it a name that starts with _")


class Optimizer:
    """Base class: ``setup(target)``, ``update()``, ``add_hook(f)``.

    Subclasses write ``update_one(param)``, which changes ``param.data`` in place, and list
    their settings in ``_settings`` (``{name: (low, high)}``): every assignment of a setting,
    in ``__init__`` or later (``optimizer.lr = 0.01`` in a schedule), is checked. From outside
    the optimizer's own methods, a name it does not have is refused (``sgd.momentum = 0.9``
    would change nothing); names that start with ``_`` are free.
    """

    _settings = {}

    def __setattr__(self, name, value):
        bounds = type(self)._settings.get(name)
        if bounds is not None:
            value = _checked(type(self).__name__, name, value, *bounds)
        elif name not in self.__dict__ and not hasattr(type(self), name) \
                and name[:1] != "_" and sys._getframe(1).f_locals.get("self") is not self:
            _refuse_unknown_setting(self, name, value)  # sgd.momentum = 0.9: read by nobody
        object.__setattr__(self, name, value)

    def __new__(cls, *args, **kwargs):  # before __init__ binds (and rejects) the arguments
        _refuse_torch_style(cls, args, kwargs)
        return super().__new__(cls)

    def __init__(self):
        self.target = None
        self.hooks = []

    def setup(self, target):
        """Remember the Layer (or Model) whose parameters ``update()`` changes."""
        if not hasattr(target, "params") or isinstance(target, type):
            what = f"the class {target.__name__}" if isinstance(target, type) \
                else type(target).__name__
            raise TypeError(
                f"setup() needs a Layer or Model (something with params()), got {what}; "
                "pass an instance, e.g. MLP((10, 1)), not MLP"
            )
        if next(iter(target.params()), None) is None:
            raise ValueError(
                f"setup(): this {type(target).__name__} has no parameters, so update() would "
                "change nothing. Layers kept in a list or a dict are not registered: assign "
                "each to an attribute (self.l0 = L.Linear(...)), or use Sequential"
            )
        _warn_unregistered(target)
        _warn_replaced_target(self, target)
        _warn_made_in_the_loop(self, target)
        if target is not self.__dict__.get("target"):  # the new model has not been updated yet
            self.__dict__.pop("_stepped", None)
        self.target = target
        for hook in self.hooks:  # a FreezeParam added before, of another model's layers
            if _freezes_another_model(self, hook):
                warnings.warn(_another_model_message(self, hook), stacklevel=2)
        return self

    def add_hook(self, f):
        """Call ``f(params)`` before every update (params: those with a gradient).

        Hooks run in the order they were added, except that every :class:`FreezeParam` runs
        first: the frozen parameters' gradients are gone before ``ClipGrad`` measures the
        norm or ``WeightDecay`` adds to them (PyTorch's frozen parameters have no gradient).
        """
        if isinstance(f, type) or not callable(f):
            what = f"the class {f.__name__}" if isinstance(f, type) else repr(f)
            raise TypeError(f"add_hook() needs a function of the parameters (or an object with "
                            f"__call__), got {what}; pass an instance, e.g. WeightDecay(1e-4)")
        _check_new_hook(self.hooks, f)  # added twice: it would run twice per update
        if _freezes_another_model(self, f):  # FreezeParam(copy_of_model.l1): freezes nothing
            raise ValueError(_another_model_message(self, f))
        self.hooks.append(f)
        self.hooks.sort(key=_runs_after_freezing)  # stable: the others keep their order
        return self

    def update(self):
        """Apply one update to every parameter of the target that has a gradient."""
        if self.target is None:
            raise RuntimeError("call optimizer.setup(model) before optimizer.update()")
        params = [p for p in self.target.params() if p.grad is not None]
        if not params:
            _warn_no_gradient()
        elif _same_grads_as_last_update(self, params):
            _warn_repeated_update()
        for f in self.hooks:
            f(params)
        params = [p for p in params if p.grad is not None]  # a hook (FreezeParam) may remove one
        _floats_only(self, params)
        # setup() of another model after this is no mistake; a count: a new optimizer after a
        # single update may be one made in the loop
        self.__dict__["_stepped"] = self.__dict__.get("_stepped", 0) + 1
        self.prepare()
        for p in params:
            self.update_one(p)
        # the gradients as the hooks left them, to recognise them if update() comes again
        self.__dict__["_last_grads"] = [weakref.ref(p.grad) for p in params]

    def prepare(self):
        """Once per update, before the parameters (Adam counts its steps here)."""

    def update_one(self, param):
        raise NotImplementedError(f"{type(self).__name__} must implement update_one()")

    def _state(self, name, param):
        """Per-parameter state array (zeros of the parameter's shape and dtype on first use).

        A float16 parameter gets float32 state: Adam's average of g*g, or AdaGrad's sum, would
        round to 0 there for gradients below about 5e-3 (and its eps, 1e-8, is 0 in float16),
        and the step would divide by 0. It follows the parameter to the other device
        (``model.to_gpu()`` in the middle of training), as the parameter's own gradient does.
        """
        state = self._param_state(param)
        array = state.get(name)
        if array is None:
            xp = cuda.get_array_module(param.data)
            dtype = np.float32 if param.data.dtype == np.float16 else param.data.dtype
            array = state[name] = xp.zeros(param.data.shape, dtype=dtype)
        elif type(array) is not type(param.data):  # the parameter moved (step 54)
            xp = cuda.get_array_module(param.data)
            array = state[name] = xp.asarray(cuda.as_numpy(array))
        return array

    def _param_state(self, param):
        """The dict of ``param``'s state (its arrays, Adam's count), made on first use."""
        states = self.__dict__.setdefault("_states", {})
        key = id(param)
        entry = states.get(key)
        if entry is None or entry[0]() is not param:  # new, or a dead parameter's id reused
            me = weakref.ref(self)  # the callback must not keep the optimizer (or its arrays)

            def forget(ref, key=key):
                optimizer = me()
                owned = None if optimizer is None else optimizer.__dict__.get("_states")
                if owned and key in owned and owned[key][0] is ref:
                    del owned[key]

            entry = states[key] = (weakref.ref(param, forget), {})
        return entry[1]

    def __getstate__(self):  # pickle and deepcopy: the state by parameter, not by weak reference
        attributes = dict(self.__dict__)
        states = attributes.pop("_states", {})
        attributes.pop("_last_grads", None)  # weak references: a copy starts without them
        attributes["_state_pairs"] = [(ref(), state) for ref, state in states.values()
                                      if ref() is not None]
        return attributes

    def __setstate__(self, attributes):
        pairs = attributes.pop("_state_pairs", [])
        self.__dict__.update(attributes)
        for param, state in pairs:
            self._param_state(param).update(state)


# %% [markdown]
# `SGD` is the update of the earlier steps, $W \leftarrow W - \eta g$, now in a class. It works on
# `param.data` in place with raw arrays, so the update itself adds nothing to any graph.

# %%
#| export dezero_like/optimizers.py
class SGD(Optimizer):
    """Plain gradient descent: W <- W - lr * g."""

    _settings = {"lr": (0.0, None)}

    def __init__(self, lr=0.01):
        super().__init__()
        self.lr = lr

    def update_one(self, param):
        param.data -= self.lr * param.grad.data


# %% [markdown]
# `MomentumSGD` keeps a velocity `v` per parameter: each step decays it by `momentum` and adds
# $-\eta g$, and the weight moves by `v`. A gradient that keeps its sign builds up speed; one that
# flips sign partly cancels.

# %%
#| export dezero_like/optimizers.py
class MomentumSGD(Optimizer):
    """v <- momentum * v - lr * g; W <- W + v (a ball rolling downhill keeps its speed)."""

    _settings = {"lr": (0.0, None), "momentum": (0.0, 1.0)}

    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def update_one(self, param):
        v = self._state("v", param)
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v


# %% [markdown]
# `AdaGrad` sums the squared gradients of each weight in `h` and divides the step by
# $\sqrt{h}$: a weight that has received large gradients takes ever smaller steps. `eps` keeps the
# first division finite when `h` is still 0.

# %%
#| export dezero_like/optimizers.py
from dezero_like import cuda


class AdaGrad(Optimizer):
    """h <- h + g*g; W <- W - lr * g / (sqrt(h) + eps): often-moved weights slow down."""

    complex_ok = False  # g * g is not |g|^2 for complex numbers
    _settings = {"lr": (0.0, None), "eps": (0.0, None)}

    def __init__(self, lr=0.001, eps=1e-8):
        super().__init__()
        self.lr = lr
        self.eps = eps

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        h = self._state("h", param)
        g = param.grad.data.astype(h.dtype, copy=False)  # float16: squared in float32
        h += g * g
        param.data -= self.lr * g / (xp.sqrt(h) + self.eps)


# %% [markdown]
# `AdaDelta` has no learning rate. It keeps two running averages, of $g^2$ (`msg`) and of the
# squared steps (`msdx`), and scales $g$ by the ratio of their square roots, so a step has the
# units of the weight. Note the order: `dx` is computed from the old `msdx`, which is updated
# after.

# %%
#| export dezero_like/optimizers.py
from dezero_like import cuda


class AdaDelta(Optimizer):
    """No learning rate: steps are scaled by running RMS of past steps over running RMS of grads.

    msg <- rho msg + (1-rho) g^2;  dx = sqrt((msdx + eps) / (msg + eps)) g;
    msdx <- rho msdx + (1-rho) dx^2;  W <- W - dx.
    """

    complex_ok = False  # g * g is not |g|^2 for complex numbers
    _settings = {"rho": (0.0, 1.0), "eps": (0.0, None)}

    @property
    def lr(self):
        raise AttributeError("AdaDelta has no learning rate: its steps are scaled by the "
                             "running averages alone (rho and eps are its settings)")

    @lr.setter
    def lr(self, value):  # a schedule writing opt.lr would otherwise change nothing, silently
        raise AttributeError("AdaDelta has no learning rate to set: its steps are scaled by the "
                             "running averages alone; use another optimizer for a schedule")

    def __init__(self, rho=0.95, eps=1e-6):
        super().__init__()
        self.rho = rho
        self.eps = eps

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        msg = self._state("msg", param)
        msdx = self._state("msdx", param)
        rho, eps = self.rho, self.eps
        g = param.grad.data.astype(msg.dtype, copy=False)  # float16: squared in float32
        msg *= rho
        msg += (1 - rho) * g * g
        dx = xp.sqrt((msdx + eps) / (msg + eps)) * g
        msdx *= rho
        msdx += (1 - rho) * dx * dx
        param.data -= dx


# %% [markdown]
# `Adam` combines both ideas: `m` is a running mean of $g$ (momentum), `v` of $g^2$ (the scale).
# `m += (1 - b1) * (g - m)` is the same as $m \leftarrow b_1 m + (1 - b_1) g$, written in place.
# Both averages start at 0 and are too small in the first steps; `lr_at(t)` corrects for that
# with the number `t` of updates the averages have seen. That count is kept **per parameter**, as
# PyTorch and Chainer keep it: a parameter that misses updates (frozen for a while, unused by a
# batch, or created later) has averages only as old as its own updates, and a count shared by
# the whole optimizer would correct them too little (its first step would be about 0.64 of the
# intended size when its first update is the optimizer's third, measured against PyTorch). `t`
# and `lr` still give the count of `update` calls and the step size at that count.

# %%
#| export dezero_like/optimizers.py
import math
from dezero_like import cuda


class Adam(Optimizer):
    """Momentum plus per-weight scaling, with bias correction for the zero-initialised averages.

    m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;
    W <- W - alpha * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps), where t = 1, 2, ...
    counts the updates of that parameter (as in PyTorch and Chainer).
    """

    complex_ok = False  # g * g is not |g|^2 for complex numbers
    _settings = {"alpha": (0.0, None), "beta1": (0.0, 1.0), "beta2": (0.0, 1.0),
                 "eps": (0.0, None)}

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__()
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    def prepare(self):
        self.t += 1  # the number of update() calls

    def lr_at(self, t):
        """The bias-corrected step size after ``t`` updates of the averages."""
        fix1 = 1.0 - self.beta1**t
        fix2 = 1.0 - self.beta2**t
        return self.alpha * math.sqrt(fix2) / fix1

    @property
    def lr(self):
        """The bias-corrected step size of update ``t`` (of the first one, before any)."""
        return self.lr_at(max(self.t, 1))

    @lr.setter
    def lr(self, value):
        raise AttributeError("Adam's learning rate is alpha: set adam.alpha (adam.lr is alpha "
                             "with the bias correction of step t, and is read only)")

    def update_one(self, param):
        xp = cuda.get_array_module(param.data)
        m = self._state("m", param)
        v = self._state("v", param)
        state = self._param_state(param)
        t = state["t"] = state.get("t", 0) + 1  # the updates of this parameter
        g = param.grad.data.astype(v.dtype, copy=False)  # float16: squared in float32
        m += (1 - self.beta1) * (g - m)
        v += (1 - self.beta2) * (g * g - v)
        param.data -= self.lr_at(t) * m / (xp.sqrt(v) + self.eps)


# %% [markdown]
# The next three classes are hooks, called with the list of parameters before the update.
# `WeightDecay` adds `rate * W` to each gradient, which is the gradient of
# $\frac{\text{rate}}{2}\lVert W\rVert^2$: the loss gains a penalty on large weights without
# the model computing it.

# %%
#| export dezero_like/optimizers.py
class WeightDecay:
    """L2 regularisation: g <- g + rate * W (the gradient of rate/2 * ||W||^2)."""

    def __init__(self, rate):
        self.rate = rate

    def __setattr__(self, name, value):  # checked on every assignment, as optimizers' settings
        if name == "rate":
            value = _checked("WeightDecay", "rate", value)
        super().__setattr__(name, value)

    def __call__(self, params):
        for p in params:
            if p.grad is not None:
                p.grad = _new_grad(p.grad.data + self.rate * p.data)


# %% [markdown]
# `ClipGrad` computes one norm over all gradients together and, only when it exceeds `max_norm`,
# multiplies every gradient by the same factor: the direction of the step is kept, its length is
# capped. The `1e-6` avoids a division by zero when all gradients are 0. On a GPU the norm is
# not read back (`float` of a device value waits for the device, step 54): the factor stays a
# 0-d device array, capped at 1 with `minimum`, and every gradient is multiplied by it. float16
# gradients are squared in float32: a norm above 256 has a square beyond float16's range, and
# an infinite norm would turn every gradient into 0 just when clipping is needed.

# %%
#| export dezero_like/optimizers.py
import math

import numpy as np
from dezero_like import cuda


class ClipGrad:
    """Scale all gradients down together when their global L2 norm exceeds ``max_norm``.

    The norm counts the gradients the hooks before it left: a ``FreezeParam`` runs first
    (``add_hook`` sees to it), so frozen parameters do not count; a ``WeightDecay`` added
    before it is included.
    """

    def __init__(self, max_norm):
        self.max_norm = max_norm

    def __setattr__(self, name, value):  # checked on every assignment, as optimizers' settings
        if name == "max_norm":
            value = _checked("ClipGrad", "max_norm", value, positive=True)
        super().__setattr__(name, value)

    def __call__(self, params):
        params = [p for p in params if p.grad is not None]
        if not params:
            return
        xp = cuda.get_array_module(params[0].grad.data)
        squares = sum((g * g).sum() for g in (_wide(p.grad.data) for p in params))
        if xp is not np:  # on a GPU: the factor stays on the device, 1 under the limit
            rate = xp.minimum(self.max_norm / (xp.sqrt(squares) + 1e-6), 1)
        else:
            rate = self.max_norm / (math.sqrt(float(squares)) + 1e-6)
            if rate >= 1:
                return
        for p in params:
            p.grad = _new_grad(p.grad.data * xp.asarray(rate, dtype=p.grad.dtype))


def _wide(g):
    """float16 as float32 (256 ** 2 is already inf in float16); other dtypes as they are."""
    return g.astype(np.float32) if g.dtype == np.float16 else g


# %% [markdown]
# `FreezeParam` collects the parameters of the layers it is given (layers, Parameters, or lists
# of them; anything else is refused at once, and nothing at all gets a warning) and sets their
# `grad` to `None`;
# `update` checks `p.grad` again after the hooks, so these parameters are skipped. The order of
# the hooks matters: `ClipGrad` after `WeightDecay` clips the decayed gradients, before it the
# decay is added to clipped ones. A frozen parameter, though, must count nowhere: with
# `[ClipGrad(1), FreezeParam(model.l0)]` its gradient would enter the clipping norm and shrink
# the others. So `add_hook` keeps every `FreezeParam` first (`_runs_after_freezing`, a stable
# sort when a hook is added, nothing per update); the other hooks run in the order they were
# added. Every hook in the list runs, so a hook added twice acts twice: a notebook cell with
# `optimizer.add_hook(WeightDecay(1e-4))`, run again, doubles the decay without a word.
# `add_hook` refuses the very same hook object a second time (`_check_new_hook`), and warns when
# a second `WeightDecay` or `ClipGrad` joins one already there: two decays add up, and of two
# clips the smaller `max_norm` wins. To change a setting, change the hook already there
# (`optimizer.hooks[0].rate = 1e-3`), or make the optimizer again.

# %%
#| export dezero_like/optimizers.py
import warnings

from dezero_like.core import Parameter, Variable


class FreezeParam:
    """Keep the given layers (or parameters) fixed: their gradients are dropped before updating.

    ``add_hook`` runs every FreezeParam before the other hooks, whatever the order they were
    added in, so ``ClipGrad`` and ``WeightDecay`` never see the frozen gradients.
    """

    def __init__(self, *layers):
        self.frozen = []
        for item in layers:  # a list of them, or model.params(), is taken as its items
            many = not (hasattr(item, "params") or isinstance(item, (Variable, str, type))) \
                and hasattr(item, "__iter__")
            for layer in (item if many else (item,)):
                self.frozen.extend(_to_freeze(layer))
        if not self.frozen:
            warnings.warn("FreezeParam was given no layer or parameter, so it freezes nothing: "
                          "FreezeParam(model.l1) or FreezeParam(model.l1.W)", stacklevel=2)

    def __call__(self, params):
        for p in self.frozen:
            p.grad = None


def _to_freeze(layer):
    """The Parameters of ``layer`` (a layer, a model, or one Parameter), or a clear error."""
    if isinstance(layer, Parameter):
        return [layer]
    if isinstance(layer, Variable):
        raise TypeError("FreezeParam got a Variable that is not a Parameter: optimizers never "
                        "update it anyway; pass a layer or its Parameters")
    if isinstance(layer, type):
        raise TypeError(f"FreezeParam got the class {layer.__name__}; pass the layer object "
                        "(model.l1), not its class")
    if not hasattr(layer, "params"):
        raise TypeError(f"FreezeParam takes layers and Parameters, got {type(layer).__name__}")
    return list(layer.params())


def _freezes_another_model(optimizer, hook):
    """Whether ``hook`` is a FreezeParam none of whose parameters belong to the optimizer's
    target (once it has one): another model's layers, so it would freeze nothing."""
    target = getattr(optimizer, "target", None)
    if not isinstance(hook, FreezeParam) or not hook.frozen or target is None:
        return False
    ours = {id(p) for p in target.params()}
    return not any(id(p) in ours for p in hook.frozen)


def _another_model_message(optimizer, hook):
    n = len(hook.frozen)
    return (f"FreezeParam holds {n} parameter{'s' if n > 1 else ''}, and none of them belongs "
            f"to the {type(optimizer.target).__name__} this optimizer trains (the one given to "
            "setup()), so it would freeze nothing: they are another model's (copy.deepcopy of "
            "a model, or a second MLP(...), makes new Parameters). Pass the layers of the model "
            "you train: FreezeParam(model.l1)")


def _runs_after_freezing(hook):
    """The sort key of ``Optimizer.hooks``: 0 for a FreezeParam (first), 1 for the others."""
    return not isinstance(hook, FreezeParam)


def _check_new_hook(hooks, f):
    """Refuse ``f`` when it is already in ``hooks``; warn when a second WeightDecay or ClipGrad
    joins one of its kind (a notebook cell that adds a hook, run again)."""
    if any(h is f for h in hooks):
        raise ValueError(
            f"add_hook(): this {type(f).__name__} hook was already added, and would run twice "
            "per update (a notebook cell run again?). Add each hook once; optimizer.hooks lists "
            "them")
    if not isinstance(f, (WeightDecay, ClipGrad)):
        return
    old = next((h for h in hooks if type(h) is type(f)), None)
    if old is None:
        return
    if isinstance(f, WeightDecay):
        effect = (f"both run, so the gradients get rate {old.rate!r} + {f.rate!r} times the "
                  "weights")
        setting = "rate"
    else:
        effect = (f"both run, so the smaller max_norm, {min(old.max_norm, f.max_norm)!r}, "
                  "caps the norm")
        setting = "max_norm"
    warnings.warn(
        f"add_hook(): this optimizer already has a {type(f).__name__} hook "
        f"({setting}={getattr(old, setting)!r}) and got a second one ({setting}="
        f"{getattr(f, setting)!r}): {effect} (a notebook cell run again?). To change the "
        f"setting, set it on the hook already there (optimizer.hooks[{hooks.index(old)}]."
        f"{setting} = ...), or make the optimizer again", stacklevel=3)


# %% [markdown]
# Importing `optimizers` in the package's `__init__` lets a script write
# `dezero_like.optimizers.SGD`.

# %%
#| export dezero_like/__init__.py
from dezero_like import optimizers


# %%
import numpy as np

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Parameter, optimizers
from dezero_like.models import MLP
from dezero_like.plot import output_dir, plot_curves, plot_paths

out_dir = output_dir(47)  # every file this step writes goes here

b1, b2 = 0.9, 0.999
for t in (1, 10, 100, 1000, 10000):
    ratio = (1 - b1**t) / np.sqrt(1 - b2**t)
    print(f"t = {t:>5}: uncorrected step / corrected step = {ratio:.2f}")

# %% [markdown]
# ## Each optimizer matches its rule
#
# A quadratic bowl $f(w) = \tfrac12\sum_i a_i w_i^2$ has the gradient $a w$,
# so we can run every rule by hand in NumPy next to the optimizer and compare.

# %%
a = np.array([1.0, 10.0])  # a bowl 10x steeper along the second axis


class Bowl(L.Layer):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.array([1.0, 1.0]))

    def forward(self):
        return F.sum(a * self.w**2) / 2


def hand_sgd(w, g, s, t, lr=0.05):
    return w - lr * g


def hand_momentum(w, g, s, t, lr=0.05, mu=0.9):
    s["v"] = mu * s.get("v", 0) - lr * g
    return w + s["v"]


def hand_adagrad(w, g, s, t, lr=0.5, eps=1e-8):
    s["h"] = s.get("h", 0) + g * g
    return w - lr * g / (np.sqrt(s["h"]) + eps)


def hand_adadelta(w, g, s, t, rho=0.95, eps=1e-6):
    s["msg"] = rho * s.get("msg", 0) + (1 - rho) * g * g
    dx = np.sqrt((s.get("msdx", 0) + eps) / (s["msg"] + eps)) * g
    s["msdx"] = rho * s.get("msdx", 0) + (1 - rho) * dx * dx
    return w - dx


def hand_adam(w, g, s, t, alpha=0.1, b1=0.9, b2=0.999, eps=1e-8):
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    return w - alpha * np.sqrt(1 - b2**t) / (1 - b1**t) * s["m"] / (np.sqrt(s["v"]) + eps)


pairs = {
    "SGD": (optimizers.SGD(lr=0.05), hand_sgd),
    "MomentumSGD": (optimizers.MomentumSGD(lr=0.05, momentum=0.9), hand_momentum),
    "AdaGrad": (optimizers.AdaGrad(lr=0.5), hand_adagrad),
    "AdaDelta": (optimizers.AdaDelta(rho=0.95, eps=1e-6), hand_adadelta),
    "Adam": (optimizers.Adam(alpha=0.1), hand_adam),
}

max_diffs, paths = {}, {}
for name, (opt, rule) in pairs.items():
    bowl = Bowl()
    opt.setup(bowl)
    w, state, diff = np.array([1.0, 1.0]), {}, 0.0
    paths[name] = [bowl.w.data.copy()]
    for t in range(1, 21):
        bowl.cleargrads()
        bowl().backward()
        opt.update()
        paths[name].append(bowl.w.data.copy())
        w = rule(w, a * w, state, t)
        diff = max(diff, float(np.abs(bowl.w.data - w).max()))
    max_diffs[name] = diff
    print(f"{name:<12} after 20 steps w = {np.round(bowl.w.data, 4)}  "
          f"max |optimizer - hand| = {diff:.1e}")

# %% [markdown]
# They agree to rounding. The picture shows the 20 steps of each on the bowl's
# contours (the minimum is at the origin):

# %%
fig = plot_paths(lambda u, v: (a[0] * u**2 + a[1] * v**2) / 2, paths, xlim=(-1.2, 1.2),
                 ylim=(-1.2, 1.2), levels=15, title="20 steps on the bowl from (1, 1)",
                 to_file=out_dir / "bowl_paths.png")

# %% [markdown]
# Plain SGD, with a learning rate small enough for the steep axis, settles that
# axis at once but crawls along the shallow one. Momentum overshoots and
# swings around the minimum. AdaGrad and Adam move both coordinates by the same
# amount (their per-weight scaling divides out the factor 10), so they travel
# down the diagonal. AdaDelta has no learning rate: its first step has size about
# $\sqrt{\epsilon / (1 - \rho)}$ whatever the gradient (0.0045 for $\rho = 0.95$,
# $\epsilon = 10^{-6}$), and on this bowl its steps stay near that size: 20 of them
# move it only to 0.91.
#
# ## Training with an optimizer
#
# The training loop loses its hand-written update. Compare three optimizers on
# step 44's sine data, same model, same start, 1000 iterations each. One change
# to the start: `Linear` draws the first layer's weights with standard deviation
# $\sqrt{1/1} = 1$, so for $x \in [0, 1]$ every hidden sigmoid starts almost
# linear, and the network first fits a straight line and sits on a plateau
# (loss about 0.25) before it bends. Multiplying those weights by 5 makes the
# sigmoids start as distinct S-curves, which shortens the plateau; the first line
# of output shows SGD without that scaling.

# %%
np.random.seed(0)
x = np.random.rand(100, 1).astype(np.float32)
y = (np.sin(2 * np.pi * x) + np.random.rand(100, 1)).astype(np.float32)


def train(opt, scale=5.0, iters=1000):
    np.random.seed(1)
    model = MLP((10, 1))
    model(x)
    model.l0.W.data *= scale
    opt.setup(model)
    losses = []
    for _ in range(iters):
        loss = F.mean_squared_error(y, model(x))
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(float(loss.data))
    return losses


print(f"SGD without the x5 scaling, loss after 1000 iterations: "
      f"{train(optimizers.SGD(lr=0.3), scale=1.0)[-1]:.4f}")
histories, final = {}, {}
for name, opt in [("SGD", optimizers.SGD(lr=0.3)),
                  ("MomentumSGD", optimizers.MomentumSGD(lr=0.1, momentum=0.9)),
                  ("Adam", optimizers.Adam(alpha=0.03))]:
    histories[name] = train(opt)
    final[name] = histories[name][-1]
    print(f"{name:<12} loss after 100 iterations: {histories[name][99]:.4f}, "
          f"after 1000: {final[name]:.4f}")
print(f"highest SGD loss: {max(histories['SGD']):.1f}")
noise = float(np.mean((y - np.sin(2 * np.pi * x) - 0.5) ** 2))
print(f"variance of the noise in the data: {noise:.4f}")
fig = plot_curves({"training loss (MSE)": histories}, xlabel="iteration", logy=True,
                  to_file=out_dir / "sine_losses.png")

# %% [markdown]
# How to read this. The noise added to the sine is uniform on $[0, 1]$; around its
# mean $0.5$ its variance is $1/12 \approx 0.083$ on average (the variance of
# these 100 points is printed above), and no model can predict noise, so a
# loss near that value means the curve is found. Adam gets there (slightly
# below: with 100 points the network starts to fit the noise). SGD's loss jumps
# far up in its first iterations
# (its peak is printed above: $\eta = 0.3$ is too large while the gradients of
# the scaled weights are big) and then recovers. MomentumSGD falls fastest after
# its first few iterations; Adam overtakes it within the first 100 iterations, and Momentum
# flattens out and ends above SGD (the printed losses show where). That is a
# statement about these learning rates on this problem, not a ranking of the
# methods: each optimizer needs its own learning rate tuned.

# %% [markdown]
# Hooks plug in with `add_hook`, e.g.
# `optimizers.SGD(0.1).setup(model).add_hook(optimizers.WeightDecay(1e-4))`. They run in the
# order they were added (`WeightDecay` then `ClipGrad` clips the decayed gradients; the other
# way round adds the decay after clipping), except that `FreezeParam` always runs first.
#
# ## Exercise
# 1. **Freeze the first layer.** Write `freeze_first_layer(model)`, which
#    returns the hook that keeps `model.l0` fixed (one of the hooks above). The
#    self-check trains a fresh `MLP((10, 1))` for 50 iterations with
#    `SGD(lr=0.3)` and your hook: `l0.W` must be unchanged while `l1.W` moves.
# 2. **Implement then test: Nesterov momentum.** `MomentumSGD` takes the
#    gradient at $W$ and then lets the velocity carry the weights on. Nesterov's
#    method (as written by Sutskever et al., 2013, "On the importance of
#    initialization and momentum in deep learning") takes the gradient where the
#    velocity is about to carry them, at the look-ahead point $W + \mu v$:
#    $v \leftarrow \mu v - \eta \nabla f(W + \mu v)$, then $W \leftarrow W + v$.
#    An optimizer only receives the gradient at the parameter's current value,
#    so let the parameter hold the look-ahead point itself, $\Theta = W + \mu v$,
#    and $g = \nabla f(\Theta)$. Substituting
#    ($\Theta' = W' + \mu v' = \Theta - \mu v + (1 + \mu) v'$ and $v' - \mu v = -\eta g$)
#    gives the rule on $\Theta$, with $v$ starting at 0:
#
#    $$v \leftarrow \mu v - \eta g, \qquad \Theta \leftarrow \Theta + \mu v - \eta g
#      \quad \text{(with the new } v\text{)} .$$
#
#    Where `MomentumSGD` moves the weight by $v$, Nesterov moves it by $\mu v - \eta g$:
#    the new velocity decayed once more, plus a fresh gradient step. PyTorch's
#    `torch.optim.SGD(params, lr, momentum, nesterov=True)` ($\eta$ = `lr`,
#    $\mu$ = `momentum`) keeps a buffer
#    $b \leftarrow \mu b + g$ of gradients and steps $\Theta \leftarrow \Theta - \eta (g + \mu b)$;
#    with $v = -\eta b$ that is the same rule while $\eta$ stays fixed (a schedule that
#    changes $\eta$ makes them differ: PyTorch's buffer holds gradients, not steps).
#    Write `update_one` of `MyNesterovSGD`: keep a velocity per parameter
#    (`Optimizer._state(name, param)`, above, gives a zero array on first use and the
#    same one afterwards), change it in place, then move the parameter's data.
#    The self-check runs it for 5 updates on random data (`np.random.default_rng(0)`)
#    next to a NumPy loop of Nesterov's own form (the gradient taken at $W + \mu v$),
#    compares the weights with $W + \mu v$ after every update, then does the same
#    with two parameters of one shape.

# %%
#| exercise
def freeze_first_layer(model):
    raise NotImplementedError("Exercise (step 47): return the hook that freezes model.l0")

# %%
#| solution
def freeze_first_layer(model):
    return optimizers.FreezeParam(model.l0)

# %%
#| check
np.random.seed(2)
frozen_model = MLP((10, 1))
frozen_model(x)
W0_before = frozen_model.l0.W.data.copy()
b0_before = frozen_model.l0.b.data.copy()
W1_before = frozen_model.l1.W.data.copy()
opt = optimizers.SGD(lr=0.3).setup(frozen_model)
opt.add_hook(freeze_first_layer(frozen_model))
for _ in range(50):
    loss = F.mean_squared_error(y, frozen_model(x))
    frozen_model.cleargrads()
    loss.backward()
    opt.update()
assert np.array_equal(frozen_model.l0.W.data, W0_before), (
    "l0.W changed: the hook must stop the update of every parameter of model.l0 "
    "(which hook of this step does that?)"
)
assert np.array_equal(frozen_model.l0.b.data, b0_before), (
    "l0.b changed: freeze the whole layer model.l0 (its W and its b), not only l0.W"
)
assert not np.array_equal(frozen_model.l1.W.data, W1_before), (
    "l1.W did not move: freeze only the first layer, not the whole model"
)
print("self-check passed: l0 stayed frozen while l1 trained")

# %%
#| exercise
class MyNesterovSGD(optimizers.Optimizer):
    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def update_one(self, param):
        raise NotImplementedError(
            "Exercise (step 47): fetch this parameter's velocity, update it in place, then "
            "move the parameter by the Nesterov step of the formula above"
        )

# %%
#| solution
class MyNesterovSGD(optimizers.Optimizer):
    def __init__(self, lr=0.01, momentum=0.9):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def update_one(self, param):
        v = self._state("v", param)
        g = param.grad.data
        v *= self.momentum
        v -= self.lr * g
        param.data += self.momentum * v - self.lr * g

# %%
#| check
rng = np.random.default_rng(0)
c = rng.uniform(0.5, 2.0, size=(2, 3))
w_start = rng.normal(size=(2, 3))
lr, mu = 0.1, 0.8


def nesterov_check(starts, loss_of, grads_of):
    """Run MyNesterovSGD and Nesterov's own form side by side; the worst gap after each update."""
    layer = L.Layer()
    for k, start in enumerate(starts):
        setattr(layer, f"p{k}", Parameter(start.copy()))
    params = [getattr(layer, f"p{k}") for k in range(len(starts))]
    opt = MyNesterovSGD(lr=lr, momentum=mu).setup(layer)
    W = [start.copy() for start in starts]  # NumPy: the weights and velocities of the method
    v = [np.zeros_like(start) for start in starts]
    gaps = []
    for _ in range(5):
        layer.cleargrads()
        loss_of(*params).backward()
        opt.update()
        g = grads_of(*[Wi + mu * vi for Wi, vi in zip(W, v)])  # at the look-ahead point
        v = [mu * vi - lr * gi for vi, gi in zip(v, g)]
        W = [Wi + vi for Wi, vi in zip(W, v)]
        gaps.append(max(float(np.abs(p.data - (Wi + mu * vi)).max())
                        for p, Wi, vi in zip(params, W, v)))
    moved = any(not np.array_equal(p.data, start) for p, start in zip(params, starts))
    return gaps, moved


# one parameter: f = sum(c w^2), gradient 2 c w
gaps, moved = nesterov_check([w_start], lambda w: F.sum(c * w**2), lambda w: [2 * c * w])
assert moved, "the weights did not move: update_one must change param.data in place"
bad = [t for t, gap in enumerate(gaps, start=1) if gap > 1e-12]
assert not bad or bad[0] > 1, (
    f"after update 1 the weights differ from Nesterov's by {gaps[0]:.3g}: with v starting at "
    "0, check the step the weight takes (plain momentum moves by v alone; Nesterov adds the "
    "new velocity decayed once more and a fresh gradient step)"
)
assert not bad, (
    f"update 1 agrees but update {bad[0]} differs from Nesterov's by {gaps[bad[0] - 1]:.3g}: "
    "the velocity must last from one call to the next (change the array that self._state "
    "returns in place; a new array under the same name is not stored)"
)

# two parameters of the same shape, different gradients: each needs its own velocity
gaps, _ = nesterov_check([w_start, -w_start / 2], lambda w, u: F.sum(c * w**2) + F.sum(u**4) / 4,
                         lambda w, u: [2 * c * w, u**3])
assert max(gaps) < 1e-12, (
    f"with two parameters of the same shape the weights differ from Nesterov's by "
    f"{max(gaps):.3g}: keep one velocity per parameter (the state is keyed by the "
    "parameter), not one shared by several"
)
print("self-check passed: MyNesterovSGD matches Nesterov's look-ahead form over 5 updates")
