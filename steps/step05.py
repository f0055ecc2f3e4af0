# %% [markdown]
# # Step 05: Backpropagation, the chain rule read backwards
#
# Numerical differentiation costs two evaluations per input. Backpropagation
# gets the derivative with respect to *every* input in one sweep, exactly.
# It is nothing more than the chain rule, multiplied out in a clever order.
#
# Take the chain of step 03 with named intermediate values:
#
# $$x \xrightarrow{A} a \xrightarrow{B} b \xrightarrow{C} y, \qquad
# a = A(x),\; b = B(a),\; y = C(b).$$
#
# The chain rule says the derivative of the whole chain is the product of the
# derivatives of its links, each taken **at that link's own input**:
#
# $$\frac{dy}{dx} = \frac{dy}{db}\,\frac{db}{da}\,\frac{da}{dx}
#   = C'(b)\, B'(a)\, A'(x).$$
#
# A product can be multiplied in any order. Backpropagation multiplies it
# starting from the **output**: it begins with $\frac{dy}{dy} = 1$ and walks
# towards the input, multiplying by one local derivative per function:
#
# $$\frac{dy}{dy} = 1 \;\to\; \frac{dy}{db} = 1 \cdot C'(b) \;\to\;
# \frac{dy}{da} = \frac{dy}{db}\, B'(a) \;\to\;
# \frac{dy}{dx} = \frac{dy}{da}\, A'(x).$$
#
# Every partial result is itself useful: it is the derivative of the output
# with respect to an intermediate variable. And every factor needs a value
# from the forward pass ($b$, $a$, $x$), so the forward pass must remember
# the inputs of each function. That is what step 06 builds.
#
# This step writes no new framework code: it works one example by hand.

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
# ## A worked example
#
# First the forward pass at $x = 0.5$, keeping every intermediate value:

# %%
A = Exp()
B = Square()
C = Exp()

x = Variable(np.array([0.5]))
a = A(x)
b = B(a)
y = C(b)
print(f"forward:  x = {x.data[0]:.6f}  a = {a.data[0]:.6f}  b = {b.data[0]:.6f}"
      f"  y = {y.data[0]:.6f}")

# %% [markdown]
# Next the local derivative of each function, written down by hand and
# evaluated at that function's own input:
#
# | function | formula | derivative | evaluated at |
# | --- | --- | --- | --- |
# | $C$ | $e^b$ | $C'(b) = e^b$ | $b$ |
# | $B$ | $a^2$ | $B'(a) = 2a$ | $a$ |
# | $A$ | $e^x$ | $A'(x) = e^x$ | $x$ |

# %%
dC_db = np.exp(b.data)  # C'(b)
dB_da = 2 * a.data  # B'(a)
dA_dx = np.exp(x.data)  # A'(x)
print(f"local:    C'(b) = {dC_db[0]:.6f}  B'(a) = {dB_da[0]:.6f}  A'(x) = {dA_dx[0]:.6f}")

# %% [markdown]
# Now the backward pass: start from $\frac{dy}{dy} = 1$ and multiply by one
# local derivative per function, from the output towards the input. We name
# the derivative of $y$ with respect to a variable `g` + its name.

# %%
gy = np.ones_like(y.data)  # dy/dy
gb = gy * dC_db  # dy/db
ga = gb * dB_da  # dy/da
gx = ga * dA_dx  # dy/dx
print(f"backward: dy/dy = {gy[0]:.6f}  dy/db = {gb[0]:.6f}  dy/da = {ga[0]:.6f}"
      f"  dy/dx = {gx[0]:.6f}")

# %% [markdown]
# The two passes as a picture, drawn from the numbers above. The top row goes
# left to right, the bottom row right to left. Each backward arrow multiplies by
# one local derivative, and the dashed line shows the forward value it reads.
# (The drawing helpers come from the package, ahead of time; the framework
# itself is still this file.)

# %%
import matplotlib.pyplot as plt

from dezero_like.plot import output_dir, save_figure  # the course's drawing helpers

forward_row = [("x", x.data[0]), ("a", a.data[0]), ("b", b.data[0]), ("y", y.data[0])]
backward_row = [("dy/dx", gx[0]), ("dy/da", ga[0]), ("dy/db", gb[0]), ("dy/dy", gy[0])]
links = [("A: exp", "A'(x)", dA_dx[0]), ("B: square", "B'(a)", dB_da[0]),
         ("C: exp", "C'(b)", dC_db[0])]  # link k goes from column k to column k + 1

