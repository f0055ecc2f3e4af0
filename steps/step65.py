# %% [markdown]
# # Step 65: Function hooks
#
# How long does the backward of `Linear` take? Which function is called with
# a float64 array in a float32 model? Where does the first NaN appear? To
# answer such questions without editing every function, frameworks offer
# **hooks**: objects whose methods the engine calls around each function.
# Chainer calls them *function hooks* (`chainer.FunctionHook`, with ready-made
# timer and print hooks); PyTorch has hooks on modules and on tensors
# (`register_forward_hook`, `Tensor.register_hook`), and its profiler records
# every operator through the same kind of callback (`torch.profiler`).
#
# `dezero_like.hooks.FunctionHook` has four methods, which do nothing unless a
# subclass overrides them:
#
# | method | called | receives |
# | --- | --- | --- |
# | `forward_preprocess(f, in_data)` | before `f.forward` | input arrays |
# | `forward_postprocess(f, in_data, out_data)` | after `f.forward` | inputs, outputs |
# | `backward_preprocess(f, grad_outputs)` | before `f.backward` | output gradients |
# | `backward_postprocess(f, grad_outputs, grad_inputs)` | after it | and input gradients |
#
# The calls live in two places of `core.py`: `Function.__call__` (forward) and
# the backward loop. When no hook is active the cost is one check of an empty
# list per function.

# %% [markdown]
# ### The package code of this step
#
# In this step `core` gains `Function.add_hook`, `Function.delete_hook` and
# `_backward_stack`, and changes `_backward_step` (it keeps that stack); `hooks` gains
# `_NestingHook`, `TimerHook`, `PrintHook`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Function.add_hook` attaches a hook to one function object only. It builds a new list instead of
# appending, so a list shared with another function is never changed; `__call__` and the backward
# step run these hooks after the global ones. Attaching the same hook twice is refused, and a hook
# that is both global (`with hook:`) and attached runs once (step 64's `_hooks_for`): otherwise
# every call would be reported twice. `delete_hook` detaches a hook again.

# %%
#| export dezero_like/core.py Function
# ---- hooks on this one function -------------------------------------------
def add_hook(self, hook):
    """Run ``hook`` around this function's forward and backward only."""
    if any(h is hook for h in self._hooks or ()):
        raise ValueError(f"{hook!r} is already attached to this {type(self).__name__}")
    self._hooks = (self._hooks or []) + [hook]
    return self


def delete_hook(self, hook):
    """Stop running ``hook`` around this function: the reverse of :meth:`add_hook`."""
    if not any(h is hook for h in self._hooks or ()):
        raise ValueError(f"{hook!r} is not attached to this {type(self).__name__}")
    self._hooks = [h for h in self._hooks if h is not hook] or None
    return self


# %% [markdown]
# Hooks need to know whether a backward step is running: a backward is built from functions, so
# their forwards run inside it, and a timer must not count them twice. The backward step keeps a
# stack, `_backward_stack`, of the functions whose backward has started and not finished (the
# innermost last). It pops in a `finally`, so a backward that raises cannot leave its function on
# the stack, where it would make every later forward look as if it ran inside that backward.

# %%
#| export dezero_like/core.py
from dezero_like.core import Variable, _check_grads, _grads_tuple, _hooks_for, as_array

_backward_stack: list = []  # functions whose backward is running now, the innermost last


def _backward_step(f, gys):
    """One step of the chain rule: the gradients of ``f``'s inputs, as a tuple."""
    hooks = _hooks_for(f)
    for hook in hooks:
        hook.backward_preprocess(f, gys)
    _backward_stack.append(f)
    try:
        if f._duplicates:  # the same variable in several slots, as in x * x
            gxs = f.backward_accumulate(*gys)
        else:
            gxs = _grads_tuple(f.backward(*gys))
    finally:  # also when backward raises
        _backward_stack.pop()
    for hook in hooks:
        hook.backward_postprocess(f, gys, gxs)
    _check_grads(f, gxs)
    return tuple(gx if gx is None or isinstance(gx, Variable)
                 else Variable(as_array(gx), requires_grad=False) for gx in gxs)


