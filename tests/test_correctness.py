"""Regression tests for results that were once wrong or confusing, plus two generators.

* Each test in the first part pins one defect found by checking the package
  against PyTorch and by making a learner's mistakes on purpose.
* A hypothesis test builds random expression graphs and compares values and
  gradients with PyTorch (skipped, with the reason, without PyTorch).
* A fuzz test flips random bytes of a saved weights file: every outcome is a
  clean load of the same values or a ``ValueError``, the model unchanged.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.models import MLP, Sequential
from dezero_like.optimizers import SGD
from dezero_like.utils import array_allclose, array_equal, gradient_check

# ---- matmul --------------------------------------------------------------------


def test_batched_matmul_gradient():
    x = dz.Variable(np.arange(8.0).reshape(2, 2, 2))
    W = dz.Variable(np.arange(8.0).reshape(2, 2, 2) + 1)
    F.sum(x @ W).backward()
    # d/dx sum(x @ W) = ones @ W^T per matrix: each row holds W's row sums
    expected = np.ones((2, 2, 2)) @ np.swapaxes(W.data, -1, -2)
    assert np.array_equal(x.grad.data, expected)
    assert np.array_equal(x.grad.data[0], [[3.0, 7.0], [3.0, 7.0]])


@pytest.mark.parametrize("sa,sb", [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)),
])
def test_matmul_gradient_check_all_operand_kinds(sa, sb, rng):
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    w = rng.normal(size=np.matmul(a, b).shape)
    assert gradient_check(lambda v: F.matmul(v, b) * w, a)
    assert gradient_check(lambda v: F.matmul(a, v) * w, b)


def test_matmul_and_linear_shape_errors_say_what_to_do():
    with pytest.raises(ValueError, match=r"cannot multiply shapes \(2, 3\) @ \(2, 3\)"):
        F.matmul(np.ones((2, 3)), np.ones((2, 3)))
    model = MLP((10, 3))
    model(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"layer 'l0' \(Linear\).*in_size=5.*\(2, 4\)"):
        model(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"linear expects x of shape \(N, in_size\)"):
        F.linear(np.ones((2, 4)), np.ones((3, 2)))


# ---- convolution with computed weights -------------------------------------------


@pytest.mark.parametrize("fn,w_shape", [(F.conv2d, (3, 2, 3, 3)), (F.deconv2d, (2, 3, 3, 3))])
def test_conv_weight_computed_and_input_constant(fn, w_shape, rng):
    x = rng.normal(size=(1, 2, 5, 5))
    V = dz.Variable(rng.normal(size=w_shape))
    F.sum(fn(x, V * 0.5)).backward()
    assert V.grad.shape == w_shape
    assert gradient_check(lambda v: fn(x, v * 0.5), V.data)


@pytest.mark.parametrize("fn", [F.conv2d, F.deconv2d])
def test_conv_double_backprop_through_reshapes(fn, rng):
    """The same variable is the image and the filter; the second backward used to crash."""
    xv = dz.Variable(rng.normal(size=(9,)))
    y = fn(F.reshape(xv, (1, 1, 3, 3)), F.reshape(xv, (1, 1, 3, 3)))
    F.sum(y).backward(create_graph=True)
    g = xv.grad
    xv.cleargrad()
    F.sum(g * g).backward()
    assert xv.grad.shape == (9,) and np.isfinite(xv.grad.data).all()
    assert gradient_check(lambda v: fn(F.reshape(v, (1, 1, 3, 3)), F.reshape(v, (1, 1, 3, 3))),
                          xv.data)


def test_sum_to_refuses_a_shape_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"shape \(3,\) does not broadcast"):
        F.sum_to(np.ones((2, 4)), (3,))
    assert F.sum_to(np.ones((2, 4)), (1, 4)).shape == (1, 4)


# ---- losses and activations -------------------------------------------------------


def test_mean_squared_error_takes_shapes_that_hold_the_same_elements():
    """The book's step 59 adds up F.mean_squared_error(y, t) of an RNN output y (1, 1) and a
    target t (1,): broadcasting adds no element there, so it is the loss of the elements side
    by side, with each gradient in its own input's shape (it used to be refused)."""
    for f in (F.mean_squared_error, F.mean_squared_error_simple):
        y, t = dz.Variable(np.array([[0.5]])), dz.Variable(np.array([2.0]))
        loss = f(y, t)
        loss.backward()
        assert loss.data == pytest.approx(2.25), f.__name__
        assert y.grad.shape == (1, 1) and t.grad.shape == (1,), f.__name__
        assert y.grad.data[0, 0] == pytest.approx(-3.0) and t.grad.data[0] == pytest.approx(3.0)
        a, b = np.array([[0.3, -1.2, 2.0]]), np.array([1.0, 0.5, -0.25])  # (1, 3) and (3,)
        assert gradient_check(lambda u, f=f, b=b: f(u, dz.Variable(b)), a)
        assert gradient_check(lambda v, f=f, a=a: f(dz.Variable(a), v), b)
        with pytest.raises(ValueError, match=r"same shape, got \(2, 1\) and \(1, 2\)"):
            f(np.ones((2, 1)), np.ones((1, 2)))  # broadcasting would make 2 x 2


def test_mean_squared_error_refuses_shapes_that_would_broadcast():
    y = np.ones((4, 1))
    t = np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=r"same shape, got \(4, 1\) and \(4,\)"):
        F.mean_squared_error(y, t)
    with pytest.raises(ValueError, match="same shape"):
        F.mean_squared_error(np.ones((3, 2)), np.ones(2))
    loss = F.mean_squared_error(y, t.reshape(y.shape))  # what the message suggests
    assert loss.data == pytest.approx((0 + 1 + 4 + 9) / 4)


