import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import dezero_like as dz


def test_numbers_dataset_batches_keep_the_last_partial_batch(load_step):
    step = load_step(52)
    loader = step.DataLoader(step.Numbers(), batch_size=4, shuffle=False)
    batches = [(x.ravel().tolist(), t.tolist()) for x, t in loader]
    assert batches == [([0, 1, 2, 3], [0, 1, 0, 1]), ([4, 5, 6, 7], [0, 1, 0, 1]),
                       ([8, 9], [0, 1])]


def test_accuracy_of_the_worked_example(load_step):
    step = load_step(52)
    assert float(step.F.accuracy(step.scores, step.labels).data) == 0.5


def test_spiral_training_beats_chance_by_far(load_step):
    step = load_step(52)
    h = step.history
    assert len(h["train_loss"]) == 300
    assert h["train_loss"][-1] < 0.3 * h["train_loss"][0]
    assert h["train_acc"][-1] > 0.9
    assert h["test_acc"][-1] > 0.9  # chance is 1/3


def test_evaluate_weights_batches_by_size(load_step):
    step = load_step(52)

    class Const:
        """Predicts class 0 for every example."""

        def __call__(self, x):
            y = np.zeros((len(x), 3), dtype=np.float32)
            y[:, 0] = 1
            return dz.Variable(y)

    class Labels(dz.datasets.Dataset):
        # 5 examples: batch sizes 4 and 1; class 0 only in the last batch
        def prepare(self):
            self.data = np.zeros((5, 2), dtype=np.float32)
            self.label = np.array([1, 1, 1, 1, 0])

    loader = step.DataLoader(Labels(), batch_size=4, shuffle=False)
    assert step.evaluate(Const(), loader) == 0.2  # not the mean of batch accuracies (0.5)


def test_demo_output(load_step):
    out = load_step(52).output
    assert "batches per epoch: 3" in out
    assert "x [8. 9.]  t [0 1]" in out
    assert "accuracy: 0.5" in out
    assert "epoch 300" in out
    assert "self-check passed" in out



GPU_TRUE = """
import dezero_like
from dezero_like.dataloaders import DataLoader
assert not hasattr(DataLoader, "to_gpu"), "step 54 writes to_gpu"
try:
    loader = DataLoader(list(zip(range(10), range(10))), 4, gpu=True)
except RuntimeError as error:  # no GPU here: the error says so, and how to get one
    assert "A GPU was requested" in str(error), error
    print("refused:", dezero_like.__file__)
else:
    assert loader.gpu is True
    print("on the GPU:", dezero_like.__file__)
"""


def test_gpu_true_works_on_the_package_as_it_stood_at_step_52(tmp_path):
    # DataLoader(..., gpu=True) is taken from step 52 on, before step 54 writes to_gpu: the
    # loader must check for a GPU itself (it called self.to_gpu(): an AttributeError)
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, str(root / "tools" / "export.py"), "upto", "52",
                    str(tmp_path / "pkg")], check=True, capture_output=True, text=True)
    run = subprocess.run([sys.executable, "-c", GPU_TRUE], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "pkg")})
    assert run.returncode == 0, run.stderr[-2000:]
    assert str(tmp_path / "pkg") in run.stdout
