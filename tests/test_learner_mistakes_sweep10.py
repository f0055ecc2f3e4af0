"""Tenth sweep: learner mistakes in the optimizer hooks (step 47) and the binary loss (step 49)
that gave wrong numbers without a word.

* ``optimizer.add_hook(WeightDecay(1e-4))`` in a notebook cell run twice added a second decay:
  the weights shrank twice as fast, silently; the same hook object added twice ran twice;
* ``optimizer.update()`` run again without a backward (a notebook cell run twice) repeated the
  last step with the old gradients, silently;
* ``Compose([Flatten(), Normalize([0.49, 0.48, 0.45], [0.25, 0.24, 0.26])])`` said only "operands
  could not be broadcast together with shapes (3072,) (3,)", from inside NumPy;
* ``F.transpose(x, (1, 0))`` on a 3-d ``x`` (PyTorch's two axes to swap) said only NumPy's
  "axes don't match array"; ``F.broadcast_to(x, (3, 4))`` of a (2, 3, 4) ``x`` said "input
  operand has more dimensions than allowed by the axis remapping";
* ``L.Linear(10, dtype=int)`` (also ``Conv2d``, ``Deconv2d``, ``EmbedID``) cut its random weights
  to mostly 0 and computed nonsense; the error came only at the first update, and it told how to
  make a Parameter, not to change the layer's dtype;
* ``F.sigmoid_cross_entropy(x, t)`` with targets outside [0, 1] (labels -1/1, or class indices
  0, 1, 2 given to the two-class loss) gave a loss that falls below 0 without end.
"""

import warnings

import numpy as np
import pytest

import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import Variable, models
from dezero_like import optimizers as O


def _model_and_grads(seed=0):
    """An MLP with gradients of one backward, and the input it saw."""
    rng = np.random.default_rng(seed)
    np.random.seed(seed)
    model = models.MLP((4, 2))
    x = rng.standard_normal((5, 3))
    loss = F.sum(model(x) ** 2)
    model.cleargrads()
    loss.backward()
    return model


# --- step 47: a hook added twice ---------------------------------------------------------------

def test_the_same_hook_added_twice_is_refused_and_the_optimizer_keeps_one():
    model = _model_and_grads()
    optimizer = O.SGD(lr=0.1).setup(model)
    decay = O.WeightDecay(1e-2)
    optimizer.add_hook(decay)
    with pytest.raises(ValueError, match="already added, and would run twice per update"):
        optimizer.add_hook(decay)
    assert optimizer.hooks == [decay]
    # one decay, not two: W <- W - lr (g + rate W)
    W, g = model.l0.W.data.copy(), model.l0.W.grad.data.copy()
    optimizer.update()
    np.testing.assert_allclose(model.l0.W.data, W - 0.1 * (g + 1e-2 * W), rtol=1e-6)


@pytest.mark.parametrize("hook", [lambda: O.ClipGrad(1.0), lambda: O.FreezeParam(),
                                  lambda: (lambda params: None)])
def test_any_hook_object_added_twice_is_refused(hook):
    optimizer = O.SGD().setup(_model_and_grads())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FreezeParam() of nothing warns
        h = hook()
    optimizer.add_hook(h)
    with pytest.raises(ValueError, match="already added"):
        optimizer.add_hook(h)


def test_a_second_weight_decay_warns_with_the_total_and_the_fix():
    optimizer = O.SGD().setup(_model_and_grads())
    optimizer.add_hook(O.FreezeParam(optimizer.target.l1))
    optimizer.add_hook(O.WeightDecay(1e-4))
    with pytest.warns(UserWarning, match=r"already has a WeightDecay hook \(rate=0.0001\) and "
                      r"got a second one \(rate=0.001\): both run, so the gradients get rate "
                      r"0.0001 \+ 0.001 times the weights.*optimizer\.hooks\[1\]\.rate = "):
        optimizer.add_hook(O.WeightDecay(1e-3))


def test_a_second_clip_warns_which_max_norm_wins():
    optimizer = O.SGD().setup(_model_and_grads())
    optimizer.add_hook(O.ClipGrad(5.0))
    with pytest.warns(UserWarning, match=r"already has a ClipGrad hook \(max_norm=5.0\).*"
                      r"the smaller max_norm, 0.5, caps the norm"):
        optimizer.add_hook(O.ClipGrad(0.5))


