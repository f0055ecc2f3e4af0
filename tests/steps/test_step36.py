import numpy as np

from dezero_like.utils import numerical_grad


def test_gradient_penalty_value_and_gradient(load_step):
    step = load_step(36)
    assert np.isclose(float(step.penalty.data), step.by_hand, rtol=1e-12)
    assert step.W.grad is not None
    assert np.allclose(numerical_grad(step.gradient_penalty, step.W0), step.numerical)
    assert np.max(np.abs(step.numerical - load_grad(step))) < 1e-6


def load_grad(step):
    import dezero_like as dz

    W = dz.Variable(step.W0)
    p = step.gradient_penalty(W)
    W.cleargrad()
    p.backward()
    return W.grad.data


def test_penalty_descent_pushes_norms_towards_one(load_step):
    step = load_step(36)
    assert float(step.p.data) < 0.05 * step.by_hand
    assert np.all(np.abs(step.final_norms - 1) < 0.2)


def test_hessian_vector_product_matches_analytic_hessian(load_step, rng):
    step = load_step(36)
    for _ in range(3):
        x = rng.normal(size=step.n)
        v = rng.normal(size=step.n)
        H = (step.A + step.A.T) / 2 + np.diag(2 * x)
        assert np.allclose(step.hvp(x, v), H @ v, rtol=1e-12, atol=1e-12)


def test_full_hessian(load_step):
    step = load_step(36)
    assert np.allclose(step.H_auto, step.H, rtol=1e-12, atol=1e-12)
    assert np.isclose(step.curvature, step.u @ step.H @ step.u)


def test_demo_output(load_step):
    out = load_step(36).output
    assert "full Hessian matches: True" in out
    assert "self-check passed" in out


def test_the_picture_shows_the_norms_closing_in_on_one(load_step):
    step = load_step(36)
    path = step.figure_path
    assert path.name == "penalty_descent.png" and path.parent.name == "step36"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
    left, right = step.fig.axes
    for ax in (left, right):
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    norms = np.array([line.get_ydata() for line in left.get_lines()[:8]])  # one per input
    assert norms.shape == (8, 200)
    # the first step's norms are the spread the prose quotes, the last ones near 1
    assert np.isclose(norms[:, 0].min(), 0.12, atol=0.01) and np.isclose(norms[:, 0].max(), 1.12,
                                                                         atol=0.01)
    assert np.all(np.abs(norms[:, -1] - 1) < np.abs(norms[:, 0] - 1).max())
    penalty = np.asarray(right.get_lines()[0].get_ydata())
    assert right.get_yscale() == "log" and penalty[-1] < 0.05 * penalty[0]
