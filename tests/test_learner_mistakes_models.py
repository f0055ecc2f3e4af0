"""Learner mistakes with models, layers, optimizers and data sets: each is either made to work
or refused with a message that says what to write instead (steps 45, 46, 47, 51, 61)."""

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
import dezero_like.optimizers as O
from dezero_like import datasets
from dezero_like.datasets_seq import get_sin_curve
from dezero_like.models import MLP, Sequential


def _batch():
    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 3)).astype(np.float32), np.array([0, 1] * 4)


# ---- step 46: a layer replaced after construction is the one used everywhere ---------------
@pytest.mark.parametrize("make, name", [
    (lambda: MLP((5, 2)), "l1"),
    (lambda: Sequential(L.Linear(5), F.relu, L.Linear(2)), "l2"),
])
def test_replaced_layer_is_used_by_forward_params_and_save(make, name, tmp_path):
    np.random.seed(0)
    x, t = _batch()
    model = make()
    model(x)
    head = L.Linear(2, in_size=5)
    setattr(model, name, head)  # fine-tuning: a new head
    assert model.layers[-1] is head  # what readers see is what forward runs
    opt = O.SGD(0.5).setup(model)
    loss = F.softmax_cross_entropy(model(x), t)
    model.cleargrads()
    loss.backward()
    assert head.W.grad is not None, "forward did not use the replacing layer"
    opt.update()
    np.testing.assert_allclose(model(x).data, head(_body(model, x)).data, rtol=1e-6)
    model.save_weights(tmp_path / "m.npz")
    saved = np.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(saved[f"{name}/W"], head.W.data)


def _body(model, x):
    """The output of everything before the last layer."""
    for f in model.layers[:-1]:
        x = f(x)
        if isinstance(model, MLP):
            x = model.activation(x)
    return x


def test_replaced_layer_changes_the_output_shape():
    x, _ = _batch()
    seq = Sequential(L.Linear(5), F.relu, L.Linear(2))
    seq(x)
    seq.l2 = L.Linear(3)
    assert seq(x).shape == (8, 3)
    mlp = MLP((5, 2))
    mlp(x)
    mlp.l1 = L.Linear(4)
    assert mlp(x).shape == (8, 4)
    assert len(mlp.layers) == 2 and len(seq.layers) == 3


