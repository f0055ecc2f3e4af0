# %% [markdown]
# # Step 49: Softmax and softmax cross entropy, without overflow
#
# For classification a network outputs one score (a *logit*) per class. Softmax
# turns a row of logits $x$ into probabilities:
#
# $$p_k = \frac{e^{x_k}}{\sum_j e^{x_j}} .$$
#
# The loss is the **cross entropy** with the correct class $t$: $-\log p_t$,
# averaged over the batch. It is small when the network gives the right class a
# high probability, and large when it is confidently wrong.
#
# Written literally, both formulas break for large logits: $e^{1000}$ is `inf`
# in floating point, and `inf / inf` is `nan`. Two observations fix this:
#
# 1. Softmax does not change when the same number is subtracted from every
#    logit (it cancels between numerator and denominator). Subtracting the row
#    maximum $m$ makes every exponent $\le 0$, so nothing overflows.
# 2. The log of the softmax needs no division at all:
#    $\log p_k = x_k - \operatorname{logsumexp}(x)$ with
#    $\operatorname{logsumexp}(x) = m + \log\sum_j e^{x_j - m}$.

# %% [markdown]
# ### The package code of this step
#
# In this step `functions` gains `Clip`, `clip`, `Softmax`, `softmax`, `LogSoftmax`,
# `log_softmax`, `SoftmaxCrossEntropy`, `softmax_cross_entropy`, `SigmoidCrossEntropy`,
# `sigmoid_cross_entropy`, `BinaryCrossEntropy`, `binary_cross_entropy`, `softmax_simple`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# `Clip` limits `x` to `[x_min, x_max]`; the derivative is 1 inside the interval and 0 outside.
# The bounds may be numbers or arrays that broadcast to `x`'s shape (one bound per element);
# bounds whose shape would broadcast the result to a larger shape than `x`'s are refused, and so
# are crossed bounds, `x_min > x_max`. A bound that is one number is a setting, whatever its
# type: a NumPy number (`np.float64(1e-7)`, a maximum read off the data) or a 0-d array is read
# as the Python number it holds, so it never changes `x`'s dtype, as `torch.clamp` keeps float32
# for any number. Bounds with axes are data, and combine with `x` by NumPy's rules.
# Backward needs only the mask of where `x` lies inside the interval, not `x`, so forward keeps
# no input and computes the mask, only when a gradient will be needed (`needs_input_grad`). On
# a GPU, NumPy array bounds are moved to the device with `x`; bounds already on the GPU are not
# checked for `x_min <= x_max`, since reading the answer back would make the host wait for the
# device.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function, Variable


class Clip(Function):
    """y = min(max(x, x_min), x_max); dy/dx = 1 inside [x_min, x_max], else 0.

    The bounds are constants (numbers or arrays that broadcast to ``x``'s shape); they get
    no gradient, and ``y`` has ``x``'s shape.
    """

    def __init__(self, x_min, x_max):
        if x_min is None and x_max is None:
            raise ValueError("clip needs x_min or x_max (None leaves that side open)")
        for name, bound in (("x_min", x_min), ("x_max", x_max)):
            if isinstance(bound, Variable):
                raise TypeError(
                    f"clip's {name} is a Variable; the bounds are constants (numbers or "
                    f"arrays) that get no gradient: pass {name}.data")
        # an open side is an infinite bound, as in np.clip and torch.clamp
        x_min = -float("inf") if x_min is None else _as_setting(x_min)
        x_max = float("inf") if x_max is None else _as_setting(x_max)
        # a bool, or an array of them for array bounds; bounds on a GPU are not compared (reading
        # the answer would wait for the device; one NumPy bound against one CuPy bound fails)
        crossed = None if cuda.is_cupy_array(x_min) or cuda.is_cupy_array(x_max) else x_min > x_max
        if crossed is True or (isinstance(crossed, (np.ndarray, np.bool_)) and crossed.any()):
            raise ValueError(f"clip needs x_min <= x_max, got x_min={x_min}, x_max={x_max}")
        self.x_min = x_min
        self.x_max = x_max

    def forward(self, x):
        self.retain_inputs(())
        xp = cuda.get_array_module(x)
        lo, hi = self.x_min, self.x_max
        if xp is not np:  # NumPy array bounds go to the GPU with x (numbers stay numbers)
            lo, hi = (xp.asarray(b) if isinstance(b, np.ndarray) else b for b in (lo, hi))
        shape = np.broadcast_shapes(x.shape, np.shape(lo), np.shape(hi))
        if shape != x.shape:  # y would be larger than x, and x's gradient the wrong shape
            raise ValueError(
                f"clip: bounds of shapes {np.shape(lo)} and {np.shape(hi)} would broadcast x of "
                f"shape {x.shape} to {shape}; clip keeps x's shape. Broadcast x first "
                f"(F.broadcast_to(x, {shape})) if you mean the larger result")
        if self.needs_input_grad:
            self.mask = (x >= lo) & (x <= hi)
        return xp.clip(x, lo, hi)

    def backward(self, gy):
        return gy * self.mask


def _as_setting(bound):
    """A NumPy number or 0-d NumPy array as the Python number it holds: np.float64(1) beside
    float32 data would make it float64 (NumPy 2's rules), a Python 1.0 keeps float32."""
    if isinstance(bound, (np.generic, np.ndarray)) and bound.ndim == 0:
        return bound.item()
    return bound


# %%
#| export dezero_like/functions.py
from dezero_like.core import _REQUIRED, _refuse_keywords

