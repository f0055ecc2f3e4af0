"""Layers and models: parameter registration, lazy Linear, dtypes, and safe weight files."""

from __future__ import annotations

import os
import zipfile

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L
from dezero_like.core import Parameter
from dezero_like.models import MLP, Model, Sequential
from dezero_like.utils import gradient_check


def test_layer_registers_parameters_and_sublayers_in_order():
    class Net(L.Layer):
        def __init__(self):
            super().__init__()
            self.p = Parameter(np.zeros(2))
            self.inner = L.Linear(3, in_size=2)
            self.not_a_param = dz.Variable(np.ones(1))
            self.number = 5

    net = Net()
    params = list(net.params())
    assert params == [net.p, net.inner.W, net.inner.b]
    net.p = None  # replaced by something that is not a Parameter: unregistered
    assert list(net.params()) == [net.inner.W, net.inner.b]
    del net.inner
    assert list(net.params()) == []


def test_layer_without_super_init_still_registers():
    class Sloppy(L.Layer):
        def __init__(self):
            self.W = Parameter(np.ones(3))

    assert len(list(Sloppy().params())) == 1


def test_cleargrads():
    model = MLP((4, 2))
    y = model(np.ones((3, 5), np.float32))
    F.sum(y).backward()
    assert all(p.grad is not None for p in model.params())
    model.cleargrads()
    assert all(p.grad is None for p in model.params())


def test_linear_is_lazy_and_uses_the_dtype():
    np.random.seed(0)
    layer = L.Linear(3, dtype=np.float64)
    assert layer.W.data is None
    y = layer(np.ones((5, 4)))
    assert layer.W.shape == (4, 3) and layer.in_size == 4
    assert layer.W.dtype == np.float64 and layer.b.dtype == np.float64
    assert y.shape == (5, 3)
    big = L.Linear(500, in_size=400)
    assert big.W.dtype == np.float32
    assert big.W.data.std() == pytest.approx((1 / 400) ** 0.5, rel=0.02)  # randn * sqrt(1/in)
    assert L.Linear(2, nobias=True, in_size=3).b is None
    assert len(list(L.Linear(2, nobias=True, in_size=3).params())) == 1


def test_linear_gradient_check_through_the_layer():
    layer = L.Linear(3, dtype=np.float64, in_size=4)
    layer.b.data = np.random.default_rng(0).normal(size=3)
    x = np.random.default_rng(1).normal(size=(2, 4))
    assert gradient_check(lambda v: layer(v) ** 2, x)
    assert gradient_check(lambda w: F.linear(dz.Variable(x), w, layer.b) ** 2, layer.W.data)


@pytest.mark.parametrize("activation", [F.sigmoid, F.relu, F.tanh])
def test_mlp_keeps_float32_through_forward_and_backward(activation):
    np.random.seed(0)
    model = MLP((8, 8, 3), activation=activation)
    x = np.random.randn(5, 4).astype(np.float32)
    t = np.array([0, 1, 2, 1, 0])
    loss = F.softmax_cross_entropy(model(x), t)
    assert loss.dtype == np.float32
    loss.backward()
    for p in model.params():
        assert p.dtype == np.float32 and p.grad.dtype == np.float32


def test_sequential_mixes_layers_and_functions():
    np.random.seed(0)
    model = Sequential(L.Linear(5), F.relu, L.Linear(2))
    y = model(np.ones((3, 4), np.float32))
    assert y.shape == (3, 2)
    assert len(list(model.params())) == 4
    with pytest.raises(TypeError, match="not callable"):
        Sequential(L.Linear(2), 3)


def test_model_is_a_layer_with_plot():
    assert issubclass(MLP, Model) and hasattr(Model, "plot")


# ---- saving and loading --------------------------------------------------------


def trained_mlp(seed=0):
    np.random.seed(seed)
    model = MLP((6, 3))
    model(np.ones((1, 4), np.float32))  # create the lazy weights
    return model


def snapshot(model):
    return [p.data.copy() for p in model.params()]


