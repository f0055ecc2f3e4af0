"""PyTorch as the oracle, beyond tests/test_oracle.py: second derivatives through a nonlinear
head (so every backward-of-backward sees a live input), optimizers over several steps, layer
geometry and running statistics, reductions and shape functions.
"""

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tF = torch.nn.functional

import dezero_like as dz  # noqa: E402
import dezero_like.functions as F  # noqa: E402
import dezero_like.layers as L  # noqa: E402
import dezero_like.optimizers as O  # noqa: E402


@pytest.fixture(autouse=True)
def _torch_in_float64():
    """These tests build PyTorch's layers and tensors in float64. Set for each test and put
    back after it (set at import, it held for every later test of the run)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(default)

TOL = dict(rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------- #
# 1. second derivatives: loss = sum(sin(f(x)) * w), so the first-order gradient depends on
#    the output of f and the backward-of-backward of every Function (GetItemGrad,
#    PoolingGrad, AveragePoolingGrad, Conv2DGradW, ...) is exercised with a live input.
# --------------------------------------------------------------------------- #

def _draw(shape, domain, rng):
    if domain == "positive":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "negative":
        return -rng.uniform(0.5, 2.0, size=shape)
    if domain == "probability":
        return rng.uniform(0.05, 0.95, size=shape)
    if domain == "spread":  # all values distinct: no ties in max/pooling
        n = int(np.prod(shape))
        return (rng.permutation(n) - n / 2 + 0.5).reshape(shape) * (3.0 / n)
    return rng.normal(size=shape)


def check_second_order(ours, theirs, shapes, domain="any", seed=0, head=True, computed=False):
    rng = np.random.default_rng(seed)
    domains = domain if isinstance(domain, tuple) else (domain,) * len(shapes)
    arrays = [_draw(s, d, rng) for s, d in zip(shapes, domains)]
    xs = [dz.Variable(a.copy()) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    # computed inputs (leaf * 1.0) reach the function as graph nodes that may hold no data
    y = ours(*([x * 1.0 for x in xs] if computed else xs))
    yt = theirs(*ts)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL, err_msg="value")
    w = rng.normal(size=y.shape)
    if head:
        loss = F.sum(F.sin(y) * w)
        loss_t = (torch.sin(yt) * torch.tensor(w)).sum()
    else:
        loss = F.sum(y * w)
        loss_t = (yt * torch.tensor(w)).sum()
    loss.backward(create_graph=True)
    gts = torch.autograd.grad(loss_t, ts, create_graph=True, allow_unused=True)
    grads = []
    for i, (x, gt) in enumerate(zip(xs, gts)):
        exp = np.zeros_like(arrays[i]) if gt is None else gt.detach().numpy()
        np.testing.assert_allclose(x.grad.data, exp, **TOL, err_msg=f"gradient {i}")
        grads.append(x.grad)
        x.cleargrad()
    us = [rng.normal(size=a.shape) for a in arrays]
    total = None
    for g, u in zip(grads, us):
        term = F.sum(g * u)
        total = term if total is None else total + term
    terms_t = [(gt * torch.tensor(u)).sum() for gt, u in zip(gts, us)
               if gt is not None and gt.requires_grad]
    hts = (torch.autograd.grad(sum(terms_t), ts, allow_unused=True) if terms_t
           else [None] * len(ts))
    if total.requires_grad:
        total.backward()
    for i, (x, ht) in enumerate(zip(xs, hts)):
        exp = np.zeros_like(arrays[i]) if ht is None else ht.numpy()
        got = np.zeros_like(arrays[i]) if x.grad is None else x.grad.data
        np.testing.assert_allclose(got, exp, **TOL, err_msg=f"second derivative {i}")


def _bn_eval(x, g, b):
    with dz.test_mode():
        return F.batch_norm(x, g, b, np.array([0.1, -0.2, 0.3]), np.array([1.5, 0.5, 2.0]))


IDX_ROWS = np.array([[0, 2], [-1, 0]])
MASK = np.array([True, False, True, True])
SECOND = {
    # broadcasting arithmetic
    "add_3d_bcast": (lambda a, b: a + b, lambda a, b: a + b, ((2, 3, 1), (4,))),
    "sub_bcast_left": (lambda a, b: a - b, lambda a, b: a - b, ((4,), (2, 3, 4))),
    "mul_both_bcast": (lambda a, b: a * b, lambda a, b: a * b, ((3, 1), (1, 4))),
    "div_bcast": (lambda a, b: a / b, lambda a, b: a / b, ((2, 1, 3), (3,)), ("any", "positive")),
    "rdiv_bcast": (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0),
                   ((2, 3), (2, 1))),
    # powers of negative bases
    "pow3_neg": (lambda a: a ** 3, lambda a: a ** 3, ((3, 4),), "negative"),
    "pow2_neg": (lambda a: a ** 2, lambda a: a ** 2, ((3, 4),), "negative"),
    "pow_m2_neg": (lambda a: a ** -2, lambda a: a ** -2, ((3, 4),), "negative"),
    "pow_m1_neg": (lambda a: a ** -1, lambda a: a ** -1, ((3, 4),), "negative"),
    "pow1": (lambda a: a ** 1, lambda a: a ** 1, ((3, 4),)),
    "pow_float_neg_int_valued": (lambda a: a ** 3.0, lambda a: a ** 3.0, ((3, 4),), "negative"),
    "rpow": (lambda a: 0.5 ** a, lambda a: 0.5 ** a, ((3, 4),)),
    # elementwise
    "exp_tanh_sigmoid": (lambda a: F.exp(F.tanh(a)) * F.sigmoid(a),
                         lambda a: torch.exp(torch.tanh(a)) * torch.sigmoid(a), ((3, 4),)),
    "log_cos": (lambda a: F.log(a) * F.cos(a), lambda a: torch.log(a) * torch.cos(a),
                ((3, 4),), "positive"),
    "relu_times_x": (lambda a: F.relu(a) * a, lambda a: torch.relu(a) * a, ((3, 4),), "spread"),
    "leaky_relu_sq": (lambda a: F.leaky_relu(a, 0.1) ** 2,
                      lambda a: tF.leaky_relu(a, 0.1) ** 2, ((3, 4),), "spread"),
    "clip_sq": (lambda a: F.clip(a * a, 0.1, 1.0), lambda a: torch.clamp(a * a, 0.1, 1.0),
                ((3, 4),), "spread"),
    # reductions with negative and tuple axes, keepdims
    "sum_neg_axis": (lambda a: F.sum(a, axis=-1), lambda a: a.sum(-1), ((2, 3, 4),)),
    "sum_tuple_neg_keep": (lambda a: F.sum(a, axis=(-1, 0), keepdims=True),
                           lambda a: a.sum((-1, 0), keepdim=True), ((2, 3, 4),)),
    "mean_neg_axes": (lambda a: F.mean(a, axis=(-2, -1)), lambda a: a.mean((-2, -1)),
                      ((2, 3, 4),)),
    "mean_all_keep": (lambda a: F.mean(a, keepdims=True), lambda a: a.mean((0, 1, 2), True),
                      ((2, 3, 4),)),
    "max_neg_axis": (lambda a: F.max(a, axis=-1), lambda a: a.amax(-1), ((2, 3, 4),), "spread"),
    "max_tuple_keep": (lambda a: F.max(a, axis=(0, 2), keepdims=True),
                       lambda a: a.amax((0, 2), keepdim=True), ((2, 3, 4),), "spread"),
    "min_neg_tuple": (lambda a: F.min(a, axis=(-1, -3)), lambda a: a.amin((-1, -3)),
                      ((2, 3, 4),), "spread"),
    "max_all": (lambda a: F.max(a) * a, lambda a: a.max() * a, ((2, 3),), "spread"),
    # shapes
    "reshape_m1": (lambda a: F.reshape(a, (-1,)) ** 2, lambda a: a.reshape(-1) ** 2,
                   ((2, 3, 4),)),
    "var_reshape_m1": (lambda a: a.reshape(3, -1), lambda a: a.reshape(3, -1), ((2, 3, 2),)),
    "transpose_neg_axes": (lambda a: F.transpose(a, (-1, 0, -2)) * a.transpose(2, 0, 1),
                           lambda a: a.permute(2, 0, 1) * a.permute(2, 0, 1), ((2, 3, 4),)),
    "T_3d": (lambda a: a.T * a.T, lambda a: a.permute(2, 1, 0) ** 2, ((2, 3, 4),)),
    "expand_dims_tuple": (lambda a: F.expand_dims(a, (0, -1)),
                          lambda a: a.unsqueeze(0).unsqueeze(-1), ((2, 3),)),
    "broadcast_to_3d": (lambda a: F.broadcast_to(a, (2, 3, 4)) ** 2,
                        lambda a: a.expand(2, 3, 4) ** 2, ((3, 1),)),
    "sum_to_lead": (lambda a: F.sum_to(a * a, (3, 1)), lambda a: (a * a).sum((0, 2)).reshape(3, 1),
                    ((2, 3, 4),)),
    # get_item
    "getitem_negative_int": (lambda a: a[-1] * a[0], lambda a: a[-1] * a[0], ((4, 3),)),
    "getitem_fancy_2d_neg": (lambda a: a[IDX_ROWS] ** 2, lambda a: a[torch.tensor(IDX_ROWS)] ** 2,
                             ((4, 3),)),
    "getitem_two_arrays": (lambda a: a[[0, -1, 0], [2, -2, 2]] ** 2,
                           lambda a: a[[0, -1, 0], [2, -2, 2]] ** 2, ((4, 3),)),
    "getitem_neg_slice": (lambda a: a[:, -2:] ** 2, lambda a: a[:, -2:] ** 2, ((4, 3),)),
    "getitem_reverse": (lambda a: a[::-1] * a, lambda a: a.flip(0) * a, ((4, 3),)),
    "getitem_mask": (lambda a: a[MASK] ** 2, lambda a: a[torch.tensor(MASK)] ** 2, ((4, 3),)),
    "getitem_ellipsis_none": (lambda a: a[None, ..., 1] ** 2, lambda a: a[None, ..., 1] ** 2,
                              ((2, 3, 4),)),
    "getitem_mixed": (lambda a: a[1:, [2, 0, 2], -1] ** 2,
                      lambda a: a[1:, [2, 0, 2], -1] ** 2, ((3, 4, 2),)),
    # matrix products
    "matmul_3d": (F.matmul, torch.matmul, ((4, 2, 3), (4, 3, 5))),
    "matmul_3d_bcast": (lambda a, b: a @ b, lambda a, b: a @ b, ((4, 2, 3), (1, 3, 5))),
    "matmul_vec_3d": (F.matmul, torch.matmul, ((3,), (2, 3, 4))),
    "linear": (F.linear, lambda x, W, b: x @ W + b, ((4, 3), (3, 2), (2,))),
    "linear_nobias": (F.linear, lambda x, W: x @ W, ((4, 3), (3, 2))),
    "linear_simple_bias2d": (F.linear_simple, lambda x, W, b: x @ W + b,
                             ((4, 3), (3, 2), (1, 2))),
    # softmax family
    "softmax_3d_last": (lambda a: F.softmax(a, axis=-1), lambda a: torch.softmax(a, -1),
                        ((2, 3, 4),)),
    "softmax_axis0": (lambda a: F.softmax(a, axis=0), lambda a: torch.softmax(a, 0), ((3, 4),)),
    "softmax_tuple_axis": (lambda a: F.softmax(a, axis=(1, 2)),
                           lambda a: torch.softmax(a.reshape(2, 12), 1).reshape(2, 3, 4),
                           ((2, 3, 4),)),
    "log_softmax_3d_mid": (lambda a: F.log_softmax(a, axis=1),
                           lambda a: torch.log_softmax(a, 1), ((2, 3, 4),)),
    "log_softmax_neg": (lambda a: F.log_softmax(a, axis=-1), lambda a: torch.log_softmax(a, -1),
                        ((3, 5),)),
    "softmax_simple_last": (lambda a: F.softmax_simple(a, axis=-1),
                            lambda a: torch.softmax(a, -1), ((2, 3, 4),)),
    "softmax_cross_entropy": (lambda a: F.softmax_cross_entropy(a, np.array([0, 2, 1, 2])),
                              lambda a: tF.cross_entropy(a, torch.tensor([0, 2, 1, 2])),
                              ((4, 3),)),
    "sigmoid_cross_entropy": (lambda a: F.sigmoid_cross_entropy(a, np.full((4, 1), 0.3)),
                              lambda a: tF.binary_cross_entropy_with_logits(
                                  a, torch.full((4, 1), 0.3)), ((4, 1),)),
    "binary_cross_entropy": (lambda a: F.binary_cross_entropy(a, np.full((5,), 0.7)),
                             lambda a: tF.binary_cross_entropy(a, torch.full((5,), 0.7)),
                             ((5,),), "probability"),
    "mean_squared_error": (F.mean_squared_error, lambda a, b: ((a - b) ** 2).sum() / 4,
                           ((4, 3), (4, 3))),
    # convolution and pooling: tuples, odd sizes (Conv2DGradW's and PoolingGrad's backward)
    "conv2d_tuples": (lambda x, W, b: F.conv2d(x, W, b, stride=(2, 1), pad=(1, 0)),
                      lambda x, W, b: tF.conv2d(x, W, b, stride=(2, 1), padding=(1, 0)),
                      ((2, 3, 7, 6), (4, 3, 2, 3), (4,))),
    "conv2d_stride3_pad2": (lambda x, W: F.conv2d(x, W, None, stride=3, pad=2),
                            lambda x, W: tF.conv2d(x, W, None, stride=3, padding=2),
                            ((1, 2, 5, 7), (3, 2, 3, 3))),
    "conv2d_big_K": (lambda x, W, b: F.conv2d(x, W, b, stride=1, pad=1),  # K > 64: one product
                     lambda x, W, b: tF.conv2d(x, W, b, padding=1),
                     ((2, 9, 5, 4), (3, 9, 3, 3), (3,))),
    "deconv2d_tuples": (lambda x, W, b: F.deconv2d(x, W, b, stride=(2, 3), pad=(1, 0)),
                        lambda x, W, b: tF.conv_transpose2d(x, W, b, stride=(2, 3),
                                                            padding=(1, 0)),
                        ((2, 3, 3, 4), (3, 2, 3, 2), (2,))),
    "deconv2d_stride1_pad": (lambda x, W: F.deconv2d(x, W, None, stride=1, pad=(0, 1)),
                             lambda x, W: tF.conv_transpose2d(x, W, None, padding=(0, 1)),
                             ((1, 2, 3, 4), (2, 3, 2, 3))),
    "deconv2d_outsize": (lambda x, W: F.deconv2d(x, W, None, stride=2, pad=1, outsize=(6, 7)),
                         lambda x, W: tF.conv_transpose2d(x, W, None, stride=2, padding=1,
                                                          output_padding=(1, 0)),
                         ((1, 2, 3, 4), (2, 3, 3, 3))),
    "pooling_pad_overlap": (lambda x: F.pooling(x, 3, 2, 1),
                            lambda x: tF.max_pool2d(x, 3, 2, 1), ((2, 2, 5, 7),), "spread"),
    "pooling_2x2": (lambda x: F.pooling(x, 2), lambda x: tF.max_pool2d(x, 2),
                    ((2, 2, 4, 6),), "spread"),
    "pooling_tuple": (lambda x: F.pooling(x, (2, 3), (1, 2), (1, 1)),
                      lambda x: tF.max_pool2d(x, (2, 3), (1, 2), (1, 1)), ((1, 2, 5, 6),),
                      "spread"),
    "average_pooling_pad": (lambda x: F.average_pooling(x, 3, 2, 1),
                            lambda x: tF.avg_pool2d(x, 3, 2, 1), ((2, 2, 5, 7),)),
    "average_pooling_tuple": (lambda x: F.average_pooling(x, (2, 3), (2, 1)),
                              lambda x: tF.avg_pool2d(x, (2, 3), (2, 1)), ((1, 2, 5, 6),)),
    "im2col_tuple": (lambda x: F.im2col(x, (2, 3), (2, 1), (1, 0), to_matrix=False) ** 2,
                     lambda x: tF.unfold(x, (2, 3), padding=(1, 0), stride=(2, 1)).reshape(
                         1, 2, 2, 3, 3, 2) ** 2,
                     ((1, 2, 5, 4),)),
    # batch norm in training, with the nonlinear head (second derivative through mu and var)
    "batch_norm_4d": (lambda x, g, b: F.batch_norm(x, g, b, np.zeros(3), np.ones(3)),
                      lambda x, g, b: tF.batch_norm(x, None, None, g, b, True, eps=2e-5),
                      ((4, 3, 2, 3), (3,), (3,))),
    "batch_norm_2d": (lambda x, g, b: F.batch_norm(x, g, b, np.zeros(3), np.ones(3), eps=1e-3),
                      lambda x, g, b: tF.batch_norm(x, None, None, g, b, True, eps=1e-3),
                      ((5, 3), (3,), (3,))),
    "pooling_stride_gt_kernel": (lambda x: F.pooling(x, 2, 3), lambda x: tF.max_pool2d(x, 2, 3),
                                 ((1, 2, 8, 7),), "spread"),
    "average_pooling_stride_gt_kernel": (lambda x: F.average_pooling(x, 2, 3, 1),
                                         lambda x: tF.avg_pool2d(x, 2, 3, 1), ((1, 2, 8, 7),)),
    "conv2d_stride_gt_kernel": (lambda x, W: F.conv2d(x, W, None, 3, 0),
                                lambda x, W: tF.conv2d(x, W, None, 3),
                                ((1, 2, 8, 7), (2, 2, 2, 2))),
    "conv2d_kernel_is_image": (F.conv2d, tF.conv2d, ((2, 3, 3, 4), (4, 3, 3, 4), (4,))),
    "deconv2d_outsize_stride3": (lambda x, W: F.deconv2d(x, W, None, 3, 0, outsize=(10, 6)),
                                 lambda x, W: tF.conv_transpose2d(x, W, None, 3,
                                                                  output_padding=(2, 1)),
                                 ((1, 2, 3, 2), (2, 2, 2, 2))),
    "softmax_axis_none": (lambda x: F.softmax(x, axis=None),
                          lambda x: torch.softmax(x.reshape(-1), 0).reshape(x.shape), ((3, 4),)),
    "log_softmax_axis_none": (lambda x: F.log_softmax(x, axis=None),
                              lambda x: torch.log_softmax(x.reshape(-1), 0).reshape(x.shape),
                              ((3, 4),)),
    "sum_axis_list": (lambda x: F.sum(x, axis=[0, 2]), lambda x: x.sum((0, 2)), ((2, 3, 4),)),
    "max_axis_list": (lambda x: F.max(x, axis=[0, -1]), lambda x: x.amax((0, -1)),
                      ((2, 3, 4),), "spread"),
    "linear_bias_0d": (F.linear, lambda x, W, b: x @ W + b, ((4, 3), (3, 2), ())),
    "linear_bias_row": (F.linear, lambda x, W, b: x @ W + b, ((4, 3), (3, 2), (1, 2))),
    "scalar_times_vector": (lambda a, b: a * b + a / b, lambda a, b: a * b + a / b,
                            ((), (3,)), ("any", "positive")),
    "clip_array_bounds": (lambda x: F.clip(x, np.full((3, 4), -0.5), np.linspace(0.1, 1, 4)),
                          lambda x: torch.clamp(x, torch.full((3, 4), -0.5),
                                                torch.linspace(0.1, 1, 4)), ((3, 4),)),
    "batch_norm_eval": (lambda x, g, b: _bn_eval(x, g, b),
                        lambda x, g, b: tF.batch_norm(x, torch.tensor([0.1, -0.2, 0.3]),
                                                      torch.tensor([1.5, 0.5, 2.0]), g, b, False,
                                                      eps=2e-5), ((4, 3, 2, 2), (3,), (3,))),
    "embed_id": (lambda W: F.embed_id(IDX_ROWS % 4, W), lambda W: W[torch.tensor(IDX_ROWS % 4)],
                 ((4, 3),)),
}


def _unpack(entry):
    ours, theirs, shapes = entry[:3]
    return ours, theirs, shapes, entry[3] if len(entry) > 3 else "any"


@pytest.mark.parametrize("computed", [False, True], ids=["leaves", "computed"])
@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative_matches_torch(name, computed):
    ours, theirs, shapes, domain = _unpack(SECOND[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning expected from any of these
        check_second_order(ours, theirs, shapes, domain, seed=len(name), computed=computed)


def test_second_derivative_of_the_loss_itself_no_head():
    """sum(w * f(x)) without the sin head for the losses: d2/dx2 of the losses themselves."""
    check_second_order(lambda a: F.softmax_cross_entropy(a, np.array([1, 0, 2])),
                       lambda a: tF.cross_entropy(a, torch.tensor([1, 0, 2])), ((3, 3),),
                       head=False)
    check_second_order(lambda a: F.sigmoid_cross_entropy(a, np.full((3, 2), 0.25)),
                       lambda a: tF.binary_cross_entropy_with_logits(
                           a, torch.full((3, 2), 0.25), reduction="sum") / 3, ((3, 2),),
                       head=False)


TIES = np.array([[[[1., 3., 3., 0.], [3., 2., 1., 1.], [0., 0., 5., 5.], [5., 5., 2., 2.]]]])


@pytest.mark.parametrize("name, ours, theirs", [
    ("pool_2x2", lambda x: F.pooling(x, 2), lambda x: tF.max_pool2d(x, 2)),
    ("pool_3_s1", lambda x: F.pooling(x, 3, 1), lambda x: tF.max_pool2d(x, 3, 1)),
    ("pool_2_s1_p1", lambda x: F.pooling(x, 2, 1, 1), lambda x: tF.max_pool2d(x, 2, 1, 1)),
    ("max_axis", lambda x: F.max(x, axis=-1), lambda x: x.amax(-1)),
    ("min_axes_keep", lambda x: F.min(x, axis=(1, 2), keepdims=True),
     lambda x: x.amin((1, 2), keepdim=True)),
    ("max_all", F.max, torch.amax),
    ("clip_at_bounds", lambda x: F.clip(x, 1.0, 3.0), lambda x: torch.clamp(x, 1.0, 3.0)),
    ("relu_at_zero", lambda x: F.relu(x - 2.0), lambda x: torch.relu(x - 2.0)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_second_derivative_with_ties_and_bounds(name, ours, theirs):
    """Ties and values exactly at a bound decide where the (data-dependent) gradient lands."""
    x = dz.Variable(TIES.copy())
    t = torch.tensor(TIES, requires_grad=True)
    y, yt = ours(x), theirs(t)
    w = np.linspace(0.3, 1.7, y.size).reshape(y.shape)
    F.sum(F.sin(y) * w).backward(create_graph=True)
    (gt,) = torch.autograd.grad((torch.sin(yt) * torch.tensor(w)).sum(), t, create_graph=True)
    gx = x.grad
    x.cleargrad()
    np.testing.assert_allclose(gx.data, gt.detach().numpy(), **TOL)
    u = np.linspace(-1, 1, TIES.size).reshape(TIES.shape)
    F.sum(gx * u).backward()
    (ht,) = torch.autograd.grad((gt * torch.tensor(u)).sum(), t)
    np.testing.assert_allclose(x.grad.data, ht.numpy(), **TOL)


def test_backward_of_the_gradient_without_cleargrad_accumulates_as_torch():
    """y.backward(create_graph=True); x.grad.backward(): both frameworks add the second
    derivative to the kept first one (x.grad = g + dg/dx)."""
    a = np.array([2.0, -1.5, 0.3])
    x = dz.Variable(a.copy())
    F.sum(x ** 3 * F.sin(x)).backward(create_graph=True)
    x.grad.backward()
    t = torch.tensor(a, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about the reference cycle
        (t ** 3 * torch.sin(t)).sum().backward(create_graph=True)
        t.grad.backward(torch.ones(3))
    np.testing.assert_allclose(x.grad.data, t.grad.detach().numpy(), **TOL)


def test_bce_second_derivative_is_exact_outside_the_clamp():
    """d2/dp2 of binary cross entropy is t/p**2 + (1-t)/(1-p)**2 (over N); ours is exact near
    the ends (PyTorch's double backward adds eps=1e-12 to p and 1-p: 2e-5 off at p=1e-7, 2e-3
    at p=1e-9). Ours differentiates (p - t) / (p (1 - p)), whose two terms cancel for t = 0 and
    p near 0: 1e-7 relative at p=1e-9, hence rtol 1e-6."""
    p = np.array([1e-7, 0.3, 1 - 1e-7, 1e-9])
    t = np.array([1.0, 0.5, 0.0, 0.0])
    v = dz.Variable(p.copy())
    F.binary_cross_entropy(v, t).backward(create_graph=True)
    g = v.grad
    v.cleargrad()
    F.sum(g).backward()
    exact = (t / p ** 2 + (1 - t) / (1 - p) ** 2) / len(p)
    np.testing.assert_allclose(v.grad.data, exact, rtol=1e-6)


def test_bce_second_derivative_inside_the_floor_is_that_of_the_floored_gradient():
    """Where p(1 - p) < 1e-12 the gradient is (p - t) / 1e-12 / N, so its derivative is
    1e12 / N (docs/pytorch.md). PyTorch's double backward uses a closed form of its own there,
    so the two differ inside the floor; the first derivatives agree."""
    p = np.array([1e-13, 1 - 1e-13, 0.0, 1.0])
    t = np.array([0.0, 1.0, 1.0, 0.0])
    v = dz.Variable(p.copy())
    F.binary_cross_entropy(v, t).backward(create_graph=True)
    g = v.grad
    v.cleargrad()
    F.sum(g).backward()
    pt = torch.tensor(p, requires_grad=True)
    (gt,) = torch.autograd.grad(tF.binary_cross_entropy(pt, torch.tensor(t), reduction="sum") / 4,
                                pt, create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), pt)
    np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-8)  # float32 1e-12 there
    np.testing.assert_allclose(v.grad.data, np.full(4, 1e12 / 4), rtol=1e-12)
    assert not np.allclose(v.grad.data, ht.numpy(), rtol=1e-6)  # the documented difference


def test_third_derivative_of_tanh_and_pow():
    """Three backward passes with create_graph: d3/dx3 tanh(x) * x**3."""
    a = np.array([-1.3, -0.2, 0.4, 1.7])
    x = dz.Variable(a.copy())
    t = torch.tensor(a, requires_grad=True)
    y = F.sum(F.tanh(x) * x ** 3)
    yt = (torch.tanh(t) * t ** 3).sum()
    y.backward(create_graph=True)
    g1 = x.grad
    x.cleargrad()
    F.sum(g1).backward(create_graph=True)
    g2 = x.grad
    x.cleargrad()
    F.sum(g2).backward()
    (g1t,) = torch.autograd.grad(yt, t, create_graph=True)
    (g2t,) = torch.autograd.grad(g1t.sum(), t, create_graph=True)
    (g3t,) = torch.autograd.grad(g2t.sum(), t)
    np.testing.assert_allclose(x.grad.data, g3t.numpy(), **TOL)


# --------------------------------------------------------------------------- #
# 2. optimizers: the same parameters and gradients, 5 steps
# --------------------------------------------------------------------------- #

class _Two(dz.Layer):
    def __init__(self, a, b):
        super().__init__()
        self.p0 = dz.Parameter(a.copy())
        self.p1 = dz.Parameter(b.copy())


def _run(our_opt, torch_factory, steps=5, dtype=np.float64, grad_scale=1.0, skip=None,
         hooks=(), torch_before_step=None, lr_schedule=None):
    """Run both optimizers on the same start and gradient sequence; return both results."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 4)).astype(dtype)
    b = rng.normal(size=(5,)).astype(dtype)
    grads = [(rng.normal(size=a.shape).astype(dtype) * grad_scale,
              rng.normal(size=b.shape).astype(dtype) * grad_scale) for _ in range(steps)]
    model = _Two(a, b)
    our_opt.setup(model)
    for h in hooks:
        our_opt.add_hook(h)
    ta = torch.tensor(a, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    topt = torch_factory([ta, tb])
    for step, (ga, gb) in enumerate(grads):
        if lr_schedule is not None:
            lr_schedule(step, our_opt, topt)
        model.cleargrads()
        ta.grad = torch.tensor(ga.copy())
        tb.grad = None if skip == step else torch.tensor(gb.copy())
        model.p0.grad = dz.Variable(ga.copy())
        if skip != step:
            model.p1.grad = dz.Variable(gb.copy())
        our_opt.update()
        if torch_before_step is not None:
            torch_before_step([ta, tb])
        topt.step()
    for p in (model.p0, model.p1):
        assert p.data.dtype == dtype
    return (model.p0.data, model.p1.data), (ta.detach().numpy(), tb.detach().numpy())


def _assert_same(pair, **tol):
    tol = tol or TOL
    for ours, theirs in zip(*pair):
        np.testing.assert_allclose(ours, theirs, **tol)


def test_sgd():
    _assert_same(_run(O.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)))


