# %% [markdown]
# # Step 10: Testing, with unittest and a gradient checker
#
# Every function we add has two parts that can go wrong independently: the
# `forward` formula and the hand-derived `backward`. A wrong `backward` is the
# dangerous one. Nothing crashes; training just quietly goes the wrong way.
#
# Two tools guard against that:
#
# * **Unit tests.** Python's built-in `unittest` module (and `pytest`, which
#   runs the same tests) turns "I tried it once and it looked right" into
#   checks that run again after every change.
# * **A gradient checker.** Hand-computed expected gradients only cover the
#   points we worked out. The numerical derivative of step 04 gives an
#   independent answer anywhere, so we compare backprop against it on random
#   inputs. This *gradient check* is how every function in this course is
#   tested from now on.
#
# The checker nudges **one element at a time**. Step 04's `numerical_diff`
# nudges all elements at once, which is only right when each output element
# depends on one input element; the checker must also work for functions
# that mix elements (sums, matrix products). It works in float64: in float32
# the central difference at the checker's `eps=1e-4` keeps only about four
# digits (step 04's table), far more error than the checker's `rtol=1e-5` allows.

# %%
import sys
import unittest

import numpy as np


class Variable:
    """A box around a NumPy array."""

    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(
                f"Variable data must be a numpy.ndarray (or None), got {type(data).__name__}; "
                "wrap it with np.array(...) first"
            )
        self.data = data
        self.grad = None  # dy/d(this variable), filled in by backprop
        self.creator = None  # the Function that made this variable (None for inputs)

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        """Fill in the grad of every variable this one was computed from (with a loop)."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)  # dy/dy = 1 for every element
        funcs = [self.creator] if self.creator is not None else []  # still to visit
        while funcs:
            f = funcs.pop()  # 1. the next function to process
            x, y = f.input, f.output  # 2. its input and output
            x.grad = as_array(f.backward(y.grad))  # 3. one step of the chain rule
            if x.creator is not None:
                funcs.append(x.creator)  # 4. and continue from x


# %% [markdown]
# `as_array`, `Function`, `Square`, `Exp` and their wrappers are unchanged
# from step 09.

# %%
def as_array(x):
    """Return ``x`` as an ndarray: NumPy scalars (np.float64, ...) become 0-d arrays."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """Base class of every function: a Variable in, a new Variable out.

    Subclasses implement ``forward``, which receives and returns plain arrays,
    and ``backward``, which turns dy/d(output) into dy/d(input) (arrays too).
    """

    def __call__(self, var):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{type(self).__name__} takes a Variable, got {type(var).__name__}; "
                "wrap the array with Variable(...) first"
            )
        x = var.data  # take the array out of the box
        y = self.forward(x)  # compute on plain arrays
        output = Variable(as_array(y))  # put the result into a new box
        output.set_creator(self)  # the output remembers where it came from
        self.input = var  # remembered for backward
        self.output = output
        return output

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement forward(x)")

    def backward(self, gy):
        raise NotImplementedError(f"{type(self).__name__} must implement backward(gy)")


class Square(Function):
    """y = x ** 2, element by element; dy/dx = 2x."""

    def forward(self, x):
        return x**2

    def backward(self, gy):
        x = self.input.data
        return 2 * x * gy


class Exp(Function):
    """y = e ** x, element by element; dy/dx = e ** x."""

    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.input.data
        return np.exp(x) * gy


def square(x):
    """x ** 2 of a Variable (creates a Square function and calls it)."""
    return Square()(x)


def exp(x):
    """e ** x of a Variable (creates an Exp function and calls it)."""
    return Exp()(x)


# %% [markdown]
# The central difference of step 04 stays as our reference.

# %%
def numerical_diff(f, x, eps=1e-4):
    """Derivative of ``f`` at ``x`` by the central difference.

    f'(x) ~ (f(x + eps) - f(x - eps)) / (2 eps); the error shrinks like eps**2
    until rounding errors (about 1e-16 / eps) take over.
    """
    # np.asarray: for a 0-d array, x.data + eps is a NumPy scalar, not an array
    y_plus = f(Variable(np.asarray(x.data + eps)))
    y_minus = f(Variable(np.asarray(x.data - eps)))
    return (y_plus.data - y_minus.data) / (2 * eps)


# %% [markdown]
# ## A reusable gradient checker
#
# `gradient_check(f, x)` runs backprop on `f` at `x` (seeded with ones, so it
# computes the gradient of the sum of `f(x)`) and compares it element by
# element with central differences of that same sum. It returns `True`, or
# raises `AssertionError` with enough detail to start debugging: the
# function, the shape, the worst element and both values.

# %%
def gradient_check(f, x, eps=1e-4, rtol=1e-5, atol=1e-8):
    """Check backprop's gradient of sum(f(x)) against central differences.

    ``f`` maps a Variable to a Variable; ``x`` is a float64 ndarray. Element i
    of the numerical gradient is (S(x + eps e_i) - S(x - eps e_i)) / (2 eps)
    with S = sum(f(.)). Returns True when all elements agree within
    |backprop - numerical| <= atol + rtol * |numerical|; otherwise raises
    AssertionError naming the function, the input shape and the worst element.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        got = f"ndarray of {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(
            f"gradient_check needs a float64 ndarray, got {got}; "
            "use np.asarray(x, dtype=np.float64)"
        )
    name = getattr(f, "__name__", type(f).__name__)
    v = Variable(x.copy())
    f(v).backward()
    backprop = v.grad
    if backprop is None or backprop.shape != x.shape:
        shape = None if backprop is None else backprop.shape
        raise AssertionError(f"{name}: backprop gave grad of shape {shape}, input is {x.shape}")

    numerical = np.empty_like(x)
    for idx in np.ndindex(x.shape):  # one element at a time
        nudged = x.copy()
        nudged[idx] = x[idx] + eps
        plus = f(Variable(nudged)).data.sum()
        nudged = x.copy()
        nudged[idx] = x[idx] - eps
        minus = f(Variable(nudged)).data.sum()
        numerical[idx] = (plus - minus) / (2 * eps)

    excess = np.abs(backprop - numerical) - (atol + rtol * np.abs(numerical))
    if np.any(excess > 0):
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), x.shape))
        raise AssertionError(
            f"gradient check failed for {name} on input of shape {x.shape}: "
            f"{np.count_nonzero(excess > 0)} of {x.size} elements differ; worst at index "
            f"{worst}: backprop {backprop[worst]:.6g}, numerical {numerical[worst]:.6g}"
        )
    return True


