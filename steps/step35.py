# %% [markdown]
# # Step 35: Higher derivatives of tanh: watching the graph grow
#
# The hyperbolic tangent squashes any number into $(-1, 1)$:
#
# $$y = \tanh x = \frac{e^x - e^{-x}}{e^x + e^{-x}}, \qquad
# \frac{dy}{dx} = 1 - y^2.$$
#
# Its derivative is written with the **output** $y$, so `Tanh` keeps its output
# for backward (`retain_outputs`) and computes `gy * (1 - y * y)`. That is cheap
# for a first derivative. For higher ones it has a cost: $y$ is itself
# $\tanh x$ with a graph, so each backward pass differentiates every
# multiplication by $y$ of the previous pass, and the graph grows quickly.
# In step 34, $\sin$ stayed small; here we watch the opposite.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, save_figure, written
from dezero_like.utils import get_dot_graph, plot_dot_graph

out_dir = output_dir(35)  # every file this step writes goes here


def count_nodes(v):
    """(functions, all nodes) in the graph behind ``v``."""
    lines = get_dot_graph(v, verbose=False).splitlines()
    return sum("shape=box" in ln for ln in lines), sum("[label=" in ln for ln in lines)


x = dz.Variable(np.array(1.0), name="x")
y = F.tanh(x)
y.name = "y"
derivs = [y]
g = y
for order in range(1, 7):
    x.cleargrad()
    g.backward(create_graph=True)
    g = x.grad
    g.name = f"d{order}y"
    derivs.append(g)

counts = [count_nodes(d) for d in derivs]
for order, (n_func, n_all) in enumerate(counts):
    value = float(derivs[order].data)
    print(f"order {order}: {n_func:4d} functions, {n_all:4d} nodes, value {value:+.6f}")

# %% [markdown]
# From the second derivative on, the number of functions grows by a factor of
# about 2.6 per order (printed above). Each `Mul` by $y$ in a
# gradient becomes two products in the next (the product rule), and every
# derivative of $y$ brings a fresh copy of $1 - y^2$.
#
# ## Pictures
#
# The first derivative is small enough to read:

# %%
written(plot_dot_graph(derivs[1], verbose=False, to_file=out_dir / "tanh_d1.png"))

# %% [markdown]
# The second already repeats pieces of the first:

# %%
written(plot_dot_graph(derivs[2], verbose=False, to_file=out_dir / "tanh_d2.png"))

# %% [markdown]
# And by the fourth the picture is a thicket (zoom in: it is the same few
# functions, `Mul`, `Sub`, `Neg`, `Add` and one `Tanh`, over and over):

# %%
written(plot_dot_graph(derivs[4], verbose=False, to_file=out_dir / "tanh_d4.png"))

# %% [markdown]
# ## Are the values right?
#
# With $t = \tanh x$ the first derivatives are
# $t' = 1 - t^2$, $t'' = -2t(1 - t^2)$, $t''' = (6t^2 - 2)(1 - t^2)$.
# And all of them are smooth curves:

# %%
t = np.tanh(1.0)
exact = [t, 1 - t**2, -2 * t * (1 - t**2), (6 * t**2 - 2) * (1 - t**2)]
for order in range(4):
    value = float(derivs[order].data)
    print(f"order {order}: framework {value:+.12f}   by hand {exact[order]:+.12f}")

xs = np.linspace(-4, 4, 200)
xv = dz.Variable(xs)
g = F.tanh(xv)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(xs, g.data, label="order 0")
for order in range(1, 5):
    xv.cleargrad()
    g.backward(create_graph=True)
    g = xv.grad
    ax.plot(xs, g.data, label=f"order {order}")
ax.set_xlabel("x")
ax.legend(fontsize=8)
ax.set_title("tanh and its derivatives")
save_figure(fig, out_dir / "tanh_derivatives.png")
plt.show()

