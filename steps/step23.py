# %% [markdown]
# # Step 23: Packaging: the framework becomes `dezero_like`
#
# Until now every step carried its own copy of the framework, so each step
# could be read (and diffed against the previous one) on its own. From here on
# the framework lives in one place, the Python package `dezero_like`, and the
# steps `import` it:
#
# ```python
# import dezero_like as dz
# import dezero_like.functions as F
# ```
#
# A package is a folder with an `__init__.py`; each `.py` file in it is a
# module. Installing it (`pip install -e .` in the repository, or the set-up
# cell at the top of every notebook) makes `import dezero_like` work from any
# directory, with no `sys.path` tricks.
#
# The package is split by role:
#
# * `core.py`: `Variable`, `Function`, the backward loop, `Config`, `no_grad`,
#   and the arithmetic behind the operators (`Add`, `Mul`, `Sub`, `Div`, `Pow`,
#   `RPow`, `Neg`);
# * `functions.py`: the other differentiable functions (`square`, `exp`,
#   `sin`, ..., later `matmul`, `softmax`, ...);
# * `utils.py`: helpers: numerical gradients, `gradient_check`, array
#   comparisons;
# * `cuda.py`: GPU support through CuPy, imported only when asked for.
#
# `__init__.py` runs when you `import dezero_like`; it imports the modules and
# re-exports the names you use most, so `dz.Variable` works without
# `dz.core.Variable`.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Config`, `using_config`, `no_grad`, `as_array`, `as_variable`,
# `Variable`, `Function`, `Add`, `Mul`, `Neg`, `Sub`, `Div`, `Pow`, `RPow`, `add`, `mul`, `neg`,
# `sub`, `rsub`, `div`, `rdiv`, `pow`, `rpow`, `setup_variable`; `cuda` gains `is_cupy_array`,
# `get_array_module`, `as_numpy`; `utils` gains `array_equal`, `array_allclose`,
# `numerical_grad`, `gradient_check`, `forward_names`; `functions` gains `add`, `sub`,
# `rsub`, `mul`, `div`, `rdiv`, `neg`, `pow`, `Square`, `square`, `Exp`, `exp`, `Sin`,
# `sin`, `Cos`, `cos`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %%
#| export dezero_like/core.py
"""The heart of dezero_like: ``Variable``, ``Function`` and backpropagation.

Three ideas from steps 01-22 live here:

1. A :class:`Variable` is a box around an array. It remembers the function that
   created it (``creator``), and that function remembers its inputs, so every
   result carries the graph of how it was computed ("define-by-run").
2. A :class:`Function` turns arrays into arrays in ``forward`` and turns the
   gradient of its outputs into the gradient of its inputs in ``backward``.
3. :meth:`Variable.backward` walks the graph from the output towards the inputs,
   newest function first (by *generation*), applying the chain rule.

Step 23 writes this module. Many later steps change or extend it in place,
each shown in its step. The main ones: 25 (function hooks), 30
(``create_graph``), 37 (``retain_graph``), 38 (a leaf's gradient has the
leaf's dtype), 39, 40, 42 and 48 (``transpose``, ``sum``, ``@`` and indexing
on a Variable), 41 (each gradient's shape is checked), 45 (``Parameter``), 63
(seeds and ``requires_grad``), 64 (one variable in several slots), 69 (graph
nodes without data) and 70 (the fast path). ``python tools/export.py
registry`` prints the step that first writes each public name, methods
included.
"""

class Config:
    """Global switches, read on every function call.

    ``enable_backprop``: build the graph (turned off by :class:`no_grad`).
    ``train``: training mode (turned off by :class:`test_mode`; dropout reads it).
    """

    enable_backprop = True

    train = True


# %% [markdown]
# `using_config` and `no_grad` do what step 19's do, with two additions. A misspelt
# setting name is an error instead of a new attribute nobody reads. And they are
# classes, as PyTorch's `torch.no_grad` is: a `with` statement calls the `__enter__`
# and `__exit__` of the object it is given, which here is an instance, `no_grad()`.
# Written without the call, `with dz.no_grad:` would hand `with` the class itself, and
# Python's own message, "'type' object does not support the context manager protocol",
# does not say what is missing; the class of these classes (`_CalledInWith`, a
# *metaclass*) has an `__enter__` that says it. (Making the bare form work instead
# would give one spelling here and another in PyTorch, where `with torch.no_grad:`
# fails.) `contextlib.ContextDecorator` also lets an instance decorate a function:
# `@dz.no_grad()` above a `def` runs every call of it without a graph.
#
# The other half of that mistake is the call without the `with`: `dz.test_mode()` alone on a
# line, as PyTorch's `model.eval()` is written, makes an object and throws it away, and the
# setting never changes (dropout goes on dropping, silently). An instance remembers whether a
# `with` (or a decorated function) used it, and one thrown away unused warns, from `__del__`,
# at the line that dropped it; a program ending does not count.

# %%
#| export dezero_like/core.py
import contextlib
import sys
import warnings

import numpy as np


class _CalledInWith(type):
    """The type of ``using_config``, ``no_grad`` and ``test_mode``: ``with no_grad:`` (the class,
    not called) raises an error that says to write ``with no_grad():``."""

    def __enter__(cls):
        name = cls.__name__
        args = "'train', False" if name == "using_config" else ""
        torch = " (as in PyTorch: with torch.no_grad():)" if name == "no_grad" else ""
        raise TypeError(f"'with {name}:' gives the with statement the class itself, not a "
                        f"context manager; call it: with dz.{name}({args}):{torch}")

    def __exit__(cls, *exc):
        return False


class using_config(contextlib.ContextDecorator, metaclass=_CalledInWith):
    """Set ``Config.<name>`` to ``value`` inside a ``with`` block, then restore it."""

    def __init__(self, name, value):
        if not hasattr(Config, name):
            raise AttributeError(
                f"Config has no setting named {name!r}; known: enable_backprop, train")
        if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):  # "False" is true
            raise TypeError(f"Config.{name} is True or False, got {value!r}")
        self.name, self.value = name, value
        self.old = []  # a stack: a decorated function may call itself
        self.used = False  # by a with statement or as a decorator (see __del__)

    def __enter__(self):
        self.used = True
        self.old.append(getattr(Config, self.name))
        setattr(Config, self.name, self.value)

    def __call__(self, function):  # @no_grad() above a def
        self.used = True
        return super().__call__(function)

    def __del__(self):
        """Warn about a call alone on a line (``dz.test_mode()``, as ``model.eval()`` is written):
        thrown away unused, it changed nothing."""
        if self.__dict__.get("used", True) or sys.is_finalizing():
            return
        call = (f"using_config({self.name!r}, {self.value!r})" if type(self) is using_config
                else f"{type(self).__name__}()")
        warnings.warn(
            f"dz.{call} was made and thrown away without a with statement, so it changed "
            f"nothing: Config.{self.name} is still {getattr(Config, self.name)}. Write the code "
            f"it is for inside its block: with dz.{call}: ..."
            + (" (PyTorch's model.eval() is a call; here the evaluation mode is a block)"
               if self.name == "train" else ""), stacklevel=2)

    def __exit__(self, *exc):
        setattr(Config, self.name, self.old.pop())
        return False  # an error inside the block goes on to the caller


class no_grad(using_config):
    """Run code without building a graph (inference, parameter updates): ``with no_grad():``."""

    def __init__(self):
        super().__init__("enable_backprop", False)


