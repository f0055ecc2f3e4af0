"""Convolution, pooling, batch norm and embedding (dezero_like.functions_conv).

Forward values are compared with direct loop implementations written here
(slow, obviously right), gradients with central differences in float64, and,
when PyTorch is installed, both with torch.nn.functional.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like import cuda
from dezero_like.utils import gradient_check

# --------------------------------------------------------------------------- #
# Direct (loop) references
# --------------------------------------------------------------------------- #


def _pad(x, ph, pw, value=0.0):
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def conv_ref(x, W, b, stride, pad):
    sh, sw = Fc.pair(stride)
    ph, pw = Fc.pair(pad)
    N, C, H, Wd = x.shape
    OC, _, KH, KW = W.shape
    OH = (H + 2 * ph - KH) // sh + 1
    OW = (Wd + 2 * pw - KW) // sw + 1
    xp = _pad(x, ph, pw)
    y = np.zeros((N, OC, OH, OW))
    for n in range(N):
        for o in range(OC):
            for i in range(OH):
                for j in range(OW):
                    window = xp[n, :, i * sh:i * sh + KH, j * sw:j * sw + KW]
                    y[n, o, i, j] = (window * W[o]).sum() + (0 if b is None else b[o])
    return y


def deconv_ref(x, W, b, stride, pad, outsize=None):
    sh, sw = Fc.pair(stride)
    ph, pw = Fc.pair(pad)
    N, C, H, Wd = x.shape
    _, OC, KH, KW = W.shape
    OH, OW = outsize or (sh * (H - 1) + KH - 2 * ph, sw * (Wd - 1) + KW - 2 * pw)
    big = np.zeros((N, OC, OH + 2 * ph + sh, OW + 2 * pw + sw))
    for n in range(N):
        for c in range(C):
            for i in range(H):
                for j in range(Wd):
                    big[n, :, i * sh:i * sh + KH, j * sw:j * sw + KW] += x[n, c, i, j] * W[c]
    y = big[:, :, ph:ph + OH, pw:pw + OW]
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def pool_ref(x, k, stride, pad, reduce):
    kh, kw = Fc.pair(k)
    sh, sw = Fc.pair(stride)
    ph, pw = Fc.pair(pad)
    xp = _pad(x, ph, pw, -np.inf if reduce is np.max else 0.0)
    N, C, H, W = x.shape
    OH = (H + 2 * ph - kh) // sh + 1
    OW = (W + 2 * pw - kw) // sw + 1
    y = np.zeros((N, C, OH, OW))
    for i in range(OH):
        for j in range(OW):
            y[:, :, i, j] = reduce(xp[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw], axis=(2, 3))
    return y


# (N, C, H, W, OC, kernel, stride, pad): odd sizes, rectangular kernels, strides
# that do not divide the input, pads larger than one.
CONV_CASES = [
    (2, 3, 7, 7, 4, 3, 1, 1),
    (1, 1, 5, 6, 2, 3, 1, 0),
    (2, 2, 8, 9, 3, 3, 2, 1),
    (3, 2, 9, 7, 2, (2, 3), (2, 1), (1, 0)),
    (1, 3, 6, 6, 1, 1, 1, 0),
    (2, 1, 10, 10, 2, 5, 3, 2),
    (1, 2, 4, 5, 3, 4, 1, 2),
    # C*KH*KW = 72 rows: the weight gradient takes one long product, not per-image ones
    (2, 8, 5, 6, 3, 3, (1, 2), 1),
]


def _case(case, seed, dtype=np.float64):
    N, C, H, W, OC, k, s, p = case
    rng = np.random.default_rng(seed)
    kh, kw = Fc.pair(k)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    Wt = rng.standard_normal((OC, C, kh, kw)).astype(dtype)
    b = rng.standard_normal(OC).astype(dtype)
    return x, Wt, b, s, p


# --------------------------------------------------------------------------- #
# Sizes
# --------------------------------------------------------------------------- #


def test_output_size_formula():
    assert Fc.get_conv_outsize(28, 3, 1, 1) == 28
    assert Fc.get_conv_outsize(28, 2, 2, 0) == 14
    assert Fc.get_conv_outsize(7, 3, 2, 0) == 3
    assert Fc.get_conv_outsize(8, 3, 2, 0) == 3  # the last column is never reached
    assert Fc.get_deconv_outsize(3, 3, 2, 0) == 7


def test_pair():
    assert Fc.pair(3) == (3, 3)
    assert Fc.pair((2, 5)) == (2, 5)
    with pytest.raises(TypeError, match="pair of ints"):
        Fc.pair((1, 2, 3))
    with pytest.raises(TypeError, match="pair of ints"):
        Fc.pair(1.5)
    # what the quick path for ints and tuples of ints (step 57) must leave as it was
    for bad in (True, (True, 1), (1, False), (1,), (1, 2.0)):
        with pytest.raises(TypeError, match="pair of ints"):
            Fc.pair(bad)
    for arg, expected in ((np.int64(2), (2, 2)), ([1, 3], (1, 3)), ((np.int32(1), 4), (1, 4))):
        got = Fc.pair(arg)
        assert got == expected and type(got) is tuple and all(type(v) is int for v in got)


def test_bad_shapes_give_clear_errors():
    x = dz.Variable(np.zeros((2, 3, 5, 5), np.float32))
    with pytest.raises(ValueError, match="3 channels"):
        Fc.conv2d(x, np.zeros((4, 2, 3, 3), np.float32))
    with pytest.raises(ValueError, match="4-d input"):
        Fc.conv2d(dz.Variable(np.zeros((3, 5, 5), np.float32)), np.zeros((4, 3, 3, 3)))
    with pytest.raises(ValueError, match="does not fit"):
        Fc.conv2d(x, np.zeros((4, 3, 7, 7), np.float32))
    with pytest.raises(ValueError, match="smaller than the kernel"):
        Fc.pooling(x, 2, 2, pad=2)


# --------------------------------------------------------------------------- #
# im2col / col2im
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("case", CONV_CASES)
def test_im2col_rows_are_the_windows(case):
    x, Wt, _, s, p = _case(case, 1)
    kh, kw = Wt.shape[2:]
    sh, sw = Fc.pair(s)
    ph, pw = Fc.pair(p)
    col = Fc.im2col_array(x, (kh, kw), s, p)
    N, C = x.shape[:2]
    OH = Fc.get_conv_outsize(x.shape[2], kh, sh, ph)
    OW = Fc.get_conv_outsize(x.shape[3], kw, sw, pw)
    assert col.shape == (N * OH * OW, C * kh * kw)
    xp = _pad(x, ph, pw)
    row = 0
    for n in range(N):
        for i in range(OH):
            for j in range(OW):
                window = xp[n, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                np.testing.assert_array_equal(col[row], window.ravel())
                row += 1


@pytest.mark.parametrize("to_matrix", [True, False])
@pytest.mark.parametrize("case", CONV_CASES)
def test_col2im_is_the_transpose_of_im2col(case, to_matrix):
    # <im2col(x), c> == <x, col2im(c)> for all x, c: the definition of a transpose
    x, Wt, _, s, p = _case(case, 2)
    k = Wt.shape[2:]
    col = Fc.im2col_array(x, k, s, p, to_matrix)
    c = np.random.default_rng(3).standard_normal(col.shape)
    back = Fc.col2im_array(c, x.shape, k, s, p, to_matrix)
    assert back.shape == x.shape
    np.testing.assert_allclose((col * c).sum(), (x * back).sum(), rtol=1e-10)


@pytest.mark.parametrize("case", CONV_CASES[:4])
def test_gradient_check_im2col_and_col2im(case):
    x, Wt, _, s, p = _case(case, 4)
    k = Wt.shape[2:]
    assert gradient_check(lambda v: Fc.im2col(v, k, s, p) ** 2, x)
    col = Fc.im2col_array(x, k, s, p)
    assert gradient_check(lambda v: Fc.col2im(v, x.shape, k, s, p) ** 2, col)
    colt = Fc.im2col_array(x, k, s, p, to_matrix=False)
    assert gradient_check(lambda v: Fc.col2im(v, x.shape, k, s, p, to_matrix=False) ** 2, colt)


def test_im2col_double_backprop_through_col2im():
    x = dz.Variable(np.random.default_rng(5).standard_normal((1, 2, 5, 5)))
    y = (Fc.im2col(x, 3, 1, 1) ** 3).sum()
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.sum().backward()
    # d/dx sum_windows 3 c^2 = 6 * x * (number of windows containing x)
    count = Fc.col2im_array(np.ones((25, 18)), (1, 2, 5, 5), 3, 1, 1)
    np.testing.assert_allclose(x.grad.data, 6 * x.data * count)


# --------------------------------------------------------------------------- #
# conv2d / deconv2d
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_direct_convolution(case):
    x, Wt, b, s, p = _case(case, 10)
    y = Fc.conv2d(dz.Variable(x), dz.Variable(Wt), dz.Variable(b), s, p)
    np.testing.assert_allclose(y.data, conv_ref(x, Wt, b, s, p), rtol=1e-10, atol=1e-10)
    y0 = Fc.conv2d(x, Wt, None, s, p)  # raw arrays and no bias work too
    np.testing.assert_allclose(y0.data, conv_ref(x, Wt, None, s, p), rtol=1e-10, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(
    N=st.integers(1, 2), C=st.integers(1, 3), OC=st.integers(1, 3),
    H=st.integers(1, 8), W=st.integers(1, 8),
    kh=st.integers(1, 4), kw=st.integers(1, 4),
    sh=st.integers(1, 3), sw=st.integers(1, 3),
    ph=st.integers(0, 2), pw=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_conv2d_matches_direct_convolution_property(N, C, OC, H, W, kh, kw, sh, sw, ph, pw,
                                                    seed):
    assume(H + 2 * ph >= kh and W + 2 * pw >= kw)  # else the kernel does not fit: the error test
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (N, C, H, W))
    Wt = rng.uniform(-1, 1, (OC, C, kh, kw))
    b = rng.uniform(-1, 1, OC)
    y = Fc.conv2d(x, Wt, b, (sh, sw), (ph, pw))
    np.testing.assert_allclose(y.data, conv_ref(x, Wt, b, (sh, sw), (ph, pw)), atol=1e-12)
    m = Fc.pooling(x, (kh, kw), (sh, sw), (min(ph, kh - 1), min(pw, kw - 1)))
    ref = pool_ref(x, (kh, kw), (sh, sw), (min(ph, kh - 1), min(pw, kw - 1)), np.max)
    np.testing.assert_array_equal(m.data, ref)


@pytest.mark.parametrize("case", CONV_CASES)
def test_gradient_check_conv2d_x_W_b(case):
    x, Wt, b, s, p = _case(case, 11)
    gy = np.random.default_rng(12).standard_normal(conv_ref(x, Wt, b, s, p).shape)
    assert gradient_check(lambda v: Fc.conv2d(v, Wt, b, s, p) * gy, x)
    assert gradient_check(lambda v: Fc.conv2d(x, v, b, s, p) * gy, Wt)
    assert gradient_check(lambda v: Fc.conv2d(x, Wt, v, s, p) * gy, b)


def grad_W_ref(x, gy, kernel, stride, pad):
    """gW[o,c,i,j] = sum over n, p, q of gy[n,o,p,q] * x_padded[n,c,p*SH+i,q*SW+j]."""
    kh, kw = Fc.pair(kernel)
    sh, sw = Fc.pair(stride)
    ph, pw = Fc.pair(pad)
    xp = _pad(x, ph, pw)
    OH, OW = gy.shape[2:]
    gW = np.zeros((gy.shape[1], x.shape[1], kh, kw))
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i:i + sh * OH:sh, j:j + sw * OW:sw]
            gW[:, :, i, j] = np.einsum("nopq,ncpq->oc", gy, window)
    return gW


@pytest.mark.parametrize("keep", [True, False], ids=["kept-columns", "rebuilt-columns"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("C", [1, 8], ids=["per-image-products", "one-long-product"])
def test_weight_gradient_both_products_and_kept_columns(C, dtype, keep, monkeypatch):
    """Both ways of cutting the weight gradient's product, with or without forward's columns."""
    monkeypatch.setattr(Fc.Conv2d, "keep_col_bytes", 2**30 if keep else 0)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, C, 7, 6)).astype(dtype)
    Wv = dz.Variable(rng.standard_normal((4, C, 3, 3)).astype(dtype))
    y = Fc.conv2d(x, Wv, None, (2, 1), 1)
    assert (y.creator.col is not None) == keep
    gy = rng.standard_normal(y.shape).astype(dtype)
    y.backward(gradient=gy)
    assert y.creator.col is None  # released with the rest of what backward needed
    assert Wv.grad.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(Wv.grad.data, grad_W_ref(x, gy, 3, (2, 1), 1), rtol=tol, atol=tol)


def test_float16_weight_gradient_of_a_first_layer_keeps_its_accuracy():
    """No per-image products in float16: each would be rounded before the sum."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((100, 1, 28, 28)).astype(np.float16)
    gy = (rng.standard_normal((100, 4, 28, 28)) * 0.01).astype(np.float16)
    gW = Fc.Conv2DGradW((3, 3), 1, 1)(x, gy).data
    ref = grad_W_ref(x.astype(np.float64), gy.astype(np.float64), 3, 1, 1)
    assert gW.dtype == np.float16
    assert np.abs(gW - ref).max() < 1e-3 * np.abs(ref).max()


