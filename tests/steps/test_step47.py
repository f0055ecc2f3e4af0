import numpy as np
import pytest

from dezero_like import optimizers


def test_each_optimizer_matches_its_rule(load_step):
    step = load_step(47)
    assert set(step.max_diffs) == {"SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"}
    for name, diff in step.max_diffs.items():
        assert diff < 1e-12, name


@pytest.mark.parametrize("name", ["SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"])
def test_rule_on_a_different_problem(load_step, name):
    """The step's hand rules against fresh optimizers on a shifted bowl, 10 steps."""
    step = load_step(47)
    kwargs = {"SGD": {"lr": 0.05}, "MomentumSGD": {"lr": 0.05, "momentum": 0.9},
              "AdaGrad": {"lr": 0.5}, "AdaDelta": {}, "Adam": {"alpha": 0.1}}[name]
    opt = getattr(optimizers, name)(**kwargs)
    bowl = step.Bowl()
    bowl.w.data = np.array([-2.0, 0.5])
    opt.setup(bowl)
    w, state = bowl.w.data.copy(), {}
    for t in range(1, 11):
        bowl.cleargrads()
        bowl().backward()
        opt.update()
        w = step.pairs[name][1](w, step.a * w, state, t)
    np.testing.assert_allclose(bowl.w.data, w, rtol=1e-12)


def test_optimizers_train_the_network(load_step):
    step = load_step(47)
    for name, loss in step.final.items():
        assert loss < 0.2, name


def test_exercise(load_step):
    assert "self-check passed" in load_step(47).output


def test_bias_correction_ratio_and_pictures(load_step):
    step = load_step(47)
    # without the correction the first Adam step is about 3.2 times too large
    assert "t =     1: uncorrected step / corrected step = 3.16" in step.output
    assert step.out_dir.parts[-2:] == ("outputs", "step47") and step.out_dir.is_absolute()
    for name in ("bowl_paths.png", "sine_losses.png"):
        path = step.out_dir / name
        assert path.read_bytes().startswith(b"\x89PNG")
        assert f"wrote {path}" in step.output
    assert set(step.histories) == {"SGD", "MomentumSGD", "Adam"}
    assert all(len(h) == 1000 for h in step.histories.values())
