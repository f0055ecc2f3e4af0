"""PyTorch as an oracle for every differentiable function and layer.

Each case runs the same computation in dezero_like and in PyTorch, on the same
float32 and float64 inputs, and compares

* the values,
* the gradients of ``sum(y * w)`` for a random weight ``w`` (so where each
  gradient lands matters), with the leaf's dtype kept,
* the second derivatives: the gradient of ``sum(g * u)`` for the first-order
  gradients ``g`` and random ``u`` (a Hessian-vector product), where defined.

The inputs enter the function as *computed* variables (``leaf * 1``), so the
functions see graph nodes that hold no data, as they do inside a network.
Without PyTorch the whole module is skipped, with the reason; CI installs the
CPU build (see the README).
"""

from __future__ import annotations

import inspect
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
import dezero_like.layers as L

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the oracle tests need it (pip install torch)"
)
tF = torch.nn.functional

# The layer cases make a layer a function of the compared Variables by assigning them over its
# Parameters, on purpose: the warning that this takes them out of params() is expected there.
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*was a Parameter and is now a plain Variable:UserWarning")


@dataclass
class Case:
    name: str
    shapes: tuple  # shapes of the differentiable inputs
    ours: object  # (*Variables) -> Variable
    theirs: object  # (*tensors) -> tensor
    domain: str = "any"  # any | positive | probability | spread (values apart: no ties, kinks)
    second: bool = True  # compare second derivatives too
    tol32: float = 2e-4
    extra: dict = field(default_factory=dict)


def _targets(a, columns=3):
    return torch.tensor(TARGETS[:, :columns], dtype=a.dtype)


def _pool(x, k):
    return tF.max_pool2d(x, k, k)


def _mse(a, b):
    return ((a - b) ** 2).sum() / a.shape[0]


def _bn(x, g, b):
    return tF.batch_norm(x, None, None, g, b, training=True, eps=2e-5)


def _rnn_ours(x, Wx, bx, Wh):
    layer = L.RNN(3, in_size=4)
    layer.x2h.W, layer.x2h.b, layer.h2h.W = Wx, bx, Wh
    layer(x)
    return layer(x * 2.0)


def _rnn_theirs(x, Wx, bx, Wh):
    h = torch.tanh(x @ Wx + bx)
    return torch.tanh((x * 2.0) @ Wx + bx + h @ Wh)


_GATES = ("f", "i", "o", "u")


def _lstm_ours(x, *ws):
    layer = L.LSTM(3, in_size=4)
    for k, g in enumerate(_GATES):
        xl, hl = getattr(layer, "x2" + g), getattr(layer, "h2" + g)
        xl.W, xl.b, hl.W = ws[3 * k], ws[3 * k + 1], ws[3 * k + 2]
    layer(x)
    return layer(x * 0.5)


def _lstm_theirs(x, *ws):
    h = c = None
    for xt in (x, x * 0.5):
        z = {}
        for k, g in enumerate(_GATES):
            a = xt @ ws[3 * k] + ws[3 * k + 1]
            if h is not None:
                a = a + h @ ws[3 * k + 2]
            z[g] = torch.tanh(a) if g == "u" else torch.sigmoid(a)
        c = z["i"] * z["u"] if c is None else z["f"] * c + z["i"] * z["u"]
        h = z["o"] * torch.tanh(c)
    return h


def _conv_layer_ours(x, W, b):
    layer = L.Conv2d(4, kernel_size=3, stride=2, pad=1, in_channels=3)
    layer.W, layer.b = W, b
    return layer(x)


LABELS = np.array([0, 2, 1, 2])
TARGETS = np.array([[0.0, 1.0, 0.25], [1.0, 0.0, 0.5], [0.75, 1.0, 0.0], [0.0, 0.1, 1.0]])
IDS = np.array([[0, 2], [2, 4]])
FANCY = np.array([0, 2, 0])

