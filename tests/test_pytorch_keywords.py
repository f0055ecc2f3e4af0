"""PyTorch's keyword names given to a function of ``F`` say what to write here.

``F.sum(x, dim=1)`` said only Python's "sum() got an unexpected keyword argument 'dim'". Each
function that PyTorch spells with other keywords now raises a TypeError naming the keyword given
and the argument to write (step 25's ``_refuse_keywords``, also behind the layers' messages of
step 63); each case below also runs the call written as the message says.
"""

import numpy as np
import pytest

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import Variable

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))
IMG = RNG.standard_normal((2, 3, 4, 4))
W_CONV = RNG.standard_normal((5, 3, 3, 3))
W_DECONV = RNG.standard_normal((3, 5, 3, 3))
T = np.array([0, 2])
T01 = (X > 0).astype(np.float64)
P = 1 / (1 + np.exp(-X))

# (name, PyTorch's call, what the message must say, the call the message asks for)
CASES = [
    ("sum dim", lambda: F.sum(X, dim=1), r"F\.sum got PyTorch's keyword argument dim=1: "
     r"write axis=1", lambda: F.sum(X, axis=1)),
    ("sum keepdim", lambda: F.sum(X, axis=1, keepdim=True),
     r"keepdim=True: write keepdims=True", lambda: F.sum(X, axis=1, keepdims=True)),
    ("sum both", lambda: F.sum(X, dim=1, keepdim=True),
     r"keyword arguments dim=1: write axis=1.*; keepdim=True: write keepdims=True",
     lambda: F.sum(X, axis=1, keepdims=True)),
    ("Variable.sum", lambda: Variable(X).sum(dim=0, keepdim=True),
     r"Variable\.sum got .*dim=0: write axis=0.*keepdim=True: write keepdims=True",
     lambda: Variable(X).sum(axis=0, keepdims=True)),
    ("mean", lambda: F.mean(X, dim=0), r"F\.mean got .*dim=0: write axis=0",
     lambda: F.mean(X, axis=0)),
    ("average", lambda: F.average(X, keepdim=True), r"keepdim=True: write keepdims=True",
     lambda: F.average(X, keepdims=True)),
    ("max", lambda: F.max(X, dim=1), r"F\.max got .*dim=1: write axis=1.*values only.*"
     r"x\.data\.argmax\(axis=1\) gives the indices", lambda: F.max(X, axis=1)),
    ("min", lambda: F.min(X, dim=1, keepdim=True), r"x\.data\.argmin\(axis=1\).*keepdims=True",
     lambda: F.min(X, axis=1, keepdims=True)),
    ("softmax", lambda: F.softmax(X, dim=-1), r"F\.softmax got .*dim=-1: write axis=-1",
     lambda: F.softmax(X, axis=-1)),
    ("log_softmax", lambda: F.log_softmax(X, dim=1), r"dim=1: write axis=1",
     lambda: F.log_softmax(X, axis=1)),
    ("softmax_simple", lambda: F.softmax_simple(X, dim=1), r"dim=1: write axis=1",
     lambda: F.softmax_simple(X, axis=1)),
    ("expand_dims", lambda: F.expand_dims(X, dim=0), r"F\.expand_dims got .*dim=0: write axis=0",
     lambda: F.expand_dims(X, axis=0)),
    ("transpose", lambda: F.transpose(X, dim0=0, dim1=1),
     r"F\.transpose takes axes=, the new order of all the axes.*not two axes to swap",
     lambda: F.transpose(X, axes=(1, 0))),
    ("dropout", lambda: F.dropout(X, p=0.3), r"F\.dropout got .*p=0\.3: write dropout_ratio=0\.3"
     r", the same number \(the probability of zeroing", lambda: F.dropout(X, dropout_ratio=0.3)),
    ("dropout training", lambda: F.dropout(X, training=False),
     r"training=False: evaluate inside with dz\.test_mode\(\)", lambda: F.dropout(X)),
    ("leaky_relu", lambda: F.leaky_relu(X, negative_slope=0.1),
     r"F\.leaky_relu got .*negative_slope=0\.1: write slope=0\.1, the same number",
     lambda: F.leaky_relu(X, slope=0.1)),
    ("leaky_relu inplace", lambda: F.leaky_relu(X, inplace=True), r"inplace=True: not available",
     lambda: F.leaky_relu(X)),
    ("clip", lambda: F.clip(X, min=-0.5, max=0.5),
     r"F\.clip got .*min=-0\.5: write x_min=-0\.5.*; max=0\.5: write x_max=0\.5",
     lambda: F.clip(X, x_min=-0.5, x_max=0.5)),
    ("clip one side", lambda: F.clip(X, min=0.0), r"min=0\.0: write x_min=0\.0 \(both bounds are "
     r"required; None leaves a side open\)", lambda: F.clip(X, 0.0, None)),
    ("flatten", lambda: F.flatten(IMG, start_dim=1), r"F\.flatten always keeps axis 0.*drop "
     r"start_dim=", lambda: F.flatten(IMG)),
    ("linear", lambda: F.linear(X, weight=np.ones((4, 3)), bias=np.zeros(4)),
     r"F\.linear got .*weight=.*write W=, of shape \(in_size, out_size\).*W=weight\.T.*"
     r"bias=.*write b=", lambda: F.linear(X, W=np.ones((4, 3)).T, b=np.zeros(4))),
    ("mean_squared_error", lambda: F.mean_squared_error(X, T01, reduction="mean"),
     r"reduction='mean': there is no reduction= here: the loss is sum\(\(x0 - x1\) \*\* 2\) / "
     r"len\(x0\), the mean over the batch; for PyTorch's 'mean' write "
     r"F\.mean\(\(x0 - x1\) \*\* 2\)",
     lambda: F.mean((Variable(X) - T01) ** 2)),
    ("softmax_cross_entropy sum", lambda: F.softmax_cross_entropy(X, T, reduction="sum"),
     r"the mean over the batch.*for PyTorch's 'sum' write F\.softmax_cross_entropy\(x, t\) \* "
     r"len\(x\)", lambda: F.softmax_cross_entropy(X, T) * len(X)),
    ("softmax_cross_entropy none", lambda: F.softmax_cross_entropy(X, T, reduction="none"),
     r"-F\.log_softmax\(x\)\[np\.arange\(len\(t\)\), t\]",
     lambda: -F.log_softmax(X)[np.arange(len(T)), T]),
    ("softmax_cross_entropy ignore_index", lambda: F.softmax_cross_entropy(X, T, ignore_index=2),
     r"ignore_index=2: not available here: leave those rows out first, keep = t != 2",
     lambda: F.softmax_cross_entropy(X[T != 2], T[T != 2])),
    ("sigmoid_cross_entropy", lambda: F.sigmoid_cross_entropy(X, T01, reduction="mean"),
     r"F\.sigmoid_cross_entropy\(x, t\) \* len\(x\) / x\.size",
     lambda: F.sigmoid_cross_entropy(X, T01) * len(X) / X.size),
    ("binary_cross_entropy", lambda: F.binary_cross_entropy(P, T01, reduction="sum"),
     r"F\.binary_cross_entropy\(p, t\) \* len\(p\)",
     lambda: F.binary_cross_entropy(P, T01) * len(P)),
    ("conv2d", lambda: F.conv2d(IMG, weight=W_CONV, padding=1),
     r"F\.conv2d got .*weight=.*write W=, of shape \(OC, C, KH, KW\).*padding=1: write pad=1",
     lambda: F.conv2d(IMG, W=W_CONV, pad=1)),
    ("conv2d same", lambda: F.conv2d(IMG, W_CONV, padding="same"),
     r"padding='same': write pad=kernel_size // 2", lambda: F.conv2d(IMG, W_CONV, pad=1)),
    ("conv2d dilation", lambda: F.conv2d(IMG, W_CONV, dilation=2), r"dilation=2: not available",
     lambda: F.conv2d(IMG, W_CONV)),
    ("deconv2d", lambda: F.deconv2d(IMG, W_DECONV, stride=2, padding=1, output_padding=1),
     r"F\.deconv2d got .*padding=1: write pad=1; output_padding=1: write outsize=\(OH, OW\)",
     lambda: F.deconv2d(IMG, W_DECONV, stride=2, pad=1, outsize=(8, 8))),
    ("pooling", lambda: F.pooling(IMG, 2, padding=1), r"F\.pooling got .*padding=1: write pad=1",
     lambda: F.pooling(IMG, 2, pad=1)),
    ("pooling ceil_mode", lambda: F.pooling(IMG, 2, ceil_mode=True),
     r"ceil_mode=True: not available", lambda: F.pooling(IMG, 2)),
    ("average_pooling", lambda: F.average_pooling(IMG, 2, padding=1, count_include_pad=True),
     r"F\.average_pooling got .*padding=1: write pad=1; count_include_pad=True: nothing to write",
     lambda: F.average_pooling(IMG, 2, pad=1)),
    ("batch_norm", lambda: F.batch_norm(IMG, weight=np.ones(3), bias=np.zeros(3),
                                        running_mean=np.zeros(3), running_var=np.ones(3),
                                        momentum=0.1),
     r"F\.batch_norm got .*weight=.*write gamma=.*bias=.*write beta=.*running_mean=.*write mean="
     r".*running_var=.*write var=.*momentum=0\.1: write decay=0\.9",
     lambda: F.batch_norm(IMG, gamma=np.ones(3), beta=np.zeros(3), mean=np.zeros(3),
                          var=np.ones(3), decay=0.9)),
    ("embed_id", lambda: F.embed_id(T, weight=X.T), r"F\.embed_id got .*weight=.*write W=",
     lambda: F.embed_id(T, W=X.T)),
]


