import numpy as np


def test_spiral_dataset_interface(load_step):
    step = load_step(51)
    assert len(step.train_set) == 300
    x, t = step.train_set[0]
    assert x.shape == (2,) and x.dtype == np.float32 and 0 <= t < 3


def test_noisy_sine_dataset_is_reproducible(load_step):
    step = load_step(51)
    a, b = step.NoisySine(), step.NoisySine()
    assert len(a) == 100
    np.testing.assert_array_equal(a.data, b.data)
    assert not np.array_equal(step.NoisySine(train=False).data, a.data)
    x, t = a[3]
    assert x.shape == (1,) and t.shape == (1,)
    # labels are the sine of the inputs plus small noise
    resid = a.label - np.sin(2 * np.pi * a.data)
    assert 0.05 < resid.std() < 0.15


def test_mnist_style_pipeline_and_standardisation(load_step):
    step = load_step(51)
    np.testing.assert_allclose(step.v, [0.0, 0.2, 0.8, 1.0], rtol=1e-6)
    assert step.v.dtype == np.float32
    all_x = np.stack([step.scaled[i][0] for i in range(len(step.scaled))])
    np.testing.assert_allclose(all_x.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(all_x.std(axis=0), 1, rtol=1e-4)


def test_exercise_pipeline(load_step):
    step = load_step(51)
    out = step.pipeline(np.array([-1.0, 0.55, 2.0]))
    np.testing.assert_allclose(out, [0.0, 0.2, 1.0], rtol=1e-6)


def test_demo_output(load_step):
    out = load_step(51).output
    assert "examples: 300" in out
    assert "points per class: [100 100 100]" in out
    assert "stored data unchanged: True" in out
    assert "batch: (5, 2)" in out
    assert "self-check passed" in out


def test_normalize_warns_when_unit_statistics_meet_raw_integer_pixels():
    import warnings

    import pytest

    from dezero_like import transforms as T

    image = np.random.default_rng(0).integers(0, 256, (28, 28), dtype=np.uint8)
    image[0, 0] = 255
    with pytest.warns(UserWarning, match=r"Normalize\(mean=0\.1307, std=0\.3081\) got integer "
                      r"data up to 255.*scaled to \[0, 1\].*Compose\(\[ToFloat\(\), "
                      r"Normalize\(0, 255\), Normalize\(0\.1307, 0\.3081\)\]\)") as caught:
        T.Normalize(0.1307, 0.3081)(image)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed = T.Compose([T.ToFloat(), T.Normalize(0, 255), T.Normalize(0.1307, 0.3081)])
        assert fixed(image).max() < 3  # (1 - 0.1307) / 0.3081 = 2.82
        T.Normalize(0.0, 255.0)(image)  # raw pixels with raw statistics
        T.Normalize(128, 64)(image)
        T.Normalize(0.5, 0.5)(np.array([0, 1, 1, 0]))  # integer data already in [0, 1]
