# %% [markdown]
# # Step 64: One variable in several input slots, `f(x, x)`
#
# In step 14 we met `add(x, x)`: the same variable fills both input slots of a
# function, so it must receive the *sum* of both slots' gradients. Step 15
# showed how summing them carelessly (`x.grad += gx`) makes two gradients share
# one array. Industrial engines handle this case in one precise place: **inside
# the function's own backward step**, before anything is stored.
#
# * PyTorch's engine gathers all gradients meant for one input of the next
#   node in an input buffer and sums them there, before that node runs
#   (`InputBuffer`, torch/csrc/autograd/input_buffer.cpp in its source).
# * Chainer lets a function implement `backward_accumulate`, which receives the
#   gradients already flowing into its inputs and may fuse the sum with its
#   own computation (`chainer.FunctionNode.backward_accumulate` in its API
#   reference).
#
# `dezero_like` follows both ideas. When a function is called with the same
# variable in several slots, the core calls `Function.backward_accumulate`
# instead of `backward`. The default version calls `backward`, adds the slots
# that hold the same variable into the first of them and sets the others to
# `None`. The variable therefore receives **one** gradient, a fresh array that
# shares memory with nothing else.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Function.backward_accumulate`, `Function._duplicates` and
# `_hooks_for` (the global hooks, then the function's own, a hook in both once); `Function.__call__`
# notes repeated inputs, and `_backward_step` calls `backward_accumulate` for them.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.
#
# `Function.__call__` notes whether one variable fills several slots
# (`_duplicates`: whether the ids of the inputs repeat), and `_backward_step` calls
# `backward_accumulate` instead of `backward` for such a function. The
# default `backward_accumulate` finds the slots that hold the same variable and
# adds their gradients into the first one.

# %%
#| export dezero_like/core.py Function
import weakref

from dezero_like.core import (
    Config,
    Variable,
    _add_grads,
    _as_inputs,
    _global_hooks,
    _grads_tuple,
    _hooks_for,
    as_array,
)

_duplicates = False  # True when one variable fills several input slots


def __call__(self, *inputs):
    inputs = _as_inputs(inputs)  # numbers and arrays become constants
    xs = [x.data for x in inputs]
    needs = tuple(x.requires_grad for x in inputs)
    record = Config.enable_backprop and True in needs
    if record:
        self.needs_input_grad = needs
    hooks = _hooks_for(self) if self._hooks else _global_hooks
    for hook in hooks:
        hook.forward_preprocess(self, xs)
    ys = self.forward(*xs)
    if type(ys) is not tuple:
        ys = (ys,)
    ys = [as_array(y) for y in ys]  # NumPy may return a scalar for 0-d input
    for hook in hooks:
        hook.forward_postprocess(self, xs, ys)
    outputs = [Variable(y, requires_grad=record) for y in ys]
    if record:  # link the outputs to this function, and it to its inputs
        self.generation = max(x.generation for x in inputs)
        for y in outputs:
            y.set_creator(self)
        self.inputs = inputs
        self.outputs = [weakref.ref(y) for y in outputs]  # weak: no reference cycle
        self._duplicates = len(set(map(id, inputs))) < len(inputs)
    return outputs[0] if len(outputs) == 1 else outputs


def backward_accumulate(self, *gys):
    """Backward for a function that received the same variable in several slots.

    ``f(x, x)`` gives one gradient per slot; they are summed here, inside the
    function's own backward step, into the first slot holding ``x`` (the
    others get ``None``), so ``x`` receives one gradient, stored once, in
    a fresh array. A function may override this to compute the fused
    gradient directly (``x * x`` could return ``2 * x * gy`` at once).
    """
    gxs = list(_grads_tuple(self.backward(*gys)))
    first = {}
    for i, x in enumerate(self.inputs):
        if id(x) not in first:
            first[id(x)] = i
        elif gxs[i] is not None:
            j = first[id(x)]
            gxs[j] = gxs[i] if gxs[j] is None else _add_grads(gxs[j], gxs[i])
            gxs[i] = None
    return tuple(gxs)


# %%
#| export dezero_like/core.py
from dezero_like.core import Variable, _check_grads, _global_hooks, _grads_tuple, as_array


def _hooks_for(f):
    """The global hooks, then ``f``'s own; a hook in both lists runs once."""
    if not f._hooks:
        return _global_hooks
    return _global_hooks + [h for h in f._hooks if all(h is not g for g in _global_hooks)]


