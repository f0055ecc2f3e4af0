"""Double backprop through the package's functions: Hessian-vector products, checked numerically."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F

rng0 = np.random.default_rng(0)
W2 = rng0.normal(size=(3, 2))
B3 = rng0.normal(size=(1, 3))

CASES = {
    "sin": lambda x: F.sin(x),
    "cos": lambda x: F.cos(x),
    "tanh": lambda x: F.tanh(x),
    "exp": lambda x: F.exp(x),
    "log": lambda x: F.log(x * x + 1.0),
    "square": lambda x: F.square(x),
    "pow3": lambda x: x**3,
    "mul_self": lambda x: x * F.sin(x),
    "div": lambda x: x / (x * x + 2.0),
    "rdiv_sub": lambda x: 1.0 / (3.0 - F.tanh(x)),
    "neg_add": lambda x: -(x**2) + x * 0.5,
    "broadcast": lambda x: (x * B3) ** 2 if x.ndim == 2 else x**2 * 3.0,
    "sum_axis": lambda x: F.sum(x**2, axis=0) ** 2,
    "reshape_transpose": lambda x: F.transpose(F.reshape(x**2, (-1, 1)) * F.reshape(x, (-1, 1))),
    "matmul": lambda x: (x @ W2) ** 2 if x.ndim == 2 and x.shape[1] == 3 else x**4,
}
SHAPES = [(3,), (2, 3), (1, 3)]


def grad_of(f, x_data):
    x = dz.Variable(x_data.copy())
    F.sum(f(x)).backward()
    return x.grad.data


def hvp(f, x_data, v):
    x = dz.Variable(x_data.copy())
    F.sum(f(x)).backward(create_graph=True)
    g = x.grad
    x.cleargrad()
    F.sum(g * v).backward()
    return x.grad.data


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_vector_product_matches_finite_differences(name, shape):
    f = CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}{shape}".encode()))
    x = rng.uniform(-1.5, 1.5, size=shape)
    v = rng.normal(size=shape)
    eps = 1e-5
    fd = (grad_of(f, x + eps * v) - grad_of(f, x - eps * v)) / (2 * eps)
    got = hvp(f, x, v)
    assert got.shape == x.shape
    assert np.allclose(got, fd, rtol=1e-5, atol=1e-6), (name, shape, got, fd)


def test_default_backward_builds_no_graph():
    x = dz.Variable(np.array([0.5, 1.5]))
    F.sum(F.tanh(x) * x).backward()
    assert x.grad.creator is None


def test_create_graph_gives_grad_a_creator_and_keeps_dtype():
    x = dz.Variable(np.array([0.5, 1.5], dtype=np.float32))
    F.sum(F.tanh(x) * x).backward(create_graph=True)
    assert x.grad.creator is not None
    assert x.grad.dtype == np.float32
    g = x.grad
    x.cleargrad()
    F.sum(g).backward()
    assert x.grad.dtype == np.float32


@pytest.mark.parametrize("n", range(1, 7))
def test_nth_derivative_of_exp_and_sin(n):
    x = dz.Variable(np.array([0.3, -1.2]))
    g_exp, g_sin = F.exp(x), F.sin(x)
    for _ in range(n):
        x.cleargrad()
        g_exp.backward(create_graph=True)
        g_exp = x.grad
        x.cleargrad()
        g_sin.backward(create_graph=True)
        g_sin = x.grad
    assert np.allclose(g_exp.data, np.exp(x.data))
    assert np.allclose(g_sin.data, np.sin(x.data + n * np.pi / 2))


def test_mixed_second_derivative_of_two_inputs():
    x = dz.Variable(np.array(1.5))
    y = dz.Variable(np.array(-0.5))
    z = F.sin(x * y) + x**2 * y
    z.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    y.cleargrad()
    gx.backward()
    # d/dy (y cos(xy) + 2xy) = cos(xy) - xy sin(xy) + 2x
    xy = 1.5 * -0.5
    assert np.isclose(y.grad.data, np.cos(xy) - xy * np.sin(xy) + 3.0)
    # d/dx (y cos(xy) + 2xy) = -y^2 sin(xy) + 2y
    assert np.isclose(x.grad.data, -0.25 * np.sin(xy) - 1.0)
