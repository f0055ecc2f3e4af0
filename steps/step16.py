# %% [markdown]
# # Step 16: Complex graphs: why order matters
#
# So far our graphs were chains, or trees whose branches never meet again.
# Real computations are not that tidy: a result is used by several functions
# whose results meet again further on. The smallest such graph is a
# **diamond**:
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
            x.accumulate_grad(gx)
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
# The changes, marked `new`: the generation counters, and a backward loop that
# keeps its pending functions sorted by generation and queues each function
# only once (otherwise a function reached by two paths would run twice).

# %%
class Variable:
    """A box around a NumPy array that remembers the function that created it."""

    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.grad = None
        self.creator = None
        self.generation = 0  # new: leaves are generation 0

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1  # new: one more than its creator

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = self.grad + gx  # a NEW array: never write into one that may be shared

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = []  # new: kept sorted by generation, newest last
        seen = set()

        def add_func(f):
            if f not in seen:  # new: queue each function once
                funcs.append(f)
                seen.add(f)
                funcs.sort(key=lambda func: func.generation)

        add_func(self.creator)
        while funcs:
            f = funcs.pop()  # the function of the highest generation
            gys = [output.grad for output in f.outputs]
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.accumulate_grad(gx)
                if x.creator is not None:
                    add_func(x.creator)

def as_array(x):
    """NumPy turns 0-d results into scalars (np.float64); turn them back into arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class: ``forward`` works on arrays, ``__call__`` wraps them in Variables."""

    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        self.generation = max([x.generation for x in inputs])  # new
        outputs = [Variable(as_array(y)) for y in ys]
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs
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


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


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
# The stack ran the first `Square` (the one that made `a`) **twice**: once when
# `a`'s gradient held only the contribution of one path, and again after the
# second path arrived. The first run added a partial gradient to `x.grad`,
# which is why the result is $2x \cdot 2a + 2x \cdot 4a = 12x^3 = 96$ instead
# of $8x^3 = 64$.
#
# With generations, the two `Square`s of generation 1 run first, `a.grad` is
# complete ($4a$), and then the `Square` of generation 0 runs exactly once.
#
# Sorting the whole list every time a function is queued costs
# $O(n \log n)$ per insertion; step 17 replaces it with a priority queue.
#
# ## Exercise
# Build a longer graph where `x` is used along two paths of different length:
# $b = x^2$, $c = (b^2)^2$, $y = b + c$ (that is $y = x^2 + x^8$), and check the
# gradient $2x + 8x^7$ at $x = 1.5$.

# %%
x = Variable(np.array(1.5))
b = square(x)  # solution: replace these three lines
c = square(square(b))
y = add(b, c)
y.backward()
assert np.isclose(x.grad, 2 * 1.5 + 8 * 1.5**7), f"got {x.grad}"
print("self-check passed")
