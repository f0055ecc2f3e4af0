"""Differentiable functions: ``import dezero_like.functions as F``.

Each function is a :class:`~dezero_like.core.Function` subclass (``forward`` on
raw arrays, ``backward`` on Variables, so its backward is itself differentiable)
plus a lowercase wrapper. The docstring gives the formula and its derivative.
Every function works on NumPy and CuPy arrays through the same code.
"""

from __future__ import annotations

import numpy as np

from dezero_like import cuda, utils

# The arithmetic behind Variable's operators lives in core; as in the book,
# ``F.add(x, y)`` and friends are the same functions under their plain names.
from dezero_like.core import (  # noqa: A004, F401
    Config,
    Function,
    Variable,
    add,
    as_variable,
    div,
    mul,
    neg,
    pow,  # noqa: A004, F401 - the book's name
    rdiv,
    rsub,
    sub,
)

# --------------------------------------------------------------------------- #
# Elementwise functions
# --------------------------------------------------------------------------- #


class Square(Function):
    """y = x**2; dy/dx = 2x."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        (x,) = self.inputs
        return gy * (2 * x)


def square(x):
    return Square()(x)


class Exp(Function):
    """y = exp(x); dy/dx = exp(x) = y, so the output is kept instead of the input."""

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return cuda.get_array_module(x).exp(x)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * y


def exp(x):
    return Exp()(x)


class Log(Function):
    """y = log(x); dy/dx = 1/x."""

    def forward(self, x):
        return cuda.get_array_module(x).log(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy / x


def log(x):
    return Log()(x)


class Sin(Function):
    """y = sin(x); dy/dx = cos(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).sin(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * cos(x)


def sin(x):
    return Sin()(x)


class Cos(Function):
    """y = cos(x); dy/dx = -sin(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).cos(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * -sin(x)


def cos(x):
    return Cos()(x)


class Tanh(Function):
    """y = tanh(x); dy/dx = 1 - y**2."""

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return cuda.get_array_module(x).tanh(x)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * (1 - y * y)


def tanh(x):
    return Tanh()(x)


class AsType(Function):
    """y = x converted to ``dtype``; the gradient is converted back to x's dtype."""

    def __init__(self, dtype, copy=False):
        self.dtype = np.dtype(dtype)
        self.copy = copy

    def forward(self, x):
        self.retain_inputs(())
        self.x_dtype = x.dtype
        return x.astype(self.dtype, copy=self.copy)

    def backward(self, gy):
        return astype(gy, self.x_dtype)


def astype(x, dtype, copy=False):
    """x as an array of ``dtype`` (differentiable); ``copy=True`` always makes a new array."""
    x = as_variable(x)
    if x.dtype == np.dtype(dtype) and not copy:
        return x
    return AsType(dtype, copy)(x)


# --------------------------------------------------------------------------- #
# Shape functions: they move elements around, so their backward moves the
# gradient back the same way.
# --------------------------------------------------------------------------- #


class Reshape(Function):
    """y = x viewed with a new shape; the gradient is reshaped back."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return x.reshape(self.shape)

    def backward(self, gy):
        return reshape(gy, self.x_shape)


def reshape(x, shape):
    if x.shape == tuple(shape):
        return as_variable(x)
    return Reshape(shape)(x)


class Transpose(Function):
    """y = x with axes permuted; the gradient is permuted back."""

    def __init__(self, axes=None):
        self.axes = None if axes is None else tuple(axes)

    def forward(self, x):
        self.retain_inputs(())
        return x.transpose(self.axes)

    def backward(self, gy):
        if self.axes is None:
            return transpose(gy)
        inverse = tuple(np.argsort([a % len(self.axes) for a in self.axes]))
        return transpose(gy, inverse)


def transpose(x, axes=None):
    return Transpose(axes)(x)


class Sum(Function):
    """y = sum of x over ``axis``; each element's gradient is dy."""

    def __init__(self, axis=None, keepdims=False):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return x.sum(axis=self.axis, keepdims=self.keepdims)

    def backward(self, gy):
        gy = utils.reshape_sum_backward(gy, self.x_shape, self.axis, self.keepdims)
        return broadcast_to(gy, self.x_shape)


def sum(x, axis=None, keepdims=False):  # noqa: A001 - the book's name
    return Sum(axis, keepdims)(x)


class SumTo(Function):
    """y = x summed down to ``shape`` (undoes broadcasting); backward broadcasts."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return utils.sum_to(x, self.shape)

    def backward(self, gy):
        return broadcast_to(gy, self.x_shape)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape``, a shape it was broadcast from (undoes broadcast_to)."""
    shape = tuple(shape)
    if x.shape == shape:
        return as_variable(x)
    if len(shape) > len(x.shape) or any(
        s != 1 and s != n for s, n in zip(shape[::-1], x.shape[::-1])
    ):
        raise ValueError(
            f"sum_to: shape {shape} does not broadcast to the input's shape {x.shape}; the "
            "target must be a shape that x could have been broadcast from"
        )
    return SumTo(shape)(x)


class BroadcastTo(Function):
    """y = x repeated to ``shape``; backward sums the copies back (sum_to)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        return cuda.get_array_module(x).broadcast_to(x, self.shape)

    def backward(self, gy):
        return sum_to(gy, self.x_shape)


def broadcast_to(x, shape):
    if x.shape == tuple(shape):
        return as_variable(x)
    return BroadcastTo(shape)(x)


# --------------------------------------------------------------------------- #
# Matrix product
# --------------------------------------------------------------------------- #


def _check_matmul_shapes(a_shape, b_shape, where):
    """Raise a clear error when ``a @ b`` is impossible (the inner sizes differ)."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise ValueError(
            f"{where}: matmul needs arrays with at least one axis, got shapes {a_shape} and "
            f"{b_shape}; use * to multiply by a scalar"
        )
    k_a = a_shape[-1]
    k_b = b_shape[0] if len(b_shape) == 1 else b_shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"{where}: cannot multiply shapes {a_shape} @ {b_shape}: the last axis of the first "
            f"({k_a}) must equal the {'only' if len(b_shape) == 1 else 'second-to-last'} axis of "
            f"the second ({k_b})"
        )


