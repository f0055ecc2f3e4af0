"""The book's DeZero names are found where its readers look for them.

A reader of *Deep Learning from Scratch 3* writes ``import dezero.functions as F``,
``from dezero.utils import pair`` or ``from dezero.dataloaders import SeqDataLoader``; with
``dezero`` replaced by ``dezero_like`` the same lines must work. The lists below are the
public names of the book's modules (its GitHub repository, dezero/*.py) that dezero_like
provides; ``LEFT_OUT`` are the ones it does not, each with the reason docs/pytorch.md gives.
"""

from __future__ import annotations

import importlib

import pytest

BOOK = {
    "": "Config DataLoader Dataset Function Layer Model Parameter SeqDataLoader Variable "
        "as_array as_variable cuda datasets functions layers no_grad optimizers test_mode "
        "transforms using_config utils",  # dezero/__init__.py: from dezero import Model, ...
    "core": "Add Config Div Function Mul Neg Parameter Pow Sub Variable add as_array "
            "as_variable div mul neg no_grad pow rdiv rsub setup_variable sub test_mode "
            "using_config",
    "functions": "BatchNorm BroadcastTo Clip Cos Exp GetItem GetItemGrad LeakyReLU Linear Log "
                 "LogSoftmax MatMul Max MeanSquaredError Min ReLU Reshape Sigmoid Sin Softmax "
                 "SoftmaxCrossEntropy Sum SumTo Tanh Transpose accuracy add average "
                 "average_pooling batch_nrom binary_cross_entropy broadcast_to clip col2im "
                 "conv2d conv2d_simple cos deconv2d div dropout embed_id exp expand_dims "
                 "flatten get_item im2col leaky_relu linear linear_simple log log_softmax "
                 "matmul max mean mean_squared_error mean_squared_error_simple min mul neg "
                 "pooling pooling_simple pow relu reshape rsub sigmoid sigmoid_cross_entropy "
                 "sigmoid_simple sin softmax softmax_cross_entropy softmax_cross_entropy_simple "
                 "softmax_simple sub sum sum_to tanh transpose",
    "functions_conv": "AveragePooling Col2im Conv2DGradW Conv2d Deconv2d Im2col Pooling "
                      "Pooling2DWithIndexes average_pooling col2im col2im_array conv2d "
                      "conv2d_simple deconv2d get_conv_outsize get_deconv_outsize im2col "
                      "im2col_array pair pooling pooling_simple",
    "layers": "BatchNorm Conv2d Deconv2d EmbedID LSTM Layer Linear Parameter RNN",
    "models": "MLP Model Sequential VGG16",
    "optimizers": "AdaDelta AdaGrad Adam ClipGrad FreezeParam MomentumSGD Optimizer SGD "
                  "WeightDecay",
    "utils": "array_allclose array_equal get_conv_outsize get_deconv_outsize get_dot_graph "
             "gradient_check numerical_grad pair plot_dot_graph reshape_sum_backward sum_to",
    "datasets": "Dataset MNIST SinCurve Spiral get_spiral",
    "transforms": "Compose Flatten Normalize ToFloat ToInt AsType",
    "dataloaders": "DataLoader SeqDataLoader",
    "cuda": "as_cupy as_numpy get_array_module gpu_enable",
}

LEFT_OUT = {  # name -> why (the same reasons as docs/pytorch.md, "Against the book's DeZero")
    "models.ResNet50 ResNet101 ResNet152 SqueezeNet": "pretrained weights from the network",
    "datasets.CIFAR10 CIFAR100 ImageNet Shakespear": "downloads the course does not use",
    "transforms.CenterCrop Convert RandomHorizontalFlip Resize ToArray ToPIL": "need Pillow",
    "utils.get_file cache_dir": "datasets.download and DEZERO_LIKE_DATA instead",
    "utils.logsumexp max_backward_shape": "private helpers of the functions here",
    "functions_conv.Pooling2DGrad": "named PoolingGrad here",
    "utils.show_progress": "datasets.download draws its own progress bar",
    "datasets.load_cache_npz save_cache_npz": "the MNIST cache keeps the original files",
    "models.BuildingBlock BottleneckA BottleneckB": "ResNet's blocks (ResNet is left out)",
    ".setup_variable is_simple_core": "setup_variable is in core; core_simple is the snapshots",
}


@pytest.mark.parametrize("module", sorted(BOOK))
def test_the_books_names_are_found_where_the_book_keeps_them(module):
    mod = importlib.import_module(f"dezero_like.{module}".rstrip("."))
    missing = [name for name in BOOK[module].split() if not hasattr(mod, name)]
    assert not missing, f"dezero_like.{module} lacks the book's {missing}"


def test_names_found_in_two_modules_are_the_same_objects():
    """A forwarded name is the object itself, not a copy that could drift."""
    import dezero_like.dataloaders as DL
    import dezero_like.datasets_seq as Ds
    import dezero_like.functions as F
    import dezero_like.functions_conv as Fc
    import dezero_like.graph as G
    import dezero_like.utils as U

    assert U.pair is Fc.pair and U.get_conv_outsize is Fc.get_conv_outsize
    assert U.get_deconv_outsize is Fc.get_deconv_outsize
    assert U.plot_dot_graph is G.plot_dot_graph
    assert DL.SeqDataLoader is Ds.SeqDataLoader
    assert F.mean is F.average and F.conv2d is Fc.conv2d


def test_the_names_left_out_are_really_absent():
    """Keeps LEFT_OUT honest: a name that arrives must leave the list (and the docs)."""
    present = []
    for key in LEFT_OUT:
        module, first = key.split(".", 1)
        mod = importlib.import_module(f"dezero_like.{module}".rstrip("."))
        present += [f"{module}.{n}" for n in first.split() if hasattr(mod, n)]
    assert not present, f"now provided, remove from LEFT_OUT and docs/pytorch.md: {present}"


def test_the_books_left_out_names_say_what_to_write():
    """A book script that asks for one of them stops with the advice, not a bare
    AttributeError (the book's steps 28-29, 58 and examples/style_transfer.py do)."""
    import dezero_like
    import dezero_like.utils as U

    with pytest.raises(AttributeError, match=r"'is_simple_core': the book's DeZero has it.*"
                                             r"x\.data -= lr \* x\.grad\.data"):
        dezero_like.is_simple_core  # noqa: B018
    with pytest.raises(AttributeError, match=r"'get_file'.*datasets\.download\(\[url\], path\)"):
        U.get_file  # noqa: B018
    with pytest.raises(AttributeError, match=r"'cache_dir'.*data_root\(\)"):
        U.cache_dir  # noqa: B018
    with pytest.raises(AttributeError, match=r"'show_progress'.*progress bar"):
        U.show_progress  # noqa: B018
    with pytest.raises(AttributeError, match=r"has no attribute 'no_such_name'$"):
        dezero_like.no_such_name  # noqa: B018
