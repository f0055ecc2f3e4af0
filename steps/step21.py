# %% [markdown]
# # Step 21: Operator overloading: `*` and `+`
#
# Writing `add(mul(a, b), c)` is correct but hard to read. We would like to
# write `a * b + c` and get the same graph. Python lets a class decide what an
# operator means: `a * b` calls `a.__mul__(b)`, and `a + b` calls
# `a.__add__(b)`. These are **special methods**; defining them is called
# operator overloading.
#
# First we need multiplication as a `Function`. For $y = x_0 x_1$ the partial
# derivatives are $\partial y/\partial x_0 = x_1$ and
# $\partial y/\partial x_1 = x_0$: each input's gradient is the upstream
# gradient times the *other* input. So unlike `Add`, `Mul.backward` reads its
# inputs.
#
# Then we attach the functions to `Variable`: `Variable.__mul__ = mul`. A
# function assigned to a class attribute becomes a method, so `a * b` calls
# `mul(a, b)` with `a` as the first argument. `Variable` itself does not
# change.

# %%
import contextlib
import heapq
import itertools
import weakref

import numpy as np


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
# The new `Mul` and `mul` join the functions, and the last two lines attach
# `add` and `mul` to `Variable` as its `+` and `*`.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class of every function: Variables in, new Variables out.

    Subclasses implement ``forward(x0, x1, ...)``, which receives arrays and
    returns an array or a tuple of arrays, and ``backward(gy0, ...)``, which turns
    dy/d(each output) into dy/d(each input). One output is returned as a bare Variable,
    several as a list.
    """

    def __call__(self, *inputs):
        for var in inputs:
            if not isinstance(var, Variable):
                raise TypeError(
                    f"{type(self).__name__} takes Variables, got {type(var).__name__}; "
                    "wrap arrays with Variable(...) and pass them as f(x0, x1)"
                )
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


Variable.__add__ = add  # a + b calls add(a, b)
Variable.__mul__ = mul  # a * b calls mul(a, b)


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
# ## $y = a b + c$

# %%
a = Variable(np.array(3.0), name="a")
b = Variable(np.array(2.0), name="b")
c = Variable(np.array(1.0), name="c")
y = a * b + c
y.backward()
print("y =", y)
print("a.grad =", a.grad, "(= b)   b.grad =", b.grad, "(= a)   c.grad =", c.grad)
print("the graph:", type(y.creator).__name__, "<-",
      [type(x.creator).__name__ if x.creator else x.name for x in y.creator.inputs])

# %% [markdown]
# The graph drawn, with names, values and gradients. The product and the output
# show no gradient (`-`): since step 19, backward keeps gradients only on the
# inputs unless it is called with `retain_grad=True`.

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(y, values=True, to_file=output_dir(21) / "ab_plus_c.svg"))
image

# %% [markdown]
# Operators combine with everything we built so far. The same variable may
# appear several times, and the gradients accumulate as in step 14:
# $y = x \cdot x + x$ has $dy/dx = 2x + 1$. The gradient checker agrees, for
# arrays too.

# %%
x = Variable(np.array(3.0))
y = x * x + x
y.backward()
print("x*x + x at 3: y =", y.data, " dy/dx =", x.grad)
rng = np.random.default_rng(0)
print("gradient check:", gradient_check(lambda v: v * v + v, rng.standard_normal((2, 3))))

# %% [markdown]
# For now both operands must be `Variable`s: `x * 2.0` fails with the
# `TypeError` of `Function.__call__`. Step 22 accepts numbers and arrays.

# %%
try:
    x * 2.0
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# ## Exercise
# Check the product rule: write $y = x e^x$ with this step's `*` operator (and
# `exp` for $e^x$), run backprop from `y` and compare with
# $f'(x) = (1 + x)e^x$ at $x = 0.5$.

# %%
#| exercise
x = Variable(np.array(0.5))
y = ...  # x e^x, with exp and this step's operator; then backprop

# %%
#| solution
x = Variable(np.array(0.5))
y = x * exp(x)
y.backward()

# %%
#| check
assert y is not ..., "replace the ... in `y = ...` with the expression x e^x"
assert isinstance(y, Variable), f"y should be a Variable, got {type(y).__name__}"
assert isinstance(y.creator, Mul), (
    "y was not made by a Mul: is the last operation a product of Variables?"
)
assert x.grad is not None, "x.grad is None: did backprop run from y?"
assert np.isclose(x.grad, 1.5 * np.exp(0.5)), (
    f"expected (1 + x)e^x = {1.5 * np.exp(0.5)}, got {x.grad} "
    "(re-run your cell, which makes a fresh x, before the check)"
)
print("self-check passed: x * exp(x) has the gradient (1 + x)e^x")
