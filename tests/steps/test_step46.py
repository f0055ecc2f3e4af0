import numpy as np

from dezero_like.models import MLP, Model


def test_mlp_structure(load_step):
    step = load_step(46)
    assert isinstance(step.mlp, Model)
    shapes = [q.shape for q in step.mlp.params()]
    assert shapes == [(1, 10), (10,), (10, 1), (1,)]
    assert "4 parameter arrays, 31 numbers" in step.output


def test_sequential_and_custom_model(load_step):
    step = load_step(46)
    assert step.seq(np.zeros((2, 8), np.float32)).shape == (2, 3)
    assert len(list(step.seq.params())) == 6
    assert isinstance(step.res, Model) and len(list(step.res.params())) == 4
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(step.res(x).data, x + step.res.inner(x).data)


def test_mlp_fits_sine_in_float32(load_step):
    step = load_step(46)
    assert step.losses[-1] < 0.1
    assert all(q.dtype == np.float32 for q in step.model.params())
    assert isinstance(step.model, MLP)


def test_exercise(load_step):
    step = load_step(46)
    assert step.count == 901
    assert "self-check passed" in step.output
