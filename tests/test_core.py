"""The package core: graph building, generation-ordered backward, memory rules, errors."""

from __future__ import annotations

import gc
import tracemalloc
import warnings
import weakref

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like.core import Function, Variable
from dezero_like.utils import gradient_check


def test_variable_rejects_non_arrays_with_clear_error():
    with pytest.raises(TypeError, match=r"numpy.ndarray.*np.array"):
        Variable([1, 2])
    with pytest.raises(TypeError, match="numeric dtype"):
        Variable(np.array(["a"]))


def test_diamond_graph_runs_each_backward_once_in_generation_order():
    calls = []

    class Sq(Function):
        def forward(self, x):
            return x**2

        def backward(self, gy):
            calls.append((self, self._grads))
            (x,) = self.inputs
            return 2 * x * gy

    x = Variable(np.array(3.0))
    a = Sq()(x)
    y = Sq()(a) + Sq()(a)
    y.backward()
    assert len(calls) == 3
    assert len({id(f) for f, _ in calls}) == 3
    assert calls[-1][0] is a.creator  # a's creator runs last, after both consumers
    assert x.grad.data == pytest.approx(2 * 2 * (2 * 9) * 2 * 3 / 2)  # d(2 a^2)/dx = 4a * 2x = 216


def test_deep_chain_has_no_recursion_error():
    x = Variable(np.array(1.0))
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.backward()
    assert x.grad.data == 1.0


def test_retain_grad_and_default():
    x = Variable(np.array(2.0))
    a = x * x
    y = a * 3.0
    y.backward()
    assert a.grad is None and y.grad is None
    assert x.grad.data == 12.0
    x.cleargrad()
    a = x * x
    y = a * 3.0
    y.backward(retain_grad=True)
    assert a.grad.data == 3.0 and y.grad.data == 1.0


def test_no_grad_builds_no_graph_and_backward_says_why():
    x = Variable(np.array(2.0))
    with dz.no_grad():
        y = x * x
    assert y.creator is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_requires_grad_false_gets_no_gradient():
    x = Variable(np.array(2.0))
    c = Variable(np.array(5.0), requires_grad=False)
    y = x * c
    y.backward()
    assert c.grad is None and x.grad.data == 5.0
    z = c * c
    assert z.creator is None and not z.requires_grad


def test_seed_gradient_checks_type_and_shape():
    x = Variable(np.array([1.0, 2.0]))
    y = x * 3.0
    with pytest.raises(TypeError, match="ndarray or a Variable"):
        y.backward(gradient=[1.0, 1.0])
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        y.backward(gradient=np.ones(3))
    y.backward(gradient=np.array([1.0, 10.0]))
    np.testing.assert_allclose(x.grad.data, [3.0, 30.0])


def test_a_seed_set_by_hand_on_an_output_is_used():
    """Steps 6-9 seed with y.grad = ...; y.backward(): the package keeps that meaning."""
    x = Variable(np.array([1.0, 2.0]))
    y = x * 3.0
    y.grad = Variable(np.array([10.0, 100.0]))
    y.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.data, [30.0, 300.0])
    x2 = Variable(np.array([1.0, 2.0]))
    y2 = x2 * 3.0
    y2.grad = np.array([1.0, 2.0, 3.0])  # checked like gradient=
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        y2.backward()
    # gradient= wins over y.grad; a leaf's .grad is its sum, not a seed
    y.backward(gradient=np.array([1.0, 1.0]))
    np.testing.assert_allclose(x.grad.data, [33.0, 303.0])
    x.backward()
    np.testing.assert_allclose(x.grad.data, [34.0, 304.0])


def test_a_kept_gradient_put_back_after_cleargrad_is_a_seed():
    """retain_grad's gradient is no seed; once cleared and set again by hand, it is one."""
    x = Variable(np.array(2.0))
    y = x * x
    y.backward(retain_grad=True, retain_graph=True)
    g = y.grad
    y.cleargrad()
    x.cleargrad()
    g.data = np.array(5.0)
    y.grad = g
    y.backward()
    assert float(x.grad.data) == 20.0  # 2x * 5, not 2x * 1


