# %% [markdown]
# # Step 43: Linear regression
#
# Time to learn something. We have 100 points $(x_i, y_i)$ that lie roughly on a
# line, and we want the line $\hat y = xW + b$ that fits them best. "Best" means
# the smallest **mean squared error**
#
# $$L(W, b) = \frac{1}{N}\sum_{i=1}^{N} (\hat y_i - y_i)^2 .$$
#
# We do not solve for $W, b$ with a formula. Instead we use the tool we built:
# compute $L$, let backprop give $\partial L/\partial W$ and $\partial L/\partial b$,
# step both a little *against* their gradients, and repeat. This is gradient
# descent (step 28), now on a real fitting problem with array data.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `MeanSquaredError`, `mean_squared_error`,
# `mean_squared_error_simple`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `MeanSquaredError` computes the loss as one function: $L = \frac1N\sum(x_0 - x_1)^2$, whose
# gradient is $\frac2N(x_0 - x_1)$ for $x_0$ and its negative for $x_1$. Backward reads both
# inputs, so forward declares nothing with `retain_inputs`; backward recomputes the
# difference. Forward
# refuses different shapes: NumPy would broadcast (N, 1) against (N,) into an N by N difference
# and return a wrong loss without any error. It takes shapes that broadcasting fills without
# adding an element, such as the book's (1, 1) output against a (1,) target of one RNN step
# (step 59), and hands each gradient back in its input's shape. In float16 the sum is added up
# in float32 (`_per_example`) and only the loss is rounded back: float16 ends at 65504, and a
# sum of many small squares passes that long before their mean does (1000 errors of 10 give a
# loss of 100, but a sum of `inf`).

# %%
#| export dezero_like/functions.py
import math

import numpy as np
from dezero_like.core import Function
from dezero_like.functions import _float_dtype


def _sum_dtype(dtype):
    """The dtype to add numbers of ``dtype`` up in: float32 for float16 (a sum passes 65504,
    float16's largest number, long before a mean does), float64 for integers and booleans
    (whose sums would wrap around), the dtype itself for other floats."""
    if dtype == np.float16:
        return np.dtype(np.float32)
    return _float_dtype(dtype)


def _per_example(a, n):
    """``a.sum() / n``, summed in :func:`_sum_dtype`; a float16 result is rounded back."""
    total = a.sum(dtype=_sum_dtype(a.dtype)) / n
    return total.astype(np.float16) if a.dtype == np.float16 else total


def _check_same_shape(name, a, b, what="two arrays of the same shape", fix="t.reshape(y.shape)",
                      same_elements_ok=False):
    """Refuse a loss of ``a`` against ``b`` of different shapes; the number of examples else.

    NumPy would broadcast them: (N, 1) against (N,) makes an N x N difference, a wrong loss
    with no error. With ``same_elements_ok``, shapes that broadcasting leaves at the same
    number of elements pass ((1, 1) against (1,): one step of the book's RNN, step 59).
    The count is ``len(a)``, and 1 for a 0-d pair (one example)."""
    if a.shape != b.shape and not (same_elements_ok and _adds_no_element(a.shape, b.shape)):
        raise ValueError(
            f"{name} needs {what}, got {a.shape} and {b.shape} (NumPy would broadcast them: "
            "(N, 1) against (N,) makes an N x N difference, a wrong loss with no error). "
            f"Reshape one of them first, e.g. {fix}")
    return len(a) if a.ndim else 1


def _adds_no_element(shape_a, shape_b):
    """Whether broadcasting the two shapes gives as many elements as each of them holds."""
    try:
        size = math.prod(np.broadcast_shapes(shape_a, shape_b))
    except ValueError:  # shapes that do not broadcast at all
        return False
    return size == math.prod(shape_a) == math.prod(shape_b)