def test_sgd_float32():
    _assert_same(_run(O.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1), dtype=np.float32),
                 rtol=1e-6, atol=1e-7)


def test_momentum_sgd_constant_lr():
    _assert_same(_run(O.MomentumSGD(lr=0.05, momentum=0.8),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8)))


def test_momentum_sgd_lr_change_is_the_documented_difference():
    """docs/pytorch.md: v = m v - lr g; W += v. After lr changes the two differ, and ours
    follows its documented formula."""
    def schedule(step, ours, topt):
        if step == 3:
            ours.lr = 0.01
            for group in topt.param_groups:
                group["lr"] = 0.01
    ours, theirs = _run(O.MomentumSGD(lr=0.1, momentum=0.9),
                        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), lr_schedule=schedule)
    assert not np.allclose(ours[0], theirs[0])
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, 4))
    rng.normal(size=(5,))
    v = np.zeros_like(w)
    for step in range(5):
        g = rng.normal(size=(3, 4))
        rng.normal(size=(5,))
        v = 0.9 * v - (0.01 if step >= 3 else 0.1) * g
        w = w + v
    np.testing.assert_allclose(ours[0], w, **TOL)


def test_adagrad():
    _assert_same(_run(O.AdaGrad(lr=0.1, eps=1e-10),
                      lambda p: torch.optim.Adagrad(p, lr=0.1, eps=1e-10)))


