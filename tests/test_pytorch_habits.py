"""PyTorch's names on a Variable, a Layer or an Optimizer say what to write here (step 63).

They stay AttributeErrors (``hasattr`` answers False, as before), and copying and
pickling, which probe for ``__deepcopy__`` or ``__setstate__``, work as they did.
"""

import copy
import pickle

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.layers as L
from dezero_like import optimizers
from dezero_like.models import MLP

VARIABLE_HINTS = {
    "numpy": r"x\.data", "detach": r"Variable\(x\.data, requires_grad=False\)",
    "view": r"x\.reshape", "permute": r"x\.transpose", "dim": r"x\.ndim", "numel": r"x\.size",
    "zero_": r"x\.cleargrad\(\)", "zero_grad": r"x\.cleargrad\(\)",
    "requires_grad_": r"x\.requires_grad = ", "cuda": r"x\.to_gpu\(\)", "cpu": r"x\.to_cpu\(\)",
    "to": r"x\.to_gpu\(\) or x\.to_cpu\(\)",
}
TENSOR_HINTS = {  # tensor methods that are functions here (step 63)
    "mean": r"F\.mean\(x\)", "max": r"F\.max\(x\)", "min": r"F\.min\(x\)",
    "argmax": r"x\.data\.argmax\(axis=1\)", "argmin": r"x\.data\.argmin\(axis=1\)",
    "exp": r"F\.exp\(x\)", "sqrt": r"x \*\* 0\.5", "pow": r"x \*\* p",
    "abs": r"x \* np\.sign\(x\.data\)", "clamp": r"F\.clip\(x, x_min, x_max\)",
    "unsqueeze": r"F\.expand_dims\(x, axis\)", "squeeze": r"x\.reshape",
    "float": r"F\.astype\(x, np\.float32\)", "double": r"F\.astype\(x, np\.float64\)",
    "long": r"x\.data\.astype\(np\.int64\)", "tolist": r"x\.data\.tolist\(\)",
}
VARIABLE_HINTS.update(TENSOR_HINTS)
LAYER_HINTS = {
    "zero_grad": r"model\.cleargrads\(\)", "parameters": r"model\.params\(\)",
    "eval": r"with dz\.test_mode\(\):", "train": r"training is the default mode",
    "state_dict": r"model\.save_weights\(path\)", "load_state_dict": r"model\.load_weights\(path\)",
    "cuda": r"model\.to_gpu\(\)", "cpu": r"model\.to_cpu\(\)", "to": r"model\.to_gpu\(\)",
}
OPTIMIZER_HINTS = {"zero_grad": r"model\.cleargrads\(\)", "step": r"optimizer\.update\(\)"}


def _model():
    np.random.seed(0)
    model = MLP((4, 2))
    model(np.random.randn(3, 5))
    return model


@pytest.mark.parametrize("name", sorted(VARIABLE_HINTS))
@pytest.mark.parametrize("kind", [dz.Variable, dz.Parameter])
def test_a_variable_names_what_to_write_for_pytorchs_name(kind, name):
    v = kind(np.ones((2, 3)))
    with pytest.raises(AttributeError, match=rf"'{kind.__name__}' object has no attribute "
                       rf"'{name}'.*PyTorch.*{VARIABLE_HINTS[name]}"):
        getattr(v, name)
    assert not hasattr(v, name)  # still an AttributeError: duck typing sees no such method


@pytest.mark.parametrize("name", sorted(LAYER_HINTS))
@pytest.mark.parametrize("make", [lambda: L.Linear(3), _model], ids=["Linear", "MLP"])
def test_a_layer_or_model_names_what_to_write_for_pytorchs_name(make, name):
    layer = make()
    with pytest.raises(AttributeError, match=rf"'{type(layer).__name__}' object has no attribute "
                       rf"'{name}'.*PyTorch.*{LAYER_HINTS[name]}"):
        getattr(layer, name)
    assert not hasattr(layer, name)


@pytest.mark.parametrize("name", sorted(OPTIMIZER_HINTS))
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_an_optimizer_names_what_to_write_for_pytorchs_name(kind, name):
    opt = getattr(optimizers, kind)().setup(_model())
    with pytest.raises(AttributeError, match=rf"'{kind}' object has no attribute "
                       rf"'{name}'.*PyTorch.*{OPTIMIZER_HINTS[name]}"):
        getattr(opt, name)


