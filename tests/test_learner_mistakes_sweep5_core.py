"""Learner mistakes in the core found by the fifth sweep: each gave a misleading or bare error,
or was silent, and now says what to write instead (or works).

* ``F.relu(None)``, a model whose ``forward`` forgot its ``return``: "wrap lists with np.array";
* ``list(loss)`` and ``sum(loss)`` of a 0-d loss gave ``[]`` and 0;
* ``val_loss < best`` and ``abs(y - t)`` gave Python's bare TypeError;
* ``x.transpose(0, 1)`` (PyTorch's swap) was the identity on a matrix without a word;
* a Function whose ``backward`` returns a list was refused, one whose ``forward`` does was told
  to "wrap lists with np.array";
* ``F.cross_entropy``, ``F.max_pool2d``, ``F.sqrt`` ... gave a bare AttributeError.
"""

import re
import warnings

import numpy as np
import pytest
from test_pytorch_habits import TENSOR_HINTS  # the wording of the tensor-method hints

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L
from dezero_like.core import as_array

MISSING = r"got None.*a value is missing.*forget its return"

# --- 1. None where a value belongs ----------------------------------------------------------


def test_none_says_a_value_is_missing_not_wrap_lists():
    for call in (lambda: as_array(None), lambda: F.relu(None), lambda: L.Linear(3)(None),
                 lambda: dz.Variable(np.ones(2)) + None):
        with pytest.raises(TypeError, match=MISSING) as info:
            call()
        assert "wrap lists" not in str(info.value)


def test_a_predict_function_that_forgot_its_return_is_named():
    np.random.seed(0)
    W, b = dz.Variable(np.random.randn(2, 3)), dz.Variable(np.zeros(3))

    def predict(x):
        F.relu(F.linear(x, W, b))  # no return: predict gives None

    with pytest.raises(TypeError, match=MISSING):
        F.mean_squared_error(predict(np.random.randn(4, 2)), np.zeros((4, 3)))


def test_a_function_whose_forward_returns_nothing_is_named():
    class Forgot(dz.Function):
        def forward(self, x):
            x * 2  # no return

        def backward(self, gy):
            return gy * 2

    with pytest.raises(TypeError, match=MISSING):
        Forgot()(dz.Variable(np.ones(2)))


# --- 2. Iterating a Variable ----------------------------------------------------------------


def test_iterating_a_0d_variable_is_an_error_that_names_float():
    loss = dz.Variable(np.array(2.5))
    for attempt in (iter, list, sum, tuple):
        with pytest.raises(TypeError, match=r"iteration over a 0-d Variable.*float\(loss\)"):
            attempt(loss)


def test_iterating_an_nd_variable_still_gives_its_rows_with_their_gradients():
    x = dz.Variable(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="0-d"):  # new: a 0-d one refuses (was [] before)
        list(x[0, 0])
    rows = list(x)
    assert len(rows) == 2 and all(isinstance(r, dz.Variable) for r in rows)
    np.testing.assert_array_equal(rows[1].data, [3.0, 4.0, 5.0])
    F.sum(rows[1] * 2.0).backward()  # each row is x[i]: its gradient reaches x
    np.testing.assert_array_equal(x.grad.data, [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])
    v = dz.Variable(np.array([1.0, 2.0, 3.0]))
    total = sum(v)  # 0 + v[0] + v[1] + v[2]
    total.backward()
    assert float(total) == 6.0
    np.testing.assert_array_equal(v.grad.data, np.ones(3))


# --- 3. Comparisons and abs() ---------------------------------------------------------------

ORDER = r"<, <=, > and >= do not compare Variables.*float\(loss\) < best.*loss\.data < best"


@pytest.mark.parametrize("compare", [
    lambda v: v < 1.0, lambda v: v <= 1.0, lambda v: v > 1.0, lambda v: v >= 1.0,
    lambda v: 1.0 < v, lambda v: np.float64(1.0) > v, lambda v: np.ones(3) < v,
    lambda v: np.ones(3) >= v, lambda v: v < v, lambda v: max([v, v * 2]),
    lambda v: sorted([v * 2, v]),
], ids=["lt", "le", "gt", "ge", "float<v", "np.float64>v", "array<v", "array>=v", "v<v", "max",
        "sorted"])
def test_ordering_a_variable_says_to_compare_the_values(compare):
    v = dz.Variable(np.array([0.5, 1.5, 2.5]))
    with pytest.raises(TypeError, match=ORDER):
        compare(v)


