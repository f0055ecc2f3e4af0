"""The launches of the hand-written kernels fit CUDA's limits at the largest sizes.

The emulator (tests/cupy_on_cpu.py) runs the kernels on small arrays; a GPU takes
arrays of billions of elements, where a grid can outgrow CUDA's limits or an index
its C type. These tests need neither a GPU nor a compiler: ``cuda_kernels`` is run
against a stand-in for CuPy whose arrays have a shape and a dtype but no memory, and
whose kernels record the launch they are asked for instead of running. Each launch is
then checked against what ``cuLaunchKernel`` accepts on every GPU the book targets (a
T4, compute capability 7.5, to an H100/H200, 9.0):

* a block of at most 1024 threads (every launch here uses 256 or fewer, so even a
  kernel using all 255 registers a thread may have fits the 65,536 of a block);
* a grid of at most 2**31 - 1 blocks in x (CuPy hands ``grid[0]`` to the driver as
  a C int) and 65535 in y and z;
* enough threads for every element (or a grid-stride loop);
* each scalar argument a NumPy scalar of the C parameter's width (CuPy passes a
  Python int as 64 bits, a float as a double);
* each element index of a kernel that covers more than 2**31 elements in 64 bits.
"""

from __future__ import annotations

import re
import sys
import types

import numpy as np
import pytest

from dezero_like import cuda_kernels

MAX_BLOCK_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
# the largest float32 array an H200 (141 GiB) holds: no launch over one can be larger
H200_FLOAT32 = 141 * 2**30 // 4


