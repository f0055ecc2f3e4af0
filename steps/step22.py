# %% [markdown]
# # Step 22: More operators, mixed with numbers and arrays
#
# Step 21 gave us `a * b + c` for variables. Real formulas also subtract,
# divide, negate and raise to powers, and they mix variables with constants:
# `2.0 - x`, `x / 2`, `x ** 3`, `np.array(2.0) * x`. This step makes all of
# these work and keeps their gradients right.
#
# **Four new functions.** With their derivatives:
#
# | function | $y$ | $\partial y/\partial x_0$ | $\partial y/\partial x_1$ |
# | --- | --- | --- | --- |
# | `Neg` | $-x$ | $-1$ | |
# | `Sub` | $x_0 - x_1$ | $1$ | $-1$ |
# | `Div` | $x_0 / x_1$ | $1/x_1$ | $-x_0/x_1^2$ |
# | `Pow` | $x^c$ ($c$ a constant) | $c\,x^{c-1}$ | |
#
# **Constants become variables.** `Function.__call__` now accepts numbers and
# ndarrays besides `Variable`s, and wraps them with `as_variable`, so every
# function accepts constants, not only the operators.
#
# **The reflected operators.** For `2.0 - x`, Python first asks the float:
# `float.__sub__(2.0, x)` does not know variables and returns `NotImplemented`,
# so Python calls `x.__rsub__(2.0)`. The arguments arrive swapped, which is why
# `rsub(x0, x1)` computes `x1 - x0`. For `+` and `*` the order does not matter,
# so `__radd__` and `__rmul__` are `add` and `mul` themselves.
#
# **Arrays on the left.** `np.array(2.0) * x` is trickier: NumPy's own `*`
# happily accepts any object, treats it as an element of an object array and
# multiplies element by element. The small experiment below shows the effect on
# a class that only defines `__rmul__`:

# %%
import contextlib
import heapq
import itertools
import weakref

import numpy as np


class Plain:
    def __rmul__(self, other):
        return f"__rmul__({other!r})"


class OptedOut(Plain):
    __array_ufunc__ = None


print("without opt-out:", repr(np.array([1.0, 2.0]) * Plain()))
print("with opt-out:   ", repr(np.array([1.0, 2.0]) * OptedOut()))

# %% [markdown]
# Setting `__array_ufunc__ = None` on a class tells NumPy that the class does
# not take part in NumPy's arithmetic; NumPy then returns `NotImplemented` and
# Python calls our reflected operator with the whole array. (Older code sets a
# large `__array_priority__` for the same purpose; `__array_ufunc__ = None` is
# the documented, reliable way: NumPy's NEP 13 and the `__array_ufunc__` entry
# of its "Standard array subclasses" reference describe it.)
#
# **Dtypes.** In NumPy 2 a Python number is "weak": `float32_array * 2.0` stays
# float32. But once we wrap `2.0` in `np.array(2.0)` it is a float64 array and
# the product becomes float64. So `as_array` gives a Python number the dtype of
# the variable it is combined with (`like`). An ndarray keeps its own dtype, as
# in NumPy.
#
# In `Variable`, the only change is `__array_ufunc__ = None`.

# %%
class Config:
    """Global switches. enable_backprop: record the graph on every function call."""

    enable_backprop = True


@contextlib.contextmanager
def using_config(name, value):
    """Set Config.<name> to value inside a with-block, and restore it afterwards."""
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """with no_grad(): compute values only, without a graph (inference, updates)."""
    return using_config("enable_backprop", False)