def test_other_missing_names_get_pythons_own_error():
    v, layer = dz.Variable(np.ones(2)), L.Linear(3)
    opt = optimizers.SGD().setup(_model())
    for obj in (v, layer, opt):
        with pytest.raises(AttributeError) as info:
            obj.no_such_name
        assert str(info.value) == f"'{type(obj).__name__}' object has no attribute 'no_such_name'"
        for dunder in ("__deepcopy__", "__setstate__", "__array_interface__"):
            # only what the class itself defines (object's __setstate__ on Python 3.11+), never
            # an attribute made up by a hint
            assert (getattr(obj, dunder, None) is None) == (not hasattr(type(obj), dunder)), dunder


def test_attributes_of_the_same_name_set_by_a_subclass_still_win():
    class Net(L.Layer):
        def __init__(self):
            super().__init__()
            self.train = True  # Layer.__setattr__ stores it; it is read back
            self.l1 = L.Linear(2, in_size=3)

        def eval(self):  # a method of that name overrides the hint
            return "evaluating"

        def forward(self, x):
            return self.l1(x)

    class Counting(optimizers.SGD):
        def update(self):
            super().update()
            self.step = getattr(self, "step", 0) + 1  # the same holds for an optimizer

    net = Net()
    assert net.train is True and net.eval() == "evaluating"
    opt = Counting(lr=0.1).setup(net)
    for _ in range(2):
        net.cleargrads()
        dz.functions.sum(net(np.ones((1, 3)))).backward()
        opt.update()
    assert opt.step == 2


def test_copying_and_pickling_still_work():
    np.random.seed(0)
    x = np.random.randn(4, 5)
    model = _model()
    opt = optimizers.Adam().setup(model)
    dz.functions.sum(model(x)).backward()
    opt.update()
    v, p = dz.Variable(np.arange(3.0), name="v"), dz.Parameter(np.ones(2), name="p")
    for copier in (copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        v2, p2 = copier(v), copier(p)
        assert type(v2) is dz.Variable and type(p2) is dz.Parameter
        np.testing.assert_array_equal(v2.data, v.data)
        assert (v2.name, p2.name) == ("v", "p")
        model2, opt2 = copier((model, opt))
        np.testing.assert_array_equal(model2(x).data, model(x).data)
        assert opt2.target is model2 and opt2.t == opt.t
        copier(L.Linear(3))  # an uninitialised lazy layer too
    assert copy.copy(v).data is v.data


# --- PyTorch's shapes that are refused here: the message's recipe gives PyTorch's numbers ---


def _recipe(message):
    """The expression a refusal proposes, after its last ': ' up to ', with ...' or the end."""
    expression = message.rsplit(": ", 1)[1]
    return expression.split(", with the labels ")[0]


@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 3, 4, 5)], ids=["N,C,d", "N,C,d1,d2"])
def test_scores_per_position_are_refused_with_a_reshape_that_gives_torchs_cross_entropy(shape):
    torch = pytest.importorskip("torch")
    import dezero_like.functions as F

    rng = np.random.default_rng(0)
    x = dz.Variable(rng.standard_normal(shape))
    t = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    with pytest.raises(ValueError, match=r"expects logits of shape \(N, C\)") as caught:
        F.softmax_cross_entropy(x, t)
    assert "t.reshape(-1)" in str(caught.value)
    loss = eval(_recipe(str(caught.value)), {"F": F, "x": x})  # noqa: S307 - the message's code
    loss = F.softmax_cross_entropy(loss, t.reshape(-1))
    loss.backward()
    tx = torch.tensor(x.data, requires_grad=True)
    expected = torch.nn.functional.cross_entropy(tx, torch.tensor(t))
    expected.backward()
    np.testing.assert_allclose(loss.data, expected.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_a_sequence_into_linear_is_refused_with_a_reshape_that_gives_torchs_linear():
    torch = pytest.importorskip("torch")
    import dezero_like.functions as F

    rng = np.random.default_rng(1)
    x = dz.Variable(rng.standard_normal((2, 3, 4)))
    W, b = dz.Variable(rng.standard_normal((4, 5))), dz.Variable(rng.standard_normal(5))
    with pytest.raises(ValueError, match="map the last axis") as caught:
        F.linear(x, W, b)
    y = eval(_recipe(str(caught.value)), {"F": F, "x": x, "W": W, "b": b})  # noqa: S307
    expected = torch.nn.functional.linear(torch.tensor(x.data), torch.tensor(W.data.T),
                                          torch.tensor(b.data))
    assert y.shape == (2, 3, 5)
    np.testing.assert_allclose(y.data, expected.numpy(), rtol=1e-12)
    # a lazy layer refuses it too, rather than taking the last axis as its input size
    with pytest.raises(ValueError, match=r"\(N, in_size\)"):
        L.Linear(7)(dz.Variable(np.ones((2, 1, 28, 28), np.float32)))
