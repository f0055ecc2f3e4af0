"""Learner mistakes in the training loop that used to give silently wrong numbers.

* Predictions collected over a test set through a ``DataLoader`` were compared with the labels
  in their stored order while the loader shuffled them (an accuracy near chance, no error).
* A custom ``backward`` that zeroed its gradient in place (``gy.data[~mask] = 0``) changed the
  gradient of every other branch that shared that object.
* ``Sequential([layers])`` (PyTorch's ModuleList habit) got a message that did not say how.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like import DataLoader, Function, Variable
from dezero_like.datasets import Dataset, Spiral
from dezero_like.models import Sequential


# ---- DataLoader: a test set is read in order ---------------------------------------------
def test_a_test_set_is_read_in_order_so_collected_predictions_line_up_with_its_labels():
    test = Spiral(train=False)
    np.random.seed(0)
    seen = np.concatenate([t for _, t in DataLoader(test, 100)])
    assert np.array_equal(seen, test.label)  # shuffled, 1/3 would match: an accuracy of 0.33
    assert DataLoader(test, 100).shuffle is False


def test_a_training_set_is_still_shuffled_as_in_the_book_and_shuffle_is_obeyed():
    train = Spiral(train=True)
    np.random.seed(0)
    assert DataLoader(train, 100).shuffle is True
    seen = np.concatenate([t for _, t in DataLoader(train, 100)])
    assert not np.array_equal(seen, train.label)
    assert DataLoader(Spiral(train=False), 10, shuffle=True).shuffle is True
    assert DataLoader(train, 10, shuffle=False).shuffle is False


def test_a_data_set_without_a_train_flag_is_shuffled_and_shuffle_must_be_a_bool():
    class Plain:  # not a Dataset: no train attribute
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return np.array([float(i)]), i

    assert DataLoader(Plain(), 2).shuffle is True

    class Tagged(Dataset):
        def prepare(self):
            self.data, self.label = np.zeros((4, 1)), np.zeros(4, int)

    assert DataLoader(Tagged(train=False), 2).shuffle is False
    with pytest.raises(TypeError, match="shuffle must be None, True or False"):
        DataLoader(Plain(), 2, shuffle="no")


# ---- custom backward: the gradients it is handed are read-only while it runs -------------
class InPlaceReLU(Function):  # the hand-written habit: dout[mask] = 0
    def forward(self, x):
        self.mask = x > 0
        return np.maximum(x, 0)

    def backward(self, gy):
        gy.data[~self.mask] = 0
        return gy


class NewArrayReLU(Function):
    def forward(self, x):
        self.mask = x > 0
        return np.maximum(x, 0)

    def backward(self, gy):
        return gy * self.mask


def _relu_plus_identity(relu):
    x = Variable(np.array([[-1.0, 2.0, -3.0]]))
    h = x * 1.0
    (relu()(h) + h).backward(gradient=np.ones((1, 3)))
    return x.grad.data


def test_a_backward_that_changes_its_shared_gradient_in_place_is_stopped_with_the_fix():
    """Before: x.grad was [[0, 2, 0]] (the + branch zeroed too); PyTorch and F.relu: [[1, 2, 1]]."""
    with pytest.raises(ValueError, match=r"InPlaceReLU.backward wrote into an array it may not "
                       r"change.*shared.*x0 \+ x1.*gx = gy \* self.mask"):
        _relu_plus_identity(InPlaceReLU)
    np.testing.assert_array_equal(_relu_plus_identity(NewArrayReLU), [[1.0, 2.0, 1.0]])


def test_a_read_only_seed_gets_the_same_message_and_arrays_are_writable_again_after():
    x = Variable(np.array([-1.0, 2.0]))
    with pytest.raises(ValueError, match="may not change.*Make a new array"):
        F.sum(InPlaceReLU()(x)).backward()  # sum's backward hands out a read-only view
    seed = np.ones(2)
    y = NewArrayReLU()(x)
    y.backward(gradient=seed)
    assert seed.flags.writeable  # the guard gives the flag back
    np.testing.assert_array_equal(x.grad.data, [0.0, 1.0])


def test_only_functions_written_outside_the_package_are_guarded_once():
    assert not getattr(F.ReLU.backward, "_guarded", False)  # the package pays nothing
    assert NewArrayReLU.backward._guarded and NewArrayReLU.backward.__name__ == "backward"

    class Child(NewArrayReLU):  # inherits the guarded backward: not wrapped twice
        pass

    assert Child.backward is NewArrayReLU.backward

    class Square(Function):  # x * x style: one variable in two slots (backward_accumulate)
        def forward(self, a, b):
            return a * b

        def backward(self, gy):
            a, b = self.inputs
            return gy * b, gy * a

    x = Variable(np.array([3.0]))
    Square()(x, x).backward()
    np.testing.assert_array_equal(x.grad.data, [6.0])


# ---- Sequential([...]) -----------------------------------------------------------------
def test_sequential_given_a_list_says_to_unpack_it():
    with pytest.raises(TypeError, match=r"Sequential item 0 is a list.*Sequential\(\*layers\)"):
        Sequential([L.Linear(3), F.relu])
    model = Sequential(*[L.Linear(3), F.relu])
    assert model(np.ones((2, 4))).shape == (2, 3)


def test_training_with_a_guarded_function_learns_as_with_the_package_relu():
    """The guard changes no number: a model with a hand-written ReLU trains as with F.relu."""
    def run(act):
        np.random.seed(0)
        model = Sequential(L.Linear(8), act, L.Linear(1))
        opt = dz.optimizers.SGD(lr=0.1).setup(model)
        x = np.random.rand(32, 2)
        y = x.sum(axis=1, keepdims=True)
        for _ in range(20):
            loss = F.mean_squared_error(model(x), y)
            model.cleargrads()
            loss.backward()
            opt.update()
        return float(loss.data)

    assert run(lambda v: NewArrayReLU()(v)) == run(F.relu)


# ---- F.mean of float16 ---------------------------------------------------------------------
def test_the_mean_of_many_float16_numbers_is_computed_in_float32_as_numpy_does():
    """200704 float16 elements (a 28x28 feature map of 256 images): the count is above 65504,
    float16's largest number, so dividing by it in float16 gave 0 (PyTorch and NumPy: 0.01)."""
    data = np.full(200704, 0.01, np.float16)
    v = Variable(data)
    m = F.mean(v)
    assert m.dtype == np.float16
    np.testing.assert_allclose(float(m.data), np.mean(data), rtol=1e-3)
    m.backward()
    assert v.grad.dtype == np.float16
    np.testing.assert_allclose(v.grad.data.astype(np.float64), 1 / data.size, rtol=1e-2)
    small = Variable(np.arange(6, dtype=np.float16).reshape(2, 3))
    np.testing.assert_array_equal(F.mean(small, axis=1).data, np.mean(small.data, axis=1))


