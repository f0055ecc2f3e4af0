# %% [markdown]
# # Step 36: Uses of double backprop
#
# Second derivatives are not only for Newton's method. Two uses appear all over
# modern deep learning, and both need exactly what steps 30–33 built: a
# gradient that is itself differentiable.
#
# 1. **Gradient penalties.** Some losses contain a gradient. The WGAN-GP critic,
#    for example, is trained to keep the norm of its gradient with respect to
#    its *input* close to 1, by adding $\lambda(\lVert\nabla_x D(x)\rVert - 1)^2$
#    to the loss, taken at random points between real and generated samples
#    (Gulrajani et al., 2017, "Improved Training of Wasserstein GANs").
#    Training with that loss needs the derivative, with respect to the
#    weights, of a gradient: double backprop.
# 2. **Hessian–vector products.** The Hessian $H$ of a function of $n$
#    variables has $n^2$ entries, far too many to store for a network. But
#    $Hv$, for a given vector $v$, costs only about two backward passes:
#    $Hv = \nabla_x\big(\nabla_x f(x) \cdot v\big)$, because $v$ does not
#    depend on $x$. Optimisers and analysis tools (curvature, eigenvalues of
#    $H$) are built on it.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import numerical_grad

rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. A gradient penalty
#
# A tiny "critic" $D(x) = \tanh(xW)$ scores a batch of 8 inputs with 3
# features. (The product $xW$ is written as a sum of products,
# `F.sum(x * W, axis=1)`: the matrix product `@` is step 42's.)
# The penalty is the mean over the batch of $(\lVert\nabla_{x_i} D\rVert - 1)^2$.
# Inside `gradient_penalty`, the first backward (with `create_graph=True`)
# computes $\nabla_x D$ as a graph that depends on $W$; the penalty built from it
# is then an ordinary function of $W$.

# %%
X = rng.normal(size=(8, 3))
W0 = rng.normal(size=3)


def gradient_penalty(W, X=X):
    x = dz.Variable(X)
    d = F.tanh(F.sum(x * W, axis=1))  # x W, one number per row
    d.backward(create_graph=True)  # x.grad = dD/dx, a function of W
    norms = F.sum(x.grad**2, axis=1) ** 0.5
    return F.sum((norms - 1) ** 2) / len(X)


W = dz.Variable(W0, name="W")
penalty = gradient_penalty(W)
W.cleargrad()  # the first backward also gave W a gradient (of D): drop it
penalty.backward()
print("penalty:", float(penalty.data))
print("d penalty / dW by double backprop:", W.grad.data.ravel())

# %% [markdown]
# Check it twice. The value by hand: row $i$ of $\nabla_x D$ is
# $(1 - D_i^2) W^\top$, so its norm is $(1 - D_i^2)\lVert W\rVert$. The gradient
# numerically, by central differences on $W$:

# %%
D = np.tanh(X @ W0).ravel()
by_hand = np.mean(((1 - D**2) * np.linalg.norm(W0) - 1) ** 2)
numerical = numerical_grad(gradient_penalty, W0)
print("penalty by hand:  ", by_hand)
print("numerical gradient:", numerical.ravel())
print("max difference:    ", np.max(np.abs(numerical - W.grad.data)))

# %% [markdown]
# Two hundred steps of gradient descent on the penalty alone bring every
# gradient norm towards 1 (at the start they range from 0.12 to 1.12):

# %%
W = dz.Variable(W0.copy())
norm_history, penalties = [], []  # kept at every step, for the picture below
for _ in range(200):
    norm_history.append((1 - np.tanh(X @ W.data) ** 2) * np.linalg.norm(W.data))  # by hand
    p = gradient_penalty(W)
    penalties.append(float(p.data))
    W.cleargrad()
    p.backward()
    W.data = W.data - 0.1 * W.grad.data
D = np.tanh(X @ W.data).ravel()
final_norms = (1 - D**2) * np.linalg.norm(W.data)
print("penalty after 200 steps:", float(gradient_penalty(W).data))  # p: before the last
print("gradient norms:", np.round(final_norms, 3))

# %% [markdown]
# The same descent as a picture. On the left, each line is the gradient norm of one
# input, step by step: the lines start far apart and close in on the dashed line
# at 1. On the right, the penalty falls as they do (note the log scale), then levels
# off: one weight vector cannot put all eight norms exactly at 1.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
left.plot(np.array(norm_history))  # one line per input x_i
left.axhline(1.0, color="k", linestyle="--", linewidth=1, label="the target, 1")
left.set(xlabel="gradient-descent step", ylabel=r"$\Vert\nabla_{x_i} D\Vert$",
         title="Each input's gradient norm")
left.legend()
right.semilogy(penalties)
right.set(xlabel="gradient-descent step", ylabel="penalty (log scale)",
          title="The gradient penalty")
figure_path = save_figure(fig, output_dir(36) / "penalty_descent.png")
plt.show()