CASES = [
    # arithmetic, with broadcasting
    Case("add", ((3, 4), (4,)), lambda a, b: a + b, lambda a, b: a + b),
    Case("add_both_broadcast", ((3, 1), (1, 4)), lambda a, b: a + b, lambda a, b: a + b),
    Case("sub", ((2, 3), (3,)), lambda a, b: a - b, lambda a, b: a - b),
    Case("rsub", ((2, 3),), lambda a: 2.0 - a, lambda a: 2.0 - a),
    Case("mul", ((3, 4), (3, 1)), lambda a, b: a * b, lambda a, b: a * b),
    Case("div", ((3, 4), (4,)), lambda a, b: a / b, lambda a, b: a / b, "positive"),
    Case("rdiv", ((3,),), lambda a: 2.0 / a, lambda a: 2.0 / a, "positive"),
    Case("neg", ((3,),), lambda a: -a, lambda a: -a),
    Case("pow3", ((3, 4),), lambda a: a**3, lambda a: a**3),
    Case("pow_half", ((3, 4),), lambda a: a**0.5, lambda a: a**0.5, "positive"),
    Case("rpow", ((3, 4),), lambda a: 2.5**a, lambda a: 2.5**a),
    Case("pow0_at_zero", ((4,),), lambda a: (a * 0.0) ** 0 * a, lambda a: (a * 0.0) ** 0 * a),
    Case("F.add", ((2, 3), (2, 3)), F.add, torch.add),
    # elementwise
    Case("square", ((3, 4),), F.square, torch.square),
    Case("exp", ((3, 4),), F.exp, torch.exp),
    Case("log", ((3, 4),), F.log, torch.log, "positive"),
    Case("sin", ((3, 4),), F.sin, torch.sin),
    Case("cos", ((3, 4),), F.cos, torch.cos),
    Case("tanh", ((3, 4),), F.tanh, torch.tanh),
    Case("sigmoid", ((3, 4),), F.sigmoid, torch.sigmoid, "spread"),
    Case("relu", ((3, 4),), F.relu, torch.relu, "spread"),
    Case("leaky_relu", ((3, 4),), F.leaky_relu, lambda a: tF.leaky_relu(a, 0.2), "spread"),
    Case("clip", ((3, 4),), lambda a: F.clip(a, -0.55, 0.45),
         lambda a: torch.clamp(a, -0.55, 0.45), "spread"),
    # shapes
    Case("reshape", ((2, 3, 4),), lambda a: F.reshape(a, (6, 4)), lambda a: a.reshape(6, 4)),
    Case("transpose", ((2, 3, 4),), lambda a: F.transpose(a, (2, 0, 1)),
         lambda a: a.permute(2, 0, 1)),
    Case("T", ((2, 3),), lambda a: a.T, lambda a: a.T),
    Case("flatten", ((2, 3, 2, 2),), F.flatten, lambda a: a.reshape(2, -1)),
    Case("expand_dims", ((2, 3),), lambda a: F.expand_dims(a, 1), lambda a: a.unsqueeze(1)),
    Case("expand_dims_negative", ((2, 3),), lambda a: F.expand_dims(a, -1),
         lambda a: a.unsqueeze(-1)),
    Case("sum_all", ((2, 3, 4),), F.sum, torch.sum),
    Case("sum_axis", ((2, 3, 4),), lambda a: F.sum(a, axis=1), lambda a: a.sum(1)),
    Case("sum_axes_keepdims", ((2, 3, 4),), lambda a: F.sum(a, axis=(0, 2), keepdims=True),
         lambda a: a.sum((0, 2), keepdim=True)),
    Case("sum_to", ((3, 4),), lambda a: F.sum_to(a, (1, 4)), lambda a: a.sum(0, keepdim=True)),
    Case("average_all", ((2, 3, 4),), F.average, torch.mean),
    Case("average_axis", ((2, 3, 4),), lambda a: F.average(a, axis=1), lambda a: a.mean(1)),
    Case("mean_axes_keepdims", ((2, 3, 4),), lambda a: F.mean(a, axis=(0, -1), keepdims=True),
         lambda a: a.mean((0, 2), keepdim=True)),
    Case("broadcast_to", ((1, 4),), lambda a: F.broadcast_to(a, (3, 4)),
         lambda a: a.expand(3, 4)),
    Case("get_item_repeated", ((4, 3),), lambda a: a[FANCY],
         lambda a: a[torch.tensor(FANCY)]),
    Case("get_item_slices", ((4, 5),), lambda a: a[1:3, ::2], lambda a: a[1:3, ::2]),
    Case("get_item_columns", ((3, 4),), lambda a: a[:, [1, 1, 3]],
         lambda a: a[:, torch.tensor([1, 1, 3])]),
    # matrix products: matrices, stacks that broadcast, 1-D operands
    Case("matmul_2d", ((2, 3), (3, 4)), F.matmul, torch.matmul),
    Case("matmul_batched", ((5, 2, 3), (3, 4)), F.matmul, torch.matmul),
    Case("matmul_batched_right", ((2, 3), (5, 3, 4)), F.matmul, torch.matmul),
    Case("matmul_batched_both", ((5, 1, 2, 3), (4, 3, 2)), F.matmul, torch.matmul),
    Case("matmul_vec_vec", ((3,), (3,)), F.matmul, torch.matmul),
    Case("matmul_vec_mat", ((3,), (3, 4)), F.matmul, torch.matmul),
    Case("matmul_mat_vec", ((2, 3), (3,)), F.matmul, torch.matmul),
    Case("matmul_vec_stack", ((4,), (2, 4, 3)), F.matmul, torch.matmul),
    Case("matmul_stack_vec", ((2, 3, 4), (4,)), F.matmul, torch.matmul),
    Case("matmul_operator", ((5, 2, 3), (5, 3, 2)), lambda a, b: a @ b, lambda a, b: a @ b),
    Case("linear", ((4, 3), (3, 2), (2,)), F.linear, lambda x, W, b: x @ W + b),
    Case("linear_nobias", ((4, 3), (3, 2)), F.linear, lambda x, W: x @ W),
    # reductions, softmax and losses
    Case("max_axis", ((3, 4),), lambda a: F.max(a, axis=1), lambda a: a.amax(1), "spread"),
    Case("max_all", ((3, 4),), F.max, torch.amax, "spread"),
    Case("min_axis_keepdims", ((3, 4),), lambda a: F.min(a, axis=0, keepdims=True),
         lambda a: a.amin(0, keepdim=True), "spread"),
    Case("softmax", ((4, 3),), F.softmax, lambda a: torch.softmax(a, 1)),
    Case("softmax_axis0", ((4, 3),), lambda a: F.softmax(a, axis=0),
         lambda a: torch.softmax(a, 0)),
    Case("log_softmax", ((4, 3),), F.log_softmax, lambda a: torch.log_softmax(a, 1)),
    Case("softmax_cross_entropy", ((4, 3),), lambda a: F.softmax_cross_entropy(a, LABELS),
         lambda a: tF.cross_entropy(a, torch.tensor(LABELS))),
    Case("mean_squared_error", ((4, 3), (4, 3)), F.mean_squared_error, _mse),
    # the book's reduction: sum / len(x), where PyTorch's mean divides by x.numel()
    Case("sigmoid_cross_entropy", ((4, 3),), lambda a: F.sigmoid_cross_entropy(a, TARGETS),
         lambda a: tF.binary_cross_entropy_with_logits(a, _targets(a), reduction="sum") / 4),
    Case("sigmoid_cross_entropy_one_logit", ((4, 1),),  # one logit per example: PyTorch's mean
         lambda a: F.sigmoid_cross_entropy(a, TARGETS[:, :1]),
         lambda a: tF.binary_cross_entropy_with_logits(a, _targets(a, 1))),
    Case("binary_cross_entropy", ((4, 3),), lambda a: F.binary_cross_entropy(a, TARGETS),
         lambda a: tF.binary_cross_entropy(a, _targets(a), reduction="sum") / 4, "probability"),
    # the book's versions composed of earlier functions
    Case("softmax_simple", ((4, 3),), F.softmax_simple, lambda a: torch.softmax(a, 1)),
    Case("linear_simple", ((4, 3), (3, 2), (2,)), F.linear_simple, lambda x, W, b: x @ W + b),
    Case("linear_simple_nobias", ((4, 3), (3, 2)), F.linear_simple, lambda x, W: x @ W),
    Case("sigmoid_simple", ((3, 4),), F.sigmoid_simple, torch.sigmoid),
    Case("mean_squared_error_simple", ((4, 3), (4, 3)), F.mean_squared_error_simple, _mse),
    Case("softmax_cross_entropy_simple", ((4, 3),),
         lambda a: F.softmax_cross_entropy_simple(a, LABELS),
         lambda a: tF.cross_entropy(a, torch.tensor(LABELS))),
    Case("conv2d_simple", ((2, 3, 6, 6), (4, 3, 3, 3), (4,)),
         lambda x, W, b: F.conv2d_simple(x, W, b, stride=2, pad=1),
         lambda x, W, b: tF.conv2d(x, W, b, stride=2, padding=1)),
    Case("pooling_simple", ((2, 2, 4, 6),), lambda x: F.pooling_simple(x, 2, 2),
         lambda x: _pool(x, 2), "spread"),
    # convolution, pooling, normalisation, embedding
    Case("conv2d", ((2, 3, 6, 6), (4, 3, 3, 3), (4,)),
         lambda x, W, b: F.conv2d(x, W, b, stride=2, pad=1),
         lambda x, W, b: tF.conv2d(x, W, b, stride=2, padding=1)),
    Case("conv2d_nobias", ((1, 2, 5, 5), (3, 2, 3, 3)), F.conv2d, tF.conv2d),
    Case("deconv2d", ((2, 3, 4, 4), (3, 2, 3, 3), (2,)),
         lambda x, W, b: F.deconv2d(x, W, b, stride=2, pad=1),
         lambda x, W, b: tF.conv_transpose2d(x, W, b, stride=2, padding=1)),
    Case("pooling", ((2, 2, 4, 6),), lambda x: F.pooling(x, 2, 2), lambda x: _pool(x, 2),
         "spread"),
    Case("average_pooling", ((2, 2, 4, 6),), lambda x: F.average_pooling(x, 2, 2),
         lambda x: tF.avg_pool2d(x, 2, 2)),
    Case("im2col", ((2, 3, 5, 5),), lambda x: F.im2col(x, 3, 1, 1),
         lambda x: tF.unfold(x, 3, padding=1).transpose(1, 2).reshape(-1, 27)),
    Case("col2im", ((50, 27),), lambda c: F.col2im(c, (2, 3, 5, 5), 3, 1, 1),
         lambda c: tF.fold(c.reshape(2, 25, 27).transpose(1, 2), (5, 5), 3, padding=1)),
    Case("batch_norm_2d", ((6, 3), (3,), (3,)),
         lambda x, g, b: F.batch_norm(x, g, b, np.zeros(3, x.dtype), np.ones(3, x.dtype)),
         _bn, tol32=1e-3),
    Case("batch_norm_3d", ((4, 3, 5), (3,), (3,)),  # sequences (N, C, L): BatchNorm1d
         lambda x, g, b: F.batch_norm(x, g, b, np.zeros(3, x.dtype), np.ones(3, x.dtype)),
         _bn, tol32=1e-3),
    Case("batch_norm_4d", ((4, 2, 3, 3), (2,), (2,)),
         lambda x, g, b: F.batch_norm(x, g, b, np.zeros(2, x.dtype), np.ones(2, x.dtype)),
         _bn, tol32=1e-3),
    Case("batch_norm_simple_4d", ((4, 2, 3, 3), (2,), (2,)),  # the composed definition
         lambda x, g, b: F.batch_norm_simple(x, g, b, np.zeros(2, x.dtype),
                                             np.ones(2, x.dtype)),
         _bn, tol32=1e-3),
    Case("embed_id", ((5, 3),), lambda W: F.embed_id(IDS, W),
         lambda W: tF.embedding(torch.tensor(IDS), W)),
    # layers: the layer's parameters are replaced by the case's inputs
    Case("Linear_layer", ((4, 3), (3, 2), (2,)),
         lambda x, W, b: _set(L.Linear(2, in_size=3), W=W, b=b)(x),
         lambda x, W, b: x @ W + b),
    Case("Conv2d_layer", ((2, 3, 6, 6), (4, 3, 3, 3), (4,)), _conv_layer_ours,
         lambda x, W, b: tF.conv2d(x, W, b, stride=2, padding=1)),
    Case("RNN_two_steps", ((2, 4), (4, 3), (3,), (3, 3)), _rnn_ours, _rnn_theirs),
    Case("LSTM_two_steps", ((2, 4),) + ((4, 3), (3,), (3, 3)) * 4, _lstm_ours, _lstm_theirs,
         tol32=1e-3),
    Case("BatchNorm_layer", ((6, 3), (3,), (3,)),
         lambda x, g, b: _set(_built_bn(x), gamma=g, beta=b)(x), _bn, tol32=1e-3),
    Case("EmbedID_layer", ((5, 3),), lambda W: _set(L.EmbedID(5, 3), W=W)(IDS),
         lambda W: tF.embedding(torch.tensor(IDS), W)),
]


