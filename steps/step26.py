# %% [markdown]
# # Step 26: Rendering graphs as images, inline in notebooks
#
# Step 25 described a graph in DOT text. Text is precise but hard to read for
# more than a dozen nodes; a picture shows the shape of the computation at a
# glance. Turning DOT into a picture means *laying out* the graph (placing the
# nodes in layers, routing the edges around each other), which is a hard
# problem that Graphviz's `dot` program solves well. We hand it our text.
#
# `dezero_like.utils.plot_dot_graph(y, to_file=out_dir / "graph.png"))`:
#
# 1. writes the DOT text to `graph.dot` (first, so it is never lost);
# 2. runs a renderer on it, writing PNG, SVG or PDF by the file's extension;
# 3. returns an image object. When that object is the **last expression of a
#    notebook cell**, Jupyter shows the graph right below the cell (it asks
#    the object for SVG through its `_repr_svg_` method).
#
# Which renderer? The system Graphviz (`dot`) when it is installed, as on Colab.
# Otherwise `graphviz-pure`, a self-contained port of `dot` that pip installs
# together with dezero_like. If neither is there, the error says how to get one
# (docs/graph-rendering.md has the details).
#
# Where do the files go? Every step that writes files puts them in one folder,
# `outputs/stepNN/` under the current directory (`dezero_like.plot.output_dir`
# makes it), and prints the full path of each file it writes.

# %%
import numpy as np

import dezero_like as dz
from dezero_like.graph import find_renderer
from dezero_like.plot import output_dir, written
from dezero_like.utils import plot_dot_graph

out_dir = output_dir(26)  # every file this step writes goes here

name, path = find_renderer()
print("renderer:", name)

# %% [markdown]
# ## The Goldstein–Price function
#
# Step 24 used it as a hard test for optimisation. Its graph is large enough
# that a picture pays off:
#
# $$f(x, y) = [1 + (x + y + 1)^2 (19 - 14x + 3x^2 - 14y + 6xy + 3y^2)]
# \cdot [30 + (2x - 3y)^2 (18 - 32x + 12x^2 + 48y - 36xy + 27y^2)]$$

# %%
def goldstein(x, y):
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)
    return a * b


x = dz.Variable(np.array(1.0), name="x")
y = dz.Variable(np.array(1.0), name="y")
z = goldstein(x, y)
z.name = "z"
z.backward()
print("z =", z.data, " dz/dx =", x.grad.data, " dz/dy =", y.grad.data)

# %% [markdown]
# Now the picture. In a notebook the next cell shows the graph; as a script it
# only writes the file (and prints where):

# %%
image = written(plot_dot_graph(z, verbose=False, to_file=out_dir / "goldstein.png"))
image

# %% [markdown]
# Read it from the top: the leaves `x` and `y` feed many functions, because
# each appears several times in the formula. Grey ellipses are the constants.
# Backward ran along these arrows in reverse, adding up the gradients that
# reach `x` and `y` through every path (step 14).
#
# The same call writes other formats; SVG is text (it scales without blurring
# and is easy to search), PDF is for printing:

# %%
svg_image = written(plot_dot_graph(z, verbose=False, to_file=out_dir / "goldstein.svg"))
svg_text = svg_image.path.read_text()
print("SVG mentions x:", ">x<" in svg_text, " bytes:", len(svg_text))

# %% [markdown]
# With `verbose=True` (the default) the labels show shapes and dtypes. Arrays
# read better in that form:

# %%
a = dz.Variable(np.linspace(0, 1, 6).reshape(2, 3), name="a")
W = dz.Variable(np.ones((3, 2)), name="W")
h = a @ W
h.name = "h"
out = (h * h).sum()
out.name = "out"
written(plot_dot_graph(out, to_file=out_dir / "small.png"))

# %% [markdown]
# ## Exercise
# Draw the graph of the Sphere function $x^2 + y^2$ for two variables named
# `"p"` and `"q"` into `sphere.svg`, and keep the returned object in
# `sphere_image`. Its SVG text should name both variables.

# %%
p = dz.Variable(np.array(0.5), name="p")  # solution:
q = dz.Variable(np.array(-1.0), name="q")
sphere_image = written(plot_dot_graph(p**2 + q**2, verbose=False, to_file=out_dir / "sphere.svg"))
svg = sphere_image._repr_svg_()
assert ">p<" in svg and ">q<" in svg, "name the variables p and q"
print("self-check passed")
