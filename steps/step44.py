# %% [markdown]
# # Step 44: A neural network by hand
#
# A straight line cannot fit a sine wave, however well we train it. To fit
# curves we need a model that is **nonlinear** in its input. The simplest
# neural network gets there by putting a nonlinear *activation function* between
# two linear maps:
#
# $$h = \sigma(xW_1 + b_1), \qquad \hat y = hW_2 + b_2, \qquad \sigma(a) = \frac{1}{1 + e^{-a}}.$$
#
# With 10 hidden units, $\hat y$ is a weighted sum of 10 shifted and stretched
# S-curves — enough bumps and slopes to trace one period of a sine.
#
# Two package functions make this short:
#
# * `F.linear(x, W, b)` computes $xW + b$ as one function. Its backward is the
#   matmul backward of step 42 plus `sum_to` for the bias (step 41), but it
#   never stores $xW$ separately, and it keeps only the inputs its backward
#   reads.
# * `F.sigmoid(x)`, whose derivative is $\sigma'(a) = \sigma(a)(1 - \sigma(a))$ —
#   written in terms of the *output*, so backward keeps the output, not the input.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `Linear`, `linear`, `linear_simple`, `Sigmoid`, `sigmoid`,
# `sigmoid_simple`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Linear` is `x @ W + b` as one function. Its gradients are those of `matmul`, plus `gy` summed
# over the rows for `b` (`sum_to`); so, as in `MatMul`, `W` is kept only when `x` needs a
# gradient and `x` only when `W` does, and of `b` only its shape. The bias is added in place
# (`y += b`): `x @ W` is a new array anyway, so no second one is made (a wider bias, float64
# on float32, makes a new float64 array, as NumPy would). float16 `x` and `W` are multiplied in
# float32 and the bias is added there too, so the result is rounded to float16 once, as
# PyTorch rounds it (`_float16_plus_bias`). `linear(x, W)` without a
# bias passes two inputs, and backward then returns two gradients.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like.core import Function
from dezero_like.functions import matmul, sum_to


def _add_bias(y, b):
    """``y + b``, in place in the fresh array ``y`` unless a wider ``b`` widens the result."""
    if np.result_type(y.dtype, b.dtype) != y.dtype:  # float64 on float32: float64, as NumPy
        return y + b
    y += b  # no temporary
    return y


def _float16_plus_bias(y, b):
    """``y + b`` for a float16 product ``y`` made in float32, rounded to float16 once.

    As PyTorch: rounding the product to float16 and then the sum again put outputs up to one
    unit in the last place off, where one rounding leaves at most half a unit.
    """
    return (y + b).astype(np.result_type(np.float16, b.dtype))