def _set(layer, **params):
    for name, value in params.items():
        setattr(layer, name, value)
    return layer


def _built_bn(x):
    layer = L.BatchNorm()
    layer(x.data)  # creates gamma, beta and the running statistics
    return layer


def _inputs(case, dtype):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    arrays = []
    for shape in case.shapes:
        if case.domain == "positive":
            a = rng.uniform(0.5, 2.0, size=shape)
        elif case.domain == "probability":  # inside (0, 1), away from its ends
            a = rng.uniform(0.05, 0.95, size=shape)
        elif case.domain == "spread":  # distinct values away from 0 and from each other
            n = int(np.prod(shape))
            a = (rng.permutation(n) - n / 2 + 0.5).reshape(shape) * (3.0 / n)
        else:
            a = rng.normal(size=shape)
        arrays.append(np.asarray(a, dtype))
    return rng, arrays


def _tols(case, dtype):
    if dtype == np.float64:
        return dict(rtol=1e-7, atol=1e-9)
    return dict(rtol=case.tol32, atol=case.tol32 / 10)


def _as_tuple(y):
    return tuple(y) if isinstance(y, (list, tuple)) else (y,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matches_torch(case, dtype):
    rng, arrays = _inputs(case, dtype)
    tol = _tols(case, dtype)
    # ours: the inputs enter as computed variables (graph nodes without data downstream)
    leaves = [dz.Variable(a.copy()) for a in arrays]
    y = case.ours(*[v * 1.0 for v in leaves])
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    yt = case.theirs(*ts)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **tol, err_msg=f"{case.name} value")
    assert y.dtype == dtype, f"{case.name}: output dtype {y.dtype}, input {np.dtype(dtype)}"

    w = np.asarray(rng.normal(size=y.shape), dtype)
    F.sum(y * w).backward(create_graph=True)
    gts = torch.autograd.grad((yt * torch.tensor(w)).sum(), ts, create_graph=True,
                              allow_unused=True)
    for i, (v, gt) in enumerate(zip(leaves, gts)):
        expected = np.zeros_like(arrays[i]) if gt is None else gt.detach().numpy()
        assert v.grad is not None, f"{case.name}: input {i} got no gradient"
        assert type(v.grad.data) is np.ndarray and v.grad.dtype == dtype, (
            f"{case.name}: input {i} gradient is {type(v.grad.data).__name__} {v.grad.dtype}"
        )
        np.testing.assert_allclose(v.grad.data, expected, **tol,
                                   err_msg=f"{case.name} gradient of input {i}")
    if not case.second:
        return

    # second derivatives: d/dx sum(g * u), a Hessian-vector product
    us = [np.asarray(rng.normal(size=a.shape), dtype) for a in arrays]
    grads = [v.grad for v in leaves]
    for v in leaves:
        v.cleargrad()
    total = None
    for g, u in zip(grads, us):
        term = F.sum(g * u)
        total = term if total is None else total + term
    t_terms = [(gt * torch.tensor(u)).sum() for gt, u in zip(gts, us)
               if gt is not None and gt.requires_grad]
    if t_terms:
        hts = torch.autograd.grad(sum(t_terms), ts, allow_unused=True)
    else:
        hts = [None] * len(ts)
    if total.requires_grad:
        total.backward()
    tol2 = tol if dtype == np.float64 else dict(rtol=tol["rtol"] * 5, atol=tol["atol"] * 5)
    for i, (v, ht) in enumerate(zip(leaves, hts)):
        expected = np.zeros_like(arrays[i]) if ht is None else ht.numpy()
        got = np.zeros_like(arrays[i]) if v.grad is None else v.grad.data
        np.testing.assert_allclose(got, expected, **tol2,
                                   err_msg=f"{case.name} second derivative, input {i}")


