import warnings

import numpy as np
import pytest

import dezero_like as dz


def test_dropout_mask_scale_and_expectation(load_step):
    step = load_step(56)
    y = step.F.dropout(np.ones(50_000, dtype=np.float32), 0.25).data
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.75)}
    assert abs(np.mean(y == 0) - 0.25) < 0.01
    assert abs(y.mean() - 1.0) < 0.02
    assert "fraction dropped: 0.501   mean: 0.999   dtype: float32" in step.output


def test_test_mode_is_identity_and_restores_the_flag(load_step):
    out = load_step(56).output
    assert "inside test_mode, Config.train: False" in out
    assert "dropout is the identity: [1. 1. 1. 1. 1. 1. 1. 1. 1. 1.]" in out
    assert "after the block, Config.train: True" in out
    assert dz.Config.train is True


def test_gradient_is_the_same_scaled_mask(load_step):
    step = load_step(56)
    kept = step.out.data != 0
    np.testing.assert_array_equal(step.v.grad.data, np.where(kept, 2.0, 0.0))
    np.testing.assert_array_equal(step.out.data, np.where(kept, 2 * step.v.data, 0.0))


def test_dropout_model_is_deterministic_only_in_test_mode(load_step):
    step = load_step(56)
    model = step.models[0.5]
    x = step.x_test[:5]
    with dz.no_grad():
        with pytest.warns(UserWarning, match=r"dropout ran in training mode under no_grad\(\)"):
            assert not np.array_equal(model(x).data, model(x).data)
        with dz.test_mode(), warnings.catch_warnings():
            warnings.simplefilter("error")  # in test mode, quiet
            np.testing.assert_array_equal(model(x).data, model(x).data)
    plain = step.models[0.0]
    with dz.no_grad(), warnings.catch_warnings():  # ratio 0: no randomness, and no warning
        warnings.simplefilter("error")
        np.testing.assert_array_equal(plain(x).data, plain(x).data)


def test_dropout_regularises_the_sine_fit(load_step):
    step = load_step(56)
    (train0, test0), (train5, test5) = step.mse[0.0], step.mse[0.5]
    assert train5 > train0  # cannot memorise the noise as well
    assert test5 < 0.5 * test0  # and, with this seed, is much closer to the true curve


def test_my_gaussian_dropout_exercise(load_step):
    step = load_step(56)
    np.random.seed(3)
    x = np.full(100_000, 2.0)
    a = step.my_gaussian_dropout(x, 0.6) / x  # each element's own factor, drawn from N(1, r/(1-r))
    assert np.all(a != 0)
    assert abs(a.mean() - 1.0) < 0.02 and abs(a.var() - 0.6 / 0.4) < 0.05
    with dz.test_mode():
        assert step.my_gaussian_dropout(x, 0.6) is x
    assert "self-check passed" in step.output