def test_adagrad_float32():
    _assert_same(_run(O.AdaGrad(lr=0.1, eps=1e-10),
                      lambda p: torch.optim.Adagrad(p, lr=0.1, eps=1e-10), dtype=np.float32),
                 rtol=2e-6, atol=1e-7)


def test_adadelta():
    _assert_same(_run(O.AdaDelta(rho=0.9, eps=1e-6),
                      lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9, eps=1e-6)))


def test_adam_with_eps_zero_like():
    """Bias correction: with an eps far below sqrt(v) the two forms agree."""
    _assert_same(_run(O.Adam(alpha=0.01, beta1=0.8, beta2=0.95, eps=1e-14),
                      lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-14)))


def test_adam_eps_placement_documented_conversion():
    """docs/pytorch.md: eps set to PyTorch's times sqrt(1 - beta2**t) before each step matches."""
    def schedule(step, ours, topt):
        ours.eps = 1e-3 * math.sqrt(1 - 0.999 ** (step + 1))
    _assert_same(_run(O.Adam(alpha=0.01, eps=1e-3),
                      lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-3), lr_schedule=schedule),
                 rtol=1e-12, atol=1e-14)


def test_adam_skipped_parameter_keeps_its_own_count():
    _assert_same(_run(O.Adam(alpha=0.01, eps=1e-14),
                      lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-14), skip=1))