# %% [markdown]
# `as_array` is step 22's, grown in two ways. It accepts CuPy arrays too (step 54
# runs the same code on a GPU; `cuda.is_cupy_array` is `False` while CuPy is not
# installed), and it keeps the dtype rule: a Python number combined with a float32
# array becomes float32. Anything else is refused with a message that says what to do,
# including an array on the other device than the Variable it is combined with. `None` gets a
# message of its own: it is almost always a value that was never returned, from a function or
# a model's `forward` that lacks its `return` line. A list of arrays is a batch that was never
# stacked into one array, or what a `forward` that should return a tuple hands back.

# %%
#| export dezero_like/core.py
import numpy as np
from dezero_like import cuda


def _is_array(x):
    """True for a NumPy array or, when CuPy is in use, a CuPy array."""
    return isinstance(x, np.ndarray) or cuda.is_cupy_array(x)


def _mixed_devices(x, x_on, other_on):
    return (f"an array of shape {tuple(x.shape)} on {x_on} is combined with a Variable on "
            f"{other_on}; put both on one device first (cuda.as_cupy(a) or cuda.as_numpy(a) "
            "for an array, v.to_gpu() or v.to_cpu() for a Variable, model.to_gpu() or "
            "model.to_cpu() for a model, DataLoader(..., gpu=True) or loader.to_gpu() for the "
            "batches of a DataLoader)")


def _on_two_devices(a, b):
    """``("GPU", "CPU")`` or ``("CPU", "GPU")``: where arrays ``a`` and ``b`` lie, if apart."""
    if type(a) is type(b):  # one array type lies on one device: no call
        return None
    a_gpu, b_gpu = cuda.is_cupy_array(a), cuda.is_cupy_array(b)
    if a_gpu == b_gpu:
        return None
    return ("GPU", "CPU") if a_gpu else ("CPU", "GPU")


def as_array(x, like=None):
    """Turn a number into a 0-d array; arrays pass through unchanged.

    A Python ``int`` or ``float`` takes the dtype of ``like`` (an array it will
    be combined with) when that is a floating or complex array (or, for an
    ``int``, an integer array), so ``float32_data * 2.0`` stays float32, and a
    Python ``complex`` the complex dtype NumPy gives the pair (complex64 beside
    float32 or complex64). NumPy 2
    would otherwise treat a 0-d float64 array as a "strong" type and promote
    the result to float64. NumPy scalars keep their own dtype, as in NumPy.
    An array on the other device than ``like`` is refused (CuPy would say only
    "Unsupported type"), except a 0-d NumPy array, which is a number.
    """
    if type(x) is np.ndarray:
        if like is not None and type(like) is not np.ndarray and cuda.is_cupy_array(like):
            if x.ndim == 0:  # a number in a NumPy box: filled on the device, not copied
                return cuda.get_array_module(like).full((), x[()], x.dtype)
            raise TypeError(_mixed_devices(x, "the CPU (a NumPy array)", "the GPU"))
        return x
    if type(x) is float or type(x) is int or (type(x) is complex and like is not None):
        if like is None:
            return np.asarray(x)
        if type(x) is complex:  # weak too: float32 data * 1j is complex64
            dtype = np.result_type(like.dtype, x)
        else:
            kind = like.dtype.kind
            dtype = like.dtype if kind in "fc" or (kind in "iu" and type(x) is int) else None
        if type(like) is np.ndarray:
            return np.asarray(x, dtype)
        # on a GPU, fill a 0-d array with a kernel: asarray would copy host -> device
        return cuda.get_array_module(like).full((), x, dtype or np.asarray(x).dtype)
    if type(x) in cuda._CUPY_MODULES and type(like) is not np.ndarray:
        return x  # a GPU array (every result of a function on a GPU): no call
    if _is_array(x):
        if type(like) is np.ndarray and cuda.is_cupy_array(x):
            raise TypeError(_mixed_devices(x, "the GPU (a CuPy array)", "the CPU"))
        return x
    if isinstance(x, (int, float, complex, np.generic)):  # bool, complex, np.float32(2), ...
        if like is None or type(like) is np.ndarray:
            return np.asarray(x)
        return cuda.get_array_module(like).full((), x, np.asarray(x).dtype)  # as above
    if isinstance(x, Variable):  # from a forward that returned one, or from a .data
        raise TypeError(
            "got a Variable where an array belongs. A Function's forward must return arrays "
            "(compute on x.data, not with F.*, inside forward), and a Variable's .data must "
            "hold an array: p.data = p.data - lr * p.grad stores a Variable, since p.grad is "
            "one; write p.data = p.data - lr * p.grad.data"
        )
    if x is None:  # F.relu(None): the value a function or a forward should have returned
        raise TypeError(
            "got None where an array or a Variable belongs: a value is missing. Did a function, "
            "or a model's forward, forget its return? (A Python function that ends without a "
            "return statement returns None.)"
        )
    if type(x) is list and any(_is_array(a) for a in x):  # [x0, x1]: a batch? two outputs?
        raise TypeError(
            f"got a list of {len(x)} arrays where one array belongs. For a batch, make one "
            "array of them: np.stack(...) (or np.concatenate(...)). A Function's forward with "
            "several outputs returns them as a tuple, not a list: return y0, y1"
        )
    raise TypeError(
        f"expected a Variable, an ndarray or a number, got {type(x).__name__}; "
        "wrap lists with np.array(...) first"
    )