_CLAMP_KEYWORDS = {  # PyTorch's torch.clamp(x, min=0.0, max=1.0)
    "min": lambda v: f"write x_min={v!r} (both bounds are required; None leaves a side open)",
    "max": lambda v: f"write x_max={v!r} (both bounds are required; None leaves a side open)",
}


def clip(x, x_min=_REQUIRED, x_max=_REQUIRED, **others):
    """Clip x to [x_min, x_max] (None: that side open); the gradient is zero outside."""
    if others or x_min is _REQUIRED or x_max is _REQUIRED:
        _refuse_keywords("F.clip", others, _CLAMP_KEYWORDS, x_min=x_min, x_max=x_max)
    return Clip(x_min, x_max)(x)


# %% [markdown]
# `_shifted_logsumexp` computes $\log\sum e^{x}$ along an axis. It subtracts the maximum $m$ first,
# $\log\sum e^{x} = m + \log\sum e^{x-m}$: every `exp` is then at most 1 and cannot overflow, and
# the largest term is exactly 1, so the sum is never 0 and the log is finite. It returns the
# shifted logits $z = x - m$ and $\log\sum e^{z}$ **without adding $m$ back**, because every
# caller subtracts: $\log \mathrm{softmax}(x) = z - \log\sum e^{z}$. Adding $m$ and subtracting
# it again from $x$ would cancel two large numbers: with logits near $10^4$ in float32 (where
# neighbouring floats are 0.001 apart) that loses three or four digits of the result.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.functions import _float_dtype


def _minus_max(xp, x, axis):
    """``x - max(x)`` over ``axis`` (kept), as a new floating array: integer or bool logits in
    float64, a 0-d input as a 0-d array (NumPy's arithmetic makes it a scalar, which ``out=``
    refuses), and an empty class axis left empty (``max`` would refuse it)."""
    if x.dtype.kind != "f" or not x.ndim:
        x = xp.asarray(x, dtype=_float_dtype(x.dtype, complex_ok=False))
    if not x.size:
        return x.copy()
    z = x - x.max(axis=axis, keepdims=True)
    return z if z.ndim else xp.asarray(z)


def _shifted_logsumexp(x, axis):
    """``(z, log(sum(exp(z))))`` with ``z = x - max(x)`` over ``axis`` (kept).

    ``log_softmax(x) = z - log(sum(exp(z)))``: no overflow (every exp is at most
    1) and no cancellation (the max is never added back to be subtracted again).
    """
    xp = cuda.get_array_module(x)
    z = _minus_max(xp, x, axis)
    if not z.size:  # a class axis of length 0: the log of an empty sum is -inf
        return z, xp.full(z.sum(axis=axis, keepdims=True).shape, -np.inf, dtype=z.dtype)
    return z, xp.log(xp.exp(z).sum(axis=axis, keepdims=True))


# %% [markdown]
# `Softmax` subtracts the row maximum for the same reason; the result is unchanged, since the
# factor $e^{-m}$ cancels between numerator and denominator. The gradient is
# $y \odot (g_y - \sum y \odot g_y)$, which reads only the output, which is why forward calls
# `retain_outputs((0,))` and keeps no input. float16 logits are computed in float32 and the result
# rounded once, as PyTorch does: a sum in float16 rounds at every term, and for rows of 100
# classes the probabilities came out up to 5 units in the last place off (PyTorch: half a unit).

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import astype


class Softmax(Function):
    """y_i = exp(x_i) / sum_j exp(x_j) over ``axis``; dL/dx = y * (gy - sum(y * gy)).

    The max is subtracted before ``exp`` so large logits do not overflow.
    Backward reads only the output. float16 is computed in float32 and rounded, as PyTorch
    does: summed in float16, each row's total would round at every term.
    """

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        if x.dtype == np.float16:  # a float16 sum rounds at every term: in float32, as PyTorch
            return self.forward(x.astype(np.float32)).astype(np.float16)
        xp = cuda.get_array_module(x)
        y = _minus_max(xp, x, self.axis)
        xp.exp(y, out=y)
        y /= y.sum(axis=self.axis, keepdims=True)
        return y

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        half = y.dtype == gy.dtype == np.float16
        if half:  # the products and their sum in float32 too, rounded once at the end
            y, gy = astype(y, np.float32), astype(gy, np.float32)
        gx = y * gy
        gx = gx - y * sum(gx, axis=self.axis, keepdims=True)
        return astype(gx, np.float16) if half else gx


# %% [markdown]
# `softmax` normalises along `axis`, by default 1: the class axis of a batch of logits `(N, C)`,
# as in the book. For outputs with more axes, such as scores `(N, T, C)` for every time step of a
# sequence, the classes are usually the last axis, and axis 1 would silently normalise over time.
# So when the input has more than two axes and no `axis=` was written, `_class_axis` warns, naming
# the axis it used. (PyTorch's `softmax` warns about an implicit `dim` too, for every input and
# without naming it: "Implicit dimension choice ... include dim=X".) The default is `_AXIS_1`, a
# `1` that `is` tells apart from an `axis=1` the caller wrote (which does not warn); it prints as
# `1`.

# %%
#| export dezero_like/functions.py
import warnings

from dezero_like.core import _DIM_KEYWORD, _refuse_keywords, as_variable


class _ImplicitAxis(int):
    """The default ``axis=1``: a 1 that ``is`` tells apart from an ``axis=1`` the caller wrote."""

    def __repr__(self):
        return "1"

    def __reduce__(self):  # pickled and copied as the one default, so it stays recognisable
        return "_AXIS_1"


