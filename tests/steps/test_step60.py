"""Step 60 trains a CNN on real MNIST. Tests never download: the step reads the shared
test images (the 8,000/2,000 split), with downloads forbidden."""

import os
from pathlib import Path

import numpy as np
import pytest

# Set before the step (or its notebook) runs; an existing setting wins.
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
os.environ.setdefault("DEZERO_LIKE_OFFLINE", "1")
os.environ.setdefault("DEZERO_LIKE_DATA", str(SHARED_DATA))


@pytest.fixture
def step(load_step, mnist_dir):  # mnist_dir: skip, with the reason, when the files are absent
    return load_step(60)


def test_layer_shapes(step):
    assert "conv1 + ReLU: (5, 16, 28, 28)" in step.output
    assert "flatten:      (5, 1568)" in step.output
    assert step.model(step.x).shape == (5, 10)


def test_the_offline_split_is_announced(step):
    if step.train_set.source == "official":
        assert len(step.train_set) == 60000
        return
    assert (len(step.train_set), len(step.test_set)) == (8000, 2000)
    assert "training on 8,000 of the 10,000 MNIST test images" in step.output


def test_cnn_learns_and_beats_the_mlp_trained_the_same_way(step):
    assert len(step.cnn_losses) == len(step.mlp_losses) == 80
    assert np.mean(step.cnn_losses[-10:]) < np.mean(step.cnn_losses[:10]) / 3
    assert step.cnn_acc > 0.92
    assert step.cnn_acc > step.mlp_acc + 0.02
    # the number printed is the model's real accuracy on the held-out images
    assert step.evaluate(step.cnn, step.test_loader) == pytest.approx(step.cnn_acc)


def test_vgg16_structure(step):
    assert step.vgg_total == 138_357_544
    names = [r[0] for r in step.rows]
    assert names.count("pool") == 5 and sum(n.startswith("conv") for n in names) == 13
    assert "total parameters: 138,357,544" in step.output
    assert "self-check passed" in step.output


def test_the_batch_norm_variant_trains_on_the_same_batches_and_ends_lower(step):
    assert len(step.bn_losses) == len(step.cnn_losses) == 80
    # same starting weights as the plain CNN, so the comparison is of the batch norm alone
    assert np.mean(step.bn_losses[-20:]) < np.mean(step.cnn_losses[-20:])
    assert "with batch norm" in step.output and "losses_batchnorm.png" in step.output