class Variable:
    """A box around a NumPy array."""

    __array_ufunc__ = None  # ndarray (op) Variable: NumPy steps aside for Variable's operator

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.name = name  # a label for printing and, later, for pictures of graphs
        self.grad = None  # dy/d(this variable), filled in by backprop
        self.creator = None  # the Function that made this variable (None for inputs)
        self.generation = 0  # depth in the graph: inputs are generation 0

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

    def __repr__(self):
        if self.data is None:
            return "variable(None)"
        body = str(self.data).replace("\n", "\n" + " " * 9)  # line up under "variable("
        return f"variable({body})"

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1  # one more than its creator

    def cleargrad(self):
        """Forget the gradient, so that the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = as_array(self.grad + gx)  # a NEW array: never write into a shared one

    def backward(self, retain_grad=False):
        """Fill in the grad of every variable this one was computed from (with a loop).

        Only the inputs (leaves) keep their grads, unless ``retain_grad=True``.
        """
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = []  # still to visit: a heap of (-generation, arrival number, function)
        seen = set()  # the functions queued so far
        arrivals = itertools.count()  # 0, 1, 2, ...: breaks ties in arrival order

        def add_func(f):
            if f not in seen:  # queue each function once
                heapq.heappush(funcs, (-f.generation, next(arrivals), f))
                seen.add(f)

        if self.creator is not None:
            add_func(self.creator)
        while funcs:
            f = heapq.heappop(funcs)[2]  # 1. the next function: highest generation, first come
            gys = [output().grad for output in f.outputs]  # 2. output() follows the weakref
            gxs = f.backward(*gys)  # 3. one step of the chain rule: one grad per input
            if not isinstance(gxs, tuple):
                gxs = (gxs,)  # a single gradient may be returned without a tuple
            if len(gxs) != len(f.inputs):  # zip would drop the unpaired ones silently
                raise RuntimeError(f"{type(f).__name__}.backward returned {len(gxs)} "
                                   f"gradients for {len(f.inputs)} inputs: return one "
                                   "per input, in the order forward takes them")
            for x, gx in zip(f.inputs, gxs):  # each input gets its own gradient
                x.accumulate_grad(as_array(gx))  # one method decides how gradients add up
                if x.creator is not None:
                    add_func(x.creator)  # 4. and continue from x
            if not retain_grad:
                for output in f.outputs:
                    output().grad = None  # f has used its outputs' grads: free them


# %% [markdown]
# `as_array` learns `like`, `as_variable` wraps constants, and
# `Function.__call__` accepts arrays and numbers and wraps them. The new
# functions come next to `Mul`, their wrappers next to `mul`, and the operators
# at the end.

# %%
def as_array(x, like=None):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays.

    A Python int or float takes the dtype of ``like`` when that is a floating
    array, so that float32 data combined with 2.0 stays float32.
    """
    if np.isscalar(x):
        if like is not None and like.dtype.kind == "f" and type(x) in (int, float):
            return np.array(x, dtype=like.dtype)
        return np.array(x)
    return x


def as_variable(obj, like=None):
    """Return obj if it is a Variable, else wrap it (a number or an ndarray) in one."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj, like))


class Function:
    """Base class of every function: Variables (or numbers and arrays) in, new Variables out.

    Subclasses implement ``forward(x0, x1, ...)``, which receives arrays and
    returns an array or a tuple of arrays, and ``backward(gy0, ...)``, which turns
    dy/d(each output) into dy/d(each input). One output is returned as a bare Variable,
    several as a list.
    """

    def __call__(self, *inputs):
        for var in inputs:
            if not isinstance(var, (Variable, np.ndarray, np.number, int, float)):
                raise TypeError(
                    f"{type(self).__name__} takes Variables, arrays or numbers, got "
                    f"{type(var).__name__}; pass them as f(x0, x1)"
                )
        like = next((var.data for var in inputs if isinstance(var, Variable)), None)
        inputs = [as_variable(var, like) for var in inputs]  # numbers, arrays -> Variables
        xs = [var.data for var in inputs]  # take the arrays out of their boxes
        ys = self.forward(*xs)  # compute on plain arrays: forward(x0, x1, ...)
        if not isinstance(ys, tuple):
            ys = (ys,)  # one result may be returned without a tuple
        outputs = [Variable(as_array(y)) for y in ys]  # put the results into new boxes
        if Config.enable_backprop:  # record the graph only when asked to
            self.generation = max(var.generation for var in inputs)  # the deepest input
            for output in outputs:
                output.set_creator(self)  # each output remembers where it came from
            self.inputs = inputs  # remembered for backward
            self.outputs = [weakref.ref(output) for output in outputs]  # not owned: no cycle
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x0, ...)")

    def backward(self, *gys):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy0, ...)")


class Square(Function):
    """y = x ** 2, element by element; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    """y = e ** x, element by element; dy/dx = e ** x."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    """y = x0 + x1, element by element; dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy  # one gradient per input, both passed on unchanged


class Mul(Function):
    """y = x0 * x1, element by element; dy/dx0 = x1, dy/dx1 = x0."""

    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy * x1, gy * x0  # each input's gradient uses the other input