@pytest.mark.parametrize("C", [1, 8], ids=["per-image-products", "one-long-product"])
@pytest.mark.parametrize("b_dtype", [None, np.float32, np.float64])
def test_conv2d_forward_dtype_and_values_on_both_products(C, b_dtype):
    """Both cuts of the forward product give the same values and NumPy's result dtype."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, C, 6, 5)).astype(np.float32)
    Wt = rng.standard_normal((4, C, 3, 3)).astype(np.float32)
    b = None if b_dtype is None else rng.standard_normal(4).astype(b_dtype)
    y = Fc.conv2d(x, Wt, b, 1, 1).data
    assert y.dtype == (np.float32 if b_dtype is None else np.result_type(np.float32, b_dtype))
    assert y.flags.c_contiguous
    ref = conv_ref(x.astype(np.float64), Wt.astype(np.float64), b, 1, 1)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


def test_kept_columns_serve_every_backward_of_a_retained_graph():
    x, Wt, b, s, p = _case(CONV_CASES[-1], 21)
    Wv = dz.Variable(Wt)
    y = Fc.conv2d(x, Wv, b, s, p)
    assert y.creator.col is not None
    y.backward(retain_graph=True)
    first = Wv.grad.data.copy()
    assert y.creator.col is not None  # the graph is kept, and so are the columns
    Wv.cleargrad()
    y.backward()
    np.testing.assert_array_equal(Wv.grad.data, first)
    assert y.creator.col is None


def test_no_columns_are_kept_without_a_weight_gradient():
    x, Wt, b, s, p = _case(CONV_CASES[0], 22)
    xv = dz.Variable(x)
    y = Fc.conv2d(xv, dz.Variable(Wt, requires_grad=False), b, s, p)
    assert y.creator.col is None
    with dz.no_grad():
        assert Fc.conv2d(xv, Wt, b, s, p).creator is None


def test_conv2d_grads_are_only_computed_when_needed():
    x, Wt, b, s, p = _case(CONV_CASES[0], 13)
    xv = dz.Variable(x, requires_grad=False)
    Wv = dz.Variable(Wt)
    Fc.conv2d(xv, Wv, b, s, p).sum().backward()
    assert xv.grad is None and Wv.grad.shape == Wt.shape


DECONV_CASES = [
    (2, 3, 4, 4, 2, 3, 1, 0, None),
    (1, 2, 3, 5, 3, 3, 2, 1, None),
    (2, 1, 3, 3, 2, (2, 4), (3, 2), (0, 1), None),
    (1, 2, 3, 3, 2, 3, 2, 0, (8, 8)),  # a stride-2 conv maps both 7 and 8 back to 3
    # stride 1 takes the long-run path (_deconv_stride1): padding, non-square kernels
    (2, 2, 5, 4, 3, (3, 2), 1, (1, 0), None),
    (1, 3, 4, 6, 2, (2, 3), 1, (1, 2), None),
    (2, 1, 1, 1, 2, 1, 1, 0, None),
]


def _deconv_case(case, seed):
    N, C, H, W, OC, k, s, p, outsize = case
    rng = np.random.default_rng(seed)
    kh, kw = Fc.pair(k)
    x = rng.standard_normal((N, C, H, W))
    Wt = rng.standard_normal((C, OC, kh, kw))
    b = rng.standard_normal(OC)
    return x, Wt, b, s, p, outsize


@pytest.mark.parametrize("case", DECONV_CASES)
def test_deconv2d_matches_direct_scatter(case):
    x, Wt, b, s, p, outsize = _deconv_case(case, 20)
    y = Fc.deconv2d(x, Wt, b, s, p, outsize)
    np.testing.assert_allclose(y.data, deconv_ref(x, Wt, b, s, p, outsize), atol=1e-12)


@pytest.mark.parametrize("case", DECONV_CASES)
def test_gradient_check_deconv2d_x_W_b(case):
    x, Wt, b, s, p, outsize = _deconv_case(case, 21)
    gy = np.random.default_rng(22).standard_normal(deconv_ref(x, Wt, b, s, p, outsize).shape)
    assert gradient_check(lambda v: Fc.deconv2d(v, Wt, b, s, p, outsize) * gy, x)
    assert gradient_check(lambda v: Fc.deconv2d(x, v, b, s, p, outsize) * gy, Wt)
    assert gradient_check(lambda v: Fc.deconv2d(x, Wt, v, s, p, outsize) * gy, b)


def test_deconv2d_is_the_transpose_of_conv2d():
    x, Wt, _, s, p = _case(CONV_CASES[2], 23)
    y = Fc.conv2d(x, Wt, None, s, p).data
    g = np.random.default_rng(24).standard_normal(y.shape)
    back = Fc.deconv2d(g, Wt, None, s, p, outsize=x.shape[2:]).data
    np.testing.assert_allclose((y * g).sum(), (x * back).sum(), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stride_one_deconv2d_keeps_the_dtype_and_returns_a_contiguous_array(dtype):
    x, Wt, b, s, p, outsize = _deconv_case(DECONV_CASES[4], 25)
    y = Fc.deconv2d(x.astype(dtype), Wt.astype(dtype), b.astype(dtype), s, p)
    assert y.dtype == dtype and y.data.flags.c_contiguous
    np.testing.assert_allclose(y.data, deconv_ref(x, Wt, b, s, p),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("empty", ["N", "C", "OC"])
def test_stride_one_deconv2d_of_an_empty_batch_or_channel_axis_gives_zeros(empty):
    # the stride-1 path lays the whole batch out in one row per channel: nothing to lay out
    # must give an empty (N = 0) or all-zero result, as the direct scatter does
    N, C, OC = (0 if empty == axis else 2 for axis in ("N", "C", "OC"))
    x = np.ones((N, C, 4, 5))
    Wt = np.ones((C, OC, 3, 2))
    y = Fc.deconv2d(x, Wt, None, 1, (1, 0))
    np.testing.assert_array_equal(y.data, deconv_ref(x, Wt, None, 1, (1, 0)))
    assert y.shape == (N, OC, 4, 6)


def test_stride_one_conv2d_trains_on_an_empty_batch():
    x = dz.Variable(np.zeros((0, 1, 6, 6)))
    W1, W2 = dz.Variable(np.ones((4, 1, 3, 3))), dz.Variable(np.ones((4, 4, 3, 3)))
    Fc.conv2d(Fc.conv2d(x, W1, pad=1), W2, pad=1).sum().backward()  # deconv2d for x1's grad
    assert x.grad.shape == (0, 1, 6, 6) and not W1.grad.data.any()


def test_deconv2d_rejects_an_inconsistent_outsize():
    with pytest.raises(ValueError, match="inconsistent"):
        Fc.deconv2d(np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 3, 3)), stride=2, outsize=(10, 10))


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[2], CONV_CASES[3]])
def test_conv2d_second_derivatives(case):
    """Double backprop: gradients of gradients agree with central differences."""
    x0, W0, b0, s, p = _case(case, 30)

    def grad_W_of(x):  # d/dx of sum(dL/dW) runs Conv2DGradW's backward
        W = dz.Variable(W0)
        y = Fc.conv2d(x, W, b0, s, p)
        (y * y).sum().backward(create_graph=True)
        x.cleargrad()
        return W.grad

    def grad_x_of(W):  # d/dW of sum(dL/dx) runs Deconv2d's backward
        x = dz.Variable(x0)
        y = Fc.conv2d(x, W, b0, s, p)
        (y * y).sum().backward(create_graph=True)
        W.cleargrad()
        return x.grad

    assert gradient_check(grad_W_of, x0)
    assert gradient_check(grad_x_of, W0)


def test_float32_stays_float32():
    x, Wt, b, s, p = _case(CONV_CASES[2], 31, np.float32)
    xv, Wv, bv = dz.Variable(x), dz.Variable(Wt), dz.Variable(b)
    y = Fc.conv2d(xv, Wv, bv, s, p)
    z = Fc.pooling(y, 2, 2) + Fc.average_pooling(y, 2, 2)
    z = Fc.deconv2d(z, np.ones((Wt.shape[0], 2, 2, 2), np.float32), None, 2)
    assert y.dtype == z.dtype == np.float32
    z.sum().backward()
    assert xv.grad.dtype == Wv.grad.dtype == bv.grad.dtype == np.float32


# --------------------------------------------------------------------------- #
# Pooling
# --------------------------------------------------------------------------- #

POOL_CASES = [
    ((2, 3, 6, 6), 2, None, 0),
    ((1, 2, 7, 5), 3, 2, 1),
    ((2, 1, 5, 8), (2, 3), (1, 2), (1, 0)),
    ((1, 1, 4, 4), 4, 1, 0),
]


@pytest.mark.parametrize("case", POOL_CASES)
def test_pooling_matches_direct_loops(case):
    shape, k, s, p = case
    x = np.random.default_rng(40).standard_normal(shape)
    stride = k if s is None else s
    np.testing.assert_array_equal(Fc.pooling(x, k, s, p).data, pool_ref(x, k, stride, p, np.max))
    np.testing.assert_allclose(Fc.average_pooling(x, k, s, p).data,
                               pool_ref(x, k, stride, p, np.mean), atol=1e-12)


def test_max_pooling_of_negative_values_ignores_the_padding():
    x = -np.ones((1, 1, 2, 2))
    np.testing.assert_array_equal(Fc.pooling(x, 2, 1, 1).data, -np.ones((1, 1, 3, 3)))


@pytest.mark.parametrize("case", POOL_CASES)
def test_gradient_check_pooling(case):
    shape, k, s, p = case
    # distinct values, so no max is a tie and the numerical gradient is well defined
    x = np.random.default_rng(41).permutation(np.prod(shape)).reshape(shape) / 7.0
    assert gradient_check(lambda v: Fc.pooling(v, k, s, p) ** 2, x)
    assert gradient_check(lambda v: Fc.average_pooling(v, k, s, p) ** 2, x)


@pytest.mark.parametrize("pool", [Fc.pooling, Fc.average_pooling])
@pytest.mark.parametrize("case", [POOL_CASES[1], ((2, 2, 4, 6), 2, None, 0)],
                         ids=["overlapping-padded", "two-by-two-tiles"])
def test_pooling_second_derivatives(pool, case):
    shape, k, s, p = case
    x0 = np.random.default_rng(42).permutation(np.prod(shape)).reshape(shape) / 7.0
    w = np.random.default_rng(43).standard_normal(pool(x0, k, s, p).shape)

    def grad_of(x):
        y = pool(x, k, s, p)
        (y * y * y * w).sum().backward(create_graph=True)
        g = x.grad
        x.cleargrad()
        return g

    assert gradient_check(grad_of, x0)


def test_max_pooling_gradient_goes_to_the_winner_only():
    x = dz.Variable(np.array([[[[1.0, 5.0], [3.0, 2.0]]]], np.float32))
    y = Fc.pooling(x, 2)
    y.backward()
    np.testing.assert_array_equal(y.data, [[[[5.0]]]])
    np.testing.assert_array_equal(x.grad.data, [[[[0.0, 1.0], [0.0, 0.0]]]])


def _first_winner_grad(x, gy, k):
    """The gradient of max pooling with k x k tiles, by loops: the first maximum of each window
    in reading order takes the whole output gradient."""
    gx = np.zeros(x.shape, dtype=gy.dtype)
    N, C, H, W = x.shape
    for n in range(N):
        for c in range(C):
            for i in range(H // k):
                for j in range(W // k):
                    win = x[n, c, i * k:(i + 1) * k, j * k:(j + 1) * k]
                    a, b = divmod(int(np.argmax(win)), k)  # argmax: the first maximum
                    gx[n, c, i * k + a, j * k + b] = gy[n, c, i, j]
    return gx


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_two_by_two_pooling_routes_ties_to_the_first_maximum(dtype):
    # small integers: most windows hold ties, in every pattern (two in a row, in a column,
    # on a diagonal, all four equal), as after a ReLU
    rng = np.random.default_rng(44)
    x = rng.integers(0, 3, size=(3, 4, 6, 8)).astype(dtype)
    xv = dz.Variable(x)
    y = Fc.pooling(xv, 2, 2)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.data, pool_ref(x, 2, 2, 0, np.max))
    gy = rng.standard_normal(y.shape).astype(dtype)
    y.backward(gy)
    assert xv.grad.dtype == dtype
    np.testing.assert_array_equal(xv.grad.data, _first_winner_grad(x, gy, 2))


@pytest.mark.parametrize("dtype", [np.longdouble, np.complex128])
def test_two_by_two_pooling_of_sixteen_byte_elements_and_its_second_derivative(dtype):
    # no integer type has 16 bytes to view their bits: the 2x2 path is not for them (it
    # raised "data type 'i16' not understood" in backward), the general path is
    rng = np.random.default_rng(49)
    x = rng.integers(0, 3, size=(2, 3, 4, 6)).astype(dtype)  # ties, as in the test above
    xv = dz.Variable(x)
    y = Fc.pooling(xv, 2)
    np.testing.assert_array_equal(y.data, pool_ref(x.real.astype(np.float64), 2, 2, 0, np.max))
    gy = rng.standard_normal(y.shape).astype(dtype)
    gyv = dz.Variable(gy)
    y.backward(gyv, create_graph=True)
    assert xv.grad.dtype == dtype
    np.testing.assert_array_equal(xv.grad.data, _first_winner_grad(x.real, gy, 2))
    ggx = rng.standard_normal(x.shape).astype(dtype)
    F.sum(xv.grad * ggx).backward()  # its gradient with respect to gy picks ggx at the winners
    expected = (_first_winner_grad(x.real, np.ones(y.shape), 2) * ggx).reshape(
        2, 3, 2, 2, 3, 2).sum(axis=(3, 5))
    np.testing.assert_array_equal(gyv.grad.data, expected)


def test_two_by_two_pooling_passes_infinite_gradients_to_the_winner_only():
    x = dz.Variable(np.array([[[[1.0, 5.0], [3.0, 2.0]], [[7.0, 0.0], [0.0, 7.0]]]]))
    y = Fc.pooling(x, 2)
    y.backward(np.array([[[[np.inf]], [[-np.inf]]]]))
    # a product with a 0/1 mask would put inf * 0 = nan in the losers' places
    np.testing.assert_array_equal(x.grad.data, [[[[0.0, np.inf], [0.0, 0.0]],
                                                  [[-np.inf, 0.0], [0.0, 0.0]]]])


def test_two_by_two_pooling_keeps_the_input_dtype_for_another_gradient_dtype():
    x = dz.Variable(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))
    y = Fc.pooling(x, 2)
    y.backward(np.ones(y.shape, dtype=np.float64))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1],
                                                      [0, 0, 0, 0], [0, 1, 0, 1]])


def test_two_by_two_pooling_on_a_non_contiguous_input():
    x = np.random.default_rng(47).standard_normal((4, 6, 3, 2)).transpose(3, 2, 0, 1)
    xv = dz.Variable(x)
    y = Fc.pooling(xv, 2)
    np.testing.assert_array_equal(y.data, pool_ref(x, 2, 2, 0, np.max))
    gy = np.random.default_rng(48).standard_normal(y.shape).transpose(0, 1, 3, 2).copy()
    y.backward(gy.transpose(0, 1, 3, 2))
    np.testing.assert_array_equal(xv.grad.data,
                                  _first_winner_grad(x, gy.transpose(0, 1, 3, 2), 2))


# --------------------------------------------------------------------------- #
# Batch normalisation
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("shape", [(6, 3), (4, 2, 3, 3)])
def test_batch_norm_normalises_and_tracks_running_stats(shape):
    rng = np.random.default_rng(50)
    x = rng.standard_normal(shape).astype(np.float32) * 3 + 2
    C = shape[1]
    gamma = np.ones(C, np.float32)
    beta = np.zeros(C, np.float32)
    mean, var = np.zeros(C, np.float32), np.ones(C, np.float32)
    y = Fc.batch_norm(x, gamma, beta, mean, var, decay=0.0)
    axes = (0,) if len(shape) == 2 else (0, 2, 3)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data.mean(axis=axes), 0, atol=1e-5)
    np.testing.assert_allclose(y.data.var(axis=axes), 1, atol=1e-3)
    np.testing.assert_allclose(mean, x.mean(axis=axes), rtol=1e-5)
    np.testing.assert_allclose(var, x.var(axis=axes, ddof=1), rtol=1e-4)
    with dz.test_mode():
        yt = Fc.batch_norm(x, gamma, beta, mean, var)
    # with decay=0 the running stats are this batch's, so test mode nearly agrees
    n = x.size // C
    np.testing.assert_allclose(yt.data * np.sqrt(n / (n - 1)), y.data, atol=1e-3)


@pytest.mark.parametrize("shape", [(5, 3), (3, 2, 2, 3)])
def test_gradient_check_batch_norm(shape):
    rng = np.random.default_rng(51)
    x = rng.standard_normal(shape)
    C = shape[1]
    gamma, beta = rng.standard_normal(C), rng.standard_normal(C)
    w = rng.standard_normal(shape)

    def bn(x=x, gamma=gamma, beta=beta):
        return Fc.batch_norm(x, gamma, beta, np.zeros(C), np.ones(C)) * w

    assert gradient_check(lambda v: bn(x=v), x)
    assert gradient_check(lambda v: bn(gamma=v), gamma)
    assert gradient_check(lambda v: bn(beta=v), beta)
    with dz.test_mode():
        assert gradient_check(lambda v: bn(x=v), x)


def test_batch_norm_refuses_one_value_per_channel_in_training():
    """One value per channel has variance 0: the output would be beta whatever x is, and the
    running variance would shrink. PyTorch refuses this too; images of one example are fine."""
    mean, var = np.zeros(3), np.ones(3)
    with pytest.raises(ValueError, match="more than one value per channel.*test_mode"):
        Fc.batch_norm(np.arange(3.0).reshape(1, 3), np.ones(3), np.zeros(3), mean, var)
    assert np.array_equal(var, np.ones(3))  # nothing was updated
    y = Fc.batch_norm(np.arange(12.0).reshape(1, 3, 2, 2), np.ones(3), np.zeros(3), mean, var)
    assert y.shape == (1, 3, 2, 2)
    with dz.test_mode():
        y = Fc.batch_norm(np.arange(3.0).reshape(1, 3), np.ones(3), np.zeros(3), mean, var)
    assert y.shape == (1, 3)


# --------------------------------------------------------------------------- #
# PyTorch as an oracle (optional)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_and_pooling_agree_with_torch(case):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: oracle skipped")
    tF = torch.nn.functional
    x, Wt, b, s, p = _case(case, 60)
    xv, Wv, bv = dz.Variable(x), dz.Variable(Wt), dz.Variable(b)
    y = Fc.conv2d(xv, Wv, bv, s, p)
    gy = np.random.default_rng(61).standard_normal(y.shape)
    y.backward(gy)
    xt, Wtt, bt = (torch.tensor(a, requires_grad=True) for a in (x, Wt, b))
    yt = tF.conv2d(xt, Wtt, bt, stride=Fc.pair(s), padding=Fc.pair(p))
    yt.backward(torch.tensor(gy))
    np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(xv.grad.data, xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(Wv.grad.data, Wtt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(bv.grad.data, bt.grad.numpy(), atol=1e-10)

    k = Fc.pair(Wt.shape[2:])
    pp = (min(Fc.pair(p)[0], k[0] // 2), min(Fc.pair(p)[1], k[1] // 2))  # torch: pad <= k/2
    for ours, theirs in [(Fc.pooling, tF.max_pool2d), (Fc.average_pooling, tF.avg_pool2d)]:
        xv = dz.Variable(x)
        y = ours(xv, k, s, pp)
        g = np.random.default_rng(62).standard_normal(y.shape)
        y.backward(g)
        xt = torch.tensor(x, requires_grad=True)
        yt = theirs(xt, k, Fc.pair(s), pp)
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(xv.grad.data, xt.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("case", DECONV_CASES[:3])
def test_deconv2d_agrees_with_torch_conv_transpose(case):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: oracle skipped")
    x, Wt, b, s, p, _ = _deconv_case(case, 63)
    xv, Wv = dz.Variable(x), dz.Variable(Wt)
    y = Fc.deconv2d(xv, Wv, b, s, p)
    y.backward()
    xt, Wtt = torch.tensor(x, requires_grad=True), torch.tensor(Wt, requires_grad=True)
    yt = torch.nn.functional.conv_transpose2d(xt, Wtt, torch.tensor(b), stride=s, padding=p)
    yt.sum().backward()
    np.testing.assert_allclose(y.data, yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(xv.grad.data, xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(Wv.grad.data, Wtt.grad.numpy(), atol=1e-10)


def test_conv2d_double_backward_agrees_with_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: oracle skipped")
    x, Wt, b, s, p = _case(CONV_CASES[2], 64)
    xv, Wv = dz.Variable(x), dz.Variable(Wt)
    y = Fc.conv2d(xv, Wv, b, s, p)
    (y * y).sum().backward(create_graph=True)
    gW = Wv.grad
    xv.cleargrad()
    Wv.cleargrad()
    (gW * gW).sum().backward()
    xt, Wtt = torch.tensor(x, requires_grad=True), torch.tensor(Wt, requires_grad=True)
    yt = torch.nn.functional.conv2d(xt, Wtt, torch.tensor(b), stride=s, padding=p)
    (gWt,) = torch.autograd.grad((yt * yt).sum(), Wtt, create_graph=True)
    (gWt * gWt).sum().backward()
    np.testing.assert_allclose(xv.grad.data, xt.grad.numpy(), rtol=1e-8)
    np.testing.assert_allclose(Wv.grad.data, Wtt.grad.numpy(), rtol=1e-8)


# --------------------------------------------------------------------------- #
# GPU: the same code path on CuPy
# --------------------------------------------------------------------------- #


def _conv_pool_chain(to_device):
    """conv2d -> pooling * average_pooling + deconv2d of the same output; values and grads."""
    x, Wt, b, s, p = _case(CONV_CASES[2], 70, np.float32)
    xv, Wv, bv = (dz.Variable(to_device(a)) for a in (x, Wt, b))
    y = Fc.conv2d(xv, Wv, bv, s, p)
    z = (Fc.pooling(y, 2, 1, 1) * Fc.average_pooling(y, 2, 1, 1)).sum()
    # deconv2d's weight is (in_channels, out_channels, KH, KW): in_channels = y's channels
    Wd = to_device(np.ones((y.shape[1], 2, 3, 3), np.float32))
    z = z + Fc.deconv2d(y, Wd, None, 2).sum()
    z.backward()
    assert cuda.get_array_module(xv.grad) is cuda.get_array_module(xv.data)
    return [cuda.as_numpy(a.data) for a in (y, xv.grad, Wv.grad, bv.grad)]


def test_conv_pool_chain_runs_on_the_cpu():
    """The chain the GPU test compares, on NumPy: it must run (it once had a shape bug)."""
    y, gx, gW, gb = _conv_pool_chain(lambda a: a)
    assert gx.dtype == np.float32 and np.isfinite(gx).all() and gb.shape == (y.shape[1],)


@pytest.mark.gpu
def test_conv_and_pooling_on_gpu_match_cpu():
    if not cuda.gpu_available():
        pytest.skip("no CuPy / CUDA GPU on this machine: GPU test skipped")
    cpu = _conv_pool_chain(lambda a: a)
    gpu = _conv_pool_chain(cuda.as_cupy)
    for c, g in zip(cpu, gpu):
        assert g.dtype == np.float32
        np.testing.assert_allclose(c, g, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- #
# Layers and models
# --------------------------------------------------------------------------- #


def test_conv2d_layer_creates_W_lazily_with_the_right_shape_and_scale():
    import dezero_like.layers_conv as Lc

    np.random.seed(0)
    conv = Lc.Conv2d(64, kernel_size=3, stride=1, pad=1)
    assert conv.W.data is None
    x = np.random.rand(2, 32, 8, 8).astype(np.float32)
    y = conv(x)
    assert y.shape == (2, 64, 8, 8) and y.dtype == np.float32
    assert conv.W.shape == (64, 32, 3, 3) and conv.W.dtype == np.float32
    assert abs(conv.W.data.std() - (1 / (32 * 9)) ** 0.5) < 0.005  # He-like: 1/sqrt(fan-in)
    np.testing.assert_allclose(y.data, Fc.conv2d(x, conv.W.data, conv.b.data, 1, 1).data)
    assert [p.name for p in conv.params()] == ["W", "b"]
    eager = Lc.Conv2d(4, 2, in_channels=3, nobias=True)
    assert eager.W.shape == (4, 3, 2, 2) and eager.b is None
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        Lc.Conv2d(4, 3)(np.zeros((2, 784), np.float32))


def test_deconv2d_layer_upsamples():
    import dezero_like.layers_conv as Lc

    deconv = Lc.Deconv2d(3, kernel_size=2, stride=2)
    y = deconv(np.random.rand(2, 5, 4, 4).astype(np.float32))
    assert y.shape == (2, 3, 8, 8) and deconv.W.shape == (5, 3, 2, 2)


def test_batch_norm_layer_train_and_test_modes_and_saving(tmp_path):
    import dezero_like.layers_conv as Lc

    bn = Lc.BatchNorm(decay=0.5)
    rng = np.random.default_rng(80)
    x = (rng.standard_normal((8, 3, 4, 4)) * 2 + 5).astype(np.float32)
    y = bn(x)
    np.testing.assert_allclose(y.data.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(bn.avg_mean.data, 0.5 * x.mean(axis=(0, 2, 3)), rtol=1e-5)
    y.sum().backward()
    assert bn.gamma.grad is not None and bn.avg_mean.grad is None  # running stats get no grad
    with dz.test_mode():
        yt = bn(x)
    expect = (x - bn.avg_mean.data.reshape(1, 3, 1, 1)) / np.sqrt(
        bn.avg_var.data.reshape(1, 3, 1, 1) + 2e-5)
    np.testing.assert_allclose(yt.data, expect, rtol=1e-4, atol=1e-5)
    path = tmp_path / "bn.npz"
    bn.save_weights(path)
    other = Lc.BatchNorm()
    other.load_weights(path)
    np.testing.assert_array_equal(other.avg_var.data, bn.avg_var.data)


def test_simple_conv_net_shapes_and_parameter_count():
    from dezero_like.models_conv import SimpleConvNet, summary

    np.random.seed(0)
    model = SimpleConvNet()
    y = model(np.zeros((3, 1, 28, 28), np.float32))
    assert y.shape == (3, 10)
    n = sum(p.size for p in model.params())
    assert n == sum(row[2] for row in summary(model, (1, 28, 28))) == 162_710
    assert model(np.zeros((2, 784), np.float32)).shape == (2, 10)  # flat MNIST rows work too


def test_vgg16_structure_without_allocating_it():
    from dezero_like.models_conv import VGG16, summary

    model = VGG16()
    assert all(p.data is None for p in model.params() if p.name == "W")  # lazy: nothing yet
    rows = summary(model, (3, 224, 224))
    assert sum(r[2] for r in rows) == 138_357_544  # the published VGG16 size
    convs = [r for r in rows if r[0].startswith("conv")]
    assert len(convs) == 13 and convs[-1][1] == (512, 14, 14)
    assert [r for r in rows if r[0] == "pool"][-1][1] == (512, 7, 7)
    assert rows[-1] == ("fc8", (1000,), 4_097_000)


def test_vgg16_runs_on_a_small_image():
    from dezero_like.layers import Linear
    from dezero_like.models_conv import VGG16

    np.random.seed(0)
    model = VGG16(num_classes=3)
    model.fc6, model.fc7 = Linear(8), Linear(8)  # thin layers: the wiring is what is tested
    for name in model.conv_names:
        conv = getattr(model, name)
        conv.out_channels = 4
        conv.b.data = np.zeros(4, np.float32)
    y = model(np.random.rand(1, 3, 32, 32).astype(np.float32))
    assert y.shape == (1, 3)


def test_vgg16_pretrained_offline_gives_a_clear_error(tmp_path, monkeypatch):
    from dezero_like.models_conv import VGG16, PretrainedWeightsUnavailable

    monkeypatch.setenv("DEZERO_LIKE_DATA", str(tmp_path))
    monkeypatch.setenv("DEZERO_LIKE_OFFLINE", "1")
    with pytest.raises(PretrainedWeightsUnavailable, match="vgg16.npz") as info:
        VGG16(pretrained=True)
    assert "pretrained=False" in str(info.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        VGG16(pretrained=True, weights_file=tmp_path / "missing.npz")


# --------------------------------------------------------------------------- #
# Real data: a small CNN beats an MLP on MNIST
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_cnn_beats_mlp_on_real_mnist(mnist_dir):
    """Both train two epochs (Adam, batch 100, same order) on 8,000 real MNIST test images
    and are evaluated on the other 2,000."""
    import time

    import dezero_like.functions as F
    from dezero_like import datasets, optimizers
    from dezero_like import transforms as T
    from dezero_like.models import MLP
    from dezero_like.models_conv import SimpleConvNet

    image = T.Compose([T.ToFloat(), T.Normalize(0.0, 255.0)])  # (1, 28, 28) in [0, 1]
    kwargs = dict(transform=image, data_dir=mnist_dir.parent, source="test-split",
                  download=False)
    train = datasets.MNIST(train=True, **kwargs)
    test = datasets.MNIST(train=False, **kwargs)
    assert (len(train), len(test)) == (8000, 2000)

    class FlatMLP(MLP):
        def forward(self, x):
            return super().forward(F.flatten(x))

    def fit_and_score(model):
        np.random.seed(0)
        loader = dz.DataLoader(train, batch_size=100, seed=0)
        opt = optimizers.Adam(0.001).setup(model)
        for _epoch in range(2):
            for x, t in loader:
                loss = F.softmax_cross_entropy(model(x), t)
                model.cleargrads()
                loss.backward()
                opt.update()
        with dz.no_grad(), dz.test_mode():
            xs, ts = zip(*(test[i] for i in range(len(test))))
            return float(F.accuracy(model(np.stack(xs)), np.array(ts)).data)

    start = time.perf_counter()
    np.random.seed(0)
    cnn_acc = fit_and_score(SimpleConvNet())
    cnn_s = time.perf_counter() - start
    np.random.seed(0)
    mlp_acc = fit_and_score(FlatMLP((100, 10), activation=F.relu))
    print(f"CNN {cnn_acc:.3f} ({cnn_s:.1f} s), MLP {mlp_acc:.3f}")
    assert cnn_acc > 0.95
    assert cnn_acc > mlp_acc + 0.02


def test_channels_last_images_get_a_hint_about_the_layout():
    import dezero_like.layers_conv as Lc
    from dezero_like.models_conv import SimpleConvNet

    conv = Lc.Conv2d(4, 3, pad=1, in_channels=3)
    with pytest.raises(ValueError, match=r"8 channels.*channels-last \(N, H, W, C\).*transpose"):
        conv(np.ones((2, 8, 8, 3), np.float32))
    with pytest.raises(ValueError, match=r"looks channels-last.*transpose\(0, 3, 1, 2\)"):
        SimpleConvNet()(np.ones((2, 28, 28, 1), np.float32))
    with pytest.raises(ValueError, match="5 channels") as error:
        Fc.conv2d(np.ones((2, 5, 8, 8)), np.ones((4, 3, 3, 3)))
    assert "channels-last" not in str(error.value)  # no hint where the layout is plausible


def test_max_pooling_of_an_integer_image_with_padding_and_its_second_derivative():
    """Integer images: padding needs an integer 'lowest' value, and the 2x2 path's
    second derivative keeps the (floating) gradient's dtype instead of the image's."""
    rng = np.random.default_rng(0)
    xi = rng.integers(-100, 100, (2, 3, 4, 4))
    y = Fc.pooling(dz.Variable(xi), 3, 1, 1)
    # the reference, exact and without PyTorch (the README's test command runs without it):
    # pad with -inf, which never wins, and take the max of every 3x3 window
    padded = np.pad(xi.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)),
                    constant_values=-np.inf)
    expected = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3)).max(
        axis=(-2, -1))
    np.testing.assert_array_equal(y.data, expected)
    assert y.dtype == xi.dtype
    u = rng.standard_normal(xi.shape)
    seconds = []
    for image in (xi, xi.astype(np.float64)):
        x = dz.Variable(image)
        y = Fc.pooling(x, 2)
        v = dz.Variable(np.ones(y.shape))
        y.backward(gradient=v, create_graph=True)
        F.sum(x.grad * u).backward()
        seconds.append(v.grad.data)
    np.testing.assert_allclose(seconds[0], seconds[1], rtol=1e-12)
    assert np.abs(seconds[0]).sum() > 0



def test_channels_last_images_that_are_not_square_are_warned_about():
    import warnings

    import dezero_like.layers_conv as Lc

    with pytest.warns(UserWarning, match=r"x.transpose\(0, 3, 1, 2\)"):
        Lc.Conv2d(8, 3, pad=1)(np.zeros((4, 32, 48, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Lc.Conv2d(8, 3, pad=1)(np.zeros((4, 16, 100, 1), np.float32))  # a 1-d signal: fine


@pytest.mark.parametrize("images_per_run", [1, 2, 3])
def test_stride_one_deconv2d_in_runs_of_images_matches_the_direct_scatter(images_per_run):
    # the taps' products are made a run of whole images at a time (one product per run, into
    # a buffer of at most part_bytes); 5 images in runs of 2 or 3 leave a shorter last run
    x, Wt, b, s, p, _ = _deconv_case((5, 3, 4, 6, 2, (3, 2), 1, (1, 0), None), 26)
    OC, KH, KW = Wt.shape[1:]
    image_bytes = KH * KW * OC * (4 + KH - 1) * (6 + KW - 1) * x.itemsize
    y = Fc._deconv_stride1(x, Wt, (4 + KH - 1 - 2, 6 + KW - 1), (1, 0),
                           part_bytes=images_per_run * image_bytes)
    np.testing.assert_allclose(y, deconv_ref(x, Wt, None, s, p), atol=1e-12)


@pytest.mark.parametrize("N", [0, 2])
def test_stride_one_deconv2d_with_images_too_large_for_one_run_keeps_its_buffer_small(N):
    # one image's stacked products (81 taps x 3 channels x 72 x 72 float64, 10 MiB) are
    # more than part_bytes (2 MiB): tap by tap along the batch instead, never a 10 MiB buffer
    import tracemalloc

    rng = np.random.default_rng(27)
    x, Wt = rng.normal(size=(N, 3, 64, 64)), rng.normal(size=(3, 3, 9, 9))
    tracemalloc.start()
    try:
        y = Fc._deconv_stride1(x, Wt, (72, 72), (0, 0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    np.testing.assert_allclose(y, deconv_ref(x, Wt, None, 1, 0), atol=1e-9)
