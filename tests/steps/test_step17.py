import numpy as np
import pytest


@pytest.fixture
def recorded(load_step, monkeypatch):
    """Wrap the step's own Square/Add/Exp backward to record each call and its output grads."""
    step = load_step(17)
    calls = []
    for cls in (step.Square, step.Add, step.Exp):
        original = cls.backward

        def backward(self, *gys, _original=original):
            calls.append((self, [np.copy(o.grad) if o.grad is not None else None
                                 for o in self.outputs]))
            return _original(self, *gys)

        monkeypatch.setattr(cls, "backward", backward)
    return step, calls


def test_diamond_each_backward_once_with_complete_output_grads(recorded):
    step, calls = recorded
    x = step.Variable(np.array(2.0))
    a = step.square(x)
    b, c = step.square(a), step.square(a)
    y = step.add(b, c)
    y.backward()
    funcs = [f for f, _ in calls]
    assert len(funcs) == 4 and len(set(map(id, funcs))) == 4  # each exactly once
    # stable tie-break: b's Square was queued before c's
    assert funcs == [y.creator, b.creator, c.creator, a.creator]
    # at call time the output grads already had their final (complete) values
    for f, grads_then in calls:
        for out, g in zip(f.outputs, grads_then):
            assert g is not None
            np.testing.assert_array_equal(g, out.grad)
    assert a.grad == 16.0
    assert x.grad == 8 * 2.0**3


def test_complex_graph_matches_numerical_and_runs_each_function_once(recorded, rng):
    step, calls = recorded

    def f(v):
        a = step.square(v)
        b = step.exp(a)
        c = step.add(a, b)
        return step.add(step.square(c), step.add(b, a))

    v = rng.normal(size=(4,)) * 0.5
    x = step.Variable(v.copy())
    y = f(x)
    y.backward()
    assert len(calls) == 6 and len({id(g) for g, _ in calls}) == 6
    for g, grads_then in calls:
        for out, gr in zip(g.outputs, grads_then):
            np.testing.assert_array_equal(gr, out.grad)
    # generations never increase along the call order
    gens = [g.generation for g, _ in calls]
    assert gens == sorted(gens, reverse=True)
    eps = 1e-6
    num = (f(step.Variable(v + eps)).data - f(step.Variable(v - eps)).data) / (2 * eps)
    np.testing.assert_allclose(x.grad, num, rtol=1e-6)


def test_ties_run_in_arrival_order(recorded):
    step, calls = recorded
    x0, x1 = step.Variable(np.array(1.0)), step.Variable(np.array(2.0))
    s0, s1 = step.square(x0), step.square(x1)
    step.add(s1, s0).backward()  # Add queues s1's creator first
    assert [f for f, _ in calls][1:] == [s1.creator, s0.creator]


def test_stacked_diamonds_linear_work(recorded):
    step, calls = recorded
    x = step.Variable(np.array(1.0))
    y = x
    for _ in range(60):
        y = step.add(y, y)
    y.backward()
    assert len(calls) == 60
    assert x.grad == 2.0**60


def test_demo_output(load_step):
    out = load_step(17).output
    assert "TypeError: '<' not supported" in out
    assert "Square a=x^2  generation 0, output grads [16.0]" in out
    assert "backward calls = 100 , x.grad == 2**100: True" in out
    assert "self-check passed" in out


def test_the_picture_shows_the_queue_before_each_pop(load_step):
    step = load_step(17)
    path = step.figure_path
    assert path.name == "queue_pops.png" and path.parent.name == "step17"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    ax = step.fig.axes[0]
    assert ax.get_xlabel() == "pop number" and ax.get_ylabel() == "generation"
    marks = [(line.get_marker(), round(float(line.get_xdata()[0])), float(line.get_ydata()[0]))
             for line in ax.get_lines()]
    popped = sorted((x, g) for m, x, g in marks if m == "o")
    waiting = sorted((x, g) for m, x, g in marks if m == "s")
    # one pop per function, highest generation first
    assert popped == [(1, 2.0), (2, 1.0), (3, 1.0), (4, 0.0)], popped
    # the prose points at pop 3: the Square of generation 0 waits while c's Square is popped
    assert waiting == [(2, 1.0), (3, 0.0)], waiting
    labels = {t.get_text() for t in ax.texts}
    assert {"Add y=b+c", "Square a=x^2", "Square b=a^2", "Square c=a^2"} <= labels
