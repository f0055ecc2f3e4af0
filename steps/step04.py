# %% [markdown]
# # Step 04: Numerical differentiation
#
# Training a model means nudging its parameters downhill, and for that we
# need derivatives. The derivative of $f$ at $x$ is the slope of $f$ there:
#
# $$f'(x) = \lim_{h \to 0} \frac{f(x + h) - f(x)}{h}$$
#
# A computer cannot take the limit, but it can pick a small $h$ (we call it
# `eps`) and evaluate the fraction. That is *numerical differentiation*.
# Measuring the slope with one point on each side of $x$, the **central
# difference**
#
# $$f'(x) \approx \frac{f(x + \varepsilon) - f(x - \varepsilon)}{2\varepsilon}$$
#
# is much more accurate than the one-sided (forward) difference: a Taylor
# expansion shows that its error shrinks like $\varepsilon^2$ instead of
# $\varepsilon$, because the $f''$ terms of the two sides cancel.
#
# Numerical differentiation is easy to write and works for any function, so
# it will stay with us as the *reference* we test real gradients against.
# This step also shows its two weaknesses: limited accuracy and a cost that
# grows with the number of inputs.

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


# %% [markdown]
# `Function`, `Square` and `Exp` are unchanged from step 03.

# %%
class Function:
    """Base class of every function: a Variable in, a new Variable out.

    Subclasses implement ``forward``, which receives and returns plain arrays.
    """

    def __call__(self, var):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{type(self).__name__} takes a Variable, got {type(var).__name__}; "
                "wrap the array with Variable(...) first"
            )
        x = var.data  # take the array out of the box
        y = self.forward(x)  # compute on plain arrays
        return Variable(y)  # put the result into a new box

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x)")


class Square(Function):
    """y = x ** 2, element by element."""

    def forward(self, x):
        return x**2


class Exp(Function):
    """y = e ** x, element by element."""

    def forward(self, x):
        return np.exp(x)


# %% [markdown]
# The central difference takes a function `f` (a `Variable` in, a `Variable`
# out) and a `Variable` `x`. It nudges every element of `x` by the same
# `eps`, which gives each element's own derivative as long as `f` works
# element by element, as `Square` and `Exp` do.

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
# For $y = x^2$ the derivative is $2x$, so at $x = 2$ we expect 4. (For a
# quadratic the central difference is exact up to rounding: the error term
# needs a third derivative, and that of $x^2$ is zero.)

# %%
x = Variable(np.array([2.0]))
print("d(x^2)/dx at 2:", numerical_diff(Square(), x))

# %% [markdown]
# The derivative of a composition works the same way: `f` can be any Python
# function that maps a `Variable` to a `Variable`. Take the chain of step 03,
# $y = \exp(e^{2x})$. By hand, its derivative is
# $y' = 2e^{2x}\exp(e^{2x})$, which at $x = 0.5$ is $2e \cdot e^{e} \approx 82.39$.

# %%
def f(x):
    return Exp()(Square()(Exp()(x)))


def f_prime(x):
    """The derivative of f, worked out by hand."""
    return 2 * np.exp(2 * x) * np.exp(np.exp(2 * x))


x = Variable(np.array([0.5]))
numerical = numerical_diff(f, x)
exact = f_prime(x.data)
print("numerical:", numerical, " by hand:", exact)
print(f"relative error: {abs(numerical - exact)[0] / exact[0]:.1e}")

# %% [markdown]
# ### How accurate is it?
#
# Two errors fight each other. A large `eps` measures the slope of a chord,
# not of the tangent (the *truncation* error: about $\varepsilon$ for the
# forward difference, $\varepsilon^2$ for the central one). A tiny `eps`
# subtracts two nearly equal numbers, and the rounding error of float64
# (about $10^{-16}$ relative) is divided by $\varepsilon$. The table shows
# both, for $f$ above at $x = 0.5$:

# %%
def forward_diff(f, x, eps=1e-4):
    """The one-sided difference (f(x + eps) - f(x)) / eps, for comparison."""
    return (f(Variable(np.asarray(x.data + eps))).data - f(x).data) / eps


epsilons = [10.0**-k for k in range(1, 12)]
central_errors, forward_errors = [], []
print(f"{'eps':>7} {'forward error':>14} {'central error':>14}")
for eps in epsilons:
    central_errors.append(abs(numerical_diff(f, x, eps) - exact)[0] / exact[0])
    forward_errors.append(abs(forward_diff(f, x, eps) - exact)[0] / exact[0])
    print(f"{eps:7.0e} {forward_errors[-1]:14.1e} {central_errors[-1]:14.1e}")