_AXIS_1 = _ImplicitAxis(1)


def _class_axis(name, x, axis):
    """``axis`` if ``x`` has it; else an error (the default axis 1 needs a batch (N, C)).

    The default (``_AXIS_1``, not written by the caller) on an input of more than two axes
    warns: scores (N, T, C) want the last axis, and axis 1 would normalise over T.
    """
    if axis is _AXIS_1:  # the default: axis 1, the class axis of a batch (N, C)
        if x.ndim > 2:
            warnings.warn(
                f"{name} of an input of shape {tuple(x.shape)} without axis= normalises over "
                "axis 1 (the default, the class axis of a batch (N, C)); for scores such as "
                "(N, T, C) the classes are the last axis: pass axis=-1, or axis=1 to keep "
                "this", stacklevel=3)
        axis = 1  # a plain int from here on; checked below as any other axis
    if axis is None:  # every element
        return None
    if x.ndim == 0 and not isinstance(axis, tuple) and axis in (0, -1):  # as PyTorch: a 0-d x
        return None  # is one class along axis 0 (or -1), its every element (softmax 1)
    if isinstance(axis, list):  # NumPy takes a tuple
        axis = tuple(axis)
    if not all(-x.ndim <= a < x.ndim for a in (axis if isinstance(axis, tuple) else (axis,))):
        raise ValueError(
            f"{name} along axis {axis} needs an input with that axis, got shape "
            f"{tuple(x.shape)}; the default axis=1 is the class axis of a batch (N, C): pass "
            "axis=0 (or -1) for a single vector, or add a batch axis with x.reshape(1, -1)")
    return axis



def softmax(x, axis=_AXIS_1, **others):
    """Probabilities exp(x) / sum(exp(x)) along ``axis``, computed without overflow.

    ``axis`` defaults to 1, the classes of a batch (N, C); an input of more than two axes
    with no ``axis=`` written gets a warning (pass ``axis=-1`` for scores (N, T, C)).
    """
    if others:
        _refuse_keywords("F.softmax", others, _DIM_KEYWORD)
    x = as_variable(x)
    return Softmax(_class_axis("softmax", x, axis))(x)


# %% [markdown]
# `LogSoftmax` is $x - \operatorname{logsumexp}(x)$, computed as $z - \log\sum e^{z}$, finite
# where `log(softmax(x))` would give `log(0)`. Its gradient, $g_y - e^{y} \sum g_y$, again reads
# only the output $y$: $e^y$ is the softmax.

# %%
#| export dezero_like/functions.py
from dezero_like.core import Function
from dezero_like.functions import exp


class LogSoftmax(Function):
    """y = x - logsumexp(x) over ``axis``; dL/dx = gy - exp(y) * sum(gy).

    float16 is computed in float32 and rounded once, both ways, as in softmax and PyTorch.
    """

    def __init__(self, axis=1):
        self.axis = axis

    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        if x.dtype == np.float16:  # in float16, 100 logits came out 2 spacings off, not 1/2
            return self.forward(x.astype(np.float32)).astype(np.float16)
        z, log_s = _shifted_logsumexp(x, self.axis)
        z -= log_s
        return z

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        half = y.dtype == gy.dtype == np.float16
        if half:  # exp(y) and the sum in float32 too, rounded once at the end
            y, gy = astype(y, np.float32), astype(gy, np.float32)
        gx = gy - exp(y) * sum(gy, axis=self.axis, keepdims=True)
        return astype(gx, np.float16) if half else gx


# %%
#| export dezero_like/functions.py
def log_softmax(x, axis=_AXIS_1, **others):
    """log(softmax(x)) along ``axis`` via log-sum-exp: finite for any finite logits.

    ``axis`` defaults to 1, with a warning for inputs of more than two axes, as in softmax.
    """
    if others:  # PyTorch's F.log_softmax(x, dim=-1), say
        _refuse_keywords("F.log_softmax", others, _DIM_KEYWORD)
    x = as_variable(x)
    return LogSoftmax(_class_axis("log_softmax", x, axis))(x)


# %% [markdown]
# `SoftmaxCrossEntropy` computes the mean of $-\log \operatorname{softmax}(x_n)[t_n]$ in one
# function, as $\log\sum e^{z_n} - z_n[t_n]$ with the shifted logits $z_n = x_n - \max x_n$, without
# forming the probabilities.
# Forward checks the shapes and, on the CPU, that every label is a class index. The gradient is
# $(\operatorname{softmax}(x) - \operatorname{onehot}(t)) / N$; the labels get `None`.
#
# The checks are a function of their own, `_check_labels`, because step 66's composed loss
# `softmax_cross_entropy_simple` needs the same ones: without them, labels of shape `(N, 1)`
# would broadcast into an $N \times N$ pick of probabilities (a wrong loss, no error), and a
# label of $-1$ would pick the last class. The commonest wrong labels get a hint that names them.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda


def _check_labels(name, x, t):
    """Refuse logits ``x`` that are not (N, C) and labels ``t`` (arrays) that are not N integer
    class indices in 0..C-1; the range is checked on the CPU only (on a GPU, reading the labels'
    minimum and maximum back would wait for the device)."""
    if x.ndim != 2:
        hint = ""
        if x.ndim > 2:  # PyTorch's cross_entropy takes (N, C, d1, ...), labels (N, d1, ...)
            last = tuple(range(2, x.ndim)) + (1,)
            hint = (f"; for scores per position (N, C, d...), as PyTorch's cross_entropy takes "
                    f"them, move the classes last and make each position a row: "
                    f"F.reshape(F.transpose(x, (0, {', '.join(map(str, last))})), (-1, "
                    f"{x.shape[1]})), with the labels t.reshape(-1)")
        elif x.ndim == 1:  # one example's scores (C,), which PyTorch's cross_entropy takes too
            hint = ("; for one example's scores (C,) make a batch of one: x[None] (shape (1, "
                    f"{x.shape[0]})) with the label as np.array([t])")
        raise ValueError(f"{name} expects logits of shape (N, C), got {x.shape}{hint}")
    N, C = x.shape
    if t.dtype.kind not in "iu" or t.shape != (N,):
        hint = ""  # the commonest causes, named
        if t.shape == (N, 1):
            hint = " (labels of shape (N, 1): flatten them with t.reshape(-1))"
        elif t.shape == (N, C):
            hint = " (these look like one-hot vectors: t.argmax(axis=1) gives the indices)"
        elif t.shape == (C,) and N != C:
            hint = f" (are the logits transposed? they must be (N, C), got ({N}, {C}))"
        elif t.dtype.kind == "f" and t.shape == (N,):
            hint = " (indices are integers: t.astype(int))"
        elif t.ndim == 0:
            hint = (" (a single label: make it a batch of one, np.array([t]))" if N == 1 else
                    f" (one label for {N} examples: the labels must be one per example)")
        raise ValueError(
            f"{name} expects integer labels of shape ({N},), got {t.dtype} {t.shape}; pass "
            f"class indices, not one-hot vectors{hint}"
        )
    _check_label_range(name, t, C, " (a label of -1 would silently pick the last class)")


def _check_label_range(name, t, C, why=""):
    """Refuse a label outside 0..C-1, on the CPU only (on a GPU, reading the labels' minimum
    and maximum back would wait for the device)."""
    if t.size and cuda.get_array_module(t) is np:
        low, high = int(t.min()), int(t.max())
        if low < 0 or high >= C:
            raise ValueError(f"{name}: label {low if low < 0 else high} is out of range for {C} "
                             f"classes; labels must be integers in 0..{C - 1}{why}")


# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.functions import _per_example


class SoftmaxCrossEntropy(Function):
    """L = -mean_n log softmax(x_n)[t_n] for logits x (N, C) and integer labels t (N,).

    dL/dx = (softmax(x) - onehot(t)) / N. Forward uses log-sum-exp, so logits
    of any size give a finite loss. The labels get no gradient.
    """

    def forward(self, x, t):
        _check_labels("softmax_cross_entropy", x, t)
        xp = cuda.get_array_module(x)
        n = x.shape[0]
        half = x.dtype.char == "e"  # float16: in float32, rounded once at the end (x - max(x)
        if half:  # passes 65504 for logits of +-4e4, and each row's loss would round apart)
            x = x.astype(np.float32)
        z, log_s = _shifted_logsumexp(x, axis=1)
        neg_log_p = log_s[:, 0] - z[xp.arange(n), t]
        loss = _per_example(neg_log_p, n)
        return loss.astype(np.float16) if half else loss

    def backward(self, gy):
        x, t = self.inputs
        xp = cuda.get_array_module(x.data)
        n, c = x.shape
        onehot = xp.eye(c, dtype=x.dtype)[t.data]
        gx = (softmax(x, axis=1) - onehot) * (gy / n)
        return gx, None


# %% [markdown]
# A model whose last layer is `F.softmax` hands `softmax_cross_entropy` probabilities, which it
# then softmaxes a second time. Nothing fails, but inputs between 0 and 1 can differ by at most
# 1, so the loss can never drop below $\log(1 + (C - 1)/e)$ (0.55 for 3 classes, 1.46 for 10)
# and its gradients stay small: training crawls. PyTorch's `cross_entropy` is silent about it; here
# `_warn_squashed` looks at the function that made the input and warns. `sigmoid_cross_entropy`
# does the same for a `sigmoid` output.

# %%
#| export dezero_like/functions.py
import warnings

from dezero_like.core import _refuse_keywords
from dezero_like.functions import Softmax, _reduction


def _warn_squashed(x, kind, name, applied):
    """Warn when ``x`` is the output of ``kind`` (Softmax, Sigmoid), which loss ``name`` applies
    itself: it expects logits."""
    if isinstance(getattr(x, "creator", None), kind):
        warnings.warn(
            f"{name} got the output of {applied}: it applies {applied} itself and expects raw "
            f"scores (logits). Drop the final F.{applied} from the model and call F.{applied} "
            "only where you want the probabilities", stacklevel=3)


_CROSS_ENTROPY_KEYWORDS = {  # PyTorch's F.cross_entropy(x, t, reduction="sum"), ...
    "reduction": _reduction("the mean over the batch (PyTorch's default, 'mean')",
                            mean="F.softmax_cross_entropy(x, t)",
                            sum="F.softmax_cross_entropy(x, t) * len(x)",
                            none="-F.log_softmax(x)[np.arange(len(t)), t], a loss per row"),
    "ignore_index": lambda v: f"not available here: leave those rows out first, keep = t != "
                              f"{v!r}; F.softmax_cross_entropy(x[keep], t[keep])",
    "label_smoothing": "not available here",
    "weight": "class weights are not available here",
}


def softmax_cross_entropy(x, t, **others):
    """Mean cross entropy of logits ``x`` (N, C) against integer labels ``t`` (N,)."""
    if others:
        _refuse_keywords("F.softmax_cross_entropy", others, _CROSS_ENTROPY_KEYWORDS)
    _warn_squashed(x, Softmax, "softmax_cross_entropy", "softmax")
    return SoftmaxCrossEntropy()(x, t)


