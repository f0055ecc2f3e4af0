"""Fifth sweep of learner mistakes and PyTorch differences: each case gave a silently wrong
number or a misleading error before, and now gives the right number, a warning or an error
that says what to do."""

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
import dezero_like.optimizers as O
from dezero_like.models import Sequential


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --------------------------------------------------------------------------- forward


def test_a_forward_that_forgets_return_is_named():
    class Net(dz.Model):
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(3)

        def forward(self, x):
            y = self.l1(x)  # noqa: F841 (the mistake: no return)

    with pytest.raises(TypeError, match=r"Net\.forward returned None: did it forget to return"):
        Net()(np.ones((2, 4)))


@pytest.mark.parametrize("in_size, says, not_says", [
    (None, ["x.reshape(-1, 1)", "x.reshape(1, -1)"], []),
    (1, ["100 examples of one number each, x.reshape(-1, 1)"], ["x.reshape(1, -1)"]),
    (100, ["one example of 100 numbers, x.reshape(1, -1)"], ["x.reshape(-1, 1)"]),
])
def test_a_1d_input_to_linear_gets_the_reshape_that_fits(in_size, says, not_says):
    """(100,) is 100 examples of one number (regression data) or one example of 100 numbers;
    the hint said only the second, which builds a layer of the wrong width."""
    with pytest.raises(ValueError) as info:
        L.Linear(1, in_size=in_size)(np.random.default_rng(0).random(100))
    for text in says:
        assert text in str(info.value)
    for text in not_says:
        assert text not in str(info.value)


# --------------------------------------------------------------------------- losses


def test_probabilities_into_softmax_cross_entropy_warn():
    x = dz.Variable(np.random.default_rng(0).standard_normal((4, 3)))
    t = np.array([0, 1, 2, 0])
    with pytest.warns(UserWarning, match="softmax_cross_entropy got the output of softmax"):
        F.softmax_cross_entropy(F.softmax(x), t)
    with pytest.warns(UserWarning, match="sigmoid_cross_entropy got the output of sigmoid"):
        F.sigmoid_cross_entropy(F.sigmoid(x), np.ones((4, 3)))
    model = Sequential(L.Linear(3), F.softmax)  # the usual way it happens
    with pytest.warns(UserWarning, match="Drop the final F.softmax"):
        F.softmax_cross_entropy(model(x), t)


def test_logits_and_log_softmax_into_the_losses_stay_quiet(no_warnings):
    x = dz.Variable(np.random.default_rng(0).standard_normal((4, 3)))
    t = np.array([0, 1, 2, 0])
    F.softmax_cross_entropy(x, t)
    F.softmax_cross_entropy(F.log_softmax(x), t)  # softmax(log_softmax(x)) = softmax(x)
    F.sigmoid_cross_entropy(x, np.ones((4, 3)))