# %% [markdown]
# `_NestingHook` is a base for hooks that need to know whether a backward step is running: it
# reads the core's stack. The stack is pushed after the hooks' `backward_preprocess` and popped
# before their `backward_postprocess`, so those two see the depth of the enclosing backward.

# %%
#| export dezero_like/hooks.py
from dezero_like import core
from dezero_like.hooks import FunctionHook


class _NestingHook(FunctionHook):
    """A hook that knows which backward step (if any) is running right now.

    Subclasses read ``self._backward_stack[-1]`` (the function whose backward is running)
    or ``self._in_backward``; both come from ``core._backward_stack``.
    """

    @property
    def _backward_stack(self):
        return core._backward_stack

    @property
    def _in_backward(self):
        return bool(core._backward_stack)


# %% [markdown]
# Two helpers for the timer. On a GPU, a call returns once the work is queued, not done, so
# `_sync` waits for the device before the clock is read; on the CPU it does nothing. `_datas`
# takes the arrays out of gradient Variables.

# %%
#| export dezero_like/hooks.py
from dezero_like import core, cuda


def _sync(arrays):
    """Wait for the GPU, so a timer measures the work and not just its launch."""
    for a in arrays:
        if a is not None and cuda.is_cupy_array(a):
            cuda.require_gpu().cuda.get_current_stream().synchronize()
            return


def _datas(values):
    return [v.data if isinstance(v, core.Variable) else v for v in values]


# %% [markdown]
# Both hooks that print take a `file` to print to, as Python's `print` does: an *open* file, not a
# file name. `_check_file` refuses a name (or anything else that cannot be written to) when it is
# given, instead of at the first print, where the error would be far from its cause.

# %%
#| export dezero_like/hooks.py
def _check_file(file, where):
    """Refuse a ``file`` argument that ``print`` could not write to (e.g. a file name)."""
    if file is not None and not callable(getattr(file, "write", None)):
        raise TypeError(
            f"{where}: file must be an open file, got {type(file).__name__} {file!r}; pass an "
            "open file (what open(path, 'w') returns), or None for the screen")


# %% [markdown]
# `TimerHook` stores a start time in `*_preprocess` and records the elapsed time in
# `*_postprocess`, keyed by the function object and the phase. A forward that runs inside a
# backward gets no start time (`_in_backward`), so it is counted only as part of that backward.
# `summary` and `report` add the recorded times up per function type.
#
# A backward can also run a whole backward of its own (gradient checkpointing recomputes a
# piece of the forward and backpropagates through it; step 68's self-check runs one). Both
# are timed, and the outer one's span contains the inner one's, so adding the two spans would
# count those seconds twice. The hook keeps, as PyTorch's profiler does, two times per call:
# its **total** (start to end, everything inside included) and its **self** time (the total
# minus the timed calls that ran inside it). `summary()[name][phase]["time"]`, the report and
# `total_time()` use the self times, so each measured second is counted once and the shares add
# up to 100%; `summary()[name][phase]["total"]` keeps the inclusive times.

# %%
#| export dezero_like/hooks.py
import sys
import time


