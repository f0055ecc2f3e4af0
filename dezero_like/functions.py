"""Differentiable functions: ``import dezero_like.functions as F``.

Each function is a :class:`~dezero_like.core.Function` subclass (``forward`` on
raw arrays, ``backward`` on Variables, so its backward is itself differentiable)
plus a lowercase wrapper. The docstring gives the formula and its derivative.
Every function works on NumPy and CuPy arrays through the same code.
"""

from __future__ import annotations

import numpy as np

from dezero_like import cuda, utils
from dezero_like.core import Function, Variable, as_variable

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
    if x.shape == tuple(shape):
        return as_variable(x)
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


class MatMul(Function):
    """y = x @ W; dL/dx = dL/dy @ W.T, dL/dW = x.T @ dL/dy."""

    def forward(self, x, W):
        n0, n1 = self.needs_input_grad or (True, True)
        self.retain_inputs(((1,) if n0 else ()) + ((0,) if n1 else ()))
        return x @ W

    def backward(self, gy):
        x, W = self.inputs
        n0, n1 = self.needs_input_grad
        gx = matmul(gy, W.T) if n0 else None
        gW = matmul(x.T, gy) if n1 else None
        return gx, gW


def matmul(x, W):
    return MatMul()(x, W)


__all__ = [
    "Variable", "square", "exp", "log", "sin", "cos", "tanh", "reshape", "transpose",
    "sum", "sum_to", "broadcast_to", "matmul",
]