def test_a_floating_seed_on_an_integer_output_is_not_rounded():
    x = Variable(np.array([1, 2, 3]))
    (x * 2).backward(gradient=np.full(3, 0.5))
    np.testing.assert_allclose(x.grad.data, [1.0, 1.0, 1.0])
    x.cleargrad()
    v = Variable(np.array([0.5, 1.5, -0.7]))
    (x * 2).backward(gradient=v, create_graph=True)
    np.testing.assert_allclose(x.grad.data, 2 * v.data)


def test_second_backward_through_freed_graph_is_a_clear_error():
    x = Variable(np.array(2.0))
    y = F.sin(x) * x
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()
    x.cleargrad()
    y = F.sin(x) * x
    y.backward(retain_graph=True)
    y.backward()
    expected = 2 * (np.cos(2.0) * 2.0 + np.sin(2.0))
    assert x.grad.data == pytest.approx(expected)


def test_create_graph_gives_second_derivatives():
    x = Variable(np.array(2.0))
    y = x**4 - 2 * x**2
    y.backward(create_graph=True)
    gx = x.grad
    assert gx.data == pytest.approx(4 * 8 - 4 * 2)
    x.cleargrad()
    gx.backward()
    assert x.grad.data == pytest.approx(12 * 4 - 4)


def test_python_numbers_follow_float32_data():
    x = Variable(np.ones((2, 2), np.float32))
    for y in (x * 2.0, 2.0 - x, x / 2, x**3, 1 + x, -x):
        assert y.dtype == np.float32
    y = (x * 2.5 + 1.0).sum()
    y.backward()
    assert x.grad.dtype == np.float32


def test_ndarray_on_the_left_gives_a_variable():
    x = Variable(np.array([1.0, 2.0]))
    y = np.array(2.0) * x
    assert isinstance(y, Variable)
    z = np.array([1.0, 1.0]) - x
    assert isinstance(z, Variable)
    (y + z).sum().backward()
    np.testing.assert_allclose(x.grad.data, [1.0, 1.0])


@pytest.mark.parametrize(
    "shape0, shape1", [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), ()), ((1,), (4, 1))]
)
@pytest.mark.parametrize(
    "op", [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b]
)
def test_arithmetic_gradients_with_broadcasting(shape0, shape1, op, rng):
    x0 = rng.uniform(0.5, 2.0, shape0)
    x1 = Variable(rng.uniform(0.5, 2.0, shape1))
    gradient_check(lambda a: op(a, x1), x0)
    x0v = Variable(x0)
    gradient_check(lambda b: op(x0v, b), x1.data)


def test_pow_and_neg_gradients(rng):
    x = rng.uniform(0.5, 2.0, (2, 3))
    gradient_check(lambda a: a**3, x)
    gradient_check(lambda a: a**0.5, x)
    gradient_check(lambda a: -a, x)


def test_function_outputs_are_weak_and_graph_frees_without_gc():
    gc.disable()
    try:
        x = Variable(np.array(1.0))
        y = F.sin(x * 2.0)
        f = weakref.ref(y.creator)
        assert f() is not None
        del y
        assert f() is None
    finally:
        gc.enable()


def test_graph_keeps_no_intermediate_arrays_for_constant_affine_chain():
    # y = y * c + d keeps only c: the chain holds about one array, not one per function
    x = Variable(np.zeros((256, 256), np.float32))
    tracemalloc.start()
    y = x
    for _ in range(50):
        y = y * 0.5 + 1.0
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    one = x.data.nbytes
    assert current < 3 * one, f"graph holds {current / one:.1f} arrays"
    y.backward()
    assert x.grad.data == pytest.approx(np.full((256, 256), 0.5**50))


def test_backward_releases_saved_arrays():
    tracemalloc.start()
    x = Variable(np.zeros((256, 256)))
    y = x
    for _ in range(20):
        y = F.sin(y)
    before, _ = tracemalloc.get_traced_memory()
    y.backward()
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the 19 intermediate inputs that Sin saved are gone (x.grad is one new array)
    assert after - before < -15 * x.data.nbytes