def _swap_last(x):
    """Transpose of the last two axes of a Variable (``x.T`` for a matrix)."""
    if x.ndim == 2:
        return transpose(x)
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return transpose(x, axes)


class MatMul(Function):
    """y = x @ W with NumPy's rules (1-D operands, stacks of matrices that broadcast).

    For matrices, dL/dx = gy @ W.T and dL/dW = x.T @ gy. A 1-D operand is
    treated as a row (x) or a column (W) with that axis removed from y; for
    stacks, the same products are taken per matrix and the gradient is summed
    over the batch axes that were broadcast (``sum_to``).
    """

    def forward(self, x, W):
        _check_matmul_shapes(x.shape, W.shape, "matmul")
        n0, n1 = self.needs_input_grad or (True, True)
        self.retain_inputs(((1,) if n0 else ()) + ((0,) if n1 else ()))
        self.shapes = (x.shape, W.shape)
        return x @ W

    def backward(self, gy):
        x, W = self.inputs
        n0, n1 = self.needs_input_grad
        x_shape, W_shape = self.shapes
        if len(x_shape) == 2 and len(W_shape) == 2:  # the common case, as in the book
            gx = matmul(gy, W.T) if n0 else None
            gW = matmul(x.T, gy) if n1 else None
            return gx, gW
        # Give 1-D operands (and the matching axis of gy) their missing axis back,
        # so every product below is between stacks of matrices.
        if len(x_shape) == 1:
            gy = reshape(gy, gy.shape[:-1] + (1,) + gy.shape[-1:]) if len(W_shape) > 1 \
                else reshape(gy, (1,) + gy.shape)
        if len(W_shape) == 1:
            gy = reshape(gy, gy.shape + (1,))
        gx = gW = None
        if n0:
            W2 = reshape(W, (W_shape[0], 1)) if len(W_shape) == 1 else W
            gx = matmul(gy, _swap_last(W2))
            gx = reshape(sum_to(gx, _matrix_shape(x_shape, row=True)), x_shape)
        if n1:
            x2 = reshape(x, (1, x_shape[0])) if len(x_shape) == 1 else x
            gW = matmul(_swap_last(x2), gy)
            gW = reshape(sum_to(gW, _matrix_shape(W_shape, row=False)), W_shape)
        return gx, gW


def _matrix_shape(shape, row):
    """The shape of an operand after its missing axis is restored (row for x, column for W)."""
    if len(shape) != 1:
        return shape
    return (1, shape[0]) if row else (shape[0], 1)