# %% [markdown]
# Why does $\tanh$ grow and $\sin$ not? In `1 - y * y` the output $y$ appears
# twice, and each copy carries $x$; by the product rule, differentiating a
# product of two functions of $x$ gives two terms, each again containing $y$.
# `Sin.backward` only calls `cos(x)` on the leaf, so there is nothing to
# multiply out.
#
# The lesson for framework design: `create_graph` is general, but its cost
# depends on how each backward is written. Large models that need second
# derivatives (step 36) take only one or two of them, not seven.
#
# ## Exercise 1: how big do exp's graphs get?
# The graph for $\sin$ stayed tiny (step 34). What about $e^x$, whose backward
# also multiplies by its own output? Take 4 derivatives of `F.exp` at `x = 0.5`
# with `create_graph=True`, and store the function counts of the 5 graphs
# (orders 0 to 4, from `count_nodes(...)[0]`) in `exp_counts`. Does it grow
# like tanh? (Compare what the two backward methods do with $y$: `gy * y`
# against `gy * (1 - y * y)`.)

# %%
#| exercise
xe = dz.Variable(np.array(0.5))
exp_counts = ...  # [count_nodes(g)[0] for g = exp(x), then each of its 4 derivatives]

# %%
#| solution
xe = dz.Variable(np.array(0.5))
ge = F.exp(xe)
exp_counts = [count_nodes(ge)[0]]
for _ in range(4):
    xe.cleargrad()
    ge.backward(create_graph=True)
    ge = xe.grad
    exp_counts.append(count_nodes(ge)[0])

# %%
#| check
assert isinstance(exp_counts, list) and len(exp_counts) == 5, (
    f"exp_counts should be a list of 5 counts (orders 0 to 4), got {exp_counts!r}"
)
print("exp:", exp_counts)
assert exp_counts[0] == 1, f"exp(x) alone is one function, got {exp_counts[0]}"
assert max(exp_counts) <= 2, "exp's graph stays small: y appears once, never as y * y"
print("self-check passed: the graphs of exp's derivatives stay at one or two functions")

# %% [markdown]
# ## Exercise 2: a sigmoid that keeps its output
# The sigmoid $s(x) = 1/(1 + e^{-x})$ has, like $\tanh$, a derivative written
# with its output: $s' = s(1 - s)$. Write `MySigmoid` as `F.Tanh` is written
# (step 25; reread its two methods): forward keeps the output and not the
# input, and backward builds $g_y\, s (1 - s)$ from that kept output, as
# Variables. The self-check runs `dz.utils.gradient_check` and
# compares the second derivative with the formula $s(1 - s)(1 - 2s)$; count
# the functions of its higher derivatives yourself: which of tanh and exp does
# it resemble?

# %%
#| exercise
class MySigmoid(dz.Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 35): keep the output, not the input "
                                  "(as Tanh does), and return s(x) on the NumPy array")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 35): read the kept output s and return "
                                  "gy times s'(x) = s(1 - s)")

# %%
#| solution
class MySigmoid(dz.Function):
    def forward(self, x):
        self.retain_inputs(())
        self.retain_outputs((0,))
        return 1 / (1 + np.exp(-x))

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return gy * y * (1 - y)

# %%
#| check
pts = np.random.default_rng(0).normal(size=5)
s = 1 / (1 + np.exp(-pts))
try:
    ys = MySigmoid()(dz.Variable(pts.copy()))
except NotImplementedError as e:
    raise AssertionError(f"MySigmoid is not written yet: {e}") from None
assert np.allclose(ys.data, s), "MySigmoid's forward should be s(x) = 1 / (1 + e^-x)"
dz.utils.gradient_check(
    lambda v: MySigmoid()(v), pts,
    hint="MySigmoid's backward is wrong: it returns gy s(1 - s), with s the kept output and gy "
         "the gradient arriving from the output's side, which is not all ones here")
xs2 = dz.Variable(pts.copy())
MySigmoid()(xs2).backward(create_graph=True)
g1 = xs2.grad
xs2.cleargrad()
g1.backward()
assert np.allclose(xs2.grad.data, s * (1 - s) * (1 - 2 * s)), (
    "the second derivative is wrong: build backward from the retained output Variable y"
)
print("self-check passed: MySigmoid's first and second derivatives are right")