def test_setup_does_not_blame_the_layers_list_after_a_replacement():
    x, _ = _batch()
    model = MLP((5, 2))
    model(x)
    model.l1 = L.Linear(2, in_size=5)
    seq = Sequential(L.Linear(5), F.relu, L.Linear(2))
    seq.l0 = L.Linear(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        O.SGD().setup(model)
        O.SGD().setup(seq)


@pytest.mark.parametrize("sizes", [10, 10.0, "10", (10, "1"), (10, 1.5)])
def test_mlp_refuses_sizes_that_are_not_a_tuple_of_ints(sizes):
    with pytest.raises(TypeError, match=r"tuple or list of ints.*MLP\(\(10, 1\)\)"):
        MLP(sizes)


# ---- step 51: data and label of different lengths -------------------------------------------
@pytest.mark.parametrize("n_data, n_label", [(10, 8), (8, 10)])
def test_dataset_refuses_data_and_label_of_different_lengths(n_data, n_label):
    class Bad(datasets.Dataset):
        def prepare(self):
            self.data = np.zeros((n_data, 2), np.float32)
            self.label = np.arange(n_label)

    with pytest.raises(ValueError, match=f"{n_data} examples.*{n_label} labels"):
        Bad()


def test_dataset_without_labels_is_not_checked():
    class Unlabelled(datasets.Dataset):
        def prepare(self):
            self.data = np.zeros((4, 2), np.float32)

    assert len(Unlabelled()) == 4


# ---- step 61: train must be a bool ---------------------------------------------------------
def test_get_sin_curve_refuses_a_string_for_train():
    with pytest.raises(TypeError, match="train must be True or False, got 'False'"):
        get_sin_curve(train="False")
    with pytest.raises(TypeError, match="train must be True or False"):
        datasets.SinCurve(train="test")
    x, _ = get_sin_curve(train=False)
    assert x[0, 0] == pytest.approx(1.0)  # the test curve is the cosine


# ---- step 45: Linear's hints for a single example and for images ----------------------------
@pytest.mark.parametrize("trained", [True, False])
def test_linear_hints_for_one_example_and_for_images(trained):
    layer = L.Linear(2)
    if trained:
        layer(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"x\.reshape\(1, -1\)") as info:
        layer(np.ones(4, np.float32))
    assert "flatten" not in str(info.value)
    with pytest.raises(ValueError, match=r"F\.flatten\(x\).*reshape\(len\(x\), -1\)"):
        layer(np.ones((3, 2, 2), np.float32))


def test_linear_width_mismatch_hint_names_the_layer_before():
    layer = L.Linear(2)
    layer(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="output size of the layer before it") as info:
        layer(np.ones((3, 5), np.float32))
    assert "reshape(1, -1)" not in str(info.value)


# ---- step 45: in-place arithmetic on a Parameter --------------------------------------------
@pytest.mark.parametrize("op", ["-=", "+=", "*=", "/=", "**=", "@="])
def test_parameter_in_place_arithmetic_is_refused(op):
    p = dz.Parameter(np.ones(2))
    before = p
    with pytest.raises(TypeError, match=r"p\.data -= lr \* p\.grad\.data"):
        exec(f"p {op} 0.1", {}, {"p": p})
    assert before.data.tolist() == [1.0, 1.0]


def test_manual_update_loop_tells_how_to_write_it():
    x, _ = _batch()
    model = MLP((5, 1))
    F.sum(model(x)).backward()
    with pytest.raises(TypeError, match="rebind"):
        for p in model.params():
            p -= 0.1 * p.grad


def test_in_place_arithmetic_on_variables_still_works():
    total = dz.Variable(np.array(0.0))
    total += dz.Variable(np.array(2.0))
    total *= 3
    assert float(total.data) == 6.0
    s = 0.0
    s += dz.Parameter(np.array(1.5))  # a Parameter on the right is fine
    assert float(s.data) == 1.5


# ---- step 47: PyTorch's way of making an optimizer ------------------------------------------
def test_optimizer_given_the_parameters_says_to_use_setup():
    x, _ = _batch()
    model = MLP((5, 1))
    model(x)
    with pytest.raises(TypeError, match=r"SGD\(lr=0\.1\)\.setup\(model\)"):
        O.SGD(model.params(), lr=0.1)
    with pytest.raises(TypeError, match=r"SGD\(lr=0\.01\)\.setup\(model\)"):
        O.SGD(model)
    with pytest.raises(TypeError, match=r"Adam\(alpha=0\.001\)\.setup\(model\)"):
        O.Adam(model.params(), lr=0.001)
    with pytest.raises(TypeError, match=r"MomentumSGD\(0\.1, 0\.9\)\.setup\(model\)"):
        O.MomentumSGD(list(model.params()), 0.1, 0.9)


def test_adam_lr_keyword_says_alpha():
    with pytest.raises(TypeError, match=r"Adam\(alpha=0\.001\)"):
        O.Adam(lr=1e-3)
    with pytest.raises(TypeError, match="AdaDelta has no learning rate"):
        O.AdaDelta(lr=1.0)


def test_book_optimizer_signatures_still_work():
    assert O.SGD(0.1).lr == 0.1 and O.SGD(lr=0.2).lr == 0.2
    assert O.MomentumSGD(0.1, 0.8).momentum == 0.8
    assert O.Adam(0.01).alpha == 0.01 and O.Adam(alpha=0.02).alpha == 0.02
    assert O.AdaGrad(0.3).lr == 0.3 and O.AdaDelta(0.9).rho == 0.9
    with pytest.raises(TypeError, match="lr must be a number"):
        O.SGD("0.1")


def test_optimizer_subclasses_taking_a_list_still_work_and_torch_settings_are_named():
    class Schedule(O.SGD):
        def __init__(self, lrs):
            super().__init__(lrs[0])
            self.lrs = lrs

    assert Schedule([0.1, 0.01]).lr == 0.1
    model = MLP((3, 1))
    model(np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"write SGD\(lr=0\.1\)\.setup\(model\).*\(momentum=0\.9: "
                       r"SGD with momentum is MomentumSGD"):
        O.SGD(model.params(), lr=0.1, momentum=0.9)
    with pytest.raises(TypeError, match=r"write SGD\(lr=0\.1\)\.setup\(model\).*\(foo: "
                       r"not a setting of SGD"):
        O.SGD(model.params(), lr=0.1, foo=0.9)
    with pytest.raises(TypeError, match=r"write SGD\(lr=0\.1\)\.setup"):
        O.SGD([{"params": list(model.params())}], lr=0.1)  # PyTorch's parameter groups


def test_mlp_takes_any_sequence_of_sizes_and_layers_is_a_read_only_view_that_can_be_assigned():
    x = np.ones((4, 5))
    assert MLP(range(3, 5))(x).shape == (4, 4)
    assert MLP(np.array([10, 1]))(x).shape == (4, 1)
    seq = Sequential(L.Linear(3), F.relu, L.Linear(2))
    with pytest.raises(AttributeError):
        seq.layers.append(L.Linear(7))  # a tuple: editing a copy would change nothing

    class Custom(Sequential):
        def __init__(self):
            super().__init__()
            self.layers = [L.Linear(3), F.relu, L.Linear(2)]  # the book's style still works

    model = Custom()
    assert model(x).shape == (4, 2) and len(list(model.params())) == 4
    model.layers = [L.Linear(7)]  # the old layers are unregistered
    assert model(x).shape == (4, 7) and len(list(model.params())) == 2