# %% [markdown]
# With two classes one logit per example is enough: $p = \sigma(x)$ is the probability of class
# 1, and the loss for a target $t \in [0, 1]$ is $-[t \log p + (1 - t) \log(1 - p)]$. Written
# from the logit it needs no `exp` that can overflow and no `log` of 0:
# $\max(x, 0) - t x + \log(1 + e^{-|x|})$ (`log1p` keeps the last term exact when $e^{-|x|}$ is
# tiny). `SigmoidCrossEntropy` computes that; its gradient $(\sigma(x) - t)/N$ is made with
# `sigmoid`, so, as in `SoftmaxCrossEntropy`, it can be differentiated again. The targets, of the
# logits' shape, get no gradient. A target outside [0, 1] (labels of -1 and 1, or class indices
# 0, 1, 2 given to this two-class loss) makes the term $-t x$ win: the loss has no minimum and
# falls below 0 forever as the logits grow, so on the CPU such targets are refused (PyTorch
# computes the negative loss without a word). Like `mean_squared_error` it divides by
# $N$ = `len(x)`, where PyTorch's `binary_cross_entropy_with_logits` divides by the number of
# elements (the same for one logit per example).

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.core import _refuse_keywords
from dezero_like.functions import (Sigmoid, _check_same_shape, _float_dtype, _per_example,
                                   _reduction, _warn_squashed, sigmoid)


def _binary_targets(name, x, t):
    """``x`` and ``t`` in one floating dtype (x's, or float64), and the number of examples;
    different shapes are refused."""
    n = _check_same_shape(name, x, t, "targets of the input's shape", "t.reshape(x.shape)")
    dtype = _float_dtype(x.dtype, complex_ok=False)
    return x.astype(dtype, copy=False), t.astype(dtype, copy=False), n


def _refuse_binary_targets(t):
    """Say that targets outside [0, 1] make the loss unbounded below, and what they look like."""
    values = np.unique(t)
    if np.isin(values, (-1, 1)).all():
        hint = "labels of -1 and 1? Map them to 0 and 1 with (t + 1) / 2"
    elif (values >= 0).all() and (values == np.round(values)).all():
        hint = ("class indices 0 .. K-1? For more than two classes give one logit per class "
                "and use softmax_cross_entropy(y, t)")
    else:
        hint = "scale the targets into [0, 1] (probabilities)"
    raise ValueError(
        f"sigmoid_cross_entropy needs targets t in [0, 1], got values from {t.min()} to "
        f"{t.max()}: outside [0, 1] the loss has no minimum, it falls below 0 and on without end "
        f"as the logits grow in size. {hint[0].upper()}{hint[1:]}")


class SigmoidCrossEntropy(Function):
    """L = sum(max(x, 0) - t x + log(1 + exp(-abs(x)))) / N with N = len(x).

    ``x`` are logits and ``t`` targets in [0, 1] of the same shape; dL/dx = (sigmoid(x) - t) / N,
    made with :func:`sigmoid`, so it is differentiable again. The loss is
    -[t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))] rearranged so that no exp overflows and
    no log sees 0: finite for any finite logits. The targets get no gradient. PyTorch's
    ``binary_cross_entropy_with_logits`` divides by the number of elements, not by N.
    """

    def forward(self, x, t):
        x, t, self.n = _binary_targets("sigmoid_cross_entropy", x, t)
        xp = cuda.get_array_module(x)
        if xp is np and t.size and ((t < 0).any() or (t > 1).any()):  # not on a GPU: a wait
            _refuse_binary_targets(t)
        loss = xp.maximum(x, 0) - t * x + xp.log1p(xp.exp(-xp.abs(x)))
        return _per_example(loss, self.n)  # float16: summed in float32

    def backward(self, gy):
        x, t = self.inputs
        p = sigmoid(x)
        scale = gy * (1.0 / self.n if self.n else 0.0)  # an empty batch: an empty gradient
        return (p - t.data.astype(p.dtype, copy=False)) * scale, None


# %%
#| export dezero_like/functions.py
def sigmoid_cross_entropy(x, t, **others):
    """Binary cross entropy of logits ``x`` against targets ``t`` of the same shape.

    Summed and divided by len(x); see :class:`SigmoidCrossEntropy`.
    """
    if others:  # PyTorch's binary_cross_entropy_with_logits(x, t, reduction="sum"), say
        _refuse_keywords("F.sigmoid_cross_entropy", others, {"reduction": _reduction(
            "the sum over every element divided by len(x)",
            mean="F.sigmoid_cross_entropy(x, t) * len(x) / x.size, the mean of every element",
            sum="F.sigmoid_cross_entropy(x, t) * len(x)")})
    _warn_squashed(x, Sigmoid, "sigmoid_cross_entropy", "sigmoid")
    return SigmoidCrossEntropy()(x, t)


# %% [markdown]
# `BinaryCrossEntropy` takes the probabilities $p$ themselves (a `sigmoid` output). At $p = 0$ or
# 1 a log is $-\infty$, so, as PyTorch does, each log is clamped at $-100$ and the gradient
# $(p - t) / p(1 - p)$ divides by at least $10^{-12}$: a certain wrong answer costs 100, not
# `inf`. On the CPU, values of `p` or `t` outside [0, 1] are refused (logits passed by mistake).
# It divides by $N$ = `len(p)`, where PyTorch's `binary_cross_entropy` divides by the number of
# elements. From logits, `sigmoid_cross_entropy` is the exact one.

