"""Function hooks: code that runs around every function's forward and backward.

A hook is an object with four methods, all no-ops in :class:`FunctionHook`::

    forward_preprocess(function, in_data)              # before forward
    forward_postprocess(function, in_data, out_data)   # after forward
    backward_preprocess(function, grad_outputs)        # before backward
    backward_postprocess(function, grad_outputs, grad_inputs)  # after backward

``in_data``/``out_data`` are the raw arrays of a forward call;
``grad_outputs``/``grad_inputs`` are the gradients (Variables, or ``None`` where
an output got no gradient or an input needs none) of a backward step.

Two ways to switch a hook on (``dezero_like.core`` calls them, see
``Function.__call__`` and the backward loop):

* for everything computed inside a block::

      with TimerHook() as timer:
          loss = model(x); loss.backward()
      timer.print_report()

* for one function only: ``f = Exp(); f.add_hook(PrintHook()); y = f(x)``.

A function's backward is itself made of functions (``gy * x`` is a ``Mul``), so
a global hook also sees *forward* calls that happen *inside* a backward step.
The shipped hooks keep track of that: :class:`TimerHook` counts their time in
the enclosing backward only, :class:`PrintHook` indents them, and
:class:`DebugHook` names the backward they belong to.

Shipped hooks: :class:`TimerHook` (time per function type and pass),
:class:`PrintHook` (one line per call with shapes and dtypes) and
:class:`DebugHook` (NaN/Inf detection), which :func:`debug_mode` switches on.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from dezero_like import core, cuda

__all__ = [
    "DebugError", "DebugHook", "FunctionHook", "PrintHook", "TimerHook", "debug_mode",
]


class FunctionHook:
    """Base class of function hooks: four no-op callbacks and ``with hook:`` support.

    ``with hook:`` adds the hook to the global list (``dezero_like.core._global_hooks``)
    for the duration of the block; blocks nest (``with a: with b: ...`` runs both,
    ``a`` first). Using the *same* hook object in two nested blocks is refused,
    because every function would then be reported twice.
    """

    name = None  # shown in reprs; defaults to the class name

    def __enter__(self):
        if any(h is self for h in core._global_hooks):
            raise RuntimeError(
                f"{self!r} is already active; a hook can be entered once at a time "
                "(create a second instance if you really want two)"
            )
        core._global_hooks.append(self)  # in place: core reads this very list
        return self

    def __exit__(self, *exc_info):
        hooks = core._global_hooks
        for i in range(len(hooks) - 1, -1, -1):
            if hooks[i] is self:
                del hooks[i]
                break
        return False

    def __repr__(self):
        return f"<{self.name or type(self).__name__}>"

    # ---- the four callbacks (override the ones you need) ----------------------
    def forward_preprocess(self, function, in_data):
        """Called before ``function.forward(*in_data)``."""

    def forward_postprocess(self, function, in_data, out_data):
        """Called after forward; ``out_data`` is the list of output arrays."""

    def backward_preprocess(self, function, grad_outputs):
        """Called before ``function.backward(*grad_outputs)``."""

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        """Called after backward; ``grad_inputs`` has one entry (or None) per input."""


class _NestingHook(FunctionHook):
    """A hook that knows which backward step (if any) is running right now.

    Subclasses call ``super()`` in ``backward_preprocess``/``backward_postprocess``
    and read ``self._backward_stack[-1]`` (the function whose backward is running)
    or ``self._in_backward``.
    """

    def __init__(self):
        self._backward_stack = []

    @property
    def _in_backward(self):
        return bool(self._backward_stack)

    def backward_preprocess(self, function, grad_outputs):
        self._backward_stack.append(function)

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        if self._backward_stack and self._backward_stack[-1] is function:
            self._backward_stack.pop()

    def __exit__(self, *exc_info):
        self._backward_stack.clear()  # an exception may have skipped a postprocess
        return super().__exit__(*exc_info)


def _sync(arrays):
    """Wait for the GPU, so a timer measures the work and not just its launch."""
    for a in arrays:
        if a is not None and cuda.is_cupy_array(a):
            cuda.require_gpu().cuda.get_current_stream().synchronize()
            return


def _datas(values):
    return [v.data if isinstance(v, core.Variable) else v for v in values]


# --------------------------------------------------------------------------- #
# TimerHook
# --------------------------------------------------------------------------- #


class TimerHook(_NestingHook):
    """Measure the time spent in each function type, forward and backward separately.

    Forward calls made *inside* a backward step (a backward is built from
    functions) are part of that backward's time and are not counted again as
    forwards. On a GPU the hook synchronises before reading the clock.

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
        self.call_history = []  # (function type name, "forward"/"backward", seconds)
        self._starts = {}

    def forward_preprocess(self, function, in_data):
        if self._in_backward:
            return
        _sync(in_data)
        self._starts[id(function), "forward"] = time.perf_counter()

    def forward_postprocess(self, function, in_data, out_data):
        start = self._starts.pop((id(function), "forward"), None)
        if start is None:
            return
        _sync(out_data)
        self.call_history.append((type(function).__name__, "forward", time.perf_counter() - start))

    def backward_preprocess(self, function, grad_outputs):
        super().backward_preprocess(function, grad_outputs)
        _sync(_datas(grad_outputs))
        self._starts[id(function), "backward"] = time.perf_counter()

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        super().backward_postprocess(function, grad_outputs, grad_inputs)
        start = self._starts.pop((id(function), "backward"), None)
        if start is None:
            return
        _sync(_datas(grad_inputs))
        self.call_history.append(
            (type(function).__name__, "backward", time.perf_counter() - start)
        )

    def total_time(self):
        """Seconds measured in all functions, forward and backward."""
        return sum(t for _, _, t in self.call_history)

    def summary(self):
        """``{name: {"forward": {"calls": n, "time": s}, "backward": {...}}}`` per function type."""
        table = {}
        for name, phase, seconds in self.call_history:
            row = table.setdefault(
                name, {"forward": {"calls": 0, "time": 0.0}, "backward": {"calls": 0, "time": 0.0}}
            )
            row[phase]["calls"] += 1
            row[phase]["time"] += seconds
        return table

    def report(self):
        """The summary as a text table, slowest function type first (times in ms)."""
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
        """Print :meth:`report` (to ``file``, default standard output)."""
        print(self.report(), file=file if file is not None else sys.stdout)