def test_save_and_load_round_trip_is_exact(tmp_path):
    path = tmp_path / "weights.npz"
    a = trained_mlp(0)
    a.save_weights(path)
    assert os.listdir(tmp_path) == ["weights.npz"]  # no temporary file left behind
    b = trained_mlp(1)
    b.load_weights(path)
    for pa, pb in zip(a.params(), b.params()):
        assert pa.dtype == pb.dtype and np.array_equal(pa.data, pb.data)
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == ["l0/W", "l0/b", "l1/W", "l1/b"]


def test_load_into_a_fresh_lazy_model(tmp_path):
    path = tmp_path / "w.npz"
    a = trained_mlp(0)
    a.save_weights(path)
    fresh = MLP((6, 3))
    fresh.load_weights(path)
    x = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_array_equal(fresh(x).data, a(x).data)


def test_save_before_weights_exist_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="forward pass"):
        MLP((3,)).save_weights(tmp_path / "w.npz")
    assert not list(tmp_path.iterdir())


def test_save_overwrites_atomically(tmp_path):
    path = tmp_path / "w.npz"
    trained_mlp(0).save_weights(path)
    model = trained_mlp(1)
    model.save_weights(path)
    other = trained_mlp(2)
    other.load_weights(path)
    assert all(np.array_equal(p.data, q.data) for p, q in zip(model.params(), other.params()))


