# %% [markdown]
# # Step 27: The Taylor series of sin, and its graph
#
# `F.sin` is a single function with a hand-written derivative. But we could
# also build $\sin$ from nothing but `+`, `*`, `/` and `**`, using its Taylor
# series around 0 (the Maclaurin series):
#
# $$\sin x = \sum_{i=0}^{\infty} (-1)^i \frac{x^{2i+1}}{(2i+1)!}
# = x - \frac{x^3}{3!} + \frac{x^5}{5!} - \cdots$$
#
# We cannot add infinitely many terms, so we stop when the next term is smaller
# than a `threshold`. Every term is made of our differentiable operators, so the
# framework can differentiate the sum automatically. The price is the graph: a
# tighter threshold adds terms, and every term adds nodes. This step measures
# both the accuracy and the size of the graph.

# %%
import math

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, written
from dezero_like.utils import get_dot_graph, plot_dot_graph

out_dir = output_dir(27)  # every file this step writes goes here


def my_sin(x, threshold=1e-4):
    """sin(x) from its Taylor series, stopping when a term falls below ``threshold``."""
    y = 0
    for i in range(100000):
        c = (-1) ** i / math.factorial(2 * i + 1)
        t = c * x ** (2 * i + 1)
        y = y + t
        if abs(t.data) < threshold:
            break
    return y


# %% [markdown]
# At $x = \pi/4$ the series and `F.sin` agree well within the threshold (the
# error is about the first omitted term, $x^9/9! \approx 3 \cdot 10^{-7}$), and so
# do their derivatives ($\cos$), which backward computed through every term:

# %%
x = dz.Variable(np.array(np.pi / 4), name="x")
y = my_sin(x)
y.backward()
print(f"my_sin(pi/4) = {y.data:.10f}   np.sin = {np.sin(np.pi / 4):.10f}")
print(f"d/dx         = {x.grad.data:.10f}   np.cos = {np.cos(np.pi / 4):.10f}")

# %% [markdown]
# ## Accuracy against graph size
#
# For each threshold we count how many functions the graph contains (the boxes
# in its DOT text) and how far the value is from `np.sin`:

# %%
def count_functions(v):
    return sum(1 for line in get_dot_graph(v, verbose=False).splitlines() if "shape=box" in line)


x_far = 2.0  # farther from 0, so more terms are needed
rows = []
for threshold in [1e-1, 1e-4, 1e-8, 1e-150]:
    v = my_sin(dz.Variable(np.array(x_far)), threshold)
    rows.append((threshold, count_functions(v), abs(v.data - np.sin(x_far))))
print(f"{'threshold':>10} {'functions':>10} {'|error|':>10}")
for threshold, n, err in rows:
    print(f"{threshold:>10.0e} {n:>10d} {err:>10.2e}")
print(f"{'F.sin':>10} {count_functions(F.sin(dz.Variable(np.array(x_far)))):>10d}")

# %% [markdown]
# The error falls fast (the factorial in the denominator wins), but the graph
# grows linearly with the number of terms, and stops improving once the terms
# are below float64's precision. A built-in `F.sin` is one node with an exact
# derivative: this is why frameworks provide elementary functions instead of
# composing everything from arithmetic.
#
# Here is the graph of the series with threshold 1e-4 (four terms):

# %%
y.name = "y"
written(plot_dot_graph(y, verbose=False, to_file=out_dir / "taylor_sin.png"))

# %% [markdown]
# ## Exercise
# Write `my_cos(x, threshold=1e-4)` with the series
# $\cos x = \sum_i (-1)^i x^{2i} / (2i)!$, stopping like `my_sin` once a term
# is smaller than `threshold`. The self-check compares it with the package's
# `F.cos` at $x = 1$ (error below 1e-4), checks its derivative against
# $-\sin 1$, and runs `dz.utils.gradient_check` on it.

# %%
#| exercise
def my_cos(x, threshold=1e-4):
    raise NotImplementedError("Exercise (step 27): the cos series, summed term by term as "
                              "my_sin sums the sin series")

# %%
#| solution
def my_cos(x, threshold=1e-4):
    y = 0
    for i in range(100000):
        t = (-1) ** i / math.factorial(2 * i) * x ** (2 * i)
        y = y + t
        if abs(t.data) < threshold:
            break
    return y

# %%
#| check
xc = dz.Variable(np.array(1.0))
try:
    yc = my_cos(xc)
except NotImplementedError as e:
    raise AssertionError(f"my_cos is not written yet: {e}") from None
assert isinstance(yc, dz.Variable), f"my_cos should return a Variable, got {type(yc).__name__}"
reference = F.cos(dz.Variable(np.array(1.0))).data
assert abs(yc.data - reference) < 1e-4, (
    f"my_cos(1) = {yc.data}, F.cos(1) = {reference}: check the signs and the factorial (2i)!"
)
yc.backward()
assert xc.grad is not None, (
    "backward gave x no gradient: my_cos's result is not connected to x. Build every term "
    "with the operators on the Variable x itself (x ** (2 * i)), not on x.data"
)
assert abs(xc.grad.data + np.sin(1.0)) < 1e-3, (
    f"the derivative at 1 should be close to -sin(1) = {-np.sin(1.0):.4f}, got {xc.grad.data}"
)
assert dz.utils.gradient_check(my_cos, np.array(0.7))
print("self-check passed: my_cos matches F.cos, and backprop through the series is right")