def test_hooks_of_different_kinds_and_several_freezes_stay_quiet():
    model = _model_and_grads()
    optimizer = O.SGD().setup(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer.add_hook(O.WeightDecay(1e-4))
        optimizer.add_hook(O.ClipGrad(1.0))
        optimizer.add_hook(O.FreezeParam(model.l0))
        optimizer.add_hook(O.FreezeParam(model.l1.b))
        optimizer.add_hook(lambda params: None)
        optimizer.add_hook(lambda params: None)  # two functions: two hooks
        optimizer.update()
    assert len(optimizer.hooks) == 6


@pytest.mark.parametrize("make, says", [
    (lambda: O.SGD(lr=0.1, momentum=0.9),
     r"SGD got PyTorch's setting momentum=0.9: SGD with momentum is MomentumSGD\(lr=0.1, "
     r"momentum=0.9\)\. The settings of SGD are lr"),
    (lambda: O.SGD(lr=0.1, weight_decay=1e-4),
     r"weight_decay=0.0001: weight decay is a hook here: optimizer\.add_hook\(WeightDecay"
     r"\(0\.0001\)\) after setup"),
    (lambda: O.Adam(alpha=1e-3, betas=(0.9, 0.99)),
     r"betas=\(0.9, 0.99\): the betas are two settings here, beta1=0.9, beta2=0.99"),
    (lambda: O.Adam(weight_decay=1e-4), r"Adam got PyTorch's setting weight_decay=0.0001"),
    (lambda: O.MomentumSGD(lr=0.1, nesterov=True), r"nesterov=True: not available here"),
    (lambda: O.Adam(lr=1e-3, betas=(0.9, 0.99)),
     r"Adam's learning rate is alpha: write Adam\(alpha=0.001\).*beta1=0.9, beta2=0.99"),
])
def test_pytorchs_optimizer_settings_say_what_to_write(make, says):
    with pytest.raises(TypeError, match=says):
        make()


def test_the_settings_of_each_optimizer_and_of_subclasses_still_pass():
    assert O.MomentumSGD(lr=0.1, momentum=0.5).momentum == 0.5
    assert O.Adam(alpha=1e-3, beta1=0.8, beta2=0.9).beta2 == 0.9

    class Nesterov(O.MomentumSGD):  # a learner's optimizer that takes a PyTorch name itself
        def __init__(self, lr=0.01, momentum=0.9, nesterov=True):
            super().__init__(lr, momentum)
            self.nesterov = nesterov

    class Open(O.SGD):
        def __init__(self, lr=0.01, **extra):
            super().__init__(lr)
            self.extra = extra

    assert Nesterov(nesterov=False).nesterov is False
    assert Open(weight_decay=0.1).extra == {"weight_decay": 0.1}


# --- step 47: update() again without a backward ----------------------------------------------

def _train_step(model, optimizer, x, t, cleargrads=True):
    loss = F.mean_squared_error(model(x), t)
    if cleargrads:
        model.cleargrads()
    loss.backward()
    optimizer.update()


@pytest.mark.parametrize("make", [lambda: O.SGD(lr=0.1), lambda: O.MomentumSGD(lr=0.1),
                                  lambda: O.Adam()])
def test_update_again_without_a_backward_warns_that_it_repeats_the_step(make):
    np.random.seed(0)
    model = models.MLP((4, 1))
    x, t = np.random.randn(8, 3), np.random.randn(8, 1)
    optimizer = make().setup(model).add_hook(O.WeightDecay(1e-3))  # hooks make new gradients
    _train_step(model, optimizer, x, t)
    with pytest.warns(RuntimeWarning, match=r"update\(\) got the very gradients the previous "
                      r"update\(\) used: no backward\(\) ran since.*notebook cell"):
        optimizer.update()  # a cell with update() run again


def test_training_loops_stay_quiet_and_an_optimizer_can_still_be_copied():
    import copy
    import pickle

    np.random.seed(0)
    model = models.MLP((4, 1))
    x, t = np.random.randn(8, 3), np.random.randn(8, 1)
    optimizer = O.Adam().setup(model).add_hook(O.FreezeParam(model.l1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the forgotten cleargrads has its own warning (step 70, sweep 15), not this one
        warnings.filterwarnings("ignore", r".* is being updated with a gradient that a backward")
        for cleargrads in (True, True, False, False, True):  # cleargrads forgotten: accumulates
            _train_step(model, optimizer, x, t, cleargrads)
        for w in (1.0, 2.0):  # gradients set by hand, a new one each time
            for p in model.params():
                p.grad = Variable(np.full(p.shape, w, dtype=p.dtype))
            optimizer.update()
    twin = copy.deepcopy(optimizer)
    again = pickle.loads(pickle.dumps(optimizer))
    assert twin.hooks and again.hooks


# --- step 49: binary targets outside [0, 1] ---------------------------------------------------

@pytest.mark.parametrize("t, hint", [
    (np.array([[-1.0], [1.0], [1.0]]), r"Map them to 0 and 1 with \(t \+ 1\) / 2"),
    (np.array([[0], [1], [2]]), r"one logit per class and use softmax_cross_entropy"),
    (np.array([[0.5], [1.5], [0.0]]), r"Scale the targets into \[0, 1\]"),
])
def test_sigmoid_cross_entropy_refuses_targets_outside_0_1(t, hint):
    x = Variable(np.array([[1.5], [-0.5], [3.0]]))
    with pytest.raises(ValueError, match=r"sigmoid_cross_entropy needs targets t in \[0, 1\], "
                       r"got values from .*no minimum.*" + hint):
        F.sigmoid_cross_entropy(x, t)


def test_sigmoid_cross_entropy_of_targets_in_0_1_is_unchanged():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 2))
    for t in ((x > 0).astype(np.int64), rng.uniform(0, 1, (6, 2)), np.zeros((6, 2)),
              np.ones((6, 2), dtype=bool)):
        loss = F.sigmoid_cross_entropy(Variable(x), t)
        tf = np.asarray(t, dtype=np.float64)
        p = 1 / (1 + np.exp(-x))
        expected = -(tf * np.log(p) + (1 - tf) * np.log(1 - p)).sum() / len(x)
        np.testing.assert_allclose(loss.data, expected, rtol=1e-12)


# --- step 63: PyTorch's keyword arguments to the layers --------------------------------------

@pytest.mark.parametrize("make, says", [
    (lambda: L.Linear(10, bias=False), r"Linear got PyTorch's keyword argument bias=False: "
                                       r"write nobias=True"),
    (lambda: L.Linear(10, in_features=784), r"in_features=784: write in_size=784"),
    (lambda: L.Conv2d(16, 3, padding=1), r"Conv2d got PyTorch's keyword argument padding=1: "
                                         r"write pad=1$"),
    (lambda: L.Conv2d(16, 3, padding="same"), r"write pad=kernel_size // 2"),
    (lambda: L.Conv2d(16, 3, bias=False, dilation=2),
     r"keyword arguments bias=False: write nobias=True; dilation=2: not available here"),
    (lambda: L.Deconv2d(8, 4, stride=2, padding=1, output_padding=1),
     r"Deconv2d got .*padding=1: write pad=1; output_padding=1: outsize=\(H, W\)"),
    (lambda: L.BatchNorm(momentum=0.1), r"momentum=0.1: write decay=0.9: decay is the weight of "
                                        r"the old running statistics"),
    (lambda: L.BatchNorm(num_features=16), r"BatchNorm takes the number of channels from the "
                                           r"first batch"),
    (lambda: L.EmbedID(num_embeddings=100, embedding_dim=8),
     r"num_embeddings=100: write in_size=100.*embedding_dim=8: write out_size=8"),
    (lambda: L.RNN(hidden_size=20, input_size=1), r"RNN got .*input_size=1: write in_size=1"),
    (lambda: L.LSTM(20, batch_first=True), r"LSTM got .*batch_first=True: the layer takes one "
                                           r"time step"),
])
def test_pytorchs_layer_arguments_say_what_to_write(make, says):
    with pytest.raises(TypeError, match=says):
        make()


def test_layers_made_with_their_own_names_and_subclasses_are_unchanged():
    import inspect

    x = np.ones((2, 3, 8, 8), dtype=np.float32)
    assert L.Conv2d(4, 3, pad=1, nobias=True)(x).shape == (2, 4, 8, 8)
    assert L.BatchNorm(decay=0.8, eps=1e-5).decay == 0.8
    assert L.Linear(5, nobias=True, in_size=3).b is None
    assert L.EmbedID(10, 3)(np.array([1, 2])).shape == (2, 3)
    assert list(inspect.signature(L.Linear).parameters) == ["out_size", "nobias", "dtype",
                                                            "in_size"]

    class BiasLinear(L.Linear):  # a learner's layer that takes PyTorch's bias= itself
        def __init__(self, out_size, bias=True):
            super().__init__(out_size, nobias=not bias)

    assert BiasLinear(4, bias=False).b is None



# --- step 51: per-channel statistics after Flatten ---------------------------------------------

@pytest.mark.parametrize("shape", [(3072,), (32, 32), (1, 3, 32, 32)])
def test_channel_statistics_on_a_flat_or_batched_example_say_to_normalise_before_flatten(shape):
    from dezero_like import transforms as T

    f = T.Compose([T.Normalize([0.49, 0.48, 0.45], [0.25, 0.24, 0.26])])
    with pytest.raises(ValueError, match=r"3 values, one per channel, do not fit an example of "
                       r"shape .*Put Normalize before Flatten.*one example, not a batch"):
        f(np.ones(shape, dtype=np.float32))


def test_statistics_that_pair_with_the_last_axis_still_normalise_per_feature():
    from dezero_like import transforms as T

    x = np.array([[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]], dtype=np.float32)
    out = T.Normalize([1.0, 2.0, 3.0], [2.0, 2.0, 2.0])(x)
    np.testing.assert_allclose(out, (x - [1.0, 2.0, 3.0]) / 2.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(T.Normalize([0.5], [0.5])(np.ones(4)), np.ones(4))
    image = np.ones((3, 4, 4), dtype=np.float32)  # channels first: unchanged
    np.testing.assert_allclose(T.Normalize([0.0, 1.0, 0.5], 0.5)(image)[:, 0, 0], [2.0, 0.0, 1.0])


# --- steps 45 and 58: integer weights ---------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: L.Linear(10, dtype=int),
                                  lambda: L.Linear(10, in_size=3, dtype=np.int32),
                                  lambda: L.Conv2d(8, 3, dtype=np.uint8),
                                  lambda: L.Deconv2d(8, 3, dtype=bool),
                                  lambda: L.EmbedID(100, 8, dtype=np.int64)])
