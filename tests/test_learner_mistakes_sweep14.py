"""Fourteenth sweep: learner mistakes of Stages 1-3 that gave wrong numbers without a word.

* a ``backward`` that forgets its ``return``: the bare ``None`` was taken as "no gradient", so
  ``x.grad`` stayed None and the error came later, far from the cause. Now step 23's
  ``_grads_tuple`` refuses it and names the Function.
* step 33's Newton loop with the second ``x.cleargrad()`` left out (``gx = x.grad;
  gx.backward()``): ``x.grad`` *is* ``gx``, so the second derivative was added to the first
  and the loop divided by ``f' + f''``. Now step 70's backward loop warns when a leaf's
  gradient is the very variable being differentiated.
* in the step snapshots 13-22 (their own code, not the package), a two-input Function whose
  backward returned one gradient: ``zip(f.inputs, gxs)`` stopped at the shorter one, so the
  second input's ``.grad`` stayed None (and a third gradient was dropped). Now each
  snapshot's backward loop refuses a count that does not match, as the package does (step 23).
"""

import warnings

import numpy as np
import pytest

from dezero_like import Function, Variable


class _ForgetsReturn(Function):
    def forward(self, x):
        return 3 * x

    def backward(self, gy):
        gy * 3  # the learner's mistake: no return


class _Triple(Function):
    def forward(self, x):
        return 3 * x

    def backward(self, gy):
        return gy * 3


class _NoGradientOnPurpose(Function):
    """A backward that gives its one input no gradient, as a tuple: still allowed."""

    def forward(self, x):
        return 3 * x

    def backward(self, gy):
        return (None,)


def test_a_backward_that_forgets_its_return_is_named():
    x = Variable(np.array([1.0, 2.0]))
    y = _ForgetsReturn()(x)
    with pytest.raises(TypeError, match=r"_ForgetsReturn\.backward returned None: did it forget "
                                        r"its return\?.*\(None,\)"):
        y.backward()
    # in the middle of a chain too, where the None would have stopped the gradient silently
    x = Variable(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"_ForgetsReturn\.backward returned None"):
        _Triple()(_ForgetsReturn()(x)).backward()


def test_backwards_that_return_a_gradient_or_none_in_a_tuple_are_unchanged():
    x = Variable(np.array([1.0, 2.0]))
    _Triple()(x).backward(np.array([1.0, 0.5]))
    np.testing.assert_array_equal(x.grad.data, [3.0, 1.5])
    x = Variable(np.array([1.0, 2.0]))
    _NoGradientOnPurpose()(x).backward()
    assert x.grad is None


def _newton_step(x, clear_between):
    """One pass of step 33's loop: f' and f'' of f(x) = x**4 - 2 x**2 by two backwards."""
    y = x**4 - 2 * x**2
    x.cleargrad()
    y.backward(create_graph=True)
    gx = x.grad
    if clear_between:
        x.cleargrad()
    gx.backward()
    return gx, x.grad


def test_newtons_loop_without_the_second_cleargrad_warns_that_f2_is_added_to_f1():
    x = Variable(np.array(2.0))
    with pytest.warns(RuntimeWarning, match=r"x\.grad adds its result to x\.grad itself.*"
                                            r"f' \+ f''.*x\.cleargrad\(\).*step 33") as record:
        gx, gx2 = _newton_step(x, clear_between=False)
    # the numbers the warning is about: f'(2) = 24, f''(2) = 44, and .grad holds their sum
    assert float(gx2.data) == 24.0 + 44.0
    assert record[0].filename == __file__  # it points at the learner's gx.backward() line
    named = Variable(np.array(2.0), name="w")
    with pytest.warns(RuntimeWarning, match=r"backward\(\) of w\.grad adds its result to w\.grad"):
        _newton_step(named, clear_between=False)


def test_newtons_loop_as_step_33_writes_it_and_double_backprop_stay_quiet():
    x = Variable(np.array(2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx, gx2 = _newton_step(x, clear_between=True)
        assert (float(gx.data), float(gx2.data)) == (24.0, 44.0)
        # step 35's loop: each derivative of the last, with cleargrad in between
        x = Variable(np.array(1.0))
        y = x**3
        y.backward(create_graph=True)
        for expected in (6.0, 6.0):
            gx = x.grad
            x.cleargrad()
            gx.backward(create_graph=True)
            assert float(x.grad.data) == expected  # (x**3)'' = 6x, (x**3)''' = 6
        # gradients accumulated over two backwards on purpose stay quiet
        x = Variable(np.array(3.0))
        (x * x).backward()
        (x * x).backward()
        assert float(x.grad.data) == 12.0


@pytest.mark.parametrize("number", range(13, 23))
def test_a_snapshot_backward_with_a_gradient_too_few_or_too_many_is_refused(load_step, number):
    step = load_step(number)

    class MulForgetsOne(step.Function):
        def forward(self, a, b):
            return a * b

        def backward(self, gy):
            return gy * self.inputs[1].data  # b's gradient forgotten

    class MulWithAnExtra(MulForgetsOne):
        def backward(self, gy):
            a, b = self.inputs
            return gy * b.data, gy * a.data, gy

    class MulRight(MulForgetsOne):
        def backward(self, gy):
            a, b = self.inputs
            return gy * b.data, gy * a.data

    for cls, given in ((MulForgetsOne, 1), (MulWithAnExtra, 3)):
        a, b = step.Variable(np.array(2.0)), step.Variable(np.array(3.0))
        y = cls()(a, b)
        with pytest.raises(RuntimeError, match=rf"{cls.__name__}\.backward returned {given} "
                                               r"gradients for 2 inputs: return one per input"):
            y.backward()
    a, b = step.Variable(np.array(2.0)), step.Variable(np.array(3.0))
    MulRight()(a, b).backward()
    assert (float(a.grad), float(b.grad)) == (3.0, 2.0)


def test_a_3d_image_to_conv2d_or_pooling_gets_both_readings_of_its_shape():
    """PyTorch takes one unbatched image (C, H, W); here a 3-d input may also be a batch of
    one-channel images (N, H, W). The message names the fix for each reading, not only one."""
    import dezero_like.functions as F
    import dezero_like.layers as L

    image = np.ones((3, 8, 8), np.float32)
    for call in (lambda: F.conv2d(image, np.ones((4, 3, 3, 3), np.float32)),
                 lambda: F.pooling(image, 2),
                 lambda: L.Conv2d(4, 3)(image)):
        with pytest.raises(ValueError, match=r"got shape \(3, 8, 8\)") as info:
            call()
        assert "x.reshape(N, 1, H, W)" in str(info.value) and "x[None]" in str(info.value)
    with pytest.raises(ValueError, match=r"x\.reshape\(1, 1, H, W\)"):
        F.pooling(np.ones((8, 8)), 2)
