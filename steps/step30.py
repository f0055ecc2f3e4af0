# %% [markdown]
# # Step 30: What backward computes is a computation too
#
# Steps 30–32 teach the framework to take derivatives of derivatives. They
# start from one observation: **the backward pass is an ordinary
# computation**. For $y = \sin x$ the chain rule says
#
# $$\frac{\partial L}{\partial x} = \frac{\partial L}{\partial y} \cdot \cos x,$$
#
# and that is exactly what `Sin.backward` does: it calls `cos` and `*` on
# Variables. So the gradient is made of the same functions as any result.
# If we recorded them, the gradient would carry a graph of its own, and
# backprop could walk *that* graph to differentiate the gradient.
#
# This step only looks at that idea and at the graph it gives; step 31 shows
# the mechanism, step 32 uses it.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `Variable.backward` (it gains `create_graph`), `_add_grads`, and
# `Function.__call__` (no graph when no input requires grad).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Since step 23, `Variable.backward` has switched graph recording off while the
# loop runs (`using_config("enable_backprop", False)`). It now takes a flag,
# `create_graph`, and records the backward pass when it is `True`. That is the
# whole change to `backward`:
#
# ```diff
# -    def backward(self, retain_grad=False):
# +    def backward(self, retain_grad=False, create_graph=False):
#          ...
# -        with using_config("enable_backprop", False):
# +        with using_config("enable_backprop", create_graph):
# ```
#
# One helper follows. When two gradients meet at a variable, `_add_grads`
# used to add their arrays. With `create_graph` the sum must be part of the
# gradient's graph too, so it becomes a recorded `+`.

# %%
#| export dezero_like/core.py Variable
from dezero_like import cuda
from dezero_like.core import Variable, _backprop, using_config


def backward(self, retain_grad=False, create_graph=False):
    """Compute the gradient of this variable with respect to every leaf.

    * ``retain_grad``: also keep ``.grad`` on the intermediate variables.
    * ``create_graph``: record the backward pass itself, so that the gradients
      can be differentiated again.
    """
    seed = Variable(cuda.get_array_module(self.data).ones_like(self.data),
                    requires_grad=False)
    with using_config("enable_backprop", create_graph):
        _backprop(self, seed, retain_grad)


# %%
#| export dezero_like/core.py
from dezero_like.core import Config, Variable, as_array


def _add_grads(a, b):
    """a + b for two gradients, as a new object (never ``+=``: see step 15).

    With create_graph the sum must be differentiable, so it is a recorded Add;
    otherwise the arrays are added directly.
    """
    if Config.enable_backprop:
        return a + b
    return Variable(as_array(a.data + b.data), requires_grad=False)


# %% [markdown]
# `Function.__call__` changes in one line. The seed of a backward pass is a
# constant, and so is everything computed from constants alone. Recording
# such a computation would only make the gradient's graph bigger. So a function
# records a graph only when at least one input requires a gradient:
#
# ```diff
# -    record = Config.enable_backprop
# +    needs = tuple(x.requires_grad for x in inputs)
# +    record = Config.enable_backprop and True in needs
# ```

# %%
#| export dezero_like/core.py Function
import weakref

from dezero_like.core import (
    Config,
    Variable,
    _as_inputs,
    _global_hooks,
    as_array,
)


def __call__(self, *inputs):
    inputs = _as_inputs(inputs)  # numbers and arrays become constants
    xs = [x.data for x in inputs]
    needs = tuple(x.requires_grad for x in inputs)
    record = Config.enable_backprop and True in needs
    if record:
        self.needs_input_grad = needs
    hooks = _global_hooks + self._hooks if self._hooks else _global_hooks
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
    return outputs[0] if len(outputs) == 1 else outputs


# %%
import inspect

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, written
from dezero_like.utils import get_dot_graph, plot_dot_graph

out_dir = output_dir(30)  # every file this step writes goes here

print(inspect.getsource(F.Sin.backward))

# %% [markdown]
# ## By default, nothing is recorded
#
# Training only needs first derivatives, so by default backward does **not**
# record its computations: it runs them with graph building switched off,
# which saves the time and memory of a second graph. The gradient is then a
# plain leaf: it has no creator.

# %%
x = dz.Variable(np.array(1.0), name="x")
y = F.sin(x)
y.backward()
print("x.grad =", x.grad, " creator:", x.grad.creator)

# %% [markdown]
# ## `create_graph=True` records the backward pass
#
# With `create_graph=True` the same computations are recorded. The gradient
# now has a creator, and drawing its graph shows the backward pass of `sin`:
# the seed $\partial L / \partial y = 1$ times $\cos x$.

