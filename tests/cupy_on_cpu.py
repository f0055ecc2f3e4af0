"""CuPy on the CPU: an emulator that runs the package's GPU code without a GPU.

CI has no GPU, so every test marked ``gpu`` skips there, and the GPU code paths
(``xp is not np`` branches, ``dezero_like.cuda_kernels``) would go untested until
someone with a GPU runs them. With ``DEZERO_LIKE_CUPY_ON_CPU=1``, tests/conftest.py
puts this module in ``sys.modules`` as ``cupy``, and those tests run against it
(tests/test_cupy_on_cpu.py does that in CI).

What is real here, and what is not:

* the arrays are NumPy arrays in a wrapper class that behaves like CuPy's where the
  package could go wrong: ``np.asarray(gpu_array)`` raises as in CuPy (no implicit
  conversion), a NumPy array mixed into a GPU operation is refused, reductions give
  0-d arrays rather than scalars, ``.get()`` copies to the host, and an integer
  index out of range wraps around as CuPy's indexing does;
* what CuPy does not have is refused here too, though NumPy has it: the names of
  ``_NOT_IN_CUPY`` (``cupy.errstate``, ``np.insert(gpu_array, ...)``, which CuPy's
  ``__array_function__`` cannot run, ``gpu_array.resize``), ``operator.index`` of an
  array (a GPU array is no list index nor ``range`` bound), and a raw kernel's grid or
  block that is not a tuple;
* the kernels are the package's own CUDA C, compiled by g++ for the CPU: a small
  prelude defines ``threadIdx``, ``blockIdx``, ``__shared__`` and
  ``__syncthreads()`` (a block's threads are real threads meeting at a barrier when
  the kernel synchronises, and one loop otherwise). A raw kernel's arguments are
  checked against its C signature (a Python ``int`` where the kernel takes ``int``
  is refused: CuPy would pass 64 bits);
* a launch's grid and block are taken as CuPy takes them (a 0 becomes 1) and
  refused where CUDA refuses them (more than 1024 threads in a block, more than
  2**31 - 1 blocks in x or 65535 in y and z);
* nothing here says anything about speed, memory or CUDA's own behaviour
  (shared memory and register limits, real concurrency between blocks): that
  needs a GPU (``python -m pytest -m gpu`` on one), or for the limits a check of
  the source (tests/test_kernel_launches.py, tests/test_kernels_compile.py).

By default it computes with NumPy, so a GPU result here is NumPy's bit for bit;
a real GPU's is not, and a test that compares the two exactly passes here and
fails there. ``CUPY_ON_CPU_NOISE=1`` (the noise mode) makes it round as
differently as a GPU may, never more:

* sums in another order: ``sum``, ``mean``, ``var``, ``std``, ``prod``, ``add.reduce``
  (as ``cupy.f(a)``, ``np.f(a)`` or ``a.f()``) shuffle the summed axes first; ``@``,
  ``matmul``, ``dot``, ``tensordot`` and ``einsum`` shuffle each contracted axis in
  both operands alike (CuPy reduces in blocks, cuBLAS in tiles, NumPy pairwise);
  ``add.at`` adds in another order (a GPU's atomic adds land in any order);
* exp, log, tanh, pow and the other transcendental ufuncs (and complex products and
  quotients, which thrust computes by other formulas) move their result by
  -2..2 ulp, by a hash of its bits (CUDA's libdevice and glibc are each within
  1-2 ulp, not the same function); 0, +-1, inf, nan, and a result equal to an
  input stay exact, as does ``pow`` to an integer power of at most 2, and sqrt,
  real division and reciprocal (correctly rounded in CUDA too);
* the package's kernels, compiled by g++, have the same noisy exp, log, tanh and
  pow, and are compiled with ``-ffp-contract=fast`` (and ``-mfma`` where the CPU
  has it), so ``a * b + c`` becomes one fused multiply-add, as NVRTC makes it;
* ``cupy.random.seed(n)`` draws other numbers than ``numpy.random.seed(n)``, as
  cuRAND does.

Integers, comparisons, indexing, copies, max and min, and argmax stay exact: a
GPU gives those exactly too. Every shuffle is fixed by the length shuffled and
``CUPY_ON_CPU_NOISE_SEED`` (default 0), so a failure repeats; another seed gives
other orders and other ulps.
"""

import collections
import ctypes
import functools as _functools
import hashlib
import os
import re
import subprocess
import sys as _sys
import tempfile
import types

import numpy as _np

__version__ = "14.2.0-cpu-emulation"
EMULATED = True

# --------------------------------------------------------------------------- noise
# CUPY_ON_CPU_NOISE=1: the arithmetic of a real GPU, which is not NumPy's bit for bit.
NOISE = os.environ.get("CUPY_ON_CPU_NOISE") == "1"
_NOISE_SEED = int(os.environ.get("CUPY_ON_CPU_NOISE_SEED", "0"))
# ufuncs whose CUDA versions (libdevice) are within 1-2 ulp of the true value, as glibc's
# are, but not the same function: exp, log, tanh, pow... Not sqrt, division or reciprocal,
# which CUDA rounds correctly unless told otherwise (CuPy does not pass -use_fast_math).
_TRANSCENDENTAL = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
                   "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
                   "arcsinh", "arccosh", "arctanh", "power", "float_power", "cbrt",
                   "logaddexp", "logaddexp2", "hypot"}
# complex products and quotients: CuPy's (thrust's) formulas, contracted into FMAs by NVRTC,
# are not NumPy's, and neither is correctly rounded
_COMPLEX_ARITHMETIC = {"multiply", "true_divide", "divide", "reciprocal"}
_PERMUTATIONS = {}


def _permutation(n, salt=0):
    """A fixed shuffle of ``range(n)`` (the same for every call with this n and salt, so a
    failure repeats whatever order the tests run in)."""
    key = (n, salt)
    if key not in _PERMUTATIONS:
        _PERMUTATIONS[key] = _np.random.default_rng([_NOISE_SEED, n, salt]).permutation(n)
    return _PERMUTATIONS[key]


def _inexact(*arrays):
    return any(isinstance(a, _np.ndarray) and a.dtype.kind in "fc" for a in arrays)


def _shuffled(a, axis, salt=0):
    """``a`` with its entries along ``axis`` in another order: a sum over that axis is then
    summed in another order, as a GPU's block reduction or cuBLAS's tiling sums it."""
    n = a.shape[axis]
    return a if n < 3 else a.take(_permutation(n, salt), axis=axis)