class Neg(Function):
    """y = -x, element by element; dy/dx = -1."""

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    """y = x0 - x1, element by element; dy/dx0 = 1, dy/dx1 = -1."""

    def forward(self, x0, x1):
        return x0 - x1

    def backward(self, gy):
        return gy, -gy


class Div(Function):
    """y = x0 / x1, element by element; dy/dx0 = 1 / x1, dy/dx1 = -x0 / x1 ** 2."""

    def forward(self, x0, x1):
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy / x1, gy * (-x0 / x1**2)


class Pow(Function):
    """y = x ** c for a constant number c, element by element; dy/dx = c x ** (c - 1)."""

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x**self.c

    def backward(self, gy):
        x = self.inputs[0].data
        return self.c * x ** (self.c - 1) * gy


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()(x)


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()(x)


def add(x0, x1):
    """x0 + x1 of two Variables (creates an Add function and calls it)."""
    return Add()(x0, x1)


def mul(x0, x1):
    """x0 * x1 of two Variables (creates a Mul function and calls it)."""
    return Mul()(x0, x1)


def neg(x):
    """-x of a Variable (creates a Neg function and calls it)."""
    return Neg()(x)


def sub(x0, x1):
    """x0 - x1 (creates a Sub function and calls it)."""
    return Sub()(x0, x1)


def rsub(x0, x1):
    """x1 - x0: 2.0 - x calls x.__rsub__(2.0), that is rsub(x, 2.0)."""
    return Sub()(x1, x0)


def div(x0, x1):
    """x0 / x1 (creates a Div function and calls it)."""
    return Div()(x0, x1)


def rdiv(x0, x1):
    """x1 / x0: 2.0 / x calls x.__rtruediv__(2.0), that is rdiv(x, 2.0)."""
    return Div()(x1, x0)


def pow(x, c):
    """x ** c for a constant number c (creates a Pow function and calls it)."""
    return Pow(c)(x)


Variable.__add__ = add  # a + b calls add(a, b)
Variable.__radd__ = add  # 2.0 + a calls a.__radd__(2.0), that is add(a, 2.0)
Variable.__mul__ = mul  # a * b calls mul(a, b)
Variable.__rmul__ = mul
Variable.__neg__ = neg
Variable.__sub__ = sub
Variable.__rsub__ = rsub
Variable.__truediv__ = div
Variable.__rtruediv__ = rdiv
Variable.__pow__ = pow


# %% [markdown]
# The central difference of step 04 stays as our reference.

# %%
def numerical_diff(f, x, eps=1e-4):
    """Derivative of ``f`` at ``x`` by the central difference.

    f'(x) ~ (f(x + eps) - f(x - eps)) / (2 eps); the error shrinks like eps**2
    until rounding errors (about 1e-16 / eps) take over.
    """
    # np.asarray: for a 0-d array, x.data + eps is a NumPy scalar, not an array
    y_plus = f(Variable(np.asarray(x.data + eps)))
    y_minus = f(Variable(np.asarray(x.data - eps)))
    return (y_plus.data - y_minus.data) / (2 * eps)


# %% [markdown]
# And the gradient checker of step 10 comes along unchanged.

