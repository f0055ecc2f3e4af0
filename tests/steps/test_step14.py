import numpy as np


def test_add_x_x_gives_gradient_two(load_step):
    step = load_step(14)
    x = step.Variable(np.array(3.0))
    y = step.add(x, x)
    y.backward()
    assert y.data == 6.0
    assert x.grad == 2.0


def test_step13_loop_overwrites_and_is_wrong(load_step):
    step = load_step(14)
    x = step.Variable(np.array(3.0))
    step.backward_step13(step.add(x, x))
    assert x.grad == 1.0


def test_three_paths_accumulate(load_step, rng):
    step = load_step(14)
    v = rng.normal(size=(2, 3))
    x = step.Variable(v.copy())
    y = step.add(step.add(step.square(x), step.square(x)), x)  # 2x^2 + x
    y.backward()
    np.testing.assert_allclose(x.grad, 4 * v + 1)


def test_cleargrad_makes_a_new_graph_clean(load_step):
    step = load_step(14)
    x = step.Variable(np.array(3.0))
    step.add(x, x).backward()
    assert x.grad == 2.0
    x.cleargrad()
    assert x.grad is None
    step.add(step.add(x, x), x).backward()
    assert x.grad == 3.0


def test_without_cleargrad_gradients_of_two_graphs_add_up(load_step):
    step = load_step(14)
    x = step.Variable(np.array(3.0))
    step.add(x, x).backward()
    step.add(step.add(x, x), x).backward()
    assert x.grad == 5.0


def test_demo_output(load_step):
    out = load_step(14).output
    assert "step-13 loop:   x.grad = 1.0" in out
    assert "accumulating:   x.grad = 2.0" in out
    assert "second graph after cleargrad: x.grad = 3.0" in out
    assert "self-check passed" in out