def test_the_values_compare_as_the_message_says_and_equality_is_unchanged():
    val_loss, best = dz.Variable(np.array(0.25)), 0.5
    with pytest.raises(TypeError, match=ORDER):
        val_loss < best  # noqa: B015
    assert float(val_loss) < best and val_loss.data < best
    assert val_loss == val_loss and not (val_loss != val_loss)  # == is still the identity test
    with pytest.warns(RuntimeWarning, match="compare the objects"):
        assert not (val_loss == 0.25)


def test_abs_of_a_variable_says_what_to_write_as_the_tensor_hint_does():
    y, t = dz.Variable(np.array([1.0, -2.0])), np.array([0.5, 0.5])
    with pytest.raises(TypeError, match=r"abs\(\) of a Variable.*" + TENSOR_HINTS["abs"]):
        abs(y - t)
    d = y - t  # what the message says to write: |d|, with gradient sign(d)
    F.sum(d * np.sign(d.data)).backward()
    np.testing.assert_array_equal(y.grad.data, [1.0, -1.0])


# --- 4. PyTorch's x.transpose(0, 1) -----------------------------------------------------------


@pytest.mark.parametrize("axes", [(0, 1), (-2, -1), (0, -1), (-2, 1)])
def test_transpose_of_two_axes_that_keep_a_matrix_as_it_is_warns(axes):
    x = dz.Variable(np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match=r"keeps the axes in their order.*PyTorch.*swaps.*"
                      r"x\.T or x\.transpose\(1, 0\)") as record:
        y = x.transpose(*axes)
    assert record[0].filename == __file__  # the warning points at the caller
    np.testing.assert_array_equal(y.data, x.data)  # still NumPy's meaning: nothing moves


