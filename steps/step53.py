# %% [markdown]
# # Step 53: MNIST: download, cache, verify, and train an MLP
#
# Time for real data. MNIST is 70,000 photographs of handwritten digits,
# 28×28 grey pixels each, with the digit as label: 60,000 for training and
# 10,000 for testing. It is small enough to train on a laptop and real enough
# that the numbers mean something.
#
# Getting a data set onto a machine sounds trivial and is where many course
# notebooks break years later. This step shows the three things that make it
# reliable, all done by `dz.datasets.MNIST`:
#
# 1. **Mirrors.** The files are published in several places, and any one of
#    them may disappear or start refusing downloads. The package keeps a list
#    and tries each in turn.
# 2. **Verification.** Every file has a published size and MD5 checksum. A
#    download that was cut short, an HTML error page saved under the file's
#    name, or a mirror serving something else is rejected, not parsed into
#    garbage.
# 3. **Atomic caching.** Bytes are written to a temporary file in the cache
#    directory and only renamed to the real name once verified
#    (`os.replace` is atomic). An interrupted download therefore never leaves
#    a half-file that a later run would trust.

# %%
import hashlib
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import DataLoader, datasets, optimizers
from dezero_like.models import MLP
from dezero_like.plot import output_dir, plot_curves

out_dir = output_dir(53)  # every file this step writes goes here

# %% [markdown]
# ## Where the files live
#
# The cache is `<data dir>/mnist/`. The data directory is, in order of
# preference, the `data_dir=` argument, the environment variable
# `DEZERO_LIKE_DATA`, or `~/.dezero_like`. Setting `DEZERO_LIKE_OFFLINE=1`
# forbids any download (the tests and CI do this). These are the four files and
# their published checksums:

# %%
print("data directory:", datasets.data_root())
print("downloads allowed:", datasets.downloads_allowed())
for key, (name, md5, size) in datasets.MNIST.FILES.items():
    print(f"{key:13s} {name:28s} {size:>10,} bytes  md5 {md5}")

# %% [markdown]
# ## Verification in action
#
# `datasets.download(urls, path, md5=..., size=...)` is the function the
# dataset uses. To watch it refuse bad data without touching the internet we
# serve files from a temporary folder with `file://` URLs: a "mirror" whose copy
# is truncated, and one whose copy is intact.

# %%
payload = b"pretend these are the bytes of a data file\n" * 100
payload_md5 = hashlib.md5(payload).hexdigest()  # what a publisher prints next to the file

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    (tmp / "bad").mkdir()
    (tmp / "good").mkdir()
    (tmp / "bad" / "data.bin").write_bytes(payload[:1000])  # cut short
    (tmp / "good" / "data.bin").write_bytes(payload)
    cache = tmp / "cache"
    try:
        datasets.download((tmp / "bad" / "data.bin").as_uri(), cache / "data.bin",
                          md5=payload_md5, size=len(payload), progress=False)
    except OSError as e:
        print("rejected:", e)
    print("files in the cache after the failure:", sorted(p.name for p in cache.iterdir()))
    urls = [(tmp / m / "data.bin").as_uri() for m in ("bad", "good")]
    datasets.download(urls, cache / "data.bin", md5=payload_md5, size=len(payload),
                      progress=False)
    print("after trying both mirrors:", sorted(p.name for p in cache.iterdir()))

# %% [markdown]
# ## Loading MNIST
#
# The files use the simple IDX format: a 4-byte magic number (`0x00000803` for
# images, `0x00000801` for labels), one 4-byte size per dimension, then the raw
# bytes. `datasets.load_idx` checks the magic number and that the length
# matches the header, so a damaged file gives a clear error.
#
# `dz.datasets.mnist_train_test()` returns a training and a test set. With the
# real training images in the cache (or downloadable) those are the official
# 60,000/10,000 split. Offline, where often only the 10,000 **test** images are
# available (as in this project's CI), it trains on the first 8,000 test
# images and evaluates on the other 2,000, and says so: a model trained that
# way is still evaluated on digits it never saw, but the numbers are not the
# official benchmark.