def test_sigmoid_is_accurate_for_negative_inputs():
    x = np.array([-18.0, -20.0, -40.0], np.float32)
    y = F.sigmoid(x).data
    true = np.exp(x.astype(np.float64)) / (1 + np.exp(x.astype(np.float64)))
    np.testing.assert_allclose(y, true, rtol=1e-6)
    v = dz.Variable(np.array(-20.0, np.float32))
    loss = F.log(F.sigmoid(v))
    loss.backward()
    assert np.isfinite(loss.data) and loss.data == pytest.approx(-20.0)
    assert np.isfinite(v.grad.data) and v.grad.data == pytest.approx(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning for large |x|
        assert np.array_equal(F.sigmoid(np.array([-1000.0, 1000.0])).data, [0.0, 1.0])


@pytest.mark.parametrize("labels,bad", [([0, -1], -1), ([0, 3], 3)])
def test_softmax_cross_entropy_refuses_out_of_range_labels(labels, bad):
    with pytest.raises(ValueError, match=rf"label {bad} is out of range for 3 classes"):
        F.softmax_cross_entropy(np.zeros((2, 3)), np.array(labels))


def test_power_zero_has_zero_gradient_at_zero():
    x = dz.Variable(np.array([0.0, 2.0]))
    y = F.sum(x**0)
    y.backward(create_graph=True)
    assert np.array_equal(x.grad.data, [0.0, 0.0])


# ---- parameters shared between layers ----------------------------------------------


def test_a_layer_used_twice_is_updated_once_per_step():
    layer = L.Linear(2, in_size=2)
    model = Sequential(layer, F.relu, layer)
    params = list(model.params())
    assert len(params) == 2 and len({id(p) for p in params}) == 2
    x = np.ones((1, 2), np.float32)
    W0 = layer.W.data.copy()
    model.cleargrads()
    F.sum(model(x)).backward()
    g = layer.W.grad.data.copy()
    SGD(lr=0.1).setup(model).update()
    np.testing.assert_allclose(layer.W.data, W0 - 0.1 * g, rtol=1e-6)


def test_tied_weights_are_yielded_once():
    a, b = L.Linear(3, in_size=3), L.Linear(3, in_size=3)
    b.W = a.W  # tied
    model = Sequential(a, b)
    assert sum(p is a.W for p in model.params()) == 1


# ---- the book's helpers ---------------------------------------------------------------


def test_book_helpers_follow_numpy_semantics():
    assert array_allclose(np.array([2.0]), np.array(2.0))  # broadcasts, as np.allclose
    assert not array_allclose(np.ones(3), np.ones(2))  # cannot broadcast: False, no error
    assert not array_equal(np.ones(1), np.ones(()))  # np.array_equal compares shapes
    assert gradient_check(F.sin, np.arange(3))  # integers are cast to float64
    x32 = np.linspace(0.1, 2, 5, dtype=np.float32)
    assert gradient_check(F.sin, x32)  # and float32 (the book's tests pass float32 input)
    assert x32.dtype == np.float32  # the caller's array is left alone
    with pytest.raises(AssertionError, match="worst element"):  # still a real check: the
        gradient_check(lambda v: dz.Variable(v.data ** 3) + v, x32)  # cube is off the graph
    with pytest.raises(TypeError, match="real-valued"):
        gradient_check(F.sin, np.ones(3, np.complex128))
    assert F.add is dz.core.add and F.mul(2.0, dz.Variable(np.array(3.0))).data == 6.0


# ---- weights files -------------------------------------------------------------------------


def _model():
    np.random.seed(0)
    model = MLP((4, 3))
    model(np.ones((1, 5), np.float32))
    return model


def test_load_weights_error_types_and_no_open_handle(tmp_path):
    model = _model()
    path = tmp_path / "w.npz"
    model.save_weights(path)
    raw = path.read_bytes()
    before = [p.data.copy() for p in model.params()]
    for damaged in (raw[: len(raw) // 2], raw[:30], b"", b"PK\x03\x04" + b"\0" * 40):
        path.write_bytes(damaged)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            with pytest.raises(ValueError, match="model was left unchanged"):
                model.load_weights(path)
            gc.collect()
    for p, b in zip(model.params(), before):
        assert np.array_equal(p.data, b)


def test_fuzzed_weights_load_the_same_values_or_raise_value_error(tmp_path):
    """Flip bytes anywhere in the file, 300 times: same values, or ValueError."""
    model = _model()
    path = tmp_path / "w.npz"
    model.save_weights(path)
    raw = bytearray(path.read_bytes())
    saved = {k: p.data.copy() for k, p in model._flatten_params().items()}
    rng = np.random.default_rng(7)
    outcomes = {"same values": 0, "ValueError": 0}
    for _ in range(300):
        damaged = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(damaged)))
            damaged[i] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(damaged))
        try:
            model.load_weights(path)
        except ValueError:
            outcomes["ValueError"] += 1
        else:
            outcomes["same values"] += 1
        for key, p in model._flatten_params().items():
            assert np.array_equal(p.data, saved[key]), f"{key} changed: {outcomes}"
            assert p.data.dtype == saved[key].dtype
    assert outcomes["ValueError"] > 0


# ---- random expression graphs against PyTorch -----------------------------------------------

UNARY = {
    "sin": (F.sin, "sin"), "cos": (F.cos, "cos"), "tanh": (F.tanh, "tanh"),
    "exp": (lambda v: F.exp(v * 0.3), lambda t, v: t.exp(v * 0.3)),
    "sigmoid": (F.sigmoid, "sigmoid"), "square": (F.square, "square"),
    "neg": (lambda v: -v, lambda t, v: -v),
    "softplus_log": (lambda v: F.log(F.exp(v * 0.3) + 1.0),
                     lambda t, v: t.log(t.exp(v * 0.3) + 1.0)),
}
BINARY = {
    "add": (lambda a, b: a + b), "sub": (lambda a, b: a - b), "mul": (lambda a, b: a * b),
    "div": (lambda a, b: a / (b * b + 1.0)),
}