class MeanSquaredError(Function):
    """L = sum((x0 - x1)**2) / N with N = len(x0); dL/dx0 = 2 (x0 - x1) / N = -dL/dx1.

    ``x1`` may differ from ``x0`` by axes of length 1 that broadcasting fills without adding
    an element ((1, 1) against (1,)); each gradient then comes back in its input's shape."""

    def forward(self, x0, x1):
        self.n = _check_same_shape("mean_squared_error", x0, x1, same_elements_ok=True)
        diff = x0 - x1
        return _per_example(diff * diff, self.n)

    def backward(self, gy):
        x0, x1 = self.inputs
        diff = x0 - x1
        gx = gy * diff * (2.0 / self.n if self.n else 0.0)  # an empty batch: an empty gradient
        n0, n1 = self.needs_input_grad
        return (gx.reshape(x0.shape) if n0 else None), (-gx.reshape(x1.shape) if n1 else None)


# %%
#| export dezero_like/functions.py
from dezero_like.core import _refuse_keywords


def _reduction(loss, **writes):
    """The fix for PyTorch's ``reduction=`` given to a loss that is ``loss``: what to write for
    each of PyTorch's reductions in ``writes`` ('mean', 'sum', 'none')."""
    def fix(reduction):
        write = writes.get(reduction)
        return (f"there is no reduction= here: the loss is {loss}" +
                (f"; for PyTorch's {reduction!r} write {write}" if write else ""))
    return fix


_MSE_KEYWORDS = {"reduction": _reduction(  # PyTorch's mse_loss(x0, x1, reduction="mean")
    "sum((x0 - x1) ** 2) / len(x0), the mean over the batch",
    mean="F.mean((x0 - x1) ** 2), the mean of every element", sum="F.sum((x0 - x1) ** 2)",
    none="(x0 - x1) ** 2")}


def mean_squared_error(x0, x1, **others):
    """sum((x0 - x1)**2) / len(x0); see :class:`MeanSquaredError`.

    ``len(x0)`` is the batch size, as in the book: for targets of shape (N, C) the loss is C
    times PyTorch's ``mse_loss``, which divides by the number of elements (the same value for
    shapes (N,) and (N, 1)).
    """
    if others:  # PyTorch's mse_loss(x0, x1, reduction="sum"), say
        _refuse_keywords("F.mean_squared_error", others, _MSE_KEYWORDS)
    return MeanSquaredError()(x0, x1)


# %% [markdown]
# The book also keeps the loss written with the operators we already have, as
# `mean_squared_error_simple`: the same numbers, but a graph of four nodes (`-`, `**`, `sum`, `/`)
# whose intermediates are kept for backward, where `MeanSquaredError` is one node. It refuses
# different shapes for the same reason (and takes the same (1, 1) against (1,)). Both divide by
# `len(x0)`, the batch size; PyTorch's `mse_loss` divides by the number of elements (the same
# for targets of shape (N,) or (N, 1)).

# %%
#| export dezero_like/functions.py
from dezero_like.core import as_variable


def mean_squared_error_simple(x0, x1):
    """sum((x0 - x1)**2) / len(x0) composed of ``-``, ``**``, ``sum`` and ``/``.

    The same value as :func:`mean_squared_error`, which computes it as one function.
    """
    x0, x1 = as_variable(x0), as_variable(x1)
    n = _check_same_shape("mean_squared_error_simple", x0, x1, same_elements_ok=True)
    diff = x0 - x1
    return (diff ** 2).sum() / n


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(43)  # every file this step writes goes here

np.random.seed(0)
x = np.random.rand(100, 1)
y = 5 + 2 * x + np.random.rand(100, 1)  # the truth: slope 2, intercept 5.5 on average
print("x:", x.shape, "y:", y.shape)

# %% [markdown]
# The noise `np.random.rand` is uniform on [0, 1), with mean 0.5, so the best
# line has slope 2 and intercept about 5.5.
#
# ## The model and the loss
#
# `x` holds the N inputs as an (N, 1) matrix and `W` is (1, 1), so `x @ W` is the
# batch of predictions, and the bias `b` of shape (1,) is broadcast over the
# rows (step 41). `F.mean_squared_error(a, b)` computes $\frac1N\sum(a-b)^2$ in
# one function, whose backward is $\frac{2}{N}(a - b)$.

# %%
W = dz.Variable(np.zeros((1, 1)))
b = dz.Variable(np.zeros(1))


def predict(x):
    return F.matmul(x, W) + b