# %%
train_set, test_set = dz.datasets.mnist_train_test()
print(train_set.summary)
print("train:", len(train_set), " test:", len(test_set))
x, t = train_set[0]
print("one example:", x.shape, x.dtype, f"values in [{x.min()}, {x.max()}], label {t}")
print("stored as:", train_set.data.shape, train_set.data.dtype)

# %% [markdown]
# The default transform (step 51) flattens each image and scales it to
# $[0, 1]$ in float32; the stored data stays uint8. A look at some digits:

# %%
fig, axes = plt.subplots(2, 8, figsize=(8, 2.4))
for ax, i in zip(axes.ravel(), range(16)):
    ax.imshow(train_set.data[i, 0], cmap="gray_r")
    ax.set_title(str(train_set.label[i]), fontsize=9)
    ax.axis("off")
plt.show()

# %% [markdown]
# ## Training an MLP
#
# The model is a multilayer perceptron 784 → 100 → 10 with ReLU,
# $\mathrm{relu}(x) = \max(0, x)$, between the layers, trained with plain SGD
# on mini-batches of 100 and the softmax cross entropy loss of step 49. Three
# epochs are enough to see a real result. Bigger MLPs trained longer do
# better: LeCun's MNIST page lists a 784-800-10 network at 1.6% test error
# (Simard, Steinkraus and Platt, 2003, "Best Practices for Convolutional Neural
# Networks Applied to Visual Document Analysis"), i.e. 98.4% accuracy.

# %%
np.random.seed(0)
max_epoch, batch_size = 3, 100
train_loader = DataLoader(train_set, batch_size)
test_loader = DataLoader(test_set, batch_size, shuffle=False)
model = MLP((100, 10), activation=F.relu)
optimizer = optimizers.SGD(lr=0.5).setup(model)


def evaluate(model, loader):
    """Mean loss and accuracy over every example of the loader, without a graph."""
    sum_loss = sum_acc = 0.0
    with dz.no_grad():
        for x, t in loader:
            y = model(x)
            sum_loss += float(F.softmax_cross_entropy(y, t).data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)
    n = len(loader.dataset)
    return sum_loss / n, sum_acc / n


losses = []
start = time.perf_counter()
for epoch in range(max_epoch):
    sum_loss = 0.0
    for x, t in train_loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        sum_loss += float(loss.data) * len(t)
    test_loss, test_acc = evaluate(model, test_loader)
    print(f"epoch {epoch + 1}: train loss {sum_loss / len(train_set):.4f}  "
          f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}")
elapsed = time.perf_counter() - start
print(f"{max_epoch} epochs in {elapsed:.1f} s")

# %%
plot_curves({"mini-batch loss": losses}, xlabel="iteration", title="Training loss on MNIST",
            to_file=out_dir / "loss.png")

# %% [markdown]
# Where does the model go wrong? The digits it gets wrong are often ones a
# person would hesitate over too:

# %%
with dz.no_grad():
    pred = model(np.stack([test_set[i][0] for i in range(len(test_set))])).data.argmax(axis=1)
wrong = np.flatnonzero(pred != test_set.label)
print(f"{len(wrong)} of {len(test_set)} test digits misclassified")
fig, axes = plt.subplots(1, 8, figsize=(8, 1.6))
for ax, i in zip(axes, wrong[:8]):
    ax.imshow(test_set.data[i, 0], cmap="gray_r")
    ax.set_title(f"{test_set.label[i]}→{pred[i]}", fontsize=9)
    ax.axis("off")
plt.show()

# %% [markdown]
# ## Exercise
# Write `per_class_accuracy(pred, labels)`, which returns an array of 10
# numbers: for each digit $d$, the fraction of examples with label $d$ that
# were predicted as $d$. The self-check confirms that weighting these by how
# often each digit occurs gives back the overall accuracy.

# %%
# solution:
def per_class_accuracy(pred, labels):
    return np.array([(pred[labels == d] == d).mean() for d in range(10)])


per_class = per_class_accuracy(pred, test_set.label)
counts = np.bincount(test_set.label, minlength=10)
overall = (pred == test_set.label).mean()
assert per_class.shape == (10,)
assert abs((per_class * counts).sum() / counts.sum() - overall) < 1e-9
print("hardest digit:", int(per_class.argmin()), f"({per_class.min():.3f})")
print("self-check passed")