def test_np_sum_of_a_variable_says_what_to_write():
    """np.sum(v) calls v.sum(axis=None, dtype=None, out=None): it said "unexpected keyword
    argument 'out'"."""
    v = Variable(np.arange(3.0))
    with pytest.raises(TypeError, match=r"np.sum\(v\) on a Variable.*F.sum\(v\).*np.sum\(v.data\)"):
        np.sum(v)
    assert float(v.sum().data) == 3.0 and v.sum(axis=0, keepdims=True).shape == (1,)
    assert float(np.sum(v.data)) == 3.0
    with pytest.raises(TypeError, match=r"Variable.sum got PyTorch's keyword arguments dim=0: "
                       r"write axis=0.*keepdim=True: write keepdims=True"):
        v.sum(dim=0, keepdim=True)  # PyTorch's names


def test_an_unsigned_output_is_seeded_in_float64_so_negative_gradients_do_not_wrap():
    x = Variable(np.array([3, 4], np.uint8))
    (-x).backward()
    np.testing.assert_array_equal(x.grad.data, [-1.0, -1.0])  # uint8 ones gave 255
    i = Variable(np.array([3, 4]))
    (i * 2).backward()
    assert i.grad.dtype == np.int64 and i.grad.data.tolist() == [2, 2]  # signed: unchanged


def test_weights_ported_from_torch_without_a_transpose_are_named_as_such():
    """torch.nn.Linear keeps (out, in); here W is (in, out). The message blamed the layer
    before."""
    layer = L.Linear(3, in_size=5)
    layer.W.data = np.ones((3, 5))  # a torch weight, copied without .T
    with pytest.raises(ValueError, match=r"PyTorch stores it, \(out_size, in_size\).*W\.T") as e:
        layer(np.ones((2, 5)))
    assert "layer before it" not in str(e.value)
    with pytest.raises(ValueError, match="W.T"):
        F.linear(np.ones((2, 5)), np.ones((3, 5)))
    with pytest.raises(ValueError, match="layer before it") as e:  # a plain width mismatch
        L.Linear(3, in_size=5)(np.ones((2, 4)))
    assert "PyTorch" not in str(e.value)


def test_the_guard_gives_back_gradients_that_are_views_of_each_other():
    """reshape(a) + b: Add hands one gradient to both, and Reshape's backward hands a view of it
    to a. Restoring the view before its base raised NumPy's "cannot set WRITEABLE flag"."""
    class Two(Function):
        def forward(self, x):
            return x * 1.0, (x * 2.0).reshape(2, 3)

        def backward(self, g0, g1):
            return g0 + g1.reshape(g0.shape) * 2.0

    x = Variable(np.arange(6.0))
    a, b = Two()(x)
    F.sum((F.reshape(a, (2, 3)) + b) * np.ones((2, 3))).backward(retain_grad=True)
    np.testing.assert_array_equal(x.grad.data, np.full(6, 3.0))
    assert b.grad.data.flags.writeable


def test_the_guard_keeps_mixins_and_static_backwards_working_and_says_it_once():
    registry = []

    class Registered:
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            registry.append(cls.__name__)

    class Mixed(Function, Registered):
        def forward(self, x):
            return x * 2

        def backward(self, gy):
            return gy * 2

    assert registry == ["Mixed"]

    class Static(Function):
        def forward(self, x):
            return x * 3

        @staticmethod
        def backward(gy):
            return gy * 3

    x = Variable(np.ones(2))
    Static()(x).backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])

    class Child(InPlaceReLU):
        def backward(self, gy):
            return super().backward(gy)

    with pytest.raises(ValueError) as error:
        _relu_plus_identity(Child)
    assert str(error.value).count("The gradients handed to backward are shared") == 1