def test_double_softmax_cannot_go_below_its_floor():
    """The prose's floor log(1 + (C - 1)/e): what the warning is about."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = F.softmax_cross_entropy(F.softmax(np.array([[1e9, 0.0, 0.0]])), np.array([0]))
    assert float(best.data) == pytest.approx(np.log(1 + 2 / np.e))


def test_a_single_label_is_named():
    with pytest.raises(ValueError, match=r"a single label: make it a batch of one"):
        F.softmax_cross_entropy(dz.Variable(np.ones((1, 3))), 1)


# --------------------------------------------------------------------------- modes


def _dropout_model():
    np.random.seed(0)
    model = Sequential(L.Linear(8), F.relu, F.dropout, L.Linear(2))
    model(np.zeros((1, 4)))
    return model


def test_dropout_under_no_grad_alone_warns_that_it_is_still_training():
    model, x = _dropout_model(), np.ones((5, 4))
    with dz.no_grad(), pytest.warns(UserWarning, match=r"add dezero_like\.test_mode\(\)"):
        model(x)


def test_dropout_in_training_or_in_test_mode_stays_quiet(no_warnings):
    model, x = _dropout_model(), np.ones((5, 4))
    model(x)  # training, with a graph
    with dz.test_mode(), dz.no_grad():
        model(x)
    with dz.test_mode():
        model(x)


def test_batch_norm_under_no_grad_alone_warns_and_says_what_it_changes():
    bn = L.BatchNorm()
    x = np.random.default_rng(0).standard_normal((8, 3))
    bn(x)
    with dz.no_grad(), pytest.warns(UserWarning, match="moves its running mean and variance"):
        bn(x + 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dz.no_grad(), dz.test_mode():
            bn(x + 5)


def test_a_batch_of_one_in_batch_norm_points_at_the_loaders_last_batch():
    with pytest.raises(ValueError, match=r"len\(dataset\) % batch_size"):
        L.BatchNorm()(np.ones((1, 3)))


# --------------------------------------------------------------------------- optimizers


@pytest.mark.parametrize("make", [O.SGD, O.MomentumSGD, O.Adam, O.AdaGrad])
def test_an_integer_parameter_is_refused_with_the_reason(make):
    class M(dz.Model):
        def __init__(self):
            super().__init__()
            self.b = dz.Parameter(np.array([0, 0]))

        def forward(self):
            return F.sum(self.b * 0.5)

    m = M()
    optimizer = make().setup(m)
    m().backward()
    with pytest.raises(TypeError, match=r"of int64 \(2,\): its step .* is float64.*with floats"):
        optimizer.update()
    np.testing.assert_array_equal(m.b.data, [0, 0])


def test_an_integer_gradient_with_a_fractional_rate_is_refused_before_anything_changes():
    m = dz.Model()
    m.w = dz.Parameter(np.array([1.0, 1.0]))  # updated first, if anything were
    m.k = dz.Parameter(np.array([1, 2]))
    F.sum(m.w * 2).backward()
    F.sum(m.k * 3).backward()  # an integer gradient
    with pytest.raises(TypeError, match=r"int64 gradient and SGD's settings\) is float64"):
        O.SGD(lr=0.1).setup(m).update()
    np.testing.assert_array_equal(m.w.data, [1.0, 1.0])


def test_an_integer_parameter_with_an_integer_gradient_still_takes_an_integer_step():
    p = dz.Parameter(np.arange(4))
    model = dz.Model()
    model.p = p
    p.grad = dz.Variable(np.ones(4, int))
    O.SGD(lr=1).setup(model).update()  # as NumPy's p.data -= 1 * g
    np.testing.assert_array_equal(p.data, [-1, 0, 1, 2])


def test_a_frozen_integer_parameter_is_not_refused():
    class M(dz.Model):
        def __init__(self):
            super().__init__()
            self.k = dz.Parameter(np.array([2, 3]))
            self.w = dz.Parameter(np.array([1.0, 1.0]))

        def forward(self):
            return F.sum(self.k * self.w)

    m = M()
    optimizer = O.SGD(0.1).setup(m).add_hook(O.FreezeParam(m.k))
    m().backward()
    optimizer.update()
    np.testing.assert_allclose(m.w.data, [0.8, 0.7])


# --------------------------------------------------------------------------- numbers


def test_average_pooling_of_uint8_pixels_does_not_wrap_around():
    y = Fc.average_pooling(np.full((1, 1, 4, 4), 200, np.uint8), 2)
    np.testing.assert_array_equal(y.data, np.full((1, 1, 2, 2), 200.0))


def test_flatten_and_im2col_take_an_empty_batch():
    assert F.flatten(np.zeros((0, 16, 4, 4), np.float32)).shape == (0, 256)
    assert Fc.im2col(np.zeros((0, 2, 4, 4), np.float32), 3).shape == (0, 18)


FLOAT16_SUMS = {
    # a sum past 65504 (float16's largest) where the result is small
    "mean_squared_error": (lambda: F.mean_squared_error(np.full((1000, 1), 10, np.float16),
                                                        np.zeros((1000, 1), np.float16)), 100.0),
    "sigmoid_cross_entropy": (lambda: F.sigmoid_cross_entropy(
        np.full((4096, 1), 20, np.float16), np.zeros((4096, 1), np.float16)), 20.0),
    "binary_cross_entropy": (lambda: F.binary_cross_entropy(
        np.full((120000, 1), 0.5, np.float16), np.zeros((120000, 1), np.float16)), np.log(2)),
    "average_pooling": (lambda: Fc.average_pooling(np.full((1, 1, 16, 16), 300, np.float16),
                                                   16), 300.0),
}


@pytest.mark.parametrize("name", sorted(FLOAT16_SUMS))
def test_float16_sums_are_made_in_float32(name):
    make, expected = FLOAT16_SUMS[name]
    y = make()
    assert y.dtype == np.float16
    np.testing.assert_allclose(np.asarray(y.data, np.float64).ravel(), expected, rtol=1e-3)


@pytest.mark.parametrize("scale, offset", [(1, 8), (300, 0)], ids=["sum", "squares"])
def test_float16_batch_norm_matches_torch(scale, offset):
    """A sum past 65504 (activations near 8), and squared deviations past it (about 300)."""
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(0).normal(size=(32, 2, 16, 16)) * scale + offset)
    x = x.astype(np.float16)
    ours = L.BatchNorm()(x).data
    theirs = torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True,
                                            eps=2e-5).numpy()
    assert np.isfinite(ours).all()
    np.testing.assert_allclose(ours.astype(np.float32), theirs.astype(np.float32), atol=2e-2)


@pytest.mark.parametrize("name", ["exp", "sin", "cos", "tanh", "log"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.bool_])
def test_small_integers_are_computed_in_float64_not_float16(name, dtype):
    """NumPy computes exp, log, ... of int8 and uint8 in float16 (exp(20) = inf, 3 digits) and
    of int16 in float32; the package computes every integer in float64, as sigmoid does."""
    x = np.array([1, 1, 0], dtype) if dtype == np.bool_ else np.array([20, 3, 1], dtype)
    v = dz.Variable(x)
    with np.errstate(divide="ignore"):  # log(False) is -inf, and its gradient 1/0
        y = getattr(F, name)(v)
        assert y.dtype == np.float64
        np.testing.assert_allclose(y.data, getattr(np, name)(x.astype(np.float64)), rtol=1e-12)
        F.sum(y).backward()
    assert v.grad.dtype == np.float64


def test_the_mode_warning_names_the_callers_line_not_the_package():
    """Through Sequential and the BatchNorm layer, the warning points at the evaluation line."""
    model, bn = _dropout_model(), L.BatchNorm()
    bn(np.random.default_rng(0).standard_normal((8, 3)))
    with dz.no_grad():
        with pytest.warns(UserWarning) as caught:
            model(np.ones((5, 4)))
            bn(np.ones((8, 3)))
    assert [w.filename for w in caught] == [__file__, __file__]


def test_dropout_of_nothing_under_no_grad_stays_quiet(no_warnings):
    with dz.no_grad():
        F.dropout(np.ones(3), 0.0)
