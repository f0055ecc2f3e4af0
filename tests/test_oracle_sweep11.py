"""An eleventh sweep against PyTorch: float16 rounding of the operators with Python numbers,
and of ``matmul``'s gradients summed over a batch.

Sweep 10 pinned that float16 ``x * 0.1`` rounded 0.1 to float16 first and then the product (a
third of the elements a unit off, ``x / 70000`` all 0, the gradient ``gy * 0.1`` likewise).
Throwaway scripts then compared every operator with a Python number (``+ - * / **`` on either
side, numbers exact and inexact in float16, beyond its range, below it), in values and in
gradients, plain and with ``create_graph``: PyTorch computes ``x * c`` and ``x / c`` in float32
with ``c`` as a float32 and rounds once; ``x + c``, ``x - c``, ``c - x``, ``x ** c`` and
``c ** x`` round ``c`` to float16 first, as NumPy does (they agreed already); ``c / x`` is
``x.reciprocal() * c`` there, rounded twice. Step 67 now sends float16 ``*`` and ``/`` with a
Python number to ``Float16WithNumber`` (float32, one rounding; ``c / x`` too, closer than
PyTorch). Step 42's ``matmul`` multiplies and sums a float16 gradient over broadcast batch axes
in float32 and rounds once: a vector times a batch of matrices had its gradient rounded per
matrix and again after the sum.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the oracle tests need it (pip install torch)"
)

RNG = np.random.default_rng(11)
# whole numbers, where float16 is exact, and random ones across its range
A16 = np.concatenate([np.arange(1, 1001), RNG.uniform(0.01, 100, 1000)]).astype(np.float16)
GY16 = RNG.uniform(0.5, 1.5, A16.shape).astype(np.float16)


def _ulps(v, exact):
    """|v - exact| in units of float16's spacing at ``exact`` (float64 arrays)."""
    spacing = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
    return np.abs(v.astype(np.float64) - exact) / spacing


