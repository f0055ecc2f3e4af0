# %% [markdown]
# # Step 16: Complex graphs: why order matters
#
# So far our graphs were chains, or graphs in which only an input was used
# more than once (the `x + x` of step 14), and an input has no creator waiting
# for its gradient. Real computations are not that tidy: a result is used by
# several functions whose results meet again further on. The smallest such
# graph is a **diamond**:
#
# $$a = x^2, \qquad y = a^2 + a^2 .$$
#
# `a` feeds two `Square`s, and their results meet in `Add`. By hand
# $y = 2x^4$, so $dy/dx = 8x^3$, which is 64 at $x = 2$.
#
# The gradient of `a` arrives along two paths and must be complete (the sum of
# both) **before** the `Square` that made `a` uses it. Our loop so far takes the
# function it queued last (a stack). Nothing guarantees that both paths have
# delivered their part before `a`'s creator runs.

# %% [markdown]
# ## The step-15 framework gives the wrong answer
#
# Here is the step-15 loop as a function that also returns the order in which
# it ran the functions.

# %%
import numpy as np


def backward_stack_order(y):
    """The backward loop of steps 13-15 (a stack); returns the functions it ran."""
    y.grad = np.ones_like(y.data)
    ran = []
    funcs = [y.creator]
    while funcs:
        f = funcs.pop()
        ran.append(f)
        gxs = f.backward(*[output.grad for output in f.outputs])
        if not isinstance(gxs, tuple):
            gxs = (gxs,)
        for x, gx in zip(f.inputs, gxs):
            x.accumulate_grad(as_array(gx))
            if x.creator is not None:
                funcs.append(x.creator)
    return ran


# %% [markdown]
# ## Generations
#
# Give every variable and function a **generation**, its depth in the graph:
# a leaf is generation 0, a function takes the largest generation of its
# inputs, and its outputs are one more. A function that reads a variable
# therefore always has a generation **at least as large** as that variable,
# which is strictly larger than the variable's creator. So if backward always
# runs the pending function of the **highest** generation, every function that
# consumes an output of `f` has run before `f`: the gradients of `f`'s outputs
# are complete when `f` needs them.
#
# The changes: the generation counters in `Variable` (and `Function` below),
# and a backward loop that keeps its pending functions sorted by generation
# and queues each function only once (otherwise a function reached by two
# paths would run twice).