def test_every_public_differentiable_function_has_an_oracle_case():
    """A new function in ``F`` must get a case here (or a reason in this list)."""
    not_differentiable_or_random = {
        "Variable", "accuracy", "dropout",  # no gradient / random (tests/test_functions.py)
        "rsub", "rdiv",  # covered through the operators (cases rsub, rdiv)
        "astype",  # changes the dtype on purpose: tests/test_types.py
        "sub", "mul", "div", "neg", "pow",  # the operators' cases cover them
        "GetItem", "GetItemGrad",  # classes behind get_item
        "batch_nrom",  # the book's spelling: batch_norm itself (test_batch_nrom_is_batch_norm)
    }
    covered = " ".join(c.name for c in CASES).lower()
    # F's functions: those written in functions.py, core's arithmetic under its plain
    # names, and the convolution functions F finds in functions_conv (F.conv2d)
    import dezero_like.functions_conv as Fc

    public = [name for name, value in vars(F).items() if inspect.isfunction(value)
              and not name.startswith("_") and value.__module__ in (
                  "dezero_like.functions", "dezero_like.core") and name != "as_variable"]
    public += [name for name, value in vars(Fc).items() if inspect.isfunction(value)
               and value.__module__ == Fc.__name__ and not name.startswith("_")
               and getattr(F, name, None) is value]
    assert {"add", "square", "matmul", "conv2d", "softmax_cross_entropy"} <= set(public)
    missing = [
        name for name in public
        if name not in not_differentiable_or_random and name.lower() not in covered
    ]
    assert not missing, f"functions without an oracle case: {missing}"


