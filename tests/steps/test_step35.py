import numpy as np

import dezero_like as dz
import dezero_like.functions as F


def test_node_counts_grow_with_every_order(load_step):
    counts = load_step(35).counts
    funcs = [c[0] for c in counts]
    nodes = [c[1] for c in counts]
    assert len(counts) == 7
    assert all(b > a for a, b in zip(funcs, funcs[1:]))
    assert all(b > a for a, b in zip(nodes, nodes[1:]))
    assert funcs[6] > 100 * funcs[0]


def test_derivatives_match_finite_differences_of_the_previous_order():
    xs = np.array([-1.3, -0.2, 0.4, 1.0, 2.1])
    h = 1e-6

    def nth(values, n):
        x = dz.Variable(np.asarray(values, dtype=np.float64))
        g = F.tanh(x)
        for _ in range(n):
            x.cleargrad()
            g.backward(create_graph=True)
            g = x.grad
        return g.data

    for n in range(1, 5):
        fd = (nth(xs + h, n - 1) - nth(xs - h, n - 1)) / (2 * h)
        assert np.allclose(nth(xs, n), fd, rtol=1e-5, atol=1e-6)


def test_values_match_hand_derived_formulas(load_step):
    step = load_step(35)
    for order in range(4):
        assert np.isclose(float(step.derivs[order].data), step.exact[order], rtol=1e-12)


def test_images_are_written(load_step, tmp_path):
    step = load_step(35)
    image = dz.utils.plot_dot_graph(step.derivs[2], verbose=False, to_file=tmp_path / "d2.svg")
    svg = image.path.read_text()
    assert svg.count(">Mul<") >= 2 and ">Tanh<" in svg and ">x<" in svg


def test_exp_graph_does_not_grow(load_step):
    assert max(load_step(35).exp_counts) <= 2


def test_demo_output(load_step):
    out = load_step(35).output
    assert "order 6:  337 functions" in out
    assert "self-check passed" in out