def test_backward_of_wrong_arity_is_reported():
    class Bad(Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            return gy, gy

    x = Variable(np.array(1.0))
    with pytest.raises(RuntimeError, match="Bad.backward returned 2 gradients for 1 inputs"):
        Bad()(x).backward()


def test_a_backward_that_returns_a_gradient_of_the_wrong_shape_is_refused():
    """A flattened or forgotten-sum_to gradient broadcast silently into wrong numbers before:
    (3,) and (3, 1) gradients added up to (3, 3), and Mul's sum_to folded that back to (3, 1)."""
    class Square(Function):
        def __init__(self, bad):
            self.bad = bad

        def forward(self, x):
            return x ** 2

        def backward(self, gy):
            (x,) = self.inputs
            gx = 2 * x * gy
            return gx.reshape(-1) if self.bad == "flat" else F.sum(gx) if self.bad else gx

    x = Variable(np.array([[1.0], [2.0], [3.0]]))
    F.sum(Square(None)(x * 1.0) + x * 1.0).backward()
    np.testing.assert_array_equal(x.grad.data, [[3.0], [5.0], [7.0]])
    for bad, shape in (("flat", r"\(3,\)"), ("sum", r"\(\)")):
        for through in (lambda v: v * 1.0, lambda v: v):  # an intermediate input, then a leaf
            x = Variable(np.array([[1.0], [2.0], [3.0]]))
            with pytest.raises(RuntimeError, match=rf"Square.backward returned a gradient of "
                               rf"shape {shape} for input 0, which has shape \(3, 1\).*sum_to"):
                F.sum(Square(bad)(through(x)) + through(x)).backward()


def test_multi_output_function_and_unused_output():
    class Split(Function):
        def forward(self, x):
            return x[:1], x[1:]

        def backward(self, g0, g1):
            parts = [g if g is not None else Variable(np.zeros(1)) for g in (g0, g1)]
            return Variable(np.concatenate([parts[0].data, parts[1].data]))

    x = Variable(np.array([1.0, 2.0]))
    a, b = Split()(x)
    (a * 3.0).backward()
    np.testing.assert_allclose(x.grad.data, [3.0, 0.0])


def test_same_variable_in_two_slots_gets_one_accumulated_gradient():
    x = Variable(np.array([3.0]))
    y = x * x
    assert y.creator._duplicates
    gxs = y.creator.backward_accumulate(Variable(np.array([1.0])))
    assert gxs[1] is None and gxs[0].data == pytest.approx(6.0)
    y.backward()
    assert x.grad.data == pytest.approx(6.0)
    # an intermediate variable in two slots: stand-ins share (creator, index)
    x.cleargrad()
    a = x * 2.0
    z = a * a
    z.backward()
    assert x.grad.data == pytest.approx(2 * 6.0 * 2.0)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_forward_returning_a_one_tuple_gives_one_variable(grad_mode):
    class One(Function):
        def forward(self, x):
            return (x * 2,)

        def backward(self, gy):
            return gy * 2.0

    x = Variable(np.array(1.5))
    with dz.using_config("enable_backprop", grad_mode):
        y = One()(x)
    assert isinstance(y, Variable) and y.data == 3.0


def test_numbers_become_constants_of_the_datas_dtype():
    from dezero_like.core import as_array

    f32 = np.ones(2, np.float32)
    assert as_array(2.0, f32).dtype == np.float32
    assert as_array(2, np.ones(2, np.int32)).dtype == np.int32
    assert as_array(2.5, np.ones(2, np.int32)).dtype == np.float64  # as NumPy would promote
    assert as_array(np.float64(2.0), f32).dtype == np.float64  # NumPy scalars keep their dtype
    assert as_array(True).dtype == np.bool_
    with pytest.raises(TypeError, match="wrap lists with np.array"):
        as_array([1.0])


OPERATOR_CASES = [
    ("x * 2.0", lambda x, a: x * 2.0),
    ("2.0 * x", lambda x, a: 2.0 * x),
    ("x + a", lambda x, a: x + a),
    ("a + x", lambda x, a: a + x),
    ("x - 3", lambda x, a: x - 3),
    ("3 - x", lambda x, a: 3 - x),
    ("x / a", lambda x, a: x / a),
    ("1.5 / x", lambda x, a: 1.5 / x),
    ("x * x", lambda x, a: x * x),
    ("x - Variable(a)", lambda x, a: x - Variable(a)),
    ("Variable(a) / x", lambda x, a: Variable(a) / x),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (2, 3)])
