import numpy as np
import pytest


def test_round_trip_gives_identical_outputs(load_step):
    step = load_step(55)
    assert step.trained_acc > 0.9
    assert bool(step.same_outputs)
    assert step.loaded_acc == step.trained_acc
    for p, q in zip(step.model.params(), step.fresh.params()):
        np.testing.assert_array_equal(p.data, q.data)
        assert p.data.dtype == np.float32


def test_round_trip_through_a_new_file(load_step, tmp_path):
    step = load_step(55)
    path = tmp_path / "w.npz"
    step.model.save_weights(path)
    np.random.seed(9)
    m = step.MLP((30, 3), activation=step.F.relu)
    m.load_weights(path)
    assert step.same_weights(step.model, m)


def test_malicious_file_never_runs_its_payload(load_step, tmp_path, capsys):
    step = load_step(55)
    assert "!!! code from the weights file ran !!!" not in step.output
    assert "np.load refused: Object arrays cannot be loaded when allow_pickle=False" in step.output
    assert "load_weights refused:" in step.output and "never loaded" in step.output
    # the same attack, built again here, against a model: refused, nothing printed
    evil = tmp_path / "evil.npz"
    np.savez(evil, **{"l0/W": np.array([step.Payload()], dtype=object), "l0/b": np.zeros(30),
                      "l1/W": np.zeros((30, 3)), "l1/b": np.zeros(3)})
    before = [p.data.copy() for p in step.fresh.params()]
    with pytest.raises(ValueError, match="Python objects"):
        step.fresh.load_weights(evil)
    assert "code from the weights file ran" not in capsys.readouterr().out
    for b, p in zip(before, step.fresh.params()):
        np.testing.assert_array_equal(b, p.data)


def test_mismatch_and_damage_are_refused(load_step):
    out = load_step(55).output
    assert "l0/W has shape (2, 30), the model expects (2, 50)" in out
    assert "unchanged: True" in out
    assert "broken.npz" in out and "may be truncated" in out


def test_same_weights_exercise(load_step):
    step = load_step(55)
    assert step.same_weights(step.model, step.fresh)
    assert not step.same_weights(step.model, step.unrelated)
    assert "self-check passed" in step.output