# %%
def gradient_check(f, x, eps=1e-4, rtol=1e-5, atol=1e-8):
    """Check backprop's gradient of sum(f(x)) against central differences.

    ``f`` maps a Variable to a Variable; ``x`` is a float64 ndarray. Element i
    of the numerical gradient is (S(x + eps e_i) - S(x - eps e_i)) / (2 eps)
    with S = sum(f(.)). Returns True when all elements agree within
    |backprop - numerical| <= atol + rtol * |numerical|; otherwise raises
    AssertionError naming the function, the input shape and the worst element.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        got = f"ndarray of {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(
            f"gradient_check needs a float64 ndarray, got {got}; "
            "use np.asarray(x, dtype=np.float64)"
        )
    name = getattr(f, "__name__", type(f).__name__)
    v = Variable(x.copy())
    f(v).backward()
    backprop = v.grad
    if backprop is None or backprop.shape != x.shape:
        shape = None if backprop is None else backprop.shape
        raise AssertionError(f"{name}: backprop gave grad of shape {shape}, input is {x.shape}")

    numerical = np.empty_like(x)
    for idx in np.ndindex(x.shape):  # one element at a time
        nudged = x.copy()
        nudged[idx] = x[idx] + eps
        plus = f(Variable(nudged)).data.sum()
        nudged = x.copy()
        nudged[idx] = x[idx] - eps
        minus = f(Variable(nudged)).data.sum()
        numerical[idx] = (plus - minus) / (2 * eps)

    excess = np.abs(backprop - numerical) - (atol + rtol * np.abs(numerical))
    if np.any(excess > 0):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), x.shape))
        raise AssertionError(
            f"gradient check failed for {name} on input of shape {x.shape}: "
            f"{np.count_nonzero(excess > 0)} of {x.size} elements differ; worst at index "
            f"{worst}: backprop {backprop[worst]:.6g}, numerical {numerical[worst]:.6g}"
        )
    return True


# %% [markdown]
# ## Every operator, with constants on either side

# %%
x = Variable(np.array(3.0), name="x")
for text, make in [("-x", lambda x: -x), ("2.0 - x", lambda x: 2.0 - x),
                   ("x - 1", lambda x: x - 1), ("x / 2", lambda x: x / 2),
                   ("6 / x", lambda x: 6 / x), ("x ** 3", lambda x: x**3),
                   ("np.array(2.0) * x", lambda x: np.array(2.0) * x),
                   ("3 + x * x", lambda x: 3 + x * x)]:
    x.cleargrad()
    y = make(x)
    y.backward()
    print(f"{text:18s} = {float(y.data):6.3f}   dy/dx = {float(x.grad):6.3f}"
          f"   result is a {type(y).__name__}")

# %% [markdown]
# Every result is a `Variable`, so it can go on into more functions and
# `backward` reaches `x`.
#
# ## Checking against numerical differentiation
#
# A formula using each binary operator, $f(x) = \frac{(x - 2)^3}{x} - 1.5x + 4$,
# compared with central differences (`numerical_diff`) at three points at once
# (every operator works element by element), and
# with the gradient checker on an array:


# %%
def f(x):
    return (x - 2) ** 3 / x - 1.5 * x + 4


x = Variable(np.array([0.5, 1.0, 3.0]))
y = f(x)
y.backward()
numerical = numerical_diff(f, x)
for v, g, n in zip(x.data, x.grad, numerical):
    print(f"x = {v}: backprop {g:.8f}, numerical {n:.8f}")
print("gradient check:", gradient_check(f, np.array([[0.5, 1.0, 3.0], [1.5, 2.5, 4.0]])))

# %% [markdown]
# ## Dtypes are kept

# %%
x = Variable(np.array([1.0, 2.0], dtype=np.float32))
print("x * 2.0:       ", (x * 2.0).dtype)
print("2 - x:         ", (2 - x).dtype)
print("x ** 2:        ", (x**2).dtype)
y = x / 3.0
y.backward()
print("x / 3.0, grad: ", y.dtype, x.grad.dtype)
print("x * np.float64 array:", (x * np.array(2.0)).dtype, "(an array keeps its dtype, as in NumPy)")

# %% [markdown]
# ## Exercise
# Write $f(x) = \dfrac{1}{1 + e^{-x}}$ (the sigmoid) with the operators. The
# self-check evaluates it at $x = 0.3$ (about 0.5744) and checks
# $f'(x) = f(x)\,(1 - f(x))$.

# %%
#| exercise
def sigmoid(x):
    raise NotImplementedError("Exercise (step 22): the sigmoid from exp and the operators; "
                              "which ones take a number on the left?")

# %%
#| solution
def sigmoid(x):
    return 1 / (1 + exp(-x))

# %%
#| check
x = Variable(np.array(0.3))
y = sigmoid(x)
s = 1 / (1 + np.exp(-0.3))
assert isinstance(y, Variable), (
    f"sigmoid should return a Variable, got {type(y).__name__}: use exp, not np.exp"
)
assert np.isclose(y.data, s), f"sigmoid(0.3) is {s}, got {y.data}"
y.backward()
assert np.isclose(x.grad, s * (1 - s)), f"expected f(x)(1 - f(x)) = {s * (1 - s)}, got {x.grad}"
print("self-check passed: sigmoid's gradient is f(x)(1 - f(x))")