@st.composite
def expression(draw):
    """A random program: a list of (op, arguments) over three inputs and earlier results."""
    steps = []
    n_values = 3
    for _ in range(draw(st.integers(2, 12))):
        if draw(st.booleans()):
            steps.append(("u", draw(st.sampled_from(sorted(UNARY))),
                          draw(st.integers(0, n_values - 1))))
        else:
            steps.append(("b", draw(st.sampled_from(sorted(BINARY))),
                          draw(st.integers(0, n_values - 1)), draw(st.integers(0, n_values - 1))))
        n_values += 1
    shapes = draw(st.sampled_from([((3,), (3,), (3,)), ((2, 3), (3,), (1, 3)),
                                   ((2, 1), (1, 3), ()), ((), (), ())]))
    seed = draw(st.integers(0, 2**16))
    return steps, shapes, seed


def _torch_op(torch, spec):
    if isinstance(spec, str):
        return getattr(torch, spec)
    return lambda v: spec(torch, v)


def _run(steps, inputs, unary, binary):
    values = list(inputs)
    for step in steps:
        if step[0] == "u":
            values.append(unary[step[1]](values[step[2]]))
        else:
            values.append(binary[step[1]](values[step[2]], values[step[3]]))
    return values[-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression())
def test_random_graphs_match_torch(program):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle")
    steps, shapes, seed = program
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]
    xs = [dz.Variable(a.copy()) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_u = {k: f for k, (f, _) in UNARY.items()}
    theirs_u = {k: _torch_op(torch, g) for k, (_, g) in UNARY.items()}
    y = _run(steps, xs, ours_u, BINARY)
    yt = _run(steps, ts, theirs_u, BINARY)
    y = F.sum(y) if isinstance(y, dz.Variable) else y
    np.testing.assert_allclose(y.data, yt.sum().detach().numpy(), rtol=1e-9, atol=1e-12)
    assert y.requires_grad  # every input requires grad: so does the result
    y.backward(create_graph=True)
    used = [t for t in ts if t.requires_grad]
    gts = torch.autograd.grad(yt.sum(), used, create_graph=True, allow_unused=True)
    for x, gt in zip(xs, gts):
        expected = 0.0 if gt is None else gt.detach().numpy()
        got = 0.0 if x.grad is None else x.grad.data
        np.testing.assert_allclose(got, np.broadcast_to(expected, np.shape(got)),
                                   rtol=1e-8, atol=1e-10)


def test_the_array_helper_sum_to_refuses_a_shape_that_does_not_broadcast():
    """utils.sum_to (arrays, used inside backward passes) returned (3,) for (2, 3) -> (2,)."""
    from dezero_like.utils import sum_to

    assert sum_to(np.ones((2, 3, 4)), (3, 1)).shape == (3, 1)
    for bad in [(2,), (4, 3)]:
        with pytest.raises(ValueError, match="cannot sum an array of shape"):
            sum_to(np.ones((2, 3)), bad)


def test_a_failing_gradient_check_names_the_worst_element_plainly():
    """The message reads (1, 1) and 0.0, not (np.int64(1), np.int64(1)) and np.float64(0.0)."""
    x = np.array([[1.0, 2.0], [3.0, 0.0]])
    with pytest.raises(AssertionError, match=r"worst element \(1, 1\): backprop 0\.0 vs numer"):
        gradient_check(F.relu, x, atol=0, rtol=0)  # the kink at 0: central differences say 0.5


# ---- second review: PyTorch parity and learner mistakes (2026-11-24) -------------------------


def test_an_integer_leaf_through_astype_keeps_the_fractions_of_its_gradient():
    x = dz.Variable(np.array([1, 2]))
    (F.astype(x, np.float64) * 0.5).backward()
    np.testing.assert_array_equal(x.grad.data, [0.5, 0.5])
    y = dz.Variable(np.array([1.0, 2.0], np.float32))  # a float input still gets its dtype
    F.sum(F.astype(y, np.float64) * 0.5).backward()
    assert y.grad.dtype == np.float32


def test_float16_sigmoid_does_not_underflow_where_float32_would_not():
    x = dz.Variable(np.array([-11.5, -12.0, -14.0, -16.0, 3.0], np.float16))
    y = F.sigmoid(x)
    F.sum(y).backward()
    exact = 1 / (1 + np.exp(-x.data.astype(np.float64)))
    assert y.dtype == np.float16 and x.grad.dtype == np.float16
    tiny = 6e-8  # float16's spacing below 6e-5 (subnormal numbers)
    np.testing.assert_allclose(y.data.astype(np.float64), exact, rtol=1e-3, atol=tiny)
    np.testing.assert_allclose(x.grad.data.astype(np.float64), exact * (1 - exact),
                               rtol=2e-3, atol=tiny)
    assert (y.data[:4] > 0).all() and (x.grad.data[:4] > 0).all()  # they were all 0
    assert np.isfinite(F.log(F.sigmoid(x)).data).all()


def test_a_loss_scale_beyond_float16_still_updates_float16_parameters():
    class One(L.Layer):
        def __init__(self):
            super().__init__()
            self.W = dz.Parameter(np.ones(3, np.float16))

    model = One()
    optimizer = SGD(0.1).setup(model)
    F.sum(F.astype(model.W, np.float32) * np.float32(0.5)).backward(loss_scale=65536)
    optimizer.update()
    np.testing.assert_array_equal(model.W.data, np.full(3, 0.95, np.float16))
    assert model.W.data.dtype == np.float16


@pytest.mark.parametrize("make, message", [
    (lambda: SGD("0.1"), "lr must be a number"),
    (lambda: SGD(-0.1), r"lr must be >= 0"),
    (lambda: SGD(float("nan")), r"lr must be >= 0"),
    (lambda: dz.optimizers.MomentumSGD(0.1, momentum=None), "momentum must be a number"),
    (lambda: dz.optimizers.Adam(beta1=1.0), r"beta1 must be in \[0.0, 1.0\)"),
    (lambda: dz.optimizers.AdaDelta(rho=-0.5), "rho must be in"),
    (lambda: dz.optimizers.WeightDecay(True), "rate must be a number"),
    (lambda: dz.optimizers.ClipGrad(-1), "max_norm must be >= 0"),
])
def test_optimizer_settings_are_checked_when_the_optimizer_is_made(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make()
    assert SGD(np.array(0.1)).lr == pytest.approx(0.1)  # NumPy numbers are numbers
    assert SGD(np.float32(0.1)).lr == pytest.approx(0.1)


def test_pytorch_argument_order_for_linear_and_conv2d_is_refused_with_the_translation():
    import dezero_like.layers_conv as Lc

    with pytest.raises(TypeError, match=r"Linear\(784, 100\) is written Linear\(100, in_size="):
        L.Linear(784, 100)
    assert L.Linear(10, nobias=np.bool_(True)).b is None
    with pytest.raises(TypeError, match=r"Conv2d\(out, kernel, in_channels=in\)"):
        Lc.Conv2d(1, 16, 3)
    with pytest.raises(TypeError, match="unlike the book's DeZero"):
        Lc.Conv2d(16, 3, 1, 1)  # DeZero's positional stride and pad
    with pytest.raises(TypeError, match=r"Deconv2d takes two numbers.*ConvTranspose2d"):
        Lc.Deconv2d(1, 16, 3)
    assert Lc.Conv2d(30, kernel_size=3, stride=1, pad=1).pad == (1, 1)  # the book's spelling
    conv = Lc.Deconv2d(4, 3, stride=2, pad=1, nobias=True, in_channels=2)
    assert conv.W.shape == (2, 4, 3, 3) and conv.b is None and conv.stride == (2, 2)


def test_numpy_is_not_handed_a_variable_that_requires_grad():
    x = dz.Variable(np.arange(3.0))
    with pytest.raises(TypeError, match="requires grad.*F.sum"):
        np.mean(x * x)  # it used to return a float and drop the graph
    with pytest.raises(TypeError, match="requires grad"):
        np.concatenate([x, x])  # it used to build an array of 0-d Variables
    with dz.no_grad():
        y = x * x
    assert np.mean(y) == pytest.approx(5 / 3)  # a result without a graph is plain numbers
    assert np.asarray(y, np.float32).dtype == np.float32
    out = np.ones(3) * x  # NumPy still defers the operators to the Variable
    assert isinstance(out, dz.Variable)
    # a 0-d Variable is a number: a list of losses can be averaged and plotted
    losses = [F.sum(x * x), F.sum(x)]
    assert np.mean(losses) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(y, np.float32, copy=False)


def test_a_list_of_loss_variables_can_be_plotted(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from dezero_like.plot import plot_curves

    x = dz.Variable(np.array([1.0, 2.0]))
    losses = [F.sum(x * x) * k for k in (1.0, 0.5, 0.25)]
    fig = plot_curves({"loss": losses}, to_file=tmp_path / "loss.png")
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [5.0, 2.5, 1.25])
    matplotlib.pyplot.close(fig)


def test_accuracy_refuses_one_output_column_and_takes_a_list_of_labels():
    with pytest.raises(ValueError, match=r"C >= 2 classes, got y of shape \(4, 1\)"):
        F.accuracy(dz.Variable(np.zeros((4, 1))), np.array([0, 1, 1, 0]))
    with pytest.raises(ValueError, match=r"shape \(N, C\)"):
        F.accuracy(np.zeros(4), np.array([0, 1, 1, 0]))
    assert float(F.accuracy(np.eye(3), [0, 1, 2]).data) == 1.0


def test_shape_and_axis_arguments_are_taken_as_numpy_takes_them():
    x = dz.Variable(np.arange(6.0).reshape(2, 3))
    assert F.reshape(x, 6).shape == (6,)
    assert float(F.sum(x, axis=[0, 1]).data) == 15.0
    assert float(F.max(x, axis=[0, 1]).data) == 5.0
    gradient_check(lambda v: F.sum(v, axis=[0, 1]), x.data)
    with pytest.raises(ValueError, match="pass axis=0"):
        F.softmax(np.ones(3))
    with pytest.raises(ValueError, match="pass axis=0"):
        F.log_softmax(np.ones(3))
    np.testing.assert_allclose(F.softmax(np.ones(4), axis=0).data, 0.25)
    np.testing.assert_allclose(F.softmax(np.ones((2, 2)), axis=None).data, 0.25)
    np.testing.assert_allclose(F.log_softmax(np.ones((2, 2)), axis=[0, 1]).data, np.log(0.25))


def test_a_bias_of_the_wrong_size_is_named():
    import dezero_like.functions_conv as Fc

    with pytest.raises(ValueError, match=r"linear: the bias has shape \(5,\).*\(4,\)"):
        F.linear(np.ones((2, 3)), np.ones((3, 4)), np.ones(5))
    with pytest.raises(ValueError, match=r"conv2d: the bias has shape \(5,\).*\(4,\)"):
        Fc.conv2d(np.ones((1, 1, 4, 4)), np.ones((4, 1, 3, 3)), np.ones(5))
    with pytest.raises(ValueError, match=r"deconv2d: the bias has shape \(4,\).*\(2,\)"):
        Fc.deconv2d(np.ones((1, 4, 4, 4)), np.ones((4, 2, 3, 3)), np.ones(4))


def test_batch_norm_takes_integer_pixels_and_names_a_missing_batch_axis():
    import dezero_like.layers_conv as Lc

    y = Lc.BatchNorm()(np.arange(12, dtype=np.uint8).reshape(4, 3))
    assert y.dtype == np.float64
    np.testing.assert_allclose(y.data.mean(axis=0), 0, atol=1e-12)
    with pytest.raises(ValueError, match=r"got input of shape \(3,\)"):
        Lc.BatchNorm()(np.ones(3))


def test_weights_files_get_the_usual_mode_and_a_text_file_is_not_called_a_pickle(tmp_path):
    import os

    model = L.Linear(3, in_size=2)
    path = tmp_path / "w.npz"
    model.save_weights(path)
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    text = tmp_path / "notes.txt"
    text.write_text("not weights")
    with pytest.raises(ValueError, match="it is not an .npz archive") as info:
        model.load_weights(text)
    assert "pickle" not in str(info.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32",
                    reason="symbolic links, named pipes and POSIX modes")
def test_saving_over_a_private_file_or_a_link_keeps_them(tmp_path):
    """The save writes a new file and renames it over the old one: that must not reset a
    0600 file to the usual mode, nor replace a symbolic link by a file."""
    model = L.Linear(3, in_size=2)
    (tmp_path / "runs").mkdir()
    real = tmp_path / "runs" / "w.npz"
    model.save_weights(real)
    os.chmod(real, 0o600)
    link = tmp_path / "latest.npz"
    link.symlink_to(real)
    model.W.data[...] = 7.0
    model.save_weights(link)
    assert link.is_symlink() and os.stat(real).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["w.npz"]  # no temporary left
    fresh = L.Linear(3, in_size=2)
    fresh.load_weights(real)
    assert (fresh.W.data == 7.0).all()
    os.chmod(real, 0o4777)  # setuid and world-writable: never carried over to the new file
    model.save_weights(real)
    assert os.stat(real).st_mode & 0o7777 == 0o777  # the permission bits only
    fifo = tmp_path / "pipe.npz"  # not a regular file (a device through a link as root was
    os.mkfifo(fifo)  # replaced by the weights file: /dev/null became a file)
    (tmp_path / "to_pipe.npz").symlink_to(fifo)
    for target in (fifo, tmp_path / "to_pipe.npz"):
        with pytest.raises(ValueError, match="not a regular file"):
            model.save_weights(target)
    assert fifo.is_fifo()


def test_datasets_without_super_init_and_transforms_that_return_objects():
    from dezero_like import DataLoader
    from dezero_like.datasets import Dataset

    class NoSuper(Dataset):
        def __init__(self):  # forgets super().__init__()
            self.data = np.arange(4.0)
            self.label = np.arange(4)

    assert NoSuper()[2] == (2.0, 2) and len(NoSuper()) == 4

    class Numbers(Dataset):
        def prepare(self):
            self.data = np.arange(6.0)
            self.label = np.arange(6)

    cases = {"inputs do not stack into a numeric array": lambda x: None,
             r"returned a Variable.*return v.data": lambda x: dz.Variable(np.array(x))}
    for message, transform in cases.items():
        with pytest.raises(TypeError, match=message):
            next(iter(DataLoader(Numbers(transform=transform), 2, shuffle=False)))


def test_boolean_graphs_seed_a_floating_gradient():
    x = dz.Variable(np.array([True, False]))
    (x + x).backward()  # True + True is True: a boolean seed would give logic, not counts
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0])
    x = dz.Variable(np.array([True, False]))
    (x * x).backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 0.0])
    x = dz.Variable(np.array([True, False]))
    (x + x).backward(gradient=np.array([0.5, 0.25]))  # a given seed keeps its numbers
    np.testing.assert_array_equal(x.grad.data, [1.0, 0.5])