def test_a_layer_with_integer_weights_is_refused_when_made(make):
    with pytest.raises(TypeError, match=r"dtype must be a floating dtype .*got (int|uint|bool).*"
                       r"could not be trained"):
        make()


def test_floating_weights_keep_their_dtype():
    assert L.Linear(3, in_size=2, dtype="float64").W.dtype == np.float64
    assert L.Conv2d(2, 3, in_channels=1, dtype=np.float16).W.dtype == np.float16
    assert L.EmbedID(5, 2).W.dtype == np.float32


# --- step 39: axes that are no order of the input's axes --------------------------------------

@pytest.mark.parametrize("axes, says", [
    ((1, 0), r"axes \(1, 0\) do not fit an input of shape \(2, 3, 4\): they are the new order of "
             r"all 3 axes.*to swap axes 1 and 0 \(PyTorch's transpose\), write "
             r"transpose\(x, \(1, 0, 2\)\)"),
    ((0, 3, 1), r"axes \(0, 3, 1\) do not fit .*each of 0 \.\. 2 once \(\(2, 1, 0\) reverses"),
    ((0, 0, 1), r"axes \(0, 0, 1\) do not fit"),
])
def test_transpose_with_axes_that_are_no_order_says_what_axes_must_be(axes, says):
    x = Variable(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"transpose: " + says):
        F.transpose(x, axes)