def _ours_and_torch(f, create_graph=False):
    """f of A16 and its gradient with seed GY16, here and in PyTorch (float16 both)."""
    x = dz.Variable(A16.copy())
    t = torch.tensor(A16, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf, in both
        y = f(x)
        y.backward(gradient=dz.Variable(GY16), create_graph=create_graph)
        yt = f(t)
        yt.backward(torch.tensor(GY16))
    return y, x.grad, yt.detach().numpy(), t.grad.numpy()


SCALINGS = {
    "x * 0.1": lambda x: x * 0.1, "0.1 * x": lambda x: 0.1 * x, "x * 0.3": lambda x: x * 0.3,
    "x * 3": lambda x: x * 3, "x * 70000": lambda x: x * 70000, "x * 1e-8": lambda x: x * 1e-8,
    "x / 7": lambda x: x / 7, "x / 0.3": lambda x: x / 0.3, "x / 70000": lambda x: x / 70000,
    "x / 1e5": lambda x: x / 1e5,
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("op", sorted(SCALINGS))
def test_float16_times_or_over_a_python_number_is_torchs_to_the_bit(op, create_graph):
    """x * c and x / c of float16 with a Python number: computed in float32 and rounded once,
    the values and the gradients (gy * c, gy / c) equal PyTorch's in every element. Before,
    x * 0.1 was a unit off in about a third of them, and x / 70000 was 0."""
    y, gx, yt, gt = _ours_and_torch(SCALINGS[op], create_graph)
    assert y.dtype == gx.dtype == np.float16
    np.testing.assert_array_equal(y.data, yt, err_msg=f"{op}: values")
    np.testing.assert_array_equal(gx.data, gt, err_msg=f"{op}: gradients")


def test_float16_scaling_has_torchs_second_derivative():
    """With create_graph the gradient (x * 0.3 + x * 0.3 here) is itself differentiable, each
    scaling rounded once: y = x * 0.3 * x, the gradient and d/dx of sum(w * dy/dx) equal
    torch.autograd.grad's, bit for bit."""
    a = A16[1000:1200] / 4  # random numbers, where 0.3 in float16 shows
    w = GY16[:200]
    x = dz.Variable(a.copy())
    y = x * 0.3 * x
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    F.sum(gx * dz.Variable(w)).backward()
    t = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad((t * 0.3 * t).sum(), t, create_graph=True)
    (ggt,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), t)
    np.testing.assert_array_equal(gx.data, gt.detach().numpy())
    np.testing.assert_array_equal(x.grad.data, ggt.numpy())


@pytest.mark.parametrize("c", [7, 0.1, 3.3])
def test_float16_number_over_x_is_rounded_once_closer_than_torch(c):
    """c / x: here computed in float32 and rounded once, so every value is within half a unit
    of the exact quotient; PyTorch computes x.reciprocal() * c and is more than a unit off
    for some (docs/pytorch.md). The gradient, -gy * c / x**2 in three roundings, is closer than
    PyTorch's four."""
    y, gx, yt, gt = _ours_and_torch(lambda x: c / x)
    a = A16.astype(np.float64)
    exact_y, exact_g = c / a, GY16 * (-c / a**2)
    assert y.dtype == gx.dtype == np.float16
    assert _ulps(y.data, exact_y).max() <= 0.5 < _ulps(yt, exact_y).max()
    ours, theirs = _ulps(gx.data, exact_g), _ulps(gt, exact_g)
    assert ours.max() < 2 and ours.max() < theirs.max() and ours.mean() <= theirs.mean()


OTHERS = {
    "x + 0.3": lambda x: x + 0.3, "0.3 + x": lambda x: 0.3 + x, "x - 0.1": lambda x: x - 0.1,
    "0.1 - x": lambda x: 0.1 - x, "x ** 1.3": lambda x: x**1.3, "x ** 0.5": lambda x: x**0.5,
    "1.01 ** x": lambda x: 1.01 ** (x / 100), "x + 1e5": lambda x: x + 1e5,
}


@pytest.mark.parametrize("op", sorted(OTHERS))
def test_float16_plus_minus_and_power_round_the_number_first_as_torch(op):
    """+, - and ** with a Python number stay NumPy's (the number rounded to float16 first):
    PyTorch does the same there, so computing them in float32 would make them disagree
    (x + 0.3 in 6 elements of 4000, x ** 1.3 in 3756)."""
    y, gx, yt, gt = _ours_and_torch(OTHERS[op])
    np.testing.assert_array_equal(y.data, yt, err_msg=f"{op}: values")
    np.testing.assert_allclose(gx.data.astype(np.float64), gt.astype(np.float64), rtol=2e-3,
                               err_msg=f"{op}: gradients")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_and_float64_with_a_number_stay_numpys(dtype):
    """Only float16 takes the float32 detour: float32 * 0.1 is NumPy's float32 product, not a
    float64 one rounded (which differs in some elements), and its gradient gy / 0.7 * 0.1
    likewise."""
    a = A16.astype(dtype) / 3
    x = dz.Variable(a.copy())
    y = x * 0.1 / 0.7
    y.backward(gradient=dz.Variable(GY16.astype(dtype)))
    assert y.dtype == x.grad.dtype == dtype
    np.testing.assert_array_equal(y.data, a * 0.1 / 0.7)
    np.testing.assert_array_equal(x.grad.data, GY16.astype(dtype) / 0.7 * 0.1)  # backward order


MATMULS = {  # x's shape, W's shape, the operand broadcast over the other's batch
    "vector @ batch": ((64,), (8, 64, 32), "x"),
    "batch @ matrix": ((8, 16, 64), (64, 32), "W"),
    "batch @ vector": ((8, 16, 64), (64,), "W"),
    "matrix @ batch": ((16, 64), (4, 64, 32), "x"),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("case", sorted(MATMULS))
def test_float16_matmul_gradient_summed_over_a_batch_is_rounded_once(case, create_graph):
    """The gradient of the operand that was broadcast is multiplied and summed in float32 and
    rounded once, as PyTorch: within half a unit (plus float32's own error where the sum
    cancels to near 0) of the exact gradient. Rounded per matrix and after the sum, a vector's
    gradient over 8 matrices was up to 16 units off, W's over 8 batches thousands."""
    xs, ws, broadcast = MATMULS[case]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, xs).astype(np.float16)
    W = rng.uniform(-1, 1, ws).astype(np.float16)
    gy = rng.uniform(-1, 1, np.matmul(x, W).shape).astype(np.float16)
    xv, Wv = dz.Variable(x), dz.Variable(W)
    F.matmul(xv, Wv).backward(gradient=dz.Variable(gy), create_graph=create_graph)
    xe = torch.tensor(x.astype(np.float64), requires_grad=True)
    We = torch.tensor(W.astype(np.float64), requires_grad=True)
    (xe @ We).backward(torch.tensor(gy.astype(np.float64)))
    xt, Wt = torch.tensor(x, requires_grad=True), torch.tensor(W, requires_grad=True)
    (xt @ Wt).backward(torch.tensor(gy))
    ours, theirs, exact = (xv.grad, xt.grad, xe.grad) if broadcast == "x" else \
        (Wv.grad, Wt.grad, We.grad)
    assert ours.dtype == np.float16 and ours.shape == theirs.shape
    err = _ulps(ours.data, exact.numpy()).max()
    assert err <= max(1.0, _ulps(theirs.numpy(), exact.numpy()).max()), (
        f"{case}: {broadcast}'s gradient is {err:.2f} units off the exact one")


@pytest.mark.parametrize("graph", [True, False], ids=["graph", "no_grad"])
@pytest.mark.parametrize("op", ["x * 0.5", "x / 2", "2 / x"])
def test_a_data_set_by_hand_still_gets_its_message_before_the_float16_test(op, graph):
    """The float16 test of * and / reads x.data's dtype; a list put there by hand must still
    get the message that names the mistake, not "'list' object has no attribute 'dtype'"."""
    x = dz.Variable(np.ones(2, np.float16))
    x.data = [1, 2]
    f = {"x * 0.5": lambda v: v * 0.5, "x / 2": lambda v: v / 2, "2 / x": lambda v: 2 / v}[op]
    with pytest.raises(TypeError, match=r"x\.data = \[1, 2\]"):
        if graph:
            f(x)
        else:
            with dz.no_grad():
                f(x)