# %% [markdown]
# ## 2. Hessian–vector products
#
# Take $f(x) = \tfrac12 x^\top A x + \tfrac13\sum_i x_i^3$ for a fixed matrix
# $A$. By hand: $\nabla f = S x + x^2$ with $S = (A + A^\top)/2$, and the Hessian is
# $H = S + \mathrm{diag}(2x)$. With the framework:
#
# 1. `y.backward(create_graph=True)` gives $g = \nabla f$ with a graph;
# 2. $s = g \cdot v$ (a number; $v$ is a constant);
# 3. `x.cleargrad(); s.backward()` gives $\nabla_x s = Hv$.

# %%
n = 5
A = rng.normal(size=(n, n))
x_value = rng.normal(size=n)


def f(x):
    Ax = F.sum(A * x, axis=1)  # the product A x, written without @ (step 42)
    return 0.5 * F.sum(x * Ax) + F.sum(x**3) / 3


def hvp(x_value, v):
    """Hessian of f at x_value times v, by double backprop."""
    x = dz.Variable(x_value)
    y = f(x)
    y.backward(create_graph=True)
    g = x.grad
    x.cleargrad()
    F.sum(g * v).backward()
    return x.grad.data


v = rng.normal(size=n)
H = (A + A.T) / 2 + np.diag(2 * x_value)
print("Hv by double backprop:", np.round(hvp(x_value, v), 6))
print("Hv by hand:           ", np.round(H @ v, 6))

# %% [markdown]
# With the unit vectors as $v$, $n$ products give the whole Hessian, one column
# each. That is how to get a full Hessian when $n$ is small:

# %%
H_auto = np.stack([hvp(x_value, e) for e in np.eye(n)], axis=1)
print("full Hessian matches:", np.allclose(H_auto, H, rtol=1e-12, atol=1e-12))
print("symmetric:", np.allclose(H_auto, H_auto.T))

# %% [markdown]
# ## Exercise 1: curvature along a direction
# The *curvature of f along a direction* $u$ (a unit vector) is $u^\top H u$.
# Compute it for $u = (1, 1, 1, 1, 1)/\sqrt 5$ at `x_value` without building
# $H$: which part of $u^\top H u$ does the step's `hvp` already give? Store the
# result in `curvature` (a Python float).

# %%
#| exercise
u = np.ones(n) / np.sqrt(n)
curvature = ...  # a float: u^T H u at x_value, without forming H

# %%
#| solution
u = np.ones(n) / np.sqrt(n)
curvature = float(u @ hvp(x_value, u))

# %%
#| check
assert isinstance(curvature, float), f"curvature should be a float, got {type(curvature).__name__}"
assert np.isclose(curvature, u @ H @ u), (
    f"expected u^T H u = {u @ H @ u:.6f}, got {curvature}: reread what hvp returns, "
    "and which vector is left to multiply by"
)
print("self-check passed: the curvature along u is u . (H u)")

# %% [markdown]
# ## Exercise 2: a Hessian–vector product for any function
# `hvp` above is tied to `f`. Write `make_hvp(fn)`, which returns a function
# `hvp_fn(x_value, v)` computing $H v$ for the scalar function `fn` by double
# backprop (the three lines of the recipe). The self-check compares it with
# the step's `hvp` on `f` and with the exact Hessian of
# $\sum_i x_i^2 \sin x_i + (\sum_i x_i)^2$ on random vectors.

# %%
#| exercise
def make_hvp(fn):
    raise NotImplementedError("Exercise (step 36): define hvp_fn(x_value, v) like hvp, with fn "
                              "instead of f, and return it")

# %%
#| solution
def make_hvp(fn):
    def hvp_fn(x_value, v):
        x = dz.Variable(x_value)
        fn(x).backward(create_graph=True)
        g = x.grad
        x.cleargrad()
        F.sum(g * v).backward()
        return x.grad.data

    return hvp_fn

# %%
#| check
check_rng = np.random.default_rng(0)
xv, vv = check_rng.normal(size=n), check_rng.normal(size=n)
try:
    hvp_f = make_hvp(f)
except NotImplementedError as e:
    raise AssertionError(f"make_hvp is not written yet: {e}") from None
assert callable(hvp_f), "make_hvp should return a function hvp_fn(x_value, v)"
assert np.allclose(hvp_f(xv, vv), hvp(xv, vv)), "on f, make_hvp(f) should agree with hvp"


def mixed(x):
    return F.sum(F.sin(x) * x**2) + F.sum(x) ** 2


# Its exact Hessian: (2 - x^2) sin x + 4x cos x on the diagonal, plus 2 everywhere.
H_mixed = np.diag((2 - xv**2) * np.sin(xv) + 4 * xv * np.cos(xv)) + 2.0
assert np.allclose(make_hvp(mixed)(xv, vv), H_mixed @ vv), (
    "make_hvp(mixed) does not give H v: clear x.grad before the second backward"
)
print("self-check passed: make_hvp gives H v for any function")