lr = 0.1
losses = []
for i in range(100):
    loss = F.mean_squared_error(predict(x), y)
    W.cleargrad()
    b.cleargrad()
    loss.backward()
    W.data -= lr * W.grad.data  # update the arrays directly: no graph for the update
    b.data -= lr * b.grad.data
    losses.append(float(loss.data))
    if i % 20 == 0 or i == 99:
        print(f"iter {i:3d}  loss {losses[-1]:.4f}  W {W.data[0, 0]:.3f}  b {b.data[0]:.3f}")

# %% [markdown]
# The loss falls quickly and then flattens out near the noise level. Uniform
# noise has variance 1/12 ≈ 0.083, which is what the true line scores on
# average; on these 100 points the best line scores a little less (a fitted
# line absorbs part of the sample's noise), so the loss may end below 0.083. The
# updates change `W.data` in place, outside any graph: the update is not part
# of the model we differentiate.
#
# Compare with the least-squares solution NumPy computes in closed form:

# %%
A = np.hstack([x, np.ones_like(x)])
(slope, intercept), *_ = np.linalg.lstsq(A, y[:, 0], rcond=None)
print(f"gradient descent: W={W.data[0, 0]:.3f}, b={b.data[0]:.3f}")
print(f"least squares:    W={slope:.3f}, b={intercept:.3f}")
print("mean_squared_error_simple agrees:", np.isclose(
    F.mean_squared_error_simple(predict(x), y).data, F.mean_squared_error(predict(x), y).data))

# %%
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.scatter(x, y, s=10, label="data")
grid = np.linspace(0, 1, 2)[:, None]
ax0.plot(grid, predict(grid).data, color="C1", label="fitted line")
ax0.set_xlabel("x")
ax0.set_ylabel("y")
ax0.legend()
ax1.plot(losses)
ax1.set_xlabel("iteration")
ax1.set_ylabel("mean squared error")
ax1.set_yscale("log")
plt.tight_layout()
save_figure(fig, out_dir / "fit_and_loss.png")
plt.show()

# %% [markdown]
# After 100 iterations gradient descent is close to, but not yet at, the
# least-squares answer: the slope and intercept trade off against each other
# along a shallow valley, which takes many small steps to walk down. Step 47's
# optimizers walk such valleys faster.
#
# ## Exercise 1: train longer
# Train the same model for 1000 iterations instead of 100 (reset `W` and `b`
# to zeros first) and store the final loss (a float) in `final_loss`. It
# should be within 1e-4 of the least-squares loss.

# %%
#| exercise
W = dz.Variable(np.zeros((1, 1)))
b = dz.Variable(np.zeros(1))
final_loss = ...  # a float: the loss of the model after 1000 iterations of the loop above

# %%
#| solution
W = dz.Variable(np.zeros((1, 1)))
b = dz.Variable(np.zeros(1))
for _ in range(1000):
    loss = F.mean_squared_error(predict(x), y)
    W.cleargrad()
    b.cleargrad()
    loss.backward()
    W.data -= lr * W.grad.data
    b.data -= lr * b.grad.data
final_loss = float(F.mean_squared_error(predict(x), y).data)

# %%
#| check
best = float(np.mean((A @ np.array([slope, intercept]) - y[:, 0]) ** 2))
assert isinstance(final_loss, float), (
    f"final_loss should be a float, got {type(final_loss).__name__}"
)
assert abs(final_loss - best) < 1e-4, (
    f"after 1000 iterations the loss should be within 1e-4 of least squares ({best:.6f}), "
    f"got {final_loss:.6f}: did you reset W and b and run 1000 iterations?"
)
print("self-check passed: 1000 iterations reach the least-squares loss")

# %% [markdown]
# ## Exercise 2: the mean squared error as one function
# Write `MeanSquaredError` yourself (for arrays of the same shape). `forward`
# returns $\frac1N \sum (x_0 - x_1)^2$, the sum over all elements, with $N$
# the number of rows (a 0-d pair counts as one). `backward` needs both inputs
# again and $N$ (keep it on `self` in forward); it returns
# $g_y \cdot \frac{2}{N}(x_0 - x_1)$ for $x_0$ and its negative for $x_1$,
# built from Variables (step 23's `Sub` has the same pair of signs). The
# self-check compares it with `F.mean_squared_error` on random (10, 2) arrays
# and runs `dz.utils.gradient_check` for both inputs.