def _ulps(result, inputs=()):
    """``result`` moved by -2..2 ulp, element by element: as far as two implementations of
    exp, log, tanh or pow can be apart when each is within 1-2 ulp (CUDA's libdevice, and
    glibc). How far depends on the value's bits only (a hash of them), so the same input
    gives the same output, as a real maths library does. Left exact: 0, +-1, inf, nan and a
    result equal to an input (exp(0) = 1, log(1) = 0, pow(x, 1) = x are exact everywhere)."""
    if not isinstance(result, _np.ndarray) or result.dtype.kind not in "fc" or result.size == 0:
        return result
    if result.dtype.kind == "c":  # the real and imaginary parts, each moved on its own
        flat = _np.ascontiguousarray(result).reshape(-1)
        return _ulps(flat.view(flat.real.dtype)).view(result.dtype).reshape(result.shape)
    uint = {2: _np.uint16, 4: _np.uint32, 8: _np.uint64}[result.dtype.itemsize]
    bits = result.view(uint).astype(_np.uint64)
    mix = (bits + _np.uint64(_NOISE_SEED)) * _np.uint64(0x9E3779B97F4A7C15)
    steps = ((mix >> _np.uint64(59)) % _np.uint64(5)).astype(_np.int64) - 2  # -2 .. 2
    keep = ~_np.isfinite(result) | (result == 0) | (_np.abs(result) == 1)
    for x in inputs:
        if isinstance(x, _np.ndarray) and x.dtype.kind == "f":
            keep |= _np.broadcast_to(result == x, result.shape)
        elif isinstance(x, (int, float, _np.number)):
            keep |= result == x
    steps[keep] = 0
    out = result.copy()
    for _ in range(2):
        move = steps != 0
        toward = _np.where(steps[move] > 0, _np.inf, -_np.inf).astype(out.dtype)
        out[move] = _np.nextafter(out[move], toward)
        steps -= _np.sign(steps)
    return out


def _exact_power(exponent):
    """pow(x, y) with y an integer of at most 2 in size (x * x, 1 / x): exact on a GPU too."""
    y = _np.asarray(exponent)
    return y.dtype.kind in "iubf" and bool(_np.all((y == _np.round(y)) & (_np.abs(y) <= 2)))


def _noisy_ufunc(ufunc, method, args, kwargs, compute):
    """``compute(args, kwargs)`` (the ufunc as NumPy runs it), in the GPU's noise: matmul and
    ``add.reduce`` summed in another order, a transcendental function off by an ulp or two."""
    name = ufunc.__name__
    if name == "matmul" and method == "__call__" and _inexact(*args):
        if "axes" not in kwargs and "axis" not in kwargs:
            args = _matrix_product_in_another_order(*args)
        return compute(args, kwargs)
    if name == "add" and method == "reduce" and _inexact(args[0]):
        axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
        return compute([_reduced_in_another_order(args[0], axis), *args[1:]], kwargs)
    if name == "add" and method == "at" and _inexact(args[0]) and len(args) == 3:
        return _scatter_add_in_another_order(*args)
    noisy = name in _TRANSCENDENTAL or (
        name in _COMPLEX_ARITHMETIC and any(isinstance(a, _np.ndarray) and a.dtype.kind == "c"
                                            for a in args))
    if (not noisy or method != "__call__"
            or name in ("power", "float_power") and _exact_power(args[1])):
        return compute(args, kwargs)
    outs = kwargs.get("out")
    if outs is not None:  # in place (exp(y, out=y)): the inputs as they were, for _ulps
        inputs = [a.copy() if isinstance(a, _np.ndarray) else a for a in args]
        result = compute(args, kwargs)
        for o in outs:
            o[...] = _ulps(o, inputs)
        return result
    result = compute(args, kwargs)
    return tuple(_ulps(r, args) for r in result) if isinstance(result, tuple) else _ulps(
        result, args)


def _scatter_add_in_another_order(a, indices, values):
    """``add.at(a, indices, values)`` with the additions made in another order: a GPU's
    atomic adds to one element land in whatever order the threads reach it. Each update's
    flat target is found by indexing an array of flat positions with the same indices."""
    targets = _np.arange(a.size).reshape(a.shape)[indices]
    values = _np.broadcast_to(_np.asarray(values), targets.shape).ravel()
    targets = targets.ravel()
    order = _permutation(targets.size, 2) if targets.size >= 3 else slice(None)
    flat = a.reshape(-1)  # a view when a is contiguous, else a copy written back
    _np.add.at(flat, targets[order], values[order])
    if not _np.shares_memory(flat, a):
        a[...] = flat.reshape(a.shape)


def _reduced_in_another_order(a, axis):
    a = _np.asarray(a)
    if axis is None:
        axes = range(a.ndim)
    else:
        axes = [ax % a.ndim for ax in (axis if isinstance(axis, tuple) else (axis,))]
    for salt, ax in enumerate(axes):
        a = _shuffled(a, ax, salt)
    return a


def _reduction(func):
    """``sum``, ``mean``, ``var``... over their axes, in another order."""
    def run(a, *args, **kwargs):
        if "where" in kwargs or not _inexact(_np.asarray(a)):
            return func(a, *args, **kwargs)
        axis = kwargs.get("axis", args[0] if args else None)
        return func(_reduced_in_another_order(a, axis), *args, **kwargs)
    return run


def _contraction(a, b, axes_a, axes_b):
    """``a`` and ``b`` with each pair of contracted axes in the same other order."""
    for salt, (i, j) in enumerate(zip(axes_a, axes_b)):
        n = a.shape[i]
        if n >= 3:
            a, b = a.take(_permutation(n, salt), axis=i), b.take(_permutation(n, salt), axis=j)
    return a, b


def _matrix_product_in_another_order(a, b):
    """``a`` and ``b`` of ``a @ b`` (or ``dot``) with the summed axis, a's last and b's first
    or next to last, in the same other order."""
    a, b = _np.asarray(a), _np.asarray(b)
    if a.ndim and b.ndim and _inexact(a, b):
        a, b = _contraction(a, b, [a.ndim - 1], [0 if b.ndim == 1 else b.ndim - 2])
    return a, b


def _dot(func):
    def run(a, b, *args, **kwargs):
        return func(*_matrix_product_in_another_order(a, b), *args, **kwargs)
    return run


def _tensordot(a, b, axes=2):
    a, b = _np.asarray(a), _np.asarray(b)
    if _np.ndim(axes) == 0:
        axes_a, axes_b = list(range(a.ndim - int(axes), a.ndim)), list(range(int(axes)))
    else:
        axes_a, axes_b = ([x] if isinstance(x, int) else list(x) for x in axes)
    if _inexact(a, b):
        a, b = _contraction(a, b, [x % a.ndim for x in axes_a], [x % b.ndim for x in axes_b])
    return _np.tensordot(a, b, axes)


def _einsum(subscripts, *operands, **kwargs):
    """einsum with every summed index in another order (every operand's axes of that index
    shuffled alike); a call it cannot read (operands interleaved with their subscripts) is
    computed as NumPy does, then moved by an ulp or two."""
    if not isinstance(subscripts, str):
        return _ulps(_np.einsum(subscripts, *operands, **kwargs))
    spec = subscripts.replace(" ", "")
    inputs, _, output = spec.partition("->")
    terms = inputs.split(",")
    letters = [c for c in inputs if c.isalpha()]
    if "->" not in spec:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    summed = sorted(set(letters) - set(output))
    operands = [_np.asarray(o) for o in operands]
    if _inexact(*operands):
        for salt, letter in enumerate(summed):
            for k, (term, o) in enumerate(zip(terms, operands)):
                head, dots, tail = term.partition("...")
                labels = list(head) + ([None] * (o.ndim - len(head) - len(tail)) if dots
                                       else []) + list(tail)
                for ax, label in enumerate(labels):
                    if label == letter and o.shape[ax] >= 3:
                        o = o.take(_permutation(o.shape[ax], salt), axis=ax)
                operands[k] = o
    return _np.einsum(subscripts, *operands, **kwargs)