fig, ax = plt.subplots(figsize=(10, 3.4))
for row_y, row, colour in ((1.0, forward_row, "#ffd08a"), (0.0, backward_row, "#a8d8f0")):
    for col, (name, value) in enumerate(row):
        ax.text(3 * col, row_y, f"{name} = {value:.4g}", ha="center", va="center",
                bbox={"boxstyle": "round", "fc": colour})
for col, (name, factor, value) in enumerate(links):
    left, right = 3 * col + 1.0, 3 * col + 2.0
    ax.annotate("", (right, 1.0), (left, 1.0), arrowprops={"arrowstyle": "->"})
    ax.text(3 * col + 1.5, 1.12, name, ha="center")
    ax.annotate("", (left, 0.0), (right, 0.0), arrowprops={"arrowstyle": "->", "color": "C3"})
    ax.text(3 * col + 1.5, -0.2, f"× {factor} = {value:.4g}", ha="center", color="C3")
    ax.plot([3 * col, 3 * col + 1.5], [0.88, 0.05], ":", color="grey")  # the value it reads
ax.text(-1.3, 1.0, "forward", ha="right", va="center", weight="bold")
ax.text(-1.3, 0.0, "backward", ha="right", va="center", weight="bold")
ax.set_xlim(-2.8, 10)
ax.set_ylim(-0.45, 1.35)
ax.axis("off")
ax.set_title("y = C(B(A(x))) at x = 0.5: values forward, derivatives backward")
figure_path = save_figure(fig, output_dir(5) / "forward_backward.png")
plt.show()

# %% [markdown]
# Three checks. The whole chain is $y = \exp(e^{2x})$, whose derivative
# $2e^{2x}\exp(e^{2x})$ is $2e \cdot e^{e}$ at $x = 0.5$; the numerical
# derivative of step 04 should agree to about seven digits; and multiplying
# the same factors from the input side (*forward mode*) gives the same number.

# %%
closed_form = 2 * np.e * np.exp(np.e)
numerical = numerical_diff(lambda v: C(B(A(v))), x)
forward_mode = dC_db * (dB_da * (dA_dx * 1.0))
print(f"closed form 2e*e^e = {closed_form:.6f}")
print(f"numerical          = {numerical[0]:.6f}")
print(f"forward mode       = {forward_mode[0]:.6f}")

# %% [markdown]
# ## Why backwards?
#
# For a chain, both orders do the same multiplications. The difference shows
# when a computation has **many inputs and one output**, which is exactly a
# neural network: millions of parameters, one scalar loss.
#
# * Forward mode carries $\frac{d(\cdot)}{dx}$ for one chosen input $x$ up
#   through the graph, so it needs one sweep **per input**.
# * Reverse mode carries $\frac{dy}{d(\cdot)}$ for the one output down
#   through the graph, and one sweep yields the derivative of $y$ with respect
#   to **every** variable it passes.
#
# The price of reverse mode is memory: the backward sweep needs the inputs of
# every function from the forward sweep ($x$, $a$, $b$ above), so they must
# be kept until the backward sweep is done. Steps 18 and 19 come back to
# that cost.

# %% [markdown]
# ## Exercise
# Work out $\frac{dy}{dx}$ for the chain $y = (e^{x^2})^2$, that is
# `Square` → `Exp` → `Square`, at $x = 0.5$ by the backward recipe above:
# multiply the local derivatives from the output towards the input. Store it
# in `answer` (an array); the self-check compares it with `numerical_diff`.

# %%
#| exercise
x = Variable(np.array([0.5]))
p = Square()(x)
q = Exp()(p)
r = Square()(q)
answer = ...  # dr/dx from the data of x, p and q

# %%
#| solution
x = Variable(np.array([0.5]))
p = Square()(x)
q = Exp()(p)
r = Square()(q)
# dr/dq = 2q, dq/dp = e^p, dp/dx = 2x, multiplied from the output side
answer = np.ones_like(r.data) * (2 * q.data) * np.exp(p.data) * (2 * x.data)

# %%
#| check
assert answer is not ..., "replace the ... in `answer = ...` with your product"
expected = numerical_diff(lambda v: Square()(Exp()(Square()(v))), x)
assert np.allclose(answer, expected, rtol=1e-6), (
    f"expected {expected}, got {answer}: start from dr/dr = 1 and multiply by "
    "dr/dq = 2q, then dq/dp, then dp/dx (use q.data, p.data and x.data)"
)
print("self-check passed: your chain-rule product matches numerical_diff")
