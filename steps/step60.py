# %% [markdown]
# # Step 60: CNN models: a small CNN on MNIST, and VGG16's structure
#
# With `conv2d` (step 58) and pooling (step 59) in the package, a
# convolutional network is just a `Model` whose layers include `Conv2d`.
# Like `Linear`, `Conv2d` creates its weights on the first call, from the
# number of channels it receives, so a model is written by listing output
# sizes only.
#
# The classic CNN recipe alternates *feature extraction* and *downsampling*:
#
# `conv -> ReLU -> pool -> conv -> ReLU -> pool -> flatten -> Linear -> ReLU -> Linear`
#
# Early convolutions find small local patterns (edges, stroke ends); pooling
# halves the map so that the next convolution's 3×3 window covers a larger
# part of the digit; the fully connected layers at the end combine the
# features into a decision.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.functions_conv as Fc
from dezero_like import DataLoader, optimizers
from dezero_like.models import MLP
from dezero_like.models_conv import VGG16, SimpleConvNet, summary
from dezero_like.plot import output_dir, plot_curves

out_dir = output_dir(60)  # every file this step writes goes here

np.random.seed(0)

# %% [markdown]
# ## SimpleConvNet, layer by layer
#
# `dezero_like.models_conv.SimpleConvNet` is that recipe with 16 and 32
# filters of size 3×3 (padding 1 keeps the size) and 2×2 max pooling. Follow
# one batch of 5 images through it and watch the shapes:

# %%
model = SimpleConvNet()
x = np.random.rand(5, 1, 28, 28).astype(np.float32)
h = F.relu(model.conv1(x))
print("conv1 + ReLU:", h.shape)
h = Fc.pooling(h, 2, 2)
print("pool:        ", h.shape)
h = F.relu(model.conv2(h))
print("conv2 + ReLU:", h.shape)
h = Fc.pooling(h, 2, 2)
print("pool:        ", h.shape)
h = F.flatten(h)
print("flatten:     ", h.shape)
print("logits:      ", model(x).shape)

# %% [markdown]
# `summary` computes the same shapes from the layer settings alone and counts
# the parameters. A convolution has $OC \cdot C \cdot K_H K_W + OC$ of them,
# however large the image: most of this model's parameters sit in the first
# fully connected layer.

# %%
for name, shape, n in summary(model, (1, 28, 28)):
    print(f"{name:6s} {str(shape):14s} {n:>8,}")
print(f"total  {sum(p.size for p in model.params()):>23,}")

# %% [markdown]
# ## Training on MNIST
#
# `dz.datasets.mnist_train_test()` gives the official 60,000/10,000 split
# when the training images are cached; offline, as in this project's CI, it
# trains on 8,000 of the 10,000 real *test* images and evaluates on the other
# 2,000 (it prints which). To keep this demo short, each model sees 8,000
# training images once (80 batches of 100), and is then evaluated on images
# it never saw. The MLP is trained the same way, for comparison.

# %%
train_set, test_set = dz.datasets.mnist_train_test()
print(train_set.summary)
train_loader = DataLoader(train_set, batch_size=100, seed=0)
test_loader = DataLoader(test_set, batch_size=500, shuffle=False)


def evaluate(model, loader):
    """Mean accuracy over a loader, with no graph and dropout off."""
    correct, n = 0.0, 0
    with dz.no_grad(), dz.test_mode():
        for xb, tb in loader:
            correct += float(F.accuracy(model(xb), tb).data) * len(tb)
            n += len(tb)
    return correct / n


def train(model, n_batches=80, lr=0.001, log_every=20):
    optimizer = optimizers.Adam(lr).setup(model)
    losses = []
    start = time.perf_counter()
    for i, (xb, tb) in enumerate(train_loader, start=1):
        loss = F.softmax_cross_entropy(model(xb), tb)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        if i % log_every == 0:
            print(f"  batch {i:3d}: loss {np.mean(losses[-log_every:]):.3f}")
        if i == n_batches:
            break
    return losses, time.perf_counter() - start


