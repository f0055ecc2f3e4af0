"""Eighth sweep: learner mistakes that trained a model wrongly without a word, or failed with an
error that did not say what was wrong.

* a DataLoader over items of another length than two: (x, t, w) lost w, (x,) gave an IndexError;
* ``ToInt`` cut fractional labels (1.9 became 1) and wrapped -1 to 255 in uint8;
* a Layer whose ``forward`` made its Parameter (or sub-layer) anew on every call never learned;
* ``optimizer.setup(model_a); optimizer.setup(model_b)`` left model_a untrained;
* ``plot_dot_graph(y, to_file="graph.dot")`` said it could not tell the image format;
* ``x.data = 3`` (or a list) by hand gave "'int' object has no attribute 'dtype'".
"""

import warnings

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import DataLoader, graph, models, optimizers, transforms

# ---- DataLoader: every item is an (x, t) pair ------------------------------------------------


def test_an_item_with_a_third_value_is_refused_not_cut_to_two():
    items = [(np.zeros(2), 0), (np.ones(2), 1), (np.ones(2), 1, 0.5)]  # a weight on the last
    with pytest.raises(ValueError, match=r"list\[2\] is a tuple of 3 values.*the 1 after them "
                                         r"would be dropped"):
        next(iter(DataLoader(items, 3, shuffle=False)))


def test_an_item_without_its_label_is_named_and_the_unlabelled_form_given():
    items = [(np.zeros(2), 0), (np.ones(2),)]
    with pytest.raises(ValueError, match=r"list\[1\] is a tuple of 1 value:.*\(x, None\)"):
        next(iter(DataLoader(items, 2, shuffle=False)))


def test_pairs_and_unlabelled_pairs_still_load():
    x, t = next(iter(DataLoader([(np.zeros(2), 0), [np.ones(2), 1]], 2, shuffle=False)))
    assert x.shape == (2, 2) and t.tolist() == [0, 1]
    x, t = next(iter(DataLoader([(np.zeros(2), None)] * 3, 3)))
    assert x.shape == (3, 2) and t is None


# ---- ToInt: no silent truncation or wrap-around ---------------------------------------------

@pytest.mark.parametrize("value, dtype, message", [
    (1.9, np.int64, r"ToInt got 1\.9, which is not a whole number: int64 would hold 1"),
    (np.array([0.0, np.nan]), np.int64, r"ToInt got nan, which is not a whole number"),
    (-1, np.uint8, r"ToInt\(uint8\) got -1, outside uint8's range \[0, 255\]"),
    (300.0, np.uint8, r"ToInt\(uint8\) got 300\.0, outside uint8's range"),
])
def test_toint_refuses_values_its_dtype_would_change(value, dtype, message):
    with pytest.raises(ValueError, match=message):
        transforms.ToInt(dtype)(value)


@pytest.mark.parametrize("value, dtype", [
    (np.array([2.0 ** 63]), np.int64),  # == float(2**63 - 1): cast, it wrapped to -2**63
    (np.array([2.0 ** 64]), np.uint64),  # wrapped to 0
    (np.array([2.0 ** 31], dtype=np.float32), np.int32),  # float32(2**31 - 1) is 2**31 too
])
def test_toint_refuses_whole_floats_one_past_the_largest_integer(value, dtype):
    with pytest.raises(ValueError, match=r"outside .*'s range"):
        transforms.ToInt(dtype)(value)


def test_toint_suggests_int64_only_when_int64_would_hold_the_value():
    with pytest.raises(ValueError, match=r"got 1\.8446744073709552e\+19, .*Are these labels"):
        transforms.ToInt(np.uint64)(np.array([2.0 ** 64]))  # int64 is no wider than uint64
    with pytest.raises(ValueError, match=r"got -1, .*e\.g\. ToInt\(\) \(int64\)"):
        transforms.ToInt(np.uint64)(np.array([-1]))


