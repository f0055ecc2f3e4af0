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
# **Constants become variables.** `Function.__call__` now wraps every input that
# is not a `Variable` (a number or an ndarray) with `as_variable`, so every
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
# the documented, reliable way.)
#
# **Dtypes.** In NumPy 2 a Python number is "weak": `float32_array * 2.0` stays
# float32. But once we wrap `2.0` in `np.array(2.0)` it is a float64 array and
# the product becomes float64. So `as_array` gives a Python number the dtype of
# the variable it is combined with (`like`). An ndarray keeps its own dtype, as
# in NumPy.
#
# The changes to the framework are marked `new`.

# %%
import contextlib
import heapq
import itertools
import weakref


class Config:
    """Global switches. enable_backprop: build the graph on every function call."""

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
    """with no_grad(): compute values only, no graph (inference, updates)."""
    return using_config("enable_backprop", False)


class Variable:
    """A box around a NumPy array that remembers the function that created it."""

    __array_ufunc__ = None  # new: ndarray (op) Variable hands over to Variable's operator

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.name = name  # a label for printing and, later, for graph pictures
        self.grad = None
        self.creator = None
        self.generation = 0  # leaves are generation 0

    # what a NumPy user expects of an array
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
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = self.grad + gx  # a NEW array: never write into one that may be shared

    def backward(self, retain_grad=False):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = []  # a heap of (-generation, arrival number, function)
        seen = set()
        arrivals = itertools.count()  # 0, 1, 2, ... breaks ties in arrival order

        def add_func(f):
            if f not in seen:  # queue each function once
                heapq.heappush(funcs, (-f.generation, next(arrivals), f))
                seen.add(f)

        add_func(self.creator)
        while funcs:
            f = heapq.heappop(funcs)[2]  # the highest generation, first come first
            gys = [output().grad for output in f.outputs]  # output() follows the weakref
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.accumulate_grad(gx)
                if x.creator is not None:
                    add_func(x.creator)

            if not retain_grad:  # f has used its outputs' grads; drop them
                for output in f.outputs:
                    output().grad = None

def as_array(x, like=None):  # new: like
    """Turn a number into a 0-d array; arrays pass through unchanged.

    A Python int or float takes the dtype of ``like`` when that is a floating
    array, so that float32 data combined with 2.0 stays float32.
    """
    if isinstance(x, np.ndarray):
        return x
    if like is not None and like.dtype.kind == "f" and type(x) in (int, float):
        return np.array(x, dtype=like.dtype)
    return np.array(x)


def as_variable(obj, like=None):  # new
    """Return obj if it is a Variable, else wrap it (a number or an ndarray) in one."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj, like))


class Function:
    """Base class: ``forward`` works on arrays, ``__call__`` wraps them in Variables."""

    def __call__(self, *inputs):
        like = next((x.data for x in inputs if isinstance(x, Variable)), None)  # new
        inputs = [as_variable(x, like) for x in inputs]  # new: numbers, arrays -> Variables
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]
        if Config.enable_backprop:  # record the graph only when asked to
            self.generation = max([x.generation for x in inputs])
            for output in outputs:
                output.set_creator(self)
            self.inputs = inputs
            self.outputs = [weakref.ref(output) for output in outputs]
        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError()

    def backward(self, *gys):
        raise NotImplementedError()


class Square(Function):
    """y = x**2; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    """y = exp(x); dy/dx = exp(x)."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    """y = x0 + x1; dy/dx0 = dy/dx1 = 1."""

    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy


class Mul(Function):
    """y = x0 * x1; dy/dx0 = x1, dy/dx1 = x0."""

    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy * x1, gy * x0


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):
    return Mul()(x0, x1)


class Neg(Function):  # new
    """y = -x; dy/dx = -1."""

    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):  # new
    """y = x0 - x1; dy/dx0 = 1, dy/dx1 = -1."""

    def forward(self, x0, x1):
        return x0 - x1

    def backward(self, gy):
        return gy, -gy


class Div(Function):  # new
    """y = x0 / x1; dy/dx0 = 1/x1, dy/dx1 = -x0/x1**2."""

    def forward(self, x0, x1):
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy / x1, gy * (-x0 / x1**2)


class Pow(Function):  # new
    """y = x**c for a constant number c; dy/dx = c * x**(c-1)."""

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x**self.c

    def backward(self, gy):
        x = self.inputs[0].data
        return self.c * x ** (self.c - 1) * gy


def neg(x):  # new
    return Neg()(x)


def sub(x0, x1):  # new
    return Sub()(x0, x1)


def rsub(x0, x1):  # new: 2.0 - x calls x.__rsub__(2.0), that is rsub(x, 2.0)
    return Sub()(x1, x0)


def div(x0, x1):  # new
    return Div()(x0, x1)


def rdiv(x0, x1):  # new: 2.0 / x calls rdiv(x, 2.0)
    return Div()(x1, x0)


def pow(x, c):  # new
    return Pow(c)(x)


Variable.__add__ = add  # a + b calls add(a, b)
Variable.__radd__ = add  # new: 2.0 + a calls a.__radd__(2.0)
Variable.__mul__ = mul  # a * b calls mul(a, b)
Variable.__rmul__ = mul  # new
Variable.__neg__ = neg  # new
Variable.__sub__ = sub  # new
Variable.__rsub__ = rsub  # new
Variable.__truediv__ = div  # new
Variable.__rtruediv__ = rdiv  # new
Variable.__pow__ = pow  # new


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
# A formula using every operator, $f(x) = \frac{(x - 2)^3}{x} - 1.5x + 4$,
# compared with central differences at a few points:


# %%
def f(x):
    return (x - 2) ** 3 / x - 1.5 * x + 4


for v in [0.5, 1.0, 3.0]:
    x = Variable(np.array(v))
    y = f(x)
    y.backward()
    eps = 1e-6
    numerical = (f(Variable(np.array(v + eps))).data - f(Variable(np.array(v - eps))).data) / (
        2 * eps
    )
    print(f"x = {v}: backprop {float(x.grad):.8f}, numerical {float(numerical):.8f}")

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
# Write $f(x) = \dfrac{1}{1 + e^{-x}}$ (the sigmoid) with the operators and
# check $f'(x) = f(x)\,(1 - f(x))$ at $x = 0.3$.


# %%
def sigmoid(x):
    return 1 / (1 + exp(-x))  # solution


x = Variable(np.array(0.3))
y = sigmoid(x)
y.backward()
s = 1 / (1 + np.exp(-0.3))
assert isinstance(y, Variable) and np.isclose(y.data, s), f"sigmoid(0.3) is {s}"
assert np.isclose(x.grad, s * (1 - s)), f"got {x.grad}"
print("self-check passed")