# --------------------------------------------------------------------------- #
# PrintHook
# --------------------------------------------------------------------------- #


def _describe(a):
    if a is None:
        return "None"
    if isinstance(a, core.Variable):
        a = a.data
        if a is None:
            return "(no data)"
    return f"{tuple(a.shape)} {a.dtype}"


class PrintHook(_NestingHook):
    """Print one line per function call: pass, function, input and output shapes/dtypes.

    Forward calls made inside a backward step are indented under it.
    ``backward=False`` prints forward calls only.
    """

    def __init__(self, file=None, backward=True):
        super().__init__()
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


# --------------------------------------------------------------------------- #
# Debug mode: NaN/Inf detection
# --------------------------------------------------------------------------- #


class DebugError(RuntimeError):
    """A function produced NaN or Inf while :func:`debug_mode` was on."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_location():
    """``file:line`` of the innermost frame outside the dezero_like package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{os.path.basename(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return "unknown location"


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
                           f"called at {getattr(outer, '_debug_location', 'an unknown location')})")
            inputs = "; ".join(_summarise(f"input {i}", x) for i, x in enumerate(in_data))
            hint = self._hint(in_data)
            raise DebugError(
                f"forward of {type(function).__name__}{context} produced {bad[1]} in output {k} "
                f"at index {bad[0]}, called at {where}; inputs had {inputs}{hint}"
            )

    def backward_postprocess(self, function, grad_outputs, grad_inputs):
        super().backward_postprocess(function, grad_outputs, grad_inputs)
        for k, gx in enumerate(_datas(grad_inputs)):
            bad = _first_bad(gx)
            if bad is None:
                continue
            where = getattr(function, "_debug_location", "an unknown location (forward ran "
                            "outside debug_mode)")
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

    @staticmethod
    def _hint(arrays):
        if any(_first_bad(a) is not None for a in arrays):
            return (". What it received already held NaN/Inf: the problem started earlier "
                    "(in the data, or in a function run outside debug_mode)")
        return ""


def debug_mode():
    """``with dezero_like.debug_mode():`` checks every result for NaN/Inf (see :class:`DebugHook`).

    Costs one ``isfinite`` pass per array; use it to find a bug, not to train.
    """
    return DebugHook()