def _backward_step(f, gys):
    """One step of the chain rule: the gradients of ``f``'s inputs, as a tuple."""
    hooks = _hooks_for(f)
    for hook in hooks:
        hook.backward_preprocess(f, gys)
    if f._duplicates:  # the same variable in several slots, as in x * x
        gxs = f.backward_accumulate(*gys)
    else:
        gxs = _grads_tuple(f.backward(*gys))
    for hook in hooks:
        hook.backward_postprocess(f, gys, gxs)
    _check_grads(f, gxs)
    return tuple(gx if gx is None or isinstance(gx, Variable)
                 else Variable(as_array(gx), requires_grad=False) for gx in gxs)


# %% [markdown]
# ## `x * x` and `x + x`
#
# $\frac{\partial}{\partial x}(x \cdot x) = x + x = 2x$. `Mul.backward` returns
# $(g_y \cdot x_1,\; g_y \cdot x_0)$, one gradient per slot; here both slots are
# $x$, so they are summed:

# %%
x = dz.Variable(np.array([1.0, 2.0, 3.0]))
y = x * x
print("Mul saw a duplicate input:", y.creator._duplicates)
y.backward(retain_grad=True)
print("d(x*x)/dx =", x.grad.data)

x.cleargrad()
y = x + x
y.backward(retain_grad=True)
print("d(x+x)/dx =", x.grad.data)

# %% [markdown]
# `Add.backward` returns the *same* gradient object for both slots: for `x + x`
# that is `y.grad` itself, twice. If the first slot were stored as `x.grad`
# and the second added in place, `y.grad` would be doubled too: the bug of
# step 15. The accumulated gradient is a new array:

# %%
print("x.grad shares memory with y.grad:", np.shares_memory(x.grad.data, y.grad.data))
print("y.grad is still ones:", y.grad.data)

# %% [markdown]
# The same happens for an intermediate variable: in `h * h` the two gradients
# for `h` are summed inside `Mul`'s backward step and handed to `Exp` (the
# creator of `h`) as one gradient.

# %%
x = dz.Variable(np.array([0.5]))
h = F.exp(x)
y = h * h  # = exp(2x), derivative 2 exp(2x)
y.backward()
print("d exp(x)^2 / dx =", x.grad.data, " expected", 2 * np.exp(2 * 0.5))

# %% [markdown]
# The graph of `h * h` shows it. Two arrows leave the node `h`, one for each input slot of `Mul`,
# but `h` holds one gradient, $2h \approx 3.297$: the two slots' gradients were summed inside
# `Mul`'s backward step. `Exp` then received that one gradient and passed $2h \cdot e^x = 2e^{2x}$
# to `x`.

# %%
from dezero_like.graph import keep_values_for_drawing, plot_dot_graph  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402

x = dz.Variable(np.array([0.5]), name="x")
with keep_values_for_drawing():  # intermediate values and gradients kept, for the drawing
    h = F.exp(x)
    h.name = "h"
    y = h * h
    y.name = "y"
    y.backward()
image = written(plot_dot_graph(y, values=True, to_file=output_dir(64) / "h_times_h.svg"))
image

# %% [markdown]
# ## A function of our own: `concat`
#
# `concat(a, b, ...)` joins arrays along an axis. Its backward cuts the output
# gradient back into pieces, one per input:
# $g_{x_k} = g_y[\text{offset}_k : \text{offset}_k + n_k]$. Nothing in it
# mentions duplicates, yet `concat(x, x, w)` works: the base class sums the two
# pieces meant for `x`.

# %%
class Concat(dz.Function):
    """y = concatenate(xs, axis); the gradient of input k is the slice of gy it came from."""

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *xs):
        self.retain_inputs(())  # backward needs only the sizes
        self.sizes = [x.shape[self.axis] for x in xs]
        xp = dz.cuda.get_array_module(xs[0])
        return xp.concatenate(xs, axis=self.axis)

    def backward(self, gy):
        gxs = []
        start = 0
        lead = (slice(None),) * self.axis
        for n, needed in zip(self.sizes, self.needs_input_grad):
            gxs.append(gy[lead + (slice(start, start + n),)] if needed else None)
            start += n
        return tuple(gxs)


def concat(*xs, axis=0):
    return Concat(axis)(*xs)


x = dz.Variable(np.array([1.0, 2.0]))
w = dz.Variable(np.array([10.0]))
y = concat(x, x, w)
print("concat(x, x, w) =", y.data)
weights = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
F.sum(y * weights).backward()
print("x.grad =", x.grad.data, "(= [1, 2] + [3, 4])")
print("w.grad =", w.grad.data)

# %% [markdown]
# ## Fusing the sum into the function
#
# The default `backward_accumulate` computes every slot's gradient and then
# adds them. A function that knows its algebra can do better. For $x \cdot x$
# the fused gradient is $2 x\, g_y$: two multiplications and no addition, and
# no temporary for the second slot. Overriding `backward_accumulate` is how a
# function says so (it is only called when a variable fills several slots):

