"""Watching backprop: frames in the backward's own order, GIF/APNG written and readable."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import dezero_like as dz
from dezero_like import graph
from dezero_like.animate import BackpropAnimation, record_backward

HAVE_RENDERER = shutil.which("dot") is not None or graph._installed_command(
    graph.FALLBACK_PROGRAM) is not None
needs_renderer = pytest.mark.skipif(not HAVE_RENDERER, reason="no DOT renderer installed")


def diamond(Variable, square, add):
    x = Variable(np.array(2.0))
    a = square(x)
    y = add(square(a), square(a))
    return x, a, y


def test_package_frames_follow_the_backward_order():
    x = dz.Variable(np.array(2.0), name="x")
    a = x * x
    b = a * 3.0
    y = b + a  # Add runs first, then 3a's Mul, then x*x's Mul (after both paths reached a)
    anim = record_backward(y)
    assert [type(f).__name__ for f in anim.order] == ["Add", "Mul", "Mul"]
    assert anim.order == [y.creator, b.creator, a.creator]
    gens = [f.generation for f in anim.order]
    assert gens == sorted(gens, reverse=True)
    assert len(anim) == 4  # one frame per function, and the finished picture
    assert x.grad.data == pytest.approx(4 * 2.0 * 2.0)  # d(4x^2)/dx = 8x = 16
    last = anim.frames[-1][1]
    assert pytest.approx(float(last[graph._var_key(x)])) == 16.0
    first = anim.frames[0][1]
    assert graph._var_key(x) not in first  # nothing reached x before Add ran
    assert type(y.creator).backward is type(y.creator).__dict__["backward"]  # put back


def test_step16_frames_show_generation_order_and_the_stack_order_bug(load_step):
    step = load_step(16)
    x, a, y = diamond(step.Variable, step.square, step.add)
    anim = record_backward(y)
    assert [f.generation for f in anim.order] == [2, 1, 1, 0]
    assert x.grad == 64.0
    x, a, y = diamond(step.Variable, step.square, step.add)
    wrong = record_backward(y, backward=lambda: step.backward_stack_order(y))
    assert len(wrong.order) == 5 and wrong.order.count(a.creator) == 2  # a's creator twice
    assert x.grad == 96.0
    # the first time a's creator ran, a's gradient was only half known (8 of 16)
    first_visit = wrong.order.index(a.creator)
    assert float(wrong.frames[first_visit][1][graph._var_key(a)]) == 8.0


def test_step17_frames_match_its_heap_order(load_step):
    step = load_step(17)
    x, a, y = diamond(step.Variable, step.square, step.add)
    anim = record_backward(y)
    assert [f.generation for f in anim.order] == [2, 1, 1, 0]
    assert float(anim.frames[-1][1][graph._var_key(x)]) == 64.0


def test_step15_frames_show_a_gradient_changed_in_place(load_step):
    step = load_step(15)
    x = step.Variable(np.array(3.0))
    y = step.add(x, x)
    anim = record_backward(y)
    assert [float(g) for g in anim.gradients(y)] == [1.0, 1.0]  # the fixed rule
    assert anim.gradients(x)[0] is None and float(anim.gradients(x)[-1]) == 2.0
    # the naive += writes into the array y.grad is: y's gradient changes after the fact
    x = step.InplaceVariable(np.array(3.0))
    y = step.add(x, x)
    naive = record_backward(y)
    assert [float(g) for g in naive.gradients(y)] == [1.0, 2.0]


@needs_renderer
@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_animation_is_written_and_readable(tmp_path, suffix):
    from PIL import Image

    x = dz.Variable(np.array(2.0), name="x")
    y = (x * x) * 3.0 + x
    anim = record_backward(y)
    path = anim.save(tmp_path / "out" / f"backprop{suffix}")
    assert path.is_absolute() and path.exists()
    with Image.open(path) as im:
        assert im.n_frames == len(anim) == 4
        assert im.format == ("GIF" if suffix == ".gif" else "PNG")
    assert "backward of Mul" in anim.dot(1)
    assert anim._repr_html_().startswith('<img src="data:image/gif;base64,')


def test_bad_input_is_refused(tmp_path):
    with pytest.raises(TypeError, match="expects a Variable"):
        record_backward(np.array(1.0))
    with pytest.raises(ValueError, match="not a leaf"):
        record_backward(dz.Variable(np.array(1.0)))
    x = dz.Variable(np.array(2.0))
    anim = record_backward(x * x)
    assert isinstance(anim, BackpropAnimation)
    with pytest.raises(ValueError, match=r"\.gif or \.png"):
        anim.save(tmp_path / "a.mp4")
    with pytest.raises(IndexError, match="has 2"):
        anim.dot(5)


def test_a_subclass_calling_super_backward_is_one_frame():
    from dezero_like.functions import Sin

    class TracedSin(Sin):
        def backward(self, gy):
            return super().backward(gy)

    original = Sin.__dict__["backward"]
    x = dz.Variable(np.array(0.5))
    y = TracedSin()(x) * 2.0
    anim = record_backward(y)
    assert [type(f).__name__ for f in anim.order] == ["Mul", "TracedSin"]
    assert len(anim) == 3
    assert Sin.__dict__["backward"] is original and "backward" in vars(TracedSin)


def test_values_false_draws_gradients_without_values():
    x = dz.Variable(np.array(2.0), name="x")
    y = dz.functions.exp(x) * x  # y = 14.78 (unnamed), dy/dx = (1 + x) e^x = 22.17
    frames = record_backward(y, values=False)
    texts = [frames.dot(i) for i in range(len(frames))]
    assert not any("data " in t or "14.78" in t for t in texts)  # no value, not even y's
    assert "grad 22.17" in texts[-1] and 'label="grad 1"' in texts[0]  # gradients still drawn
    x = dz.Variable(np.array(2.0), name="x")
    with_values = record_backward(dz.functions.exp(x) * x)  # the default draws values
    assert "data 14.78" in with_values.dot(0) and "x\\ndata 2\\ngrad 22.17" in with_values.dot(-1)
