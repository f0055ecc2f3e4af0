# %% [markdown]
# # Step 34: Higher derivatives of sin
#
# Differentiating $\sin$ over and over goes round in a circle of four:
#
# $$\sin \xrightarrow{d/dx} \cos \xrightarrow{d/dx} -\sin \xrightarrow{d/dx}
# -\cos \xrightarrow{d/dx} \sin \to \cdots$$
#
# In the framework each arrow is one backward pass with `create_graph=True`:
# `Sin.backward` calls `cos`, `Cos.backward` calls `sin` and negation, so every
# gradient is again made of differentiable functions. This step takes many
# derivatives at once, on a whole array of points, and plots them.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.plot import output_dir, save_figure

out_dir = output_dir(34)  # every file this step writes goes here

xs = np.linspace(-7, 7, 200)
x = dz.Variable(xs)
y = F.sin(x)
curves = [y.data]
g = y
for _ in range(4):
    x.cleargrad()
    g.backward(create_graph=True)
    g = x.grad
    curves.append(g.data)

# %% [markdown]
# `x` holds 200 points and `y = sin(x)` acts on each separately, so backward
# with its default seed (all ones) gives the derivative at every point at once.

# %%
names = ["y = sin(x)", "y'", "y''", "y'''", "y''''"]
fig, ax = plt.subplots(figsize=(7, 4))
for curve, name in zip(curves, names):
    ax.plot(xs, curve, label=name)
ax.set_xlabel("x")
ax.legend(loc="lower right", fontsize=8)
ax.set_title("sin and its first four derivatives")
save_figure(fig, out_dir / "sin_derivatives.png")
plt.show()

# %% [markdown]
# Check each against the cycle:

# %%
expected = [np.sin(xs), np.cos(xs), -np.sin(xs), -np.cos(xs), np.sin(xs)]
for order, (curve, exact) in enumerate(zip(curves, expected)):
    print(f"order {order}: max |error| = {np.max(np.abs(curve - exact)):.1e}")

# %% [markdown]
# After four passes we are back at $\sin$: the curves for orders 0 and 4 lie
# on top of each other in the plot.
#
# How big is the graph behind each derivative? Counting its functions:

# %%
def count_functions(v):
    return sum(1 for line in dz.utils.get_dot_graph(v, verbose=False).splitlines()
               if "shape=box" in line)


x1 = dz.Variable(np.array(1.0))
g = F.sin(x1)
sizes = [count_functions(g)]
for _ in range(4):
    x1.cleargrad()
    g.backward(create_graph=True)
    g = x1.grad
    sizes.append(count_functions(g))
print("functions in the graph of each derivative:", sizes)

# %% [markdown]
# It stays tiny. Each pass differentiates only the last one's graph, which
# is "a constant times $\pm\sin x$ or $\pm\cos x$": the seeds are constants
# (they need no gradient), so nothing of the earlier passes is carried along.
# Not every function is this kind: for $\tanh$, whose derivative
# $1 - \tanh^2 x$ is written in terms of its own output, the graph grows with
# every order. Step 35 draws it.

# %% [markdown]
# ## Exercise 1: the 7th derivative of sin
# The $n$-th derivative of $\sin$ is $\sin(x + n\pi/2)$. Compute the 7th
# derivative of $\sin$ at $x = 0.3$ with repeated backward passes and store
# it in `d7` (a float).

# %%
#| exercise
x7 = dz.Variable(np.array(0.3))
d7 = ...  # start from sin(x7) and differentiate 7 times, as the loops above do; a float

# %%
#| solution
x7 = dz.Variable(np.array(0.3))
g7 = F.sin(x7)
for _ in range(7):
    x7.cleargrad()
    g7.backward(create_graph=True)
    g7 = x7.grad
d7 = float(g7.data)

# %%
#| check
assert isinstance(d7, float), f"d7 should be a float, got {type(d7).__name__}"
assert np.isclose(d7, np.sin(0.3 + 7 * np.pi / 2)), (
    f"the 7th derivative of sin is -cos: -cos(0.3) = {-np.cos(0.3):.6f}, got {d7}"
)
print("self-check passed: the 7th derivative of sin at 0.3 is -cos(0.3)")

# %% [markdown]
# ## Exercise 2: a `Sin` that can be differentiated forever
# The cycle works because `Sin.backward` calls `cos` and `Cos.backward` calls
# `sin`, both recorded functions. Write `MySin`: `forward` on the raw array,
# `backward` returning $g_y \cos x$ with a recorded function of the package,
# applied to the input Variable. The
# self-check runs `dz.utils.gradient_check` and takes four derivatives
# through `MySin`: they must follow the cycle $\cos, -\sin, -\cos, \sin$.

# %%
#| exercise
class MySin(dz.Function):
    def forward(self, x):
        raise NotImplementedError("Exercise (step 34): MySin.forward, on the raw array")

    def backward(self, gy):
        raise NotImplementedError("Exercise (step 34): MySin.backward, with recorded "
                                  "functions on Variables")

# %%
#| solution
class MySin(dz.Function):
    def forward(self, x):
        return np.sin(x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy * F.cos(x)

# %%
#| check
pts = np.random.default_rng(0).uniform(-3, 3, size=5)
try:
    MySin()(dz.Variable(pts.copy())).backward()
except NotImplementedError as e:
    raise AssertionError(f"MySin is not written yet: {e}") from None
dz.utils.gradient_check(
    lambda v: MySin()(v), pts,
    hint="MySin's backward is wrong: it returns gy cos(x), with gy the gradient arriving from the "
         "output's side, which is not all ones here")
xm = dz.Variable(pts.copy())
gm = MySin()(xm)
for order, exact in enumerate([np.cos(pts), -np.sin(pts), -np.cos(pts), np.sin(pts)], start=1):
    xm.cleargrad()
    gm.backward(create_graph=True)
    gm = xm.grad
    assert np.allclose(gm.data, exact), (
        f"derivative of order {order} is wrong: does backward compute with a recorded "
        "function on the input Variable, not with NumPy?"
    )
print("self-check passed: MySin's derivatives cycle cos, -sin, -cos, sin")
