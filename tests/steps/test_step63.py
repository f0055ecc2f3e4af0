"""Step 63: seeding backward(gradient=...), and requires_grad=False."""

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F


def test_seed_gives_the_vector_jacobian_product(rng):
    a = rng.standard_normal((2, 3))
    v = rng.standard_normal((2, 3))
    x = dz.Variable(a)
    y = F.sin(x) * x
    y.backward(gradient=v)
    np.testing.assert_allclose(x.grad.data, v * (np.cos(a) * a + np.sin(a)))
    # same as differentiating sum(v * y)
    x2 = dz.Variable(a)
    F.sum(F.sin(x2) * x2 * v).backward()
    np.testing.assert_allclose(x.grad.data, x2.grad.data)


def test_variable_seed_and_dtype_follow_the_output():
    x = dz.Variable(np.array([1.0, 2.0], dtype=np.float32))
    y = x * 3.0
    y.backward(gradient=dz.Variable(np.array([1.0, -1.0])))  # float64 seed
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.data, [3.0, -3.0])


def test_no_seed_means_ones_for_a_non_scalar_output():
    x = dz.Variable(np.array([1.0, 2.0, 3.0]))
    (x**2).backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0, 6.0])


@pytest.mark.parametrize("seed", [[1.0, 1.0, 1.0], 1.0, "ones", np.float64(1.0)])
def test_seed_that_is_not_an_array_is_a_type_error(seed):
    y = dz.Variable(np.ones(3)) * 2.0
    with pytest.raises(TypeError, match=r"backward\(gradient=...\) takes an ndarray or a Variable"):
        y.backward(gradient=seed)


@pytest.mark.parametrize("shape", [(3, 1), (1, 3), (), (4,)])
def test_seed_of_the_wrong_shape_names_both_shapes(shape):
    y = dz.Variable(np.ones(3)) * 2.0
    with pytest.raises(ValueError) as info:
        y.backward(gradient=np.ones(shape))
    assert f"has shape {shape}" in str(info.value)
    assert "output has shape (3,)" in str(info.value)


def test_requires_grad_false_gets_no_gradient_and_no_graph():
    c = dz.Variable(np.array([1.0, 2.0]), requires_grad=False)
    w = dz.Variable(np.array([3.0, 4.0]))
    y = F.sum(w * c)
    y.backward()
    assert c.grad is None
    np.testing.assert_array_equal(w.grad.data, [1.0, 2.0])
    z = F.exp(c) + c
    assert z.creator is None and z.requires_grad is False
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.backward()


def test_step_runs_and_teaches(load_step):
    step = load_step(63)
    out = step.output
    assert "seed = [1, 0, -1]:      x.grad = [ 2.  0. -6.]" in out
    assert "gradient of sum(v * y): x.grad = [ 2.  0. -6.]" in out
    assert "TypeError: backward(gradient=...) takes an ndarray" in out
    assert ("ValueError: backward(gradient=...) has shape (3, 1), but the output has shape (3,)"
            in out)
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "PyTorch is not installed" in out
    else:
        assert "PyTorch says: grad can be implicitly created only for scalar outputs" in out
    assert "data.grad = None" in out
    assert "Mul.needs_input_grad = (True, False)" in out
    assert "RuntimeError: backward() was called on a variable that does not require grad" in out
    assert "self-check passed" in out


def test_exercise_jacobian(load_step):
    step = load_step(63)
    a = np.array([0.3, -0.7])
    J = step.jacobian(lambda x: F.sin(x) * F.sum(x), a)
    expected = np.diag(np.cos(a) * a.sum()) + np.sin(a)[:, None]
    np.testing.assert_allclose(J, expected)


def test_pytorch_names_say_what_to_write(load_step):
    out = load_step(63).output
    assert ("'Variable' object has no attribute 'numpy': that is PyTorch's name; here write "
            "x.data") in out
    assert "'MLP' object has no attribute 'zero_grad': that is PyTorch's name; here write " \
           "model.cleargrads()" in out
    assert "'SGD' object has no attribute 'step': that is PyTorch's name; here write " \
           "optimizer.update()" in out


def _svg_root(path):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(path.read_text())
    assert root.tag.endswith("svg"), f"{path} is not an SVG"
    return root


def test_constant_branch_graph(load_step):
    """The graph backward walks: w (orange, with its gradient) and the constant exp(data) (grey,
    no gradient) feed Mul; no Exp box, since Exp recorded nothing."""
    step = load_step(63)
    _svg_root(step.image.path)
    assert step.image.path.name == "constant_branch.svg" and step.image.path.parent.name == "step63"
    dot = step.image.dot_path.read_text()
    boxes = [line for line in dot.splitlines() if "shape=box" in line]
    assert sorted(b.split('label="')[1].split('"')[0] for b in boxes) == ["Mul", "Sum"]
    grey = [line for line in dot.splitlines() if "#dddddd" in line]
    assert len(grey) == 1 and "exp(data)" in grey[0] and "grad -" in grey[0]
    w_node = next(line for line in dot.splitlines() if 'label="w\\n' in line)
    assert "#ffd08a" in w_node and "grad [1.649, 0.3679, 7.389]" in w_node