class Linear(Function):
    """y = x @ W + b (b optional); dL/dx = gy @ W.T, dL/dW = x.T @ gy, dL/db = sum of gy over rows.

    One function instead of ``matmul`` followed by ``+``: the product ``x @ W``
    is never kept as a separate array, and only what backward reads is retained
    (``W`` for the gradient of ``x``, ``x`` for the gradient of ``W``; ``b``'s
    gradient needs neither).
    """

    def forward(self, x, W, b=None):
        if x.ndim != 2 or W.ndim != 2 or x.shape[1] != W.shape[0]:
            torch_layout = x.ndim == W.ndim == 2 and x.shape[1] == W.shape[1]
            # PyTorch's linear maps the last axis of any (..., in_size): here a batch is (N, in)
            leading = x.ndim > 2 and W.ndim == 2 and x.shape[-1] == W.shape[0]
            raise ValueError(
                f"linear expects x of shape (N, in_size) with in_size="
                f"{W.shape[0] if W.ndim == 2 else '?'} to match W of shape {W.shape} "
                f"(in_size, out_size), got x of shape {x.shape}" + (
                    "; W looks stored as PyTorch stores it, (out_size, in_size): use its "
                    "transpose (W.T, or weight.T when porting a torch.nn.Linear)"
                    if torch_layout else "") + (
                    f"; to map the last axis of every position, make the positions rows and "
                    f"back: F.reshape(F.linear(F.reshape(x, (-1, {W.shape[0]})), W, b), "
                    f"{x.shape[:-1] + (W.shape[1],)})" if leading else "")
            )
        needs = self.needs_input_grad or (True, True, True)
        self.retain_inputs(((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
        if b is None:
            return x @ W
        if b.ndim and b.shape[-1] != W.shape[1]:
            raise ValueError(
                f"linear: the bias has shape {b.shape}, but W of shape {W.shape} makes "
                f"{W.shape[1]} outputs: b must have shape ({W.shape[1]},)")
        self.b_shape = b.shape
        if x.dtype.char == W.dtype.char == "e":  # float16: in float32, rounded once
            return _float16_plus_bias(x.astype(np.float32) @ W.astype(np.float32), b)
        return _add_bias(x @ W, b)  # x @ W is a fresh array: in place when the dtype allows

    def backward(self, gy):
        needs = self.needs_input_grad
        x, W = self.inputs[0], self.inputs[1]
        gx = matmul(gy, W.T) if needs[0] else None
        gW = matmul(x.T, gy) if needs[1] else None
        if len(needs) == 2:
            return gx, gW
        if not needs[2]:
            return gx, gW, None
        return gx, gW, sum_to(gy, self.b_shape)


# %%
#| export dezero_like/functions.py
from dezero_like.core import _REQUIRED, _refuse_keywords

_LINEAR_KEYWORDS = {  # PyTorch's F.linear(input, weight, bias)
    "weight": "write W=, of shape (in_size, out_size): the transpose of PyTorch's weight "
              "(out_features, in_features), so W=weight.T",
    "bias": "write b=",
}


def linear(x, W=_REQUIRED, b=None, **others):
    """Affine map ``x @ W + b`` of a batch ``x`` (N, in) with ``W`` (in, out) and ``b`` (out,)."""
    if others or W is _REQUIRED:  # PyTorch's F.linear(x, weight=w, bias=b), say
        _refuse_keywords("F.linear", others, _LINEAR_KEYWORDS, W=W)
    if b is None:
        return Linear()(x, W)
    return Linear()(x, W, b)


# %% [markdown]
# The book keeps the version composed of earlier functions too: `linear_simple` is `matmul`
# followed by `+`. Its graph has two nodes and the product `x @ W` is a separate array, so it
# sets that array to `None` as soon as the sum is made: the addition's backward reads only the
# shapes, and `matmul`'s reads `x` and `W`, never its own output.

# %%
#| export dezero_like/functions.py
from dezero_like.functions import matmul


def linear_simple(x, W, b=None):
    """``x @ W + b`` composed of :func:`matmul` and ``+``; :func:`linear` is one function."""
    t = matmul(x, W)
    if b is None:
        return t
    y = t + b
    t.data = None  # nothing reads the product again: free it now
    return y


# %% [markdown]
# `Sigmoid`: the derivative is $y(1 - y)$, written with the output, so backward reads only $y$
# (`retain_outputs((0,))`, `retain_inputs(())`). Forward computes $1/(1 + e^{-x})$ in one new
# array, step by step in place (`out=`); for very negative $x$, `exp` overflows to inf and the
# result is the right limit 0, so that warning is switched off. A 0-d input goes through as a
# 1-element array, because `out=` cannot write into the scalar NumPy would return, and an integer
# input is converted to float64 first (the dtype `np.exp` gives int32 and int64; NumPy would give
# float16 for int8 or bool, which loses digits), since an integer array could not hold the
# results in place.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _as_float


class Sigmoid(Function):
    """y = 1 / (1 + exp(-x)); dy/dx = y * (1 - y).

    Computed as written, ``1 / (1 + exp(-x))``, which is accurate on both
    sides: for very negative x, ``exp(-x)`` is huge and its reciprocal keeps
    full relative precision (it only overflows to inf, giving the right limit
    0, below about -88.7 in float32; that overflow is expected and not warned
    about). Between -88.7 and -87.3 the float32 result is subnormal (below
    1.2e-38); CuPy compiles its kernels with flush-to-zero, so on a GPU those
    values are 0. float16 would overflow below -11.1, so it is computed in float32
    and rounded, as PyTorch does. The shorter ``0.5 * tanh(0.5 * x) + 0.5`` cancels for negative x:
    in float32 it gives 2.98e-08 for sigmoid(-18), whose true value is
    1.52e-08, and 0 for sigmoid(-20), so log(sigmoid(-20)) would be -inf.
    Backward reads the output.
    """

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        xp = cuda.get_array_module(x)
        x = _as_float(x)  # integers, booleans: in float64 (not float16)
        if x.dtype == np.float16:  # exp(-x) would overflow 65504 below x = -11.1: float32
            return self.forward(x.astype(np.float32)).astype(np.float16)
        if x.ndim == 0:  # NumPy turns 0-d results into scalars, which out= cannot take
            return self.forward(x.reshape(1)).reshape(())
        y = xp.negative(x)
        with np.errstate(over="ignore"):
            xp.exp(y, out=y)
        y += 1
        xp.reciprocal(y, out=y)
        return y

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * y * (1 - y)


# %%
#| export dezero_like/functions.py
def sigmoid(x):
    """Logistic sigmoid 1 / (1 + exp(-x)), elementwise; see :class:`Sigmoid`."""
    return Sigmoid()(x)


# %% [markdown]
# `sigmoid_simple` writes the same formula with operators, a graph of four nodes. Its value is
# right everywhere, but below about -709 (float64; -88 in float32) `exp(-x)` overflows to `inf`
# (NumPy warns), and its backward then multiplies `0` by `inf`: the gradient is `nan` where
# `sigmoid`'s is 0.

# %%
#| export dezero_like/functions.py
from dezero_like.core import as_variable
from dezero_like.functions import exp


def sigmoid_simple(x):
    """1 / (1 + exp(-x)) composed of operators and :func:`exp`; :func:`sigmoid` is one function.

    For x below about -709 (float64) exp overflows and the gradient is nan; use :func:`sigmoid`.
    """
    x = as_variable(x)
    return 1 / (1 + exp(-x))


# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, save_figure
from dezero_like.utils import gradient_check

out_dir = output_dir(44)  # every file this step writes goes here

np.random.seed(0)
x = np.random.rand(100, 1)
y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)
print("data:", x.shape, y.shape)

# %% [markdown]
# Both functions pass the gradient check, for every input of `linear`:

# %%
rng = np.random.default_rng(0)
xs, Ws, bs = rng.normal(size=(4, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
print("sigmoid:", gradient_check(F.sigmoid, xs))
print("linear wrt x, W, b:",
      gradient_check(lambda v: F.linear(v, dz.Variable(Ws), dz.Variable(bs)), xs),
      gradient_check(lambda v: F.linear(dz.Variable(xs), v, dz.Variable(bs)), Ws),
      gradient_check(lambda v: F.linear(dz.Variable(xs), dz.Variable(Ws), v), bs))

# %% [markdown]
# The composed versions give the same numbers, with more nodes in the graph:

# %%
print("linear_simple == linear:", np.allclose(
    F.linear_simple(xs, dz.Variable(Ws), dz.Variable(bs)).data,
    F.linear(xs, dz.Variable(Ws), dz.Variable(bs)).data))
print("sigmoid_simple == sigmoid:", np.allclose(F.sigmoid_simple(xs).data, F.sigmoid(xs).data))

# %% [markdown]
# ## The parameters and the training loop
#
# The inputs lie in $[0, 1)$. If the first-layer weights were tiny, every
# sigmoid would be almost a straight line over that range and training would
# first crawl along a long plateau; starting them at a few units wide lets the
# hidden units bend right away. The second layer starts small.

# %%
I, H, O = 1, 10, 1
np.random.seed(1)
W1 = dz.Variable(5.0 * np.random.randn(I, H))
b1 = dz.Variable(np.zeros(H))
W2 = dz.Variable(0.3 * np.random.randn(H, O))
b2 = dz.Variable(np.zeros(O))
params = [W1, b1, W2, b2]


def predict(x):
    h = F.sigmoid(F.linear(x, W1, b1))
    return F.linear(h, W2, b2)


lr = 0.3
iters = 4000
losses = []
for i in range(iters):
    loss = F.mean_squared_error(y, predict(x))
    for p in params:
        p.cleargrad()
    loss.backward()
    for p in params:
        p.data -= lr * p.grad.data
    losses.append(float(loss.data))
    if i % 1000 == 0 or i == iters - 1:
        print(f"iter {i:4d}  loss {losses[-1]:.4f}")

# %% [markdown]
# The noise is uniform on [0, 1), so the best possible curve is
# $\sin(2\pi x) + 0.5$ with a loss near the noise variance $1/12 \approx 0.083$:

# %%
grid = np.linspace(0, 1, 200)[:, None]
fit = predict(grid).data
truth = np.sin(2 * np.pi * grid) + 0.5
mean_abs_error = float(np.abs(fit - truth).mean())
print(f"mean |prediction - (sin(2 pi x) + 0.5)| on [0, 1]: {mean_abs_error:.3f}")

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.scatter(x, y, s=10, label="data")
ax0.plot(grid, fit, color="C1", label="network")
ax0.plot(grid, truth, "k--", lw=1, label="sin(2πx) + 0.5")
ax0.legend()
ax1.plot(losses)
ax1.set_xlabel("iteration")
ax1.set_ylabel("loss")
ax1.set_yscale("log")
plt.tight_layout()
save_figure(fig, out_dir / "fit_and_loss.png")
plt.show()

# %% [markdown]
# We had to list the parameters ourselves, clear each gradient, and update
# each array. With two layers that is bearable; with twenty it is not. Step 45
# lets layers keep track of their own parameters.
#
# ## Exercise 1: tanh instead of sigmoid
# Replace the sigmoid with `F.tanh` in a `predict_tanh(x)` that uses the same
# parameters. The self-check verifies that its loss (before any training with
# it) is finite and that its hidden layer really is $\tanh(xW_1 + b_1)$; it
# also checks numerically that $\tanh(a) = 2\,\mathrm{sigmoid}(2a) - 1$, the
# reason the two activations can replace each other.

# %%
#| exercise
def predict_tanh(x):
    raise NotImplementedError("Exercise (step 44): predict with F.tanh in place of F.sigmoid")

# %%
#| solution
def predict_tanh(x):
    return F.linear(F.tanh(F.linear(x, W1, b1)), W2, b2)

# %%
#| check
out = predict_tanh(x)
assert out.shape == (100, 1), f"predict_tanh(x) should have shape (100, 1), got {out.shape}"
hidden = np.tanh(x @ W1.data + b1.data)
assert np.allclose(out.data, hidden @ W2.data + b2.data), (
    "predict_tanh should be predict with tanh as the hidden activation, same parameters"
)
assert np.isfinite(float(F.mean_squared_error(y, out).data)), "the loss should be finite"
a = np.linspace(-3, 3, 7)
assert np.allclose(F.tanh(a).data, 2 * F.sigmoid(2 * a).data - 1), "tanh(a) = 2 sigmoid(2a) - 1"
print("self-check passed: predict_tanh uses tanh, and tanh is a rescaled sigmoid")

# %% [markdown]
# ## Exercise 2: `Linear` as one function
# Write `Linear` yourself, with a bias: `forward(x, W, b)` returns
# `x @ W + b`; `backward` returns the three gradients $g_y W^\top$,
# $x^\top g_y$ and the sum of $g_y$ over the rows (the bias was broadcast
# over them, so step 40's rule applies). Build them from `self.inputs`, with
# the functions of steps 40 and 42, so that they stay Variables. The self-check
# compares it with `F.linear` on random inputs and runs `gradient_check` for
# `x`, `W` and `b`.

# %%
#| exercise
class MyLinear(dz.Function):
    def forward(self, x, W, b):
        raise NotImplementedError("Exercise (step 44): the affine map of x by W, with b "
                                  "added to every row")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 44): three gradients, each of its input's "
                                  "shape: x's and W's as in MatMul (step 42), b's summed over "
                                  "the rows it was broadcast to (step 40)")

# %%
#| solution
class MyLinear(dz.Function):
    def forward(self, x, W, b):
        return x @ W + b

    def backward(self, gy):
        x, W, b = self.inputs
        return F.matmul(gy, W.T), F.matmul(x.T, gy), F.sum_to(gy, b.shape)

# %%
#| check
check_rng = np.random.default_rng(0)
xc, Wc, bc = check_rng.normal(size=(4, 3)), check_rng.normal(size=(3, 2)), check_rng.normal(size=2)
try:
    yc = MyLinear()(dz.Variable(xc), dz.Variable(Wc), dz.Variable(bc))
except NotImplementedError as e:
    raise AssertionError(f"MyLinear is not written yet: {e}") from None
assert np.allclose(yc.data, F.linear(xc, dz.Variable(Wc), dz.Variable(bc)).data), (
    "forward should match F.linear: x @ W + b"
)
X, Wv, B = dz.Variable(xc), dz.Variable(Wc), dz.Variable(bc)
for name, f, at in [("x", lambda v: MyLinear()(v, Wv, B), xc),
                    ("W", lambda v: MyLinear()(X, v, B), Wc),
                    ("b", lambda v: MyLinear()(X, Wv, v), bc)]:
    gradient_check(f, at, hint=f"the gradient of {name} is wrong")
print("self-check passed: MyLinear matches F.linear, and the gradients of x, W and b are right")