class TimerHook(_NestingHook):
    """Measure the time spent in each function type, forward and backward separately.

    Forward calls made *inside* a backward step (a backward is built from
    functions) are part of that backward's time and are not counted again as
    forwards. A backward run inside another backward (gradient checkpointing) is
    timed on its own, and taken out of the outer one's *self* time, so
    :meth:`total_time` counts each second once. On a GPU the hook synchronises
    before reading the clock.

    >>> import numpy as np, dezero_like as dz, dezero_like.functions as F
    >>> x = dz.Variable(np.ones(3))
    >>> with TimerHook() as timer:
    ...     F.sum(F.exp(x)).backward()
    >>> sorted(timer.summary())
    ['Exp', 'Sum']
    >>> timer.summary()["Exp"]["forward"]["calls"], timer.summary()["Exp"]["backward"]["calls"]
    (1, 1)
    """

    def __init__(self):
        super().__init__()
        self.reset()

    def reset(self):
        """Forget everything measured so far."""
        # (function type name, "forward"/"backward", self seconds, total seconds)
        self.call_history = []
        self._open = []  # calls being timed, innermost last: [key, start, seconds nested in it]

    def _start(self, function, phase):
        self._open.append([(id(function), phase), time.perf_counter(), 0.0])

    def _stop(self, function, phase, arrays):
        """End the timed call of ``function`` in ``phase`` once the device has made ``arrays``,
        and record its self and total seconds; a call that was not timed is passed over."""
        key = (id(function), phase)
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == key:
                _sync(arrays)
                _, start, nested = self._open.pop(i)
                total = time.perf_counter() - start
                if i > 0:  # it ran inside another timed call: that one's self time excludes it
                    self._open[i - 1][2] += total
                self.call_history.append((type(function).__name__, phase, total - nested, total))
                return

    def forward_preprocess(self, function, in_data):
        if self._in_backward:
            return
        _sync(in_data)
        self._start(function, "forward")

    def forward_postprocess(self, function, in_data, out_data):
        self._stop(function, "forward", out_data)

    def backward_preprocess(self, function, grad_outputs):
        super().backward_preprocess(function, grad_outputs)
        _sync(_datas(grad_outputs))
        self._start(function, "backward")

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        super().backward_postprocess(function, grad_outputs, grad_inputs)
        self._stop(function, "backward", _datas(grad_inputs))

    def total_time(self):
        """Seconds measured in all functions, forward and backward, each second once.

        The sum of the calls' self times: a backward run inside another backward is not
        counted again in the outer one.
        """
        return sum(t for _, _, t, _ in self.call_history)

    def summary(self):
        """``{name: {"forward": {"calls": n, "time": s, "total": s}, "backward": {...}}}``.

        Per function type and pass: ``time`` is the self time (without the timed calls that ran
        inside), ``total`` the time from start to end (PyTorch's profiler: self and total).
        """
        table = {}
        for name, phase, seconds, total in self.call_history:
            row = table.setdefault(name, {p: {"calls": 0, "time": 0.0, "total": 0.0}
                                          for p in ("forward", "backward")})
            row[phase]["calls"] += 1
            row[phase]["time"] += seconds
            row[phase]["total"] += total
        return table

    def report(self):
        """The summary as a text table, slowest function type first (self times in ms)."""
        table = self.summary()
        total = self.total_time() or 1.0
        head = (f"{'function':<22}{'fwd calls':>10}{'fwd ms':>10}{'bwd calls':>10}"
                f"{'bwd ms':>10}{'total ms':>10}{'share':>8}")
        lines = [head, "-" * len(head)]
        rows = sorted(table.items(), key=lambda kv: -(kv[1]["forward"]["time"]
                                                       + kv[1]["backward"]["time"]))
        for name, row in rows:
            f, b = row["forward"], row["backward"]
            t = f["time"] + b["time"]
            lines.append(f"{name:<22}{f['calls']:>10}{f['time'] * 1e3:>10.3f}{b['calls']:>10}"
                         f"{b['time'] * 1e3:>10.3f}{t * 1e3:>10.3f}{t / total:>8.1%}")
        lines.append("-" * len(head))
        fwd = sum(r["forward"]["time"] for r in table.values())
        bwd = sum(r["backward"]["time"] for r in table.values())
        lines.append(f"{'all':<22}{'':>10}{fwd * 1e3:>10.3f}{'':>10}{bwd * 1e3:>10.3f}"
                     f"{(fwd + bwd) * 1e3:>10.3f}{'':>8}")
        return "\n".join(lines)

    def print_report(self, file=None):
        """Print :meth:`report` (to ``file``, an open text file; default standard output)."""
        _check_file(file, "TimerHook.print_report")
        print(self.report(), file=file if file is not None else sys.stdout)


# %% [markdown]
# `_describe` writes an array, a Variable or `None` as its shape and dtype, which is all a line of
# `PrintHook` shows of a value.

# %%
#| export dezero_like/hooks.py
from dezero_like import core


def _describe(a):
    if a is None:
        return "None"
    if isinstance(a, core.Variable):
        a = a.data
        if a is None:
            return "(no data)"
    return f"{tuple(a.shape)} {a.dtype}"


# %% [markdown]
# `PrintHook` prints one line per forward and two per backward (the gradients in, then out). The
# indent is the depth of the backward stack, so forwards run by a backward appear under it.
# `super()` is called after printing in `backward_preprocess` and before it in
# `backward_postprocess`, so the backward's own lines sit at its outer level.

