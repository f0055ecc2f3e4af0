# %% [markdown]
# # Step 15: The in-place pitfall
#
# In step 14 we accumulated gradients with `x.grad + gx`. Why not the shorter
# `x.grad += gx`? For NumPy arrays the two are **not** the same:
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
# as it is, so now `x.grad is y.grad`. When the second gradient arrives:
#
# * `x.grad + gx` builds a new array for `x.grad`; `y.grad` keeps 1;
# * `x.grad += gx` adds into the array that `y.grad` also is, so the output's
#   gradient silently becomes 2.
#
# Our variables keep their gradients after backward (intermediate ones too, for
# now), so the corruption is visible to anyone who reads `y.grad` later, and an
# in-place change there would leak into `x.grad` as well.
#
# To compare both rules in one framework, step 15 moves the accumulation into a
# method, `Variable.accumulate_grad`, which the backward loop calls. That is
# the only change to the framework.

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

    def set_creator(self, func):
        self.creator = func

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
                x.accumulate_grad(as_array(gx))  # one method decides how gradients add up
                if x.creator is not None:
                    funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `Function` and the functions are unchanged from step 14.

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
# Watch it happen. `record_backward` (from the package's `dezero_like.animate`)
# runs the backward pass and takes a picture each time a function's backward
# starts, plus one at the end, copying every gradient known at that moment.
# In the first frame `Add` is about to run and `y`'s gradient is 1; in the
# last, `y`'s gradient reads 2, although no function ever computed a new one for `y`:
# the `+=` wrote into the array that `y.grad` is.

# %%
from dezero_like.animate import record_backward  # works on this step's own classes
from dezero_like.plot import output_dir  # outputs/stepNN under the current directory

x = InplaceVariable(np.array(3.0))
y = add(x, x)
movie = record_backward(y)
print(movie, "| y.grad in each frame:", [float(g) for g in movie.gradients(y)])
print("animation saved to", movie.save(output_dir(15) / "inplace_bug.gif"))
movie

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
# Both rules side by side, on the same graph $y = x + x$ at $x = 3$. The dashed
# lines mark the true gradients, 1 for `y` and 2 for `x`. Look at the left pair:
# the red bar, `y.grad` under `+=`, stands at 2, above its line. `x.grad` is right
# under both rules.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import save_figure  # a drawing helper of the package, used ahead of time

rules = {"naive: x.grad += gx": InplaceVariable, "fixed: x.grad = x.grad + gx": Variable}
grads = {}
for rule, leaf_class in rules.items():
    leaf = leaf_class(np.array(3.0))
    out = add(leaf, leaf)
    out.backward()
    grads[rule] = [float(out.grad), float(leaf.grad)]

fig, ax = plt.subplots(figsize=(6, 3.2))
for k, (rule, values) in enumerate(grads.items()):
    bars = ax.bar(np.arange(2) + 0.2 * (2 * k - 1), values, width=0.4, label=rule,
                  color=["#e66", "#6a6"][k])
    ax.bar_label(bars, fmt="%g")
for i, true in enumerate([1.0, 2.0]):  # dy/dy = 1 and dy/dx = 2
    ax.hlines(true, i - 0.45, i + 0.45, colors="k", linestyles="--")
ax.set_xticks([0, 1], ["y.grad (true: 1)", "x.grad (true: 2)"])
ax.set(ylabel="gradient after y.backward()", ylim=(0, 3.3),
       title="y = add(x, x): the in-place += corrupts y.grad")
ax.legend(loc="upper center")
figure_path = save_figure(fig, output_dir(15) / "inplace_vs_fixed.png")
plt.show()

# %% [markdown]
# The fixed rule does not forbid sharing: with a single path, `x.grad` may still
# be the very array `y.grad` is (`add(x, c)` gives `x.grad is y.grad`). That is
# harmless as long as nobody writes into gradients in place, so the rule for the
# rest of the framework is: **gradients are never modified in place**; every
# update makes a new array. (PyTorch keeps the first gradient as `.grad` only when
# nothing else refers to it, and copies it otherwise; later gradients are then added
# into `.grad` in place, so `g = x.grad` taken after one backward changes with the next:
# see `AccumulateGrad` in torch/csrc/autograd/functions/accumulate_grad.h. That
# bookkeeping is what our rule avoids.)
#
# ## Exercise
# Another in-place trap: a `Function` whose `backward` modifies `gy`. Finish
# `Double`, $y = 2x$, whose backward returns its gradient as a new array rather
# than doing `gy *= 2`. The self-check checks that `y.grad` stays 1 after backward.

# %%
#| exercise
class Double(Function):
    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 15): return dy/dx times gy as a new array")

# %%
#| solution
class Double(Function):
    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return gy * 2  # a new array, gy itself is left alone

# %%
#| check
x = Variable(np.array(5.0))
y = Double()(x)
y.backward()
assert x.grad == 2.0, f"dy/dx should be 2, got {x.grad}"
assert y.grad == 1.0, f"backward must not change the output's gradient, y.grad is now {y.grad}"
x_chain = Variable(np.array(5.0))
square(Double()(x_chain)).backward()  # now Double.backward receives gy = 2 * 2x = 20, not 1
assert x_chain.grad == 40.0, (
    f"d/dx (2x)^2 = 8x = 40 at x = 5, got {x_chain.grad}: multiply gy by 2, do not replace it"
)
print("self-check passed: Double's backward leaves y.grad at 1")
