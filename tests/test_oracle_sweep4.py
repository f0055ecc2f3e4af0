"""A fourth sweep against PyTorch (and NumPy, for the dtype rules): what the first three
(``test_oracle.py``, ``test_oracle_second_order.py``, ``test_correctness.py``) left out.

Each test here failed before the fix it names, or pins a difference that
``docs/pytorch.md`` now lists.
"""

from __future__ import annotations

import numpy as np
import pytest

import dezero_like as dz

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the oracle tests need it (pip install torch)"
)

TORCH_DTYPE = {np.complex64: torch.complex64, np.complex128: torch.complex128}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64],
                         ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", ["v * 1j", "1j * v", "v + 2j", "2j - v", "v / 1j"])
@pytest.mark.parametrize("graph", [True, False], ids=["graph", "no_grad"])
def test_a_python_complex_is_weak_as_numpy_2_and_torch_take_it(dtype, op, graph):
    """NEP 50: a Python complex beside float32 data gives complex64, as a Python float keeps
    float32. It gave complex128 (the number became a strong 0-d complex128 array)."""
    a = np.arange(1, 4).astype(dtype)
    v = dz.Variable(a.copy())
    with dz.using_config("enable_backprop", graph):
        y = eval(op, {"v": v})
    expected = eval(op, {"v": a})
    assert y.dtype == expected.dtype
    np.testing.assert_array_equal(y.data, expected)
    if dtype is not np.float16:  # PyTorch has a complex32 for float16; NumPy has not
        theirs = eval(op, {"v": torch.tensor(a)})
        assert theirs.dtype == TORCH_DTYPE[expected.dtype.type]
        np.testing.assert_allclose(y.data, theirs.numpy(), rtol=1e-6)


def test_initial_weights_are_the_books_as_docs_pytorch_md_says():
    """docs/pytorch.md, "Initial weights": N(0, 1/fan_in) and zero biases here, PyTorch's
    uniform on +-1/sqrt(fan_in) (a standard deviation sqrt(3) times smaller) for weights and
    biases. The numbers of the row are checked here."""
    import dezero_like.layers as L

    np.random.seed(0)
    torch.manual_seed(0)
    ours, theirs = L.Linear(500, in_size=400), torch.nn.Linear(400, 500)
    assert abs(ours.W.data.std() - 0.050) < 0.001
    assert abs(theirs.weight.std().item() - 0.029) < 0.001
    assert not ours.b.data.any() and theirs.bias.abs().max().item() > 0.04
    conv, tconv = L.Conv2d(64, 3, in_channels=32), torch.nn.Conv2d(32, 64, 3)
    fan_in = 32 * 9
    assert abs(conv.W.data.std() * fan_in**0.5 - 1) < 0.02
    assert abs(tconv.weight.std().item() * (3 * fan_in) ** 0.5 - 1) < 0.02
    deconv, tdeconv = L.Deconv2d(64, 3, in_channels=32), torch.nn.ConvTranspose2d(32, 64, 3)
    assert abs(deconv.W.data.std() * fan_in**0.5 - 1) < 0.02
    assert abs(tdeconv.weight.std().item() * (3 * 64 * 9) ** 0.5 - 1) < 0.02
    rnn, trnn = L.RNN(64, in_size=32), torch.nn.RNN(32, 64)
    assert abs(rnn.x2h.W.data.std() * 32**0.5 - 1) < 0.05
    assert abs(rnn.h2h.W.data.std() * 64**0.5 - 1) < 0.05 and rnn.h2h.b is None
    assert abs(trnn.weight_ih_l0.std().item() * (3 * 64) ** 0.5 - 1) < 0.05
    emb, temb = L.EmbedID(100, 50), torch.nn.Embedding(100, 50)
    assert abs(emb.W.data.std() - 1) < 0.03 and abs(temb.weight.std().item() - 1) < 0.03