@pytest.mark.parametrize("call, says, fixed", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pytorchs_keyword_names_the_argument_to_write(call, says, fixed):
    with pytest.raises(TypeError, match=says):
        call()
    assert isinstance(fixed(), Variable)  # the call written as the message says runs


def test_the_translations_give_pytorchs_numbers():
    """The rewrites the messages propose compute what PyTorch's call computes."""
    torch = pytest.importorskip("torch")
    tx, tt, t01 = torch.from_numpy(X), torch.from_numpy(T), torch.from_numpy(T01)
    tf = torch.nn.functional
    pairs = [
        (F.sum(X, axis=1, keepdims=True), torch.sum(tx, dim=1, keepdim=True)),
        (F.max(X, axis=1), torch.max(tx, dim=1).values),
        (F.clip(X, 0.0, None), torch.clamp(tx, min=0.0)),
        (F.leaky_relu(X, slope=0.1), tf.leaky_relu(tx, negative_slope=0.1)),
        (F.linear(X, W=np.ones((4, 3)).T, b=np.arange(4.0)),
         tf.linear(tx, torch.ones(4, 3, dtype=torch.float64), torch.arange(4.0).double())),
        (F.mean((Variable(X) - T01) ** 2), tf.mse_loss(tx, t01)),
        (F.softmax_cross_entropy(X, T) * len(X), tf.cross_entropy(tx, tt, reduction="sum")),
        (-F.log_softmax(X)[np.arange(len(T)), T], tf.cross_entropy(tx, tt, reduction="none")),
        (F.sigmoid_cross_entropy(X, T01) * len(X) / X.size,
         tf.binary_cross_entropy_with_logits(tx, t01)),
        (F.binary_cross_entropy(P, T01) * len(P),
         tf.binary_cross_entropy(torch.from_numpy(P), t01, reduction="sum")),
        (F.deconv2d(IMG, W_DECONV, stride=2, pad=1, outsize=(8, 8)),
         tf.conv_transpose2d(torch.from_numpy(IMG), torch.from_numpy(W_DECONV), stride=2,
                             padding=1, output_padding=1)),
        (F.average_pooling(IMG, 2, pad=1),
         tf.avg_pool2d(torch.from_numpy(IMG), 2, padding=1, count_include_pad=True)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_dropouts_p_is_our_dropout_ratio():
    """PyTorch's p is the probability of zeroing: the same number as dropout_ratio."""
    np.random.seed(0)
    y = F.dropout(np.ones(100_000), dropout_ratio=0.3).data
    assert abs((y == 0).mean() - 0.3) < 0.01 and np.allclose(y[y != 0], 1 / 0.7)


def test_other_wrong_keywords_and_missing_arguments_keep_pythons_message():
    with pytest.raises(TypeError, match=r"^F\.sum\(\) got an unexpected keyword argument 'axes'$"):
        F.sum(X, axes=1)
    with pytest.raises(TypeError, match=r"^F\.clip\(\) missing 1 required argument: 'x_max'$"):
        F.clip(X, 0.0)
    with pytest.raises(TypeError, match=r"^F\.batch_norm\(\) missing 2 required arguments: "
                                        r"'mean', 'var'$"):
        F.batch_norm(IMG, np.ones(3), np.zeros(3))


def test_batch_norm_in_pytorchs_positional_order_is_told_the_books_order():
    """PyTorch's F.batch_norm(x, running_mean, running_var, weight, bias, training) puts the
    running statistics first. With Parameters for weight and bias, the Variable given as the
    running mean is refused: the message names the two orders, not only ``mean.data`` (which
    would run, silently wrong). A training flag in sixth place lands on decay."""
    import dezero_like.layers as L
    from dezero_like import Parameter

    weight, bias = Parameter(np.ones(3)), Parameter(np.zeros(3))
    with pytest.raises(TypeError, match=r"running mean must be an array.*book's, "
                                        r"batch_norm\(x, gamma, beta, mean, var\); PyTorch's"):
        F.batch_norm(IMG, np.zeros(3), np.ones(3), weight, bias)
    with pytest.raises(TypeError, match=r"decay must be a number, got True .*PyTorch's "
                                        r"F\.batch_norm takes training as its sixth argument"):
        F.batch_norm(IMG, weight, bias, np.zeros(3), np.ones(3), True)
    with pytest.raises(TypeError, match=r"decay must be a number, got True") as info:
        L.BatchNorm(True)  # the layer's message keeps its own hint
    assert "sixth" not in str(info.value)
    mean = np.zeros(3)
    F.batch_norm(IMG, weight, bias, mean, np.ones(3))  # the book's order runs
    np.testing.assert_allclose(mean, 0.1 * IMG.mean(axis=(0, 2, 3)))


def test_the_layers_share_the_message():
    import dezero_like.layers as L
    with pytest.raises(TypeError, match=r"^Conv2d got PyTorch's keyword argument padding=1: "
                                        r"write pad=1$"):
        L.Conv2d(16, 3, padding=1)
    with pytest.raises(TypeError, match=r"^BatchNorm got .*momentum=0\.1: write decay=0\.9"):
        L.BatchNorm(momentum=0.1)


def test_the_numbers_of_correct_calls_are_unchanged():
    x = Variable(X)
    y = F.sum(x, axis=1, keepdims=True) * F.clip(x, -0.5, 0.5)
    F.sum(y).backward()
    expected = (np.clip(X, -0.5, 0.5).sum(1, keepdims=True)  # through the sum
                + X.sum(1, keepdims=True) * (np.abs(X) < 0.5))  # through the clip
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)
    with dz.test_mode():
        assert F.dropout(x, 0.3) is x


@pytest.mark.parametrize("shape, axes, fix", [
    ((2, 3, 4), (0, 1), "F.transpose(x, (1, 0, 2))"),
    ((2, 3, 4), (-1, 0), "F.transpose(x, (2, 1, 0))"),
    ((2, 3), (0, 1), "F.transpose(x, (1, 0))"),
    ((2, 3), (0, 7), "the new order of all the axes, in one tuple"),
])
def test_transpose_given_two_axes_to_swap_positionally_names_the_order(shape, axes, fix):
    """PyTorch's torch.transpose(x, 0, 1) written as F.transpose(x, 0, 1): Python's own
    message was 'takes from 1 to 2 positional arguments'; now the order of all the axes."""
    x = dz.Variable(np.arange(np.prod(shape), dtype=float).reshape(shape))
    with pytest.raises(TypeError, match="not two axes to swap") as caught:
        F.transpose(x, *axes)
    assert fix in str(caught.value)
    order = [int(a) for a in fix.split("(")[-1].rstrip(")").split(",")] if "x, (" in fix else None
    if order is not None:  # the fix given swaps the two axes, as torch.transpose does
        np.testing.assert_array_equal(F.transpose(x, tuple(order)).data,
                                      np.swapaxes(x.data, *axes))
