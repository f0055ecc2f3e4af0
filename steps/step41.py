# %% [markdown]
# # Step 41: `broadcast_to`, and broadcasting inside `+` and `*`
#
# NumPy lets you add a vector of shape (3,) to a matrix of shape (2, 3): the
# vector is *broadcast*, i.e. repeated along the missing axis, as if it were
# a (2, 3) matrix with equal rows. Networks rely on this everywhere — adding a
# bias `b` of shape (out,) to a batch of shape (N, out) is broadcasting.
#
# Broadcasting uses one input element several times. Step 14 taught what that
# means for backprop: **the gradients of all the copies add up**. So the
# backward of `broadcast_to(x, shape)` is `sum_to(gy, x.shape)` — the function
# of step 40.
#
# The same must happen inside `+`, `-`, `*` and `/` when their inputs have
# different shapes, otherwise `b.grad` would come back with shape (2, 3) while
# `b` has shape (3,). Our `Add`, `Mul`, ... remember both input shapes in
# forward and call `sum_to` in backward whenever a shape differs.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` changes `_check_grads`: besides the number of gradients, it checks each
# gradient's shape against its input's.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import draw_cells, output_dir, save_figure
from dezero_like.utils import gradient_check

out_dir = output_dir(41)  # every file this step writes goes here

x = dz.Variable(np.array([1.0, 2.0, 3.0]))
y = F.broadcast_to(x, (2, 3))
print("y =", y)
y.backward()
print("x.grad =", x.grad, "(each element was used twice)")

# %% [markdown]
# ## Broadcasting inside the operators
#
# Add a (3,) vector to a (2, 3) matrix. Each element of `x1` is used in both
# rows, so its gradient is 2; each element of `x0` is used once:

# %%
x0 = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
x1 = dz.Variable(np.array([10.0, 20.0, 30.0]))
y = x0 + x1
print("y =", y)
y.backward()
print("x0.grad shape", x0.grad.shape, "x1.grad =", x1.grad)

# %% [markdown]
# The picture of that cell: forward copies `x1` into every row; backward sums
# the gradient's rows back into one, so `x1.grad` has `x1`'s shape again.

# %%
fig, (ax_f, ax_b) = plt.subplots(1, 2, figsize=(11, 3))
draw_cells(ax_f, x1.data, 0, 2, "x1 (3,)", "#cde", fontsize=9)
ax_f.annotate("", (5.9, 1), (3.3, 1.5), arrowprops={"arrowstyle": "->"})
ax_f.text(4.6, 1.75, "broadcast_to", ha="center", fontsize=8)
draw_cells(ax_f, np.broadcast_to(x1.data, (2, 3)), 6.2, 2, "copies (2, 3)", "#cde", fontsize=9)
ax_f.text(9.65, 1, "+", fontsize=14, va="center")
draw_cells(ax_f, x0.data, 10.4, 2, "x0 (2, 3)", "#eee", fontsize=9)
ax_f.set_title("forward: one row used twice")
draw_cells(ax_b, np.ones_like(y.data), 0, 2, "gy (2, 3), the seed", "#fdc", fontsize=9)
ax_b.annotate("", (5.9, 1), (3.3, 1), arrowprops={"arrowstyle": "->"})
ax_b.text(4.6, 1.2, "sum_to", ha="center", fontsize=8)
draw_cells(ax_b, x1.grad.data, 6.2, 1.5, "x1.grad (3,)", "#fdc", fontsize=9)
ax_b.set_title("backward: the copies' gradients add up")
for ax in (ax_f, ax_b):
    ax.set_xlim(-0.3, 13.7)
    ax.set_ylim(-0.5, 2.8)
    ax.set_aspect("equal")
    ax.axis("off")
save_figure(fig, out_dir / "broadcast.png")

# %% [markdown]
# With `*` the gradient of each copy is the other factor, so
# $\partial L/\partial x_{1,j} = \sum_i x_{0,ij}$, the column sums of `x0`:

