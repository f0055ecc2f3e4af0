"""GPU support through CuPy, imported only when it is used.

One code path serves both devices: functions ask ``get_array_module(x)`` for
``numpy`` or ``cupy`` and call the same array API on it. Nothing here imports
CuPy until a GPU is asked for, so ``import dezero_like`` stays fast and works on
machines without CuPy.
"""

from __future__ import annotations

import sys

import numpy as np

_GPU_HELP = (
    "Install CuPy for your CUDA version (pip install 'dezero_like[gpu]' or e.g. "
    "pip install cupy-cuda12x) on a machine with an NVIDIA GPU. In Colab: "
    "Runtime > Change runtime type > GPU."
)


def _cupy():
    """Import CuPy, or return None when it is not installed or sees no GPU."""
    try:
        import cupy
    except Exception:  # ImportError, or a CUDA library that fails to load
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # CUDA driver missing: CuPy imports but cannot run
        return None
    return cupy


def gpu_available():
    """True when CuPy is installed and a CUDA GPU can be used."""
    return _cupy() is not None


def __getattr__(name):
    # ``cuda.gpu_enable`` (the book's name) is computed on first use, not at import.
    if name == "gpu_enable":
        value = gpu_available()
        globals()["gpu_enable"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def require_gpu():
    """Return the cupy module, or raise a clear error saying how to get one."""
    cupy = _cupy()
    if cupy is None:
        reason = "CuPy is not installed" if "cupy" not in sys.modules else "no CUDA GPU is visible"
        raise RuntimeError(f"A GPU was requested but {reason}. {_GPU_HELP}")
    return cupy


def is_cupy_array(x):
    """True for a CuPy array (checked without importing CuPy)."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and isinstance(x, cupy.ndarray)


def get_array_module(x):
    """``numpy`` or ``cupy``, whichever holds ``x`` (an array or a Variable)."""
    if type(x) is np.ndarray:
        return np
    from dezero_like.core import Variable

    if isinstance(x, Variable):
        x = x.data
    if is_cupy_array(x):
        return sys.modules["cupy"]
    return np


def as_numpy(x):
    """A NumPy copy of ``x`` (a CuPy array, a number, a Variable's data)."""
    from dezero_like.core import Variable

    if isinstance(x, Variable):
        x = x.data
    if np.isscalar(x):
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    if is_cupy_array(x):
        return x.get()
    return np.asarray(x)


def as_cupy(x):
    """A CuPy array on the current GPU; a clear error when there is none."""
    from dezero_like.core import Variable

    if isinstance(x, Variable):
        x = x.data
    cupy = require_gpu()
    return cupy.asarray(x)