# %%
#| export dezero_like/hooks.py
import sys


class PrintHook(_NestingHook):
    """Print one line per function call: pass, function, input and output shapes/dtypes.

    Forward calls made inside a backward step are indented under it.
    ``backward=False`` prints forward calls only.
    """

    def __init__(self, file=None, backward=True):
        super().__init__()
        _check_file(file, "PrintHook")
        self.file = file
        self.backward = backward

    def _print(self, text):
        indent = "    " * len(self._backward_stack)
        print(indent + text, file=self.file if self.file is not None else sys.stdout)

    def forward_postprocess(self, function, in_data, out_data):
        if self._in_backward and not self.backward:
            return
        ins = ", ".join(_describe(a) for a in in_data)
        outs = ", ".join(_describe(a) for a in out_data)
        self._print(f"forward  {type(function).__name__}: in {ins} -> out {outs}")

    def backward_preprocess(self, function, grad_outputs):
        if self.backward:
            gys = ", ".join(_describe(g) for g in grad_outputs)
            self._print(f"backward {type(function).__name__}: grad out {gys}")
        super().backward_preprocess(function, grad_outputs)

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        super().backward_postprocess(function, grad_outputs, grad_inputs)
        if self.backward:
            gxs = ", ".join(_describe(g) for g in grad_inputs)
            self._print(f"         {type(function).__name__}: -> grad in {gxs}")


# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.hooks import FunctionHook, PrintHook, TimerHook
from dezero_like.models import MLP

# %% [markdown]
# ## A hook that records
#
# Our first hook writes down every function it sees. We run it on a graph
# whose shape we know: `exp` feeds both `square` and `sin`, whose results are
# added and summed.

# %%
class CallRecorder(FunctionHook):
    """Remembers (pass, function) for every forward and backward it sees."""

    def __init__(self):
        self.calls = []

    def forward_preprocess(self, function, in_data):
        self.calls.append(("forward", function))

    def backward_preprocess(self, function, grad_outputs):
        self.calls.append(("backward", function))


def known_graph(x):
    a = F.exp(x)
    b = F.square(a)
    c = F.sin(a)
    return F.sum(b + c)


x = dz.Variable(np.array([0.1, 0.2]))
forward_rec = CallRecorder()
with forward_rec:
    y = known_graph(x)
for phase, f in forward_rec.calls:
    print(f"{phase:8} {type(f).__name__:7} generation {f.generation}")

# %% [markdown]
# The graph, drawn: `Exp` (generation 0) feeds `Square` and `Sin` (generation 1,
# side by side), whose results meet in `Add` (generation 2) before `Sum` (3). A
# function's generation is its depth counted from the input.

# %%
from dezero_like.graph import plot_dot_graph  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402

written(plot_dot_graph(y, verbose=False, to_file=output_dir(65) / "known_graph.svg"))

# %% [markdown]
# Forward hooks fire in the order the program calls the functions. Backward
# hooks fire in the order backprop visits them: newest generation first, and
# each function exactly once, after all gradients of its outputs have arrived
# (step 17). `Square` and `Sin` have the same generation; they run in the order
# their gradients arrived.

# %%
backward_rec = CallRecorder()
with backward_rec:
    y.backward()
for phase, f in backward_rec.calls:
    if phase == "backward":
        print(f"{phase:8} {type(f).__name__:7} generation {f.generation}")

# %% [markdown]
# Why did we print only the backward entries? Because a backward is itself
# computed with functions (`Sin`'s backward is `gy * cos(x)`), so forward hooks
# also fire *during* backward. `PrintHook`, shipped with the package, shows
# them indented under the backward they belong to:

# %%
x = dz.Variable(np.array([[1.0, 2.0]], dtype=np.float32))
with PrintHook():
    y = F.sum(F.sin(x))
    y.backward()

# %% [markdown]
# When a variable feeds two functions (like `a` in `known_graph`), the core adds
# the two gradients it receives directly as arrays, so no hook sees that sum; only
# with `create_graph=True` is it a recorded `Add`, a forward call between two
# backward steps.

