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
    assert set(step.final) == {"SGD", "MomentumSGD", "Adam"}
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


def test_setup_warns_about_a_weight_kept_as_a_plain_variable():
    import warnings

    import dezero_like as dz
    import dezero_like.layers as L

    class Affine(L.Layer):
        def __init__(self):
            super().__init__()
            np.random.seed(0)
            self.W = dz.Variable(np.random.randn(3, 2))  # should be a Parameter
            self.b = dz.Parameter(np.zeros(2))

        def forward(self, x):
            return x @ self.W + self.b

    with pytest.warns(UserWarning, match=r"Affine\.W is a Variable, not a Parameter, so params\(\) "
                      r"does not see it.*self\.W = dz\.Parameter\(\.\.\.\)") as caught:
        optimizers.SGD().setup(Affine())
    assert caught[0].filename == __file__  # points at the setup() call

    class Stateful(L.Layer):  # what a layer may keep without a warning
        def __init__(self):
            super().__init__()
            self.l1 = L.Linear(2, in_size=3)
            self.h = None  # an RNN's state before the first call
            self.made = dz.Variable(np.ones(2)) * 2.0  # computed by a graph
            self.constant = dz.Variable(np.ones(2), requires_grad=False)
            self.ids = dz.Variable(np.arange(3))  # integers

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizers.SGD().setup(Stateful())
        optimizers.SGD().setup(dz.models.MLP((3, 1)))