def test_batch_nrom_is_batch_norm():
    """The book's DeZero names it F.batch_nrom; its readers' code finds the same function."""
    assert F.batch_nrom is F.batch_norm


# --------------------------------------------------------------------------- #
# nan and ties: where a max, a ReLU or a clip decides where the gradient goes
# --------------------------------------------------------------------------- #

NAN = np.nan
EDGE_MAP = np.array([[[[1.0, NAN, 3.0, 0.0, 2.0, 2.0],
                       [2.0, 5.0, NAN, 1.0, 2.0, 2.0],
                       [0.0, 0.0, 0.0, 0.0, -1.0, NAN],
                       [1.0, 1.0, 1.0, 1.0, NAN, -3.0]]]])
EDGE_VECTOR = np.array([[NAN, -1.0, 0.0, 2.0, -0.0, 3.0],
                        [1.0, 4.0, 4.0, NAN, 0.5, 4.0],
                        [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]])
NEG_INF_MAP = np.array([[[[-np.inf, -np.inf, 1.0], [2.0, -np.inf, -np.inf],
                          [-np.inf, 0.0, -np.inf]]]])  # ties with the padding's -inf
ONE_NAN_PER_ROW = np.array([[1.0, NAN, 3.0, 2.0], [2.0, 1.0, 0.0, -1.0], [NAN, 0.0, 5.0, 4.0]])

