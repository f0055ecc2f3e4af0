import ast
import re
from pathlib import Path

import numpy as np
import pytest

import dezero_like
import dezero_like as dz
import dezero_like.functions as F

# Each expression gets the variable plus the `square` and `exp` of one framework.
EXPRESSIONS = {
    "2.0 - x": lambda x, sq, ex: 2.0 - x,
    "x / 2": lambda x, sq, ex: x / 2,
    "x ** 3": lambda x, sq, ex: x**3,
    "np.array(2.0) * x": lambda x, sq, ex: np.array(2.0) * x,
    "-x + 6 / x": lambda x, sq, ex: -x + 6 / x,
    "x * x + x": lambda x, sq, ex: x * x + x,
    "x + x (aliasing)": lambda x, sq, ex: x + x,
    "diamond": lambda x, sq, ex: sq(sq(x)) + sq(sq(x)),
    "sigmoid": lambda x, sq, ex: 1 / (1 + ex(-x)),
    "(x - 2) ** 3 / x - 1.5 * x + 4": lambda x, sq, ex: (x - 2) ** 3 / x - 1.5 * x + 4,
    "exp(x ** 2) / (1 + square(x))": lambda x, sq, ex: ex(x**2) / (1 + sq(x)),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_package_agrees_with_step22_snapshot(load_step, rng, name, shape):
    snap = load_step(22)
    expr = EXPRESSIONS[name]
    v = rng.uniform(0.3, 2.0, size=shape)

    xs = snap.Variable(v.copy())
    ys = expr(xs, snap.square, snap.exp)
    ys.backward()

    xp = dz.Variable(v.copy())
    yp = expr(xp, F.square, F.exp)
    yp.backward()

    assert isinstance(yp, dz.Variable)
    np.testing.assert_allclose(yp.data, ys.data, rtol=1e-12)
    np.testing.assert_allclose(xp.grad.data, xs.grad, rtol=1e-12)
    assert dz.utils.gradient_check(lambda x: expr(x, F.square, F.exp), v)


@pytest.mark.parametrize("name", ["2.0 - x", "x / 2", "x ** 3", "sigmoid"])
def test_package_keeps_float32_like_the_snapshot(load_step, name):
    snap = load_step(22)
    expr = EXPRESSIONS[name]
    v = np.array([0.5, 1.5], dtype=np.float32)
    ys = expr(snap.Variable(v.copy()), snap.square, snap.exp)
    yp = expr(dz.Variable(v.copy()), F.square, F.exp)
    assert ys.dtype == yp.dtype == np.float32


def test_top_level_exports():
    for name in ("Variable", "Function", "as_variable", "as_array", "no_grad",
                 "using_config", "Config"):
        assert hasattr(dz, name), name
        assert getattr(dz, name) is getattr(dezero_like.core, name)
    for name in ("numerical_grad", "gradient_check", "array_equal", "array_allclose"):
        assert callable(getattr(dezero_like.utils, name)), name


def test_step_uses_the_package_not_a_copy(load_step):
    """Step 23 shows the package's code in export cells; everything else uses the package."""
    step = load_step(23)
    assert step.dz is dezero_like
    source = (Path(__file__).resolve().parents[2] / "steps" / "step23.py").read_text()
    cells = re.split(r"^# %%.*$", source, flags=re.M)
    exported = [c for c in cells if c.lstrip().startswith("#| export dezero_like/")]
    assert any("class Function" in c for c in exported), "step 23 writes core.py"
    own_code = "\n".join(c for c in cells if c not in exported)
    own_classes = {node.name for node in ast.walk(ast.parse(own_code))
                   if isinstance(node, ast.ClassDef)}
    assert not any(isinstance(v, type) and issubclass(v, dz.Function)
                   for k, v in vars(step).items() if k in own_classes)


def test_demo_output(load_step):
    out = load_step(23).output
    assert "dezero_like.core: The heart of dezero_like" in out
    assert "2.0 - x            = -1.000   dy/dx = -1.000   result is a Variable" in out
    assert "x + x:   y.grad = variable(1.0)  x.grad = variable(2.0)  same object: False" in out
    assert "diamond: x.grad = variable(64.0)  a.grad = None" in out
    assert "gradient_check: True" in out
    assert "self-check passed" in out


class _CubeForgettingGy(dz.Function):
    """x^3 whose backward leaves out gy: a learner's slip that gradient_check must catch."""

    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return 3 * x**2


def test_gradient_check_leads_its_failure_message_with_the_hint():
    """A self-check names the likely mistake through ``hint=``, and gradient_check's own
    words (the worst element) follow it; the hint is not handed on to ``f``."""
    x = np.array([0.5, -1.0, 2.0])
    hint = "Cube's backward is wrong: reread the chain rule"
    with pytest.raises(AssertionError) as caught:
        dz.utils.gradient_check(lambda v: _CubeForgettingGy()(v), x, hint=hint)
    message = str(caught.value)
    assert message.startswith(hint + " (gradient_check("), message
    assert "worst element" in message and message.endswith(")"), message
    # a right function passes, and f never sees the hint (this f takes no keyword at all)
    assert dz.utils.gradient_check(lambda v: v**3, x, hint=hint)
    # the other keywords still go on to f
    assert dz.utils.gradient_check(lambda v, power: v**power, x, hint=hint, power=3)
    with pytest.raises(TypeError, match="hint must be a string"):
        dz.utils.gradient_check(lambda v: v**3, x, hint=3)


def test_gradient_check_without_a_hint_says_what_it_always_said():
    with pytest.raises(AssertionError, match=r"^gradient_check\(.*\) failed for input of shape"):
        dz.utils.gradient_check(lambda v: _CubeForgettingGy()(v), np.array([0.5, -1.0, 2.0]))