def matmul(x, W):
    """Matrix product ``x @ W`` (NumPy's rules: 1-D operands and broadcast stacks)."""
    return MatMul()(x, W)


class Linear(Function):
    """y = x @ W + b (b optional); dL/dx = gy @ W.T, dL/dW = x.T @ gy, dL/db = sum of gy over rows.

    One function instead of ``matmul`` followed by ``+``: the product ``x @ W``
    is never kept as a separate array, and only what backward reads is retained
    (``W`` for the gradient of ``x``, ``x`` for the gradient of ``W``; ``b``'s
    gradient needs neither).
    """

    def forward(self, x, W, b=None):
        if x.ndim != 2 or W.ndim != 2 or x.shape[1] != W.shape[0]:
            raise ValueError(
                f"linear expects x of shape (N, in_size) with in_size="
                f"{W.shape[0] if W.ndim == 2 else '?'} to match W of shape {W.shape} "
                f"(in_size, out_size), got x of shape {x.shape}"
            )
        needs = self.needs_input_grad or (True, True, True)
        self.retain_inputs(((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
        y = x @ W
        if b is not None:
            self.b_shape = b.shape
            y += b  # y is a fresh array: add the bias in place, no temporary
        return y

    def backward(self, gy):
        needs = self.needs_input_grad
        x, W = self.inputs[0], self.inputs[1]
        gx = matmul(gy, W.T) if needs[0] else None
        gW = matmul(x.T, gy) if needs[1] else None
        if len(needs) == 2:
            return gx, gW
        if not needs[2]:
            return gx, gW, None
        if (len(self.b_shape) == 1 and _fusable(gy, gy.data)
                and gy.data.dtype.name in ("float32", "float64") and gy.data.flags.c_contiguous):
            from dezero_like import cuda_kernels

            return gx, gW, Variable(cuda_kernels.sum_rows(gy.data))  # one launch (step 71)
        return gx, gW, sum_to(gy, self.b_shape)


def linear(x, W, b=None):
    """Affine map ``x @ W + b`` of a batch ``x`` (N, in) with ``W`` (in, out) and ``b`` (out,)."""
    if b is None:
        return Linear()(x, W)
    return Linear()(x, W, b)


def flatten(x):
    """Keep the first (batch) axis and flatten the rest: (N, ...) -> (N, -1)."""
    x = as_variable(x)
    return reshape(x, (x.shape[0], -1))


# --------------------------------------------------------------------------- #
# Activation functions
# --------------------------------------------------------------------------- #


def _fusable(gy, y):
    """True when a backward may use a fused GPU kernel: CuPy arrays (``y`` is one) of one
    dtype, and no graph of the backward is being recorded (create_graph needs
    differentiable steps)."""
    return not Config.enable_backprop and cuda.is_cupy_array(y) and gy.data.dtype == y.dtype


class Sigmoid(Function):
    """y = 1 / (1 + exp(-x)); dy/dx = y * (1 - y).

    Computed as written, ``1 / (1 + exp(-x))``, which is accurate on both
    sides: for very negative x, ``exp(-x)`` is huge and its reciprocal keeps
    full relative precision (it only overflows to inf, giving the right limit
    0, below about -88 in float32; that overflow is expected and not warned
    about). The shorter ``0.5 * tanh(0.5 * x) + 0.5`` cancels for negative x:
    in float32 it gives 2.98e-08 for sigmoid(-18), whose true value is
    1.52e-08, and 0 for sigmoid(-20), so log(sigmoid(-20)) would be -inf.
    Backward reads the output.
    """

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        xp = cuda.get_array_module(x)
        if xp is not np:  # on a GPU: one fused kernel instead of four launches (step 71)
            from dezero_like import cuda_kernels

            return cuda_kernels.sigmoid(x)
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
        if _fusable(gy, y.data):
            from dezero_like import cuda_kernels

            return Variable(cuda_kernels.sigmoid_grad(gy.data, y.data))
        return gy * y * (1 - y)


def sigmoid(x):
    """Logistic sigmoid 1 / (1 + exp(-x)), elementwise; see :class:`Sigmoid`."""
    return Sigmoid()(x)


class ReLU(Function):
    """y = max(x, 0); dy/dx = 1 where x > 0, else 0.

    Backward needs only *where* x was positive, so a boolean mask (one byte per
    element) is kept instead of the input. The derivative is piecewise constant,
    so the second derivative is zero: ``gy * mask`` is differentiable in ``gy``.
    """

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        if self.needs_input_grad:
            self.mask = x > 0
        return xp.maximum(x, 0)

    def backward(self, gy):
        return gy * self.mask


def relu(x):
    """Rectified linear unit max(x, 0), elementwise; see :class:`ReLU`."""
    return ReLU()(x)


class Clip(Function):
    """y = min(max(x, x_min), x_max); dy/dx = 1 inside [x_min, x_max], else 0."""

    def __init__(self, x_min, x_max):
        if x_min > x_max:
            raise ValueError(f"clip needs x_min <= x_max, got x_min={x_min}, x_max={x_max}")
        self.x_min = x_min
        self.x_max = x_max

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        if self.needs_input_grad:
            self.mask = (x >= self.x_min) & (x <= self.x_max)
        return xp.clip(x, self.x_min, self.x_max)

    def backward(self, gy):
        return gy * self.mask


def clip(x, x_min, x_max):
    """Clip x to [x_min, x_max]; the gradient is zero outside the interval."""
    return Clip(x_min, x_max)(x)


class Max(Function):
    """y = max of x over ``axis``; the gradient flows to the elements that were the maximum.

    When several elements tie for the maximum, each of them receives the full
    gradient (the same choice DeZero makes); ties are rare with real data.
    """

    _reduce = "max"

    def __init__(self, axis=None, keepdims=False):
        self.axis = axis
        self.keepdims = keepdims

    def forward(self, x):
        self.retain_inputs(())
        self.x_shape = x.shape
        y = getattr(x, self._reduce)(axis=self.axis, keepdims=True)
        if self.needs_input_grad:
            self.mask = x == y  # where the extreme value sits
        if not self.keepdims:
            y = y.reshape(_reduced_shape(x.shape, self.axis))
        return y

    def backward(self, gy):
        gy = utils.reshape_sum_backward(gy, self.x_shape, self.axis, self.keepdims)
        return broadcast_to(gy, self.x_shape) * self.mask


class Min(Max):
    """y = min of x over ``axis``; the gradient flows to the elements that were the minimum."""

    _reduce = "min"


def _reduced_shape(shape, axis):
    if axis is None:
        return ()
    axes = axis if isinstance(axis, tuple) else (axis,)
    axes = {a % len(shape) for a in axes}
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def max(x, axis=None, keepdims=False):  # noqa: A001 - the book's name
    """Maximum over ``axis`` (all axes when None), like ``np.max``; see :class:`Max`."""
    return Max(axis, keepdims)(x)


def min(x, axis=None, keepdims=False):  # noqa: A001 - the book's name
    """Minimum over ``axis`` (all axes when None), like ``np.min``; see :class:`Min`."""
    return Min(axis, keepdims)(x)


# --------------------------------------------------------------------------- #
# Softmax and losses
# --------------------------------------------------------------------------- #


def _logsumexp(x, axis):
    """log(sum(exp(x))) over ``axis`` (kept), without overflow: shift by the max first."""
    xp = cuda.get_array_module(x)
    m = x.max(axis=axis, keepdims=True)
    s = xp.exp(x - m)
    s = s.sum(axis=axis, keepdims=True)
    xp.log(s, out=s)
    s += m
    return s


class Softmax(Function):
    """y_i = exp(x_i) / sum_j exp(x_j) over ``axis``; dL/dx = y * (gy - sum(y * gy)).

    The max is subtracted before ``exp`` so large logits do not overflow.
    Backward reads only the output.
    """

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        xp = cuda.get_array_module(x)
        y = x - x.max(axis=self.axis, keepdims=True)
        xp.exp(y, out=y)
        y /= y.sum(axis=self.axis, keepdims=True)
        return y

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        gx = y * gy
        return gx - y * sum(gx, axis=self.axis, keepdims=True)


def softmax(x, axis=1):
    """Probabilities exp(x) / sum(exp(x)) along ``axis``, computed without overflow."""
    return Softmax(axis)(x)


class LogSoftmax(Function):
    """y = x - logsumexp(x) over ``axis``; dL/dx = gy - exp(y) * sum(gy)."""

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return x - _logsumexp(x, self.axis)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy - exp(y) * sum(gy, axis=self.axis, keepdims=True)


def log_softmax(x, axis=1):
    """log(softmax(x)) along ``axis`` via log-sum-exp: finite for any finite logits."""
    return LogSoftmax(axis)(x)


class SoftmaxCrossEntropy(Function):
    """L = -mean_n log softmax(x_n)[t_n] for logits x (N, C) and integer labels t (N,).

    dL/dx = (softmax(x) - onehot(t)) / N. Forward uses log-sum-exp, so logits
    of any size give a finite loss. The labels get no gradient.
    """

    def forward(self, x, t):
        if x.ndim != 2:
            raise ValueError(
                f"softmax_cross_entropy expects logits of shape (N, C), got {x.shape}"
            )
        if t.dtype.kind not in "iu" or t.shape != (x.shape[0],):
            raise ValueError(
                f"softmax_cross_entropy expects integer labels of shape ({x.shape[0]},), got "
                f"{t.dtype} {t.shape}; pass class indices, not one-hot vectors"
            )
        xp = cuda.get_array_module(x)
        n = x.shape[0]
        if xp is np and n:  # on a GPU this check would wait for the device: skipped there
            low, high = int(t.min()), int(t.max())
            if low < 0 or high >= x.shape[1]:
                bad = low if low < 0 else high
                raise ValueError(
                    f"softmax_cross_entropy: label {bad} is out of range for {x.shape[1]} "
                    f"classes; labels must be integers in 0..{x.shape[1] - 1} (a label of -1 "
                    "would silently pick the last class)"
                )
        if xp is not np and x.dtype.name in ("float32", "float64"):
            # on a GPU: one kernel gives the loss and the probabilities (step 71)
            from dezero_like import cuda_kernels

            loss, self.probabilities = cuda_kernels.softmax_cross_entropy(x, t)
            return loss
        log_z = _logsumexp(x, axis=1)
        neg_log_p = log_z[:, 0] - x[xp.arange(n), t]
        return neg_log_p.sum() / n

    def backward(self, gy):
        x, t = self.inputs
        p = getattr(self, "probabilities", None)
        if p is not None and _fusable(gy, p):
            from dezero_like import cuda_kernels

            return Variable(cuda_kernels.softmax_cross_entropy_grad(p, t.data, gy.data)), None
        xp = cuda.get_array_module(x.data)
        n, c = x.shape
        onehot = xp.eye(c, dtype=x.dtype)[t.data]
        gx = (softmax(x, axis=1) - onehot) * (gy / n)
        return gx, None


def softmax_cross_entropy(x, t):
    """Mean cross entropy of logits ``x`` (N, C) against integer labels ``t`` (N,)."""
    return SoftmaxCrossEntropy()(x, t)


class MeanSquaredError(Function):
    """L = sum((x0 - x1)**2) / N with N = len(x0); dL/dx0 = 2 (x0 - x1) / N = -dL/dx1."""

    def forward(self, x0, x1):
        if x0.shape != x1.shape:
            raise ValueError(
                f"mean_squared_error needs two arrays of the same shape, got {x0.shape} and "
                f"{x1.shape} (NumPy would broadcast them: (N, 1) against (N,) makes an N x N "
                "difference, a wrong loss with no error). Reshape one of them first, e.g. "
                "t.reshape(y.shape)"
            )
        diff = x0 - x1
        return (diff * diff).sum() / len(diff)

    def backward(self, gy):
        x0, x1 = self.inputs
        diff = x0 - x1
        gx0 = gy * diff * (2.0 / len(diff))
        n0, n1 = self.needs_input_grad
        return (gx0 if n0 else None), (-gx0 if n1 else None)


def mean_squared_error(x0, x1):
    """sum((x0 - x1)**2) / len(x0); see :class:`MeanSquaredError`."""
    return MeanSquaredError()(x0, x1)


# --------------------------------------------------------------------------- #
# Regularisation and metrics
# --------------------------------------------------------------------------- #


def dropout(x, dropout_ratio=0.5):
    """Zero each element with probability ``dropout_ratio`` and scale the rest by 1/(1-ratio).

    Only in training (``Config.train``); under ``dezero_like.test_mode()`` it is
    the identity, and thanks to the scaling the expected value is the same in
    both modes ("inverted dropout"). Built from ``*``, so backward multiplies by
    the same mask.
    """
    x = as_variable(x)
    if not 0.0 <= dropout_ratio < 1.0:
        raise ValueError(f"dropout_ratio must be in [0, 1), got {dropout_ratio}")
    if not Config.train:
        return x
    xp = cuda.get_array_module(x)
    keep = xp.random.random(x.shape) > dropout_ratio
    scale = keep.astype(x.dtype)
    scale *= 1.0 / (1.0 - dropout_ratio)
    return x * scale


def accuracy(y, t):
    """Fraction of rows of ``y`` (scores, (N, C)) whose argmax equals the label in ``t``.

    Returns a Variable that is not part of any graph (accuracy has no gradient).
    """
    y_data = y.data if isinstance(y, Variable) else y
    t_data = t.data if isinstance(t, Variable) else t
    xp = cuda.get_array_module(y_data)
    pred = y_data.argmax(axis=1).reshape(t_data.shape)
    acc = (pred == t_data).mean()
    dtype = y_data.dtype if y_data.dtype.kind == "f" else np.float64
    return Variable(xp.asarray(acc, dtype=dtype), requires_grad=False)


# --------------------------------------------------------------------------- #
# Indexing: get_item and its backward, GetItemGrad
# --------------------------------------------------------------------------- #


def _index_data(slices):
    """Replace Variables inside an index by their arrays."""
    if isinstance(slices, Variable):
        return slices.data
    if isinstance(slices, tuple):
        return tuple(s.data if isinstance(s, Variable) else s for s in slices)
    return slices


def _is_basic_index(slices):
    items = slices if isinstance(slices, tuple) else (slices,)
    return all(
        s is None or s is Ellipsis or isinstance(s, (slice, int, np.integer)) for s in items
    )


def _scatter_add(xp, target, slices, values):
    """target[slices] += values, where repeated indices add up (unlike ``+=``)."""
    if xp is np:
        np.add.at(target, slices, values)
        return
    add_at = getattr(xp.add, "at", None)  # recent CuPy ufuncs have .at
    if add_at is not None:
        add_at(target, slices, values)
        return
    import cupyx  # older CuPy: the same operation lives in cupyx

    cupyx.scatter_add(target, slices, values)


class GetItem(Function):
    """y = x[slices]; the gradient is scattered back into zeros of x's shape (GetItemGrad)."""

    def __init__(self, slices):
        self.slices = slices

    def forward(self, x):
        self.retain_inputs(())
        self.in_shape = x.shape
        return x[self.slices]

    def backward(self, gy):
        return GetItemGrad(self.slices, self.in_shape)(gy)


class GetItemGrad(Function):
    """gx = zeros(in_shape); gx[slices] += gy, where repeated indices accumulate.

    A plain ``gx[slices] += gy`` would keep only one contribution per repeated
    index; ``np.add.at`` adds them all. This function is linear in ``gy``, and
    its own backward is ``get_item`` again: indexing and scattering are each
    other's transpose, which is why second derivatives through slicing work.
    """

    def __init__(self, slices, in_shape):
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        self.retain_inputs(())
        xp = cuda.get_array_module(gy)
        gx = xp.zeros(self.in_shape, dtype=gy.dtype)
        if _is_basic_index(self.slices):
            gx[self.slices] = gy  # no index can repeat: plain assignment is enough
        else:
            _scatter_add(xp, gx, self.slices, gy)
        return gx

    def backward(self, ggx):
        return get_item(ggx, self.slices)


def get_item(x, slices):
    """x[slices] as a differentiable function (``Variable.__getitem__`` calls it)."""
    return GetItem(_index_data(slices))(x)


__all__ = [
    "Variable", "add", "sub", "rsub", "mul", "div", "rdiv", "neg", "pow", "astype",
    "square", "exp", "log", "sin", "cos", "tanh", "reshape", "transpose",
    "sum", "sum_to", "broadcast_to", "matmul", "linear", "flatten", "sigmoid", "relu", "clip",
    "max", "min", "softmax", "log_softmax", "softmax_cross_entropy", "mean_squared_error",
    "dropout", "accuracy", "get_item", "GetItem", "GetItemGrad",
]


# Convolution and pooling live in functions_conv; as in the book, F.conv2d works too.
from dezero_like.functions_conv import (  # noqa: E402, F401
    average_pooling,
    batch_norm,
    col2im,
    conv2d,
    deconv2d,
    embed_id,
    im2col,
    pooling,
)

__all__ += [
    "average_pooling", "batch_norm", "col2im", "conv2d", "deconv2d", "embed_id", "im2col",
    "pooling",
]