def test_adam_float32():
    _assert_same(_run(O.Adam(alpha=0.01, eps=1e-12),
                      lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-12), dtype=np.float32),
                 rtol=1e-5, atol=1e-6)


def test_momentum_sgd_float32():
    _assert_same(_run(O.MomentumSGD(lr=0.05, momentum=0.8),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8), dtype=np.float32),
                 rtol=2e-6, atol=1e-7)


def test_adadelta_float32():
    _assert_same(_run(O.AdaDelta(rho=0.9, eps=1e-6),
                      lambda p: torch.optim.Adadelta(p, lr=1.0, rho=0.9, eps=1e-6),
                      dtype=np.float32), rtol=2e-6, atol=1e-8)


def test_adam_tiny_gradients_documented_eps_difference():
    """docs/pytorch.md: with gradients near 1e-6 the same eps gives visibly different steps
    (ours acts as eps / sqrt(1 - beta2**t)); the documented conversion removes it."""
    ours, theirs = _run(O.Adam(alpha=0.01), lambda p: torch.optim.Adam(p, lr=0.01),
                        grad_scale=1e-6)
    start = np.random.default_rng(7).normal(size=(3, 4))
    rel = np.abs((ours[0] - start) - (theirs[0] - start)) / np.abs(theirs[0] - start)
    assert rel.max() > 0.05

    def schedule(step, ours, topt):
        ours.eps = 1e-8 * math.sqrt(1 - 0.999 ** (step + 1))
    _assert_same(_run(O.Adam(alpha=0.01), lambda p: torch.optim.Adam(p, lr=0.01),
                      grad_scale=1e-6, lr_schedule=schedule), rtol=1e-12, atol=1e-14)


