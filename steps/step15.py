# %% [markdown]
# # Step 15: The in-place pitfall
#
# In step 14 we accumulated gradients with `x.grad = x.grad + gx`. Why not the
# shorter `x.grad += gx`? For NumPy arrays the two are **not** the same:
#
# * `a = a + b` computes a new array and rebinds the name `a` to it;
# * `a += b` writes the result into the array `a` already refers to (in place).
#
# In-place is faster and saves memory, so it is tempting. But it changes every
# name that refers to that array, and in a backward pass arrays are shared more
# often than you would think.

# %%
import numpy as np

a = np.array(1.0)
b = a  # a second name for the same array
b = b + 1.0  # a new array: `a` is untouched
print("after b = b + 1: a =", a, ", b =", b)

b = a
b += 1.0  # writes into the shared array: `a` changes too
print("after b += 1:    a =", a, ", b =", b)

# %% [markdown]
# ## Where the sharing comes from
#
# `Add.backward` returns `gy, gy`: the *same* array object, which is also the
# output's `y.grad`. The first time a gradient reaches `x`, the loop stores it
# as it is (`x.grad = gx`), so now `x.grad is y.grad`. When the second gradient
# arrives:
#
# * `x.grad = x.grad + gx` builds a new array for `x.grad`; `y.grad` keeps 1;
# * `x.grad += gx` adds into the array that `y.grad` also is, so the output's
#   gradient silently becomes 2.
#
# Our variables keep their gradients after backward (intermediate ones too, for
# now), so the corruption is visible to anyone who reads `y.grad` later, and an
# in-place change there would leak into `x.grad` as well.
#
# To compare both rules in one framework, step 15 moves the accumulation into a
# method, `Variable.accumulate_grad`, which the backward loop calls (the only
# change to the framework, marked `new`).

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

    def set_creator(self, func):
        self.creator = func

    def cleargrad(self):
        """Forget the gradient, so the next backward starts from zero."""
        self.grad = None

    def accumulate_grad(self, gx):  # new
        """Add the gradient gx that arrived along one more path."""
        if self.grad is None:
            self.grad = gx
        else:
            self.grad = self.grad + gx  # a NEW array: never write into one that may be shared

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            gys = [output.grad for output in f.outputs]
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.accumulate_grad(gx)  # new: one place decides how gradients add up
                if x.creator is not None:
                    funcs.append(x.creator)


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
# ## The naive version
#
# `InplaceVariable` is a `Variable` whose `accumulate_grad` uses `+=`. Only the
# leaf `x` is of this class, which is all it takes.


# %%
class InplaceVariable(Variable):
    """A Variable that accumulates gradients in place: the bug this step is about."""

    def accumulate_grad(self, gx):
        if self.grad is None:
            self.grad = gx
        else:
            self.grad += gx  # writes into an array someone else may hold


x = InplaceVariable(np.array(3.0))
y = add(x, x)
y.backward()
print("naive  x.grad += gx:       y.grad =", y.grad, " x.grad =", x.grad,
      " same array:", y.grad is x.grad)

# %% [markdown]
# `x.grad` is right (2) but `y.grad` is wrong: the gradient of $y$ with respect
# to itself is 1, always. Now the fixed rule:

# %%
x = Variable(np.array(3.0))
y = add(x, x)
y.backward()
print("fixed  x.grad = x.grad + gx: y.grad =", y.grad, " x.grad =", x.grad,
      " same array:", y.grad is x.grad)

# %% [markdown]
# The fixed rule does not forbid sharing: with a single path, `x.grad` may still
# be the very array `y.grad` is (`add(x, c)` gives `x.grad is y.grad`). That is
# harmless as long as nobody writes into gradients in place, so the rule for the
# rest of the framework is: **gradients are never modified in place**; every
# update makes a new array. (Industrial frameworks do accumulate in place for
# speed, and they pay for it with extra bookkeeping; step 64 returns to this.)
#
# ## Exercise
# Another in-place trap: a `Function` whose `backward` modifies `gy`. Write
# `Double`, $y = 2x$, whose backward returns `gy * 2` (a new array) rather than
# doing `gy *= 2`, and check that `y.grad` stays 1 after backward.


# %%
class Double(Function):
    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return gy * 2  # solution: a new array, gy itself is left alone


x = Variable(np.array(5.0))
y = Double()(x)
y.backward()
assert x.grad == 2.0, f"dy/dx should be 2, got {x.grad}"
assert y.grad == 1.0, "backward must not change the output's gradient"
print("self-check passed")
