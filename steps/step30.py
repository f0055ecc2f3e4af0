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
# ## Exercise
# Compute the gradient of $y = e^x$ at $x = 0.5$ with `create_graph=True`, and
# store the DOT text of `x.grad` in `exp_dot`. `Exp.backward` multiplies by the
# retained output $y$ itself, so the graph should contain the `Exp` function.

# %%
xe = dz.Variable(np.array(0.5), name="x")  # solution:
F.exp(xe).backward(create_graph=True)
exp_dot = get_dot_graph(xe.grad, verbose=False)
assert 'label="Exp"' in exp_dot and 'label="Mul"' in exp_dot, "the gradient is gy * exp(x)"
assert np.isclose(xe.grad.data, np.exp(0.5))
print("self-check passed")