def test_sgd_weight_decay_hook():
    _assert_same(_run(O.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.01),
                      hooks=[O.WeightDecay(0.01)]))


def test_momentum_weight_decay_hook():
    _assert_same(_run(O.MomentumSGD(lr=0.1, momentum=0.9),
                      lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.05),
                      hooks=[O.WeightDecay(0.05)]))


def test_adam_weight_decay_hook_is_l2_not_adamw():
    _assert_same(_run(O.Adam(alpha=0.01, eps=1e-14),
                      lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-14, weight_decay=0.1),
                      hooks=[O.WeightDecay(0.1)]))


def test_clip_grad_matches_clip_grad_norm():
    clip = lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.5)  # noqa: E731
    _assert_same(_run(O.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1),
                      hooks=[O.ClipGrad(1.5)], torch_before_step=clip))


def test_clip_grad_under_the_limit_changes_nothing():
    clip = lambda ps: torch.nn.utils.clip_grad_norm_(ps, 100.0)  # noqa: E731
    _assert_same(_run(O.Adam(alpha=0.01, eps=1e-14),
                      lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-14),
                      hooks=[O.ClipGrad(100.0)], torch_before_step=clip))


# --------------------------------------------------------------------------- #
# 3. layers
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("kernel, stride, pad, hw", [
    ((2, 3), (2, 1), (1, 0), (7, 6)),
    ((3, 1), (1, 3), (0, 2), (5, 9)),
    (3, 2, 1, (5, 5)),
    ((1, 4), 3, (2, 1), (8, 7)),
])
def test_conv2d_layer_geometry(kernel, stride, pad, hw):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3) + hw)
    layer = L.Conv2d(4, kernel, stride=stride, pad=pad, dtype=np.float64, in_channels=3)
    layer.b.data = rng.normal(size=4)
    y = layer(x)
    conv = torch.nn.Conv2d(3, 4, kernel, stride=stride, padding=pad)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(layer.W.data))
        conv.bias.copy_(torch.tensor(layer.b.data))
    yt = conv(torch.tensor(x))
    assert y.shape == tuple(yt.shape)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)


