# %% [markdown]
# # Step 23: Packaging: the framework becomes `dezero_like`
#
# Until now every step carried its own copy of the framework, so each step
# could be read (and diffed against the previous one) on its own. From here on
# the framework lives in one place, the Python package `dezero_like`, and the
# steps `import` it:
#
# ```python
# import dezero_like as dz
# import dezero_like.functions as F
# ```
#
# A package is a folder with an `__init__.py`; each `.py` file in it is a
# module. Installing it (`pip install -e .` in the repository, or the set-up
# cell at the top of every notebook) makes `import dezero_like` work from any
# directory, with no `sys.path` tricks.
#
# The package is split by role:
#
# * `core.py`: `Variable`, `Function`, the backward loop, `Config`, `no_grad`,
#   and the arithmetic behind the operators (`Add`, `Mul`, `Sub`, `Div`, `Pow`,
#   `Neg`);
# * `functions.py`: the other differentiable functions (`square`, `exp`,
#   `sin`, ..., later `matmul`, `softmax`, ...);
# * `utils.py`: helpers: numerical gradients, `gradient_check`, array
#   comparisons;
# * `cuda.py`: GPU support through CuPy, imported only when asked for.
#
# `__init__.py` runs when you `import dezero_like`; it imports the modules and
# re-exports the names you use most, so `dz.Variable` works without
# `dz.core.Variable`.

# %%
import inspect

import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import utils

print("dezero_like", dz.__version__)
print("top-level names:", ", ".join(dz.__all__))

# %% [markdown]
# ## A tour of the modules
#
# For each module: the first line of its docstring, then the classes and
# functions it defines (not the ones it imports from elsewhere).

# %%
for module in (dz.core, F, utils, dz.cuda):
    doc = inspect.getdoc(module).splitlines()[0]
    names = [name for name, obj in vars(module).items()
             if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
             and obj.__module__ == module.__name__]
    print(f"{module.__name__}: {doc}")
    print("    " + ", ".join(names))

# %% [markdown]
# ## The same framework, grown up
#
# The package's `core.py` is the final design of the curriculum, so it does a
# little more than our step-22 snapshot. Three differences show up right away:
#
# * `x.grad` is a `Variable`, not an ndarray. That lets a later step
#   differentiate a gradient again (double backprop, steps 30-32); read the
#   array with `x.grad.data`.
# * Constants such as the `2.0` in `2.0 - x` do not require a gradient, so no
#   gradient is computed for them.
# * After `backward()` the graph releases what it saved, and a second
#   `backward()` through the same graph is an error unless you ask to keep it
#   (step 37).
#
# The results are the same. Here is the table of step 22, now computed by the
# package:

# %%
x = dz.Variable(np.array(3.0), name="x")
for text, make in [("-x", lambda x: -x), ("2.0 - x", lambda x: 2.0 - x),
                   ("x - 1", lambda x: x - 1), ("x / 2", lambda x: x / 2),
                   ("6 / x", lambda x: 6 / x), ("x ** 3", lambda x: x**3),
                   ("np.array(2.0) * x", lambda x: np.array(2.0) * x),
                   ("3 + x * x", lambda x: 3 + x * x)]:
    x.cleargrad()
    y = make(x)
    y.backward()
    print(f"{text:18s} = {float(y.data):6.3f}   dy/dx = {float(x.grad.data):6.3f}"
          f"   result is a {type(y).__name__}")

# %% [markdown]
# The lessons of steps 14-19 hold as well: a variable used twice accumulates
# its gradient without aliasing (steps 14-15), the diamond graph is
# differentiated in generation order (steps 16-17), intermediate gradients are
# dropped unless `retain_grad=True` (step 19), and `no_grad()` builds no graph.

# %%
x = dz.Variable(np.array(3.0))
y = x + x
y.backward(retain_grad=True)
print("x + x:   y.grad =", y.grad, " x.grad =", x.grad, " same object:", y.grad is x.grad)

x = dz.Variable(np.array(2.0))
a = F.square(x)
y = F.square(a) + F.square(a)
y.backward()
print("diamond: x.grad =", x.grad, " a.grad =", a.grad)

with dz.no_grad():
    y = F.exp(x) * 2
print("no_grad: creator =", y.creator)

x32 = dz.Variable(np.array([1.0, 2.0], dtype=np.float32))
print("float32 stays float32:", (2.0 - x32 / 3).dtype)

# %% [markdown]
# ## Checking gradients with `utils`
#
# In step 13 we wrote a central-difference helper by hand. The package ships
# one that every test of the package uses: `utils.gradient_check(f, x)`
# compares backprop with central differences in float64 and returns `True`, or
# raises an `AssertionError` that names the worst element.


# %%
def f(x):
    return (x - 2) ** 3 / x - 1.5 * x + 4


x = np.array([0.5, 1.0, 3.0])
v = dz.Variable(x.copy())
f(v).backward()
print("backprop: ", v.grad.data)
print("numerical:", utils.numerical_grad(f, x))
print("gradient_check:", utils.gradient_check(f, x))

# %% [markdown]
# ## Exercise
# Use the package to check the gradient of $g(x) = x \sin(x) + \frac{1}{1 + x^2}$
# with `utils.gradient_check` on a few points (use `F.sin`).


# %%
def g(x):
    return x * F.sin(x) + 1 / (1 + x**2)  # solution


assert utils.gradient_check(g, np.array([-1.0, 0.2, 2.5]))
y = g(dz.Variable(np.array(0.2)))
assert np.isclose(y.data, 0.2 * np.sin(0.2) + 1 / 1.04), f"g(0.2) is wrong: {y.data}"
print("self-check passed")
