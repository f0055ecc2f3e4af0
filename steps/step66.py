# %% [markdown]
# # Step 66: Debug mode, finding the first NaN
#
# A NaN ("not a number") spreads: every operation that touches it returns NaN.
# By the time the loss prints `nan`, the function that produced the first one
# is long gone, and so is the evidence. Infinity behaves much the same:
# `inf - inf` and `0 * inf` are NaN.
#
# Industrial frameworks offer switches for this. Chainer's debug mode
# (`chainer.set_debug(True)`) checks every result of the forward and the
# backward computation and raises `RuntimeError` at the first NaN (Chainer
# documentation, "Debug Mode"). PyTorch's
# `torch.autograd.set_detect_anomaly(True)` checks only the **backward** pass:
# it raises when a backward function produces NaN, and it records during
# forward the traceback of each operation, so the error can point at the
# forward line whose backward failed (PyTorch documentation,
# `torch.autograd.detect_anomaly`). A NaN made in the forward pass itself goes
# unreported there until it reaches a backward. Ours, like Chainer's, checks
# both passes: `with dz.debug_mode():`. It is built from the hooks of step 65: a
# `DebugHook` whose `forward_postprocess` and `backward_postprocess` run
# `isfinite` on each new array and raise `DebugError` (a `RuntimeError`) that
# names the function, the pass, the line of your code that called it, and what
# the function was given. The core knows nothing about debug mode; it only
# gains one more hook callback, for gradients added into a leaf (below).

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `Log`, `log`, `softmax_cross_entropy_simple`; `hooks` gains
# `FunctionHook.leaf_postprocess`, `DebugError`, `DebugHook`, `debug_mode`; `core` changes
# `_accumulate_leaf` (it calls that callback).
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Log` is $\log x$ with derivative $1/x$. Unlike `Exp`, whose derivative is its output, this one
# needs the input, so `Log` keeps the default: it retains its input, and backward reads it from
# `self.inputs`. At $x = 0$ forward gives `-inf` and backward divides by 0, the kind of value the
# hook below finds.

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _as_float


class Log(Function):
    """y = log(x); dy/dx = 1/x."""

    def forward(self, x):
        return cuda.get_array_module(x).log(_as_float(x))  # integers: in float64

    def backward(self, gy):
        (x,) = self.inputs
        return gy / x


# %%
#| export dezero_like/functions.py
def log(x):
    return Log()(x)


# %% [markdown]
# With `log`, the book's composed loss can be written too: `softmax_cross_entropy_simple`, the
# mean of $-\log p_{t_n}$ from step 49's `softmax_simple`, `clip`, `log` and indexing. The `clip`
# to $[10^{-15}, 1]$ is there for this step's subject: a probability that underflows to 0 would
# make `log` give `-inf` and backward divide by 0. Clipped, the loss stops at
# $-\log 10^{-15} \approx 34.5$ with a gradient of 0 there. Step 49's `softmax_cross_entropy`
# needs neither trick, and builds one node where this one builds nine. The labels get step 49's
# checks (`_check_labels`): indexed with labels of shape `(N, 1)`, `log_p[rows, t]` would
# broadcast to an $N \times N$ pick and a wrong loss, and a label of $-1$ would pick the last
# class.

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import as_variable
from dezero_like.functions import _check_labels, clip, log, softmax_simple


def softmax_cross_entropy_simple(x, t):
    """-mean log softmax_simple(x)[n, t_n], composed of earlier functions.

    Probabilities are clipped to [1e-15, 1] before the log. The logits (N, C) and the
    integer labels (N,) are checked as in :func:`softmax_cross_entropy`, which is one
    function, exact for any logits.
    """
    x, t = as_variable(x), as_variable(t)
    _check_labels("softmax_cross_entropy_simple", x.data, t.data)
    n = x.shape[0]
    log_p = log(clip(softmax_simple(x), 1e-15, 1.0))
    rows = cuda.get_array_module(x.data).arange(n)  # on x's device: no copy to a GPU
    return -log_p[rows, t.data].sum() / n


# %% [markdown]
# `DebugError` is the error the debug hook raises; a class of its own, so a script can catch
# exactly it.

# %%
#| export dezero_like/hooks.py
class DebugError(RuntimeError):
    """A function produced NaN or Inf while :func:`debug_mode` was on."""


# %% [markdown]
# `_user_location` walks up the call stack with step 56's `_outside_package` to the first frame
# whose code is not the package's: the line in the learner's script that led to the call, rather
# than a line inside `core.py`. In Jupyter a cell's code lives in a temporary file with a number
# for a name (`2179349065.py`), which tells the learner nothing; so `_name_location` asks
# IPython, when it is running, for the name its own tracebacks use, `Cell In[3], line 2`.

# %%
#| export dezero_like/hooks.py
import os
import sys

from dezero_like.core import _outside_package


def _name_location(filename, lineno):
    """``file:line``, or ``Cell In[N], line L`` for a Jupyter/IPython cell, as IPython says it."""
    ipython = sys.modules.get("IPython")  # only if the learner's program already imported it
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
            named = shell.compile.format_code_name(filename) if shell is not None else None
        except Exception:  # noqa: BLE001 - an older or unusual IPython: use the file's name
            named = None
        if named:
            label, name = named
            return f"{label} {name}, line {lineno}"
    return f"{os.path.basename(filename)}:{lineno}"


def _user_location():
    """``file:line`` of the innermost frame outside the dezero_like package."""
    frame, _ = _outside_package(sys._getframe(1))
    if frame is None:
        return "unknown location"
    return _name_location(frame.f_code.co_filename, frame.f_lineno)


# %% [markdown]
# `_first_bad` finds the first NaN or Inf in an array. `argmin` of the boolean mask returns the
# first False; `np.unravel_index` turns that flat position into an index of the array's shape.
# Integer arrays cannot hold NaN and are skipped.

# %%
#| export dezero_like/hooks.py
import numpy as np
from dezero_like import cuda


def _first_bad(a):
    """Index and value of the first NaN/Inf in array ``a``, or None if all are finite."""
    if a is None or a.dtype.kind not in "fc":
        return None
    xp = cuda.get_array_module(a)
    finite = xp.isfinite(a)
    if bool(finite.all()):
        return None
    flat = int(xp.argmin(finite.ravel()))  # the first False
    index = tuple(int(i) for i in np.unravel_index(flat, a.shape))
    return index, cuda.as_numpy(a[index] if a.ndim else a).item()


# %% [markdown]
# `_summarise` describes an array in one phrase: shape, dtype, the range of its finite values and
# how many are NaN or Inf. The error message uses it to show what a function was given.

# %%
#| export dezero_like/hooks.py
from dezero_like import cuda


def _summarise(label, a):
    if a is None:
        return f"{label}: None"
    if a.dtype.kind not in "fc" or a.size == 0:
        return f"{label}: {tuple(a.shape)} {a.dtype}"
    xp = cuda.get_array_module(a)
    finite = xp.isfinite(a)
    n_bad = int(a.size - int(finite.sum()))
    text = f"{label}: {tuple(a.shape)} {a.dtype}"
    if n_bad < a.size:
        good = a[finite]
        text += f", finite range [{float(good.min()):.4g}, {float(good.max()):.4g}]"
    if n_bad:
        text += f", {n_bad} NaN/Inf"
    return text


# %% [markdown]
# `DebugHook` checks every output of every forward and every gradient of every backward. In forward
# it also stores the call site on the function, because during backward the learner's code is no
# longer on the stack. Each message adds a hint when the inputs already held NaN or Inf: the
# function that raised it only passed on a bad value made earlier.
#
# Some gradients are made by no function: when a variable is used twice, the backward loop *adds*
# the two gradients it receives (step 14), and a leaf adds each new gradient to its `.grad`. Such
# a sum can overflow (two float16 gradients of 40000 make `inf`) although every part was finite.
# So the hook also checks what arrives at a function before its backward runs, and a leaf's
# `.grad` after each addition: for that, hooks get a fifth callback, `leaf_postprocess(x)`, which
# `_accumulate_leaf` calls on the global hooks (a leaf belongs to no function, so hooks attached
# to one function do not see it).

# %%
#| export dezero_like/hooks.py FunctionHook
def leaf_postprocess(self, variable):
    """Called (on global hooks) after a backward added a gradient into a leaf's ``.grad``."""


# %%
#| export dezero_like/core.py
from dezero_like.core import _F, _add_grads, _global_hooks, _writeable


def _accumulate_leaf(x, gx):
    """Add ``gx`` to the gradient of the leaf ``x`` (in ``x``'s dtype, writable).

    An integer or boolean leaf keeps its gradient's own dtype: rounding a
    gradient to integers would turn 1/3 into 0. Global hooks see the new sum.
    """
    data = gx.data
    if data.dtype != x.data.dtype and x.data.dtype.kind in "fc":
        gx = _F().astype(gx, x.data.dtype)
    elif not _writeable(data):
        gx = _F().astype(gx, data.dtype, copy=True)
    x.grad = gx if x.grad is None else _add_grads(x.grad, gx)
    for hook in _global_hooks:
        if hasattr(hook, "leaf_postprocess"):  # a hook need not subclass FunctionHook
            hook.leaf_postprocess(x)

# %% [markdown]
# A bad value that a function *receives* usually comes from the data or from code that ran
# outside debug mode. One more source is common in training: the optimizer's update, which is
# plain array arithmetic that no hook sees. A learning rate far too large can turn a weight into
# `inf` between two forward passes. So when a bad input is a `Parameter`, the message names it and
# says that an update may have made it. The hook is given the input arrays only; `_call_inputs`
# finds the Variables themselves in the `Function.__call__` that is running on the call stack.

# %%
#| export dezero_like/hooks.py
import sys

from dezero_like import core


def _call_inputs(function):
    """The inputs (Variables) of the call of ``function`` now running, or ``()`` if not found.

    Read from the frame of ``Function.__call__``, which holds them as ``inputs``; only used to
    word an error message.
    """
    code = core.Function.__call__.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code and frame.f_locals.get("self") is function:
            return tuple(frame.f_locals.get("inputs", ()))
        frame = frame.f_back
    return ()


# %%
#| export dezero_like/hooks.py
from dezero_like import core
from dezero_like.hooks import _NestingHook, _call_inputs, _datas


def _where(function):
    """Where ``function``'s forward was called, as :class:`DebugHook` remembered it."""
    return getattr(function, "_debug_location",
                   "an unknown location (forward ran outside debug_mode)")


class DebugHook(_NestingHook):
    """Raise :class:`DebugError` as soon as a forward or backward result holds NaN or Inf.

    The message names the function, the pass, where the function was called in
    your code, the first bad element, and a summary of what the function was
    given, so you can tell a function that *makes* NaN (log of 0) from one that
    merely passes on a NaN it received.
    """

    def forward_postprocess(self, function, in_data, out_data):
        where = _user_location()
        if not self._in_backward:
            function._debug_location = where  # remembered for its backward
        for k, y in enumerate(out_data):
            bad = _first_bad(y)
            if bad is None:
                continue
            context = ""
            if self._in_backward:
                outer = self._backward_stack[-1]
                context = (f" (inside the backward of {type(outer).__name__}, whose forward was "
                           f"called at {_where(outer)})")
            inputs = "; ".join(_summarise(f"input {i}", x) for i, x in enumerate(in_data))
            hint = self._hint(in_data, _call_inputs(function))
            raise DebugError(
                f"forward of {type(function).__name__}{context} produced {bad[1]} in output {k} "
                f"at index {bad[0]}, called at {where}; inputs had {inputs}{hint}"
            )

    def backward_preprocess(self, function, grad_outputs):
        for k, gy in enumerate(_datas(grad_outputs)):
            bad = _first_bad(gy)
            if bad is not None:
                raise DebugError(
                    f"the gradient that reached output {k} of {type(function).__name__} (forward "
                    f"called at {_where(function)}) holds {bad[1]} at index {bad[0]}, before its "
                    "backward ran. It is the sum of the gradients sent back by the functions that "
                    "used this output, each of them finite under debug_mode: the sum overflowed "
                    "(or the seed given to backward() held it, or a function ran outside "
                    "debug_mode)"
                )

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        super().backward_postprocess(function, grad_outputs, grad_inputs)
        for k, gx in enumerate(_datas(grad_inputs)):
            bad = _first_bad(gx)
            if bad is None:
                continue
            where = _where(function)
            gys = "; ".join(_summarise(f"grad of output {i}", g)
                            for i, g in enumerate(_datas(grad_outputs)))
            xs = "; ".join(
                _summarise(f"input {i}", x.data) if x.data is not None
                else f"input {i}: not kept for backward"
                for i, x in enumerate(function.inputs)
            )
            hint = self._hint(_datas(grad_outputs))
            raise DebugError(
                f"backward of {type(function).__name__} produced {bad[1]} in the gradient of "
                f"input {k} at index {bad[0]} (forward called at {where}); "
                f"output gradients had {gys}; inputs had {xs}{hint}"
            )

    def leaf_postprocess(self, variable):
        bad = _first_bad(variable.grad.data)
        if bad is not None:
            name = f" '{variable.name}'" if variable.name else ""
            raise DebugError(
                f"the gradient of the leaf{name} {tuple(variable.shape)} "
                f"{variable.grad.dtype} holds {bad[1]} at index {bad[0]} after a backward added "
                "its part. The gradients that functions sent to it were checked and finite, so "
                "either their sum overflowed, or the .grad held NaN/Inf before this backward "
                "(cleargrad()), or the seed given to backward() held it")

    @staticmethod
    def _hint(arrays, inputs=()):
        """What to add when the arrays a function received (``inputs``: their Variables, if
        known) already held NaN/Inf: where such a value can come from."""
        bad = [i for i, a in enumerate(arrays) if _first_bad(a) is not None]
        if not bad:
            return ""
        params = [(i, inputs[i]) for i in bad
                  if i < len(inputs) and isinstance(inputs[i], core.Parameter)]
        earlier = "(in the data, or in a function run outside debug_mode)"
        if not params:
            return f". What it received already held NaN/Inf: the problem started earlier {earlier}"
        named = " and ".join(
            f"input {i} (the Parameter '{p.name}')" if p.name else f"input {i} (a Parameter)"
            for i, p in params)
        text = (f". What it received already held NaN/Inf in {named}: an optimizer update (a "
                f"learning rate too large?) may have made {'it' if len(params) == 1 else 'them'} "
                "so; updates are not checked by debug_mode")
        if len(params) < len(bad):
            text += f"; the other bad inputs started earlier {earlier}"
        return text


# %% [markdown]
# `debug_mode()` returns a new `DebugHook`; the hook is a context manager, so `with debug_mode():`
# turns the checks on for the block.

# %%
#| export dezero_like/hooks.py
def debug_mode():
    """``with dezero_like.debug_mode():`` checks every result for NaN/Inf (see :class:`DebugHook`).

    Costs an ``isfinite`` pass per array (two per gradient); use it to find a bug, not to
    train.
    """
    return DebugHook()


# %% [markdown]
# `debug_mode` is imported into the package's namespace: `with dezero_like.debug_mode():`.

# %%
#| export dezero_like/__init__.py
from dezero_like.hooks import debug_mode


# %%
import time

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import DebugError, FunctionHook
from dezero_like.models import MLP

print("debug mode is a function hook:", isinstance(dz.debug_mode(), FunctionHook))

# %% [markdown]
# ## A NaN in the forward pass
#
# Cross entropy written straight from the formula, $-\frac1N\sum t \log
# \mathrm{softmax}(x)$, overflows for large logits: $e^{1000}$ is `inf` in
# floating point, and `inf / inf` is NaN. Without debug mode we only see the
# result, and NumPy's `RuntimeWarning`s on stderr (five of them, one per
# function that met the problem: `exp`, the division, `log`, ...), each naming
# a line inside the package, none the line of ours that started it:

# %%
def naive_cross_entropy(logits, t_onehot):
    e = F.exp(logits)
    p = e / F.sum(e, axis=1, keepdims=True)
    return -F.sum(t_onehot * F.log(p)) / len(logits)


logits = dz.Variable(np.array([[1000.0, 0.0], [0.5, 1.5]]))
t = np.array([[1.0, 0.0], [0.0, 1.0]])
loss = naive_cross_entropy(logits, t)
loss.backward()
print("loss =", loss.data, " grad has NaN:", bool(np.isnan(logits.grad.data).any()))

# %% [markdown]
# With debug mode the first non-finite value stops the program at its source:

# %%
logits.cleargrad()
try:
    with dz.debug_mode():
        loss = naive_cross_entropy(logits, t)
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# The graph of the same forward pass shows where it went wrong. Each node holds its value; read it
# from the top. The logits are finite. The first bad value is the `inf` that `Exp` made (the bold
# coral box, the one debug mode named). The division turns it into `nan` ($\infty / \infty$), and
# that `nan` flows down through every node to the loss. To find that box, a small hook of our own
# does what `DebugHook` does, but notes the first function whose output is not finite instead of
# raising.

# %%
from dezero_like.graph import get_dot_graph, keep_values_for_drawing, render_dot  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402


class FirstNonFinite(FunctionHook):
    """Notes the first function whose forward output holds NaN or Inf (and raises nothing)."""

    first = None

    def forward_postprocess(self, function, in_data, out_data):
        if self.first is None and not all(np.isfinite(y).all() for y in out_data):
            self.first = function


finder = FirstNonFinite()
with keep_values_for_drawing(), finder, np.errstate(all="ignore"):  # no NumPy warnings here
    loss = naive_cross_entropy(logits, t)
print("first function with a non-finite output:", type(finder.first).__name__)
dot_text = get_dot_graph(loss, verbose=False, values=True, active=finder.first)
image = written(render_dot(dot_text, output_dir(66) / "first_nan.svg"))
image

# %% [markdown]
# ## A NaN in the backward pass
#
# Some functions are fine forwards and break backwards. The Euclidean norm
# $\lVert v \rVert = (\sum v_i^2)^{1/2}$ is $0$ at $v = 0$, but its derivative
# $\frac{1}{2}(\sum v_i^2)^{-1/2} \cdot 2v$ is $\infty \cdot 0$ there. Debug mode
# catches the `inf` where it appears, inside the backward of `Pow`, and says
# where that `Pow` was called in the forward pass:

# %%
v = dz.Variable(np.zeros(3))
try:
    with dz.debug_mode():
        norm = F.sum(v**2) ** 0.5
        norm.backward()
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# ## Bad data, not a bad function
#
# When a function receives NaN, the message says so: the bug is upstream, in
# the data or in code that ran outside debug mode.

# %%
try:
    with dz.debug_mode():
        F.tanh(dz.Variable(np.array([0.0, np.nan])))
except DebugError as e:
    print("DebugError:", e)

# %% [markdown]
# ## What it costs
#
# Every array is scanned once more (a gradient twice: as it leaves a backward and as it
# reaches the next), and every call looks up the caller's line.
# That is cheap next to big matrix products but not free, which is why debug
# mode is a switch you turn on to hunt a bug, not a default:

# %%
rng = np.random.default_rng(0)
model = MLP((50, 50, 10))
xb = rng.standard_normal((64, 20)).astype(np.float32)
tb = rng.integers(0, 10, 64)


def train_step():
    loss = F.softmax_cross_entropy(model(xb), tb)
    model.cleargrads()
    loss.backward()


def best_time(fn, repeat=20):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


train_step()
plain = best_time(train_step)
with dz.debug_mode():
    debug = best_time(train_step)
print(f"one training step: {plain * 1e3:.2f} ms plain, {debug * 1e3:.2f} ms in debug mode")

# %% [markdown]
# ## Exercise
# 1. Rewrite the cross entropy so that debug mode finds nothing for the same
#    logits. Hint: $\log \mathrm{softmax}(x) = x - \log\sum e^{x}$ never takes
#    the log of a probability that rounded to 0, and step 49 gave the package
#    a function that computes it with the max subtracted first.
# 2. **Implement then test: `log`.** Write `MyLog`, the `Function` this step
#    adds to the package: `forward` takes the log with the array module the
#    input belongs to (NumPy or CuPy, step 54), and `backward` applies
#    $\frac{d}{dx}\log x = 1/x$ to $g_y$; where does backward find $x$? The
#    self-check runs `gradient_check` on positive inputs and compares with
#    `F.log`.

# %%
#| exercise
def stable_cross_entropy(logits, t_onehot):
    raise NotImplementedError(
        "Exercise (step 66): the loss of naive_cross_entropy, without taking log(0)"
    )

# %%
#| solution
def stable_cross_entropy(logits, t_onehot):
    return -F.sum(t_onehot * F.log_softmax(logits, axis=1)) / len(logits)

# %%
#| check
logits = dz.Variable(np.array([[1000.0, 0.0], [0.5, 1.5]]))
with dz.debug_mode():
    loss = stable_cross_entropy(logits, t)
    loss.backward()
expected = (0.0 + np.log1p(np.exp(-1.0))) / 2  # sample 1 is certain; sample 2: log(1 + e^-1)
assert np.isclose(loss.data, expected), (
    f"expected {expected:.6f}, got {loss.data}: the same loss as naive_cross_entropy, "
    "averaged over the rows"
)
assert np.isfinite(logits.grad.data).all(), "the gradient has inf or NaN"
print("self-check passed: the stable cross entropy passes debug mode at logit 1000")

# %%
#| exercise
class MyLog(Function):
    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 66): the natural log, with NumPy or CuPy as the input needs"
        )

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 66): gy times the derivative of log x")

# %%
#| solution
class MyLog(Function):
    def forward(self, x):
        return cuda.get_array_module(x).log(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy / x

# %%
#| check
from dezero_like.utils import gradient_check  # noqa: E402

rng = np.random.default_rng(0)
positive = rng.uniform(0.2, 3.0, size=(3, 4))
assert np.allclose(MyLog()(dz.Variable(positive)).data, F.log(positive).data), (
    "the forward differs from F.log: the natural log, elementwise"
)
gradient_check(lambda v: MyLog()(v), positive,
               hint="MyLog's backward is wrong: it applies 1/x to gy, the gradient arriving from "
                    "the output's side, which is not all ones here")
print("self-check passed: MyLog passes the gradient check and matches F.log")