def test_pooling_of_integer_images_has_a_floating_gradient_and_float32_stays_float32():
    import dezero_like.functions_conv as Fc

    x = dz.Variable(np.arange(16).reshape(1, 1, 4, 4))
    F.sum(Fc.average_pooling(x, 2)).backward()
    assert x.grad.dtype.kind == "f"
    np.testing.assert_array_equal(x.grad.data, np.full((1, 1, 4, 4), 0.25))
    for pool in (Fc.pooling, Fc.average_pooling):
        for kernel in (2, 3):  # 2x2 takes its own fast path
            x = dz.Variable(np.arange(36).reshape(1, 1, 6, 6))
            F.sum(pool(x, kernel) * 0.5).backward()
            assert x.grad.dtype.kind == "f" and x.grad.data.max() == pytest.approx(0.5 / (
                1 if pool is Fc.pooling else kernel * kernel))
            x = dz.Variable(np.ones((1, 1, 6, 6), np.float32))
            F.sum(pool(x, kernel) * np.float64(0.5)).backward()  # a float64 upstream gradient
            assert x.grad.dtype == np.float32


def test_a_variable_stored_in_data_is_named_at_its_next_use():
    p = dz.Parameter(np.ones(2))
    p.data = p.data - 0.1 * dz.Variable(np.ones(2))  # the step-28 update without .data
    with pytest.raises(TypeError, match=r"write p.data = p.data - lr \* p.grad.data"):
        p * 2.0

    class Exp(dz.Function):
        def forward(self, x):
            return F.exp(x)  # a Variable: forward should compute on arrays

    with pytest.raises(TypeError, match="forward must return arrays"):
        Exp()(dz.Variable(np.ones(2)))


