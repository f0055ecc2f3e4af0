# %% [markdown]
# # Step 20: Making `Variable` pleasant to use
#
# The machinery is in place: gradients flow through any graph, in the right
# order, without leaking memory. Now we make `Variable` feel like the array it
# wraps. A learner (and a debugger) should be able to ask a variable for its
# shape, print it, and give it a name, without reaching into `.data` every
# time.
#
# The additions:
#
# * `name`: an optional label. Pictures of graphs write it on the variable's
#   node (step 21 draws one; step 25 writes the code that draws them).
# * `shape`, `ndim`, `size`, `dtype`: **properties** that pass the question on
#   to the array. A property is a method that is read like an attribute
#   (`x.shape`, not `x.shape()`), so code written for ndarrays reads the same.
# * `len(x)`: the length of the first axis, as for an ndarray.
# * `repr(x)`: what the interpreter shows, `variable([...])`, with the rows of
#   a matrix lined up.
#
# Nothing else changes, so the snapshot below differs from step 19 only in
# `Variable`.

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
# `Function` and the functions are unchanged from step 19.

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


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()(x)


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()(x)


def add(x0, x1):
    """x0 + x1 of two Variables (creates an Add function and calls it)."""
    return Add()(x0, x1)


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
# ## Asking a variable about itself

# %%
x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name="x")
print("name:", x.name)
print("shape:", x.shape, " ndim:", x.ndim, " size:", x.size, " dtype:", x.dtype)
print("len:", len(x))
print(x)
print(repr(Variable(np.array(3.5))))
print(repr(Variable(None)))

# %% [markdown]
# `print` uses `__repr__` too, because we did not define a separate `__str__`.
# The same information is available on results and on gradients:

# %%
y = square(x)
y.backward()
print("y.shape:", y.shape, " x.grad:")
print(x.grad)

# %% [markdown]
# ## Exercise
# Write `describe(v)` that returns a one-line summary like
# `"x: shape (2, 3), float64"` using the new attributes, with `?` in place of
# the name for an unnamed variable (`"?: shape (4,), float32"`).

# %%
#| exercise
def describe(v):
    raise NotImplementedError("Exercise (step 20): return 'name: shape ..., dtype' for v")

# %%
#| solution
def describe(v):
    return f"{v.name or '?'}: shape {v.shape}, {v.dtype}"

# %%
#| check
named = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name="x")
assert describe(named) == "x: shape (2, 3), float64", (
    f"expected 'x: shape (2, 3), float64', got {describe(named)!r}"
)
got = describe(Variable(np.zeros(4, dtype=np.float32)))
assert got == "?: shape (4,), float32", (
    f"expected '?: shape (4,), float32' for an unnamed variable, got {got!r}"
)
print("self-check passed: describe shows the name (or ?), the shape and the dtype")
