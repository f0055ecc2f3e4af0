"""Mistakes met while solving the exercises as a learner, outside the self-checks themselves.

The self-checks' own known mistakes are in ``tests/test_exercises.py`` (``KNOWN_MISTAKES``).
Here: Newton's loop of step 33 updates a 0-d Variable with ``x.data = x.data - gx.data /
x.grad.data``, and NumPy's arithmetic on 0-d arrays gives a NumPy number (``np.float64``), not
an array. The Variable keeps it (step 23 allows it), but handing that Variable to NumPy
(``np.isclose(x, 1.0)``, ``np.asarray(x)``) raised "this Variable's data is on the GPU (or
absent)" on a CPU with no GPU at all. A 0-d Variable is a number to NumPy, whatever holds it.
"""

import numpy as np
import pytest

import dezero_like as dz


def _after_a_newton_update():
    x = dz.Variable(np.array(2.0))
    x.data = x.data - np.array(1.0) / np.array(2.0)  # 0-d arithmetic: a np.float64
    assert isinstance(x.data, np.generic)
    return x


def test_numpy_reads_a_variable_whose_data_became_a_numpy_number():
    x = _after_a_newton_update()
    assert np.isclose(x, 1.5)
    got = np.asarray(x)
    assert isinstance(got, np.ndarray) and got.shape == () and got == 1.5
    assert np.asarray(x, dtype=np.float32).dtype == np.float32


def test_numpy_refuses_a_variable_without_data_and_says_so():
    with pytest.raises(TypeError, match=r"holds no array \(its \.data is None\)"):
        np.asarray(dz.Variable(None))
