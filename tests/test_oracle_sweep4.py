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
