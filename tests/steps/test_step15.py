import numpy as np


def test_naive_inplace_accumulation_aliases_and_corrupts_y_grad(load_step):
    step = load_step(15)
    x = step.InplaceVariable(np.array(3.0))
    y = step.add(x, x)
    y.backward()
    assert y.grad is x.grad
    assert y.grad == 2.0  # wrong: dy/dy is 1
    assert x.grad == 2.0


def test_fixed_accumulation_keeps_distinct_arrays(load_step):
    step = load_step(15)
    x = step.Variable(np.array(3.0))
    y = step.add(x, x)
    y.backward()
    assert y.grad == 1.0
    assert x.grad == 2.0
    assert y.grad is not x.grad
    assert not np.shares_memory(y.grad, x.grad)


def test_fixed_accumulation_on_arrays(load_step, rng):
    step = load_step(15)
    v = rng.normal(size=(3,))
    x = step.Variable(v.copy())
    y = step.add(step.add(x, x), x)
    y.backward()
    np.testing.assert_array_equal(y.grad, np.ones(3))
    np.testing.assert_array_equal(x.grad, np.full(3, 3.0))


def test_accumulate_grad_never_writes_into_the_incoming_array(load_step):
    step = load_step(15)
    x = step.Variable(np.array(1.0))
    first = np.array(2.0)
    x.accumulate_grad(first)
    x.accumulate_grad(np.array(5.0))
    assert x.grad == 7.0
    assert first == 2.0  # untouched


def test_demo_output(load_step):
    out = load_step(15).output
    assert "after b += 1:    a = 2.0" in out
    assert "naive  x.grad += gx:       y.grad = 2.0  x.grad = 2.0  same array: True" in out
    assert "fixed  x.grad = x.grad + gx: y.grad = 1.0  x.grad = 2.0  same array: False" in out
    assert "self-check passed" in out


def test_the_picture_sets_the_corrupted_y_grad_beside_the_fixed_one(load_step):
    step = load_step(15)
    path = step.figure_path
    assert path.name == "inplace_vs_fixed.png" and path.parent.name == "step15"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    ax = step.fig.axes[0]
    assert ax.get_ylabel() and ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["y.grad (true: 1)",
                                                            "x.grad (true: 2)"]
    naive, fixed = ax.containers  # one group of bars per rule, in the legend's order
    assert [b.get_height() for b in naive] == [2.0, 2.0]  # y.grad corrupted, x.grad right
    assert [b.get_height() for b in fixed] == [1.0, 2.0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(step.rules)
