# %% [markdown]
# # Step 01: `Variable`, a box around an array
#
# A deep-learning framework computes with arrays, but it also has to remember
# *how* each array was computed, so that it can later work out gradients.
# The first thing we need is therefore a box that holds an array and that we
# can attach more information to as the framework grows. We call it a
# `Variable`.
#
# In this step the box only holds data. Two decisions already matter:
#
# * the box **holds** the array, it does not copy it: `x.data is data`;
# * the box accepts only NumPy arrays (and `None`, an empty box, which later
#   steps use). A list or a number is refused with a clear `TypeError`, because
#   later steps rely on `data` having a shape and a dtype.

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
# Put an array in the box and take it out again. The box holds the very same
# array object, so no memory is copied:

# %%
data = np.array(1.0)
x = Variable(data)
print(x.data)
print("same object:", x.data is data)

# %% [markdown]
# The data can be replaced, and it can have any shape:

# %%
x.data = np.array([[1.0, 2.0], [3.0, 4.0]])
print(x.data.shape, x.data.ndim)

# %% [markdown]
# Anything that is not an ndarray is refused, with a message that says what to do:

# %%
try:
    Variable([1, 2])
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# ## Exercise
# Make a `Variable` holding a 3×4 array of zeros (`np.zeros`) and print its shape.
#
# Every exercise in this course comes as three cells: **your cell** (replace the
# `...`, or the `raise NotImplementedError(...)` line, with your own code), the
# **solution** and the **self-check**. Run your cell, then the self-check: it
# says what is still wrong, or prints `self-check passed`. In a notebook the
# solution is a collapsed cell titled *Solution*: open it to read the reference
# answer; it runs only after you tick its `use_solution` box, so "Run all" never
# solves an exercise for you (an unsolved self-check prints `not solved yet` and
# the notebook goes on). In the script, the solution is the cell that starts with
# `#| solution`, and `python steps/step01.py` runs it; to check your own answer,
# write it into the `#| exercise` cell and run `python tools/run_steps.py
# --exercises 1`, which runs the step with the solutions off.

# %%
#| exercise
v = ...  # a Variable holding a 3x4 array of zeros; then print its shape

# %%
#| solution
v = Variable(np.zeros((3, 4)))
print(v.data.shape)

# %%
#| check
assert v is not ..., "replace the ... in `v = ...` with a Variable"
assert isinstance(v, Variable), f"v should be a Variable, got {type(v).__name__}"
assert v.data.shape == (3, 4), f"v should hold a 3x4 array, got shape {v.data.shape}"
assert not v.data.any(), "v should hold zeros: np.zeros((3, 4))"
print("self-check passed: v is a Variable holding a 3x4 array of zeros")