@pytest.mark.parametrize("kernel, stride, pad, hw, outpad", [
    ((3, 2), (2, 3), (1, 0), (3, 4), (0, 0)),
    (4, 2, 1, (5, 5), (0, 0)),
    ((3, 3), (2, 2), (1, 1), (3, 4), (1, 1)),
    ((2, 5), (3, 2), (0, 2), (4, 3), (2, 1)),
    (1, 1, 0, (3, 3), (0, 0)),
])
def test_deconv2d_layer_output_size(kernel, stride, pad, hw, outpad):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3) + hw)
    k, s, p = (dz.utils.pair(v) for v in (kernel, stride, pad))
    outsize = None
    if any(outpad):
        outsize = tuple(s[i] * (hw[i] - 1) + k[i] - 2 * p[i] + outpad[i] for i in range(2))
    layer = L.Deconv2d(2, kernel, stride=stride, pad=pad, dtype=np.float64, in_channels=3,
                       outsize=outsize)
    layer.b.data = rng.normal(size=2)
    y = layer(x)
    deconv = torch.nn.ConvTranspose2d(3, 2, kernel, stride=stride, padding=pad,
                                      output_padding=outpad)
    with torch.no_grad():
        deconv.weight.copy_(torch.tensor(layer.W.data))
        deconv.bias.copy_(torch.tensor(layer.b.data))
    yt = deconv(torch.tensor(x))
    assert y.shape == tuple(yt.shape)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)