# %% [markdown]
# It passes for our functions, on a random matrix and on a 0-d array:

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4))
print("square:", gradient_check(square, x))
print("exp   :", gradient_check(exp, x))
print("exp(square(exp(x))) at 0.5:",
      gradient_check(lambda v: exp(square(exp(v))), np.array(0.5)))

# %% [markdown]
# The checker is only worth having if it catches mistakes. Here is `Square`
# with a classic slip, the factor 2 forgotten in `backward`:

# %%
class SquareWithBug(Square):
    """Square whose backward forgets the factor 2: a deliberately wrong gradient."""

    def backward(self, gy):
        x = self.input.data
        return x * gy  # should be 2 * x * gy


def square_with_bug(x):
    return SquareWithBug()(x)


try:
    gradient_check(square_with_bug, x)
except AssertionError as e:
    print("AssertionError:", e)

# %% [markdown]
# ## Unit tests with `unittest`
#
# A test class groups checks for one function. Each method whose name starts
# with `test` is one test; `self.assert...` methods report what failed. We
# pin a hand-computed value for `forward` and for `backward`, and run the
# gradient check on random input for everything else.

# %%
class SquareTest(unittest.TestCase):
    def test_forward(self):
        y = square(Variable(np.array(2.0)))
        self.assertEqual(y.data, 4.0)

    def test_backward(self):
        x = Variable(np.array(3.0))
        square(x).backward()
        self.assertEqual(x.grad, 6.0)

    def test_gradient_check(self):
        x = np.random.default_rng(1).standard_normal((2, 5))
        self.assertTrue(gradient_check(square, x))


# %% [markdown]
# In a project these classes live in a test file and run with
# `python -m unittest` or `python -m pytest` (which understands `unittest`
# classes too). In a notebook we run them directly:

# %%
def run_tests(test_class):
    """Run one unittest.TestCase class, print the report, return the result."""
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(test_class)
    return unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)


result = run_tests(SquareTest)
print("all passed:", result.wasSuccessful())

# %% [markdown]
# ## Exercise
# Write `ExpTest` with the same three tests for `exp`: $e^1 = e$ for forward,
# $\frac{d}{dx}e^x = e^x$ at $x = 1$ for backward, and a gradient check on a
# random array. The self-check runs your class and expects three passing
# tests. (Use `assertAlmostEqual` for values that are not exact.)

# %%
#| exercise
class ExpTest(unittest.TestCase):
    def test_forward(self):
        raise NotImplementedError("Exercise (step 10): check that exp(1) is e")

    def test_backward(self):
        raise NotImplementedError("Exercise (step 10): check that the gradient of exp at 1 is e")

    def test_gradient_check(self):
        raise NotImplementedError("Exercise (step 10): gradient_check exp on a random array")

# %%
#| solution
class ExpTest(unittest.TestCase):
    def test_forward(self):
        self.assertAlmostEqual(float(exp(Variable(np.array(1.0))).data), np.e)

    def test_backward(self):
        x = Variable(np.array(1.0))
        exp(x).backward()
        self.assertAlmostEqual(float(x.grad), np.e)

    def test_gradient_check(self):
        x = np.random.default_rng(2).standard_normal((4, 3))
        self.assertTrue(gradient_check(exp, x))

# %%
#| check
import io

result = run_tests(ExpTest)
assert result.testsRun == 3, f"ExpTest should have 3 tests, it ran {result.testsRun}"
assert result.wasSuccessful(), "some ExpTest tests failed or raised: see the report above"


# Your tests must also catch mistakes: run them against two broken versions of exp.
class BrokenForwardExp(Exp):
    def forward(self, x):
        return np.exp(x) + 1.0


class BrokenBackwardExp(Exp):
    def backward(self, gy):
        return gy  # the gradient of x, not of e^x


real_exp = exp
try:
    for broken, must_fail, compare in [
            (BrokenForwardExp, "test_forward", "exp(1) with e"),
            (BrokenBackwardExp, "test_backward", "the gradient at 1 with e"),
            (BrokenBackwardExp, "test_gradient_check", "backprop with gradient_check")]:
        def exp(x, broken=broken):  # ExpTest now calls the broken exp
            return broken()(x)

        report = unittest.TextTestRunner(stream=io.StringIO()).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(ExpTest))
        failed = {test.id().rsplit(".", 1)[-1] for test, _ in report.failures + report.errors}
        assert must_fail in failed, (
            f"{must_fail} still passes when exp is broken ({broken.__name__}), so it checks "
            f"nothing: call exp and compare {compare} with self.assert... (a bare == or a "
            "'not None' test never fails)"
        )
finally:
    exp = real_exp
print("self-check passed: ExpTest runs 3 passing tests, and each fails on a broken exp")
