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
    ([np.inf, 0, 0, 0], "whole-number class indices"),  # not int()'s OverflowError
    ([np.nan, 0, 0, 0], "whole-number class indices"),
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


# ---- files: "~", weights, loaders ------------------------------------------------------------

def test_plot_dot_graph_reads_a_tilde_as_the_home_folder(tmp_path, monkeypatch):
    from dezero_like.utils import plot_dot_graph

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    x = dz.Variable(np.ones(2))
    plot_dot_graph(F.sum(x * 2.0), to_file="~/g.svg")
    assert (home / "g.svg").is_file() and not (work / "~").exists()


def test_vgg16_loads_a_weights_file_given_without_pretrained(tmp_path, monkeypatch):
    import re

    from dezero_like.models_conv import VGG16

    monkeypatch.setenv("HOME", str(tmp_path))
    # a file given is a file to load: a missing one is an error, not random weights
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope.npz"))):
        VGG16(weights_file="~/nope.npz")
    small = L.Linear(2, in_size=3)
    small.save_weights(tmp_path / "small.npz")  # a real weights file, of another model
    with pytest.raises(ValueError, match="missing conv1_1/W"):
        VGG16(weights_file="~/small.npz")  # it was read: VGG16's names are not in it


class _ListedLayers(dz.Model):
    def __init__(self):
        super().__init__()
        self.blocks = [L.Linear(3), L.Linear(3)]  # a list: params() does not reach them
        self.out = L.Linear(1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def test_save_and_load_weights_warn_about_layers_kept_in_a_list(tmp_path):
    model = _ListedLayers()
    model(np.ones((1, 2), np.float32))
    with pytest.warns(UserWarning, match="blocks is a list holding layers"):
        model.save_weights(tmp_path / "w.npz")
    with pytest.warns(UserWarning, match="blocks is a list holding layers"):
        model.load_weights(tmp_path / "w.npz")


def test_load_weights_names_a_pytorch_checkpoint_and_refuses_members_that_are_not_arrays(
        tmp_path):
    import zipfile

    model = L.Linear(2, in_size=3)
    before = model.W.data.copy()
    torch_like = tmp_path / "t.pt"
    with zipfile.ZipFile(torch_like, "w") as z:  # the layout torch.save writes
        z.writestr("t/data.pkl", b"\x80\x02}q\x00.")
        z.writestr("t/version", b"3\n")
    with pytest.raises(ValueError, match="PyTorch checkpoint"):
        model.load_weights(torch_like)
    raw = tmp_path / "raw.npz"
    with zipfile.ZipFile(raw, "w") as z:  # members named like the parameters, not .npy
        z.writestr("W", b"0" * 24)
        z.writestr("b", b"0" * 8)
    with pytest.raises(ValueError, match=r"are not arrays \(\.npy\)"):
        model.load_weights(raw)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        model.load_weights(tmp_path)
    np.testing.assert_array_equal(model.W.data, before)


def test_a_batch_mixing_labelled_and_unlabelled_examples_is_refused():
    examples = [(np.ones(2), None), (np.ones(2), 1), (np.ones(2), 2)]
    with pytest.raises(ValueError, match="example 0 has no label"):
        next(iter(dz.DataLoader(examples, 3, shuffle=False)))
    x, t = next(iter(dz.DataLoader([(np.ones(2), None)] * 3, 3, shuffle=False)))
    assert t is None and x.shape == (3, 2)


@pytest.mark.parametrize("name", ["num_workers", "drop_last", "pin_memory", "sampler"])
def test_dataloader_translates_pytorch_options(name):
    with pytest.raises(TypeError, match=f"PyTorch's {name}="):
        dz.DataLoader([(np.ones(2), 1)], 1, **{name: 1})
    with pytest.raises(TypeError, match="unexpected argument workers="):
        dz.DataLoader([(np.ones(2), 1)], 1, workers=2)


# ---- optimizers ------------------------------------------------------------------------------

def _one_param(data, grad):
    layer = L.Layer()
    layer.p = dz.Parameter(np.array(data), name="p")
    layer.p.grad = dz.Variable(np.array(grad))
    return layer


@pytest.mark.parametrize("make", [dz.optimizers.Adam, dz.optimizers.AdaGrad,
                                  dz.optimizers.AdaDelta, dz.optimizers.MomentumSGD])
def test_float16_parameters_get_float32_state_and_finite_steps(make):
    # in float16, g * g of a small gradient rounds to 0 (and Adam's eps is 0): the step was
    # m / 0 = -inf, and 0 / 0 = nan for a zero gradient
    results = {}
    for dtype in (np.float16, np.float32):
        layer = _one_param(np.array([1.0, 0.5, -0.3], dtype), np.array([1e-3, 0.0, 1e-4], dtype))
        optimizer = make().setup(layer)
        optimizer.update()
        layer.p.grad = dz.Variable(np.array([2e-3, 0.0, -1e-4], dtype))
        optimizer.update()
        results[dtype] = layer.p.data
    assert results[np.float16].dtype == np.float16
    assert np.isfinite(results[np.float16]).all()
    np.testing.assert_allclose(results[np.float16], results[np.float32], atol=2e-3)


def test_a_parameter_listed_twice_by_the_target_takes_one_step():
    enc, dec = L.Linear(2, in_size=2), L.Linear(2, in_size=2)
    dec.W = enc.W  # weights tied by hand: params() of the pair below lists W twice

    class Both:
        def params(self):
            yield from enc.params()
            yield from dec.params()

    before = enc.W.data.copy()
    enc.W.grad = dz.Variable(np.ones((2, 2), np.float32))
    dz.optimizers.SGD(lr=0.1).setup(Both()).update()
    np.testing.assert_allclose(enc.W.data, before - 0.1, rtol=1e-6)


@pytest.mark.parametrize("grad, message", [(dz.Variable(np.ones(3)), r"of shape \(3,\)"),
                                           (np.ones((2, 3)), "is a ndarray")])
def test_a_gradient_set_by_hand_must_be_a_variable_of_the_parameters_shape(grad, message):
    layer = _one_param(np.ones((2, 3)), np.zeros((2, 3)))
    layer.p.grad = grad
    with pytest.raises(ValueError, match=message):
        dz.optimizers.SGD().setup(layer).update()
    np.testing.assert_array_equal(layer.p.data, np.ones((2, 3)))


@pytest.mark.parametrize("lr", [np.array(0.5), np.float32(0.5)], ids=["0-d array", "float32"])
def test_integer_parameters_are_refused_before_any_update_with_numpy_settings(lr):
    layer = L.Layer()
    layer.a = dz.Parameter(np.array([1.0, 2.0]))
    layer.b = dz.Parameter(np.array([1, 2]))
    layer.a.grad = dz.Variable(np.array([1, 1]))
    layer.b.grad = dz.Variable(np.array([1, 1]))
    with pytest.raises(TypeError, match="cannot update a parameter of int64"):
        dz.optimizers.SGD(lr=lr).setup(layer).update()
    np.testing.assert_array_equal(layer.a.data, [1.0, 2.0])  # nothing moved


@pytest.mark.parametrize("make", [dz.optimizers.Adam, dz.optimizers.AdaGrad,
                                  dz.optimizers.AdaDelta])
def test_adaptive_optimizers_refuse_complex_parameters(make):
    layer = _one_param([1 + 1j, -2 + 0.5j], [0.3 - 0.2j, -0.1 + 0.4j])
    with pytest.raises(TypeError, match=r"g \* g, which for a complex parameter"):
        make().setup(layer).update()
    dz.optimizers.MomentumSGD().setup(layer).update()  # plain steps are right for complex


def test_freeze_param_takes_lists_and_generators_and_refuses_the_rest():
    from dezero_like.models import MLP

    model = MLP((3, 2))
    model(np.ones((1, 4), np.float32))
    FreezeParam = dz.optimizers.FreezeParam
    assert len(FreezeParam([model.l0, model.l1.W]).frozen) == 3
    assert len(FreezeParam(model.l0.params()).frozen) == 2
    assert len(FreezeParam({model.l0.W}, (p for p in [model.l1.b])).frozen) == 2
    with pytest.warns(UserWarning, match="freezes nothing"):
        FreezeParam(*[])  # an empty list of layers to freeze, from a configuration
    for args, message in (((dz.Variable(np.ones(2)),), "not a Parameter"),
                          ((L.Linear,), "the class Linear"),
                          ((3,), "got int")):
        with pytest.raises(TypeError, match=message):
            FreezeParam(*args)


def test_adadelta_has_no_learning_rate_to_schedule():
    optimizer = dz.optimizers.AdaDelta()
    with pytest.raises(AttributeError, match="AdaDelta has no learning rate to set"):
        optimizer.lr = 0.5  # a schedule's write, which changed nothing before
    assert not hasattr(optimizer, "lr")


@pytest.mark.parametrize("name, hint", [("param_groups", r"optimizer\.lr = 0\.01"),
                                        ("state_dict", r"copy\.deepcopy\(optimizer\)")])
def test_pytorchs_optimizer_names_say_what_to_write(name, hint):
    with pytest.raises(AttributeError, match=f"that is PyTorch's name.*{hint}"):
        getattr(dz.optimizers.SGD(), name)


def test_a_hook_that_leaves_a_gradient_of_another_shape_is_refused():
    layer = _one_param(np.ones((2, 3)), np.ones((2, 3)))
    optimizer = dz.optimizers.SGD().setup(layer)

    def squash(params):
        for p in params:
            p.grad = dz.Variable(p.grad.data.sum(axis=0))

    optimizer.add_hook(squash)
    with pytest.raises(ValueError, match=r"of shape \(3,\) \(after the hooks\)"):
        optimizer.update()
    np.testing.assert_array_equal(layer.p.data, np.ones((2, 3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("layout", ["C", "transposed", "nan", "ties"])
def test_the_2x2_pooling_path_matches_the_general_windows(dtype, layout):
    """The 2x2 stride-2 fast path (pairs taken twice) and the general path (a running maximum
    over the window offsets) pick the same winners: same y, same gradient, same second order."""
    rng = np.random.default_rng(5)
    if layout == "ties" or dtype in (np.int64, np.uint8, np.bool_):
        x = rng.integers(0, 3, (2, 3, 6, 8)).astype(dtype)
    else:
        x = rng.standard_normal((2, 3, 6, 8)).astype(dtype)
    if layout == "transposed":
        x = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    if layout == "nan" and x.dtype.kind == "f":
        x.flat[[3, 50, 51, 200]] = np.nan
    fast = Fc.Pooling(2, 2, 0)
    y_fast = fast.forward(x)
    assert fast.pair_masks is not None  # the fast path ran
    general = Fc.Pooling(2, 2, 0)
    general._setup("pooling", x)
    y_general, general.indexes = Fc._max_pool_windows(general, x)
    general.pair_masks = None
    np.testing.assert_array_equal(y_fast, y_general)
    gy = rng.standard_normal(y_fast.shape).astype(np.float32)
    gy.flat[0] = np.inf  # never inf * 0 = nan in a window it did not win
    g_fast = Fc.PoolingGrad(fast).forward(gy)
    g_general = Fc.PoolingGrad(general).forward(gy)
    np.testing.assert_array_equal(g_fast, g_general)


def test_hook_settings_are_checked_on_every_assignment():
    decay, clip = dz.optimizers.WeightDecay(0.1), dz.optimizers.ClipGrad(1.0)
    with pytest.raises(ValueError, match="rate must be >= 0"):
        decay.rate = -1  # gradient ascent on the weights, silently
    with pytest.raises(ValueError, match="max_norm must be"):
        clip.max_norm = -1
    decay.rate, clip.max_norm = 0.2, 5.0
    assert (decay.rate, clip.max_norm) == (0.2, 5.0)


def test_more_clear_errors_for_inputs_that_failed_far_from_their_cause(tmp_path):
    from dezero_like.datasets import get_spiral
    from dezero_like.functions_conv import conv2d_simple

    (tmp_path / "afile").write_text("")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        L.Linear(2, in_size=3).save_weights(tmp_path / "afile" / "w.npz")
    with pytest.raises(TypeError, match="got a dict"):
        dz.DataLoader({"x": 1}, 2)  # was KeyError: 0
    with pytest.raises(ValueError, match=r"bias must have shape \(3,\)"):
        conv2d_simple(np.ones((1, 2, 4, 4)), np.ones((3, 2, 2, 2)), np.ones(1))
    with pytest.raises(ValueError, match="num_class must be a positive int"):
        get_spiral(num_class=0)  # was "need at least one array to concatenate"


def test_compose_of_one_transform_and_a_dataset_without_data_say_so():
    import dezero_like.transforms as T

    with pytest.raises(TypeError, match=r"Compose takes a list of transforms, got one \(Flatten\)"):
        T.Compose(T.Flatten())  # was "'Flatten' object is not iterable"

    class Forgetful(dz.Dataset):
        def prepare(self):
            pass  # sets no self.data

    with pytest.raises(ValueError, match=r"Forgetful\.prepare\(\) did not set self\.data"):
        dz.DataLoader(Forgetful(), 2)
