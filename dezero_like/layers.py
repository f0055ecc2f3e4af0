"""Layers: objects that own Parameters, ``import dezero_like.layers as L``.

A :class:`Layer` registers every :class:`~dezero_like.core.Parameter` and every
sub-layer assigned to one of its attributes, so ``params()`` can walk them all
(an optimizer updates exactly these). Weights are saved to and loaded from
NumPy ``.npz`` files, never with pickle.
"""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np

import dezero_like.functions as F
from dezero_like import cuda
from dezero_like.core import Parameter


class Layer:
    """Base class of layers and models.

    Assigning a Parameter or a Layer to an attribute registers it, in order::

        self.W = Parameter(...)   # a parameter of this layer
        self.l1 = Linear(10)      # a sub-layer: its parameters are ours too

    Subclasses write ``forward(*inputs)``; calling the layer calls it.
    """

    def __init__(self):
        object.__setattr__(self, "_param_names", [])

    def _names(self):
        names = self.__dict__.get("_param_names")
        if names is None:  # a subclass forgot super().__init__(): be forgiving
            names = []
            object.__setattr__(self, "_param_names", names)
        return names

    def __setattr__(self, name, value):
        names = self._names()
        if isinstance(value, (Parameter, Layer)):
            if name not in names:
                names.append(name)
            if isinstance(value, Layer) and "_attr_name" not in value.__dict__:
                object.__setattr__(value, "_attr_name", name)  # for error messages
        elif name in names:  # replaced by something that is not a parameter
            names.remove(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        names = self._names()
        if name in names:
            names.remove(name)
        object.__delattr__(self, name)

    def __call__(self, *inputs):
        outputs = self.forward(*inputs)
        return outputs

    def forward(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def _describe(self):
        """How error messages name this layer: ``layer 'l1' (Linear)``, or ``a Linear layer``."""
        name = self.__dict__.get("_attr_name")
        kind = type(self).__name__
        return f"layer {name!r} ({kind})" if name else f"a {kind} layer"

    # ---- parameters -----------------------------------------------------------
    def params(self):
        """Yield every Parameter of this layer and of its sub-layers (depth first), once each.

        A parameter shared by two layers (tied weights, or one layer used twice
        in a model) is yielded the first time it is met only, so an optimizer
        updates it once per step.
        """
        seen = set()
        for p in self._walk_params():
            if id(p) not in seen:
                seen.add(id(p))
                yield p

    def _walk_params(self):
        for name in self._names():
            obj = self.__dict__[name]
            if isinstance(obj, Layer):
                yield from obj._walk_params()
            else:
                yield obj

    def cleargrads(self):
        """Reset the gradient of every parameter (call before each backward)."""
        for param in self.params():
            param.cleargrad()

    def to_cpu(self):
        for param in self.params():
            param.to_cpu()
        return self

    def to_gpu(self):
        for param in self.params():
            param.to_gpu()
        return self

    def _flatten_params(self, out=None, prefix=""):
        """{"l0/W": Parameter, ...}: every parameter under a path-like key."""
        out = {} if out is None else out
        for name in self._names():
            obj = self.__dict__[name]
            key = prefix + name
            if isinstance(obj, Layer):
                obj._flatten_params(out, key + "/")
            else:
                out[key] = obj
        return out

    # ---- saving and loading -------------------------------------------------------
    def save_weights(self, path):
        """Write every parameter to the ``.npz`` file ``path`` (exactly this name).

        The file is written next to ``path`` under a temporary name and then
        renamed over it, so an interrupted save never leaves a half-written file.
        """
        params = self._flatten_params()
        missing = [k for k, p in params.items() if p.data is None]
        if missing:
            raise ValueError(
                f"cannot save weights: {', '.join(missing)} not initialised yet (a Linear "
                "layer without in_size creates W on its first call); run one forward pass first"
            )
        arrays = {key: cuda.as_numpy(p.data) for key, p in params.items()}
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise

    def load_weights(self, path):
        """Read parameters saved by :meth:`save_weights` into this layer.

        Everything is checked before anything is assigned: a file that is not a
        valid ``.npz``, that is truncated, that lacks a parameter or has an extra
        one, or whose arrays have the wrong shape or dtype raises ``ValueError``
        and leaves the layer unchanged. Pickled objects are never loaded.
        """
        params = self._flatten_params()
        arrays = _read_npz(path)
        problems = []
        missing = sorted(set(params) - set(arrays))
        extra = sorted(set(arrays) - set(params))
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if extra:
            problems.append(f"unexpected {', '.join(extra)}")
        for key in sorted(set(params) & set(arrays)):
            p, a = params[key], arrays[key]
            if p.data is None:  # not initialised yet (lazy Linear): take the file's array
                if a.dtype.kind not in "fc":
                    problems.append(f"{key} has dtype {a.dtype}, expected a floating dtype")
                continue
            if a.shape != p.data.shape:
                problems.append(f"{key} has shape {a.shape}, the model expects {p.data.shape}")
            if a.dtype != p.data.dtype:
                problems.append(f"{key} has dtype {a.dtype}, the model expects {p.data.dtype}")
        if problems:
            raise ValueError(
                f"{os.fspath(path)} does not match this {type(self).__name__}: "
                + "; ".join(problems) + ". The model was left unchanged."
            )
        for key, p in params.items():
            a = arrays[key]
            if p.data is not None and not isinstance(p.data, np.ndarray):
                a = cuda.as_cupy(a)  # the parameter lives on the GPU: keep it there
            p.data = a


def _read_npz(path):
    """All arrays of an ``.npz`` file, fully read (so a damaged member fails here)."""
    name = os.fspath(path)
    with open(name, "rb") as f:  # FileNotFoundError stays what it is
        raw = f.read()  # parsed from memory: no file handle can stay open on an error
    try:
        archive = np.load(io.BytesIO(raw), allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError("it is a single array, not an .npz archive of named arrays")
        with archive:
            return {key: archive[key] for key in archive.files}
    except Exception as e:  # noqa: BLE001 - any failure to parse untrusted bytes is bad input
        # a damaged archive surfaces as many types: BadZipFile, EOFError, KeyError,
        # RuntimeError or NotImplementedError from the zip reader, ValueError from NumPy
        reason = str(e) or type(e).__name__
        if "pickle" in reason.lower():
            reason = "it contains Python objects (pickled data), which are never loaded"
        raise ValueError(
            f"cannot load weights from {name}: {reason}. The file may be truncated or not "
            "written by save_weights; the model was left unchanged."
        ) from e


class Linear(Layer):
    """Fully connected layer: y = x @ W + b.

    ``W`` has shape (in_size, out_size) and is initialised with
    ``randn * sqrt(1 / in_size)``, which keeps the scale of the outputs close
    to that of the inputs. When ``in_size`` is not given, ``W`` is created on
    the first call from the width of the input (a "lazy" layer).
    """

    def __init__(self, out_size, nobias=False, dtype=np.float32, in_size=None):
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = np.dtype(dtype)
        self.W = Parameter(None, name="W")
        if in_size is not None:
            self._init_W()
        if nobias:
            self.b = None
        else:
            self.b = Parameter(np.zeros(out_size, dtype=self.dtype), name="b")

    def _init_W(self, xp=np):
        n_in, n_out = self.in_size, self.out_size
        W = xp.random.randn(n_in, n_out) * (1.0 / n_in) ** 0.5
        self.W.data = W.astype(self.dtype)

    def forward(self, x):
        if self.W.data is None:
            if x.ndim != 2:
                raise ValueError(f"Linear expects a batch of shape (N, in_size), got {x.shape}")
            self.in_size = x.shape[1]
            xp = cuda.get_array_module(x)
            self._init_W(xp)
            if xp is not np and self.b is not None:
                self.b.to_gpu()  # the input is on the GPU: keep the whole layer there
        try:
            return F.linear(x, self.W, self.b)
        except ValueError as e:  # F.linear checks the shapes; say which layer it was
            raise ValueError(
                f"{self._describe()}: {e}; check the output size of the layer before it, or "
                "flatten images first (F.flatten(x))"
            ) from None


# Convolutional and recurrent layers live in layers_conv; L.Conv2d, L.LSTM work too.
from dezero_like.layers_conv import LSTM, RNN, BatchNorm, Conv2d, Deconv2d, EmbedID  # noqa: E402, F401