# %%
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
        self.generation = 0  # depth in the graph: inputs are generation 0

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

    def backward(self):
        """Fill in the grad of every variable this one was computed from (with a loop)."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = []  # still to visit, sorted by generation (highest last)
        seen = set()  # the functions queued so far

        def add_func(f):
            if f not in seen:  # queue each function once
                funcs.append(f)
                seen.add(f)
                funcs.sort(key=lambda func: func.generation)

        if self.creator is not None:
            add_func(self.creator)
        while funcs:
            f = funcs.pop()  # 1. the next function to process: the highest generation
            gys = [output.grad for output in f.outputs]  # 2. the grads of all its outputs
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


# %% [markdown]
# `Function.__call__` gives the function the generation of its deepest input,
# before `set_creator` makes each output one generation more.

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
        self.generation = max(var.generation for var in inputs)  # the deepest input
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
# ## The diamond, both ways

# %%
x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
ran = backward_stack_order(y)
print("stack order:      ", [type(f).__name__ + f"(gen {f.generation})" for f in ran])
print("stack order:       x.grad =", x.grad, " (wrong)")

x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
y.backward()
print("generation order:  x.grad =", x.grad, " (8 x^3 =", 8 * x.data**3, ")")
print("generations: x", x.generation, "| a", a.generation, "| y", y.generation,
      "| a.creator", a.creator.generation, "| y.creator", y.creator.generation)

# %% [markdown]
# Here is the diamond as a graph, with each variable's generation in its name.
# A function takes the generation of its deepest input, the ellipse just above
# its box. Backward works from the bottom up, highest generation first: both
# `Square`s of generation 1 run before the `Square` that made `a`. By then
# `a`'s gradient is complete: 16, the sum of what the two paths sent.
# (The drawing code comes from the package, ahead of step 26, as in step 07.)

# %%
from dezero_like.graph import plot_dot_graph  # reads only creator, inputs, outputs, data, grad
from dezero_like.plot import output_dir, written  # where files go; says where they went

x = Variable(np.array(2.0))
a = square(x)
b, c = square(a), square(a)
y = add(b, c)
y.backward()
for v, name in ((x, "x"), (a, "a"), (b, "b"), (c, "c"), (y, "y")):
    v.name = f"{name}: generation {v.generation}"  # the drawing writes a variable's name
image = written(plot_dot_graph(y, values=True, to_file=output_dir(16) / "generations.svg"))
image

# %% [markdown]
# Both orders as animations. Each frame highlights the function whose backward
# is about to run and writes into every variable the gradient known at that
# moment (`-`: none yet). In stack order the `Square` that made `a` runs while
# `a`'s gradient is still 8 (one path's share), and then again; in generation
# order it waits until `a`'s gradient is complete (16) and runs once.

# %%
from dezero_like.animate import record_backward  # works on this step's own classes
from dezero_like.plot import output_dir  # outputs/stepNN under the current directory

x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
stack_movie = record_backward(y, backward=lambda: backward_stack_order(y))
print("stack order:     ", stack_movie, " x.grad =", x.grad)
print("saved to", stack_movie.save(output_dir(16) / "stack_order.gif"))
stack_movie

# %%
x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
generation_movie = record_backward(y)
print("generation order:", generation_movie, " x.grad =", x.grad)
print("saved to", generation_movie.save(output_dir(16) / "generation_order.gif"))
generation_movie

# %% [markdown]
# The stack ran the first `Square` (the one that made `a`) **twice**: once when
# `a`'s gradient held only the contribution of one path, and again after the
# second path arrived. The first run added a partial gradient to `x.grad`,
# which is why the result is $2x \cdot 2a + 2x \cdot 4a = 12x^3 = 96$ instead
# of $8x^3 = 64$.
#
# With generations, the two `Square`s of generation 1 run first, `a.grad` is
# complete ($4a$), and then the `Square` of generation 0 runs exactly once.
# The gradient checker agrees on the diamond, for arrays too:

# %%
rng = np.random.default_rng(0)
print("gradient check:", gradient_check(lambda v: add(square(square(v)), square(square(v))),
                                        rng.standard_normal((2, 3))))

# %% [markdown]
# ## The general idea: a topological order
#
# What the generations buy us has a name in graph theory: a **topological
# order** of the graph, one in which every function comes after all the
# functions that use its outputs (reading the arrows backwards). Any such order
# gives correct gradients; generations are one cheap way to produce one while
# walking, because a function's generation is larger than that of every input
# it was computed from.
#
# Another common way is a **depth-first search** over the whole graph before
# backward starts. micrograd (Andrej Karpathy, 2020) does this in its
# `build_topo`: visit a node's inputs first, append the node after them, then
# walk the list in reverse. Our own version of that idea, on the diamond:

# %%
def dfs_order(y):
    """Functions in reverse post-order of a depth-first search from y: a topological order."""
    order, visited = [], set()

    def visit(f):
        if f is not None and f not in visited:
            visited.add(f)
            for x in f.inputs:
                visit(x.creator)  # everything f was computed from goes first
            order.append(f)

    visit(y.creator)
    return order[::-1]  # the function that made y first


x = Variable(np.array(2.0))
a = square(x)
y = add(square(a), square(a))
print("DFS order:", [(type(f).__name__, f.generation) for f in dfs_order(y)])

# %% [markdown]
# The generations in that list never increase: the DFS found a valid order
# too. The two approaches differ in cost and limits. The DFS needs no
# numbers stored during forward but walks the whole graph once before backward
# and, written recursively as above, nests one Python call per level of the
# graph, so a long chain hits Python's recursion limit (step 08: 1000 in
# plain Python, 3000 in a Jupyter kernel; `sys.getrecursionlimit()` tells).
# The chain below is twice that long. The generation loop keeps no call stack
# at all:

# %%
import sys  # noqa: E402

x = Variable(np.array(1.0))
zero = Variable(np.array(0.0))
y = x
for _ in range(2 * sys.getrecursionlimit()):
    y = add(y, zero)  # y = x + 0 + 0 + ..., so dy/dx = 1
try:
    dfs_order(y)
except RecursionError:
    print(f"DFS over a chain of {2 * sys.getrecursionlimit()} functions: RecursionError")
y.backward()
print("generation-ordered backward on the same chain: x.grad =", x.grad, "(expected 1.0)")

# %% [markdown]
# Our queue has a cost of its own: it re-sorts the list every time a function
# is queued. A general sort of $n$ items costs $O(n \log n)$; Python's sort
# (Timsort) notices that the list was already sorted except for the new item
# and needs only $O(n)$ time for it, but that is still more than necessary.
# Step 17 replaces the list with a priority queue, $O(\log n)$ per insertion.
#
# ## Exercise
# Build a longer graph where `x` is used along two paths of different length:
# $b = x^2$, $c = (b^2)^2$, $y = b + c$ (that is $y = x^2 + x^8$), run backward,
# and check the gradient $2x + 8x^7$ at $x = 1.5$.

# %%
#| exercise
x = Variable(np.array(1.5))
b = ...  # x^2
c = ...  # (b^2)^2, with two squares
y = ...  # b + c; then call y.backward()

# %%
#| solution
x = Variable(np.array(1.5))
b = square(x)
c = square(square(b))
y = add(b, c)
y.backward()

# %%
#| check
assert y is not ..., "replace the ... in `b = ...`, `c = ...` and `y = ...` with square and add"
assert isinstance(y, Variable), f"y should be the Variable add returns, got {type(y).__name__}"
assert np.isclose(y.data, 1.5**2 + 1.5**8), f"y should be x^2 + x^8 = {1.5**2 + 1.5**8}"
assert c.creator.inputs[0].creator.inputs[0] is b, (
    "c should be built from b, c = square(square(b)): then b is used twice, by c and by y, "
    "and backward must wait for both"
)
assert x.grad is not None, "x.grad is None: call y.backward()"
assert np.isclose(x.grad, 2 * 1.5 + 8 * 1.5**7), (
    f"expected 2x + 8x^7 = {2 * 1.5 + 8 * 1.5**7}, got {x.grad} "
    "(re-run your cell, which makes a fresh x, before the check)"
)
print("self-check passed: the two paths of different length add up to 2x + 8x^7")