@pytest.mark.parametrize("name, expr", OPERATOR_CASES, ids=[c[0] for c in OPERATOR_CASES])
def test_operators_without_a_graph_match_the_recorded_functions(name, expr, shape, dtype):
    """Under no_grad the operators skip the Function object (a fast path): same result."""
    rng = np.random.default_rng(0)
    x = Variable(rng.uniform(0.5, 2.0, shape).astype(dtype))
    a = rng.uniform(0.5, 2.0, (3,)).astype(dtype)
    recorded = expr(x, a)
    assert recorded.creator is not None
    with dz.no_grad():
        plain = expr(x, a)
    assert isinstance(plain, Variable) and plain.creator is None and not plain.requires_grad
    assert type(plain.data) is np.ndarray  # a 0-d result stays an array, not a NumPy scalar
    assert plain.dtype == recorded.dtype == dtype
    np.testing.assert_array_equal(plain.data, recorded.data)


def test_operators_without_a_graph_still_check_operands_and_reach_hooks():
    from dezero_like.hooks import TimerHook

    x = Variable(np.ones(2))
    with dz.no_grad():
        with pytest.raises(TypeError, match="wrap lists with np.array"):
            x * [1.0, 2.0]
        with TimerHook() as timer:  # a hook is watching: the Function runs, and is seen
            x * 2.0 + 1.0
    assert {"Mul", "Add"} <= set(timer.summary())


def test_operator_functions_called_directly_accept_a_non_variable_first():
    """``mul(2.0, x)`` as in the book (not through ``*``): the first operand may be a number."""
    from dezero_like.core import add, mul, rsub

    x = Variable(np.array([2.0], np.float32))
    for grad_mode in (True, False):
        with dz.using_config("enable_backprop", grad_mode):
            assert mul(3.0, x).data.tolist() == [6.0] and mul(3.0, x).dtype == np.float32
            assert add(np.array([1.0], np.float32), x).data.tolist() == [3.0]
            assert rsub(x, 5.0).data.tolist() == [3.0]


