import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def test_trains_on_the_packages_spiral(load_step):
    step = load_step(50)
    x, t = dz.datasets.get_spiral(train=True)
    np.testing.assert_array_equal(step.x, x)
    np.testing.assert_array_equal(step.t, t)
    assert step.x.dtype == np.float32 and np.bincount(step.t).tolist() == [100, 100, 100]


def test_accuracy_well_above_chance(load_step):
    step = load_step(50)
    assert step.train_accuracy > 0.9
    assert step.test_accuracy > 0.8
    assert step.history[-1] < 0.3 * step.history[0]


def test_accuracy_recomputed_independently(load_step):
    step = load_step(50)
    with dz.no_grad():
        scores = step.model(step.x).data
    assert np.isclose((scores.argmax(axis=1) == step.t).mean(), step.train_accuracy)
    assert F.accuracy(scores, step.t).dtype == np.float32


def test_decision_boundary_covers_all_classes(load_step):
    step = load_step(50)
    assert set(np.unique(step.predicted)) == {0, 1, 2}


def test_self_check(load_step):
    assert "self-check passed" in load_step(50).output


def test_loss_and_decision_regions_picture(load_step):
    step = load_step(50)
    path = step.out_dir / "loss_and_boundary.png"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and f"wrote {path}" in step.output
    loss_ax, regions_ax = step.fig.axes
    for ax in (loss_ax, regions_ax):
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    # each class's points are drawn in the colour of its region
    points = regions_ax.collections[-3:]
    for c, scatter in enumerate(points):
        assert np.allclose(scatter.get_facecolor()[0][:3], step.ListedColormap(step.colours)(c)[:3])
    assert set(np.unique(step.predicted)) == {0, 1, 2}