class ShapeOnly:
    """A CuPy array's shape and dtype, without memory."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=object))

    @property
    def ndim(self):
        return len(self.shape)

    def astype(self, dtype, copy=True):
        return self if np.dtype(dtype) == self.dtype and not copy else ShapeOnly(self.shape,
                                                                                 dtype)


class Launch:
    def __init__(self, name, grid, block, args):
        self.name, self.grid, self.block, self.args = name, grid, block, args

    @property
    def threads(self):
        return self.block[0] * self.block[1] * self.block[2]

    def __repr__(self):
        return f"{self.name}<<<{self.grid}, {self.block}>>>"


def _recording_cupy(launches):
    """A module standing in for ``cupy``: allocation and kernels, recorded, nothing run."""

    class Function:
        def __init__(self, name):
            self.name = name

        def __call__(self, grid, block, args, **kwargs):
            # as CuPy's Function.__call__: three dimensions each, 0 raised to 1
            grid = tuple(max(1, g) for g in (tuple(grid) + (1, 1))[:3])
            block = tuple(max(1, b) for b in (tuple(block) + (1, 1))[:3])
            launches.append(Launch(self.name, grid, block, args))

    class RawModule:
        def __init__(self, code=None, **kwargs):
            self.code = code

        def get_function(self, name):
            assert name in SIGNATURES, name  # CuPy would not find it (CUDA_ERROR_NOT_FOUND)
            return Function(name)

    fake = types.ModuleType("cupy")
    fake.RawModule = RawModule
    fake.ndarray = ShapeOnly
    fake.int32, fake.int64, fake.float32, fake.float64 = (np.int32, np.int64, np.float32,
                                                          np.float64)
    fake.empty = lambda shape, dtype=np.float64: ShapeOnly(
        shape if isinstance(shape, tuple) else (shape,), dtype)
    fake.empty_like = lambda a: ShapeOnly(a.shape, a.dtype)
    fake.ascontiguousarray = lambda a: a
    # the current GPU: cuda_kernels keeps a kernel per device (cupy.cuda.runtime.getDevice)
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))
    return fake


@pytest.fixture
def launches(monkeypatch):
    """The launches ``cuda_kernels`` asks for while the test runs, against a stand-in CuPy."""
    recorded = []
    monkeypatch.setitem(sys.modules, "cupy", _recording_cupy(recorded))
    monkeypatch.setattr(cuda_kernels, "_built", {})  # no real kernel from another test
    return recorded


def _signatures():
    """{kernel: [C type of each parameter]} of every hand-written module, macros expanded
    by hand (``DEZERO_LIKE_CONV(float, f32)``)."""
    sources = [cuda_kernels._RAW, cuda_kernels._SGD_RAW]
    conv = cuda_kernels._CONV_RAW
    macro = re.search(r"#define DEZERO_LIKE_CONV\(T, S\)(.*?)\n(?=DEZERO_LIKE_CONV\()", conv,
                      re.S).group(1).replace("\\\n", "\n")
    for ctype, suffix in re.findall(r"^DEZERO_LIKE_CONV\((\w+), (\w+)\)", conv, re.M):
        sources.append(re.sub(r"\bT\b", ctype, macro.replace("##S", suffix)))
    kernels = {}
    for source in sources:
        for name, params in re.findall(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", source):
            kernels[name] = [" ".join(w for w in p.replace("*", " * ").split()[:-1]
                                      if w != "const") for p in params.split(",")]
    return kernels


SIGNATURES = _signatures()
SCALAR_TYPES = {"int": np.int32, "long long": np.int64, "float": np.float32,
                "double": np.float64}


def check(launch, elements=None, stride_loop=False):
    """Assert that CUDA takes ``launch`` and that it reaches each of its ``elements``."""
    assert launch.threads <= MAX_BLOCK_THREADS and launch.block[2] <= 64, launch
    assert all(g <= m for g, m in zip(launch.grid, MAX_GRID)), launch
    params = SIGNATURES[launch.name]
    assert len(params) == len(launch.args), launch
    for ctype, arg in zip(params, launch.args):
        if ctype.endswith("*"):
            assert isinstance(arg, ShapeOnly), (launch, ctype, arg)
            assert SCALAR_TYPES[ctype[:-1].strip()] == arg.dtype.type, (launch, ctype,
                                                                         arg.dtype)
        else:  # a Python int would go as 64 bits, a float as a double
            assert type(arg) is SCALAR_TYPES[ctype], (launch, ctype, type(arg))
    if elements is not None and not stride_loop:
        assert launch.grid[0] * launch.threads >= elements, launch
    return launch


# (N, C, H, W) image batches: ImageNet-sized, and one as large as an H200's memory
IMAGES = [(256, 64, 224, 224), (1, 1, 2**17, H200_FLOAT32 // 2**17)]


@pytest.mark.parametrize("shape", IMAGES)
def test_im2col_covers_every_column_element_within_the_grid_limit(launches, shape):
    N, C, H, W = shape
    img = ShapeOnly(shape, np.float32)
    col = cuda_kernels.im2col_channels_first(img, (3, 3), (1, 1), (1, 1), (H, W))
    assert col.size == 9 * N * C * H * W > 2**31  # 7.4e9 elements for ImageNet's batch
    (launch,) = launches
    check(launch, col.size)
    assert launch.args[2] == col.size  # the total, in 64 bits


@pytest.mark.parametrize("shape", IMAGES)
def test_pooling_forward_and_backward_cover_their_elements_within_the_grid_limit(launches,
                                                                                 shape):
    x = ShapeOnly(shape, np.float32)
    y, win = cuda_kernels.max_pool_tiles(x, (2, 2))
    gx = cuda_kernels.max_pool_tiles_grad(ShapeOnly(y.shape, np.float32), win, shape, (2, 2))
    forward, backward = launches
    check(forward, y.size)
    check(backward, gx.size)
    assert gx.size == x.size


def test_col2im_covers_a_large_deconvolution_output(launches):
    # a transposed convolution with stride 2: (256, 64, 112, 112) -> (256, 64, 224, 224)
    col = ShapeOnly((64, 4, 4, 256, 112, 112), np.float64)
    img = cuda_kernels.col2im_gather(col, (256, 64, 224, 224), (2, 2), (1, 1))
    (launch,) = launches
    check(launch, img.size)


def test_the_bias_gradient_covers_wide_layers(launches):
    cuda_kernels.sum_rows(ShapeOnly((512, 2**24), np.float32))  # 512 rows: the fused limit
    (launch,) = launches
    check(launch, 2**24)


@pytest.mark.parametrize("rows, classes", [(100, 10), (6553, 10), (60000, 10)])
def test_the_loss_kernel_is_one_block_whatever_the_batch(launches, rows, classes):
    """One block of 256 threads walks the rows; its shared memory holds one value a thread
    (2 KiB in float64; tests/test_kernels_compile.py checks the compiled size)."""
    x = ShapeOnly((rows, classes), np.float64)
    cuda_kernels.softmax_cross_entropy(x, ShapeOnly((rows,), np.int32))
    (launch,) = launches
    check(launch)
    assert launch.grid == (1, 1, 1) and launch.block == (256, 1, 1)
    assert "partial[256]" in cuda_kernels._RAW  # the block's size, as the shared array's


def test_sgd_updates_parameters_of_any_size_with_a_bounded_grid(launches):
    sizes = [H200_FLOAT32 // 2, 2**31 + 5, 1, 0, 7]
    pairs = [(ShapeOnly((n,), np.float32), ShapeOnly((n,), np.float32)) for n in sizes]
    cuda_kernels.sgd_update_many(pairs, 0.1)
    (launch,) = launches
    check(launch, stride_loop=True)  # each thread takes i, i + stride, ...
    assert [a for a in launch.args[2::3]] == [*sizes, 0, 0, 0]  # the sizes, in 64 bits


def test_a_python_number_as_a_kernel_argument_is_caught_here(launches):
    """The check can fail: the loss kernel with its sizes as Python ints (which CuPy would
    pass as 64-bit values into ``int`` parameters)."""
    launch = Launch("softmax_ce_f32", (1, 1, 1), (256, 1, 1),
                    (ShapeOnly((4, 3), np.float32), ShapeOnly((4,), np.int64),
                     ShapeOnly((4, 3), np.float32), ShapeOnly((), np.float32), 3, 4))
    with pytest.raises(AssertionError):
        check(launch)
    too_large = Launch("pool_tiles_f32", (2**31, 1, 1), (256, 1, 1), ())
    with pytest.raises(AssertionError):
        check(too_large)


def test_every_kernel_over_a_64_bit_count_indexes_in_64_bits():
    """A kernel whose element count is a ``long long`` computes its global index in 64 bits:
    ``blockIdx.x * blockDim.x`` in ``unsigned int`` wraps past 2**32 threads, and an ``int``
    index past 2**31 elements (a (256, 64, 224, 224) im2col has 7.4e9)."""
    sources = cuda_kernels._CONV_RAW + cuda_kernels._SGD_RAW
    bodies = re.findall(r"__device__ void (\w+)\(([^)]*)\) \{(.*?)\n\}", sources, re.S)
    assert len(bodies) == 5, [name for name, _, _ in bodies]
    for name, params, body in bodies:
        assert "long long n" in params or "long long total" in params, name
        for use in re.findall(r"[^\n]*blockIdx\.x \* blockDim\.x[^\n]*", body):
            assert "(long long)blockIdx.x * blockDim.x" in use, (name, use)