def test_interrupted_save_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "w.npz"
    old = trained_mlp(0)
    old.save_weights(path)
    before = path.read_bytes()

    write_array = np.lib.format.write_array
    written = []

    def fail(*args, **kwargs):  # the first array is written, then Ctrl-C
        if written:
            raise KeyboardInterrupt
        written.append(write_array(*args, **kwargs))

    monkeypatch.setattr(np.lib.format, "write_array", fail)
    with pytest.raises(KeyboardInterrupt):
        trained_mlp(1).save_weights(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["w.npz"]


def assert_rejected(model, path, match):
    before = snapshot(model)
    with pytest.raises(ValueError, match=match):
        model.load_weights(path)
    after = snapshot(model)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(before, after))


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_truncated_file_is_rejected_and_model_unchanged(tmp_path, keep):
    path = tmp_path / "w.npz"
    trained_mlp(0).save_weights(path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    assert_rejected(trained_mlp(1), path, "cannot load weights")


def test_missing_key_is_rejected(tmp_path):
    path = tmp_path / "w.npz"
    a = trained_mlp(0)
    arrays = {k: p.data for k, p in a._flatten_params().items() if k != "l1/b"}
    np.savez(path, **arrays)
    assert_rejected(trained_mlp(1), path, "missing l1/b")


def test_extra_key_is_rejected(tmp_path):
    path = tmp_path / "w.npz"
    arrays = {k: p.data for k, p in trained_mlp(0)._flatten_params().items()}
    np.savez(path, extra=np.zeros(2, np.float32), **arrays)
    assert_rejected(trained_mlp(1), path, "unexpected extra")


def test_wrong_shape_is_rejected_even_if_other_keys_fit(tmp_path):
    path = tmp_path / "w.npz"
    arrays = {k: p.data for k, p in trained_mlp(0)._flatten_params().items()}
    arrays["l1/W"] = np.zeros((6, 4), np.float32)  # l0 would load fine: it must not
    np.savez(path, **arrays)
    assert_rejected(trained_mlp(1), path, r"l1/W has shape \(6, 4\)")


def test_wrong_dtype_is_rejected(tmp_path):
    path = tmp_path / "w.npz"
    arrays = {k: p.data for k, p in trained_mlp(0)._flatten_params().items()}
    arrays["l0/b"] = arrays["l0/b"].astype(np.float64)
    np.savez(path, **arrays)
    assert_rejected(trained_mlp(1), path, "l0/b has dtype float64")


def test_object_arrays_are_never_unpickled(tmp_path):
    path = tmp_path / "evil.npz"
    arrays = {k: p.data for k, p in trained_mlp(0)._flatten_params().items()}
    arrays["l0/b"] = np.array([object()], dtype=object)
    np.savez(path, **arrays)  # numpy pickles object arrays inside the .npz
    assert_rejected(trained_mlp(1), path, "pickled")


def test_not_an_npz_is_rejected(tmp_path):
    npy = tmp_path / "single.npy"
    np.save(npy, np.zeros(3))
    assert_rejected(trained_mlp(1), npy, "not an .npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"this is not a zip file at all")
    assert_rejected(trained_mlp(1), junk, "cannot load weights")
    corrupt = tmp_path / "corrupt.npz"
    trained_mlp(0).save_weights(corrupt)
    with zipfile.ZipFile(corrupt) as z:
        names = z.namelist()
    raw = bytearray(corrupt.read_bytes())
    start = raw.find(b"\x93NUMPY")  # damage the first array's header in place
    raw[start:start + 6] = b"XXXXXX"
    corrupt.write_bytes(bytes(raw))
    assert names
    assert_rejected(trained_mlp(1), corrupt, "cannot load weights")


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        trained_mlp(0).load_weights(tmp_path / "nope.npz")


@pytest.mark.gpu
def test_to_gpu_and_back():
    if not dz.cuda.gpu_available():
        pytest.skip("no CUDA GPU with CuPy on this machine")
    model = trained_mlp(0)
    before = snapshot(model)
    model.to_gpu()
    assert all(not isinstance(p.data, np.ndarray) for p in model.params())
    model.to_cpu()
    assert all(np.array_equal(a, p.data) for a, p in zip(before, model.params()))


def test_assigning_an_array_to_a_parameter_is_refused():
    """`layer.W = array` would silently take W out of training and out of the saved weights."""
    layer = L.Linear(2, in_size=2)
    with pytest.raises(TypeError, match=r"Linear.W is a Parameter.*layer.W.data = array"):
        layer.W = np.ones((2, 2), np.float32)
    layer.W.data = np.ones((2, 2), np.float32)  # the way to set its values
    assert [p.name for p in layer.params()] == ["W", "b"]

    class ArrayLike:  # a torch tensor, say: it has __array__ and slipped in
        def __array__(self, dtype=None, copy=None):
            return np.ones((2, 2))

    with pytest.raises(TypeError, match=r"Linear.W is a Parameter"):
        layer.W = ArrayLike()
    # a Variable that requires grad would leave training silently: a warning at the assignment
    with pytest.warns(UserWarning, match=r"Linear.W was a Parameter and is now a plain Variable"
                      r".*optimizers stop training it.*layer.W.data = array") as record:
        layer.W = dz.Variable(np.ones((2, 2)))
    assert record[0].filename == __file__  # it points at the assignment
    assert [p.name for p in layer.params()] == ["b"]
    other = L.Linear(2, in_size=2)
    with pytest.warns(UserWarning, match="was a Parameter and is now a plain Variable"):
        other.W = other.W * 0.5  # meant other.W.data *= 0.5: a computed Variable
    layer.W = dz.Variable(np.ones((2, 2)), requires_grad=False)  # a constant: quiet
    layer.b = None  # and None drops the bias


def test_layers_in_a_list_are_not_registered_and_setup_says_so(tmp_path):
    from dezero_like import optimizers

    class Listed(Model):
        def __init__(self):
            super().__init__()
            self.blocks = [L.Linear(4), L.Linear(2)]  # not registered

    listed = Listed()
    with pytest.raises(ValueError, match="no parameters.*list or a dict"):
        optimizers.SGD().setup(listed)
    with pytest.raises(ValueError, match="no parameters"):
        listed.save_weights(tmp_path / "empty.npz")
    assert not (tmp_path / "empty.npz").exists()
    with pytest.raises(TypeError, match="the class MLP.*instance"):
        optimizers.SGD().setup(MLP)
    optimizers.SGD().setup(MLP((3, 1)))  # lazy parameters exist before the first call


def test_a_list_given_to_a_lazy_layer_gets_the_clear_error():
    import dezero_like.layers_conv as Lc

    for layer in (L.Linear(2), Lc.Conv2d(2, 3)):
        with pytest.raises(TypeError, match=r"got list; wrap lists with np.array"):
            layer([[1.0, 2.0]])


def test_clear_errors_for_sizes_classes_and_channel_counts():
    import dezero_like.functions as F
    import dezero_like.layers_conv as Lc

    with pytest.raises(ValueError, match="in_size must be a positive integer, got 0"):
        L.Linear(3, in_size=0)
    with pytest.raises(ValueError, match="out_size must be a positive integer"):
        L.Linear(2.5)
    with pytest.raises(TypeError, match=r"item 0 is the class Linear; pass an instance"):
        Sequential(L.Linear, F.relu)
    bn = Lc.BatchNorm()
    bn(np.ones((4, 3)))
    with pytest.raises(ValueError, match="built for 3 channels.*shape \\(4, 5\\)"):
        bn(np.ones((4, 5)))


def test_loading_into_lazy_layers_checks_what_they_know(tmp_path):
    """Before its first call a lazy layer has no W to compare with, but knows out_size (or the
    kernel and out_channels) and its dtype; loading gives it its in_size / in_channels."""
    import dezero_like.layers_conv as Lc

    L.Linear(3, in_size=5).save_weights(tmp_path / "linear.npz")
    with pytest.raises(ValueError, match=r"W has shape \(5, 3\), the model expects \(\?, 8\)"):
        L.Linear(8).load_weights(tmp_path / "linear.npz")
    L.Linear(3, in_size=5, dtype=np.float64).save_weights(tmp_path / "linear64.npz")
    with pytest.raises(ValueError, match="W has dtype float64, the model expects float32"):
        L.Linear(3).load_weights(tmp_path / "linear64.npz")
    fresh = L.Linear(3)
    fresh.load_weights(tmp_path / "linear.npz")
    assert fresh.in_size == 5 and fresh(np.ones((2, 5), np.float32)).shape == (2, 3)
    conv = Lc.Conv2d(4, 3)
    conv(np.ones((1, 2, 5, 5), np.float32))
    conv.save_weights(tmp_path / "conv.npz")
    with pytest.raises(ValueError, match=r"the model expects \(5, \?, 3, 3\)"):
        Lc.Conv2d(5, 3).load_weights(tmp_path / "conv.npz")
    loaded = Lc.Conv2d(4, 3)
    loaded.load_weights(tmp_path / "conv.npz")
    assert loaded.in_channels == 2


def test_saving_into_a_missing_directory_names_the_directory(tmp_path):
    model = MLP((3, 1))
    model(np.ones((1, 2), np.float32))
    target = tmp_path / "no" / "such" / "w.npz"
    with pytest.raises(FileNotFoundError, match=r"directory .*such does not exist.*os.makedirs"):
        model.save_weights(target)
    assert not (tmp_path / "no").exists()


def test_parameter_names_that_are_savez_arguments_are_saved(tmp_path):
    """np.savez(f, **arrays) read a parameter named allow_pickle as its own flag (the
    weight was left out) and one named file as a duplicate argument."""
    class Odd(L.Layer):
        def __init__(self):
            super().__init__()
            self.allow_pickle = Parameter(np.arange(3.0))
            self.file = Parameter(np.ones((2, 2)))
            self.w = Parameter(np.zeros(1))

    Odd().save_weights(tmp_path / "odd.npz")
    with np.load(tmp_path / "odd.npz") as f:
        assert sorted(f.files) == ["allow_pickle", "file", "w"]
    back = Odd()
    back.allow_pickle.data = np.zeros(3)
    back.load_weights(tmp_path / "odd.npz")
    np.testing.assert_array_equal(back.allow_pickle.data, np.arange(3.0))


def test_saving_to_a_directory_names_the_directory(tmp_path):
    model = trained_mlp(0)
    (tmp_path / "sub").mkdir()
    for target in (tmp_path / "sub", str(tmp_path / "new") + "/"):
        with pytest.raises(IsADirectoryError, match="names a directory.*model.npz"):
            model.save_weights(target)
    assert sorted(os.listdir(tmp_path)) == ["sub"]  # no temporary file left anywhere
    assert os.listdir(tmp_path / "sub") == []


def test_copying_a_recurrent_layer_mid_sequence_is_refused(tmp_path):
    """A deep copy shared the graph behind h with the original: unchaining the copy's
    state cut the original's. Like PyTorch, refuse; after reset_state() copying works."""
    import copy
    import pickle

    import dezero_like.layers_conv as Lc

    lstm = Lc.LSTM(4)
    x = np.random.default_rng(0).random((2, 3))
    lstm(x)
    lstm(x)
    for copier in (copy.deepcopy, pickle.dumps):
        with pytest.raises(RuntimeError, match=r"keeps 'h'.*reset_state\(\).*copying"):
            copier(lstm)
    assert lstm.h.creator is not None
    lstm.reset_state()
    twin = pickle.loads(pickle.dumps(copy.deepcopy(lstm)))
    np.testing.assert_array_equal(twin(x).data, lstm(x).data)


def test_loading_a_batchnorm_before_its_first_call_checks_the_lengths(tmp_path):
    import dezero_like.layers_conv as Lc

    path = tmp_path / "bn.npz"
    np.savez(path, avg_mean=np.zeros(3), avg_var=np.ones(5), gamma=np.ones((2, 2)),
             beta=np.zeros(3))
    bn = Lc.BatchNorm()
    with pytest.raises(ValueError, match=r"avg_var has shape \(5,\), the model expects "
                                         r"\(3,\).*gamma has shape \(2, 2\)"):
        bn.load_weights(path)
    assert bn.gamma.data is None
    np.savez(path, avg_mean=np.zeros(3), avg_var=np.ones(3), gamma=np.ones(3), beta=np.zeros(3))
    bn.load_weights(path)
    assert bn(np.ones((2, 3))).shape == (2, 3)


def test_a_list_of_layers_beside_a_registered_layer_is_warned_about():
    """setup() refused a model with no parameters at all, but a list of layers beside one
    registered layer was trained in part, silently. Lists of registered layers are fine."""
    import warnings

    from dezero_like import optimizers

    class Mixed(Model):
        def __init__(self):
            super().__init__()
            self.head = L.Linear(2)
            self.blocks = {"a": L.Linear(8), "b": L.Linear(8)}

    with pytest.warns(UserWarning, match="Mixed.blocks is a dict holding layers"):
        optimizers.SGD().setup(Mixed())

    class Nested(Model):  # layers one container deeper: a list of stages, each a list
        def __init__(self):
            super().__init__()
            self.head = L.Linear(2)
            self.stages = [[L.Linear(8)], {"skip": (L.Linear(8),)}]

    with pytest.warns(UserWarning, match="Nested.stages is a list holding layers"):
        optimizers.SGD().setup(Nested())

    class InASet(Model):
        def __init__(self):
            super().__init__()
            self.head = L.Linear(2)
            self.heads = {L.Linear(3)}

    with pytest.warns(UserWarning, match="InASet.heads is a set holding layers"):
        optimizers.SGD().setup(InASet())

    class Fine(Model):
        def __init__(self, layers):
            super().__init__()
            self.layers = list(layers)  # registered just after: the book's MLP, reordered
            for i, layer in enumerate(self.layers):
                setattr(self, f"l{i}", layer)
            self.sizes = [3, 4]
            self.body = MLP((4, 2))
            self.body_layers = self.body.layers  # reached through a sub-layer
            self.tied = (self.l0.W,)  # a registered parameter

    class Slotted:  # not a Layer: any object with params() can be set up
        __slots__ = ("p",)

        def __init__(self):
            self.p = Parameter(np.zeros(2))

        def params(self):
            yield self.p

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = Fine([L.Linear(2, in_size=3), L.Linear(1)])
        model.kinds = [L.Linear, L.Layer]  # classes, not layers
        optimizers.SGD().setup(model)
        optimizers.SGD().setup(Slotted())


# ---- the parameter list kept between training steps (Layer._param_list, step 45) ------------


class _Growing(Model):
    """``a``, and ``b`` once it is assigned: a model that gains a layer between steps."""

    def __init__(self):
        super().__init__()
        self.a = L.Linear(2, in_size=3)

    def forward(self, x):
        y = self.a(x)
        if "b" in self.__dict__:
            y = y + self.b(x)
        return y


def _train_step(model, optimizer, x):
    loss = F.sum(model(x) * model(x))
    model.cleargrads()
    loss.backward()
    optimizer.update()


def test_a_layer_added_after_a_training_step_is_trained_and_cleared():
    """cleargrads and the optimizer's update keep the model's parameter list between steps; a
    layer assigned after the first step is in the next step's list, and one deleted is not."""
    from dezero_like import optimizers

    np.random.seed(0)
    x = np.random.rand(4, 3)
    model = _Growing()
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    _train_step(model, optimizer, x)
    model.b = L.Linear(2, in_size=3)
    before = model.b.W.data.copy()
    _train_step(model, optimizer, x)
    assert not np.array_equal(model.b.W.data, before), "the new layer was not updated"
    model.cleargrads()
    assert model.b.W.grad is None and model.a.W.grad is None
    b = model.b
    del model.b
    b.W.grad = dz.Variable(np.ones_like(b.W.data))  # a gradient the model no longer owns
    kept = b.W.data.copy()
    _train_step(model, optimizer, x)
    np.testing.assert_array_equal(b.W.data, kept)
    model.cleargrads()
    assert b.W.grad is not None, "cleargrads reached a layer deleted from the model"


def test_a_parameter_replaced_or_a_layer_added_inside_a_shared_sub_layer_reaches_every_model():
    """One count of edits for all layers: a sub-layer does not know the models that hold it, so
    a Parameter put in place of another inside it, or a layer added to it, after both models
    made their lists, is in both models' next lists."""
    shared = L.Linear(2, in_size=3)
    one, two = Sequential(shared), Sequential(shared, L.Linear(1, in_size=2))
    for model in (one, two):
        model.cleargrads()  # the lists are made and kept
    old_W = shared.W
    shared.W = Parameter(np.zeros((3, 2)))
    shared.extra = L.Linear(1, in_size=2)
    for model in (one, two):
        for p in (shared.W, old_W, shared.extra.W):
            p.grad = dz.Variable(np.ones_like(p.data))
        model.cleargrads()
        assert shared.W.grad is None and shared.extra.W.grad is None
        assert old_W.grad is not None, "cleargrads still cleared the replaced Parameter"


def test_a_copied_model_trains_its_own_parameters():
    """A model copied after a step (copy.deepcopy copies its kept list too) updates the copy's
    parameters, and the original stays as it was."""
    import copy

    from dezero_like import optimizers

    np.random.seed(0)
    x = np.random.rand(4, 3)
    model = MLP((4, 2))
    _train_step(model, optimizers.SGD(lr=0.1).setup(model), x)
    twin = copy.deepcopy(model)
    kept = [p.data.copy() for p in model.params()]
    _train_step(twin, optimizers.SGD(lr=0.1).setup(twin), x)
    for p, data in zip(model.params(), kept):
        np.testing.assert_array_equal(p.data, data)
    assert not all(np.array_equal(p.data, q.data) for p, q in zip(model.params(), twin.params()))


def test_a_layer_that_lists_its_own_params_is_asked_every_time():
    """A subclass with its own params() (here: only the bias) is what cleargrads and the
    optimizer use, not the kept list of every registered Parameter."""
    from dezero_like import optimizers

    class BiasOnly(L.Linear):
        def params(self):
            return iter([self.b])

    layer = BiasOnly(2, in_size=3)
    layer.W.grad = dz.Variable(np.ones((3, 2)))
    layer.b.grad = dz.Variable(np.ones(2))
    W = layer.W.data.copy()
    optimizers.SGD(lr=0.1).setup(layer).update()
    np.testing.assert_array_equal(layer.W.data, W)
    layer.cleargrads()
    assert layer.b.grad is None and layer.W.grad is not None