# %% [markdown]
# On a log-log plot the truncation error is a straight line (slope 1 for the
# forward difference, slope 2 for the central one) until rounding error
# makes the curves turn back up. The default `eps=1e-4` sits on the clean
# part of the central curve: about seven correct digits here, and more for
# gentler functions.

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure  # the course's drawing helpers

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.loglog(epsilons, forward_errors, "o-", label="forward difference")
ax.loglog(epsilons, central_errors, "s-", label="central difference")
ax.set_xlabel("eps")
ax.set_ylabel("relative error")
ax.set_title("Numerical derivative of exp(exp(2x)) at x = 0.5")
ax.legend()
save_figure(fig, output_dir(4) / "eps_errors.png")
plt.show()

# %% [markdown]
# ### How expensive is it?
#
# One derivative costs two evaluations of `f`. A model, though, has many
# parameters, and its loss mixes all of them, so each parameter has to be
# nudged on its own: $2n$ evaluations of the whole model for $n$ parameters.
# Count them for the loss $L(w) = \sum_i \exp(e^{2 w_i})$:

# %%
import time


def loss(w):
    return float(f(w).data.sum())


def numerical_gradient(loss, w, eps=1e-4):
    """dL/dw_i for every i, nudging one element at a time; also counts evaluations."""
    grad = np.zeros_like(w.data)
    calls = 0
    for i in range(w.data.size):
        plus, minus = w.data.copy(), w.data.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (loss(Variable(plus)) - loss(Variable(minus))) / (2 * eps)
        calls += 2
    return grad, calls


for n in (10, 100, 1000, 3000):
    w = Variable(np.linspace(-1.0, 0.5, n))
    start = time.perf_counter()
    grad, calls = numerical_gradient(loss, w)
    seconds = time.perf_counter() - start
    print(f"n = {n:5d} parameters: {calls:5d} evaluations of the loss, {seconds:.3f} s")

# %% [markdown]
# The work grows with the number of parameters times the cost of one
# evaluation, which itself grows with the model. Even a small network has
# $10^5$ parameters, so one numerical gradient would take $2 \times 10^5$
# forward passes. Backpropagation (steps 05–08) gets **all** the derivatives
# for about the cost of one forward and one backward pass, and it is exact
# up to rounding. Numerical differentiation stays as its test.

# %% [markdown]
# ## Exercise
# Use `numerical_diff` to estimate the derivative of $e^x$ at $x = 1$ (the
# answer is $e$) and store it in `slope`.

# %%
#| exercise
x = Variable(np.array([1.0]))
slope = ...  # numerical_diff of an Exp function at x

# %%
#| solution
x = Variable(np.array([1.0]))
slope = numerical_diff(Exp(), x)

# %%
#| check
assert slope is not ..., "replace the ... in `slope = ...` with a call of numerical_diff"
assert isinstance(slope, np.ndarray) and slope.shape == (1,), (
    f"slope should be the array numerical_diff returns (shape (1,)), got {slope!r}"
)
assert abs(slope[0] - np.e) < 1e-7, (
    f"expected about e = {np.e}, got {slope[0]}: pass an Exp() and x to numerical_diff"
)
print("self-check passed: the numerical slope of exp at 1 is e to 7 decimals")

# %% [markdown]
# ## Open experiment: what happens in float32?
# Deep learning often computes in float32, which keeps about 7 significant
# digits instead of 16. What happens to the central difference if $x$ is a
# float32 array? Guess first: is `eps=1e-4` still a good choice, and which
# `eps` is best now? The table repeats the accuracy study above for
# $f(x) = \exp(e^{2x})$ at $x = 0.5$ in both precisions.

# %%
print(f"{'eps':>7} {'float64 error':>14} {'float32 error':>14}")
for eps in [10.0**-k for k in range(1, 8)]:
    errors = []
    for dtype in (np.float64, np.float32):
        x_typed = Variable(np.array([0.5], dtype=dtype))
        estimate = numerical_diff(f, x_typed, eps)
        errors.append(abs(float(estimate[0]) - exact[0]) / exact[0])
    print(f"{eps:7.0e} {errors[0]:14.1e} {errors[1]:14.1e}")

# %% [markdown]
# In float32 the rounding error is about $10^{-7} / \varepsilon$ instead of
# $10^{-16} / \varepsilon$, so it takes over much sooner. The best `eps` is
# now near $10^{-3}$, with about five correct digits instead of ten. At the
# default `1e-4` the float32 error is already a thousand times the float64
# one, and below that the two values $f(x \pm \varepsilon)$ differ mostly by
# rounding noise. This is why the package's gradient checker
# (`utils.gradient_check`, from step 23) computes in float64 whatever its input's dtype:
# float32 and float16 input is converted before the first difference is taken.
# Try a gentler function, such as `Square()`, and see how the best `eps`
# moves.
