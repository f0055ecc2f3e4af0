"""Learner mistakes found by the fourth sweep: each was silent (or a bare AttributeError) and now
raises or warns with what to write instead.

* ``L.BatchNorm(16)`` (PyTorch's ``BatchNorm1d(16)``) made 16 the decay: nan in evaluation;
* ``Compose([Flatten(), ToFloat(), Normalize(0.1307, 0.3081)])`` on raw pixels trained to 11%;
* ``softmax_cross_entropy_simple`` took labels (N, 1) (an N x N pick) and negative labels;
* ``softmax``/``log_softmax`` of (N, T, C) with no axis normalised over T without a word;
* ``[ClipGrad(1), FreezeParam(m.l0)]`` counted the frozen gradients in the clipping norm;
* ``x.mean()``, ``x.argmax(1)``, ``x.float()`` ... gave Python's bare AttributeError.
"""

import warnings

import numpy as np
import pytest
from test_pytorch_habits import TENSOR_HINTS  # the table of tensor-method hints

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
from dezero_like import optimizers
from dezero_like import transforms as T
from dezero_like.models import MLP

# --- 1. BatchNorm's decay and eps -------------------------------------------------------------


@pytest.mark.parametrize("decay", [16, 1, 1.0, -0.1, float("nan")])
def test_batchnorm_refuses_a_decay_outside_0_1_and_names_the_channel_habit(decay):
    with pytest.raises(ValueError, match=r"BatchNorm: decay must be in \[0, 1\).*number of "
                       r"channels is not an argument.*first batch.*L\.BatchNorm\(\).*"
                       r"momentum=0\.1 is decay=0\.9"):
        L.BatchNorm(decay)


@pytest.mark.parametrize("decay", [True, "0.9", None, np.array([0.9])])
def test_batchnorm_refuses_a_decay_that_is_not_a_number(decay):
    with pytest.raises(TypeError, match=r"BatchNorm: decay must be a number.*L\.BatchNorm\(\)"):
        L.BatchNorm(decay=decay)


@pytest.mark.parametrize("eps", [0, 0.0, -1e-5, float("inf"), float("nan")])
def test_batchnorm_refuses_an_eps_that_is_not_positive(eps):
    with pytest.raises(ValueError, match=r"BatchNorm: eps must be > 0"):
        L.BatchNorm(eps=eps)
    with pytest.raises(TypeError, match=r"BatchNorm: eps must be a number"):
        L.BatchNorm(eps=False)


def test_functional_batch_norm_refuses_the_same_settings():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    args = (x, np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r"batch_norm: decay must be in \[0, 1\), got 16;.*"
                       r"momentum=0\.1 is decay=0\.9"):
        Fc.batch_norm(*args, decay=16)
    with pytest.raises(ValueError, match=r"batch_norm: eps must be > 0"):
        Fc.batch_norm(*args, eps=0)
    with pytest.raises(TypeError, match=r"batch_norm: decay must be a number"):
        Fc.batch_norm(*args, decay=True)
    assert np.isfinite(Fc.batch_norm(*args, decay=0.0).data).all()
    for decay in (0, 0.0, 0.5, np.float32(0.9), 0.999):  # good settings are kept
        bn = L.BatchNorm(decay=decay, eps=np.float64(1e-5))
        bn(x)
        with dz.test_mode():
            assert np.isfinite(bn(x).data).all()


# --- 2. Normalize on raw pixels stored as floats ----------------------------------------------