# the NumPy functions that sum, called as cupy.f(a), np.f(a) or a.f()
_REORDERED = {_np.sum: _reduction(_np.sum), _np.mean: _reduction(_np.mean),
              _np.var: _reduction(_np.var), _np.std: _reduction(_np.std),
              _np.prod: _reduction(_np.prod), _np.nansum: _reduction(_np.nansum),
              _np.nanmean: _reduction(_np.nanmean), _np.dot: _dot(_np.dot),
              _np.tensordot: _tensordot, _np.einsum: _einsum}
_REORDERED_METHODS = {"sum": _np.sum, "mean": _np.mean, "var": _np.var, "std": _np.std,
                      "prod": _np.prod, "dot": _np.dot}


def _numpy_function(func):
    """``func``, or in the noise mode the version that sums in another order."""
    return _REORDERED.get(func, func) if NOISE else func



# --------------------------------------------------------------------------- names
# What NumPy 2.4 has and CuPy 14 does not (dir(numpy) against dir(cupy), and the same for
# numpy.linalg, the ndarray and numpy.random.RandomState, made with both installed). The
# emulator takes everything else from NumPy, so without these lists ``cupy.errstate``,
# ``np.insert(gpu_array, ...)`` or ``gpu_array.resize(...)`` would pass here and fail on a GPU.
NOT_IN_CUPY_MADE_WITH = ("2.4.6", "14.2.0")  # the NumPy and CuPy the lists come from
_NOT_IN_CUPY = {
    "numpy": frozenset({
        "False_", "ScalarType", "True_", "asmatrix", "block", "bmat", "busday_count",
        "busday_offset", "busdaycalendar", "bytes_", "char", "character", "clongdouble",
        "complex256", "core", "ctypeslib", "datetime64", "datetime_as_string", "datetime_data",
        "dtypes", "einsum_path", "emath", "errstate", "f2py", "flexible", "float128",
        "frompyfunc", "fromregex", "geomspace", "get_include", "getbufsize", "geterr",
        "geterrcall", "histogram_bin_edges", "info", "insert", "is_busday", "isnat",
        "little_endian", "longdouble", "ma", "matrix", "matvec", "memmap", "nanpercentile",
        "nanquantile", "ndenumerate", "nditer", "nested_iters", "object_", "polyder",
        "polydiv", "polyint", "rec", "recarray", "record", "sctypeDict", "setbufsize",
        "seterr", "seterrcall", "show_runtime", "spacing", "str_", "strings", "test",
        "timedelta64", "typecodes", "unstack", "vecdot", "vecmat", "void"}),
    "numpy.linalg": frozenset({
        "diagonal", "matrix_norm", "multi_dot", "outer", "svdvals", "tensordot", "test",
        "trace", "vecdot", "vector_norm"}),
    "ndarray": frozenset({"ctypes", "getfield", "resize", "setfield", "setflags", "to_device"}),
    "random": frozenset({"get_state", "set_state", "tomaxint"}),
}


def _missing(where, name):
    return AttributeError(f"{where} has no attribute {name!r} (the emulator takes it from "
                          "NumPy, but CuPy 14 does not have it)")


# --------------------------------------------------------------------------- arrays
HOST_COPIES = collections.Counter()  # host -> device copies, by the function that made them
WAITS = collections.Counter()  # waits for the device: synchronize(), and reading values back
# Kernel launches, by what launched them: every ufunc call, every function or method that
# computes a new array (not views, not ``empty``), fancy indexing, assignment into an
# array, and every ElementwiseKernel / raw kernel call. A GPU's cost per launch is a few
# microseconds of Python and driver time, so for small arrays this count is the bill.
LAUNCHES = collections.Counter()
_NO_LAUNCH = {"reshape", "transpose", "view", "squeeze", "ravel", "swapaxes", "expand_dims",
              "broadcast_to", "empty", "empty_like", "get", "item", "tolist", "result_type",
              "dtype", "get_array_module", "asnumpy", "can_cast", "iscomplexobj", "isscalar",
              "shape", "ndim", "size"}


# Every call the emulator hands to NumPy, as CuPy would be called: ("cupy.zeros", ("dtype",)),
# ("cupy.ndarray.sum", ("axis", "keepdims")), ("cupy.add.at", ()), np.pad(gpu_array, ...) as
# ("cupy.pad", ...). NumPy takes keywords that CuPy does not (np.sum's where=, initial=): with
# CUPY_ON_CPU_RECORD=<folder>, the set is written there at exit (calls_<pid>.txt, one repr a
# line), and tests/test_cupy_on_cpu.py checks each name and keyword against the real CuPy.
CALLS = set()


def _record(path, kwargs):
    if not CALLS and os.environ.get("CUPY_ON_CPU_RECORD"):
        import atexit

        atexit.register(_write_calls, os.environ["CUPY_ON_CPU_RECORD"])
    CALLS.add((path, tuple(sorted(kwargs))))


def _write_calls(folder):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"calls_{os.getpid()}.txt"), "w") as f:
        f.writelines(f"{call!r}\n" for call in sorted(CALLS))


def calls_cupy_refuses(cupy, calls):
    """The recorded ``calls`` ({(path, keywords)}) that the real ``cupy`` module would refuse:
    ``["cupy.sum: no keyword 'where'", ...]``. Keywords are read from each function's
    signature, or for CuPy's compiled methods from the signature their docstring starts with;
    a ufunc call takes ``out``, ``dtype`` and ``casting`` (cupy/_core/_kernel.pyx)."""
    import inspect

    problems = []
    for path, keywords in sorted(calls):
        obj = cupy
        try:
            for part in path.split(".")[1:]:
                obj = getattr(obj, part)
        except AttributeError:
            problems.append(f"{path}: CuPy has no such name")
            continue
        if type(obj).__name__ == "ufunc":  # cupy.exp(...): a call of the ufunc itself
            allowed = {"out", "dtype", "casting"}
        else:
            try:
                params = inspect.signature(obj).parameters.values()
            except (TypeError, ValueError):  # compiled: "_ndarray_base.sum(self, axis=None...)"
                head = (obj.__doc__ or "").strip().split("\n")[0]
                match = re.match(r"[\w.]+(\(.*\))", head.split(" -> ")[0])
                if match is None:
                    continue  # nothing to read the keywords from
                params = inspect.signature(eval(f"lambda {match.group(1)[1:-1]}: 0", {})
                                           ).parameters.values()
            if any(p.kind is p.VAR_KEYWORD for p in params):
                continue
            allowed = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
        problems += [f"{path}: no keyword {k!r}" for k in keywords if k not in allowed]
    return problems