# %%
class FusedMul(dz.core.Mul):
    """x0 * x1 whose backward computes 2 * x * gy directly when x0 and x1 are one variable."""

    def backward_accumulate(self, gy):
        x0, _ = self.inputs
        return gy * (2.0 * x0), None


x = dz.Variable(np.array([1.0, 2.0, 3.0]))
FusedMul()(x, x).backward()
print("fused d(x*x)/dx =", x.grad.data)

# %% [markdown]
# ## Exercise
# 1. `stack2(a, b)` stacks two arrays of equal shape along a new first axis,
#    $y = [a; b]$. Write it with `concat` above, which joins along an axis the
#    inputs already have: what shape must each input take (step 39) so that
#    joining two gives `(2,) + shape`? The self-check verifies that for
#    `stack2(x, x)` the gradient of `sum(y * m)` is `m[0] + m[1]`.
# 2. **Implement then test: summing the slots.** Write
#    `accumulate_slots(inputs, gxs)`, the heart of `backward_accumulate`:
#    `gxs` holds one gradient per input slot (a Variable or `None`). When one
#    variable fills several slots (the same object, not merely equal values),
#    the returned list holds the sum of those slots' gradients in its *first*
#    slot and `None` in the later ones; the other slots are unchanged. The
#    self-check plugs it into a `Concat` and compares with the package's
#    `backward_accumulate`.

# %%
#| exercise
def stack2(a, b):
    raise NotImplementedError(
        "Exercise (step 64): stack a and b along a new first axis, with concat"
    )

# %%
#| solution
def stack2(a, b):
    return concat(a.reshape((1,) + a.shape), b.reshape((1,) + b.shape), axis=0)

# %%
#| check
x = dz.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
m = np.arange(8.0).reshape(2, 2, 2)
y = stack2(x, x)
assert y.shape == (2, 2, 2), f"stack2 of two (2, 2) arrays should be (2, 2, 2), got {y.shape}"
F.sum(y * m).backward()
assert np.allclose(x.grad.data, m[0] + m[1]), (
    f"x fills both slots, so its gradient is m[0] + m[1] = {(m[0] + m[1]).tolist()}, "
    f"got {x.grad.data.tolist()}"
)
print("self-check passed: stack2(x, x) sends both halves of the gradient to x")

# %%
#| exercise
def accumulate_slots(inputs, gxs):
    raise NotImplementedError(
        "Exercise (step 64): one summed gradient per variable, in the first slot it fills"
    )

# %%
#| solution
def accumulate_slots(inputs, gxs):
    gxs = list(gxs)
    for i, x in enumerate(inputs):
        j = next(k for k, other in enumerate(inputs) if other is x)
        if j < i and gxs[i] is not None:
            gxs[j] = gxs[i] if gxs[j] is None else gxs[j] + gxs[i]
            gxs[i] = None
    return gxs

# %%
#| check
from dezero_like.utils import gradient_check  # noqa: E402


class MySlotsConcat(Concat):
    def backward_accumulate(self, *gys):
        return tuple(accumulate_slots(self.inputs, list(self.backward(*gys))))


rng = np.random.default_rng(0)
xa, wa = rng.normal(size=3), rng.normal(size=2)
weights = rng.normal(size=11)
weights_before = weights.copy()
grads = {}
for name, cls in (("yours", MySlotsConcat), ("package", Concat)):
    xv, wv = dz.Variable(xa.copy()), dz.Variable(wa.copy())
    out = cls(0)(xv, wv, xv, xv)  # x in slots 0, 2 and 3
    slots = out.creator.backward_accumulate(dz.Variable(weights))
    F.sum(out * weights).backward()
    grads[name] = (xv.grad.data, wv.grad.data, [g is None for g in slots])
assert np.array_equal(weights, weights_before), (
    "the output gradient changed: the slots' gradients are views of it, so adding into "
    "them in place writes into it too; build a new Variable for the sum (step 15)"
)
assert grads["yours"][2] == grads["package"][2], (
    f"None slots {grads['yours'][2]}, expected {grads['package'][2]}: keep the gradient in the "
    "first slot holding x, and None in the later ones"
)
assert np.allclose(grads["yours"][0], grads["package"][0]), (
    "x's gradient should be the sum of its three slices of the output gradient"
)
assert np.allclose(grads["yours"][1], grads["package"][1]), "w's gradient should be unchanged"
gradient_check(lambda v: MySlotsConcat(0)(v, v * 2.0, v), xa)
print("self-check passed: accumulate_slots sums repeated slots as backward_accumulate does")