@pytest.mark.parametrize("kernel, stride, pad", [(3, 2, 1), ((2, 3), (1, 2), (1, 1)),
                                                 (3, 3, 1), (2, 1, 1), (5, 2, 2)])
def test_pooling_with_pad_value_and_gradient(kernel, stride, pad):
    rng = np.random.default_rng(3)
    x = _draw((2, 2, 7, 6), "spread", rng)
    for ours, theirs in ((F.pooling, tF.max_pool2d), (F.average_pooling, tF.avg_pool2d)):
        v = dz.Variable(x.copy())
        y = ours(v, kernel, stride, pad)
        t = torch.tensor(x, requires_grad=True)
        yt = theirs(t, kernel, stride, pad)
        np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)
        w = rng.normal(size=y.shape)
        F.sum(y * w).backward()
        (yt * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **TOL)


@pytest.mark.parametrize("decay", [0.9, 0.5, 0.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 2, 4, 3)], ids=str)
def test_batchnorm_running_statistics_and_eval(shape, dtype, decay):
    rng = np.random.default_rng(4)
    tol = TOL if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    ours = L.BatchNorm(decay=decay, eps=1e-5)
    theirs = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d,
              4: torch.nn.BatchNorm2d}[len(shape)](shape[1], eps=1e-5, momentum=1 - decay,
                                                     dtype=tdtype)
    for _ in range(3):
        x = rng.normal(loc=2.0, scale=3.0, size=shape).astype(dtype)
        y = ours(x)
        yt = theirs(torch.tensor(x))
        assert y.dtype == dtype
        np.testing.assert_allclose(y.data, yt.detach().numpy(), **tol)
    assert ours.avg_var.data.dtype == dtype
    np.testing.assert_allclose(ours.avg_mean.data, theirs.running_mean.numpy(), **tol)
    np.testing.assert_allclose(ours.avg_var.data, theirs.running_var.numpy(), **tol)
    x = rng.normal(size=shape).astype(dtype)
    theirs.eval()
    with dz.test_mode():
        y = ours(x)
    np.testing.assert_allclose(y.data, theirs(torch.tensor(x)).detach().numpy(), **tol)


def test_embedding_layer():
    rng = np.random.default_rng(5)
    layer = L.EmbedID(6, 3, dtype=np.float64)
    emb = torch.nn.Embedding(6, 3)
    with torch.no_grad():
        emb.weight.copy_(torch.tensor(layer.W.data))
    ids = np.array([[1, 5, 1], [0, 1, 5]])
    y = layer(ids)
    yt = emb(torch.tensor(ids))
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)
    w = rng.normal(size=y.shape)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(layer.W.grad.data, emb.weight.grad.numpy(), **TOL)


@pytest.mark.parametrize("ratio", [0.0, 0.25, 0.5, 0.9])
def test_dropout_scaling_train_and_test(ratio):
    np.random.seed(0)
    x = np.random.uniform(1.0, 2.0, size=(200, 50))
    v = dz.Variable(x.copy())
    y = F.dropout(v, ratio)
    kept = y.data != 0
    np.testing.assert_allclose(y.data[kept], x[kept] / (1 - ratio), rtol=1e-15)
    assert abs(kept.mean() - (1 - ratio)) < 0.02
    F.sum(y).backward()
    np.testing.assert_allclose(v.grad.data, kept / (1 - ratio), rtol=1e-15)
    with dz.test_mode():
        assert F.dropout(v, ratio) is v or np.array_equal(F.dropout(v, ratio).data, x)
    torch.manual_seed(0)
    yt = tF.dropout(torch.tensor(x), ratio, training=True)
    kt = yt != 0
    np.testing.assert_allclose(yt[kt].numpy(), x[kt.numpy()] / (1 - ratio), rtol=1e-15)