_ADD_AT_DTYPES = {"int32", "int64", "float16", "float32", "float64", "uint32", "uint64"}


def _unwrap(obj, allow_numpy=False, where="argument"):
    if isinstance(obj, ndarray):
        return obj._a
    if isinstance(obj, _np.ndarray) and not allow_numpy:
        raise TypeError(f"Unsupported type {type(obj)}")
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwrap(o, allow_numpy, where) for o in obj)
    return obj


def _check_ufunc(ufunc, method, inputs):
    """What CuPy's ufuncs refuse: a list or tuple operand (``a + [1, 2]``: CuPy converts no
    sequence), and ``reduce``/``accumulate`` of any ufunc but add and multiply (CuPy 14
    has them as sum/prod and cumsum/cumprod only; ``reduceat`` is add's alone)."""
    operands = (inputs[0], *inputs[2:]) if method == "at" else inputs  # at's 2nd: indices
    for x in operands if method != "outer" else ():  # outer makes arrays of its operands
        if isinstance(x, (list, tuple)):
            raise TypeError(f"Unsupported type {type(x)}")
    supported = {"reduce": ("add", "multiply"), "accumulate": ("add", "multiply"),
                 "reduceat": ("add",)}.get(method)
    if supported is not None and ufunc.__name__ not in supported:
        raise NotImplementedError(f"`cupy_{ufunc.__name__}.{method}` is not supported yet")


def _wrap(obj):
    if isinstance(obj, _np.ndarray) and not isinstance(obj, ndarray):
        return ndarray._from(obj)
    if isinstance(obj, _np.generic):  # CuPy returns 0-d arrays, not scalars
        return ndarray._from(_np.asarray(obj))
    if isinstance(obj, tuple):
        return tuple(_wrap(o) for o in obj)
    if isinstance(obj, list):
        return [_wrap(o) for o in obj]
    return obj


