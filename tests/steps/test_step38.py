import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.utils import gradient_check


def test_grads_keep_the_input_shape(load_step):
    step = load_step(38)
    for shape in [(3,), (2, 3), (2, 1, 4)]:
        x = dz.Variable(np.random.default_rng(0).normal(size=shape))
        F.sum(step.f(x)).backward()
        assert x.grad.shape == shape


def test_step_function_passes_gradient_check(load_step):
    step = load_step(38)
    assert gradient_check(step.f, np.random.default_rng(1).normal(size=(2, 5)))


def test_elementwise_backward_is_elementwise_derivative():
    x = dz.Variable(np.linspace(-2, 2, 12).reshape(3, 4))
    F.sin(x).backward()
    np.testing.assert_allclose(x.grad.data, np.cos(x.data))


def test_demo_output(load_step):
    step = load_step(38)
    out = step.output
    assert "x.grad.shape: (2, 3) == x.shape: True" in out
    assert "equals cos(x): True" in out
    np.testing.assert_allclose(step.grad_a.data, np.tanh(step.a.data) + step.a.data
                               * (1 - np.tanh(step.a.data) ** 2))
    assert "weighted grad: variable([ 0.  0. 40.])" in out
    assert "self-check passed" in out


def test_the_picture_shows_x_y_and_x_grad_as_grids_of_one_shape(load_step):
    step = load_step(38)
    path = step.figure_path
    assert path.name == "grad_shape.png" and path.parent.name == "step38"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    ax = step.fig.axes[0]
    assert ax.get_title()
    texts = [t.get_text() for t in ax.texts]
    for title in ("x (2, 3)", "y = sin(x) (2, 3)", "x.grad = cos(x) (2, 3)"):
        assert title in texts, f"{title!r} is not drawn: {texts}"
    assert len(ax.patches) == 3 * 6  # three grids of 2 x 3 cells
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for values in (x, np.sin(x), np.cos(x)):  # every cell's number, rounded as drawn
        for v in np.round(values, 2).ravel():
            assert f"{v:g}" in texts, f"{v:g} is not in a cell: {texts}"