def test_linear_nobias():
    rng = np.random.default_rng(6)
    layer = L.Linear(3, nobias=True, dtype=np.float64, in_size=4)
    assert [p.name for p in layer.params()] == ["W"]
    lin = torch.nn.Linear(4, 3, bias=False)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(layer.W.data.T))
    x = rng.normal(size=(5, 4))
    np.testing.assert_allclose(layer(x).data, lin(torch.tensor(x)).detach().numpy(), **TOL)


# --------------------------------------------------------------------------- #
# 4. reductions, shape functions, accuracy
# --------------------------------------------------------------------------- #

REDUCTIONS = [
    ("sum", F.sum, torch.sum), ("mean", F.mean, torch.mean),
    ("max", F.max, torch.amax), ("min", F.min, torch.amin),
]
AXES = [None, 0, -1, -2, (0, -1), (-3, 1), (2, 0, 1), (-1, -2, -3)]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name, ours, theirs", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_axes(name, ours, theirs, axis, keepdims):
    rng = np.random.default_rng(8)
    x = _draw((2, 3, 4), "spread", rng)
    v = dz.Variable(x.copy())
    y = ours(v, axis=axis, keepdims=keepdims)
    t = torch.tensor(x, requires_grad=True)
    dim = tuple(range(3)) if axis is None else axis
    yt = theirs(t, dim=dim, keepdim=keepdims)
    assert y.shape == tuple(yt.shape)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)
    w = rng.normal(size=y.shape)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **TOL)


def test_variable_sum_method_axes():
    x = np.arange(24.0).reshape(2, 3, 4)
    v = dz.Variable(x)
    np.testing.assert_array_equal(v.sum(axis=(-1, 0), keepdims=True).data,
                                  torch.tensor(x).sum((-1, 0), keepdim=True).numpy())


@pytest.mark.parametrize("src, dst", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((4,), (3, 4)),
                                      ((), (2, 2)), ((1, 1, 4), (2, 3, 4))])
def test_broadcast_to_and_sum_to(src, dst):
    rng = np.random.default_rng(9)
    x = rng.normal(size=src)
    v = dz.Variable(x.copy())
    y = F.broadcast_to(v, dst)
    t = torch.tensor(x, requires_grad=True)
    yt = t.expand(dst) if src else t.expand(*dst)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)
    w = rng.normal(size=dst)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **TOL)
    # sum_to is broadcast_to's transpose: PyTorch's sum_to_size
    z = dz.Variable(w.copy())
    s = F.sum_to(z, src)
    st = torch.tensor(w).sum_to_size(src) if src else torch.tensor(w).sum()
    assert s.shape == tuple(st.shape)
    np.testing.assert_allclose(s.data, st.numpy(), **TOL)


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (-1, 0, 1), (2, -2, 0), (0, 1, 2)], ids=str)
def test_transpose_axes(axes):
    rng = np.random.default_rng(10)
    x = rng.normal(size=(2, 3, 4))
    v = dz.Variable(x.copy())
    y = F.transpose(v, axes) if axes is not None else v.transpose()
    t = torch.tensor(x, requires_grad=True)
    perm = (2, 1, 0) if axes is None else tuple(a % 3 for a in axes)
    yt = t.permute(*perm)
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **TOL)
    w = rng.normal(size=y.shape)
    F.sum(y * w).backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.data, t.grad.numpy(), **TOL)


@pytest.mark.parametrize("shape", [(-1,), (4, -1), (-1, 2, 3), 24])
def test_reshape_minus_one(shape):
    x = np.arange(24.0).reshape(2, 3, 4)
    v = dz.Variable(x.copy())
    y = F.reshape(v, shape)
    tshape = (shape,) if isinstance(shape, int) else shape
    yt = torch.tensor(x).reshape(tshape)
    assert y.shape == tuple(yt.shape)
    F.sum(y * np.arange(24.0).reshape(y.shape)).backward()
    np.testing.assert_array_equal(v.grad.data, np.arange(24.0).reshape(2, 3, 4))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3, (0, 2), (-1, 0)], ids=str)
def test_expand_dims(axis):
    x = np.arange(6.0).reshape(2, 3)
    y = F.expand_dims(dz.Variable(x), axis)
    assert y.shape == np.expand_dims(x, axis).shape
    t = torch.tensor(x)
    if isinstance(axis, int):
        assert y.shape == tuple(t.unsqueeze(axis).shape)


def test_accuracy_ties_take_the_first_maximum_as_torch_argmax():
    y = np.array([[0.2, 0.5, 0.5], [0.1, 0.1, 0.1], [0.9, 0.0, 0.9], [0.3, 0.7, 0.7]])
    t = np.array([1, 0, 2, 2])
    acc = F.accuracy(y, t)
    pred_t = torch.tensor(y).argmax(1)
    expected = (pred_t == torch.tensor(t)).double().mean().item()
    assert float(acc.data) == expected == 0.5


def test_accuracy_with_nan_and_inf_scores_as_torch_argmax():
    y = np.array([[0.1, np.nan, 0.5], [np.nan, 1, np.nan], [2, 1, np.inf], [np.inf, np.inf, 0],
                  [-np.inf, -np.inf, -np.inf]])
    t = np.array([1, 0, 2, 1, 0])
    pred_t = torch.tensor(y).argmax(1)
    expected = (pred_t == torch.tensor(t)).double().mean().item()
    assert float(F.accuracy(y, t).data) == expected