class ndarray:
    __slots__ = ("_a", "__weakref__")  # CuPy's ndarray takes weak references too
    __array_priority__ = 100

    def __init__(self, shape, dtype=float):
        self._a = _np.empty(shape, dtype)

    @classmethod
    def _from(cls, a):
        obj = object.__new__(cls)
        obj._a = a
        return obj

    # CuPy refuses implicit conversion
    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _check_ufunc(ufunc, method, inputs)
        _record(f"cupy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"),
                kwargs)
        LAUNCHES[ufunc.__name__ + ("" if method == "__call__" else "." + method)] += 1
        args = [_unwrap(x) for x in inputs]
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        with _np.errstate(all="ignore"):  # CuPy never warns about inf or nan
            if NOISE:
                result = _noisy_ufunc(ufunc, method, args, kwargs,
                                      lambda a, k: getattr(ufunc, method)(*a, **k))
            else:
                result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if method == "at":
            return None
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        # CuPy runs np.f(gpu_array) as cupy.f (same module path): without one, NumPy raises
        # "no implementation found for 'numpy.f' on types that implement __array_function__"
        if func.__name__ in _NOT_IN_CUPY.get(func.__module__, ()):
            return NotImplemented
        _record("cupy" + func.__module__[len("numpy"):] + "." + func.__name__, kwargs)
        func = _numpy_function(func)
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    def get(self, stream=None, order="C", out=None):
        WAITS["get"] += 1
        return _np.array(self._a)

    def set(self, arr):
        self._a[...] = arr

    def __getattr__(self, name):
        if name.startswith("__array_"):  # CuPy has no __array_interface__ or __array_struct__
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        if name in _NOT_IN_CUPY["ndarray"]:
            raise _missing("'cupy.ndarray' object", name)
        value = getattr(self._a, name)
        if NOISE and name in _REORDERED_METHODS:  # a.sum(): np.sum(a), in another order
            value = _functools.partial(_REORDERED[_REORDERED_METHODS[name]], self._a)
        if callable(value):
            def method(*args, **kwargs):
                _record(f"cupy.ndarray.{name}", kwargs)
                result = value(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
                if name not in _NO_LAUNCH and result is not self._a and not (
                        isinstance(result, _np.ndarray) and result.base is self._a):
                    LAUNCHES[f"ndarray.{name}"] += 1
                return _wrap(result)
            return method
        return _wrap(value) if isinstance(value, _np.ndarray) else value

    @property
    def T(self):
        return ndarray._from(self._a.T)

    @property
    def flags(self):  # CuPy's flags: no ``writeable`` (every CuPy array can be written)
        flags = self._a.flags
        return Flags(flags.c_contiguous, flags.f_contiguous, flags.owndata)

    @property
    def device(self):
        return cuda.Device(0)

    @property
    def data(self):  # CuPy's MemoryPointer: ``.ptr`` is the address of the first element
        return types.SimpleNamespace(ptr=self._a.__array_interface__["data"][0])

    def item(self):
        WAITS["item"] += 1
        return self._a.item()

    def tolist(self):
        WAITS["tolist"] += 1
        return self._a.tolist()

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        for row in self._a:
            yield _wrap(row if isinstance(row, _np.ndarray) else _np.asarray(row))

    def __bool__(self):
        WAITS["__bool__"] += 1
        return bool(self._a)

    def __float__(self):
        WAITS["__float__"] += 1
        return float(self._a)

    def __int__(self):
        WAITS["__int__"] += 1
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return repr(self._a).replace("array", "cupy_array", 1)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a, spec)

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        if any(isinstance(p, (ndarray, _np.ndarray, list)) for p in parts):
            LAUNCHES["take (fancy indexing)"] += 1
        try:
            return _wrap(self._a[_wrapped_around(_unwrap(key, allow_numpy=True), self._a.shape)])
        except IndexError as e:  # a Python int out of range: CuPy's message has a capital I
            # (cupy/_core/_routines_indexing.pyx, _view_getitem)
            message = str(e)
            if message.startswith("index ") and "is out of bounds for axis" in message:
                raise IndexError("I" + message[1:]) from None
            raise

    def __setitem__(self, key, value):
        parts = key if isinstance(key, tuple) else (key,)
        fancy = any(isinstance(p, (ndarray, _np.ndarray, list)) for p in parts)
        if isinstance(value, _np.ndarray) and value.ndim and not fancy:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")  # as CuPy
        LAUNCHES["setitem"] += 1
        key = _wrapped_around(_unwrap(key, allow_numpy=True), self._a.shape)
        self._a[key] = _unwrap(value, allow_numpy=True)

    def __copy__(self):
        return ndarray._from(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray._from(self._a.copy())

    def __reduce__(self):
        raise TypeError("the emulated CuPy array cannot be pickled; call .get() first")

    __hash__ = None


class Flags:
    """``cupy.ndarray.flags`` (cupy/_core/flags.pyx): three flags, read-only."""

    def __init__(self, c_contiguous, f_contiguous, owndata):
        self._c_contiguous, self._f_contiguous, self._owndata = (c_contiguous, f_contiguous,
                                                                 owndata)

    c_contiguous = property(lambda self: self._c_contiguous)
    f_contiguous = property(lambda self: self._f_contiguous)
    owndata = property(lambda self: self._owndata)
    fnc = property(lambda self: self.f_contiguous and not self.c_contiguous)
    forc = property(lambda self: self.f_contiguous or self.c_contiguous)

    def __getitem__(self, name):
        names = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                 "OWNDATA": "owndata"}
        if name not in names:
            raise KeyError(f"{name} is not defined for cupy.ndarray.flags")
        return getattr(self, names[name])

    def __repr__(self):
        return "\n".join(f"  {name} : {self[name]}"
                         for name in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA"))


def _as_index_array(part):
    """A list index as CuPy takes it: converted to an array (integer or boolean)."""
    if not isinstance(part, (list, tuple)):
        return part
    try:
        array = _np.asarray(part)
    except (TypeError, ValueError):
        return part
    if array.size == 0:
        return array.astype(_np.int32)  # an empty list is an empty integer index (as CuPy)
    return array if array.dtype.kind in "iub" else part


def _wrapped_around(key, shape):
    """``key`` with its integer index arrays (and lists, which CuPy makes arrays) taken
    modulo their axis' length: CuPy's gather (``take``) and scatter kernels (assignment,
    ``add.at``) wrap an out-of-range index around, ``i % n`` then ``+ n`` if negative,
    instead of raising IndexError. A Python int is checked, as CuPy checks it."""
    parts = tuple(_as_index_array(p) for p in (key if isinstance(key, tuple) else (key,)))
    def axes(p):
        return p.ndim if isinstance(p, _np.ndarray) and p.dtype == bool else 1

    consumed = sum(axes(p) for p in parts if p is not None and p is not Ellipsis)
    out, axis = [], 0
    for part in parts:
        if part is Ellipsis:
            axis += len(shape) - consumed
            out.append(part)
            continue
        if part is None:
            out.append(part)
            continue
        if isinstance(part, _np.ndarray) and part.dtype.kind in "iu" and axis < len(shape):
            part = part % shape[axis] if shape[axis] else part
        out.append(part)
        axis += axes(part)
    return tuple(out) if isinstance(key, tuple) else out[0]


def _binary(ufunc, reflected=False):
    def op(self, other):
        if getattr(type(other), "__array_ufunc__", False) is None:
            return NotImplemented  # as CuPy's _should_use_rop: the other side's operator runs
        return ufunc(other, self) if reflected else ufunc(self, other)
    return op


def _inplace(ufunc):
    def op(self, other):
        ufunc(self, other, out=(self,))
        return self
    return op


for _name, _uf in [("add", _np.add), ("sub", _np.subtract), ("mul", _np.multiply),
                   ("truediv", _np.true_divide), ("floordiv", _np.floor_divide),
                   ("mod", _np.remainder), ("pow", _np.power), ("matmul", _np.matmul),
                   ("and", _np.bitwise_and), ("or", _np.bitwise_or), ("xor", _np.bitwise_xor),
                   ("lshift", _np.left_shift), ("rshift", _np.right_shift)]:
    setattr(ndarray, f"__{_name}__", _binary(_uf))
    setattr(ndarray, f"__r{_name}__", _binary(_uf, reflected=True))
    if _name != "matmul":  # CuPy has no __imatmul__: a @= b is a = a @ b, a new array
        setattr(ndarray, f"__i{_name}__", _inplace(_uf))
for _name, _uf in [("lt", _np.less), ("le", _np.less_equal), ("gt", _np.greater),
                   ("ge", _np.greater_equal), ("eq", _np.equal), ("ne", _np.not_equal)]:
    setattr(ndarray, f"__{_name}__", _binary(_uf))
ndarray.__neg__ = lambda self: _np.negative(self)
ndarray.__pos__ = lambda self: _np.positive(self)
ndarray.__abs__ = lambda self: _np.absolute(self)
ndarray.__invert__ = lambda self: _np.invert(self)


# --------------------------------------------------------------------------- namespace
def _from_host(name):
    numpy_func = getattr(_np, name)

    def copy(obj, *args, **kwargs):
        _record(f"cupy.{name}", kwargs)
        if not isinstance(obj, ndarray) and _np.ndim(obj) == 0:
            LAUNCHES[f"{name} (0-d: a fill kernel)"] += 1  # CuPy fills, copies nothing
        elif not isinstance(obj, ndarray):
            HOST_COPIES[name] += 1
        elif name == "asarray":  # of a device array: the array itself when nothing changes
            result = _np.asarray(obj._a, *args, **kwargs)
            if result is obj._a:
                return obj
            LAUNCHES["asarray"] += 1
            return _wrap(result)
        else:
            LAUNCHES[name] += 1
        return _wrap(_np.array(numpy_func(_unwrap(obj, allow_numpy=True), *args, **kwargs)))
    copy.__name__ = name
    return copy


asarray = _from_host("asarray")
array = _from_host("array")


def ascontiguousarray(a, dtype=None):
    if not isinstance(a, ndarray):  # CuPy's takes device arrays only
        raise TypeError(f"Argument 'a' has incorrect type (expected cupy.ndarray, got "
                        f"{type(a).__name__})")
    result = _np.ascontiguousarray(a._a, dtype)
    if result is not a._a and result.base is not a._a:
        LAUNCHES["ascontiguousarray"] += 1  # a copy kernel
    return _wrap(result)


def asnumpy(a, stream=None):
    return a.get() if isinstance(a, ndarray) else _np.asarray(a)


def get_array_module(*args):
    return _sys.modules[__name__] if any(isinstance(a, ndarray) for a in args) else _np


def fuse(*args, **kwargs):
    if args and callable(args[0]):
        return args[0]
    return lambda f: f


def _wrap_function(func, where="cupy"):
    run = _numpy_function(func)

    def call(*args, **kwargs):
        _record(f"{where}.{call.__name__}", kwargs)
        if call.__name__ not in _NO_LAUNCH:
            LAUNCHES[call.__name__] += 1
        return _wrap(run(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    call.__name__ = getattr(func, "__name__", "function")
    return call


class _Random:
    """``cupy.random``: a generator of its own, as CuPy's (cuRAND, per device) is.

    ``np.random.seed`` does not reach it; CuPy seeds it from ``CUPY_SEED`` or, without
    that, from the operating system, so two processes draw differently. Seeded with the
    same number as NumPy, it draws NumPy's numbers here, but not on a GPU (cuRAND's
    XORWOW is another generator): in the noise mode the seed is mixed with a constant, so
    that it draws others."""

    def __init__(self):
        seed = os.environ.get("CUPY_SEED")
        self.seed(None if seed is None else int(seed))

    def seed(self, seed=None):
        if NOISE and seed is not None:
            seed = [int(seed) % 2**32, 0xC0DA]
        self._state = _np.random.RandomState(seed)

    def __getattr__(self, name):
        if name in _NOT_IN_CUPY["random"]:
            raise _missing("module 'cupy.random'", name)
        return _wrap_function(getattr(self._state, name), "cupy.random")


random = _Random()


class _Device:
    def __init__(self, device=0):
        self.id = 0
        self.compute_capability = "90"

    def synchronize(self):
        WAITS["Device.synchronize"] += 1

    def use(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False



class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def getDeviceProperties(device):
        return {"name": b"CuPy-on-CPU emulation", "totalGlobalMem": 8 << 30,
                "multiProcessorCount": 1}

    @staticmethod
    def deviceSynchronize():
        WAITS["deviceSynchronize"] += 1

    @staticmethod
    def runtimeGetVersion():
        return 12090


class _Event:
    def __init__(self, *args, **kwargs):
        import time
        self._time = time.perf_counter
        self.t = None

    def record(self, stream=None):
        self.t = self._time()

    def synchronize(self):
        WAITS["Event.synchronize"] += 1


def _elapsed(start, end):
    return (end.t - start.t) * 1000.0


class _MemoryPool:
    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self):
        pass


class _Stream:
    def synchronize(self):
        WAITS["Stream.synchronize"] += 1


_STREAM = _Stream()
cuda = types.SimpleNamespace(Device=_Device, runtime=_Runtime(), Event=_Event,
                             get_elapsed_time=_elapsed, Stream=_Stream,
                             get_current_stream=lambda device=None: _STREAM)
_pool = _MemoryPool()


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _pool


# --------------------------------------------------------------------------- kernels
_CACHE = os.environ.get("CUPY_ON_CPU_CACHE") or os.path.join(tempfile.gettempdir(),
                                                                 "cupy_on_cpu_cache")
_BASE = r"""
#include <cmath>
#include <math.h>
using std::exp; using std::log; using std::sqrt; using std::tanh; using std::fabs;
#define __device__
#define __forceinline__ inline
// numpy.float16 in a kernel: 16 bits in memory, arithmetic in float, rounded when stored
// (CuPy's float16 rounds after every operation, so the last bit can differ)
#define EMU_HALF_OP(op) template <typename U> half& operator op##=(U x) { \
    v = (_Float16)((float)v op (float)x); return *this; }
struct half {
    _Float16 v;
    half() = default;
    template <typename U> half(U x) : v((_Float16)(float)x) {}
    operator float() const { return (float)v; }
    EMU_HALF_OP(+) EMU_HALF_OP(-) EMU_HALF_OP(*) EMU_HALF_OP(/)
};
"""
# what a raw kernel sees: its block and thread indices, shared memory, and __syncthreads()
_THREADS = r"""
#include <barrier>
#include <thread>
#include <vector>
#include <functional>
struct emu_dim3 { unsigned int x, y, z; };
static thread_local emu_dim3 threadIdx, blockIdx;
static emu_dim3 blockDim, gridDim;
static std::barrier<>* emu_barrier = nullptr;
#define __global__
#define __shared__ static
static inline void __syncthreads() { emu_barrier->arrive_and_wait(); }
// a block's threads run one after another, or (for a kernel that synchronises) as real
// threads meeting at a barrier; a thread that returns leaves the barrier, as on a GPU
static void emu_run(unsigned grid, unsigned block, bool threaded, std::function<void()> body) {
    gridDim = {grid, 1, 1}; blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; ++b) {
        if (!threaded) {
            blockIdx = {b, 0, 0};
            for (unsigned t = 0; t < block; ++t) { threadIdx = {t, 0, 0}; body(); }
            continue;
        }
        std::barrier<> bar(block);
        emu_barrier = &bar;
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < block; ++t)
            pool.emplace_back([&, b, t] {
                blockIdx = {b, 0, 0}; threadIdx = {t, 0, 0}; body(); bar.arrive_and_drop(); });
        for (auto& th : pool) th.join();
        emu_barrier = nullptr;
    }
}
"""
# In the noise mode, a kernel's exp, log, tanh, pow... are glibc's moved by -2..2 ulp (as
# _ulps moves NumPy's), after every header, so that only the kernels' own calls are moved.
_NOISY_MATH = r"""
#include <cstdint>
#include <cstring>
template <typename T> static inline T emu_ulps(T r) {
    if (!std::isfinite(r) || r == 0 || r == 1 || r == -1) return r;
    uint64_t bits = 0;
    std::memcpy(&bits, &r, sizeof r);
    int steps = (int)((((bits + EMU_NOISE_SEED) * 0x9E3779B97F4A7C15ull) >> 59) % 5) - 2;
    for (; steps > 0; --steps) r = std::nextafter(r, (T)INFINITY);
    for (; steps < 0; ++steps) r = std::nextafter(r, -(T)INFINITY);
    return r;
}
""" + "".join(f"#define {f}(...) emu_ulps({f}(__VA_ARGS__))\n" for f in (
    "exp", "expf", "exp2", "exp2f", "expm1", "expm1f", "log", "logf", "log2", "log2f",
    "log10", "log10f", "log1p", "log1pf", "tanh", "tanhf", "sinh", "sinhf", "cosh",
    "coshf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "pow", "powf"))
_NOISY_MATH = _NOISY_MATH.replace("EMU_NOISE_SEED", f"{_NOISE_SEED}ull") if NOISE else ""


def _fma_flags():
    """g++'s flags for what NVRTC does by default (--fmad=true): contract a * b + c into
    one fused multiply-add, rounded once. g++ can only where the CPU has FMA (-mfma)."""
    try:
        with open("/proc/cpuinfo") as f:
            has_fma = " fma " in f.read()
    except OSError:
        has_fma = False
    # (g++ forms them in a pass that -O1 runs only with -fexpensive-optimizations)
    return ["-ffp-contract=fast", "-fexpensive-optimizations"] + (["-mfma"] if has_fma else [])


_GXX_FLAGS = ["-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w"] + (
    _fma_flags() if NOISE else [])
_C_NAMES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long",
            "uint32": "unsigned int", "bool": "bool", "float16": "half",
            "int8": "signed char", "uint8": "unsigned char", "int16": "short",
            "uint16": "unsigned short", "uint64": "unsigned long long"}
_C_DTYPES = {c: _np.dtype(name) for name, c in _C_NAMES.items()}
_C_SCALARS = {"float": ctypes.c_float, "double": ctypes.c_double, "int": ctypes.c_int,
              "long long": ctypes.c_longlong, "unsigned int": ctypes.c_uint}


def _build(source):
    """A shared library of C++ ``source`` (compiled once, then cached by its hash)."""
    os.makedirs(_CACHE, exist_ok=True)
    key = hashlib.sha256((source + " ".join(_GXX_FLAGS)).encode()).hexdigest()[:24]
    lib = os.path.join(_CACHE, f"kernel_{key}.so")
    if not os.path.exists(lib):
        src = os.path.join(_CACHE, f"kernel_{key}.{os.getpid()}.cpp")
        with open(src, "w") as f:
            f.write(source)
        tmp = f"{lib}.{os.getpid()}.tmp"
        done = subprocess.run(["g++", *_GXX_FLAGS, src, "-o", tmp], capture_output=True,
                              text=True)
        os.remove(src)
        if done.returncode:
            raise RuntimeError(f"the kernel does not compile (g++):\n{done.stderr[:4000]}")
        os.replace(tmp, lib)  # whole or not at all: parallel test workers share the cache
    return ctypes.CDLL(lib)


def compiler_problem():
    """None when g++ builds the emulator's kernels here, else why not (for a skip reason)."""
    import shutil

    if shutil.which("g++") is None:
        return "g++ is not installed"
    try:
        RawModule(code='extern "C" __global__ void probe(half* x) { __syncthreads(); }')
    except (RuntimeError, subprocess.CalledProcessError) as error:
        return f"g++ cannot build the emulator's kernels (C++20 <barrier>, _Float16: g++ 12 " \
               f"or newer): {str(error)[:300]}"
    return None


def _signatures(code):
    """{kernel name: [(C type, is pointer, parameter name)]} of a module's ``__global__``s."""
    expanded = subprocess.run(
        ["g++", "-E", "-P", "-x", "c++", "-D__global__=EMU_GLOBAL", "-D__device__=",
         "-D__shared__=", "-"], input=code, capture_output=True, text=True, check=True).stdout
    kernels = {}
    for match in re.finditer(r"EMU_GLOBAL\s+void\s+(\w+)\s*\(([^)]*)\)", expanded):
        params = []
        for param in match.group(2).split(","):
            words = param.replace("*", " * ").split()
            ctype = " ".join(w for w in words[:-1] if w not in ("const", "*", "__restrict__"))
            params.append((ctype, "*" in words, words[-1]))
        kernels[match.group(1)] = params
    return kernels


# What CUDA accepts for a launch (every GPU since compute capability 3.0, the H100 and
# the T4 included): a block of at most 1024 threads, with z at most 64; a grid of at most
# 2**31 - 1 blocks in x and 65535 in y and z.
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)


def _launch_dims(name, grid, block):
    """``(grid, block)`` as CuPy's ``Function.__call__`` hands them to ``cuLaunchKernel``:
    three dimensions each, a 0 raised to 1 (so an empty grid still runs one block); then
    refused as the driver refuses them (CUDA_ERROR_INVALID_VALUE), which the emulator's
    loop would otherwise run: a block of 2048 threads, a grid of 2**31 blocks. CuPy passes
    ``grid[0]`` to the driver as a C int, so a larger one could not even be asked for.
    Both must be tuples (``Function.__call__(self, tuple grid, tuple block, args)`` in
    cupy/cuda/function.pyx): a number or a list is refused, as Cython refuses it."""
    for what, dims in (("grid", grid), ("block", block)):
        if not isinstance(dims, tuple):
            raise TypeError(f"Argument '{what}' has incorrect type (expected tuple, got "
                            f"{type(dims).__name__}) ({name}: write ({dims!r},) for one "
                            "dimension)")
    grid = tuple(max(1, int(g)) for g in (grid + (1, 1))[:3])
    block = tuple(max(1, int(b)) for b in (block + (1, 1))[:3])
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK or any(b > m for b, m in zip(block, MAX_BLOCK)):
        raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: invalid argument ({name}: a block of "
                           f"{block} = {threads} threads; CUDA takes at most 1024 per block, "
                           "and 64 in z)")
    if any(g > m for g, m in zip(grid, MAX_GRID)):
        raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: invalid argument ({name}: a grid of "
                           f"{grid} blocks; CUDA takes at most 2**31 - 1 in x and 65535 in y "
                           "and z)")
    return grid, block


class _RawFunction:
    def __init__(self, lib, name, params, threaded):
        self.launch = getattr(lib, f"emu_launch_{name}")
        self.launch.restype = None
        self.name, self.params, self.threaded = name, params, threaded

    def __call__(self, grid, block, args, **kwargs):
        LAUNCHES[self.name] += 1
        grid, block = _launch_dims(self.name, grid, block)
        if any(g != 1 for g in grid[1:]) or any(b != 1 for b in block[1:]):
            raise NotImplementedError("the emulator launches 1-d grids and blocks only")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        cargs = [ctypes.c_uint(int(grid[0])), ctypes.c_uint(int(block[0])),
                 ctypes.c_int(self.threaded)]
        for arg, (ctype, pointer, pname) in zip(args, self.params):
            if pointer:
                if not isinstance(arg, ndarray):
                    raise TypeError(f"{self.name}: {pname} is a {ctype}* but got "
                                    f"{type(arg).__name__}, not a CuPy array")
                if _C_DTYPES.get(ctype) != arg.dtype:
                    raise TypeError(f"{self.name}: {pname} is a {ctype}* but the array is "
                                    f"{arg.dtype}")
                # the address of the first element, whatever the strides: as CuPy passes it
                cargs.append(ctypes.c_void_p(arg._a.__array_interface__["data"][0]))
            else:
                if not isinstance(arg, _np.generic) or arg.dtype != _C_DTYPES[ctype]:
                    raise TypeError(
                        f"{self.name}: {pname} is a C {ctype} but got {type(arg).__name__} "
                        f"{getattr(arg, 'dtype', '')} (CuPy passes a Python int as 64 bits "
                        "and a float as a double: wrap it, e.g. cupy.int32(n))")
                cargs.append(_C_SCALARS[ctype](arg.item()))
        self.launch(*cargs)


class RawModule:
    """Kernels of CUDA C ``code``, compiled for the CPU, each called as ``f(grid, block, args)``."""

    def __init__(self, code=None, options=(), **kwargs):
        self.kernels = _signatures(code)
        self.threaded = "__syncthreads" in code  # else a block's threads run in one loop
        launchers = []
        for name, params in self.kernels.items():
            decl = "".join(f", {c}{'*' if p else ''} {n}" for c, p, n in params)
            call = ", ".join(n for _, _, n in params)
            launchers.append(
                f'extern "C" void emu_launch_{name}(unsigned grid, unsigned block, '
                f"int threaded{decl}) {{ emu_run(grid, block, threaded, [&] {{ {name}({call}); "
                "}); }")
        self.lib = _build(_BASE + _THREADS + _NOISY_MATH + code + "\n" + "\n".join(launchers))

    def get_function(self, name):
        # CuPy looks a kernel up by its symbol: without extern "C" the name is mangled
        if name not in self.kernels or not hasattr(self.lib, name):
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: no kernel named {name!r} in the module "
                               '(is it declared extern "C"?)')
        return _RawFunction(self.lib, name, self.kernels[name], self.threaded)


def RawKernel(code, name, options=(), **kwargs):
    return RawModule(code=code).get_function(name)


class ElementwiseKernel:
    """``operation`` (CUDA C) for every index ``i`` of the broadcast inputs, as CuPy runs it."""

    def __init__(self, in_params, out_params, operation, name="kernel", **kwargs):
        self.ins = [self._param(p) for p in in_params.split(",")]
        self.outs = [self._param(p) for p in out_params.split(",")]
        self.operation, self.name = operation, name
        self._libs = {}

    @staticmethod
    def _param(text):
        words = text.split()
        raw = words[0] == "raw"
        return (words[-2], words[-1], raw)

    def __call__(self, *args, size=None, **kwargs):
        LAUNCHES[self.name] += 1
        n_in = len(self.ins)
        if len(args) not in (n_in, n_in + len(self.outs)):
            raise TypeError(f"{self.name}: wrong number of arguments ({len(args)})")
        for a in args:
            if isinstance(a, _np.ndarray):
                raise TypeError(f"Unsupported type {type(a)}")
        params = list(zip(self.ins + self.outs, args))
        binding = {}  # type placeholders (T, I) take the dtype of the first array given for them
        for (typ, _, _), a in params:
            if len(typ) == 1 and isinstance(a, ndarray):
                binding.setdefault(typ, a.dtype)
        for (typ, _, _), a in params:
            if len(typ) == 1 and typ not in binding:  # a scalar: NumPy's type for it
                binding[typ] = _np.asarray(a).dtype

        def dtype_of(typ):
            return _np.dtype(binding[typ] if len(typ) == 1 else typ)

        for (typ, name, _), a in params:  # arrays are never cast: CuPy refuses a mismatch
            if isinstance(a, ndarray) and a.dtype != dtype_of(typ):
                raise TypeError(f"Type is mismatched. {self.name} {name}: {a.dtype} where "
                                f"{typ} is {dtype_of(typ)}")

        shapes = [a.shape for (_, _, raw), a in params if isinstance(a, ndarray) and not raw]
        shape = _np.broadcast_shapes(*shapes) if shapes else ()
        outs = list(args[n_in:]) + [ndarray._from(_np.empty(shape, dtype_of(typ)))
                                    for typ, _, _ in self.outs[len(args) - n_in:]]
        keep, decls, reads, cargs, copy_back = [], [], [], [], []
        for k, ((typ, name, raw), a) in enumerate(zip(self.ins + self.outs,
                                                      list(args[:n_in]) + outs)):
            c = _C_NAMES[dtype_of(typ).name]
            if raw:
                buf = _np.ascontiguousarray(a._a)
                decls.append(f"{c}* {name}")
            elif k >= n_in:  # an output: written in place (a strided one through a copy)
                buf = a._a
                if buf.shape != shape:
                    raise ValueError(f"{self.name}: output {name} must have the shape "
                                     f"{shape}, got {buf.shape}")
                if not buf.flags.c_contiguous:
                    buf = _np.ascontiguousarray(buf)
                    copy_back.append((a._a, buf))
                decls.append(f"{c}* _raw_{name}")
                reads.append(f"{c} &{name} = _raw_{name}[i];")
            else:
                value = a._a if isinstance(a, ndarray) else _np.asarray(a)
                buf = _np.ascontiguousarray(_np.broadcast_to(value.astype(dtype_of(typ)), shape))
                decls.append(f"const {c}* _raw_{name}")
                reads.append(f"const {c} {name} = _raw_{name}[i];")
            keep.append(buf)
            cargs.append(ctypes.c_void_p(buf.ctypes.data))
        typedefs = "".join(f"typedef {_C_NAMES[_np.dtype(d).name]} {t};\n"
                           for t, d in binding.items())
        source = (f"{_BASE}{_NOISY_MATH}{typedefs}extern \"C\" void emu_elementwise(long long _n, "
                  f"{', '.join(decls)}) {{\n  for (long long i = 0; i < _n; ++i) {{ "
                  f"{' '.join(reads)} {self.operation}; }}\n}}\n")
        lib = self._libs.get(source) or self._libs.setdefault(source, _build(source))
        lib.emu_elementwise(ctypes.c_longlong(int(_np.prod(shape))), *cargs)
        for target, buf in copy_back:
            target[...] = buf
        return outs[0] if len(outs) == 1 else tuple(outs)


# --------------------------------------------------------------------------- the rest
class _Ufunc:
    """A NumPy ufunc as CuPy's: NumPy arrays refused, a result always a device array."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def _run(self, method, arrays, args, kwargs):
        _record(f"cupy.{self.__name__}" + ("" if method == "__call__" else f".{method}"), kwargs)
        _check_ufunc(self._ufunc, method, arrays if method != "at" else args)
        outs = kwargs.get("out")
        outs = () if outs is None else outs if isinstance(outs, tuple) else (outs,)
        for a in (*arrays, *outs):
            if isinstance(a, _np.ndarray):
                raise TypeError(f"Unsupported type {type(a)}")
        if any(isinstance(a, ndarray) for a in (*arrays, *outs)):
            return getattr(self._ufunc, method)(*args, **kwargs)  # via __array_ufunc__
        LAUNCHES[self.__name__] += 1  # numbers only: CuPy still computes on the device
        with _np.errstate(all="ignore"):
            return _wrap(_np.asarray(getattr(self._ufunc, method)(*args, **kwargs)))

    def __call__(self, *args, **kwargs):
        return self._run("__call__", args, args, kwargs)

    def at(self, a, indices, b=None):  # the indices may be NumPy arrays (CuPy copies them)
        if self._ufunc is _np.add and _np.dtype(a.dtype).name not in _ADD_AT_DTYPES:
            raise TypeError("cupy.add.at only supports int32, int64, float16, float32, "
                            "float64, uint32, uint64 as data type")  # atomicAdd's types
        # CuPy's scatter kernel wraps an index array around as its gather does
        indices = _wrapped_around(_unwrap(indices, allow_numpy=True), a.shape)
        parts = indices if isinstance(indices, tuple) else (indices,)
        parts = tuple(ndarray._from(p) if isinstance(p, _np.ndarray) else p for p in parts)
        indices = parts if isinstance(indices, tuple) else parts[0]
        args = (a, indices) if b is None else (a, indices, b)
        return self._run("at", (a,) if b is None else (a, b), args, {})

    def reduce(self, a, *args, **kwargs):
        return self._run("reduce", (a,), (a, *args), kwargs)

    def accumulate(self, a, *args, **kwargs):
        return self._run("accumulate", (a,), (a, *args), kwargs)

    def reduceat(self, a, indices, *args, **kwargs):
        return self._run("reduceat", (a,), (a, indices, *args), kwargs)

    def outer(self, a, b, **kwargs):
        return self._run("outer", (a, b), (a, b), kwargs)

    def __getattr__(self, name):  # nin, nout, identity, types, ...
        return getattr(self._ufunc, name)


def __getattr__(name):
    """Everything else is NumPy's, returning emulated arrays (and refusing NumPy ones)."""
    if name in _NOT_IN_CUPY["numpy"]:
        raise _missing("module 'cupy'", name)
    value = getattr(_np, name)
    if isinstance(value, _np.ufunc):
        return _Ufunc(value)
    if isinstance(value, type) or not callable(value):
        return value
    return _wrap_function(value)