def _pixels():
    return np.random.default_rng(0).integers(0, 256, (28, 28)).astype(np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalize_warns_for_scaled_statistics_on_raw_float_pixels(dtype):
    pipeline = T.Compose([T.Flatten(), T.ToFloat(dtype), T.Normalize(0.1307, 0.3081)])
    with pytest.warns(UserWarning, match=r"Normalize\(mean=0\.1307, std=0\.3081\) got float data "
                      r"of whole numbers up to 255.*ToFloat converts, it does not scale.*"
                      r"Compose\(\[ToFloat\(\), Normalize\(0, 255\), Normalize\(0\.1307, "
                      r"0\.3081\)\]\)"):
        pipeline(_pixels())
    image = _pixels()
    with warnings.catch_warnings():  # scaled data, raw statistics, or not whole numbers: quiet
        warnings.simplefilter("error")
        fixed = T.Compose([T.ToFloat(), T.Normalize(0, 255), T.Normalize(0.1307, 0.3081)])
        assert fixed(image).max() < 3
        T.Normalize(0.0, 255.0)(image.astype(np.float32))  # raw statistics on raw pixels
        T.Normalize(0.5, 0.5)(np.array([0.0, 1.0, 1.0]))  # whole numbers, but within [0, 1]
        T.Normalize(0.5, 0.5)(np.array([0.5, 2.5, 3.0]))  # above 1, but not whole numbers
        T.Normalize(0.5, 0.5)(np.zeros((0,), np.float32))  # empty
        T.Normalize()(np.array([0.0, 2.0, 3.0]))  # the identity: nothing is far off
        counts = np.random.default_rng(0).poisson(0.05, (200, 50))  # word counts, normalised
        for row in counts:  # with their own statistics: at most about 13 std from the mean
            T.Normalize(0.0505, 0.2259)(row.astype(np.float64))
            T.Normalize(0.0505, 0.2259)(row)


def test_tofloat_says_it_does_not_scale():
    doc = " ".join(T.ToFloat.__doc__.split())
    assert "does not scale" in doc and "ToTensor" in doc and "255" in doc


# --- 3. softmax_cross_entropy_simple checks its labels as softmax_cross_entropy does ----------


def _logits():
    return dz.Variable(np.random.default_rng(0).standard_normal((4, 3)))


def _same_error_as_the_fused_loss(x, t):
    """The error of softmax_cross_entropy_simple(x, t), checked to be the fused loss's."""
    with pytest.raises(ValueError) as fused:
        F.softmax_cross_entropy(x, t)
    with pytest.raises(ValueError) as simple:
        F.softmax_cross_entropy_simple(x, t)
    message = str(simple.value)
    assert message == str(fused.value).replace("softmax_cross_entropy",
                                               "softmax_cross_entropy_simple")
    return message


def test_labels_of_shape_n_1_are_refused_with_the_fix():
    message = _same_error_as_the_fused_loss(_logits(), np.array([[0], [1], [2], [0]]))
    assert "expects integer labels of shape (4,), got int64 (4, 1)" in message
    assert "t.reshape(-1)" in message
    x, t = _logits(), np.array([0, 2, 1, 1])  # right labels: the two losses agree
    np.testing.assert_allclose(F.softmax_cross_entropy_simple(x, t).data,
                               F.softmax_cross_entropy(x, t).data)


@pytest.mark.parametrize("bad", [-1, 3])
def test_labels_out_of_range_are_refused(bad):
    message = _same_error_as_the_fused_loss(_logits(), np.array([0, bad, 2, 1]))
    assert message.startswith(f"softmax_cross_entropy_simple: label {bad} is out of range for 3 "
                              "classes; labels must be integers in 0..2")


def test_simple_loss_refuses_one_hot_and_float_labels_and_non_2d_logits():
    with pytest.raises(ValueError, match=r"one-hot vectors: t\.argmax\(axis=1\)"):
        F.softmax_cross_entropy_simple(_logits(), np.eye(3)[[0, 1, 2, 0]])
    with pytest.raises(ValueError, match=r"t\.astype\(int\)"):
        F.softmax_cross_entropy_simple(_logits(), np.array([0.0, 1.0, 2.0, 0.0]))
    with pytest.raises(ValueError, match=r"softmax_cross_entropy_simple expects logits of shape "
                       r"\(N, C\)"):
        F.softmax_cross_entropy_simple(dz.Variable(np.ones(3)), np.array([0]))


# --- 4. softmax over an implicit axis of an input with more than two axes ---------------------


@pytest.mark.parametrize("f", [F.softmax, F.log_softmax, F.softmax_simple])
def test_an_implicit_axis_on_3d_input_warns_naming_the_axis(f):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match=rf"{f.__name__} of an input of shape \(2, 3, 4\) "
                      r"without axis= normalises over axis 1.*pass axis=-1, or axis=1"):
        y = f(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(y.data, f(x, axis=1).data)  # the book's default, kept
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():  # an explicit axis, or a batch (N, C): no warning
        warnings.simplefilter("error")
        f(rng.standard_normal((2, 3)))
        f(rng.standard_normal((2, 3, 4)), axis=1)
        f(rng.standard_normal((2, 3, 4)), axis=-1)
        f(rng.standard_normal((2, 3, 4)), axis=np.int64(1))


def test_the_default_axis_still_reads_as_1_and_is_not_the_callers_1():
    import inspect

    for f in (F.softmax, F.log_softmax, F.softmax_simple):
        default = inspect.signature(f).parameters["axis"].default
        assert default == 1 and repr(default) == "1" and default is not 1  # noqa: F632
    assert type(F.softmax(np.ones((2, 3))).creator.axis) is int


# --- 5. FreezeParam runs before ClipGrad and WeightDecay, whatever the order added -------------


def _clipped_step(hooks):
    np.random.seed(0)
    model = MLP((4, 1))
    x = np.random.randn(5, 3)
    model(x)
    opt = optimizers.SGD(lr=1.0).setup(model)
    for h in hooks(model):
        opt.add_hook(h)
    before = model.l1.W.data.copy()
    model.cleargrads()
    F.sum(model(x) ** 2).backward()
    g1 = model.l1.W.grad.data.copy()
    opt.update()
    return opt, g1, before - model.l1.W.data


def test_freezeparam_added_after_clipgrad_still_runs_first():
    opt, g1, step = _clipped_step(lambda m: [optimizers.ClipGrad(1e-3),
                                             optimizers.FreezeParam(m.l0)])
    assert [type(h).__name__ for h in opt.hooks] == ["FreezeParam", "ClipGrad"]
    # the norm is that of the unfrozen gradients only (l1.W and l1.b): the l1 step is as if
    # l0 were not in the model at all
    _, _, alone = _clipped_step(lambda m: [optimizers.FreezeParam(m.l0),
                                           optimizers.ClipGrad(1e-3)])
    np.testing.assert_allclose(step, alone)


def test_hooks_other_than_freezeparam_keep_their_order():
    opt, _, _ = _clipped_step(lambda m: [optimizers.WeightDecay(1e-4), optimizers.ClipGrad(1.0),
                                         optimizers.FreezeParam(m.l0),
                                         optimizers.FreezeParam(m.l1.b)])
    assert [type(h).__name__ for h in opt.hooks] == [
        "FreezeParam", "FreezeParam", "WeightDecay", "ClipGrad"]


# --- 6. PyTorch's tensor methods on a Variable say what to write -------------------------------

# each name of TENSOR_HINTS (tests/test_pytorch_habits.py) is checked there, with the other
# PyTorch names, by test_a_variable_names_what_to_write_for_pytorchs_name


def test_the_hints_do_not_shadow_what_exists():
    v = dz.Variable(np.arange(6.0).reshape(2, 3))
    with pytest.raises(AttributeError, match=r"here write F\.mean\(x\)"):
        v.mean()
    assert v.size == 6 and v.item is not None and v.sum().data == 15
    assert v.reshape(3, 2).shape == (3, 2) and v.transpose().shape == (3, 2)
    layer, opt = L.Linear(2), optimizers.SGD()
    for name in TENSOR_HINTS:  # a layer and an optimizer are left as they were
        assert name not in vars(L.Layer) and name not in vars(optimizers.Optimizer)
        assert not hasattr(layer, name) and not hasattr(opt, name)
