# %% [markdown]
# # Step 25: The graph as DOT text
#
# Every result in our framework remembers the function that made it, and every
# function remembers its inputs. So behind each `Variable` there is a whole
# *computational graph*. So far we only walked it to compute gradients; now we
# want to **see** it. A picture of the graph shows what backward will walk,
# which variables are shared, and how big the graph is.
#
# We will not draw the picture ourselves. Graphviz, a classic graph-layout
# tool, reads a small text language called **DOT** and does the layout. Our job
# is only to *describe* the graph in DOT. This step is about that text; step 26
# turns it into images.

# %% [markdown]
# ## The DOT language in one minute
#
# A DOT file lists nodes (with attributes in square brackets) and edges
# (`a -> b`). Node names are identifiers; what is shown is the `label`.
# Here is a graph for $y = x_0 + x_1$ written by hand:

# %%
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import get_dot_graph

hand_written = """digraph g {
  x0 [label="x0", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  x1 [label="x1", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  add [label="Add", shape=box, style=filled, fillcolor="#a8d8f0"]
  y [label="y", shape=ellipse, style=filled, fillcolor="#ffd08a"]
  x0 -> add;
  x1 -> add;
  add -> y;
}"""
print(hand_written)

# %% [markdown]
# Variables are orange ellipses and functions blue boxes, so the two kinds of
# node are easy to tell apart: a variable holds data, a function transforms it.
#
# ## Walking the graph to write DOT
#
# `dezero_like.utils.get_dot_graph(y)` does the same for any result. It walks
# the graph exactly like backward does: start at `y.creator`, take the newest
# function first, write the function node, an edge to each of its outputs and
# an edge from each of its inputs, then queue the inputs' creators.
#
# Two details are worth knowing:
#
# * **Node identity.** A leaf variable (one you made yourself) is identified by
#   the object. An intermediate result is identified by *where it was made*:
#   the pair (creator function, output index). The reason is memory: a function
#   that does not need an input's data keeps only a data-less stand-in of it
#   (step 69 explains why), so one intermediate value may exist as several Python
#   objects. They all share the same creator and index, so they become one node.
# * **Labels.** With `verbose=True` a label shows the variable's name, shape and
#   dtype. A stand-in has no data, so an intermediate variable that you no
#   longer hold is drawn without a shape. An unnamed constant shows its value;
#   constants (`requires_grad=False`) are grey.
#
# Let us describe the Matyas function of step 24,
# $z = 0.26(x^2 + y^2) - 0.48xy$, after naming the variables:

# %%
def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


x = dz.Variable(np.array(1.0), name="x")
y = dz.Variable(np.array(1.0), name="y")
z = matyas(x, y)
z.name = "z"
dot_text = get_dot_graph(z, verbose=False)
print(dot_text)

# %% [markdown]
# Each line is either a node (`name [label=...]`) or an edge (`a -> b;`).
# Counting them tells how big the graph is:

# %%
def count_nodes(dot):
    """Number of node lines (variables and functions) in a DOT text."""
    return sum(1 for line in dot.splitlines() if "[label=" in line)


def count_functions(dot):
    return sum(1 for line in dot.splitlines() if "shape=box" in line)


print("nodes:", count_nodes(dot_text), "functions:", count_functions(dot_text))

# %% [markdown]
# With `verbose=True` (the default) the labels also carry shapes and dtypes,
# which is what you want when a shape error puzzles you:

# %%
a = dz.Variable(np.ones((2, 3), dtype=np.float32), name="a")
b = F.sum(F.tanh(a), axis=0)
b.name = "b"
print(get_dot_graph(b))

# %% [markdown]
# Graphviz turns any of these texts into a picture. If you have it installed,
# save the text to `graph.dot` and run `dot -Tpng graph.dot -o graph.png` in a
# terminal. The next step does this from Python and shows the picture inline.
#
# ## Exercise
# Build $w = \sin(u) \cdot u$ for a Variable `u` named `"u"` holding `0.5`, name
# the result `"w"`, and put its DOT text (not verbose) in `exercise_dot`. How many
# functions does it contain?

# %%
u = dz.Variable(np.array(0.5), name="u")  # solution:
w = F.sin(u) * u
w.name = "w"
exercise_dot = get_dot_graph(w, verbose=False)
assert 'label="u"' in exercise_dot and 'label="w"' in exercise_dot, "name u and w"
assert count_functions(exercise_dot) == 2, "sin and mul: two functions"
print("self-check passed")