def test_channels_last_images_at_a_lazy_convolution_get_a_warning():
    import dezero_like.layers_conv as Lc

    with pytest.warns(UserWarning, match=r"\(N, C, H, W\): x.transpose\(0, 3, 1, 2\)"):
        Lc.Conv2d(4, 3)(np.zeros((2, 8, 8, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Lc.Conv2d(4, 3)(np.zeros((2, 3, 8, 8), np.float32))


# ---- third review: graphs, loaders and helpers (2026-11-24) ---------------------------------


def test_a_function_object_called_twice_while_recording_is_refused():
    f = F.Exp()
    a, b = dz.Variable(np.array(1.0)), dz.Variable(np.array(3.0))
    y = f(a)
    with pytest.raises(RuntimeError, match=r"Make a new one for each call: Exp\(\)\(x\)"):
        f(b)  # it used to send a's gradient to b
    g = dz.core.Add()
    s = g(dz.Variable(np.ones((2, 3))), dz.Variable(np.ones(3)))
    with dz.no_grad(), pytest.raises(RuntimeError, match="already a node of a graph"):
        g(np.ones((4, 5)), 2.0)  # forward would overwrite the shapes backward reads
    F.sum(s).backward()  # the first graph is intact
    y.backward()
    assert a.grad.data == pytest.approx(np.e) and b.grad is None
    f(b).backward()  # once backward has freed its graph, the object may be used again
    assert b.grad.data == pytest.approx(np.exp(3.0))
    criterion = F.MeanSquaredError()  # PyTorch's habit: one criterion object for every batch
    criterion(dz.Variable(np.ones(2)), np.zeros(2))  # a loss that is dropped, never backward
    for k in (1.0, 2.0):
        x = dz.Variable(np.full(2, k))
        criterion(x, np.zeros(2)).backward()
        np.testing.assert_allclose(x.grad.data, np.full(2, 2 * k / 2))


def test_two_loops_over_one_loader_keep_their_own_places():
    from dezero_like import DataLoader
    from dezero_like.datasets import Spiral

    loader = DataLoader(Spiral(), 100, seed=0)
    seen, inner = 0, []
    for i, (x, _) in enumerate(loader):
        seen += len(x)
        if i == 1:
            inner.append(sum(len(b) for b, _ in loader))  # evaluate on the same loader
    assert (seen, inner) == (300, [300])
    assert len(list(zip(loader, loader))) == 3
    # the book's next(loader) keeps its place in the loader, and a loop after it starts anew
    first = next(loader)[1].tolist()
    assert len(first) == 100 and sum(len(t) for _, t in loader) == 300


def test_a_seeded_loader_draws_the_same_orders_as_before_epoch_by_epoch():
    from dezero_like import DataLoader

    data = list(zip(np.arange(10.0), np.arange(10)))
    loader = DataLoader(data, 4, seed=3)
    rng = np.random.default_rng(3)
    for _ in range(3):  # each epoch's order is the next permutation of the generator
        expected = rng.permutation(10)
        np.testing.assert_array_equal(np.concatenate([t for _, t in loader]), expected)
    for _ in loader:  # a loop left early still moves on to the next order
        break
    rng.permutation(10)  # the order the loop that was left used
    np.testing.assert_array_equal(np.concatenate([t for _, t in loader]), rng.permutation(10))


def test_the_book_s_next_based_loaders_and_random_draws_are_unchanged():
    from dezero_like import DataLoader

    class BookSeqLoader(DataLoader):  # the book's SeqDataLoader overrides __next__
        def __init__(self, dataset, batch_size):
            super().__init__(dataset, batch_size, shuffle=False)

        def __next__(self):
            if self.iteration >= self.max_iter:
                self.reset()
                raise StopIteration
            jump = self.data_size // self.batch_size
            batch = [self.dataset[(i * jump + self.iteration) % self.data_size]
                     for i in range(self.batch_size)]
            self.iteration += 1
            return np.array([x for x, _ in batch]), np.array([t for _, t in batch])

    data = list(zip(np.arange(6.0), np.arange(6)))
    assert [t.tolist() for _, t in BookSeqLoader(data, 2)] == [[0, 3], [1, 4], [2, 5]]

    class OwnReset(DataLoader):  # a reset() that does not call super()
        def reset(self):
            self.iteration = 0
            self.index = np.random.permutation(self.data_size)

    np.random.seed(0)
    loader = OwnReset(data, 4)
    for _ in range(3):
        list(loader)
    after = np.random.rand()
    np.random.seed(0)
    for _ in range(4):  # at construction and at the end of each of the 3 epochs
        np.random.permutation(6)
    assert after == np.random.rand()

    def draws(use):  # the global generator's next number after using a loader
        np.random.seed(0)
        use(DataLoader(data, 4))
        return np.random.rand()

    np.random.seed(0)
    np.random.permutation(6)
    one = np.random.rand()  # one permutation drawn, at construction
    assert draws(lambda loader: next(iter(loader))) == one  # peeking draws nothing more

    def break_then_reset(loader):
        for _ in loader:
            break
        loader.reset()  # step 54's pattern: one more order, and the next loop uses it
        list(loader)

    np.random.seed(0)
    for _ in range(3):
        np.random.permutation(6)
    three = np.random.rand()  # at construction, by reset(), at the end of the full epoch
    assert draws(break_then_reset) == three


def test_numerical_grad_nudges_integers_and_float16_in_float64():
    from dezero_like.utils import numerical_grad

    np.testing.assert_allclose(numerical_grad(lambda x: x * x, np.array([1, 2, 3])), [2, 4, 6],
                               rtol=1e-6)
    g = numerical_grad(lambda x: x * x, np.array([1.0, 2.0, 3.0], np.float16))
    np.testing.assert_allclose(g, [2, 4, 6], rtol=1e-6)


def test_normalize_does_not_wrap_integers_or_widen_float32():
    import dezero_like.transforms as T

    np.testing.assert_allclose(T.Normalize(128, 64)(np.array([0, 100, 255], np.uint8)),
                               [-2.0, -0.4375, 1.984375])
    x = np.ones(3, np.float32)
    assert T.Normalize(np.float64(0.5), [0.5, 0.5, 0.5])(x).dtype == np.float32


def test_a_seed_with_a_graph_keeps_it_under_create_graph():
    x = dz.Variable(np.array([0.5, 0.7]))
    v = dz.Variable(np.array([1.0, 1.2]))
    F.sin(x).backward(gradient=v, create_graph=True)  # x.grad = v * cos(x), a function of v
    gx = x.grad
    x.cleargrad()
    F.sum(gx ** 2).backward()
    np.testing.assert_allclose(v.grad.data, 2 * np.cos(x.data) ** 2 * v.data)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: no oracle")

    xt = torch.tensor(x.data, requires_grad=True)
    vt = torch.tensor(v.data, requires_grad=True)
    (g,) = torch.autograd.grad(torch.sin(xt), xt, grad_outputs=vt, create_graph=True)
    (g ** 2).sum().backward()
    np.testing.assert_allclose(v.grad.data, vt.grad.numpy())


def test_small_helpers_take_what_numpy_takes():
    from dezero_like.graph import get_dot_graph
    from dezero_like.utils import reshape_sum_backward

    y = dz.Variable(np.ones(2), name=123) * 2.0
    assert "123" in get_dot_graph(y)  # a name that is not a string used to raise TypeError
    assert reshape_sum_backward(np.ones(4), (2, 3, 4), [0, 1], False).shape == (1, 1, 4)


def test_a_wider_bias_widens_linear_conv_and_deconv_alike():
    import dezero_like.functions_conv as Fc

    x32 = np.ones((2, 3), np.float32)
    assert F.linear(x32, np.ones((3, 4), np.float32), np.ones(4)).dtype == np.float64
    assert F.linear(x32, np.ones((3, 4), np.float32), np.ones(4, np.float32)).dtype == np.float32
    img = np.ones((1, 2, 4, 4), np.float32)
    assert Fc.conv2d(img, np.ones((3, 2, 3, 3), np.float32), np.ones(3)).dtype == np.float64
    assert Fc.deconv2d(img, np.ones((2, 3, 3, 3), np.float32), np.ones(3)).dtype == np.float64
    assert Fc.deconv2d(img, np.ones((2, 3, 3, 3), np.float32),
                       np.ones(3, np.float32)).dtype == np.float32
    gradient_check(lambda b: F.linear(np.ones((2, 3)), np.ones((3, 4)), b), np.arange(4.0))


def test_normalize_takes_one_value_per_channel_of_a_channels_first_image():
    from dezero_like.transforms import Normalize

    mean, std = [0.5, 0.25, 0.0], [0.5, 0.25, 2.0]
    chw = np.random.default_rng(0).random((3, 4, 3)).astype(np.float32)
    expected = (chw - np.reshape(mean, (3, 1, 1))) / np.reshape(std, (3, 1, 1))
    out = Normalize(mean, std)(chw)
    assert out.dtype == np.float32  # NumPy alone paired the values with the width axis
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    hwc = chw.transpose(1, 2, 0)  # channels last: still one value per channel
    np.testing.assert_allclose(Normalize(mean, std)(hwc), expected.transpose(1, 2, 0), rtol=1e-6)
    with pytest.raises(ValueError, match=r"2 values per channel .* shape \(3, 4, 3\)"):
        Normalize([0.0, 1.0], [1.0, 1.0])(chw)
    np.testing.assert_allclose(Normalize(mean, std)(np.ones(3)), (1 - np.array(mean)) / std)


@pytest.mark.parametrize("make", [lambda: dz.optimizers.MomentumSGD(lr=0.1),
                                  lambda: dz.optimizers.Adam(alpha=0.01)])
def test_an_optimizer_set_up_again_on_a_new_model_starts_that_model_afresh(make):
    """The state was kept under id(param) alone: a new model's parameter that got a dead
    one's id inherited its velocity (other numbers, or a broadcast error on another shape)."""
    from dezero_like.models import MLP

    x = np.ones((2, 3), np.float32)

    def train(optimizer, sizes):
        t = np.zeros((2, sizes[-1]), np.float32)
        np.random.seed(0)
        model = MLP(sizes)
        optimizer.setup(model)
        for _ in range(3):
            model.cleargrads()
            F.mean_squared_error(model(x), t).backward()
            optimizer.update()
        return model.l0.W.data.copy()

    shared = make()
    for sizes in [(3, 3, 3), (4, 1), (3, 3, 3), (4, 4), (3, 3, 3), (4, 1), (3, 3, 3)]:
        np.testing.assert_array_equal(train(shared, sizes), train(make(), sizes))
        gc.collect()
    assert len(shared._states) == len(list(shared.target.params()))  # only the live model's
    shared.target = None
    gc.collect()
    assert len(shared._states) == 0  # a dead model's state is dropped with it


def test_an_optimizer_state_entry_of_another_object_is_not_inherited():
    import weakref

    p = dz.Parameter(np.ones(3))
    other = dz.Parameter(np.ones(3))
    optimizer = dz.optimizers.MomentumSGD(lr=0.1, momentum=0.5)
    optimizer._states = {id(p): (weakref.ref(other), {"v": np.full(3, 100.0)})}  # a stale id
    assert np.all(optimizer._state("v", p) == 0)


def test_clip_grad_on_float16_scales_down_instead_of_zeroing():
    g = np.full(1000, 10, np.float16)  # norm 316: its square is inf in float16
    p = dz.Parameter(np.zeros(1000, np.float16))
    p.grad = dz.Variable(g.copy())
    dz.optimizers.ClipGrad(1.0)([p])
    assert p.grad.dtype == np.float16
    np.testing.assert_allclose(p.grad.data, np.full(1000, 10 / np.sqrt(1e5)), rtol=1e-3)


@pytest.mark.parametrize("bad", [F.ReLU, F.ReLU(), "relu"])
def test_mlp_and_sequential_refuse_an_activation_that_would_fail_in_forward(bad):
    from dezero_like.models import MLP, Sequential

    fix = "not callable" if isinstance(bad, str) else "pass F.relu instead"
    with pytest.raises(TypeError, match=f"MLP's activation .*{fix}"):
        MLP((4, 1), activation=bad)
    with pytest.raises(TypeError, match=f"Sequential item 1 .*{fix}"):
        Sequential(L.Linear(4), bad, L.Linear(1))


def test_dropout_of_integers_and_clip_with_array_bounds():
    np.random.seed(0)  # integers are scaled once cast (tests/test_oracle_sweep8.py: as PyTorch,
    y = F.dropout(F.astype(np.arange(6).reshape(2, 3), np.float64))  # refused uncast)
    assert y.dtype == np.float64 and set(np.unique(y.data)) <= {0, 2, 4, 6, 8, 10}
    x = dz.Variable(np.array([-2.0, 0.5, 3.0]))
    y = F.clip(x, np.zeros(3), np.array([1.0, 1.0, 4.0]))
    y.backward()
    np.testing.assert_array_equal(y.data, [0.0, 0.5, 3.0])
    np.testing.assert_array_equal(x.grad.data, [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="x_min <= x_max"):
        F.clip(x, np.ones(3), np.array([2.0, 0.0, 2.0]))


def test_int_and_round_of_a_one_element_variable_as_for_a_tensors_item():
    loss = dz.Variable(np.array(0.123456, np.float32))
    assert round(loss, 3) == 0.123 and isinstance(round(loss, 3), float)
    assert int(dz.Variable(np.array(7.9))) == 7
    assert int(dz.Variable(np.array([7.9]))) == 7 and float(dz.Variable(np.array([[0.5]]))) == 0.5
    with pytest.raises(TypeError, match="only a one-element Variable"):
        round(dz.Variable(np.ones(3)), 2)


# ---- edge inputs of a second PyTorch sweep -------------------------------------------------


def test_an_integer_divisor_gets_its_gradient_without_wrapping_around():
    """-x0 / x1**2 squared an int32 50000 (and negated a uint8) before dividing: a flipped
    sign, -inf, 255. The gradient is now -(x0 / x1) / x1, a float from the first division."""
    for data, expected in (
        (np.array([1, 200, 50000], np.int32), [-1.0, -2.5e-05, -4e-10]),
        (np.array([1, 16], np.uint8), [-1.0, -1 / 256]),
        (np.array([1, 2], np.uint8), [-1.0, -0.25]),
    ):
        x = dz.Variable(data)
        F.sum(1.0 / x).backward()
        np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)


def test_max_ties_share_the_gradient_in_every_dtype():
    """The tie count was cast to x's dtype: 256 uint8 ties made it 0 (grad inf), 200 int8 ties
    -56, three bools True (each got 1), 70000 float16 ties inf (each got 0)."""
    for data in (np.ones(256, np.uint8), np.ones(200, np.int8), np.ones(3, bool),
                 np.zeros(70000, np.float16)):
        x = dz.Variable(data)
        F.max(x).backward()
        assert x.grad.dtype == (np.float16 if data.dtype == np.float16 else np.float64)
        rtol = 1e-2 if data.dtype == np.float16 else 1e-12  # 1/70000 is subnormal in float16
        np.testing.assert_allclose(x.grad.data.astype(np.float64), 1 / data.size, rtol=rtol)


def test_zero_d_inputs_and_int_shapes_as_numpy_takes_them():
    x = dz.Variable(np.array(3.0))
    for axis in (0, -1, None, ()):  # np.max(np.array(3.0), axis=0) is 3.0
        assert F.max(x, axis=axis).data == 3.0 and F.min(x, axis=axis).shape == ()
    for f, value in ((F.softmax, 1.0), (F.log_softmax, 0.0)):
        x = dz.Variable(np.array(3.0))
        y = f(x, axis=None)  # out= of a NumPy scalar raised TypeError
        y.backward()
        assert float(y.data) == value and float(x.grad.data) == 0.0
    logits = np.array([[1, 2, 3], [-128, 127, 0]], np.int8)  # exp's output cast to int8 raised
    e = np.exp(logits - logits.max(1, keepdims=True).astype(float))
    expected = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(F.softmax(logits).data, expected)
    x = dz.Variable(logits.astype(np.int64))
    F.softmax_cross_entropy(x, np.array([0, 1])).backward()  # backward raised the same
    assert x.grad.dtype == np.float64
    v = dz.Variable(np.array([2.0]))
    y = F.broadcast_to(v, 5)  # an int shape, as np.broadcast_to takes it
    y.backward(gradient=np.ones(5))
    assert y.shape == (5,) and float(v.grad.data[0]) == 5.0
    assert F.sum_to(dz.Variable(np.ones(4)), 1).data.tolist() == [4.0]


def test_softmax_over_an_empty_axis_is_empty_as_in_pytorch():
    """A class axis of length 0 raised NumPy's 'zero-size array to reduction' error."""
    for shape in ((3, 0), (0, 3)):
        for f in (F.softmax, F.log_softmax):
            x = dz.Variable(np.zeros(shape))
            y = f(x)
            y.backward(gradient=np.zeros(shape))
            assert y.shape == x.grad.shape == shape


def test_a_number_to_the_power_of_a_variable():
    """2 ** x raised TypeError (no __rpow__); the gradient is y * log(c), 0 for c = 0."""
    x = dz.Variable(np.array([-1.0, 0.0, 3.0]))
    y = 2 ** x
    y.backward(gradient=np.ones(3))
    np.testing.assert_array_equal(y.data, [0.5, 1.0, 8.0])  # exact: c ** x, not exp(x log c)
    np.testing.assert_allclose(x.grad.data, y.data * np.log(2))
    z = dz.Variable(np.array([0.0, 2.0]))
    (0.0 ** z).backward(gradient=np.ones(2))
    assert z.grad.data.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match="base of \\*\\*"):
        np.ones(2) ** dz.Variable(np.ones(2))


def test_rpow_at_base_zero_and_leaky_relu_slope_follow_pytorch():
    """0 ** x has gradient 0 where x >= 0 and -inf where x < 0 (torch's rule); a slope that is
    not a number (a Variable would silently not be learned) is refused."""
    x = dz.Variable(np.array([-1.0, 0.0, 2.0]))
    with np.errstate(divide="ignore"):
        y = 0.0 ** x
    y.backward(gradient=np.ones(3))
    assert y.data.tolist() == [np.inf, 1.0, 0.0] and x.grad.data.tolist() == [-np.inf, 0.0, 0.0]
    x32 = dz.Variable(np.array([1.5], np.float32))
    assert (np.array(2.5) ** x32).dtype == np.float64  # a 0-d array is no weak scalar (NumPy)
    assert (2.5 ** x32).dtype == np.float32
    for bad in (dz.Variable(np.array(0.1)), np.array([0.1, 0.2]), "0.1", True):
        with pytest.raises(TypeError, match="slope must be a number"):
            F.leaky_relu(np.ones(2), bad)