# %%
x0.cleargrad()
x1.cleargrad()
y = x0 * x1
y.backward()
print("x1.grad =", x1.grad, "== column sums of x0:", np.allclose(x1.grad.data, x0.data.sum(0)))
print("x0.grad =", x0.grad)

# %% [markdown]
# ## The rule, checked over many shapes
#
# Whatever the two shapes are, as long as NumPy can broadcast them, each
# gradient must have its own input's shape and agree with the numerical
# gradient. Size-1 axes are broadcast too: (2, 1) against (1, 3) makes (2, 3).

# %%
rng = np.random.default_rng(0)
pairs = [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)), ((3,), ())]
for s0, s1 in pairs:
    a, b = rng.normal(size=s0), rng.normal(size=s1)
    u, v = dz.Variable(a), dz.Variable(b)
    F.sum(u * v + v).backward()
    ok0 = gradient_check(lambda p, b=b: p * dz.Variable(b) + dz.Variable(b), a)
    ok1 = gradient_check(lambda q, a=a: dz.Variable(a) * q + q, b)
    print(f"{str(s0):>10} with {str(s1):>7}: grads {u.grad.shape}, {v.grad.shape}; "
          f"checks {ok0 and ok1}")

# %% [markdown]
# ## The core checks every gradient's shape
#
# Forgetting the `sum_to` in a Function of your own is an easy mistake, and
# NumPy does not catch it: a (2, 3) gradient for a (3,) input broadcasts again
# in the next addition, and a later `sum_to` folds it back into the right
# shape with the wrong numbers. PyTorch does not refuse such a gradient; it
# mends it. When the backward of a `torch.autograd.Function` returns a
# gradient that broadcasts to its input's shape, the engine sums it back to
# that shape without a word, so `gy * b` for a (3,) input `b` still gives the
# right `b.grad`. It refuses only a shape that cannot be summed back, such as
# a (3,) gradient for a (2,) input ("returned an invalid gradient at index
# 0"). Our core sums nothing back, so it is stricter: from this step on it
# refuses any gradient whose shape differs from its input's. `_check_grads`,
# which since step 23 refuses a backward that returns a gradient too many or
# too few, now also compares each gradient's shape with its input's. (A
# constant's gradient is thrown away, so it is not checked. From step 69 on,
# an input that the package's own backward does not read is kept as a
# stand-in without data; the check skips those.)

# %%
#| export dezero_like/core.py
def _check_grads(f, gxs):
    """Refuse a backward that returns a gradient too many or too few, or of the wrong shape."""
    inputs = f.inputs
    if len(gxs) != len(inputs):
        raise RuntimeError(
            f"{type(f).__name__}.backward returned {len(gxs)} gradients "
            f"for {len(inputs)} inputs"
        )
    for i, gx in enumerate(gxs):
        if gx is not None and inputs[i].requires_grad:  # a constant's gradient is dropped
            data = inputs[i].data
            if data is not None and getattr(gx, "shape", ()) != data.shape:
                raise RuntimeError(
                    f"{type(f).__name__}.backward returned a gradient of shape "
                    f"{getattr(gx, 'shape', ())} for input {i}, which has shape {data.shape}: "
                    "each gradient must have its input's shape. An input that forward "
                    "broadcast gets its gradient summed back: F.sum_to(gx, x.shape) (step 40)"
                )


# %%
class ForgetsSumTo(dz.Function):  # Mul without the sum_to of its backward
    def forward(self, a, b):
        return a * b

    def backward(self, gy):
        a, b = self.inputs
        return gy * b, gy * a  # (2, 3) gradients, also for the (3,) input


try:
    F.sum(ForgetsSumTo()(x0, x1) + x1).backward()
except RuntimeError as e:
    print("refused:", e)
else:
    raise AssertionError("the core should refuse a gradient of the wrong shape")

