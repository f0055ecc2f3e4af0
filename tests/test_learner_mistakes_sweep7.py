"""Seventh sweep: input that was accepted silently (or failed far from its cause) and now gets a
clear error at once, and an index buffer that could move a gradient after the forward pass.

Each case was found by comparing the package with PyTorch on the same input.
"""

import tempfile

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
import dezero_like.layers as L

# ---- indexing: the index as it was at forward time ---------------------------------------------

@pytest.mark.parametrize("make", [np.array, list], ids=["array", "list"])
def test_an_index_refilled_before_backward_does_not_move_the_gradient(make):
    # a buffer of indices reused batch after batch: refilled before the first batch's backward
    idx = make([0, 1])
    x = dz.Variable(np.arange(4.0))
    y = x[idx]
    idx[0] = 3
    F.sum(y * np.array([1.0, 2.0])).backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 2.0, 0.0, 0.0])


def test_an_index_inside_a_tuple_is_kept_too_and_empty_lists_still_index():
    rows = np.array([1, 1])
    x = dz.Variable(np.arange(6.0).reshape(3, 2))
    y = x[rows, 0]
    rows[:] = 2
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 0], [2, 0], [0, 0]])
    assert x[[]].shape == (0, 2)


# ---- clip ------------------------------------------------------------------------------------

def test_clip_refuses_bounds_that_would_make_the_output_larger_than_x():
    x = dz.Variable(np.linspace(-2, 2, 5))
    with pytest.raises(ValueError, match=r"broadcast x of shape \(5,\) to \(2, 5\)"):
        F.clip(x, np.full((2, 5), -1.0), 1.0)
    y = F.clip(x, np.full(5, -1.0), None)  # bounds of x's own shape, or broadcasting to it
    F.sum(y).backward()
    np.testing.assert_array_equal(x.grad.data, [0, 1, 1, 1, 1])


def test_clip_refuses_a_variable_bound_with_the_fix():
    x = dz.Variable(np.ones(3))
    with pytest.raises(TypeError, match=r"x_min is a Variable.*x_min\.data"):
        F.clip(x, dz.Variable(np.array(-1.0)), 1.0)
    with pytest.raises(TypeError, match=r"x_max is a Variable"):
        F.clip(x, None, dz.Variable(np.array(1.0)))


# ---- accuracy --------------------------------------------------------------------------------

@pytest.mark.parametrize("labels, message", [
    ([-1, 0, 0, 0], "label -1 is out of range for 3 classes"),
    ([5, 0, 0, 0], "label 5 is out of range for 3 classes"),
    ([1.5, 0, 0, 0], "whole-number class indices"),
])
def test_accuracy_refuses_labels_that_could_never_match(labels, message):
    y = np.random.default_rng(0).random((4, 3))
    with pytest.raises(ValueError, match=message):
        F.accuracy(y, np.array(labels))


def test_accuracy_takes_lists_and_whole_number_float_labels():
    y = np.eye(3)[[0, 1, 2, 0]]
    assert float(F.accuracy(y.tolist(), [0, 1, 2, 1]).data) == 0.75
    assert float(F.accuracy(y, np.array([0.0, 1.0, 2.0, 0.0])).data) == 1.0


# ---- max / min -------------------------------------------------------------------------------

@pytest.mark.parametrize("reduce", [F.max, F.min])
def test_max_and_min_refuse_a_keepdims_that_is_not_a_bool(reduce):
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match="keepdims must be True or False, got 'no'"):
        reduce(x, keepdims="no")
    assert reduce(x, axis=1, keepdims=np.True_).shape == (2, 1)
    assert reduce(x, axis=1, keepdims=0).shape == (2,)


# ---- Variable data ---------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("make", [lambda: np.matrix([[1.0, 2.0]]),
                                  lambda: np.ma.masked_array([1.0, 2.0], [0, 1])],
                         ids=["matrix", "masked"])
def test_variable_refuses_array_subclasses_whose_operators_differ(make):
    data = make()
    with pytest.raises(TypeError, match=r"plain array.*np\.asarray"):
        dz.Variable(data)
    with pytest.raises(TypeError, match="plain array"):
        F.sum(data)