# %%
#| export dezero_like/functions.py
import numpy as np
from dezero_like import cuda
from dezero_like.core import Function
from dezero_like.core import _refuse_keywords
from dezero_like.functions import _per_example, _reduction, astype, clip


class BinaryCrossEntropy(Function):
    """L = -sum(t log p + (1 - t) log(1 - p)) / N, N = len(p); dL/dp = (p - t) / (p (1 - p)) / N.

    ``p`` are probabilities and ``t`` targets in [0, 1] of the same shape. As in PyTorch, each
    log is clamped at -100 and ``p (1 - p)`` at 1e-12, so p = 0 or 1 gives a finite loss and
    gradient. The targets get no gradient. PyTorch's ``binary_cross_entropy`` divides by the
    number of elements, not by N.
    """

    def forward(self, p, t):
        p, t, self.n = _binary_targets("binary_cross_entropy", p, t)
        xp = cuda.get_array_module(p)
        if xp is np and p.size:  # on a GPU this check would wait for the device: skipped there
            for what, a in (("probabilities p", p), ("targets t", t)):
                if (a < 0).any() or (a > 1).any():
                    raise ValueError(
                        f"binary_cross_entropy needs {what} in [0, 1], got values from "
                        f"{a.min()} to {a.max()}; for logits use sigmoid_cross_entropy")
        with np.errstate(divide="ignore"):  # log(0) is -inf: clamped next
            log_p = xp.maximum(xp.log(p), -100)
            log_q = xp.maximum(xp.log1p(-p), -100)
        return 0.0 - _per_example(t * log_p + (1 - t) * log_q, self.n)  # 0.0, never -0.0

    def backward(self, gy):
        p, t = self.inputs
        if p.dtype.kind != "f":  # 0/1 given as integers: computed in float64, as forward
            p = astype(p, np.float64)
        t = t.data.astype(p.dtype, copy=False)
        scale = gy * (1.0 / self.n if self.n else 0.0)  # an empty batch: an empty gradient
        return (p - t) / clip(p * (1 - p), 1e-12, None) * scale, None


# %%
#| export dezero_like/functions.py
def binary_cross_entropy(p, t, **others):
    """Binary cross entropy of probabilities ``p`` against targets ``t`` of the same shape.

    Summed and divided by len(p); see :class:`BinaryCrossEntropy`.
    """
    if others:  # PyTorch's binary_cross_entropy(p, t, reduction="sum"), say
        _refuse_keywords("F.binary_cross_entropy", others, {"reduction": _reduction(
            "the sum over every element divided by len(p)",
            mean="F.binary_cross_entropy(p, t) * len(p) / p.size, the mean of every element",
            sum="F.binary_cross_entropy(p, t) * len(p)")})
    return BinaryCrossEntropy()(p, t)


# %%
import warnings

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

logits = np.array([[1000.0, 0.0, -1000.0]])


def naive_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about the overflow
    print("naive softmax:", naive_softmax(logits))
print("F.softmax:    ", F.softmax(dz.Variable(logits)).data)

# %% [markdown]
# ## Softmax composed of earlier functions
#
# Softmax could be written without a new `Function`, from `exp`, `sum` and division; the book's
# DeZero keeps that version as `softmax_simple`. It is differentiable as it stands, since every
# piece is. But it builds a graph of three nodes where `softmax` builds one, and its `exp` is not
# shifted, so it inherits the overflow shown above. (The book's composed loss,
# `softmax_cross_entropy_simple`, also needs `log`, which arrives in step 66.)

# %%
#| export dezero_like/functions.py
from dezero_like.core import as_variable
from dezero_like.functions import exp


def softmax_simple(x, axis=_AXIS_1, **others):
    """exp(x) / sum(exp(x)) along ``axis``, composed of exp, sum and division.

    No shift by the maximum: logits above about 88 (float32) or 709 (float64) overflow to
    nan. :func:`softmax` computes the same without overflow. ``axis`` as in softmax.
    """
    if others:
        _refuse_keywords("F.softmax_simple", others, _DIM_KEYWORD)
    x = as_variable(x)
    e = exp(x)
    return e / e.sum(axis=_class_axis("softmax_simple", x, axis), keepdims=True)


# %%
moderate = dz.Variable(np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]]))
print("softmax_simple == F.softmax:", np.allclose(softmax_simple(moderate).data,
                                                   F.softmax(moderate).data))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    print("softmax_simple of the large logits:", softmax_simple(dz.Variable(logits)).data)

# %% [markdown]
# ## The gradient of softmax cross entropy
#
# For one row, with $p = \text{softmax}(x)$ and one-hot target $y$,
# $\partial(-\log p_t)/\partial x_k = p_k - y_k$: the predicted probabilities
# minus the target. It is bounded by 1 in size, whatever the logits, which is
# one reason this loss trains so well. Averaged over $N$ rows the gradient is
# $(p - y)/N$.
#
# `F.softmax_cross_entropy(x, t)` takes the logits and the **integer labels**
# $t$ (not one-hot vectors). Its forward uses log-sum-exp; its backward
# computes $(\text{softmax}(x) - \text{onehot}(t)) / N$ from differentiable
# functions, so even its second derivative is available.

# %%
x = dz.Variable(np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.2]]))
t = np.array([0, 2])
loss = F.softmax_cross_entropy(x, t)
loss.backward()
p = np.exp(x.data) / np.exp(x.data).sum(axis=1, keepdims=True)
print("loss:", loss.data, "by hand:", -np.log(p[np.arange(2), t]).mean())
print("grad:\n", x.grad.data)
print("(p - onehot) / N:\n", (p - np.eye(3)[t]) / 2)