# %% [markdown]
# ## Switching hooks on
#
# * `with hook:` adds the hook to a global list for the duration of the block
#   and removes it afterwards, even after an exception. Blocks nest; the outer
#   hook runs first.
# * `f.add_hook(hook)` attaches a hook to one function object only.

# %%
only_exp = CallRecorder()
f = F.Exp().add_hook(only_exp)
x = dz.Variable(np.array([1.0]))
y = F.sin(f(x))
y.backward()
print("the per-function hook saw:", [(p, type(g).__name__) for p, g in only_exp.calls])

# %% [markdown]
# ## Timing a training step
#
# `TimerHook` adds up the time of each function type, forward and backward
# separately. Forward calls made inside a backward count as that backward's
# time, so nothing is counted twice. Here it profiles one training step of a
# small MLP:

# %%
rng = np.random.default_rng(0)
model = MLP((100, 100, 1))
xb = rng.standard_normal((256, 64)).astype(np.float32)
tb = rng.standard_normal((256, 1)).astype(np.float32)
model(xb)  # first call creates the weights; not part of the measurement

with TimerHook() as timer:
    loss = F.mean_squared_error(model(xb), tb)
    model.cleargrads()
    loss.backward()
timer.print_report()
summary = timer.summary()
print("Linear forward calls:", summary["Linear"]["forward"]["calls"],
      " backward calls:", summary["Linear"]["backward"]["calls"])

# %% [markdown]
# ## Exercise
# **Implement then test: a hook.** Write `DtypeCheckHook`, a hook that raises
# `TypeError` in `forward_preprocess` when a function receives a float64 array
# (a common bug in a float32 model: a NumPy constant that silently promoted).
# The message should name the function (`type(function).__name__`). The
# self-check runs a float32 computation (which must pass) and feeds it a
# float64 input.

# %%
#| exercise
class DtypeCheckHook(FunctionHook):
    def forward_preprocess(self, function, in_data):
        raise NotImplementedError(
            "Exercise (step 65): raise TypeError naming type(function).__name__ when an "
            "array in in_data has dtype float64; do nothing otherwise"
        )

# %%
#| solution
class DtypeCheckHook(FunctionHook):
    def forward_preprocess(self, function, in_data):
        for i, a in enumerate(in_data):
            if a.dtype == np.float64:
                raise TypeError(f"{type(function).__name__} got float64 in input {i}")

# %%
#| check
with DtypeCheckHook():
    try:
        ok = F.exp(dz.Variable(np.ones(2, dtype=np.float32)))  # fine: must not raise
    except AttributeError as e:
        raise AssertionError(
            f"the hook failed on a float32 input ({e}): in_data holds the input arrays "
            "themselves (NumPy arrays, not Variables), so each one has its own .dtype"
        ) from None
    try:
        F.exp(dz.Variable(np.ones(2)))
    except TypeError as e:
        assert "Exp" in str(e), f"the message should name the function (Exp), got {e!r}"
    except Exception as e:  # noqa: BLE001 - any other error is the wrong kind, named below
        raise AssertionError(
            f"the hook raised {type(e).__name__} ({e}) for a float64 input: raise TypeError, "
            "the error Python raises for a value of the wrong type"
        ) from None
    else:
        raise AssertionError("the float64 input was not caught: raise TypeError for it")
    try:  # only float64 is refused: other dtypes and integer labels go through
        F.exp(dz.Variable(np.ones(2, dtype=np.float16)))
        F.softmax_cross_entropy(dz.Variable(np.ones((2, 3), np.float32)), np.array([0, 2]))
    except TypeError as e:
        raise AssertionError(
            f"the hook refused an input that is not float64 ({e}): raise only for float64"
        ) from None
    try:  # float64 in the second input
        dz.Variable(np.ones(2, dtype=np.float32)) + dz.Variable(np.ones(2))
    except TypeError as e:
        assert "Add" in str(e), f"the message should name the function (Add), got {e!r}"
    else:
        raise AssertionError(
            "a float64 second input was not caught: look at every array of in_data"
        )
after = F.exp(dz.Variable(np.ones(2)))  # outside the with block the hook is gone
print("self-check passed: DtypeCheckHook stops float64 inputs and names the function")