def as_variable(obj):
    """Return ``obj`` if it is a Variable, else wrap it in one."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj))


def _as_inputs(inputs):
    """The inputs of a function call, with numbers and arrays wrapped as constants.

    A constant is a Variable with ``requires_grad=False``: backward sends it no
    gradient, because nobody could read it (step 63 says more). It takes the
    dtype of the first Variable among the inputs (see ``as_array``).
    """
    like = None
    for x in inputs:
        if isinstance(x, Variable):
            like = x.data
            break
    return tuple(x if isinstance(x, Variable)
                 else Variable(as_array(x, like), requires_grad=False) for x in inputs)


# %% [markdown]
# ### `Variable`
#
# The class of step 22, with two main changes (it also gains the conversions
# `__array__`, `__bool__`, `__float__`, `__int__`, `__round__`, `item` and
# `__format__`; `==` stays the identity test, and warns when it meets an array
# or a number, where it compares objects, not elements; `<`, `>` and `abs()` raise an
# error that says how to get at the value, `float(loss) < best`; `backward` always seeds
# with ones):
#
# * **`requires_grad`.** A Variable the user creates requires a gradient. A
#   constant made from a number (the `2.0` in `x * 2.0`) does not, and neither
#   does a result computed under `no_grad()`.
# * **Gradients are Variables.** `x.grad` used to be an array; now it is a
#   Variable. Backward is therefore written with the same functions as forward:
#   `Sin.backward` calls `cos` and `*` on Variables. While backward runs, graph
#   recording is switched off, so these calls build no graph. Step 30 shows what
#   happens when it is switched on.
#
# Shape, `repr`, `set_creator` and `cleargrad` are unchanged. `backward` makes the
# seed $\partial y / \partial y = 1$ and hands the work to the loop below.

# %%
#| export dezero_like/core.py
import warnings

# what to write for PyTorch's abs (here abs(x), and later x.abs() and F.abs, say it)
_ABS = ("x * np.sign(x.data), whose gradient is sign(x) as PyTorch's abs (np.abs(x.data) for "
        "the values alone)")


class Variable:
    """A box around an array that remembers how it was computed.

    ``data`` is the array (NumPy or CuPy); ``grad`` its gradient (a Variable) once
    backward has run; ``creator`` the Function that produced it (``None`` for a
    leaf the user created); ``generation`` its depth in the graph.
    ``requires_grad=False`` marks a constant: no gradient flows into it.
    """

    # NumPy must not treat a Variable as an array element: with this, the
    # expression ``ndarray * variable`` calls ``Variable.__rmul__``.
    __array_ufunc__ = None

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(v)``: the data of a Variable that needs no gradient; else an error.

        Without it NumPy would read a Variable as a sequence of 0-d Variables:
        ``np.mean(x * x)`` or ``np.concatenate([a, b])`` would drop the graph without
        a word, or build an array of objects. So an array that backward must reach
        is not handed to NumPy (PyTorch refuses it too). A 0-d Variable is a number,
        a loss or an accuracy to plot or average (``plt.plot(losses)``), and is read.
        """
        data = self.data
        if isinstance(data, np.generic):  # x.data = x.data - ... on a 0-d array: a NumPy number
            data = np.asarray(data)
        if data is None:
            raise TypeError("this Variable holds no array (its .data is None): give it one, "
                            "v.data = np.array(...)")
        if not isinstance(data, np.ndarray):
            kind = f"{type(data).__module__.split('.')[0]}.{type(data).__name__}"
            # a loss or an accuracy kept on the GPU (plt.plot(losses), np.mean(accs)): the
            # number it holds is what the caller wants, and float(v) copies it to the host
            number = ("for a loss or an accuracy, keep float(v), one number copied to the host "
                      "(losses.append(float(loss))); " if getattr(data, "size", 0) == 1 else "")
            raise TypeError(f"this Variable's data is a {kind}, not a NumPy array, so NumPy "
                            f"(and matplotlib) cannot read it: {number}on the GPU, "
                            "cuda.as_numpy(v.data) gives a NumPy array")
        if self.requires_grad and data.ndim:  # a 0-d one is a number: a loss to plot
            raise TypeError(
                "NumPy was given a Variable that requires grad; its result would not be part "
                "of the graph. Use the functions of dezero_like.functions (F.sum, F.matmul, "
                "...) to differentiate through it, or pass v.data for the numbers alone"
            )
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"a {data.dtype} Variable cannot become {np.dtype(dtype)} "
                                 "without a copy")
            return data.astype(dtype)
        return data.copy() if copy else data

    def __init__(self, data, name=None, requires_grad=True):
        if data is not None and not _is_array(data):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or a cupy.ndarray), "
                f"got {type(data).__name__}; " + (
                    "it is a Variable already: use it as it is (as_variable(x) takes both), or "
                    f"{type(self).__name__}(v.data) for a new one holding its values"
                    if isinstance(data, Variable) else "use Variable(np.array(...))")
            )
        if data is not None and data.dtype.kind not in "biufc":
            raise TypeError(f"Variable data must have a numeric dtype, got {data.dtype}")
        self.data = data
        self.name = name
        self.grad = None
        self.creator = None
        self.generation = 0
        self.requires_grad = requires_grad

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __eq__(self, other):
        # The identity test, as in the book's DeZero (so `x in some_list` works). Against an
        # array or a number it is False whatever the elements: a warning says so (not an
        # error: `x in [an_array, x]` compares them too, and must still work).
        if not isinstance(other, Variable) and (
                _is_array(other) or isinstance(other, (int, float, complex, np.generic))):
            warnings.warn(
                "== and != on a Variable compare the objects, not their elements: against an "
                "array or a number they always give False (or True). Compare the arrays: "
                "v.data == other (F.accuracy compares predictions with labels)",
                RuntimeWarning, stacklevel=2)
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)  # the same test, and the same warning

    __hash__ = object.__hash__  # defining __eq__ would otherwise make Variables unhashable

    def __lt__(self, other):  # also a < v for an array or a number a: Python asks v.__gt__(a)
        raise TypeError(
            "<, <=, > and >= do not compare Variables: a Variable is a node of the graph, not "
            "a number. Compare the values: float(loss) < best for a one-element Variable (a "
            "loss), loss.data < best for the array; min(float(v) for v in losses) for a list"
        )

    __le__ = __gt__ = __ge__ = __lt__

    def __abs__(self):
        raise TypeError(f"abs() of a Variable: there is no abs function here. Write {_ABS}")

    def __bool__(self):
        # NumPy's rule (one element: its truth; more: an error). Without this, bool() would
        # fall back to len(): True for Variable(np.array([0.0])), a TypeError for a 0-d loss.
        return bool(self.data)

    def __float__(self):  # float(loss), for any one-element Variable (as a tensor's)
        return float(self._one_element())

    def __int__(self):  # int(correct), for any one-element Variable
        return int(self._one_element())

    def _one_element(self):
        if self.data.size != 1:  # NumPy's error type for float(np.ones(3))
            raise TypeError(f"only a one-element Variable converts to a Python number, got "
                            f"shape {self.data.shape}")
        return self.data.item()

    def __round__(self, ndigits=None):  # round(loss, 4): a Python number, as PyTorch's .item()
        return round(self._one_element(), ndigits)

    def item(self):
        """The value of a one-element Variable as a Python number (``loss.item()``)."""
        return self.data.item()

    def __format__(self, spec):  # f"{loss:.4f}" formats the value, as NumPy does
        return format(self.data, spec) if spec else str(self)

    def __repr__(self):
        if self.data is None:
            return "variable(None)"
        body = str(self.data).replace("\n", "\n" + " " * 9)
        return f"variable({body})"

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def backward(self, retain_grad=False):
        """Compute the gradient of this variable with respect to every leaf.

        ``retain_grad=True`` also keeps ``.grad`` on the intermediate variables.
        """
        seed = Variable(cuda.get_array_module(self.data).ones_like(self.data),
                        requires_grad=False)
        with using_config("enable_backprop", False):  # gradients build no graph
            _backprop(self, seed, retain_grad)


# %% [markdown]
# ### The backward loop
#
# This is step 17's loop, moved out of `Variable` into a function of its own so
# that later steps can change it without touching the class. Read it next to
# step 17:
#
# * `add_func` is the queue. It keeps the functions still to visit in a heap
#   ordered by generation (newest first; equal generations in arrival order),
#   and it queues each function once.
# * `_backward_step` does one step of the chain rule: it calls `f.backward` and
#   checks that one gradient came back per input. A `Function` written by a
#   learner that returns the wrong number of gradients fails here, with its name.
# * Gradients arriving at the same variable along several paths are added into
#   a **new** Variable (`_add_grads`), never with `+=`. Step 15 showed why: two
#   variables may share one gradient object.
# * A leaf (no creator) keeps its gradient in `grad`. An intermediate variable
#   keeps it only until its creator has used it, unless `retain_grad=True`.
# * Constants (`requires_grad=False`) get no gradient.

# %%
#| export dezero_like/core.py
import heapq
import itertools


