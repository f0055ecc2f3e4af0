"""Transforms: small callables that prepare one example before it is batched.

A :class:`~dezero_like.datasets.Dataset` applies ``transform`` to each input and
``target_transform`` to each label when an example is read, so the stored data
stays untouched (uint8 MNIST images stay uint8 in memory) and the model gets
what it needs (flat float32 vectors scaled to [0, 1])::

    from dezero_like import transforms as T
    f = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
    f(image)   # (28, 28) uint8 -> (784,) float32 in [0, 1]

Every transform is an object with ``__call__(x)`` and a readable ``repr``, so a
pipeline prints as what it does.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Compose", "Normalize", "Flatten", "AsType", "ToFloat", "ToInt"]


class Compose:
    """Apply several transforms in order: ``Compose([f, g])(x) == g(f(x))``.

    An empty list gives the identity.
    """

    def __init__(self, transforms=()):
        transforms = list(transforms)
        for t in transforms:
            if not callable(t):
                raise TypeError(f"Compose takes callables, got {type(t).__name__}: {t!r}")
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        inner = ", ".join(repr(t) for t in self.transforms)
        return f"Compose([{inner}])"


class Normalize:
    """``(x - mean) / std``, elementwise; ``mean``/``std`` may be numbers or arrays.

    With Python numbers the result keeps a float input's dtype (float32 stays
    float32); apply :class:`ToFloat` first for integer images, otherwise NumPy
    promotes ``uint8`` to float64. ``Normalize(0, 255)`` maps pixels to [0, 1].
    """

    def __init__(self, mean=0.0, std=1.0):
        if np.any(np.asarray(std) == 0):
            raise ValueError("Normalize: std must not be zero")
        self.mean = mean
        self.std = std

    def __call__(self, x):
        mean, std = self.mean, self.std
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            # arrays of statistics are cast so that they do not promote the dtype
            if isinstance(mean, np.ndarray):
                mean = mean.astype(x.dtype, copy=False)
            if isinstance(std, np.ndarray):
                std = std.astype(x.dtype, copy=False)
        return (x - mean) / std

    def __repr__(self):
        return f"Normalize(mean={self.mean!r}, std={self.std!r})"


class Flatten:
    """Reshape one example to a 1-D vector: (28, 28) -> (784,)."""

    def __call__(self, x):
        return x.reshape(-1)

    def __repr__(self):
        return "Flatten()"


class AsType:
    """Convert to ``dtype`` (float32 by default: the dtype models train in)."""

    def __init__(self, dtype=np.float32):
        self.dtype = np.dtype(dtype)

    def __call__(self, x):
        return np.asarray(x).astype(self.dtype, copy=False)

    def __repr__(self):
        return f"{type(self).__name__}({self.dtype.name})"


class ToFloat(AsType):
    """Convert to a float dtype, float32 by default."""

    def __init__(self, dtype=np.float32):
        super().__init__(dtype)
        if self.dtype.kind != "f":
            raise TypeError(f"ToFloat needs a floating dtype, got {self.dtype}")


class ToInt(AsType):
    """Convert to an integer dtype (labels), ``int64`` by default."""

    def __init__(self, dtype=np.int64):
        super().__init__(dtype)
        if self.dtype.kind not in "iu":
            raise TypeError(f"ToInt needs an integer dtype, got {self.dtype}")