# %%
#| exercise
class MyMeanSquaredError(dz.Function):
    def forward(self, x0, x1):
        raise NotImplementedError("Exercise (step 43): the squared differences, summed, "
                                  "divided by N (keep N for backward)")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 43): the gradients of x0 and x1 from the "
                                  "formula above, as Variables")

# %%
#| solution
class MyMeanSquaredError(dz.Function):
    def forward(self, x0, x1):
        diff = x0 - x1
        self.n = len(diff) if diff.ndim else 1  # a 0-d pair is one example
        return (diff * diff).sum() / self.n

    def backward(self, gy):
        x0, x1 = self.inputs
        diff = x0 - x1
        gx0 = gy * diff * (2.0 / self.n if self.n else 0.0)  # an empty batch: an empty gradient
        return gx0, -gx0

# %%
#| check
check_rng = np.random.default_rng(0)
p, t = check_rng.normal(size=(10, 2)), check_rng.normal(size=(10, 2))
try:
    mse = MyMeanSquaredError()(dz.Variable(p), dz.Variable(t))
except NotImplementedError as e:
    raise AssertionError(f"MyMeanSquaredError is not written yet: {e}") from None
expected = float(F.mean_squared_error(p, t).data)
assert np.isclose(float(mse.data), expected), (
    f"forward should be (1/N) sum (x0 - x1)^2 = {expected:.6f}, with N the number of rows, "
    f"got {float(mse.data):.6f}"
)
# gradient_check weighs the loss: the gradient arriving from above, gy, is not 1
for f, at, hint in ((lambda v: MyMeanSquaredError()(v, dz.Variable(t)), p,
                     "the gradient of x0 is wrong: it is gy (2/N)(x0 - x1), with the N of forward "
                     "and gy the gradient from above, which is not 1 here"),
                    (lambda v: MyMeanSquaredError()(dz.Variable(p), v), t,
                     "the gradient of x1 is wrong: the negative of x0's")):
    dz.utils.gradient_check(f, at, hint=hint)
print("self-check passed: MyMeanSquaredError matches F.mean_squared_error, gradients included")

# %% [markdown]
# ## Open experiment: what happens with a larger learning rate?
# We used `lr = 0.1`, and 100 iterations were not quite enough. Why not simply
# take bigger steps? Guess what 100 iterations give with a learning rate
# 2, 5, 10 or 15 times larger, then read the table (each run starts again
# from zeros).

# %%
def final_loss_with(rate, iters=100):
    W_lr = dz.Variable(np.zeros((1, 1)))
    b_lr = dz.Variable(np.zeros(1))
    for _ in range(iters):
        loss = F.mean_squared_error(F.matmul(x, W_lr) + b_lr, y)
        W_lr.cleargrad()
        b_lr.cleargrad()
        loss.backward()
        W_lr.data -= rate * W_lr.grad.data
        b_lr.data -= rate * b_lr.grad.data
    return float(loss.data), float(W_lr.data[0, 0]), float(b_lr.data[0])


print(f"{'lr':>5} {'loss after 100':>15} {'W':>10} {'b':>10}")
with np.errstate(over="ignore", invalid="ignore"):
    for rate in [0.1, 0.2, 0.5, 1.0, 1.5]:
        loss_value, W_value, b_value = final_loss_with(rate)
        print(f"{rate:5.1f} {loss_value:15.6g} {W_value:10.4g} {b_value:10.4g}")
print(f"least squares: loss {best:.6g}, W {slope:.4g}, b {intercept:.4g}")

# %% [markdown]
# Up to a point, bigger steps walk the shallow valley faster and land nearer
# the least-squares line in the same 100 iterations. Past that point each step
# overshoots the bottom in the steepest direction by more than it started
# from, and the loss explodes. For a quadratic loss the limit is
# $\eta < 2/\lambda_{\max}$, with $\lambda_{\max}$ the largest eigenvalue of
# the loss's Hessian: compute it (`np.linalg.eigvalsh(2 * A.T @ A / len(A))`)
# and see where it falls in the table.