def _backprop(y, seed, retain_grad):
    """Apply the chain rule from ``y`` (whose gradient is ``seed``) back to the leaves."""
    if y.creator is None:
        _accumulate_leaf(y, seed)
        return
    y.grad = seed
    funcs = []  # a heap of (-generation, arrival number, function)
    seen = set()
    arrivals = itertools.count()

    def add_func(f):
        if f not in seen:
            seen.add(f)
            heapq.heappush(funcs, (-f.generation, next(arrivals), f))

    add_func(y.creator)
    while funcs:
        f = heapq.heappop(funcs)[2]
        gys = []
        for ref in f.outputs:
            out = ref()  # None when that output was dropped: no gradient reached it
            gys.append(None if out is None else out.grad)
        gxs = _backward_step(f, gys)
        for x, gx in zip(f.inputs, gxs):
            if gx is None or not x.requires_grad:
                continue
            if x.creator is None:
                _accumulate_leaf(x, gx)
            else:
                x.grad = gx if x.grad is None else _add_grads(x.grad, gx)
                add_func(x.creator)
        if not retain_grad:
            for ref in f.outputs:
                out = ref()
                if out is not None:
                    out.grad = None


def _grads_tuple(gxs, f=None):
    """What a backward returned, as a tuple: one gradient, or a tuple or a list of them.

    A bare ``None`` is refused: it is what a backward that forgot its ``return`` gives,
    and taken as "no gradient" it would leave ``x.grad`` at None with no error.
    """
    if type(gxs) is tuple:
        return gxs
    if type(gxs) is list:
        return tuple(gxs)
    if gxs is None:
        name = f"{type(f).__name__}.backward" if f is not None else "a backward"
        raise TypeError(
            f"{name} returned None: did it forget its return? (A Python function that ends "
            "without a return statement returns None.) Return one gradient per input; to "
            "give an input no gradient on purpose, return None inside a tuple: (None,)"
        )
    return (gxs,)


def _backward_step(f, gys):
    """One step of the chain rule: the gradients of ``f``'s inputs, as a tuple."""
    gxs = _grads_tuple(f.backward(*gys), f)
    _check_grads(f, gxs)
    return tuple(gx if gx is None or isinstance(gx, Variable)
                 else Variable(as_array(gx), requires_grad=False) for gx in gxs)


def _check_grads(f, gxs):
    """Refuse a backward that returns a gradient too many or too few."""
    if len(gxs) != len(f.inputs):
        raise RuntimeError(
            f"{type(f).__name__}.backward returned {len(gxs)} gradients "
            f"for {len(f.inputs)} inputs"
        )


def _add_grads(a, b):
    """a + b for two gradients, as a new Variable (never ``+=``: see step 15)."""
    return Variable(as_array(a.data + b.data), requires_grad=False)


def _accumulate_leaf(x, gx):
    """Add ``gx`` to the gradient of the leaf ``x``."""
    x.grad = gx if x.grad is None else _add_grads(x.grad, gx)


# %% [markdown]
# ### `Function`
#
# `__call__` is step 22's. It wraps numbers and arrays as constants, runs
# `forward` on the arrays, and wraps the results. When a graph is being
# recorded, it also links the outputs to the function. One thing is new:
# `needs_input_grad`, a tuple that tells, per input, whether it requires a
# gradient. It is set before `forward` runs, so a function can look at it.
#
# A function also gets a small API for what its backward reads:
#
# * `retain_inputs(indexes)`: call it in `forward` to say that backward reads
#   only these inputs;
# * `retain_outputs(indexes)` and `get_retained_outputs()`: for a backward that
#   reads its own outputs, as `tanh`'s does ($1 - y^2$).
#
# For now these only record what was said; every input is kept anyway.
# Step 69 uses them to free every array backward will not read.

# %%
#| export dezero_like/core.py
import weakref