def test_toint_keeps_the_extremes_of_the_range():
    assert transforms.ToInt()(np.array([-2.0 ** 63])).tolist() == [-2 ** 63]
    assert transforms.ToInt(np.int32)(np.array([2.0 ** 31 - 1])).tolist() == [2 ** 31 - 1]
    assert transforms.ToInt(np.uint64)(np.array([2 ** 64 - 1], np.uint64)).tolist() == [2 ** 64 - 1]
    assert transforms.ToInt()(np.array([True, False])).tolist() == [1, 0]


def test_toint_still_converts_whole_numbers_and_empty_arrays():
    out = transforms.ToInt()(np.array([0.0, 2.0, 1.0], dtype=np.float32))
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 1]
    assert transforms.ToInt(np.uint8)(np.array(255)).dtype == np.uint8
    assert transforms.ToInt()(np.array([])).shape == (0,)


# ---- a forward that makes its weights anew on every call ---------------------------------------

class _NewWeightEachCall(L.Layer):
    def forward(self, x):
        self.W = dz.Parameter(np.random.randn(x.shape[1], 1))
        return F.matmul(x, self.W)


class _NewLayerEachCall(models.Model):
    def forward(self, x):
        self.l1 = L.Linear(1)
        return self.l1(x)


class _LazyWeight(L.Layer):
    def __init__(self):
        super().__init__()
        self.W = dz.Parameter(None)

    def forward(self, x):
        if self.W.data is None:  # made once, on the first call: fine
            self.W = dz.Parameter(np.ones((x.shape[1], 1)))
        return F.matmul(x, self.W)


@pytest.mark.parametrize("make, what", [(_NewWeightEachCall, r"self\.W, .* new Parameter"),
                                        (_NewLayerEachCall, r"self\.l1, .* new Linear")])
