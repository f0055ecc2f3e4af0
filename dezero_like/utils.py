"""Helpers: numerical gradients, comparisons, and small array utilities.

``numerical_grad`` and ``gradient_check`` are how every function of the package
is tested: central differences in float64 against the framework's backward.
"""

from __future__ import annotations

import numpy as np

from dezero_like import cuda
from dezero_like.core import Variable, as_variable

# --------------------------------------------------------------------------- #
# Comparing arrays (accept Variables, NumPy and CuPy arrays alike)
# --------------------------------------------------------------------------- #


def _host(x):
    return cuda.as_numpy(x.data if isinstance(x, Variable) else x)


def array_equal(a, b):
    """``np.array_equal`` for Variables, NumPy and CuPy arrays: same shape, same values."""
    return bool(np.array_equal(_host(a), _host(b)))


def array_allclose(a, b, rtol=1e-4, atol=1e-5):
    """``np.allclose`` for Variables, NumPy and CuPy arrays (broadcasting as NumPy does).

    As with ``np.allclose``, a scalar or a shape that broadcasts is compared
    element by element; shapes that cannot broadcast give False.
    """
    a, b = _host(a), _host(b)
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


# --------------------------------------------------------------------------- #
# Numerical differentiation
# --------------------------------------------------------------------------- #


def numerical_grad(f, x, *args, eps=1e-4, **kwargs):
    """Gradient of ``sum(f(x, *args))`` with respect to ``x`` by central differences.

    Each element of ``x`` is nudged by ``+eps`` and ``-eps`` in turn; the
    difference of the two sums divided by ``2*eps`` approximates the slope. It
    costs two evaluations of ``f`` per element, which is why backprop exists.
    """
    x_data = x.data if isinstance(x, Variable) else np.asarray(x)
    xp = cuda.get_array_module(x_data)
    if xp is not np:
        # finite differences are done on the CPU
        return xp.asarray(numerical_grad(f, cuda.as_numpy(x_data), *args, eps=eps, **kwargs))
    x_data = x_data.copy()  # never perturb the caller's array
    args = [a for a in args]
    grad = np.zeros_like(x_data, dtype=np.result_type(x_data.dtype, np.float32))

    def total(data):
        y = f(Variable(data), *args, **kwargs)
        if isinstance(y, (list, tuple)):
            return sum(float(cuda.as_numpy(v.data).sum()) for v in y)
        return float(cuda.as_numpy(as_variable(y).data).sum())

    it = np.nditer(x_data, flags=["multi_index"], op_flags=[["readwrite"]])
    while not it.finished:
        idx = it.multi_index
        original = x_data[idx].copy()
        x_data[idx] = original + eps
        y_plus = total(x_data.copy())
        x_data[idx] = original - eps
        y_minus = total(x_data.copy())
        x_data[idx] = original
        grad[idx] = (y_plus - y_minus) / (2 * eps)
        it.iternext()
    return grad


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    """Compare backprop's gradient of ``sum(f(x, *args))`` with the numerical one.

    Returns True when they agree. When they do not, raises ``AssertionError``
    with a message naming the function, the input shape and the worst element,
    so a failing test says what went wrong without a debugger.
    """
    x = as_variable(x)
    if x.dtype.kind in "biu":  # integers (np.arange(6), say) are exact in float64
        x = Variable(x.data.astype(np.float64))
    elif x.dtype != np.float64:
        raise TypeError(
            f"gradient_check needs float64 input for a meaningful comparison, got {x.dtype}; "
            "use x.astype(np.float64)"
        )
    else:
        x = Variable(x.data.copy())
    num_grad = numerical_grad(f, x, *args, **kwargs)
    y = f(x, *args, **kwargs)
    if isinstance(y, (list, tuple)):
        total = y[0].sum()
        for v in y[1:]:
            total = total + v.sum()
        y = total
    y.backward()
    name = getattr(f, "__qualname__", None) or type(f).__name__
    if x.grad is None:
        raise AssertionError(f"gradient_check({name}): backward left x.grad as None")
    bp_grad = _host(x.grad)
    if bp_grad.shape != num_grad.shape:
        raise AssertionError(
            f"gradient_check({name}): backprop gradient has shape {bp_grad.shape}, "
            f"input has shape {num_grad.shape}"
        )
    if not np.allclose(bp_grad, num_grad, rtol=rtol, atol=atol):
        err = np.abs(bp_grad - num_grad)
        worst = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
        raise AssertionError(
            f"gradient_check({name}) failed for input of shape {x.shape}: worst element "
            f"{worst}: backprop {bp_grad[worst]!r} vs numerical {num_grad[worst]!r} "
            f"(abs error {err[worst]:.3g}, rtol={rtol}, atol={atol})"
        )
    return True


# --------------------------------------------------------------------------- #
# Array helpers used by functions' backward passes
# --------------------------------------------------------------------------- #


def sum_to(x, shape):
    """Sum an array down to ``shape``: the reverse of broadcasting it."""
    shape = tuple(shape)
    ndim = len(shape)
    lead = x.ndim - ndim
    lead_axes = tuple(range(lead))
    axes = tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
    y = x.sum(lead_axes + axes, keepdims=True)
    if lead > 0:
        y = y.reshape(y.shape[lead:])
    return y


def reshape_sum_backward(gy, x_shape, axis, keepdims):
    """Reshape the gradient of ``sum(x, axis)`` so it broadcasts back to ``x_shape``."""
    ndim = len(x_shape)
    if axis is None:
        tupled_axis = None
    elif not isinstance(axis, tuple):
        tupled_axis = (axis,)
    else:
        tupled_axis = axis
    if not (ndim == 0 or tupled_axis is None or keepdims):
        actual_axis = sorted(a if a >= 0 else a + ndim for a in tupled_axis)
        shape = list(gy.shape)
        for a in actual_axis:
            shape.insert(a, 1)
        return gy.reshape(tuple(shape))
    if tupled_axis is None and not keepdims and ndim > 0:
        return gy.reshape((1,) * ndim)
    return gy
from dezero_like.graph import get_dot_graph, plot_dot_graph  # noqa: E402,F401
