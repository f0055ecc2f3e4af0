import numpy as np


def _diamond(step, value):
    x = step.Variable(np.array(value))
    a = step.square(x)
    y = step.add(step.square(a), step.square(a))
    return x, a, y


def test_diamond_is_right_only_in_generation_order(load_step):
    step = load_step(16)
    x, a, y = _diamond(step, 2.0)
    y.backward()
    assert x.grad == 8 * 2.0**3  # 64
    assert a.grad == 4 * a.data

    x, a, y = _diamond(step, 2.0)
    ran = step.backward_stack_order(y)
    assert x.grad == 96.0  # the partial gradient of `a` was pushed through twice
    assert x.grad != 8 * 2.0**3
    assert len(ran) == 5 and ran.count(a.creator) == 2


def test_generations_count_depth(load_step):
    step = load_step(16)
    x, a, y = _diamond(step, 1.0)
    assert x.generation == 0
    assert a.creator.generation == 0 and a.generation == 1
    assert y.creator.generation == 2 and y.generation == 3
    # a function takes the largest generation of its inputs
    z = step.add(x, a)
    assert z.creator.generation == 1 and z.generation == 2


def test_generation_order_matches_numerical_gradient(load_step, rng):
    step = load_step(16)

    def f(v):
        b = step.square(v)
        return step.add(step.add(b, step.exp(b)), step.square(step.square(b)))

    v = rng.normal(size=(3,)) * 0.5
    x = step.Variable(v.copy())
    f(x).backward()
    expected = 2 * v + 2 * v * np.exp(v**2) + 8 * v**7
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)
    eps = 1e-6
    numerical = (f(step.Variable(v + eps)).data - f(step.Variable(v - eps)).data) / (2 * eps)
    np.testing.assert_allclose(x.grad, numerical, rtol=1e-6)


def test_demo_output(load_step):
    out = load_step(16).output
    assert "stack order:       x.grad = 96.0" in out
    assert "generation order:  x.grad = 64.0" in out
    assert "self-check passed" in out


def test_dfs_order_is_topological_and_hits_the_recursion_limit(load_step):
    step = load_step(16)
    assert "DFS order: [('Add', 2), ('Square', 1), ('Square', 1), ('Square', 0)]" in step.output
    assert "RecursionError" in step.output
    assert "x.grad = 1.0 (expected 1.0)" in step.output


def test_the_picture_of_the_diamond_shows_each_generation(load_step):
    step = load_step(16)
    path = step.image.path
    assert path.name == "generations.svg" and path.parent.name == "step16"
    assert path.parent.parent.name == "outputs"
    svg = path.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "</svg>" in svg
    dot = step.image.dot_path.read_text()
    # the nodes the prose points at: the generations, and a's gradient summed over both paths
    for label in ("x: generation 0", "a: generation 1\\ndata 4\\ngrad 16",
                  "b: generation 2", "c: generation 2", "y: generation 3", "grad 64"):
        assert label in dot, f"{label!r} missing from the drawn graph:\n{dot}"
    assert dot.count('label="Square"') == 3 and dot.count('label="Add"') == 1
    assert "a: generation 1" in svg  # the rendered picture, not only its source
