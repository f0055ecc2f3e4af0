"""Step 53 trains on real MNIST. Tests never download: the step reads the shared
test images (the 8,000/2,000 split), with downloads forbidden."""

import os
import re
from pathlib import Path

import numpy as np

# Set before the step (or its notebook) runs; an existing setting wins.
# (Better placed in tests/conftest.py, for every test that reads MNIST.)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
os.environ.setdefault("DEZERO_LIKE_OFFLINE", "1")
os.environ.setdefault("DEZERO_LIKE_DATA", str(SHARED_DATA))


def test_the_offline_split_is_used_and_announced(load_step):
    step = load_step(53)
    if step.train_set.source == "official":  # a full cache was configured: nothing to check
        assert len(step.train_set) == 60000
        return
    assert (len(step.train_set), len(step.test_set)) == (8000, 2000)
    assert ("training on 8,000 of the 10,000 MNIST test images because the training set is "
            "not available offline") in step.output


def test_verification_rejected_the_truncated_mirror_and_kept_nothing(load_step):
    out = load_step(53).output
    assert "is rejected (as intended): could not download data.bin" in out
    assert "received 1,000 bytes, expected 4,300 (truncated or wrong file)" in out
    assert "files in the cache after the failure: []" in out
    assert "after trying both mirrors: ['data.bin']" in out


def test_mlp_reaches_90_percent_on_unseen_real_digits(load_step):
    step = load_step(53)
    loss, acc = step.evaluate(step.model, step.test_loader)
    assert acc >= 0.90
    assert step.losses[-1] < step.losses[0] / 3
    final = re.findall(r"epoch 3: .* test accuracy (\d\.\d+)", step.output)
    assert final and abs(float(final[0]) - acc) < 6e-5  # printed with 4 decimals


def test_per_class_accuracy_exercise(load_step):
    step = load_step(53)
    labels = np.concatenate([np.arange(10), np.arange(10)])
    pred = labels.copy()
    pred[[2, 12, 3]] = 7  # digit 2 always wrong, digit 3 wrong once
    got = step.per_class_accuracy(pred, labels)
    assert got.shape == (10,)
    np.testing.assert_allclose(got, [1, 1, 0, 0.5, 1, 1, 1, 1, 1, 1])


def test_demo_output(load_step):
    out = load_step(53).output
    assert "t10k-images-idx3-ubyte.gz     1,648,877 bytes  md5 9fb629c4189551a2d022fa330f9573f3" \
        in out
    assert "one example: (784,) float32 values in [0.0, 1.0]" in out
    assert "self-check passed" in out