def test_variable_still_takes_a_memory_mapped_array():
    with tempfile.TemporaryDirectory() as folder:
        m = np.memmap(f"{folder}/m.dat", dtype="f8", mode="w+", shape=(3,))
        m[:] = [1.0, 2.0, 3.0]
        x = dz.Variable(m)
        F.sum(x * 2.0).backward()
        np.testing.assert_array_equal(x.grad.data, [2.0, 2.0, 2.0])
        del x, m


# ---- convolutions ----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"pad": -1}, "pad >= 0"),
    ({"pad": (0, -1)}, "pad >= 0"),
    ({"stride": 0}, "stride must be >= 1"),
])
def test_deconv2d_refuses_a_negative_pad_or_a_zero_stride(kwargs, message):
    x = np.ones((2, 3, 5, 5))
    with pytest.raises(ValueError, match=message):
        F.deconv2d(x, np.ones((3, 2, 3, 3)), **kwargs)


@pytest.mark.parametrize("conv, W", [(F.deconv2d, np.zeros((3, 2, 0, 3))),
                                     (F.conv2d, np.zeros((2, 3, 3, 0)))])
def test_an_empty_kernel_is_refused(conv, W):
    with pytest.raises(ValueError, match="kernel of W .* is empty"):
        conv(np.ones((2, 3, 5, 5)), W)


def test_sizes_are_ints_not_bools():
    with pytest.raises(TypeError, match="pair of ints"):
        F.conv2d(np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2)), stride=True)


@pytest.mark.parametrize("make, message", [
    (lambda: L.Conv2d(2, 0, in_channels=3), "kernel_size and stride must be >= 1"),
    (lambda: L.Conv2d(2, 3, in_channels=0), "in_channels must be a positive integer"),
    (lambda: L.Conv2d(0, 3), "out_channels must be a positive integer"),
    (lambda: L.Conv2d(2, 3, stride=0), "kernel_size and stride must be >= 1"),
    (lambda: L.Deconv2d(2, 3, pad=-1), "pad >= 0"),
])
def test_conv_layers_refuse_sizes_that_make_no_layer_when_built(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_col2im_refuses_a_col_of_the_wrong_shape():
    x = np.random.default_rng(1).normal(size=(2, 3, 5, 5))
    col = F.im2col(x, 3, 1, 1).data  # (50, 27): one row per window
    assert F.col2im(col, x.shape, 3, 1, 1).shape == x.shape
    col6 = F.im2col(x, 3, 1, 1, to_matrix=False).data
    assert F.col2im(col6, x.shape, 3, 1, 1, to_matrix=False).shape == x.shape
    torch_layout = col.reshape(2, 25, 27).transpose(0, 2, 1).copy()  # fold's (N, C*K*K, L)
    for wrong, shape in ((col.T.copy(), x.shape), (torch_layout, x.shape), (col, (3, 2, 5, 5))):
        with pytest.raises(ValueError, match="col must have shape"):
            F.col2im(wrong, shape, 3, 1, 1)
    with pytest.raises(ValueError, match="stride must be >= 1"):
        F.col2im(col, x.shape, 3, 0, 1)


# ---- batch norm and the embedding ------------------------------------------------------------

def test_batch_norm_refuses_running_statistics_given_as_variables():
    x = np.random.default_rng(2).normal(size=(4, 3)) + 5
    with pytest.raises(TypeError, match=r"running mean must be an array.*mean\.data"):
        F.batch_norm(x, np.ones(3), np.zeros(3), dz.Variable(np.zeros(3)), np.ones(3))
    with pytest.raises(TypeError, match="running var must be an array"):
        F.batch_norm(x, np.ones(3), np.zeros(3), np.zeros(3), dz.Variable(np.ones(3)))
    mean = np.zeros(3)
    F.batch_norm(x, np.ones(3), np.zeros(3), mean, np.ones(3))
    assert (mean > 0.3).all()  # arrays move, in place


@pytest.mark.parametrize("W", [np.arange(5.0), np.zeros((5, 2, 2))], ids=["1-d", "3-d"])
def test_embed_id_needs_a_two_dimensional_table(W):
    with pytest.raises(ValueError, match=r"2-d table W \(vocab, dim\)"):
        Fc.embed_id(np.array([1, 2]), W)