# %%
x = dz.Variable(np.array(1.0), name="x")
y = F.sin(x)
y.backward(create_graph=True)
gx = x.grad
gx.name = "gx"
print("x.grad =", gx, " creator:", gx.creator)
backward_dot = get_dot_graph(gx, verbose=False)
print(backward_dot)

# %%
written(plot_dot_graph(gx, verbose=False, to_file=out_dir / "sin_backward.png"))

# %% [markdown]
# Three things to notice in that graph:
#
# * its leaf is the same `x` as the forward graph's leaf: the gradient is a
#   function **of x**, and that is what makes it differentiable with respect to x;
# * the seed (the grey constant 1) does not require a gradient;
# * it contains `Cos`, the derivative of `Sin`. Differentiating it once more
#   will go through `Cos.backward`, which calls `sin` and `-`: derivatives of any
#   order come from the same few backward methods.
#
# A bigger example: the gradient of $y = x^3$ is $3x^2$, computed by
# `Pow.backward` as `gy * (3 * x ** 2)`:

# %%
x = dz.Variable(np.array(2.0), name="x")
y = x**3
y.backward(create_graph=True)
print("dy/dx at 2 =", x.grad.data)
print(get_dot_graph(x.grad, verbose=False).count("shape=box"), "functions in the gradient's graph")

# %% [markdown]
# ## Exercise 1: the graph of exp's gradient
# Compute the gradient of $y = e^x$ at $x = 0.5$ with `create_graph=True`, and
# store the DOT text of `x.grad` in `exp_dot`. `Exp.backward` multiplies by the
# retained output $y$ itself, so the graph should contain the `Exp` function.

# %%
#| exercise
xe = dz.Variable(np.array(0.5), name="x")
exp_dot = ...  # backprop from exp of xe, keeping the gradient's graph, then its DOT text

# %%
#| solution
xe = dz.Variable(np.array(0.5), name="x")
F.exp(xe).backward(create_graph=True)
exp_dot = get_dot_graph(xe.grad, verbose=False)

# %%
#| check
assert isinstance(exp_dot, str), f"exp_dot should be DOT text (a str), got {type(exp_dot).__name__}"
assert 'label="Mul"' in exp_dot or 'label="Exp"' not in exp_dot, (
    "exp_dot holds Exp but no Mul: it is the graph of y = exp(x), the forward pass. Take the "
    "DOT text of xe.grad, the gradient, after backward(create_graph=True)"
)
assert 'label="Exp"' in exp_dot and 'label="Mul"' in exp_dot, (
    "the gradient's graph should hold Exp and Mul (gy * exp(x)): did you pass create_graph=True?"
)
assert np.isclose(xe.grad.data, np.exp(0.5)), f"d/dx exp(x) at 0.5 is e^0.5, got {xe.grad.data}"
print("self-check passed: the gradient of exp is recorded as gy * exp(x)")

# %% [markdown]
# ## Exercise 2: a backward that can be differentiated
# A backward method is differentiable only if it computes with **Variables**
# (the inputs in `self.inputs`), never with their raw arrays. Write `Cube`,
# $y = x^3$: `forward` on the raw array, `backward` returning
# $g_y \cdot 3x^2$ with `x` taken from `self.inputs`. The self-check runs
# `dz.utils.gradient_check` for the first derivative, then differentiates the
# recorded gradient again: the second derivative must be $6x$. (Try
# computing backward on `x.data` to see it fail.)

# %%
#| exercise
class Cube(dz.Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 30): Cube.forward, on the raw array")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 30): Cube.backward, with Variables only")

# %%
#| solution
class Cube(dz.Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return gy * 3 * x**2

# %%
#| check
xs = np.random.default_rng(0).normal(size=4)
try:
    yc = Cube()(dz.Variable(xs.copy()))
except NotImplementedError as e:
    raise AssertionError(f"Cube is not written yet: {e}") from None
assert np.allclose(yc.data, xs**3), "Cube's forward does not compute x^3"
dz.utils.gradient_check(
    lambda v: Cube()(v), xs,
    hint="Cube's backward is wrong: it returns gy * 3x^2, with gy the gradient arriving from the "
         "output's side, which is not all ones here")
xc = dz.Variable(xs.copy())
Cube()(xc).backward(create_graph=True)
g1 = xc.grad
assert g1.creator is not None, (
    "the gradient has no graph: backward computed on raw arrays; use the input Variables"
)
xc.cleargrad()
g1.backward()
assert np.allclose(xc.grad.data, 6 * xs), f"the second derivative should be 6x, got {xc.grad.data}"
print("self-check passed: Cube's backward is right and can itself be differentiated (6x)")
