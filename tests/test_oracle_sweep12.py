"""A twelfth sweep against PyTorch: float16 with a Python number written first
(``F.mul(0.1, x)``, the book's style), float16 arrays in the other byte order (``'>f2'``),
and float16 ``leaky_relu``.

Sweep 11 sent float16 ``x * c``, ``c * x`` and ``x / c`` to ``Float16WithNumber`` (float32,
one rounding, as PyTorch). The function forms with the number first, ``F.mul(0.1, x)`` and
``F.div(0.1, x)``, still went to ``Mul`` and ``Div``, which round 0.1 to float16 first (a
third of the elements a unit off), and step 70's operators compared the dtype itself with
float16's, so a byte-swapped ``'>f2'`` array took the two roundings too, in every form. More:
every function that computes float16 in float32 asked ``dtype == np.float16``, False for
``'>f2'``, so such an array was summed, averaged, normalised and soft-maxed in float16 (the mean
of 3000s was inf); a Variable now holds it in this machine's byte order. ``leaky_relu`` rounded
its slope to float16 before the product (PyTorch multiplies in float32 and rounds once).

Compared and found equal (throwaway scripts, not repeated here): conv2d, deconv2d (with
outsize), max and average pooling over kernels (3, 2), (1, 3), (4, 4), strides (1, 1), (2, 3),
(3, 2), pads (0, 0), (1, 2), (2, 1) and sizes that do not divide, in float64 and float32;
float16 unary functions, matmul, the losses, batch norm's float16 running statistics against a
``.half()`` BatchNorm2d; every binary operator's broadcast gradients over (), (1,), (3, 1),
(1, 4), (3, 4), (2, 3, 4), (4,); the optimizers with uncommon hyper-parameters over 8 steps;
the overflow edges (sigmoid at +-800, exp, log at 0, pow of 0 and negative bases).
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

RNG = np.random.default_rng(12)
# whole numbers, where float16 is exact, and random ones of both signs across its range
X16 = np.concatenate([np.arange(1, 501), RNG.uniform(-100, 100, 1500)]).astype(np.float16)
X16[X16 == 0] = 1
GY16 = RNG.uniform(0.5, 1.5, X16.shape).astype(np.float16)


def _run(f, data, create_graph=False):
    """f(x) of a float16 Variable holding ``data`` and its gradient, seeded with GY16."""
    x = dz.Variable(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf
        y = f(x)
        y.backward(gradient=dz.Variable(GY16), create_graph=create_graph)
    return y, x.grad


def _torch(f):
    t = torch.tensor(X16, requires_grad=True)
    yt = f(t)
    yt.backward(torch.tensor(GY16))
    return yt.detach().numpy(), t.grad.numpy()


# (ours, PyTorch's): the number first in the function form, and what PyTorch computes
NUMBER_FIRST = {
    "F.mul(0.1, x)": (lambda x: F.mul(0.1, x), lambda t: 0.1 * t),
    "F.mul(3, x)": (lambda x: F.mul(3, x), lambda t: 3 * t),
    "F.mul(70000.0, x)": (lambda x: F.mul(70000.0, x), lambda t: 70000.0 * t),
    "F.mul(1e-8, x)": (lambda x: F.mul(1e-8, x), lambda t: 1e-8 * t),
    "F.rdiv(7, x) (x / 7)": (lambda x: F.rdiv(7, x), lambda t: t / 7),
    "F.rdiv(0.3, x) (x / 0.3)": (lambda x: F.rdiv(0.3, x), lambda t: t / 0.3),
    "F.rdiv(70000, x) (x / 70000)": (lambda x: F.rdiv(70000, x), lambda t: t / 70000),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("op", sorted(NUMBER_FIRST))
def test_float16_function_form_with_the_number_first_is_torchs_to_the_bit(op, create_graph):
    """F.mul(c, x) and F.rdiv(c, x) (= x / c) of float16 x: the values and the gradients equal
    PyTorch's in every element, as x * c and x / c already did. Before, F.mul(0.1, x) rounded
    0.1 to float16 first: 1 unit off in about a third of the elements."""
    ours, theirs = NUMBER_FIRST[op]
    y, gx = _run(ours, X16.copy(), create_graph)
    yt, gt = _torch(theirs)
    assert y.dtype == gx.dtype == np.float16
    np.testing.assert_array_equal(y.data, yt, err_msg=f"{op}: values")
    np.testing.assert_array_equal(gx.data, gt, err_msg=f"{op}: gradients")


@pytest.mark.parametrize("c", [0.1, 7, 70000.0], ids=str)
def test_float16_number_over_x_function_form_is_the_operators(c):
    """F.div(c, x) is c / x: rounded once from float32 like the operator (step 67), values and
    gradients equal to ``c / x``'s, and every value the float32 quotient rounded once."""
    y, gx = _run(lambda x: F.div(c, x), X16.copy())
    y_op, gx_op = _run(lambda x: c / x, X16.copy())
    np.testing.assert_array_equal(y.data, y_op.data)
    np.testing.assert_array_equal(gx.data, gx_op.data)
    with np.errstate(over="ignore"):  # 70000 / 1 is inf in float16, in both
        once = (np.float32(c) / X16.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(y.data, once)


SWAPPED = {
    "x * 0.1": lambda x: x * 0.1, "0.1 * x": lambda x: 0.1 * x,
    "F.mul(0.1, x)": lambda x: F.mul(0.1, x), "x / 70000": lambda x: x / 70000,
    "c / x": lambda x: 0.1 / x, "x ** 0.1": lambda x: x ** 0.1, "x + 0.1": lambda x: x + 0.1,
    "F.leaky_relu(x)": lambda x: F.leaky_relu(x),
}


@pytest.mark.parametrize("grad", [True, False], ids=["graph", "no_grad"])
@pytest.mark.parametrize("op", sorted(SWAPPED))
def test_float16_in_the_other_byte_order_rounds_as_native_float16(op, grad):
    """A big-endian '>f2' array is float16 too: every operator with a Python number gives the
    values (and gradients) of the native array, with a graph and under no_grad. Before, step
    70 compared the dtype itself with float16's, and x * 0.1 of '>f2' rounded twice."""
    f = SWAPPED[op]
    swapped = X16.astype(">f2")
    if grad:
        y, gx = _run(f, swapped)
        y_native, gx_native = _run(f, X16.copy())
        np.testing.assert_array_equal(gx.data.astype(np.float16), gx_native.data, err_msg=op)
    else:
        with dz.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            y, y_native = f(dz.Variable(swapped)), f(dz.Variable(X16.copy()))
    assert y.dtype.type is np.float16
    np.testing.assert_array_equal(y.data.astype(np.float16), y_native.data, err_msg=op)


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("slope", [0.2, 0.01, 0.3], ids=str)
def test_float16_leaky_relu_is_torchs_to_the_bit(slope, create_graph):
    """leaky_relu of float16: the slope as a float32 and each product rounded once, values and
    gradients equal to PyTorch's. Before, the slope was rounded to float16 first (0.2 is
    0.199951171875 there): a unit off in about a third of the negative elements, 0.8 units
    from the exact value where PyTorch is within 0.4."""
    y, gx = _run(lambda x: F.leaky_relu(x, slope), X16.copy(), create_graph)
    yt, gt = _torch(lambda t: torch.nn.functional.leaky_relu(t, slope))
    assert y.dtype == gx.dtype == np.float16
    np.testing.assert_array_equal(y.data, yt, err_msg="values")
    np.testing.assert_array_equal(gx.data, gt, err_msg="gradients")


def test_leaky_relu_of_other_dtypes_is_unchanged():
    """float32 and float64 keep their own dtype and PyTorch's values; integers give float64."""
    for dtype in (np.float32, np.float64):
        a = X16.astype(dtype)
        y = F.leaky_relu(dz.Variable(a))
        yt = torch.nn.functional.leaky_relu(torch.tensor(a), 0.2).numpy()
        assert y.dtype == dtype
        np.testing.assert_array_equal(y.data, yt)
    assert F.leaky_relu(dz.Variable(np.array([-2, 3]))).dtype == np.float64


def _batch_norm(v):
    from dezero_like.functions_conv import batch_norm
    c = v.shape[1]
    return batch_norm(v * 300, np.ones(c, np.float16), np.zeros(c, np.float16),
                      np.zeros(c, np.float16), np.ones(c, np.float16))


def _average_pooling(v):
    from dezero_like.functions_conv import average_pooling
    return average_pooling(F.reshape(v, (4, 16, 4, 10)) * 3000, 2)


B16 = RNG.uniform(-15, 15, (64, 40)).astype(np.float16)
LABELS = RNG.integers(0, 40, 64)
W16 = RNG.uniform(-1, 1, (40, 8)).astype(np.float16)
# the functions that compute float16 in float32 (each was rounded in float16 for a '>f2' array)
FLOAT16_IN_FLOAT32 = {
    "sigmoid": F.sigmoid, "softmax": F.softmax, "log_softmax": F.log_softmax,
    "mean of 3000s": lambda v: F.mean(v * 3000), "sum": lambda v: F.sum(v * 10),
    "softmax_cross_entropy": lambda v: F.softmax_cross_entropy(v, LABELS),
    "sigmoid_cross_entropy": lambda v: F.sigmoid_cross_entropy(v, (B16 > 0).astype(int)),
    "linear": lambda v: F.linear(v, W16, np.ones(8, np.float16)),
    "batch_norm": _batch_norm, "average_pooling of 3000s": _average_pooling,
}


@pytest.mark.parametrize("name", sorted(FLOAT16_IN_FLOAT32))
def test_float16_in_the_other_byte_order_takes_the_float32_paths(name):
    """A '>f2' array is brought to this machine's byte order by Variable, so every function that
    computes float16 in float32 does so for it too: the values and gradients of the native
    array. Before, the mean of 3000s and average pooling were inf, softmax, the losses and the
    rest rounded in float16."""
    f = FLOAT16_IN_FLOAT32[name]
    results = []
    for data in (B16.astype(">f2"), B16.copy()):
        x = dz.Variable(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            y = f(x)
            F.sum(y).backward()
        results.append((y, x.grad))
    (y, gx), (y_native, gx_native) = results
    assert y.dtype == gx.dtype == np.float16
    assert np.all(np.isfinite(y.data)), f"{name}: {y.data}"
    np.testing.assert_array_equal(y.data, y_native.data, err_msg=f"{name}: values")
    np.testing.assert_array_equal(gx.data, gx_native.data, err_msg=f"{name}: gradients")


def test_a_byte_swapped_array_becomes_a_native_copy_and_a_native_one_is_kept():
    """Variable keeps a native array itself (x.data is a, as in the book) and copies one in the
    other byte order into this machine's: same values, dtype float16 (== np.float16). PyTorch
    refuses a '>f2' array (torch.from_numpy) and needs the same conversion."""
    a = B16.copy()
    assert dz.Variable(a).data is a
    swapped = B16.astype(">f2")
    x = dz.Variable(swapped)
    assert x.dtype == np.float16 and x.dtype.isnative
    np.testing.assert_array_equal(x.data, B16)
    assert dz.Parameter(np.ones(2, ">f4")).dtype == np.float32
    t = torch.tensor(swapped.astype(np.float16))
    np.testing.assert_array_equal(F.mean(dz.Variable(swapped) * 3000).data,
                                  (t * 3000).mean().numpy())


def test_data_set_to_a_byte_swapped_array_is_held_in_this_machines_order():
    """x.data = a for a '>f2' array holds a native copy too, so float16 x * 3000 and its mean
    (in float32) stay finite, as for a native array."""
    x = dz.Variable(np.zeros(3, np.float16))
    x.data = B16.astype(">f2")
    assert x.dtype == np.float16 and x.dtype.isnative
    y = F.mean(x * 3000)
    assert np.isfinite(y.data), y
    np.testing.assert_array_equal(y.data, F.mean(dz.Variable(B16.copy()) * 3000).data)


GPU_CASES = {  # products only: one IEEE multiplication is exactly rounded on any device
    "F.leaky_relu(x)": lambda x: F.leaky_relu(x), "F.mul(0.1, x)": lambda x: F.mul(0.1, x),
    "F.mul(70000.0, x)": lambda x: F.mul(70000.0, x),
}


@pytest.mark.gpu
@pytest.mark.skipif(not dz.cuda.gpu_available(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_float16_number_first_and_leaky_relu_round_once_on_the_gpu_too(name):
    """On a GPU the same float32 product, rounded once to float16: equal to the CPU's bit for
    bit, the gradients too."""
    import cupy

    results = []
    for xp in (np, cupy):
        x = dz.Variable(xp.asarray(X16))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # 70000 * 100 is inf in float16
            y = GPU_CASES[name](x)
            y.backward(gradient=dz.Variable(xp.asarray(GY16)))
        results.append((dz.cuda.as_numpy(y.data), dz.cuda.as_numpy(x.grad.data)))
    (y_cpu, g_cpu), (y_gpu, g_gpu) = results
    assert y_gpu.dtype == g_gpu.dtype == np.float16
    np.testing.assert_array_equal(y_gpu, y_cpu, err_msg=f"{name}: values")
    np.testing.assert_array_equal(g_gpu, g_cpu, err_msg=f"{name}: gradients")
