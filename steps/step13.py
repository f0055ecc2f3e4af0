# %% [markdown]
# # Step 13: Backpropagation with several inputs
#
# Since step 11 a `Function` can take several inputs and return several
# outputs, and since step 12 we call it naturally: `add(x0, x1)`. The forward
# direction is done. The backward direction is not: `Variable.backward` still
# walks a chain of one-input, one-output functions.
#
# The chain rule tells us what to do when a function has several inputs. For
# $y = f(x_0, x_1)$ and a final result $L$,
#
# $$\frac{\partial L}{\partial x_0} = \frac{\partial L}{\partial y}
# \frac{\partial y}{\partial x_0},
# \qquad
# \frac{\partial L}{\partial x_1} = \frac{\partial L}{\partial y}
# \frac{\partial y}{\partial x_1}.$$
#
# So a function's `backward` receives one gradient per **output** and returns
# one gradient per **input**. For addition, $\partial y/\partial x_0 =
# \partial y/\partial x_1 = 1$: the gradient is passed unchanged to both inputs.
#
# The backward loop then has to do three things for each function it visits:
# collect the gradients of all outputs, call `backward`, and hand each returned
# gradient to the matching input (and queue that input's creator).
#
# ## The framework, with a backward loop for many inputs
#
# The code is step 12's. In `Variable.backward`, steps 2 and 3 of the loop
# now gather the gradients of *all* outputs and get back one gradient per
# input, which the loop hands to `f.inputs` one by one.

# %%
import numpy as np


class Variable:
    """A box around a NumPy array."""

    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.grad = None  # dy/d(this variable), filled in by backprop
        self.creator = None  # the Function that made this variable (None for inputs)

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        """Fill in the grad of every variable this one was computed from (with a loop)."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = [self.creator] if self.creator is not None else []  # still to visit
        while funcs:
            f = funcs.pop()  # 1. the next function to process
            gys = [output.grad for output in f.outputs]  # 2. the grads of all its outputs
            gxs = f.backward(*gys)  # 3. one step of the chain rule: one grad per input
            if not isinstance(gxs, tuple):
                gxs = (gxs,)  # a single gradient may be returned without a tuple
            if len(gxs) != len(f.inputs):  # zip would drop the unpaired ones silently
                raise RuntimeError(f"{type(f).__name__}.backward returned {len(gxs)} "
                                   f"gradients for {len(f.inputs)} inputs: return one "
                                   "per input, in the order forward takes them")
            for x, gx in zip(f.inputs, gxs):  # each input gets its own gradient
                x.grad = as_array(gx)
                if x.creator is not None:
                    funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `Function` is step 12's, except that its `backward` now receives one
# gradient per output, `backward(*gys)`. `Add` finally gets its backward:
# $\partial y/\partial x_0 = \partial y/\partial x_1 = 1$, so the gradient
# goes unchanged to both inputs, returned as a tuple.

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
        for output in outputs:
            output.set_creator(self)  # each output remembers where it came from
        self.inputs = inputs  # remembered for backward
        self.outputs = outputs
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
# ## $z = x^2 + y^2$
#
# By hand: $\partial z/\partial x = 2x$ and $\partial z/\partial y = 2y$, so at
# $x = 2, y = 3$ we expect the gradients 4 and 6. The graph has three functions:
# two `Square`s feeding one `Add`. The loop visits `Add` first, which hands the
# gradient 1 to both of its inputs, then each `Square`.

# %%
x = Variable(np.array(2.0))
y = Variable(np.array(3.0))
z = add(square(x), square(y))
z.backward()
print("z =", z.data)
print("x.grad =", x.grad, " (2x =", 2 * x.data, ")")
print("y.grad =", y.grad, " (2y =", 2 * y.data, ")")

# %% [markdown]
# Drawn, the graph shows the two branches that meet in `Add`: each input's
# gradient arrived along its own branch.

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

image = written(plot_dot_graph(z, values=True, to_file=output_dir(13) / "x2_plus_y2.svg"))
image

# %% [markdown]
# ## Checking against numerical differentiation
#
# A hand derivation can be wrong too, so we also compare with central
# differences, one input at a time (the other is held fixed). Arrays work the
# same way as scalars: every element has its own gradient. Every function here
# works element by element, so `numerical_diff`, which nudges all elements at
# once, gives each element's derivative; `gradient_check` nudges one element at
# a time and would catch a function that mixes elements.

# %%
a = Variable(np.array([1.0, -0.5, 2.0]))
b = Variable(np.array([0.3, 4.0, -1.0]))
c = add(square(a), exp(b))
c.backward()
num_a = numerical_diff(lambda v: add(square(v), exp(b)), a)
num_b = numerical_diff(lambda v: add(square(a), exp(v)), b)
print("a.grad:", a.grad, " numerical:", num_a)
print("b.grad:", b.grad, " numerical:", num_b)
print("agree:", np.allclose(a.grad, num_a) and np.allclose(b.grad, num_b))
print("gradient checks:", gradient_check(lambda v: add(square(v), exp(b)), a.data),
      gradient_check(lambda v: add(square(a), exp(v)), b.data))

# %% [markdown]
# This loop assigns `x.grad = ...`. That is fine as long as every variable is
# used once. Step 14 shows what goes wrong when the same variable enters a
# graph twice.
#
# ## Exercise
# Write `three_sum(x0, x1, x2)`, the sum of three variables, using only `add`.
# The self-check adds 1, 2 and 3 and checks that backward gives every input
# the gradient 1.

# %%
#| exercise
def three_sum(x0, x1, x2):
    raise NotImplementedError("Exercise (step 13): return x0 + x1 + x2, built with add only")

# %%
#| solution
def three_sum(x0, x1, x2):
    return add(add(x0, x1), x2)

# %%
#| check
p, q, r = Variable(np.array(1.0)), Variable(np.array(2.0)), Variable(np.array(3.0))
s = three_sum(p, q, r)
assert isinstance(s, Variable), f"three_sum should return a Variable, got {type(s).__name__}"
assert s.data == 6.0, f"three_sum(1, 2, 3) should be 6, got {s.data}"
s.backward()
assert p.grad == q.grad == r.grad == 1.0, (
    f"each input of a sum gets the gradient 1, got {p.grad}, {q.grad}, {r.grad}: "
    "was every input used exactly once?"
)
print("self-check passed: three_sum adds three variables and each gets the gradient 1")