# %% [markdown]
# ## Exercise 1: the gradient of a bias
# A bias is added to every row of a batch. For `h` of shape (5, 4) and a bias
# `c` of shape (4,), compute the scalar $\sum_{n,j} (h_{nj} + c_j)^2$ with the
# functions of `F`, backprop from it, and store the gradient of `c` in `grad_c`.
# By the chain rule it equals $2\sum_n (h_n + c)$.

# %%
#| exercise
h = dz.Variable(np.random.default_rng(3).normal(size=(5, 4)))
c = dz.Variable(np.array([0.5, -1.0, 2.0, 0.0]))
grad_c = ...  # c's gradient after backprop from the sum of (h + c) squared

# %%
#| solution
h = dz.Variable(np.random.default_rng(3).normal(size=(5, 4)))
c = dz.Variable(np.array([0.5, -1.0, 2.0, 0.0]))
out = F.sum((h + c) ** 2)
out.backward()
grad_c = c.grad

# %%
#| check
assert isinstance(grad_c, dz.Variable), f"grad_c should be c.grad (a Variable), got {grad_c!r}"
assert grad_c.shape == (4,), f"the bias gradient has the bias's shape (4,), got {grad_c.shape}"
assert np.allclose(grad_c.data, 2 * (h.data + c.data).sum(axis=0)), (
    "expected 2 * sum over the rows of (h + c): the copies' gradients add up"
)
print("self-check passed: the bias gradient sums the rows, 2 sum_n (h_n + c)")

# %% [markdown]
# ## Exercise 2: a `Mul` that broadcasts
# Write the broadcasting multiplication yourself. `forward(x0, x1)` returns
# the elementwise product of the arrays (NumPy broadcasts them). In `backward`,
# the gradients are $g_y x_1$ and $g_y x_0$, each summed back to its own
# input's shape (`F.sum_to`, step 40). The self-check compares it with `*` for the
# shapes (2, 3) and (3,) and runs `gradient_check` for both inputs.

# %%
#| exercise
class MyMul(dz.Function):
    def forward(self, x0, x1):
        raise NotImplementedError("Exercise (step 41): the elementwise product (NumPy "
                                  "broadcasts the two arrays)")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 41): each input's gradient is gy times the "
                                  "other input (step 23's Mul), brought back to that input's "
                                  "own shape (step 40)")

# %%
#| solution
class MyMul(dz.Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs
        return F.sum_to(gy * x1, x0.shape), F.sum_to(gy * x0, x1.shape)

# %%
#| check
check_rng = np.random.default_rng(0)
a, b = check_rng.normal(size=(2, 3)), check_rng.normal(size=3)
u, v = dz.Variable(a.copy()), dz.Variable(b.copy())
try:
    prod = MyMul()(u, v)
except NotImplementedError as e:
    raise AssertionError(f"MyMul is not written yet: {e}") from None
assert np.allclose(prod.data, a * b), "forward should return the elementwise product"
F.sum(prod).backward()
assert v.grad.shape == (3,), (
    f"x1.grad should have x1's shape (3,), got {v.grad.shape}: use F.sum_to"
)
v_first = dz.Variable(b.copy())  # the broadcast input in the first slot this time
F.sum(MyMul()(v_first, dz.Variable(a))).backward()
assert v_first.grad.shape == (3,), (
    f"x0.grad should have x0's shape (3,), got {v_first.grad.shape}: sum both gradients to "
    "their own input's shape, the first one too"
)
for which, f, at in (("x0", lambda p: MyMul()(p, dz.Variable(b)), a),
                     ("x1", lambda q: MyMul()(dz.Variable(a), q), b)):
    gradient_check(f, at, hint=f"{which}'s gradient is wrong: gy times the other input, summed "
                               f"to {which}'s shape")
print("self-check passed: MyMul broadcasts, and each gradient comes back in its input's shape")