def test_a_forward_that_replaces_its_weights_warns_on_the_second_call(make, what):
    np.random.seed(0)
    layer, x = make(), np.ones((4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(x)  # the first call creates: quiet
    with pytest.warns(RuntimeWarning, match=what + r".*never learns") as record:
        layer(x)
    assert record[0].filename == __file__  # points at the forward's line


def test_lazy_weights_and_replacing_weights_outside_forward_stay_quiet():
    layer = _LazyWeight()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(np.ones((2, 3)))
        layer(np.ones((2, 3)))
        layer.W = dz.Parameter(np.zeros((3, 1)))  # porting weights by hand
        assert float(layer(np.ones((1, 3))).data.sum()) == 0.0


class _RemadeForANewSize(L.Layer):
    def __init__(self):
        super().__init__()
        self.W = dz.Parameter(None)

    def forward(self, x):
        if self.W.data is None or self.W.shape[0] != x.shape[1]:  # adapts to the input's size
            self.W = dz.Parameter(np.ones((x.shape[1], 2)))
        return F.matmul(x, self.W)


class _TiedInForward(models.Model):
    def __init__(self):
        super().__init__()
        self.enc = L.Linear(3, in_size=3)
        self.W = dz.Parameter(np.ones((3, 3)))

    def forward(self, x):
        self.W = self.enc.W  # ties W to a weight the model already holds
        return F.matmul(x, self.W)


def test_weights_made_again_for_a_new_input_size_or_tied_in_forward_stay_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer = _RemadeForANewSize()
        layer(np.ones((2, 3)))
        layer(np.ones((2, 3)))
        layer(np.ones((2, 5)))  # another size: made again on purpose, not a new one per call
        assert layer.W.shape == (5, 2)
        model = _TiedInForward()
        model(np.ones((2, 3)))
        model(np.ones((2, 3)))
        assert model.W is model.enc.W


# ---- one optimizer set up for two models -----------------------------------------------------

def test_setup_of_a_second_model_before_any_update_warns():
    np.random.seed(0)
    a, b = models.MLP((3, 1)), models.MLP((3, 1))
    opt = optimizers.SGD().setup(a)
    with pytest.warns(UserWarning, match=r"second model \(MLP\) before any update.*own optimizer"):
        opt.setup(b)
    assert opt.target is b


def test_setup_again_of_the_same_model_a_part_of_it_or_after_training_is_quiet():
    np.random.seed(0)
    a, b = models.MLP((3, 1)), models.MLP((3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = optimizers.Adam().setup(a)
        opt.setup(a)
        opt.setup(a.l0)  # fine-tuning one layer
        opt.setup(a)
        F.sum(a(np.ones((2, 2)))).backward()
        opt.update()
        opt.setup(b)  # a new model after training the old one (a notebook cell run again)


def test_a_model_set_up_after_training_another_and_left_untrained_still_warns():
    np.random.seed(0)
    a, b, c = models.MLP((3, 1)), models.MLP((3, 1)), models.MLP((3, 1))
    opt = optimizers.SGD().setup(a)
    F.sum(a(np.ones((2, 2)))).backward()
    opt.update()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.setup(b)  # after training a: fine
        opt.setup(b)  # the same model again: fine
    with pytest.warns(UserWarning, match=r"second model \(MLP\) before any update"):
        opt.setup(c)  # b was never updated: a's update no longer counts


# ---- plot_dot_graph's file name ----------------------------------------------------------------

@pytest.mark.parametrize("name, message", [
    ("graph.dot", r"'graph\.dot' names DOT text.*get_dot_graph\(y\)"),
    ("graph.jpg", r"cannot draw 'graph\.jpg': \.jpg is not one of the image formats"),
    ("graph", r"cannot tell the image format from 'graph', which has no extension"),
])
def test_plot_dot_graph_says_why_a_file_name_is_refused(name, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    y = F.sum(dz.Variable(np.ones(3)) * 2)
    with pytest.raises(ValueError, match=message + r".*\.png, \.svg or \.pdf"):
        graph.plot_dot_graph(y, to_file=name)
    assert list(tmp_path.iterdir()) == []


# ---- .data that is not an array -------------------------------------------------------------

@pytest.mark.parametrize("data, op, message", [
    (3, F.sin, r"Sin got a Variable whose \.data is an int, not an array: .*x\.data = 3"),
    ([1.0, 2.0], lambda x: x * 2,
     r"Mul got a Variable whose \.data is a list.*x\.data = \[1\.0, 2\.0\]"),
    ([1.0, 2.0], lambda x: x + x, r"Add got a Variable whose \.data is a list"),
    (None, F.exp, r"Exp got a Variable whose \.data is a NoneType.*\.data is None"),
])
def test_data_set_by_hand_to_something_else_than_an_array_is_named(data, op, message):
    x = dz.Variable(np.array([1.0, 2.0]))
    x.data = data
    with pytest.raises(TypeError, match=message):
        op(x)
    with dz.no_grad(), pytest.raises(TypeError, match=message):
        op(x)


def test_a_numpy_scalar_left_by_the_books_update_still_computes():
    x = dz.Variable(np.array(2.0))
    x.data = x.data - np.float64(0.5)  # a 0-d array minus a scalar gives np.float64
    assert isinstance(x.data, np.float64)
    np.testing.assert_allclose(F.sin(x).data, np.sin(1.5))


class _SwapsInForward(models.Model):
    def __init__(self):
        super().__init__()
        self.a = L.Linear(3, in_size=3)
        self.b = L.Linear(3, in_size=3)

    def forward(self, x):
        self.a, self.b = self.b, self.a  # the second assignment finds `a` held by nobody
        return self.b(self.a(x))


def test_sub_layers_swapped_in_forward_stay_quiet():
    model = _SwapsInForward()
    a, b = model.a, model.b
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(np.ones((2, 3)))
        model(np.ones((2, 3)))
    assert (model.a, model.b) == (a, b)
    assert len(list(model.params())) == 4
