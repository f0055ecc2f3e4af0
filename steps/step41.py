# %% [markdown]
# # Step 41: `broadcast_to`, and broadcasting inside `+` and `*`
#
# NumPy lets you add a vector of shape (3,) to a matrix of shape (2, 3): the
# vector is *broadcast*, i.e. repeated along the missing axis, as if it were
# a (2, 3) matrix with equal rows. Networks rely on this everywhere — adding a
# bias `b` of shape (out,) to a batch of shape (N, out) is broadcasting.
#
# Broadcasting uses one input element several times. Step 14 taught what that
# means for backprop: **the gradients of all the copies add up**. So the
# backward of `broadcast_to(x, shape)` is `sum_to(gy, x.shape)` — the function
# of step 40.
#
# The same must happen inside `+`, `-`, `*` and `/` when their inputs have
# different shapes, otherwise `b.grad` would come back with shape (2, 3) while
# `b` has shape (3,). Our `Add`, `Mul`, ... remember both input shapes in
# forward and call `sum_to` in backward whenever a shape differs.

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check

x = dz.Variable(np.array([1.0, 2.0, 3.0]))
y = F.broadcast_to(x, (2, 3))
print("y =", y)
y.backward()
print("x.grad =", x.grad, "(each element was used twice)")

# %% [markdown]
# ## Broadcasting inside the operators
#
# Add a (3,) vector to a (2, 3) matrix. Each element of `x1` is used in both
# rows, so its gradient is 2; each element of `x0` is used once:

# %%
x0 = dz.Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
x1 = dz.Variable(np.array([10.0, 20.0, 30.0]))
y = x0 + x1
print("y =", y)
y.backward()
print("x0.grad shape", x0.grad.shape, "x1.grad =", x1.grad)

# %% [markdown]
# With `*` the gradient of each copy is the other factor, so
# $\partial L/\partial x_{1,j} = \sum_i x_{0,ij}$, the column sums of `x0`:

# %%
x0.cleargrad()
x1.cleargrad()
y = x0 * x1
y.backward()
print("x1.grad =", x1.grad, "== column sums of x0:", np.allclose(x1.grad.data, x0.data.sum(0)))
print("x0.grad =", x0.grad)

# %% [markdown]
# ## The rule, checked over many shapes
#
# Whatever the two shapes are, as long as NumPy can broadcast them, each
# gradient must have its own input's shape and agree with the numerical
# gradient. Size-1 axes are broadcast too: (2, 1) against (1, 3) makes (2, 3).

# %%
rng = np.random.default_rng(0)
pairs = [((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)), ((3,), ())]
for s0, s1 in pairs:
    a, b = rng.normal(size=s0), rng.normal(size=s1)
    u, v = dz.Variable(a), dz.Variable(b)
    F.sum(u * v + v).backward()
    ok0 = gradient_check(lambda p, b=b: p * dz.Variable(b) + dz.Variable(b), a)
    ok1 = gradient_check(lambda q, a=a: dz.Variable(a) * q + q, b)
    print(f"{str(s0):>10} with {str(s1):>7}: grads {u.grad.shape}, {v.grad.shape}; "
          f"checks {ok0 and ok1}")

# %% [markdown]
# ## Exercise
# A bias is added to every row of a batch. For `h` of shape (5, 4) and a bias
# `c` of shape (4,), compute `out = F.sum((h + c) ** 2)` and store `c.grad` in
# `grad_c`. By the chain rule it equals $2\sum_n (h_n + c)$.

# %%
h = dz.Variable(np.random.default_rng(3).normal(size=(5, 4)))
c = dz.Variable(np.array([0.5, -1.0, 2.0, 0.0]))
out = F.sum((h + c) ** 2)  # solution:
out.backward()
grad_c = c.grad
assert grad_c.shape == (4,), "the bias gradient has the bias's shape"
assert np.allclose(grad_c.data, 2 * (h.data + c.data).sum(axis=0))
print("self-check passed")