def test_only_the_identity_pair_warns_not_a_swap_nor_numpys_own_forms():
    x = dz.Variable(np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match="keeps the axes in their order"):
        x.transpose(0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for y in (x.transpose(1, 0), x.transpose(-1, 0), x.T, x.transpose(), x.transpose((1, 0))):
            assert y.shape == (3, 2)
        assert x.transpose((0, 1)).shape == (2, 3)  # one tuple is NumPy's way: no warning
        assert F.transpose(x, (0, 1)).shape == (2, 3)  # the function is never the habit
        v = dz.Variable(np.ones((2, 3, 4)))
        assert v.transpose(0, 2, 1).shape == (2, 4, 3)


@pytest.mark.parametrize("shape, axes, fix", [
    ((2, 3, 4), (1, 2), "(0, 2, 1)"), ((2, 3, 4), (0, 1), "(1, 0, 2)"),
    ((2, 3, 4), (-1, -2), "(0, 2, 1)"), ((2, 3, 4, 5), (1, 3), "(0, 3, 2, 1)"),
])
def test_transpose_of_two_axes_of_more_than_a_matrix_names_the_full_permutation(shape, axes,
                                                                                fix):
    x = dz.Variable(np.ones(shape))
    with pytest.raises(ValueError, match=rf"takes the new order of all {len(shape)} axes.*"
                       rf"PyTorch.*write x\.transpose{re.escape(fix)}$"):
        x.transpose(*axes)
    order = tuple(int(a) for a in fix.strip("()").split(", "))
    assert x.transpose(*order).shape == np.ones(shape).swapaxes(*axes).shape


# --- 5. A Function written with lists -------------------------------------------------------


class _MulList(dz.Function):
    def forward(self, a, b):
        return a * b

    def backward(self, gy):
        a, b = self.inputs
        return [gy * b, gy * a]  # a list, where the package's functions return a tuple


def test_a_backward_may_return_a_list_of_gradients():
    a, b = dz.Variable(np.array([1.0, 2.0])), dz.Variable(np.array([3.0, 4.0]))
    F.sum(_MulList()(a, b)).backward()
    np.testing.assert_array_equal(a.grad.data, [3.0, 4.0])
    np.testing.assert_array_equal(b.grad.data, [1.0, 2.0])
    a.cleargrad()
    F.sum(_MulList()(a, a)).backward()  # the same variable twice: backward_accumulate
    np.testing.assert_array_equal(a.grad.data, [2.0, 4.0])
    x = dz.Variable(np.array([3.0]))
    y = _MulList()(x, x)
    F.sum(y).backward(create_graph=True)  # the gradient 2x is a graph: differentiate it again
    g = x.grad
    x.cleargrad()
    g.backward()
    np.testing.assert_array_equal(x.grad.data, [2.0])


def test_a_backward_list_reaches_hooks_as_a_tuple():
    from dezero_like.hooks import FunctionHook

    seen = []

    class Watch(FunctionHook):
        def backward_postprocess(self, function, grad_outputs, grad_inputs):
            if isinstance(function, _MulList):
                seen.append(type(grad_inputs))

    a, b = dz.Variable(np.array([1.0, 2.0])), dz.Variable(np.array([3.0, 4.0]))
    with Watch():
        F.sum(_MulList()(a, b)).backward()
    np.testing.assert_array_equal(a.grad.data, [3.0, 4.0])
    assert seen == [tuple]


@pytest.mark.parametrize("record", [True, False], ids=["graph", "no_grad"])
def test_a_forward_that_returns_a_list_is_told_to_return_a_tuple(record):
    class Halves(dz.Function):
        def forward(self, x):
            return [x[:1], x[1:]]

        def backward(self, g0, g1):
            return None

    x = dz.Variable(np.array([1.0, 2.0]))
    with dz.using_config("enable_backprop", record):
        with pytest.raises(TypeError, match=r"forward with several outputs returns them as a "
                                            r"tuple, not a list: return y0, y1"):
            Halves()(x)
        with pytest.raises(TypeError, match=r"got list; wrap lists with np\.array"):
            x * [1.0, 2.0]  # a list of numbers: the message it always had


# --- 6. PyTorch's function names on F ---------------------------------------------------------

FUNCTION_HINTS = {  # PyTorch's name -> what the message must name (it must exist here)
    "cross_entropy": r"F\.softmax_cross_entropy\(y, t\)",
    "nll_loss": r"F\.softmax_cross_entropy\(y, t\).*-F\.mean\(p\[np\.arange\(len\(t\)\), t\]\)",
    "mse_loss": r"F\.mean_squared_error\(y, t\).*F\.mean\(\(y - t\) \*\* 2\)",
    "l1_loss": r"F\.mean\(d \* np\.sign\(d\.data\)\)",
    "binary_cross_entropy_with_logits": r"F\.sigmoid_cross_entropy\(y, t\)",
    "max_pool2d": r"F\.pooling\(x, kernel_size, stride, pad\)",
    "avg_pool2d": r"F\.average_pooling\(x, kernel_size, stride, pad\)",
    "adaptive_avg_pool2d": r"F\.mean\(x, axis=\(2, 3\), keepdims=True\)",
    "conv_transpose2d": r"F\.deconv2d\(x, W, b, stride, pad\)",
    "embedding": r"F\.embed_id\(ids, W\)",
    "one_hot": r"np\.eye\(n\)\[t\]",
    "sqrt": TENSOR_HINTS["sqrt"] + ": there is no sqrt function",
    "abs": TENSOR_HINTS["abs"] + r".*there is no abs function",
    "silu": r"x \* F\.sigmoid\(x\)",
    "hardtanh": r"F\.clip\(x, -1\.0, 1\.0\)",
}


@pytest.mark.parametrize("name", sorted(FUNCTION_HINTS))
def test_pytorchs_function_names_say_what_to_write(name):
    with pytest.raises(AttributeError, match=rf"module 'dezero_like\.functions' has no attribute "
                       rf"'{name}': that is PyTorch's name; here write {FUNCTION_HINTS[name]}"):
        getattr(F, name)
    assert not hasattr(F, name)  # still an AttributeError


def test_every_function_a_hint_names_exists_and_computes_what_it_says():
    named = set()
    for name in FUNCTION_HINTS:
        with pytest.raises(AttributeError, match="that is PyTorch's name") as info:
            getattr(F, name)
        named |= set(re.findall(r"\bF\.(\w+)", str(info.value)))
    assert {"softmax_cross_entropy", "mean_squared_error", "pooling"} <= named
    for name in named:
        assert callable(getattr(F, name)), name  # only names that exist
    np.random.seed(0)
    y, t = dz.Variable(np.random.randn(4, 3)), np.array([0, 2, 1, 2])
    p = F.log_softmax(y)
    nll = -F.mean(p[np.arange(len(t)), t])
    np.testing.assert_allclose(nll.data, F.softmax_cross_entropy(y, t).data)
    x = dz.Variable(np.random.randn(2, 3, 4, 4))
    assert F.pooling(x, 2).shape == F.average_pooling(x, 2).shape == (2, 3, 2, 2)
    assert F.mean(x, axis=(2, 3), keepdims=True).shape == (2, 3, 1, 1)
    # other names are as they were: forwarded, real, or Python's own error
    assert F.conv2d is Fc.conv2d
    assert F.log_softmax and F.leaky_relu  # PyTorch names that exist here are the real thing
    with pytest.raises(AttributeError) as info:
        F.no_such_function
    assert str(info.value) == "module 'dezero_like.functions' has no attribute 'no_such_function'"