EDGE_CASES = {
    # max pooling: the fast 2x2 path, the general path (overlapping windows, padding)
    "pooling_2x2": (EDGE_MAP, lambda x: F.pooling(x, 2, 2), lambda x: tF.max_pool2d(x, 2, 2)),
    "pooling_3x3_stride1": (EDGE_MAP, lambda x: F.pooling(x, 3, 1),
                            lambda x: tF.max_pool2d(x, 3, 1)),
    "pooling_2x2_stride1_pad1": (EDGE_MAP, lambda x: F.pooling(x, 2, 1, 1),
                                 lambda x: tF.max_pool2d(x, 2, 1, 1)),
    "pooling_neg_inf_pad1": (NEG_INF_MAP, lambda x: F.pooling(x, 2, 1, 1),
                             lambda x: tF.max_pool2d(x, 2, 1, 1)),
    "pooling_3x2": (EDGE_MAP, lambda x: F.pooling(x, (2, 3), (2, 3)),
                    lambda x: tF.max_pool2d(x, (2, 3), (2, 3))),
    "relu": (EDGE_VECTOR, F.relu, torch.relu),
    "leaky_relu": (EDGE_VECTOR, lambda x: F.leaky_relu(x, 0.01), tF.leaky_relu),
    "clip": (EDGE_VECTOR, lambda x: F.clip(x, 0.0, 2.0), lambda x: torch.clamp(x, 0.0, 2.0)),
    "clip_upper_only": (EDGE_VECTOR, lambda x: F.clip(x, None, 2.0),
                        lambda x: torch.clamp(x, None, 2.0)),
    "clip_lower_only": (EDGE_VECTOR, lambda x: F.clip(x, 0.0, None),
                        lambda x: torch.clamp(x, 0.0, None)),
    # ties share the gradient, and a nan is the maximum: torch.max(x) for a whole tensor
    "max_all": (EDGE_VECTOR, F.max, torch.max),
    "min_all": (EDGE_VECTOR, F.min, torch.min),
    # per axis: ties as torch.amax; a single nan (no ties) as torch.max(x, dim)
    "max_axis_ties": (EDGE_VECTOR[2:], lambda x: F.max(x, axis=1), lambda x: torch.amax(x, 1)),
    "max_axis_nan": (ONE_NAN_PER_ROW, lambda x: F.max(x, axis=1),
                     lambda x: torch.max(x, 1).values),
    "min_axis_nan": (ONE_NAN_PER_ROW, lambda x: F.min(x, axis=0, keepdims=True),
                     lambda x: torch.min(x, 0, keepdim=True).values),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_nan_and_ties_match_torch(name, dtype):
    """Values and gradients where a nan or a tie decides: a nan propagates like PyTorch's,
    and the gradient lands where PyTorch puts it (never silently on another element)."""
    data, ours, theirs = EDGE_CASES[name]
    data = data.astype(dtype)
    x = dz.Variable(data.copy())
    y = ours(x)
    xt = torch.tensor(data, requires_grad=True)
    yt = theirs(xt)
    np.testing.assert_array_equal(y.data, yt.detach().numpy(), err_msg=f"{name} value")
    w = np.arange(1, y.data.size + 1, dtype=dtype).reshape(y.shape)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.data, xt.grad.numpy(), err_msg=f"{name} gradient")


@pytest.mark.parametrize("offset, dtype", [(1e4, np.float32), (1e6, np.float32),
                                           (1e13, np.float64)])
@pytest.mark.parametrize("name", ["log_softmax", "softmax_cross_entropy"])
def test_large_logits_keep_their_precision(name, offset, dtype):
    """Shifted logits are never shifted back: adding the max to log-sum-exp and subtracting
    it from x again would cancel two large numbers (0.4375 for a loss of 0.4076 at 1e6)."""
    x = (np.array([[1.0, 0.0, 2.0], [0.5, 3.0, -1.0]]) + offset).astype(dtype)
    labels = np.array([2, 0])
    ours = {"log_softmax": F.log_softmax,
            "softmax_cross_entropy": lambda v: F.softmax_cross_entropy(v, labels)}[name]
    theirs = {"log_softmax": lambda t: torch.log_softmax(t, 1),
              "softmax_cross_entropy": lambda t: tF.cross_entropy(t, torch.tensor(labels))}[name]
    v = dz.Variable(x.copy())
    y = ours(v)
    t = torch.tensor(x, requires_grad=True)
    yt = theirs(t)
    w = np.linspace(0.5, 1.5, y.data.size).reshape(y.shape).astype(dtype)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **tol)
    np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **tol)