# %% [markdown]
# ## Large logits stay finite
#
# A confident right answer costs (almost) nothing, a confident wrong answer
# costs exactly the margin by which it is wrong, and a tie between $K$ classes
# costs $\log K$ — even with logits of $\pm 10^4$ in float32:

# %%
big = dz.Variable(np.array([[1e4, -1e4, 0.0],
                            [-1e4, 1e4, 0.0],
                            [1e4, 1e4, 1e4]], dtype=np.float32))
labels = np.array([0, 0, 2])
big_loss = F.softmax_cross_entropy(big, labels)
big_loss.backward()
print("loss:", big_loss.data, big_loss.dtype, "expected:", (0 + 2e4 + np.log(3)) / 3)
print("grad finite:", bool(np.all(np.isfinite(big.grad.data))))
print("grad:\n", big.grad.data)

# %% [markdown]
# The same story as a picture. The logits of one row are $s \cdot [1, 0, -1]$ in float32, and
# $s$ grows from 0 to 150. Green is the loss when the label is the largest logit (a right
# answer), red when it is the smallest (a wrong one). The solid lines are
# `F.softmax_cross_entropy`: near 0 and about $2s$, all the way. The wide, faint lines are the
# formula typed literally; look where they stop. The red one stops first, at $s = 52$: the
# probability of the wrong class, about $e^{-2s}$, rounds to 0, and $-\log 0$ is `inf`. The green
# one stops at the dotted line, $s \approx 88.7$, where `exp` overflows float32 and `inf / inf`
# is `nan`. Neither value can be drawn.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(49)  # every file this step writes goes here
margins = np.arange(0, 151, dtype=np.float32)  # s = 0, 1, ..., 150
pattern = np.array([1.0, 0.0, -1.0], dtype=np.float32)  # the logits of a row are s * pattern
rows = margins[:, None] * pattern
overflow = float(np.log(np.finfo(np.float32).max))  # exp(s) is inf in float32 beyond this
fig, ax = plt.subplots(figsize=(7, 4))
curves = {}
for label, colour, case in ((0, "tab:green", "right answer"), (2, "tab:red", "wrong answer")):
    stable = np.array([float(F.softmax_cross_entropy(row[None], np.array([label])).data)
                       for row in rows])  # one row, one label: the loss of that row
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        e = np.exp(rows)
        literal = -np.log(e[:, label] / e.sum(axis=1))
    curves[case] = stable, literal
    print(f"{case}: the literal formula first gives {literal[~np.isfinite(literal)][0]} at "
          f"s = {margins[~np.isfinite(literal)][0]:g}; F.softmax_cross_entropy at s = 150: "
          f"{stable[-1]:g}")
    ax.plot(margins, np.where(np.isfinite(literal), literal, np.nan), color=colour, lw=6,
            alpha=0.3, label=f"literal formula, {case}")
    ax.plot(margins, stable, color=colour, label=f"F.softmax_cross_entropy, {case}")
ax.axvline(overflow, color="grey", ls=":")
ax.text(overflow + 2, 250, f"exp overflows\nfloat32 at s = {overflow:.1f}", color="grey")
ax.set_xlabel("s (the logits are s * [1, 0, -1], float32)")
ax.set_ylabel("cross entropy loss")
ax.set_title("Softmax cross entropy for growing logits")
ax.legend(fontsize=8, loc="upper left")
save_figure(fig, out_dir / "large_logits.png")
plt.show()

# %% [markdown]
# ## Two classes: one logit and the sigmoid
#
# For a yes/no question one logit per example is enough, and `F.sigmoid_cross_entropy(x, t)`
# scores it against a target of the same shape. Logits of $\pm 1000$ stay exact: a certain right
# answer costs 0, a certain wrong one its margin. `F.binary_cross_entropy` takes probabilities
# instead, and at $p = 0$ or 1 charges at most 100 per example:

# %%
two = dz.Variable(np.array([[1000.0], [-1000.0], [1000.0], [0.0]]))
two_t = np.array([[1.0], [0.0], [0.0], [1.0]])
two_loss = F.sigmoid_cross_entropy(two, two_t)
two_loss.backward()
print("loss:", two_loss.data, "expected:", (0 + 0 + 1000 + np.log(2)) / 4)
print("grad, (sigmoid(x) - t) / N:", two.grad.data.ravel())
probs = np.array([[1.0], [0.0], [1.0], [0.5]])
print("binary_cross_entropy:", F.binary_cross_entropy(probs, two_t).data,
      "expected:", (0 + 0 + 100 + np.log(2)) / 4)

# %% [markdown]
# `F.log_softmax` applies the same log-sum-exp trick when you need the
# log-probabilities themselves. All three pass the gradient check:

# %%
rng = np.random.default_rng(0)
z = rng.normal(size=(4, 5)) * 3
lab = rng.integers(0, 5, size=4)
print("softmax:", gradient_check(F.softmax, z))
print("log_softmax:", gradient_check(F.log_softmax, z))
print("softmax_cross_entropy:", gradient_check(F.softmax_cross_entropy, z, lab))