np.random.seed(0)
cnn = SimpleConvNet()
print("SimpleConvNet")
cnn_losses, cnn_seconds = train(cnn)
cnn_acc = evaluate(cnn, test_loader)
np.random.seed(0)
mlp = MLP((100, 10), activation=F.relu)
print("MLP 784-100-10")
mlp_losses, mlp_seconds = train(mlp)
mlp_acc = evaluate(mlp, test_loader)
print(f"test accuracy: CNN {cnn_acc:.3f} ({cnn_seconds:.0f} s), "
      f"MLP {mlp_acc:.3f} ({mlp_seconds:.0f} s)")
plot_curves({"mini-batch loss": {"SimpleConvNet": cnn_losses, "MLP 784-100-10": mlp_losses}},
            xlabel="iteration", to_file=out_dir / "losses.png")

# %% [markdown]
# After the same training, the CNN makes markedly fewer mistakes. It is built
# to know two things the MLP has to discover from data: neighbouring pixels
# belong together, and a stroke means the same wherever it appears (the same
# filter is applied at every position). It has about twice the MLP's
# parameters (163 thousand against 80 thousand) and costs much more
# computation per image, since every filter visits every position.
#
# What did the first layer learn? Each of its 16 filters is a 3×3 patch of
# weights; bright and dark areas show the pattern it responds to.

# %%
filters = cnn.conv1.W.data[:, 0]
fig, axes = plt.subplots(2, 8, figsize=(8, 2.2))
for ax, w in zip(axes.ravel(), filters):
    ax.imshow(w, cmap="gray")
    ax.axis("off")
fig.suptitle("conv1 filters after training")
plt.show()

# %% [markdown]
# ## VGG16: the same recipe, scaled up
#
# VGG16 (Simonyan and Zisserman, 2014) won a place in the 2014 ImageNet
# challenge with a strikingly uniform design: only 3×3 convolutions with
# padding 1, in five blocks of 2, 2, 3, 3 and 3 layers with 64 to 512
# channels, each block followed by 2×2 max pooling; then three fully
# connected layers. Two stacked 3×3 convolutions see a 5×5 region, three see
# 7×7, with fewer parameters than one large kernel.
#
# `VGG16()` builds its layers lazily, so constructing it allocates nothing:
# `summary` reads its structure for a 224×224 RGB image.

# %%
vgg = VGG16()
rows = summary(vgg, (3, 224, 224))
for name, shape, n in rows:
    print(f"{name:8s} {str(shape):17s} {n:>12,}")
vgg_total = sum(n for _, _, n in rows)
print(f"total parameters: {vgg_total:,}")
print(f"fc6 alone: {dict((r[0], r[2]) for r in rows)['fc6'] / vgg_total:.0%} of them")
print(f"as float32: {vgg_total * 4 / 2**20:,.0f} MiB")

# %% [markdown]
# The 13 convolutions hold only 15 million of the 138 million parameters;
# `fc6`, which connects the final 512×7×7 map to 4,096 units, holds 74%.
# (Later architectures replace it with global average pooling.)
#
# Trained ImageNet weights for this layout are a download of that size (the
# last line above: 4 bytes per parameter).
# `VGG16(pretrained=True)` looks for them in `<data dir>/models/vgg16.npz`
# (or `weights_file=...`) and, when they are not there, raises an error that
# says where to put the file; it never downloads anything without a pinned
# checksum.
#
# ## Exercise
# 1. How many parameters does `Conv2d(32, kernel_size=3)` have when it
#    receives 16 channels? Set `n_conv2`.
# 2. What is the output shape (channels, height, width) of VGG16's last
#    pooling layer for a 160×160 input? Set `vgg_last_pool`.

# %%
n_conv2 = 32 * 16 * 3 * 3 + 32  # solution: weights plus one bias per filter
vgg_last_pool = (512, 5, 5)  # solution: 160 halves five times to 5
assert n_conv2 == dict((r[0], r[2]) for r in summary(model, (1, 28, 28)))["conv2"], "n_conv2"
assert vgg_last_pool == [r for r in summary(vgg, (3, 160, 160)) if r[0] == "pool"][-1][1]
print("self-check passed")