class Function:
    """Base class of every differentiable operation.

    Subclasses write ``forward(*arrays)`` (raw arrays in, an array or a tuple of
    arrays out) and ``backward(*grads)`` (Variables in, one gradient Variable per
    input out; ``None`` for an input that needs no gradient). Gradients are
    never modified in place: several variables may share one gradient object
    (``x0 + x1`` hands the same ``gy`` to both), so code that changes a gradient
    makes a new one. ``needs_input_grad`` tells which inputs require a gradient.
    """

    generation = 0

    inputs = ()

    outputs = ()

    needs_input_grad = ()

    _retained_in = None  # None: backward may read every input

    _retained_out = None  # the outputs backward reads

    def __call__(self, *inputs):
        inputs = _as_inputs(inputs)  # numbers and arrays become constants
        xs = [x.data for x in inputs]
        record = Config.enable_backprop
        if record:
            self.needs_input_grad = tuple(x.requires_grad for x in inputs)
        ys = self.forward(*xs)
        if type(ys) is not tuple:
            ys = (ys,)
        # NumPy may return a scalar (np.float64) for 0-d input: as_array makes it an array
        outputs = [Variable(as_array(y), requires_grad=record) for y in ys]
        if record:  # link the outputs to this function, and it to its inputs
            self.generation = max(x.generation for x in inputs)
            for y in outputs:
                y.set_creator(self)
            self.inputs = inputs
            self.outputs = [weakref.ref(y) for y in outputs]  # weak: no reference cycle
        return outputs[0] if len(outputs) == 1 else outputs

    def forward(self, *xs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def backward(self, *gys):
        raise NotImplementedError(f"{type(self).__name__} must implement backward()")

    def retain_inputs(self, indexes):
        """Call in forward: backward reads only ``self.inputs[i]`` for these ``i``."""
        self._retained_in = tuple(indexes)

    def retain_outputs(self, indexes):
        """Call in forward: backward reads these outputs via ``get_retained_outputs``."""
        self._retained_out = tuple(indexes)

    def get_retained_outputs(self):
        """The outputs named by ``retain_outputs``, as Variables of this graph."""
        if self._retained_out is None:
            raise RuntimeError(f"{type(self).__name__} retained no outputs")
        return tuple(self.outputs[i]() for i in self._retained_out)

    def __repr__(self):
        return f"<{type(self).__name__} generation={self.generation}>"


# %% [markdown]
# ### The arithmetic
#
# `Add`, `Mul`, `Neg`, `Sub`, `Div` and `Pow` are step 22's, with two additions.
# Their backward computes a gradient only for an input that needs one
# (`needs_input_grad`): the `2.0` of `x * 2.0` gets `None`. And the two operands
# may have different shapes (`x + 1.0`, a matrix plus a row): NumPy
# *broadcasts* the smaller one, and the gradient must be summed back to that
# operand's shape (`_sum_to`, using `sum_to`, which step 25 adds to `functions`).
# Step 41 explains broadcasting in full.

# %%
#| export dezero_like/core.py
def _F():
    """The ``functions`` module, imported when first needed (it imports this one)."""
    import dezero_like.functions as F

    return F


def _sum_to(gx, shape):
    """Undo broadcasting: sum ``gx`` down to ``shape`` (a no-op when shapes agree)."""
    return gx if gx.data.shape == shape else _F().sum_to(gx, shape)


class Add(Function):
    """y = x0 + x1 (with broadcasting); dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        self.shapes = (x0.shape, x1.shape)
        return x0 + x1

    def backward(self, gy):
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy, s0) if n0 else None, _sum_to(gy, s1) if n1 else None)


class Mul(Function):
    """y = x0 * x1; dy/dx0 = x1, dy/dx1 = x0."""

    def forward(self, x0, x1):
        self.shapes = (x0.shape, x1.shape)
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy * x1, s0) if n0 else None, _sum_to(gy * x0, s1) if n1 else None)


class Neg(Function):
    """y = -x; dy/dx = -1."""

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    """y = x0 - x1; dy/dx0 = 1, dy/dx1 = -1."""

    def forward(self, x0, x1):
        self.shapes = (x0.shape, x1.shape)
        return x0 - x1

    def backward(self, gy):
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        return (_sum_to(gy, s0) if n0 else None, _sum_to(-gy, s1) if n1 else None)


class Div(Function):
    """y = x0 / x1; dy/dx0 = 1/x1, dy/dx1 = -x0/x1**2."""

    def forward(self, x0, x1):
        self.shapes = (x0.shape, x1.shape)
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs
        n0, n1 = self.needs_input_grad
        s0, s1 = self.shapes
        gx0 = _sum_to(gy / x1, s0) if n0 else None
        gx1 = _sum_to(gy * (-x0 / x1**2), s1) if n1 else None
        return gx0, gx1


class Pow(Function):
    """y = x ** c for a constant c; dy/dx = c * x**(c-1)."""

    def __init__(self, c):
        if isinstance(c, Variable) or np.ndim(c) != 0:
            raise TypeError(
                f"the exponent of ** must be a number, got {type(c).__name__} "
                f"{getattr(c, 'shape', '')}; for a Variable or an array of exponents "
                "write F.exp(c * F.log(x))")
        self.c = c

    def forward(self, x):
        return x**self.c  # a Python number is "weak" in NumPy 2: float32 stays float32

    def backward(self, gy):
        (x,) = self.inputs
        c = self.c
        if c == 0:  # x**0 is constant: its gradient is 0 (0 * gy would be nan for gy = inf,
            # and c * x**(c-1) would be 0 * inf = nan at x = 0)
            return Variable(cuda.get_array_module(gy.data).zeros_like(gy.data),
                            requires_grad=False)
        return gy * (c * x ** (c - 1))



# %% [markdown]
# One operator is new: `2 ** x`, a number raised to a Variable. Python first asks the number
# (`int.__pow__` knows nothing of Variables), then calls `x.__rpow__(2)`. Its function is
# `RPow`, $y = c^x$, with $dy/dx = c^x \log c = y \log c$: like `Exp` in `functions`, it keeps its
# output rather than its input. At base 0 the output is 0, 1 or infinite, and the gradient is
# taken as PyTorch does: 0 where $x \ge 0$, $-\infty$ where $x < 0$; a negative base gives `nan`.

# %%
#| export dezero_like/core.py
import numpy as np
from dezero_like import cuda


class RPow(Function):
    """y = c ** x for a constant base c; dy/dx = y * log(c), so the output is kept."""

    def __init__(self, c):
        if isinstance(c, Variable) or np.ndim(c) != 0:
            raise TypeError(f"the base of ** must be a number here, got {type(c).__name__}")
        self.c = c[()] if isinstance(c, np.ndarray) else c  # a NumPy scalar works on a GPU

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return self.c ** x

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        c = self.c
        if c == 0:  # y is 0, 1 or inf: the gradient is 0 for x >= 0 and -inf where y = inf
            xp = cuda.get_array_module(gy.data)
            d = xp.where(xp.isnan(y.data), np.nan, 0.0)  # a nan x keeps a nan gradient
            return gy * xp.where(xp.isinf(y.data), -np.inf, d).astype(y.dtype)
        return gy * (y * (np.log(c) if c > 0 else np.nan))  # a negative base: nan, as PyTorch


# %% [markdown]
# The wrappers and the operators, as in step 22, with `rpow` added. `rsub`, `rdiv` and `rpow`
# are the reflected operators: `2.0 - x` calls `x.__rsub__(2.0)`, which computes `2.0 - x`.

# %%
#| export dezero_like/core.py
def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):
    return Mul()(x0, x1)


def neg(x):
    return Neg()(x)


def sub(x0, x1):
    return Sub()(x0, x1)


def rsub(x0, x1):
    return Sub()(x1, x0)


def div(x0, x1):
    return Div()(x0, x1)


def rdiv(x0, x1):
    return Div()(x1, x0)


def pow(x, c):  # noqa: A001 - the book's name
    return Pow(c)(x)


def rpow(x, c):
    """c ** x: 2 ** x calls x.__rpow__(2), that is rpow(x, 2)."""
    return RPow(c)(x)


def setup_variable():
    """Give Variable its operators (kept as a function, as in the book)."""
    Variable.__add__ = add
    Variable.__radd__ = add
    Variable.__mul__ = mul
    Variable.__rmul__ = mul
    Variable.__neg__ = neg
    Variable.__sub__ = sub
    Variable.__rsub__ = rsub
    Variable.__truediv__ = div
    Variable.__rtruediv__ = rdiv
    Variable.__pow__ = pow
    Variable.__rpow__ = rpow


setup_variable()


# %% [markdown]
# `cuda` holds what the GPU needs, without importing CuPy (step 54 uses it): `is_cupy_array`
# asks whether CuPy is imported and the array is one of its arrays; `get_array_module` gives the
# module to compute with. On a GPU these questions come several times per kernel launch, and a
# training step is a few dozen launches (step 71), so `is_cupy_array` remembers every CuPy array
# type it has met, with its module (`_CUPY_MODULES`): `get_array_module` and `as_array` then answer
# for a GPU array with one dictionary lookup, and the NumPy path is not touched.

# %%
#| export dezero_like/cuda.py
"""GPU support through CuPy, imported only when it is used.

One code path serves both devices: functions ask ``get_array_module(x)`` for
``numpy`` or ``cupy`` and call the same array API on it. Nothing here imports
CuPy until a GPU is asked for, so ``import dezero_like`` stays fast and works on
machines without CuPy.
"""

import sys

# the CuPy array types met so far, each with its module: on a GPU every function asks which
# module holds its arrays, and one dictionary lookup answers, with no call
_CUPY_MODULES = {}


def is_cupy_array(x):
    """True for a CuPy array (checked without importing CuPy)."""
    if type(x) in _CUPY_MODULES:
        return True
    cupy = sys.modules.get("cupy")
    if cupy is None or not isinstance(x, cupy.ndarray):
        return False
    if cupy not in _CUPY_MODULES.values():  # another cupy module than before (a test's)
        _CUPY_MODULES.clear()
    _CUPY_MODULES[type(x)] = cupy
    return True


# %%
#| export dezero_like/cuda.py
import sys
import numpy as np


def get_array_module(x):
    """``numpy`` or ``cupy``, whichever holds ``x`` (an array or a Variable)."""
    if type(x) is np.ndarray:
        return np
    xp = _CUPY_MODULES.get(type(x))  # a GPU array of a type met before: no call
    if xp is not None:
        return xp
    if is_cupy_array(x):  # before the import below: a GPU array needs none
        return sys.modules["cupy"]
    from dezero_like.core import Variable

    if isinstance(x, Variable) and is_cupy_array(x.data):
        return sys.modules["cupy"]
    return np


# %%
#| export dezero_like/cuda.py
import numpy as np


def as_numpy(x):
    """``x`` (a NumPy or CuPy array, a number, or a Variable's data) as a NumPy array.

    A NumPy array comes back as it is, the same object, not a copy; a CuPy
    array is copied to the host.
    """
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


# %%
#| export dezero_like/utils.py
"""Helpers: numerical gradients, comparisons, and small array utilities.

``numerical_grad`` and ``gradient_check`` are how every function of the package
is tested: central differences in float64 against the framework's backward.
"""

import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable


def _host(x):
    return cuda.as_numpy(x.data if isinstance(x, Variable) else x)


def array_equal(a, b):
    """``np.array_equal`` for Variables, NumPy and CuPy arrays: same shape, same values."""
    return bool(np.array_equal(_host(a), _host(b)))


# %%
#| export dezero_like/utils.py
import numpy as np


def array_allclose(a, b, rtol=1e-4, atol=1e-5):
    """``np.allclose`` for Variables, NumPy and CuPy arrays (broadcasting as NumPy does).

    As with ``np.allclose``, a scalar or a shape that broadcasts is compared
    element by element; shapes that cannot broadcast give False.
    """
    a, b = _host(a), _host(b)
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
    except ValueError:
        return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


# %%
#| export dezero_like/utils.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Variable, as_variable


def numerical_grad(f, x, *args, eps=1e-4, **kwargs):
    """Gradient of ``sum(f(x, *args))`` with respect to ``x`` by central differences.

    Each element of ``x`` is nudged by ``+eps`` and ``-eps`` in turn; the
    difference of the two sums divided by ``2*eps`` approximates the slope. It
    costs two evaluations of ``f`` per element, which is why backprop exists.
    The nudges are made in the input's floating dtype; integer, boolean and
    float16 input is nudged in float64 (``1 + 1e-4`` is 1 in int64 and in float16),
    and its gradient is float64. For a GPU input the nudges are made on a host copy
    and ``f`` runs on the GPU, where its other arguments (weights) live too.
    """
    x_data = x.data if isinstance(x, Variable) else x if cuda.is_cupy_array(x) else np.asarray(x)
    xp = cuda.get_array_module(x_data)
    x_data = cuda.as_numpy(x_data)
    if x_data.dtype.kind in "biu" or x_data.dtype == np.float16:
        x_data = x_data.astype(np.float64)
    x_data = x_data.copy()  # never perturb the caller's array
    args = [a for a in args]
    grad = np.zeros_like(x_data, dtype=np.result_type(x_data.dtype, np.float32))

    def total(data):
        y = f(Variable(xp.asarray(data)), *args, **kwargs)  # on x's device
        if isinstance(y, (list, tuple)):
            return sum(float(cuda.as_numpy(v.data).sum()) for v in y)
        return float(cuda.as_numpy(as_variable(y).data).sum())

    for idx in np.ndindex(x_data.shape):  # every element's index (one for 0-d, none if empty)
        original = x_data[idx].copy()
        x_data[idx] = original + eps
        y_plus = total(x_data.copy())
        x_data[idx] = original - eps
        y_minus = total(x_data.copy())
        x_data[idx] = original
        grad[idx] = (y_plus - y_minus) / (2 * eps)
    return xp.asarray(grad)


# %%
#| export dezero_like/utils.py
import numpy as np
from dezero_like.core import Variable, as_variable


def _output_weights(index, shape):
    """The fixed weights of output ``index`` of shape ``shape`` in :func:`gradient_check`:
    numbers in [0.5, 1.5), drawn from a generator seeded with ``index``, so every call of
    ``f`` (two per element for the numerical gradient, one for backprop) gets the same."""
    return np.random.default_rng(index).uniform(0.5, 1.5, shape)


def _weighed(y, index):
    """Output ``index`` of f, ``y``, times its weights, on its device."""
    y = as_variable(y)
    return y * cuda.get_array_module(y.data).asarray(_output_weights(index, y.shape))


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, hint=None, **kwargs):
    """Compare backprop's gradient of a weighted sum of ``f(x, *args, **kwargs)`` with the
    numerical one.

    Each element of ``f``'s output (of each output, if it returns several) is weighed by a
    fixed number in [0.5, 1.5) before they are added up. With a plain sum the gradient
    arriving at the output would be all ones, and a backward that forgets to multiply by it
    would pass; and some functions add up to a constant (a softmax row sums to 1), whose
    gradient is 0 whatever their backward does.

    Returns True when they agree. When they do not, raises ``AssertionError``
    with a message naming the function, the input shape and the worst element,
    so a failing test says what went wrong without a debugger. ``hint``, a string,
    leads that message: what the mistake probably is (an exercise's self-check says
    which formula to reread), with gradient_check's own words after it in brackets.

    ``rtol``, ``atol`` and ``hint`` are gradient_check's own keywords; every other
    keyword goes on to ``f``. So ``f`` cannot be handed a keyword of one of those three
    names this way: bind it in a lambda (``lambda v: f(v, hint=...)``).
    """
    if hint is not None and not isinstance(hint, str):
        raise TypeError(f"gradient_check's hint must be a string (it leads the failure "
                        f"message), got {type(hint).__name__}: to pass a keyword 'hint' to f, "
                        "bind it in a lambda")

    def failed(message):
        """The AssertionError of a failed check, the hint leading its message."""
        return AssertionError(message if hint is None else f"{hint} ({message})")

    x = as_variable(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"gradient_check needs real-valued input, got {x.dtype}")
    # the check runs in float64, whatever x is (the book's DeZero does the same): in float32 a
    # central difference keeps about four digits (step 04), too few for rtol=1e-4
    x = Variable(x.data.astype(np.float64))  # a copy: x itself is never touched

    def weighted(v, *args, **kwargs):
        """f's output times its weights; several outputs: the sum of each one's weighted sum
        (numerical_grad adds up the elements, and backward() starts from ones)."""
        outputs = f(v, *args, **kwargs)
        if not isinstance(outputs, (list, tuple)):
            return _weighed(outputs, 0)
        total = _weighed(outputs[0], 0).sum()
        for i, y in enumerate(outputs[1:], 1):
            total = total + _weighed(y, i).sum()
        return total

    num_grad = _host(numerical_grad(weighted, x, *args, **kwargs))  # NumPy, as bp_grad below
    weighted(x, *args, **kwargs).backward()
    name = getattr(f, "__qualname__", None) or type(f).__name__
    if x.grad is None:
        raise failed(f"gradient_check({name}): backward left x.grad as None")
    bp_grad = _host(x.grad)
    if bp_grad.shape != num_grad.shape:
        raise failed(
            f"gradient_check({name}): backprop gradient has shape {bp_grad.shape}, "
            f"input has shape {num_grad.shape}"
        )
    if not np.allclose(bp_grad, num_grad, rtol=rtol, atol=atol):
        err = np.abs(bp_grad - num_grad)
        worst = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
        worst = tuple(int(i) for i in worst)  # (1, 2), not (np.int64(1), np.int64(2))
        raise failed(
            f"gradient_check({name}) failed for input of shape {x.shape}: worst element "
            f"{worst}: backprop {float(bp_grad[worst])!r} vs numerical "
            f"{float(num_grad[worst])!r} (abs error {err[worst]:.3g}, rtol={rtol}, atol={atol}); "
            "the gradient arriving at f's output is not all ones here (each element is weighed "
            "by a fixed number in [0.5, 1.5)), so a backward that ignores gy fails"
        )
    return True


# %%
#| export dezero_like/utils.py
def forward_names(module, names, pytorch=None, book=None):
    """A module-level ``__getattr__`` (PEP 562) for names that live in a later module.

    ``names`` maps a name to the module that defines it, e.g. ``{"conv2d":
    "dezero_like.functions_conv"}``. The module is imported the first time the
    name is asked for, so ``F.conv2d`` works as in the book while
    ``dezero_like.functions`` itself never imports the convolution code (which
    imports ``functions``: importing it at the top would be a cycle).
    ``pytorch`` maps PyTorch's names that the module lacks to what to write
    instead: asking for one is still an AttributeError, which says so (step 57).
    ``book`` does the same for names of the book's DeZero that are left out here,
    so that the book's own scripts stop with what to write instead.
    """
    import importlib

    fixes = pytorch or {}
    left_out = book or {}

    def __getattr__(name):
        if name not in names:
            if name in left_out:
                hint = f": the book's DeZero has it, dezero_like leaves it out; {left_out[name]}"
            elif name in fixes:
                hint = f": that is PyTorch's name; here write {fixes[name]}"
            else:
                hint = ""
            raise AttributeError(f"module {module!r} has no attribute {name!r}{hint}")
        return getattr(importlib.import_module(names[name]), name)

    return __getattr__


# %%
#| export dezero_like/functions.py
"""Differentiable functions: ``import dezero_like.functions as F``.

Each function is a :class:`~dezero_like.core.Function` subclass (``forward`` on
raw arrays, ``backward`` on Variables, so its backward is itself differentiable)
plus a lowercase wrapper. The docstring gives the formula and its derivative.
Every function works on NumPy and CuPy arrays through the same code.
"""

from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core
from dezero_like import core


# The arithmetic behind Variable's operators is written in core; as in the
# book, F.add(x, y) and its siblings are the same functions by plain names.
add = core.add


sub = core.sub


rsub = core.rsub


mul = core.mul


div = core.div


rdiv = core.rdiv


neg = core.neg


pow = core.pow  # noqa: A001 - the book's name


# %%
#| export dezero_like/functions.py
from dezero_like.core import Function


class Square(Function):
    """y = x**2; dy/dx = 2x."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        (x,) = self.inputs
        return gy * (2 * x)


# %%
#| export dezero_like/functions.py
def square(x):
    return Square()(x)


# %% [markdown]
# `exp`, `sin` and `cos` (and, later, `tanh` and `log`) take integer input too, computed in
# float64 by `_as_float`. Left to NumPy, an int8 or uint8 array would be computed in float16,
# which keeps three significant digits and makes `exp(12)` infinite. The rule itself, "a
# floating dtype stays, anything else becomes float64", is `_float_dtype`: later functions
# (sums and means, losses, dropout, batch norm) ask it for the dtype to compute in.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function


def _float_dtype(dtype, complex_ok=True):
    """The dtype to compute in: ``dtype`` itself when it is a floating one (or complex, with
    ``complex_ok``), float64 for integers and booleans (NumPy would give float16 results for
    int8 and uint8 input, and a sum or a mean of integers would wrap or round)."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in ("fc" if complex_ok else "f") else np.dtype(np.float64)


def _as_float(x):
    """Integer and boolean arrays in float64, floating ones as they are: :func:`_float_dtype`.

    A floating array is the common case, on every call of ``exp``, ``sin`` or ``cos``, so it
    is let through by one test of its kind before anything else is asked."""
    return x if x.dtype.kind in "fc" else x.astype(_float_dtype(x.dtype))


class Exp(Function):
    """y = exp(x); dy/dx = exp(x) = y, so the output is kept instead of the input."""

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return cuda.get_array_module(x).exp(_as_float(x))

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * y


# %%
#| export dezero_like/functions.py
def exp(x):
    return Exp()(x)


# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _as_float


class Sin(Function):
    """y = sin(x); dy/dx = cos(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).sin(_as_float(x))

    def backward(self, gy):
        (x,) = self.inputs
        return gy * cos(x)


# %%
#| export dezero_like/functions.py
def sin(x):
    return Sin()(x)


# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _as_float


class Cos(Function):
    """y = cos(x); dy/dx = -sin(x)."""

    def forward(self, x):
        return cuda.get_array_module(x).cos(_as_float(x))

    def backward(self, gy):
        (x,) = self.inputs
        return gy * -sin(x)


# %%
#| export dezero_like/functions.py
def cos(x):
    return Cos()(x)


# %%
#| export dezero_like/__init__.py
"""dezero_like: a deep-learning framework you build one step at a time.

>>> import numpy as np
>>> import dezero_like as dz
>>> x = dz.Variable(np.array(3.0))
>>> y = x ** 2 + 2 * x
>>> y.backward()
>>> x.grad
variable(8.0)
"""

import warnings as _warnings

import numpy as _np

from dezero_like import cuda, functions, utils
from dezero_like.core import (
    as_array,
    as_variable,
    Config,
    Function,
    no_grad,
    using_config,
    Variable,
)

__version__ = "0.1.0"

# The package is written for NumPy 2's rules of mixing dtypes (NEP 50): np.float32(1) + 1.0
# is float32 and a float32 array + np.float64(1) is float64, where NumPy 1 gives float64
# and float32. Under NumPy 1 it runs (the book's tests pass, with Chainer as their oracle,
# which needs NumPy 1), but some dtypes come out otherwise, so it says so once, with the fix.
if int(_np.__version__.split(".")[0]) < 2:
    _warnings.warn(
        f"dezero_like is written for NumPy 2, but this Python imports NumPy {_np.__version__} "
        f"(from {_np.__path__[0]}): where a NumPy scalar meets a Python number or an array, "
        "some results get another dtype than the steps show (NEP 50). To fix: pip install "
        "--upgrade \"numpy>=2\", then start Python again (in Jupyter or Colab, restart the "
        "kernel: a NumPy already imported stays the old one).", UserWarning, stacklevel=2)

# The book's __init__ also has a switch, `is_simple_core`, that its steps 28-29 read to
# swap in `core_simple`, whose x.grad is an array. Here there is one core (steps 01-22 are
# the simple one), so asking for the switch says what to write instead.
__getattr__ = utils.forward_names(__name__, {}, book={
    "is_simple_core": "it has one core, where x.grad is a Variable. The book's steps 28-29 "
                      "read it to switch to core_simple, whose x.grad is an array: leave that "
                      "switch out and update with the array, x.data -= lr * x.grad.data",
})


# %%
# The cells above also defined `pow` in this script, hiding Python's built-in
# of that name here: hand it back (the package keeps its own).
import builtins

pow = builtins.pow


# %%
import inspect

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import utils

print("dezero_like", dz.__version__)
print("top-level names:", ", ".join(dz.__all__))

# %% [markdown]
# ## A tour of the modules
#
# For each module: the first line of its docstring, then the classes and
# functions it defines in the finished package (not the ones it imports from
# elsewhere). Later steps add most of these names; this step adds the ones
# listed above.

# %%
for module in (dz.core, F, utils, dz.cuda):
    doc = inspect.getdoc(module).splitlines()[0]
    names = [name for name, obj in vars(module).items()
             if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
             and obj.__module__ == module.__name__]
    print(f"{module.__name__}: {doc}")
    print("    " + ", ".join(names))

# %% [markdown]
# ## The same framework, grown up
#
# The package's `core.py` starts from our step-22 snapshot but already does a
# little more. Two differences show up right away:
#
# * `x.grad` is a `Variable`, not an ndarray. That lets a later step
#   differentiate a gradient again (double backprop, steps 30-32); read the
#   array with `x.grad.data`.
# * Constants such as the `2.0` in `2.0 - x` do not require a gradient, so no
#   gradient is computed for them.
#
# (A third arrives in step 37: from then on `backward()` frees what the
# functions saved, and a second `backward()` through the same graph is an error
# unless you ask to keep it with `retain_graph=True`.)
#
# The results are the same. Here is the table of step 22, now computed by the
# package:

# %%
x = dz.Variable(np.array(3.0), name="x")
for text, make in [("-x", lambda x: -x), ("2.0 - x", lambda x: 2.0 - x),
                   ("x - 1", lambda x: x - 1), ("x / 2", lambda x: x / 2),
                   ("6 / x", lambda x: 6 / x), ("x ** 3", lambda x: x**3),
                   ("np.array(2.0) * x", lambda x: np.array(2.0) * x),
                   ("3 + x * x", lambda x: 3 + x * x)]:
    x.cleargrad()
    y = make(x)
    y.backward()
    print(f"{text:18s} = {float(y.data):6.3f}   dy/dx = {float(x.grad.data):6.3f}"
          f"   result is a {type(y).__name__}")

# %% [markdown]
# The lessons of steps 14-19 hold as well: a variable used twice accumulates
# its gradient without aliasing (steps 14-15), the diamond graph is
# differentiated in generation order (steps 16-17), intermediate gradients are
# dropped unless `retain_grad=True` (step 19), and `no_grad()` builds no graph.

# %%
x = dz.Variable(np.array(3.0))
y = x + x
y.backward(retain_grad=True)
print("x + x:   y.grad =", y.grad, " x.grad =", x.grad, " same object:", y.grad is x.grad)

x = dz.Variable(np.array(2.0))
a = F.square(x)
y = F.square(a) + F.square(a)
y.backward()
print("diamond: x.grad =", x.grad, " a.grad =", a.grad)

with dz.no_grad():
    y = F.exp(x) * 2
print("no_grad: creator =", y.creator)

x32 = dz.Variable(np.array([1.0, 2.0], dtype=np.float32))
print("float32 stays float32:", (2.0 - x32 / 3).dtype)

# %% [markdown]
# ## Checking gradients with `utils`
#
# In step 04 we wrote a central-difference helper by hand, and in step 10 a
# gradient checker. The package ships one, which its own tests use to check
# the gradients of its functions: `utils.gradient_check(f, x)` compares backprop
# with central differences in float64 and returns `True`, or raises an
# `AssertionError` that names the worst element.
#
# It does not simply add up `f`'s output before differentiating: it first
# weighs each element by a fixed number between 0.5 and 1.5. With a plain sum
# the gradient arriving at the output, `gy`, would be all ones, and a
# `backward` that forgets to multiply by `gy` would pass the check. (A plain
# sum can also leave nothing to check: the elements of a softmax row add up to
# 1 whatever the input, so the gradient of their sum is 0.) Chainer's
# `check_backward` does the same with the `y_grad` it is given.
#
# A check can also say what the mistake probably is: `gradient_check(f, x,
# hint="...")` puts that sentence at the front of its failure message. The
# self-checks of the later exercises use it to name the formula to reread.


# %%
def f(x):
    return (x - 2) ** 3 / x - 1.5 * x + 4


x = np.array([0.5, 1.0, 3.0])
v = dz.Variable(x.copy())
f(v).backward()
print("backprop: ", v.grad.data)
print("numerical:", utils.numerical_grad(f, x))
print("gradient_check:", utils.gradient_check(f, x))

# %% [markdown]
# ## Exercise 1: check a gradient with the package
# Write $g(x) = x \sin(x) + \frac{1}{1 + x^2}$ with `F.sin` and the operators.
# The self-check runs `utils.gradient_check(g, ...)` on three points and
# compares $g(0.2)$ with NumPy.

# %%
#| exercise
def g(x):
    raise NotImplementedError("Exercise (step 23): return x * sin(x) + 1 / (1 + x**2), with F.sin")

# %%
#| solution
def g(x):
    return x * F.sin(x) + 1 / (1 + x**2)

# %%
#| check
y = g(dz.Variable(np.array(0.2)))
assert isinstance(y, dz.Variable), f"g should return a Variable, got {type(y).__name__}: use F.sin"
assert np.isclose(y.data, 0.2 * np.sin(0.2) + 1 / 1.04), (
    f"g(0.2) should be {0.2 * np.sin(0.2) + 1 / 1.04:.6f}, got {y.data}: check the formula"
)
assert utils.gradient_check(g, np.array([-1.0, 0.2, 2.5]))
print("self-check passed: g's value is right and backprop agrees with central differences")

# %% [markdown]
# ## Exercise 2: write the numerical gradient of `utils`
# `utils.numerical_grad(f, x)` is what `gradient_check` compares backprop
# with. Write your own, for a float64 array `x` of any shape: for each index
# `idx` (`np.ndindex(x.shape)`), evaluate the sum of `f`'s output at a copy of
# `x` with `x[idx] + eps` and at one with `x[idx] - eps` (as Variables), and
# put the central difference $(s_+ - s_-) / 2\varepsilon$ at `idx` of the
# result. The self-check compares it with the package's
# `utils.numerical_grad` and with backprop on random inputs.

# %%
#| exercise
def my_numerical_grad(f, x, eps=1e-4):
    raise NotImplementedError("Exercise (step 23): for idx in np.ndindex(x.shape): nudge a copy "
                              "of x by +eps and -eps, sum f's outputs, take the difference / 2eps")

# %%
#| solution
def my_numerical_grad(f, x, eps=1e-4):
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        s_plus = f(dz.Variable(plus)).data.sum()
        s_minus = f(dz.Variable(minus)).data.sum()
        grad[idx] = (s_plus - s_minus) / (2 * eps)
    return grad

# %%
#| check
xs = np.random.default_rng(0).uniform(-2, 2, size=(2, 3))
for name, fn in [("F.sin", F.sin), ("f", f), ("x * exp(x)", lambda v: v * F.exp(v))]:
    try:
        mine = my_numerical_grad(fn, xs.copy())
    except NotImplementedError as e:
        raise AssertionError(f"my_numerical_grad is not written yet: {e}") from None
    assert np.shape(mine) == xs.shape, (
        f"the gradient has x's shape {xs.shape}, got {np.shape(mine)}"
    )
    assert np.allclose(mine, utils.numerical_grad(fn, xs)), (
        f"my_numerical_grad({name}) differs from utils.numerical_grad: nudge one element at a "
        "time, by +eps and -eps, and sum all of f's outputs each time"
    )
    v = dz.Variable(xs.copy())
    fn(v).backward()
    assert np.allclose(mine, v.grad.data, rtol=1e-5, atol=1e-6), f"{name}: far from backprop"


def times_total(v):  # not elementwise: every output moves with every input (through the sum)
    return v * float(v.data.sum())


mine = my_numerical_grad(times_total, xs.copy())
assert np.allclose(mine, utils.numerical_grad(times_total, xs)), (
    "for x * sum(x) my_numerical_grad differs from utils.numerical_grad: nudge one element at a "
    "time, and sum all of f's outputs (not only the nudged element's)"
)
print("self-check passed: my_numerical_grad agrees with utils.numerical_grad and with backprop")