# %% [markdown]
# ## Exercise
# 1. Compute the cross entropy of the logits `big` with labels `[1, 1, 0]` with
#    `F.log_softmax` and indexing (step 48) instead of `softmax_cross_entropy`:
#    $-\frac1N \sum_n \log p_{n, t_n}$. One index expression picks the $N$
#    entries $(n, t_n)$ at once: reread step 48's exercise, which picks the
#    score of the correct class in each row. Store the result, a Variable, in `ce`.
# 2. **Implement then test: softmax with a temperature.** Dividing the logits by
#    a temperature $T > 0$ before the softmax, $p = \operatorname{softmax}(x / T)$,
#    sharpens the probabilities when $T < 1$ and flattens them towards uniform
#    when $T > 1$ (language models sample this way; knowledge distillation trains
#    on such softened outputs). Write `MySoftmaxT`, a `Function` over axis 1 that
#    is given $T$ when it is created, as `Clip` is given its bounds. `forward`
#    must not overflow even for $T$ well below 1, where $x / T$ is far larger than
#    $x$: decide which maximum to subtract, and whether dividing by a positive $T$
#    changes which logit of a row is the largest. `backward` uses only the kept
#    output $y$ and one sum per row, kept as an (N, 1) column, built from the
#    functions of `F` on Variables; work out with the chain rule what the division
#    by $T$ does to the softmax gradient given above `Softmax`. The self-check
#    compares the values with the formula evaluated in NumPy for $T = 0.5$ and
#    $T = 4$, runs `gradient_check` for both, and tries logits near $+1000$ and
#    rows near $-2000$ with $T = 0.1$.

# %%
#| exercise
lab2 = np.array([1, 1, 0])
ce = ...  # a Variable: the cross entropy of big with labels lab2, from log_softmax

# %%
#| solution
lab2 = np.array([1, 1, 0])
ce = -F.sum(F.log_softmax(big)[np.arange(3), lab2]) / 3

# %%
#| check
assert isinstance(ce, dz.Variable), (
    f"ce should be a Variable, got {type(ce).__name__}: build it from F.log_softmax(big)"
)
assert np.isfinite(ce.data), f"ce is {ce.data}: use log_softmax, not log(softmax(...))"
expected = F.softmax_cross_entropy(big, lab2).data
assert np.isclose(ce.data, expected, rtol=1e-6), (
    f"expected {expected}, got {ce.data}: take one log-probability per row, the one of "
    "its label, then average and negate"
)
print("self-check passed: log_softmax plus get_item gives softmax_cross_entropy")

# %%
#| exercise
from dezero_like.core import Function


class MySoftmaxT(Function):
    def __init__(self, T):
        self.T = T  # the temperature, a number > 0

    def forward(self, x):
        raise NotImplementedError(
            "Exercise (step 49): keep the output for backward; the softmax of each row "
            "of x / T, shifted first so that no exp overflows"
        )

    def backward(self, gy):
        raise NotImplementedError(
            "Exercise (step 49): from the kept output y, the softmax gradient with what the "
            "chain rule through x / T adds to it, built from Variables"
        )

# %%
#| solution
from dezero_like.core import Function


class MySoftmaxT(Function):
    def __init__(self, T):
        self.T = T

    def forward(self, x):
        self.retain_outputs((0,))
        y = np.exp((x - x.max(axis=1, keepdims=True)) / self.T)
        return y / y.sum(axis=1, keepdims=True)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        gx = y * gy
        return (gx - y * F.sum(gx, axis=1, keepdims=True)) / self.T

# %%
#| check
rng = np.random.default_rng(0)
z = rng.normal(size=(4, 5)) * 3


def softmax_t_reference(x, T):
    """softmax(x / T) evaluated literally in NumPy: exact for these moderate logits."""
    e = np.exp(x / T)
    return e / e.sum(axis=1, keepdims=True)


for temperature in (0.5, 4.0):
    mine = MySoftmaxT(temperature)(dz.Variable(z)).data
    want = softmax_t_reference(z, temperature)
    assert np.allclose(mine, want), (
        f"MySoftmaxT({temperature}) gives {np.round(mine[0], 4)} for the first row, expected "
        f"{np.round(want[0], 4)}: the probabilities are the softmax of x / T (rows sum to 1)"
    )
    gradient_check(
        lambda v, T: MySoftmaxT(T)(v), z, temperature,
        hint=f"the gradient of MySoftmaxT({temperature}) is wrong. If backprop and the numerical "
             "gradient differ by a constant factor, redo the chain rule through the division by "
             "T; gy, the gradient from above (not all ones here), multiplies y before the row sum")
want = softmax_t_reference(z, 0.1)  # adding a constant to a row leaves its softmax unchanged
try:
    with np.errstate(over="raise", invalid="raise"):
        mine = MySoftmaxT(0.1)(dz.Variable(z + 1000.0)).data
except FloatingPointError as e:
    raise AssertionError(
        f"MySoftmaxT(0.1) overflows on logits near 1000 ({e}): there x / T is near 10000, "
        "so the exponent must be at most 0 for every element"
    ) from None
assert np.allclose(mine, want), (
    "MySoftmaxT(0.1) differs from softmax(z / T) on logits z + 1000: a constant added to a row "
    "must not change its probabilities"
)
far_apart = np.concatenate([z[:2], z[2:] - 2000.0])  # two rows near 0, two near -2000
with np.errstate(all="ignore"):
    mine = MySoftmaxT(0.1)(dz.Variable(far_apart)).data
assert np.allclose(mine, want), (
    f"MySoftmaxT(0.1) gives {mine[2]} for a row of logits near -2000: subtract each row's "
    "own max (an (N, 1) column), not the largest value of the whole array"
)
print("self-check passed: MySoftmaxT matches softmax(x / T), passes the gradient check for "
      "T = 0.5 and 4, and does not overflow at T = 0.1")
