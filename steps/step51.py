# %% [markdown]
# # Step 51: `Dataset` and transforms
#
# In step 50 the spiral data was two arrays, `x` and `t`, and the training
# loop sliced them by hand. That works for 300 points. It stops working when
# the data does not fit the simple picture: 60,000 images that are stored as
# bytes but must reach the model as scaled floats, a data set that is read
# from disk, labels that need converting. Every training loop would repeat the
# same bookkeeping.
#
# Frameworks solve this with one small interface. A **dataset** is anything
# that answers two questions:
#
# * `len(dataset)`: how many examples are there?
# * `dataset[i]`: give me example `i`, as a pair `(x, t)`: input and label.
#
# Everything else (shuffling, batching, moving data to a GPU) can then be
# written once, against this interface, and works for every data set.

# %%
import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
from dezero_like import transforms as T
from dezero_like.datasets import Dataset

# %% [markdown]
# ## The spiral data as a `Dataset`
#
# `dz.datasets.Spiral` is the data of step 50, moved into the package: three
# spiral arms of 100 points each (the arms are placed as in the book this
# project follows, so the points differ a little from step 50's
# `make_spiral`). It is generated from a fixed seed, so every run (and every
# learner) sees exactly the same points; the training and test sets use
# different seeds.

# %%
train_set = dz.datasets.Spiral(train=True)
print("examples:", len(train_set))
x, t = train_set[0]
print("first example:", x, "class", t)
print("stored arrays:", train_set.data.shape, train_set.data.dtype, train_set.label.shape)
print("points per class:", np.bincount(train_set.label))

# %% [markdown]
# The arrays live in `train_set.data` and `train_set.label`, but a training loop
# should not reach into them: it asks for examples by index, so that it works
# the same way for any data set.

# %%
colors = ["tab:blue", "tab:orange", "tab:green"]
for c in range(3):
    pts = train_set.data[train_set.label == c]
    plt.scatter(pts[:, 0], pts[:, 1], s=12, color=colors[c], label=f"class {c}")
plt.gca().set_aspect("equal")
plt.legend()
plt.title("Spiral training set")
plt.show()

# %% [markdown]
# ## Writing your own dataset
#
# The base class `Dataset` does the indexing. A subclass only fills
# `self.data` and `self.label` in `prepare()`, which the constructor calls.
# Here is a data set for a regression problem: points of a noisy sine curve,
# with a seed so that it is reproducible.

# %%
class NoisySine(Dataset):
    """x in [0, 1), t = sin(2 pi x) + noise; 100 examples."""

    def prepare(self):
        rng = np.random.default_rng(0 if self.train else 1)
        x = rng.random((100, 1))
        self.data = x.astype(np.float32)
        self.label = (np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal((100, 1))).astype(
            np.float32
        )


sine = NoisySine()
print(len(sine), sine[0])

# %% [markdown]
# ## Transforms: preparing an example when it is read
#
# Data is often stored in one form and consumed in another. MNIST images, for
# instance, are 28×28 arrays of bytes (0–255); a multilayer perceptron wants a
# vector of 784 floats, ideally small ones, in $[0, 1]$. We could convert the
# whole data set up front, but that multiplies its memory by four (uint8 →
# float32) and fixes one choice for everyone.
#
# Instead, a dataset takes a **transform**: a function applied to each input
# when it is read (and a `target_transform` for labels). Transforms are small
# objects that do one thing, and `Compose` chains them, left to right:
#
# * `Flatten()`: (28, 28) → (784,);
# * `ToFloat()`: convert to float32, the dtype models train in;
# * `Normalize(mean, std)`: $(x - \mathrm{mean}) / \mathrm{std}$.
#
# Let us try the MNIST pipeline on a tiny fake "image" of bytes:

# %%
image = np.array([[0, 51], [204, 255]], dtype=np.uint8)
to_vector = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
print(to_vector)
v = to_vector(image)
print(v, v.dtype)

# %% [markdown]
# Order matters: `Normalize` before `ToFloat` would divide bytes and get
# float64 (NumPy's choice for `uint8 / float`), twice the memory of float32.
#
# On the spiral data, a common transform is **standardisation**: subtract the
# mean and divide by the standard deviation of each feature, so that all
# inputs are on the same scale. The statistics are computed once, from the
# training set, and the transform applies them to every example:

# %%
mean = train_set.data.mean(axis=0)
std = train_set.data.std(axis=0)
scaled = dz.datasets.Spiral(train=True, transform=T.Normalize(mean, std))
x, t = scaled[0]
print("raw:", train_set[0][0], " standardised:", x, x.dtype)
print("stored data unchanged:", np.array_equal(scaled.data, train_set.data))

# %% [markdown]
# ## Towards mini-batches
#
# Training uses mini-batches, not single examples. With the dataset interface
# a batch is: pick some indices, read those examples, stack them. Step 52 wraps
# exactly this in a `DataLoader`.

# %%
batch_index = np.arange(0, 5)
examples = [scaled[int(i)] for i in batch_index]
x_batch = np.stack([ex[0] for ex in examples])
t_batch = np.array([ex[1] for ex in examples])
print("batch:", x_batch.shape, t_batch)

# %% [markdown]
# ## Exercise
# 1. Write a transform `Clip01` (a class with `__call__`) that clips an array to
#    $[0, 1]$ with `np.clip`.
# 2. Build `pipeline`: convert to float32, then `Normalize(0.5, 0.25)`, then
#    `Clip01()`. The self-check applies it to a few values.

# %%
# solution:
class Clip01:
    def __call__(self, x):
        return np.clip(x, 0.0, 1.0)


pipeline = T.Compose([T.ToFloat(), T.Normalize(0.5, 0.25), Clip01()])

out = pipeline(np.array([0.4, 0.5, 0.6, 0.9]))
assert out.dtype == np.float32, "the pipeline should produce float32"
assert np.allclose(out, [0.0, 0.0, 0.4, 1.0]), out
print("self-check passed")