def test_truth_of_a_variable_follows_numpy():
    """bool() fell back to len(): True for [0.0], a TypeError for a 0-d loss."""
    assert not dz.Variable(np.array([0.0]))
    assert dz.Variable(np.array(2.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(dz.Variable(np.ones(3)))


def test_a_one_element_variable_formats_and_converts_like_numpy():
    loss = dz.Variable(np.array(0.123456))
    assert f"{loss:.3f}" == "0.123" and float(loss) == 0.123456 and loss.item() == 0.123456
    assert f"{loss}" == str(loss) == "variable(0.123456)"
    with pytest.raises(TypeError, match="only a one-element Variable converts to a Python number"):
        float(dz.Variable(np.ones(3)))


def test_gradients_kept_by_retain_grad_are_not_held_after_their_graph_dies():
    """The table that tells kept gradients from hand-set seeds holds them weakly: under
    create_graph a gradient's graph leads back to its variable, and a strong value kept
    every graph alive (98 MB after 200 small steps)."""
    from dezero_like import core

    for _ in range(20):
        x = Variable(np.random.default_rng(0).random(1000))
        z = F.sum(F.tanh(F.tanh(x)))
        z.backward(create_graph=True, retain_grad=True)
        del x, z
    gc.collect()
    assert len(core._from_backward) == 0


def test_comparing_a_variable_with_an_array_or_a_number_warns_that_it_compares_objects():
    """``pred == t`` with ``t`` a Variable is the identity test: always False, an accuracy of 0.
    It warns; between Variables it stays the identity test, so ``in`` and dicts work, also
    for a list that holds arrays beside Variables (NumPy hands ``a == v`` to the Variable)."""
    t = Variable(np.array([0, 1, 2]))
    pred = np.array([0, 1, 2])
    for compare, expected in ((lambda: pred == t, False), (lambda: t == pred, False),
                              (lambda: t != pred, True), (lambda: t == 1, False),
                              (lambda: np.float64(1.0) != t, True)):
        with pytest.warns(RuntimeWarning, match=r"compare the objects.*v\.data == other"):
            assert compare() is expected
    other = Variable(np.array([0, 1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning between Variables
        assert t == t and t != other and not (t == other)
        assert t in [other, t] and [other, t].index(t) == 1
        assert {t: 1, other: 2}[t] == 1
        assert t != None and t != "t"  # noqa: E711 - the comparison itself is under test
    with pytest.warns(RuntimeWarning):
        assert t in [pred, t] and [pred, 1, t].index(t) == 2


def test_using_config_takes_true_or_false_only():
    """using_config("train", "False") stored a true string: dropout stayed on in 'test mode'."""
    for value in ("False", None, 2, 0.5):
        with pytest.raises(TypeError, match=r"Config.train is True or False, got"):
            with dz.using_config("train", value):
                pass
    assert dz.Config.train is True
    with dz.using_config("train", np.False_):
        assert not dz.Config.train
    x = Variable(np.array(2.0))
    y = x * x
    with pytest.raises(TypeError, match="Config.enable_backprop is True or False, got 'no'"):
        y.backward(create_graph="no")


def test_differentiating_a_gradient_of_a_plain_backward_says_create_graph():
    x = Variable(np.array(2.0))
    (x ** 3).backward()
    with pytest.raises(RuntimeError, match=r"without create_graph=True \(pass create_graph"):
        x.grad.backward()
    x.cleargrad()
    (x ** 3).backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    assert float(x.grad.data) == 12.0


def test_a_constant_inputs_gradient_is_dropped_unchecked_as_in_step_70s_loop():
    class ScaleBy(Function):
        def forward(self, x, c):
            return x * c

        def backward(self, gy):
            x, c = self.inputs
            return gy * c, F.sum(gy * x)  # a 0-d "gradient" for the (3,) constant: ignored

    x = Variable(np.array([1.0, 2.0, 3.0]))
    c = Variable(np.array([2.0, 2.0, 2.0]), requires_grad=False)
    F.sum(ScaleBy()(x, c)).backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0, 2.0])
    assert c.grad is None


def test_config_contexts_let_an_error_through_and_restore_the_setting():
    """An error inside no_grad(), test_mode() or using_config() reaches the caller (it is not
    swallowed), and the setting is back as it was."""
    for context, name, inside in ((dz.no_grad, "enable_backprop", False),
                                  (dz.test_mode, "train", False),
                                  (lambda: dz.using_config("train", False), "train", False)):
        before = getattr(dz.Config, name)
        with pytest.raises(RuntimeError, match="boom"):
            with context():
                assert getattr(dz.Config, name) is inside
                raise RuntimeError("boom")
        assert getattr(dz.Config, name) is before


class _SquareForgettingGy(Function):
    """x**2 with the most common chain-rule slip: the gradient from above is dropped."""

    def forward(self, x):
        return x * x

    def backward(self, gy):
        (x,) = self.inputs
        return 2 * x


class _SoftmaxForgettingTheRow(Function):
    """A softmax whose backward leaves out the row's sum term: y * gy, not y * (gy - sum)."""

    def forward(self, x):
        self.retain_outputs((0,))
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def backward(self, gy):
        (y,) = self.get_retained_outputs()
        return y * gy


def test_gradient_check_weighs_the_output_so_a_backward_that_drops_gy_fails():
    """With a plain sum of the output, gy is all ones: ``2 * x`` for ``gy * 2 * x`` passed,
    and any softmax backward passed (a row sums to 1, so the sum's gradient is 0)."""
    from dezero_like.utils import gradient_check

    x = np.random.default_rng(0).normal(size=(3, 4))
    with pytest.raises(AssertionError,
                       match=r"backprop .* vs numerical .*a backward that ignores gy fails"):
        gradient_check(lambda v: _SquareForgettingGy()(v), x)
    with pytest.raises(AssertionError, match="backprop .* vs numerical"):
        gradient_check(lambda v: _SoftmaxForgettingTheRow()(v), x)
    # the right functions pass, with one output or several (each weighed apart)
    assert gradient_check(lambda v: v * v, x)
    assert gradient_check(F.softmax, x)
    assert gradient_check(lambda v: (F.sin(v), v * v, F.sum(v, axis=0)), x)
    # and f's own sum is still differentiated as before when f returns a scalar
    assert gradient_check(lambda v: F.sum(v * v), x)