def test_transpose_with_an_order_of_all_axes_is_unchanged():
    x = Variable(np.arange(24.0).reshape(2, 3, 4))
    y = F.transpose(x, (-1, 0, 1))
    np.testing.assert_array_equal(y.data, x.data.transpose(2, 0, 1))
    F.sum(y * np.arange(24.0).reshape(4, 2, 3)).backward()
    np.testing.assert_array_equal(x.grad.data, np.arange(24.0).reshape(4, 2, 3).transpose(1, 2, 0))


# --- step 25: broadcast_to a shape the input cannot reach -------------------------------------

@pytest.mark.parametrize("shape, target", [((2, 3, 4), (3, 4)), ((2, 3), (3, 3))])
def test_broadcast_to_an_unreachable_shape_states_the_rule(shape, target):
    with pytest.raises(ValueError, match=r"broadcast_to: an input of shape .* cannot be broadcast "
                       r"to .*each axis of the input must be 1 or the target's length.*sum_to"):
        F.broadcast_to(Variable(np.zeros(shape)), target)


def test_broadcast_to_a_reachable_shape_is_unchanged():
    x = Variable(np.arange(3.0).reshape(3, 1))
    y = F.broadcast_to(x, (2, 3, 4))
    np.testing.assert_array_equal(y.data, np.broadcast_to(x.data, (2, 3, 4)))
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad.data, np.full((3, 1), 8.0))


def test_a_pytorch_setting_with_a_fix_is_named_once():
    """Adam(lr=..., betas=...) named betas twice: as no setting of Adam, then with its fix."""
    with pytest.raises(TypeError) as error:
        O.Adam(lr=0.1, betas=(0.9, 0.99))
    said = str(error.value)
    assert "write Adam(alpha=0.1)" in said and "beta1=0.9, beta2=0.99" in said
    assert said.count("betas") == 2 and "not a setting" not in said, said
