# %% [markdown]
# # Step 71: GPU kernels: launch overhead, and fusing elementwise chains
#
# Step 54 ended with two regimes: where the GPU's time is all *launches* and
# where it is arithmetic. For the book's MNIST network (784-1000-10, batch
# 100) a training step does about 0.3 GFLOP, a fraction of a millisecond of an
# H100's arithmetic, but written with one array operation per formula it makes
# several dozen launches. Each launch costs a few microseconds of Python, CuPy
# and driver work before the GPU does anything. The GPU spends most of the
# step waiting for the next kernel.
#
# The cure is to **fuse**: write one kernel for a chain of elementwise
# operations, so that `1 / (1 + exp(-x))` is one launch instead of four (and
# no temporary arrays are allocated in between). PyTorch's eager mode cannot do
# this for you; `torch.compile` (its TorchInductor back end), JAX's XLA
# compiler and CuPy's `cupy.fuse` do it automatically for code they trace
# (each project's documentation describes its fusion). Here we do it by hand, for the few chains
# that dominate training, and measure the result.
#
# CuPy gives three ways to write a kernel, from the least to the most control:
#
# | tool | you write | good for |
# | --- | --- | --- |
# | `cupy.fuse` | a Python function of arrays | quick experiments |
# | `cupy.ElementwiseKernel` | one line of C per element; CuPy loops, broadcasts | chains |
# | `cupy.RawKernel` / `RawModule` | a whole CUDA C kernel | rows, reductions, anything else |

# %%
import time

import numpy as np

import dezero_like.functions as F
from dezero_like import cuda, optimizers
from dezero_like.models import MLP

use_gpu = cuda.gpu_available()
print("GPU:", "yes" if use_gpu else
      "no (CuPy is missing, fails to import, or sees no CUDA device): the kernels below are "
      "shown and explained, and the GPU measurements are skipped")

# %% [markdown]
# ## What one launch costs
#
# We time `1 / (1 + exp(-x))` on a small array three ways: as four CuPy
# operations, with `cupy.fuse`, and with an `ElementwiseKernel`. The array is
# small on purpose: the arithmetic is negligible, so what we measure is the
# fixed cost per launch. Each version runs once untimed first (the kernels are
# compiled then), and we synchronise before reading the clock (step 54).

# %%
def launch_costs(size=1000, repeat=2000):
    cp = cuda.require_gpu()
    x = cp.asarray(np.linspace(-3, 3, size, dtype=np.float32))

    def sigmoid(v):  # cupy.fuse names the kernel after the function: no lambda
        return 1 / (1 + cp.exp(-v))

    fused = cp.fuse(sigmoid)
    kernel = cp.ElementwiseKernel("T x", "T y", "y = 1 / (1 + exp(-x))", "step71_sigmoid")
    versions = {"four operations": lambda: 1 / (1 + cp.exp(-x)),
                "cupy.fuse": lambda: fused(x),
                "ElementwiseKernel": lambda: kernel(x)}
    out = {}
    for name, run in versions.items():
        run()
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        for _ in range(repeat):
            run()
        cp.cuda.Device().synchronize()
        out[name] = (time.perf_counter() - start) / repeat
    same = [cuda.as_numpy(run()) for run in versions.values()]
    assert all(np.allclose(s, same[0], rtol=1e-6) for s in same)
    return out


if use_gpu:
    costs = launch_costs()
    for name, seconds in costs.items():
        print(f"{name:18s} {seconds * 1e6:6.1f} microseconds per call")
else:
    costs = None
    print("not measured here (no GPU): run this cell on a GPU machine to see the "
          "four launches against one fused kernel.")

# %% [markdown]
# What is counted can be seen without a GPU. Here is the graph of `1 / (1 + exp(-x))` written with
# the functions of `F`: count the boxes. There are four (`Neg`, `Exp`, `Add`, `Div`), and on a GPU
# each one is at least one kernel launch, with a temporary array between each pair.

# %%
import dezero_like as dz  # noqa: E402
from dezero_like.graph import plot_dot_graph  # noqa: E402
from dezero_like.plot import output_dir, written  # noqa: E402

x = dz.Variable(np.linspace(-3, 3, 1000, dtype=np.float32), name="x")
unfused = 1 / (1 + F.exp(-x))
unfused.name = "sigmoid(x)"
out_dir = output_dir(71)  # every file this step writes goes here
four_ops_image = written(plot_dot_graph(unfused, verbose=False,
                                        to_file=out_dir / "sigmoid_four_ops.svg"))
four_ops_image

# %% [markdown]
# `F.sigmoid` computes the same numbers as one box, and on a GPU its forward is one launch of
# the fused kernel written below:

# %%
fused = F.sigmoid(x)
fused.name = "sigmoid(x)"
print("same values:", np.allclose(fused.data, unfused.data))
fused_image = written(plot_dot_graph(fused, verbose=False, to_file=out_dir / "sigmoid_fused.svg"))
fused_image

# %% [markdown]
# ## The package's kernels
#
# `dezero_like.cuda_kernels` holds the kernels the framework uses on a GPU.
# CuPy compiles a kernel the first time it is *called* and caches it, so the
# module builds nothing at import and needs no CuPy to import: the NumPy path
# never touches it. This first cell is the machinery: kernels are built on
# first use and kept in `_built`, and so is CuPy itself, imported by the first
# launch and taken from there by every later one.

# %%
#| export dezero_like/cuda_kernels.py
"""Fused GPU kernels for the hot elementwise chains (step 71).

Each CuPy operation is one kernel launch, and each launch costs a few
microseconds of Python and driver time however little arithmetic it does.
``1 / (1 + exp(-x))`` written with array operations is four launches and three
temporary arrays; the kernels below do such a chain in one pass. They are built
(compiled by CuPy, then cached on disk) the first time they are used, so
importing this module costs nothing and needs no CuPy. The NumPy path of the
framework never calls them."""

_built = {}


def _cupy():
    """CuPy, imported on the first call and kept in ``_built`` under ``"cupy"``.

    Every launcher starts here: an ``import`` per launch is a trip through the import
    machinery, a dictionary lookup is not. It is kept with the kernels because they
    belong to it: emptying ``_built`` (as a test that puts another CuPy in place does)
    forgets both."""
    try:
        return _built["cupy"]
    except KeyError:
        import cupy

        _built["cupy"] = cupy
        return cupy


def _kernel(name):
    """The kernel ``name``, built on first use."""
    kernel = _built.get(name)
    if kernel is None:
        kernel = _built[name] = _cupy().ElementwiseKernel(*_SPECS[name],
                                                          name=f"dezero_like_{name}")
    return kernel
# %% [markdown]
# The elementwise kernels are one line of C each. In the signature, `T` is a
# type placeholder: CuPy builds one kernel per dtype it is called with
# (float32 and float64 alike), and broadcasts the inputs as NumPy would. The
# SGD kernel writes into its output argument `w`, which is the parameter
# itself: the update happens in place, in one pass over the memory.

# %%
#| export dezero_like/cuda_kernels.py
_SPECS = {
    # y = 1 / (1 + exp(-x)): four launches become one
    "sigmoid": ("T x", "T y", "y = 1 / (1 + exp(-x))"),
    # gx = gy * y * (1 - y): three launches (and a graph of three Functions) become one
    "sigmoid_grad": ("T gy, T y", "T gx", "gx = gy * y * (1 - y)"),
    # gx = (softmax(x) - onehot(t)) * gy / n, from the probabilities forward kept
    "softmax_ce_grad": ("T p, raw I t, T gy, int32 c, T inv_n", "T gx",
                        "gx = (p - (T)(t[i / c] == i % c)) * gy * inv_n"),
    # w -= lr * g: two launches (lr * g, then the subtraction) become one
    "sgd": ("T g, T lr", "T w", "w -= lr * g"),
    # ReLU's output and the mask its backward keeps (x > 0, or nan), in one pass: the
    # comparison, its negation and the maximum are three launches otherwise
    "relu": ("T x", "T y, bool mask", "mask = !(x <= (T)0); y = mask ? x : (T)0"),
}

def sigmoid(x):
    return _kernel("sigmoid")(x)


def relu(x):
    """``(y, mask)`` of ReLU: two outputs of one kernel."""
    return _kernel("relu")(x)


def sigmoid_grad(gy, y):
    return _kernel("sigmoid_grad")(gy, y)


def sgd_update(param, grad, lr):
    """``param -= lr * grad`` in place, in one kernel, as NumPy's ``-=`` would.

    The gradient is cast to the parameter's dtype first (the kernel takes one dtype, and NumPy
    casts the result into the parameter). A parameter that is not real floating point takes the
    array path, as on the CPU: in the kernel ``lr`` would become the parameter's type
    (``int(0.1) == 0``, no update at all), while ``-=`` refuses to cast a float into an integer.
    """
    if param.dtype.kind != "f" or grad.dtype.kind not in "biuf":
        param -= lr * grad  # refused as in NumPy: a float into integers, complex into reals
        return
    _kernel("sgd")(grad.astype(param.dtype, copy=False), param.dtype.type(lr), param)
# %% [markdown]
# Softmax cross entropy is not elementwise: each row needs its maximum and its
# sum. Written with array operations, the forward pass is about ten launches
# (max, subtract, exp, sum, log, add, gather, subtract, mean) and the backward
# as many again (it recomputes the softmax). One `RawModule` kernel does the
# forward in one launch: each thread takes whole rows, keeps the probabilities
# for backward, and the block adds the rows' losses in shared memory. A label
# out of range gives NaN instead of reading memory outside the row: on a GPU
# checking the labels from Python would mean waiting for the device.
#
# `sum_rows` is the bias gradient of a linear layer (`gy.sum(axis=0)`): CuPy's
# general reduction machinery spends tens of microseconds preparing each
# call, and a one-line kernel (one thread per column) needs a few.

# %%
#| export dezero_like/cuda_kernels.py
import numpy as np

_RAW = r"""
// Softmax cross entropy of logits x (n, c) against labels t (n,), in one launch of one
// block: each thread takes rows i, i + blockDim.x, ...; p gets the probabilities (for
// backward), loss[0] the mean over the rows (a sum in shared memory, then one write).
template <typename T>
__device__ void softmax_ce(const T* x, const long long* t, T* p, T* loss, int c, int n) {
    __shared__ T partial[256];
    T acc = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T* row = x + (long long)i * c;
        T* prob = p + (long long)i * c;
        long long label = t[i];
        if (label < 0 || label >= c) {  // a wrong label gives NaN, never a read out of bounds
            for (int j = 0; j < c; ++j) prob[j] = (T)nan("");
            acc += (T)nan("");
            continue;
        }
        T m = row[0];
        for (int j = 1; j < c; ++j) m = row[j] > m ? row[j] : m;
        T s = 0;
        for (int j = 0; j < c; ++j) {
            prob[j] = exp(row[j] - m);
            s += prob[j];
        }
        for (int j = 0; j < c; ++j) prob[j] /= s;
        acc += log(s) - (row[label] - m);  // the shifted logit: no cancellation
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) loss[0] = partial[0] / n;
}

// out[j] = sum over the n rows of g[:, j]: the bias gradient of a linear layer.
template <typename T>
__device__ void sum_rows(const T* g, T* out, int n, int c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c) return;
    T s = 0;
    for (int i = 0; i < n; ++i) s += g[(long long)i * c + j];
    out[j] = s;
}

extern "C" {
__global__ void softmax_ce_f32(const float* x, const long long* t, float* p, float* loss,
                               int c, int n) { softmax_ce<float>(x, t, p, loss, c, n); }
__global__ void softmax_ce_f64(const double* x, const long long* t, double* p, double* loss,
                               int c, int n) { softmax_ce<double>(x, t, p, loss, c, n); }
__global__ void sum_rows_f32(const float* g, float* out, int n, int c) {
    sum_rows<float>(g, out, n, c); }
__global__ void sum_rows_f64(const double* g, double* out, int n, int c) {
    sum_rows<double>(g, out, n, c); }
}
"""

RAW_DTYPES = ("float32", "float64")  # the dtypes the hand-written (raw) kernels are built for
# their dtype.char ("fd"), what a call checks: dtype.name costs microseconds in NumPy 2
RAW_CHARS = "".join(np.dtype(name).char for name in RAW_DTYPES)


def _raw(name, dtype, code=None):
    """Kernel ``name`` for ``dtype`` of the CUDA C ``code`` (``_RAW`` by default).

    Looked up once per GPU and kept in ``_built``: CuPy's ``get_function`` makes a
    new kernel object on every call, microseconds of Python per launch. The key
    holds the current device, because a function looked up on one GPU is loaded
    there and cannot be launched on another.
    """
    cupy = _built.get("cupy") or _cupy()  # the launcher asked for it already: no call
    code = _RAW if code is None else code
    device = cupy.cuda.runtime.getDevice()
    key = (name, dtype.itemsize, code, device)
    kernel = _built.get(key)
    if kernel is None:
        module = _built.get((code, device))
        if module is None:
            module = _built[code, device] = cupy.RawModule(code=code)
        kernel = _built[key] = module.get_function(f"{name}_f{dtype.itemsize * 8}")
    return kernel


def softmax_cross_entropy(x, t):
    """(mean loss as a 0-d array, probabilities) of logits ``x`` (N, C) and labels ``t`` (N,).

    ``x`` must be float32 or float64 (``RAW_DTYPES``)."""
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    n, c = x.shape
    x = cupy.ascontiguousarray(x)
    t = cupy.ascontiguousarray(t.astype(cupy.int64, copy=False))
    p = cupy.empty_like(x)
    loss = cupy.empty((), x.dtype)
    _raw("softmax_ce", x.dtype)((1,), (256,), (x, t, p, loss, cupy.int32(c), cupy.int32(n)))
    return loss, p


def sum_rows(g):
    """``g.sum(axis=0)`` of a C-contiguous float32/float64 matrix, in one light launch."""
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    n, c = g.shape
    out = cupy.empty(c, g.dtype)
    threads = 128
    _raw("sum_rows", g.dtype)(((c + threads - 1) // threads,), (threads,),
                              (g, out, cupy.int32(n), cupy.int32(c)))
    return out


def softmax_cross_entropy_grad(p, t, gy):
    n, c = p.shape  # an empty batch (n = 0) has no element to scale: 1 / max(n, 1)
    return _kernel("softmax_ce_grad")(p, t, gy, c, p.dtype.type(1 / max(n, 1)))
# %% [markdown]
# ## Convolutions: one launch where im2col made a dozen
#
# The im2col of step 57 (`_im2col_channels_first`) copies one strided slice per
# kernel offset: for a 3x3 kernel that is nine copies plus the padding, each a
# launch (and tens of microseconds of CuPy's Python). On a GPU one kernel can write every element
# of the column array directly, reading zero where the window hangs over the
# border, so no padded copy is made at all. Its transpose, col2im, becomes one
# kernel too: each thread computes one pixel of the image and *gathers* the
# column entries that fall on it (adding them up), instead of scattering
# nine slices into it. Max pooling over windows that tile the image (2x2,
# stride 2) is one kernel forward (the max and which element won) and one
# backward (each input pixel takes the gradient if it won its window).

# %%
#| export dezero_like/cuda_kernels.py
_CONV_RAW = r"""
// col (C, KH, KW, N, OH, OW) from img (N, C, H, W): one thread per element of col
template <typename T>
__device__ void im2col_cf(const T* img, T* col, long long total, int N, int C, int H, int W,
                          int KH, int KW, int OH, int OW, int SH, int SW, int PH, int PW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    long long r = idx;
    int ow = r % OW; r /= OW;
    int oh = r % OH; r /= OH;
    int n = r % N;   r /= N;
    int j = r % KW;  r /= KW;
    int i = r % KH;  r /= KH;
    int c = (int)r;
    int h = oh * SH - PH + i, w = ow * SW - PW + j;
    col[idx] = (h >= 0 && h < H && w >= 0 && w < W)
        ? img[(((long long)n * C + c) * H + h) * W + w] : (T)0;
}

// img (N, C, OH, OW) from col (C, KH, KW, N, H, W), the transposed convolution's
// columns: each output pixel adds up the entries that land on it (no atomics)
template <typename T>
__device__ void col2im_gather(const T* col, T* img, long long total, int N, int C, int H,
                              int W, int KH, int KW, int OH, int OW, int SH, int SW,
                              int PH, int PW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    long long r = idx;
    int x = r % OW; r /= OW;
    int y = r % OH; r /= OH;
    int c = r % C;  r /= C;
    int n = (int)r;
    T s = 0;
    for (int i = 0; i < KH; ++i) {
        int hs = y + PH - i;
        if (hs < 0 || hs % SH) continue;
        int h = hs / SH;
        if (h >= H) continue;
        for (int j = 0; j < KW; ++j) {
            int ws = x + PW - j;
            if (ws < 0 || ws % SW) continue;
            int w = ws / SW;
            if (w >= W) continue;
            s += col[((((long long)c * KH + i) * KW + j) * N + n) * H * W + (long long)h * W + w];
        }
    }
    img[idx] = s;
}

// max pooling over windows that tile the image: y and the winner k = i * KW + j
template <typename T>
__device__ void pool_tiles(const T* x, T* y, int* win, long long total, int H, int W,
                           int KH, int KW, int OH, int OW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int ow = idx % OW, oh = (idx / OW) % OH;
    const T* plane = x + (idx / ((long long)OH * OW)) * H * W;
    T best = plane[(long long)oh * KH * W + ow * KW];
    int k = 0;
    for (int i = 0; i < KH; ++i)
        for (int j = 0; j < KW; ++j) {
            T v = plane[(long long)(oh * KH + i) * W + ow * KW + j];
            if (v > best || v != v) { best = v; k = i * KW + j; }  // first max; nan wins
        }
    y[idx] = best;
    win[idx] = k;
}

// its backward: each input pixel gets its window's gradient if it won the window
template <typename T>
__device__ void pool_tiles_grad(const T* gy, const int* win, T* gx, long long total, int H,
                                int W, int KH, int KW, int OH, int OW) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int w = idx % W, h = (idx / W) % H;
    long long plane = idx / ((long long)H * W);
    long long o = plane * OH * OW + (long long)(h / KH) * OW + w / KW;
    gx[idx] = win[o] == (h % KH) * KW + w % KW ? gy[o] : (T)0;
}

#define DEZERO_LIKE_CONV(T, S)                                                           \
extern "C" __global__ void im2col_cf_##S(const T* a, T* b, long long n, int N, int C,     \
    int H, int W, int KH, int KW, int OH, int OW, int SH, int SW, int PH, int PW) {       \
    im2col_cf<T>(a, b, n, N, C, H, W, KH, KW, OH, OW, SH, SW, PH, PW); }                  \
extern "C" __global__ void col2im_gather_##S(const T* a, T* b, long long n, int N, int C, \
    int H, int W, int KH, int KW, int OH, int OW, int SH, int SW, int PH, int PW) {       \
    col2im_gather<T>(a, b, n, N, C, H, W, KH, KW, OH, OW, SH, SW, PH, PW); }              \
extern "C" __global__ void pool_tiles_##S(const T* x, T* y, int* k, long long n, int H,  \
    int W, int KH, int KW, int OH, int OW) {                                              \
    pool_tiles<T>(x, y, k, n, H, W, KH, KW, OH, OW); }                                    \
extern "C" __global__ void pool_tiles_grad_##S(const T* g, const int* k, T* gx,           \
    long long n, int H, int W, int KH, int KW, int OH, int OW) {                          \
    pool_tiles_grad<T>(g, k, gx, n, H, W, KH, KW, OH, OW); }
DEZERO_LIKE_CONV(float, f32)
DEZERO_LIKE_CONV(double, f64)
"""


def _launch(name, dtype, arrays, total, *sizes):
    """Run kernel ``name`` of ``_CONV_RAW`` for ``dtype``, one thread per element of ``total``.

    The sizes go as NumPy's fixed-width integers (CuPy's ``cupy.int32`` is ``numpy.int32``),
    so launching needs no CuPy here."""
    threads = 256
    blocks = (total + threads - 1) // threads
    _raw(name, dtype, _CONV_RAW)(
        (blocks,), (threads,), (*arrays, np.int64(total), *map(np.int32, sizes)))


def im2col_channels_first(img, kernel_size, stride, pad, out_hw):
    """col ``(C, KH, KW, N, OH, OW)`` of a C-contiguous ``img (N, C, H, W)``, in one launch."""
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    N, C, H, W = img.shape
    (KH, KW), (SH, SW), (PH, PW), (OH, OW) = kernel_size, stride, pad, out_hw
    col = cupy.empty((C, KH, KW, N, OH, OW), img.dtype)
    _launch("im2col_cf", img.dtype, (cupy.ascontiguousarray(img), col), col.size,
            N, C, H, W, KH, KW, OH, OW, SH, SW, PH, PW)
    return col


def col2im_gather(col, out_shape, stride, pad):
    """``(N, OC, OH, OW)`` from the columns ``(OC, KH, KW, N, H, W)``, in one launch."""
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    OC, KH, KW, N, H, W = col.shape
    (SH, SW), (PH, PW) = stride, pad
    img = cupy.empty(out_shape, col.dtype)
    _launch("col2im_gather", col.dtype, (cupy.ascontiguousarray(col), img), img.size,
            N, OC, H, W, KH, KW, out_shape[2], out_shape[3], SH, SW, PH, PW)
    return img


def max_pool_tiles(x, kernel_size):
    """(y, winners) of max pooling with windows that tile ``x (N, C, H, W)``."""
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    N, C, H, W = x.shape
    KH, KW = kernel_size
    y = cupy.empty((N, C, H // KH, W // KW), x.dtype)
    win = cupy.empty(y.shape, cupy.int32)
    _launch("pool_tiles", x.dtype, (cupy.ascontiguousarray(x), y, win), y.size,
            H, W, KH, KW, H // KH, W // KW)
    return y, win


def max_pool_tiles_grad(gy, win, x_shape, kernel_size):
    cupy = _built.get("cupy") or _cupy()  # after the first launch: no call
    N, C, H, W = x_shape
    KH, KW = kernel_size
    gx = cupy.empty(x_shape, gy.dtype)
    _launch("pool_tiles_grad", gy.dtype, (cupy.ascontiguousarray(gy), win, gx), gx.size,
            H, W, KH, KW, H // KH, W // KW)
    return gx

# %% [markdown]
# ### The package code of this step
#
# The package now uses these kernels. The cells below give the functions of earlier steps
# their GPU branch: each replaces the method (or function) of the same name, and
# the NumPy path stays as those steps wrote it.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# Two tests decide when a kernel may replace array operations. `_fusable` is for a backward: the
# arrays must be CuPy arrays of one real floating dtype, and no graph may be recorded, because a
# kernel's result is a plain array with no backward of its own, so `create_graph` takes the
# differentiable path. `_raw_gpu` is for the hand-written kernels, which exist for float32 and
# float64 only (`RAW_DTYPES`); the other fused paths of this step use it too.

# %%
#| export dezero_like/functions.py
from dezero_like import cuda
from dezero_like.core import Config
from dezero_like.cuda_kernels import RAW_CHARS


def _fusable(gy, y):
    """True when a backward may use a fused GPU kernel: CuPy arrays (``y`` is one) of one
    real floating dtype (the kernels' C does arithmetic such as ``1 - y`` that CuPy's
    complex type does not define), and no graph of the backward is being recorded
    (create_graph needs differentiable steps)."""
    return (not Config.enable_backprop
            and (type(y) in cuda._CUPY_MODULES or cuda.is_cupy_array(y))  # a type met: no call
            and y.dtype.kind == "f"
            and gy._data.dtype == y.dtype)  # _data: no property call


def _raw_gpu(a):
    """True for a CuPy array of a dtype the hand-written GPU kernels are built for."""
    if type(a) is np.ndarray:
        return False
    # a CuPy array type met before (step 23's _CUPY_MODULES) needs no call
    return ((type(a) in cuda._CUPY_MODULES or cuda.is_cupy_array(a))
            and a.dtype.char in RAW_CHARS)  # float32 or float64


# %% [markdown]
# `Linear.backward` changes in two ways. When no graph of the backward is recorded and no hook
# watches (a plain `backward()`), it works on the arrays: two matrix products and the bias's sum,
# wrapped as Variables at the end. Through the functions it would make five Function objects
# (two transposes, two `matmul`s, a `sum_to`), each a few microseconds of Python around one
# launch, which is what a GPU step at batch 100 is made of; the numbers are the same. On that path,
# when `b` is 1-d and `gy` is a contiguous CuPy matrix, the bias's gradient, `gy` summed over the
# rows, comes from `sum_rows` in one launch (for up to 512 rows: one thread adds up a column,
# so a long column is better left to CuPy's reduction). With `create_graph=True` or a global
# hook (`with hook:`), step 44's functions run, so the hook sees each of them. (A hook attached
# to the `Linear` itself sees the `Linear`, as before.)

# %%
#| export dezero_like/functions.py Linear
from dezero_like import cuda_kernels, utils
from dezero_like.core import Config, _global_hooks, _make_variable
from dezero_like.functions import matmul, sum_to


def _backward_arrays(self, g, x, W, needs):
    """``backward`` from the arrays, when nothing records or watches: no Function objects."""
    # the arrays through _data, as step 70's loop reads them: no property call
    gx = _make_variable(g @ W._data.T, False) if needs[0] else None
    gW = _make_variable(x._data.T @ g, False) if needs[1] else None
    if len(needs) == 2:
        return gx, gW
    if not needs[2]:
        return gx, gW, None
    if len(self.b_shape) != 1 or g.dtype == np.float16:  # sum_to adds float16 in float32
        gb = utils.sum_to(g, self.b_shape)
    elif _raw_gpu(g) and g.flags.c_contiguous and len(g) <= 512:
        gb = cuda_kernels.sum_rows(g)  # one launch; each thread adds a column's rows in turn
    else:
        gb = g.sum(axis=0)
    return gx, gW, _make_variable(gb, False)


def backward(self, gy):
    needs = self.needs_input_grad
    x, W = self.inputs[0], self.inputs[1]
    if not Config.enable_backprop and not _global_hooks:  # a plain backward (step 70)
        return self._backward_arrays(gy._data, x, W, needs)
    gx = matmul(gy, W.T) if needs[0] else None
    gW = matmul(x.T, gy) if needs[1] else None
    if len(needs) == 2:
        return gx, gW
    if not needs[2]:
        return gx, gW, None
    return gx, gW, sum_to(gy, self.b_shape)


# %% [markdown]
# `ReLU` on a GPU, when backward will need the mask, gets the output and the mask from one kernel
# with two outputs (float32 and float64, the dtypes the hand-written kernels are tested in).
# Without a graph it needs only `maximum`, one launch already.

# %%
#| export dezero_like/functions.py ReLU
from dezero_like import cuda, cuda_kernels


def forward(self, x):
    self.retain_inputs(())
    xp = cuda.get_array_module(x)
    if self.needs_input_grad and _raw_gpu(x):
        y, self.mask = cuda_kernels.relu(x)  # one launch instead of three (step 71)
        return y
    y = xp.maximum(x, 0)
    if self.needs_input_grad:
        self.mask = y != 0  # x > 0, and nan (whose output is nan): as in PyTorch
    return y


# %% [markdown]
# `Sigmoid` on a GPU calls the fused kernel and returns before the NumPy code, which stays as step
# 44 wrote it. The kernel is for real floating dtypes: in C, `1 + exp(-x)` adds an `int` to a
# `complex<float>`, which CuPy's complex type does not define, so complex input takes the array
# operations.
# Forward still keeps only its output, and backward uses the fused `gy * y * (1 - y)` when
# `_fusable` allows it, the three Functions otherwise.

# %%
#| export dezero_like/functions.py Sigmoid
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.functions import _as_float


def forward(self, x):
    self.retain_inputs(())
    self.retain_outputs((0,))
    xp = cuda.get_array_module(x)
    x = _as_float(x)  # integers, booleans: in float64 (not float16)
    if x.dtype == np.float16:  # exp(-x) would overflow 65504 below x = -11.1: float32
        return self.forward(x.astype(np.float32)).astype(np.float16)
    if xp is not np and x.dtype.kind == "f":  # on a GPU: one fused kernel, not four launches
        return cuda_kernels.sigmoid(x)
    if x.ndim == 0:  # NumPy turns 0-d results into scalars, which out= cannot take
        return self.forward(x.reshape(1)).reshape(())
    y = xp.negative(x)
    with np.errstate(over="ignore"):
        xp.exp(y, out=y)
    y += 1
    xp.reciprocal(y, out=y)
    return y


# %%
#| export dezero_like/functions.py Sigmoid
from dezero_like import cuda_kernels
from dezero_like.core import Variable


def backward(self, gy):
    (y,) = self.get_retained_outputs()
    if _fusable(gy, y.data):
        return Variable(cuda_kernels.sigmoid_grad(gy.data, y.data))
    return gy * y * (1 - y)


# %% [markdown]
# `SoftmaxCrossEntropy.forward` on a GPU gets the loss and the probabilities from one kernel and
# stores the probabilities on the function. The kernel is one block of 256 threads, made for a
# batch's logits; above `fused_max_size` logits (65,536) the array path spreads the work over
# the whole GPU instead. Labels left on the CPU (a NumPy array beside CuPy
# logits) are refused at once: CuPy would copy them, and the fused backward would fail on them.
# The label check still runs on the CPU only; on a GPU the kernel gives NaN for a bad label
# instead, and so does the array path that other dtypes (float16) take there, where CuPy's
# indexing would wrap a label of 10 around to class 0 and give a finite, wrong loss. Backward
# then computes $(p - \operatorname{onehot}(t)) \cdot g_y / N$ from those stored probabilities
# in one elementwise kernel, without computing the softmax again.

# %%
#| export dezero_like/functions.py SoftmaxCrossEntropy
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.core import _on_two_devices
from dezero_like.functions import _check_labels, _per_example, _shifted_logsumexp

# the fused kernel runs as one block of 256 threads: right for a batch's logits, not for a
# vocabulary's worth (CuPy's own kernels spread those over the whole GPU)
fused_max_size = 2**16


def forward(self, x, t):
    apart = _on_two_devices(x, t)  # CuPy would copy the labels, then fail in backward
    if apart:
        x_on, t_on = apart
        raise TypeError(
            f"softmax_cross_entropy: the logits are on the {x_on} but the labels are on the "
            f"{t_on}; put both on one device (cuda.as_cupy(t) or cuda.as_numpy(t); a "
            "DataLoader(..., gpu=True) hands out batches already on the GPU)"
        )
    _check_labels("softmax_cross_entropy", x, t)  # shapes, dtype; the range on the CPU only
    xp = cuda.get_array_module(x)
    n = x.shape[0]
    if _raw_gpu(x) and x.size <= self.fused_max_size:  # one kernel: loss and probabilities
        loss, self.probabilities = cuda_kernels.softmax_cross_entropy(x, t)
        return loss
    half = x.dtype.char == "e"  # float16: in float32, rounded once at the end (x - max(x)
    if half:  # passes 65504 for logits of +-4e4, and each row's loss would round apart)
        x = x.astype(np.float32)
    z, log_s = _shifted_logsumexp(x, axis=1)
    neg_log_p = log_s[:, 0] - z[xp.arange(n), t]
    if xp is not np:  # CuPy wraps an out-of-range index around: a bad label gives NaN instead
        neg_log_p = xp.where((t < 0) | (t >= x.shape[1]), xp.nan, neg_log_p)
    loss = _per_example(neg_log_p, n)
    return loss.astype(np.float16) if half else loss


# %%
#| export dezero_like/functions.py SoftmaxCrossEntropy
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.core import Variable
from dezero_like.functions import softmax


def backward(self, gy):
    x, t = self.inputs
    p = getattr(self, "probabilities", None)
    if p is not None and _fusable(gy, p):
        return Variable(cuda_kernels.softmax_cross_entropy_grad(p, t._data, gy._data)), None
    xp = cuda.get_array_module(x.data)
    n, c = x.shape
    onehot = xp.eye(c, dtype=x.dtype)[t.data]
    if xp is not np:  # CuPy wraps a bad label around: NaN gradients, as the loss is NaN
        onehot = xp.where(((t.data < 0) | (t.data >= c))[:, None], xp.nan, onehot)
    gx = (softmax(x, axis=1) - onehot) * (gy / n)
    return gx, None


# %% [markdown]
# `SGD.update_one` on a GPU does `w -= lr * g` in one kernel that writes into the parameter's
# array; `lr` is passed in the parameter's dtype, and so is the gradient (cast first when its
# dtype differs, as NumPy's `-=` casts). A parameter that is not real floating point (integers)
# takes `-=` on the GPU too, which refuses a float update as on the CPU: in the kernel, `lr` would
# become `int(0.1) == 0` and nothing would change.

# %%
#| export dezero_like/optimizers.py SGD
from dezero_like import cuda, cuda_kernels


def update_one(self, param):
    if cuda.is_cupy_array(param.data):  # one fused kernel on a GPU (step 71)
        cuda_kernels.sgd_update(param.data, param.grad.data, self.lr)
    else:
        param.data -= self.lr * param.grad.data


# %% [markdown]
# That is still one launch per parameter: four for the MLP, eight for a small CNN, each a few
# microseconds of Python for very little arithmetic. PyTorch's optimizers update all parameters
# in a few launches on a GPU (their "foreach" and "fused" implementations, a multi-tensor apply).
# The same idea here: one raw kernel takes up to `SGD_SLOTS` (parameter, gradient, size)
# triples as its arguments, and every thread of the grid walks all of them, each taking every
# `stride`-th element. A kernel's arguments are fixed in number, so the source is written out for
# eight slots by a few lines of Python; slots left over get size 0.

# %%
#| export dezero_like/cuda_kernels.py
SGD_SLOTS = 8  # parameters updated by one launch of sgd_many

_SGD_SLICE = r"""
// w[i] -= lr * g[i] for i < n. Every thread of the grid takes the elements i, i + stride,
// i + 2 stride, ..., so one launch covers arrays of any size.
template <typename T>
__device__ void sgd_slice(T* w, const T* g, long long n, T lr) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        w[i] -= lr * g[i];
}
"""


def _sgd_many_source(slots=SGD_SLOTS):
    """CUDA C of ``sgd_many_f32`` and ``sgd_many_f64``: ``sgd_slice`` for ``slots`` triples."""
    kernels = []
    for ctype, suffix in (("float", "f32"), ("double", "f64")):
        args = ", ".join(f"{ctype}* w{k}, const {ctype}* g{k}, long long n{k}"
                         for k in range(slots))
        calls = " ".join(f"sgd_slice(w{k}, g{k}, n{k}, lr);" for k in range(slots))
        kernels.append(f"__global__ void sgd_many_{suffix}({args}, {ctype} lr) {{ {calls} }}")
    return _SGD_SLICE + 'extern "C" {\n' + "\n".join(kernels) + "\n}\n"


_SGD_RAW = _sgd_many_source()


def sgd_update_many(pairs, lr):
    """``w -= lr * g`` for every ``(w, g)`` of ``pairs``, ``SGD_SLOTS`` pairs per launch.

    Each ``w`` is a C-contiguous float32 or float64 array (``RAW_DTYPES``), none twice, and
    each ``g`` a C-contiguous array of ``w``'s shape, cast to ``w``'s dtype first (as
    ``sgd_update`` casts). Parameters of each dtype go in launches of their own."""
    groups = {}
    for w, g in pairs:
        groups.setdefault(w.dtype, []).append((w, g.astype(w.dtype, copy=False)))
    threads = 256
    for dtype, group in groups.items():
        kernel = _raw("sgd_many", dtype, _SGD_RAW)
        for start in range(0, len(group), SGD_SLOTS):
            chunk = group[start:start + SGD_SLOTS]
            largest = max(w.size for w, _ in chunk)
            blocks = min(max((largest + threads - 1) // threads, 1), 1024)  # then the stride
            args = []
            for w, g in chunk:
                args += (w, g, np.int64(w.size))  # cupy.int64 is numpy.int64
            for _ in range(SGD_SLOTS - len(chunk)):  # an empty slot: size 0, never read
                args += (chunk[0][0], chunk[0][0], np.int64(0))
            kernel((blocks,), (threads,), (*args, dtype.type(lr)))


# %% [markdown]
# `SGD.update_all` (the method step 67 calls with every parameter that has a gradient) hands
# the GPU parameters that fit the kernel to `sgd_update_many`: real floating point, contiguous
# (with a gradient of the same shape, which `update` has checked), and no memory shared with
# another slot (two views of one array: two threads would write one element at once; sorting
# the arrays by address finds them). The rest, and every parameter on the CPU, take
# `update_one`, after the launch. A
# subclass that writes its own `update_one` keeps it: the batched path is used only when the
# rule is SGD's own.

# %%
#| export dezero_like/optimizers.py SGD
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.optimizers import SGD, Optimizer


def update_all(self, params):
    if type(self).update_one is not SGD.update_one:  # a subclass with its own rule
        return Optimizer.update_all(self, params)
    spans, rest = [], []
    gpu = cuda._CUPY_MODULES  # CuPy's array types (step 23): tested without a call
    for p in params:
        w, g = p._data, p.grad._data  # the arrays, without the data property's call
        if type(w) is np.ndarray:  # on the CPU: update_one, below, with no CuPy test
            rest.append(p)
        elif ((type(w) in gpu or cuda.is_cupy_array(w))
                and w.dtype.char in cuda_kernels.RAW_CHARS
                and (type(g) in gpu or cuda.is_cupy_array(g)) and g.dtype.kind in "biuf"
                and w.flags.c_contiguous and g.flags.c_contiguous):
            start = w.data.ptr
            spans.append((start, start + w.nbytes, len(spans), p, (w, g)))
        else:
            rest.append(p)
    batch, end = [], 0
    for start, stop, _, p, pair in sorted(spans):  # by address: shares memory with the last?
        if start < end:
            rest.append(p)  # updated on its own, after the launch
        else:
            batch.append(pair)
            end = max(end, stop)
    if batch:
        cuda_kernels.sgd_update_many(batch, self.lr)  # one launch per 8 parameters
    for p in rest:
        self.update_one(p)


# %% [markdown]
# `_im2col_channels_first` of step 57 gains a first branch: on a GPU one kernel writes every
# element of `col`, reading 0 where a window hangs over the border, so no padded copy is made. The
# layout of the result is the same, so `Conv2d` and `Conv2DGradW` are unchanged.

# %%
#| export dezero_like/functions_conv.py
from dezero_like import cuda, cuda_kernels
from dezero_like.functions import _raw_gpu
from dezero_like.functions_conv import get_conv_outsize


def _im2col_channels_first(img, kernel_size, stride, pad):
    """im2col with the layout ``(C, KH, KW, N, OH, OW)``: the weight gradient's favourite.

    Reshaped to ``(C*KH*KW, N*OH*OW)`` it is contiguous, so the weight gradient
    is one matrix product with no copy of the (large) column array.
    """
    xp = cuda.get_array_module(img)
    N, C, H, W = img.shape
    KH, KW = kernel_size
    SH, SW = stride
    PH, PW = pad
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)
    if _raw_gpu(img):  # on a GPU: one kernel, no padded copy (step 71)
        return cuda_kernels.im2col_channels_first(img, kernel_size, stride, pad, (OH, OW))
    if PH or PW:  # pad and move the channels first in one copy
        padded = xp.zeros((C, N, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
        padded[:, :, PH:PH + H, PW:PW + W] = img.transpose(1, 0, 2, 3)
        img = padded
    else:
        img = img.transpose(1, 0, 2, 3)
    col = xp.empty((C, KH, KW, N, OH, OW), dtype=img.dtype)
    for i in range(KH):
        for j in range(KW):
            col[:, i, j] = img[:, :, i:i + SH * OH:SH, j:j + SW * OW:SW]
    return col


# %% [markdown]
# In `Deconv2d.forward` only the last move changes: on a GPU, `col2im_gather` reads the columns in
# their `(OC, KH, KW, N, H, W)` layout directly, so the transpose before `col2im_array` is skipped.
# The kernel also takes stride 1, where the CPU uses the long runs of step 57.

# %%
#| export dezero_like/functions_conv.py Deconv2d
from dezero_like import cuda, cuda_kernels
from dezero_like.functions import _raw_gpu
from dezero_like.functions_conv import (
    _bias,
    _check_conv_weight,
    _deconv_stride1,
    col2im_array,
    get_conv_outsize,
    get_deconv_outsize,
)


def forward(self, x, W, b=None):
    _check_conv_weight("deconv2d", x, W, 0, b)
    if x.ndim != 4:
        raise ValueError(f"deconv2d expects a 4-d input (N, C, H, W), got shape {x.shape}")
    needs = self.needs_input_grad or (True, True, True)
    self.retain_inputs(((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
    C, OC, KH, KW = W.shape
    self.kernel_size = (KH, KW)  # W itself may not be kept (only x is, for gW)
    N, _, H, Wd = x.shape
    SH, SW = self.stride
    PH, PW = self.pad
    if self.outsize is None:
        OH = get_deconv_outsize(H, KH, SH, PH)
        OW = get_deconv_outsize(Wd, KW, SW, PW)
    else:
        OH, OW = self.outsize
        if (get_conv_outsize(OH, KH, SH, PH), get_conv_outsize(OW, KW, SW, PW)) != (H, Wd):
            raise ValueError(
                f"deconv2d: outsize {self.outsize} is inconsistent with an input of "
                f"{H}x{Wd}, kernel {KH}x{KW}, stride {self.stride}, pad {self.pad}"
            )
    if OH < 1 or OW < 1:
        raise ValueError(f"deconv2d: the output would be {OH}x{OW}; reduce pad")
    if self.stride == (1, 1) and not _raw_gpu(x):  # long runs instead of short rows
        y = _deconv_stride1(x, W, (OH, OW), self.pad)
        return _bias(cuda.get_array_module(y).ascontiguousarray(y), b)
    # One matrix product for the whole batch: W^T (OC*KH*KW, C) @ x (C, N*H*W) gives
    # every column of the output; viewed as (N, OC, KH, KW, H, W) it is col2im's input.
    xt = x.transpose(1, 0, 2, 3).reshape(C, N * H * Wd)
    col = (W.reshape(C, -1).T @ xt).reshape(OC, KH, KW, N, H, Wd)
    if _raw_gpu(col):  # on a GPU: col2im as one gathering kernel (step 71)
        y = cuda_kernels.col2im_gather(col, (N, OC, OH, OW), self.stride, self.pad)
        return _bias(y, b)
    col = col.transpose(3, 0, 1, 2, 4, 5)
    y = col2im_array(col, (N, OC, OH, OW), (KH, KW), self.stride, self.pad,
                     to_matrix=False)
    return _bias(y, b)


# %% [markdown]
# Max pooling gets the kernel only when the windows tile the image (`self.tiles`); other windows
# take the array code of step 59. The kernel returns the same `indexes` (the first maximum wins,
# and so does a `nan`), and `PoolingGrad` uses the matching kernel under the same condition, so
# forward and backward agree.

# %%
#| export dezero_like/functions_conv.py Pooling
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.functions import _raw_gpu
from dezero_like.functions_conv import _INT_OF_WIDTH, _max_pool_2x2, _max_pool_windows


def forward(self, x):
    self._setup("pooling", x)
    xp = cuda.get_array_module(x)
    self.pair_masks = None
    if self.tiles and _raw_gpu(x):  # on a GPU: one kernel (step 71)
        y, self.indexes = cuda_kernels.max_pool_tiles(x, self.kernel_size)
        return y
    if (self.tiles and self.kernel_size == (2, 2) and xp is np
            and x.dtype.itemsize in _INT_OF_WIDTH):  # max of pairs, twice
        y, self.pair_masks = _max_pool_2x2(x)
        return y
    y, self.indexes = _max_pool_windows(self, x)
    return y


# %%
#| export dezero_like/functions_conv.py PoolingGrad
import numpy as np
from dezero_like import cuda, cuda_kernels
from dezero_like.functions import _raw_gpu
from dezero_like.functions_conv import _grad_dtype, _pair_spread, _scatter_to_windows


def forward(self, gy):
    self.retain_inputs(())
    xp = cuda.get_array_module(gy)
    # in the input's dtype on every path (a float64 gy for float32 images would make every
    # layer below run its backward in float64)
    gy = gy.astype(_grad_dtype(self.pool, gy), copy=False)
    if self.pool.pair_masks is not None:  # the 2x2 path: undo its two stages
        across, down = self.pool.pair_masks
        N, C, H, W = self.pool.x_shape
        g = gy.reshape(-1, W // 2)
        rows = np.empty((len(g), 2, W // 2), dtype=g.dtype)
        _pair_spread(g, down, rows[:, 0], rows[:, 1])
        gx = np.empty((N * C * H * W // 2, 2), dtype=g.dtype)
        _pair_spread(rows.reshape(-1), across, gx[:, 0], gx[:, 1])
        return gx.reshape(N, C, H, W)
    idx = self.pool.indexes
    if self.pool.tiles and _raw_gpu(gy):  # on a GPU: one kernel (step 71); float16 has none
        return cuda_kernels.max_pool_tiles_grad(gy, idx, self.pool.x_shape,
                                                self.pool.kernel_size)
    zero = gy.dtype.type(0)
    return _scatter_to_windows(self.pool, lambda k: xp.where(idx == k, gy, zero))


# %% [markdown]
# ## Where the framework calls them
#
# A function uses a fused kernel only on a GPU, and in backward only when no
# graph of the backward is being recorded: with `create_graph=True` the
# gradient must be built from differentiable functions (step 30), so the
# unfused path runs. These are the lines in the package:

# %%
import inspect  # noqa: E402

for method in (F.Sigmoid.forward, F.Sigmoid.backward, F.ReLU.forward, F.Linear.backward,
               F.Linear._backward_arrays, optimizers.SGD.update_one, optimizers.SGD.update_all):
    lines = inspect.getsource(method).splitlines()
    print("\n".join(ln for ln in lines if "cuda_kernels" in ln or "_fusable" in ln
                    or ln.lstrip().startswith("def ")))
print(inspect.getsource(F._fusable))

# %% [markdown]
# One more thing to keep off the host: a Python number used with a GPU array, as
# in `1 - y` or `gy / n`. Where the framework needs it as an array, it becomes
# `cupy.full((), value)`, a 0-d device array written by a small fill kernel that
# is queued like any other (CuPy's `asarray` fills a 0-d value the same way; only
# arrays of one or more dimensions are copied from host memory). A training step
# then copies nothing from the host once its batch is on the device;
# `tests/test_gpu.py` counts every `cupy.asarray`/`cupy.array` of a host object
# in a step, so a NumPy array slipped into the loop cannot come in unnoticed.

# %% [markdown]
# ## Fused and unfused give the same numbers
#
# On a GPU we train the same small network for a few steps with the fused
# backward kernels and with the plain array code in backward
# (`create_graph=True` forces the plain path there), and compare. Both runs use
# the fused forward kernels: those are compared with NumPy's forward in
# `tests/test_gpu.py`.

# %%
def train(create_graph, steps=5):
    rng = np.random.default_rng(0)
    x = rng.random((64, 784), dtype=np.float32)
    t = np.arange(64) % 10
    np.random.seed(0)
    model = MLP((100, 10), activation=F.sigmoid)
    model(x)
    if use_gpu:
        model.to_gpu()
        x, t = cuda.as_cupy(x), cuda.as_cupy(t)
    optimizer = optimizers.MomentumSGD(lr=0.5).setup(model)  # not the fused SGD kernel
    losses = []
    for _ in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward(create_graph=create_graph)
        optimizer.update()
        losses.append(float(loss.data))
    return losses


fused_losses, plain_losses = train(False), train(True)
print("fused:", np.round(fused_losses, 6))
print("plain:", np.round(plain_losses, 6))
print("largest difference:", float(np.max(np.abs(np.subtract(fused_losses, plain_losses)))),
      "" if use_gpu else "(no GPU: both runs took the NumPy path, so they agree trivially)")

# %% [markdown]
# ## The result
#
# `benchmarks/mnist_gpu.py` times the book's workload (784-1000-10, sigmoid,
# SGD, batch 100, 60,000 rows, each batch copied to the GPU) for the
# framework, for the same math written by hand with CuPy (unfused and fused),
# and for PyTorch eager, in one run. On an H100 (CuPy 14.2, PyTorch 2.11),
# seconds per epoch, the median of five after a warm-up epoch; each row is one
# run, and only ratios within a row compare fairly (the machines differed; the
# last column divides the unrounded times, so it can differ from the rounded
# figures' quotient in the last digit):
#
# | | dezero_like | by hand, CuPy | by hand, fused | PyTorch eager | dezero_like / PyTorch |
# | --- | --- | --- | --- | --- | --- |
# | before this step | 1.31 | 0.82 | 0.34 | 0.75 | 1.75 |
# | with the fused kernels, run 1 | **0.53** | 0.76 | 0.35 | 0.68 | 0.77 |
# | run 2 | 0.95 | 1.24 | 0.63 | 0.99 | 0.96 |
# | run 3 | 0.61 | 0.90 | 0.42 | 0.69 | 0.88 |
#
# The framework went from 1.75x PyTorch eager's time to 0.77-0.96x, and is now
# faster than the same math written by hand with unfused CuPy (0.68-0.76x): the
# fused kernels remove more launches than the framework's bookkeeping adds. What
# is left is mostly Python: each `Function` call, the matrix products (cuBLAS,
# one launch each, but tens of microseconds of CuPy's Python to set up), and the
# host-to-device copy of each batch (CuPy stages it through pinned memory).
#
# The small CNN of the benchmark (conv16-pool-conv32-pool-fc100-fc10, 10,000
# images) went from 0.66 s to 0.31 s per epoch with the convolution kernels,
# against PyTorch's 0.17 s with cuDNN: 3.9x became 1.8x.
#
# The SGD update of many parameters in one launch came after those runs, and is
# not yet timed on a GPU. What it removes can be counted without one:
# `python benchmarks/launches.py` runs a training step on the CuPy emulator of
# the tests and counts 16 launches per MLP step instead of 19 (fewer than the
# 17 of the hand-fused code, which updates each array on its own) and 37 per
# CNN step instead of 44: every parameter joins the batched update, the
# convolution weights too, because on a GPU `Conv2DGradW` multiplies in the
# order that makes their gradients C-ordered (step 57).

# %% [markdown]
# ## Exercise
# 1. Write the spec of `fused_tanh_grad`, an `ElementwiseKernel` for the
#    backward of tanh, $g_x = g_y (1 - y^2)$ from the output $y$: a triple
#    `TANH_GRAD = (input params, output params, operation)` written like the
#    entries of `_SPECS` above. On a GPU the self-check builds the kernel and
#    compares it with the array version; without one it evaluates your
#    operation line on NumPy arrays (simple C arithmetic reads as Python).
# 2. **Implement then test: a kernel's reference.** Every fused kernel needs a
#    plain version to be tested against. Write `softmax_ce_grad_reference(p, t,
#    gy)`, what the `softmax_ce_grad` kernel computes, in NumPy: from the
#    probabilities `p` (N, C), the labels `t` and the scalar seed `gy`, return
#    $(p - \mathrm{onehot}(t)) \cdot g_y / N$, in `p`'s dtype (the one-hot too:
#    a float32 `p` gives a float32 gradient, as the kernel does). The
#    self-check compares it with the gradient of `F.softmax_cross_entropy` (and
#    with the kernel itself when there is a GPU).

# %%
#| exercise
TANH_GRAD = ...  # (input params, output params, operation), like sigmoid_grad's in _SPECS

# %%
#| solution
TANH_GRAD = ("T gy, T y", "T gx", "gx = gy * (1 - y * y)")

# %%
#| check
assert isinstance(TANH_GRAD, tuple) and len(TANH_GRAD) == 3, (
    "TANH_GRAD should be a triple (input params, output params, operation), like _SPECS's"
)
assert [p.split()[-1] for p in TANH_GRAD[0].split(",")] == ["gy", "y"], (
    f"the inputs should be gy then y, both of type T, got {TANH_GRAD[0]!r}"
)
assert TANH_GRAD[1].split()[-1] == "gx", f"the output should be gx, of type T, got {TANH_GRAD[1]!r}"
y = np.tanh(np.linspace(-2, 2, 7))
gy = np.linspace(1, 2, 7)
expected = gy * (1 - y * y)
if use_gpu:
    cp = cuda.require_gpu()
    fused_tanh_grad = cp.ElementwiseKernel(*TANH_GRAD, "step71_tanh_grad")
    got = cuda.as_numpy(fused_tanh_grad(cp.asarray(gy), cp.asarray(y)))
else:
    scope = {"gy": gy, "y": y}
    exec(TANH_GRAD[2].strip().rstrip(";"), {}, scope)  # noqa: S102 - the learner's one line
    got = scope["gx"]
assert np.allclose(got, expected), (
    f"the kernel gives {np.round(got, 4)}, expected g_y (1 - y^2) = {np.round(expected, 4)}"
)
print("self-check passed: TANH_GRAD computes the backward of tanh",
      "(kernel run on the GPU)" if use_gpu else "(operation evaluated on NumPy)")

# %%
#| exercise
def softmax_ce_grad_reference(p, t, gy):
    raise NotImplementedError(
        "Exercise (step 71): (p - onehot(t)) gy / N, in p's dtype"
    )

# %%
#| solution
def softmax_ce_grad_reference(p, t, gy):
    n, c = p.shape
    return (p - np.eye(c, dtype=p.dtype)[t]) * gy / n

# %%
#| check
import dezero_like as dz  # noqa: E402

rng = np.random.default_rng(0)
logits = dz.Variable(rng.normal(size=(6, 4)))
labels = rng.integers(0, 4, size=6)
seed = np.array(0.7)
F.softmax_cross_entropy(logits, labels).backward(gradient=seed)
probs = F.softmax(logits.data).data
probs_before = probs.copy()
mine = softmax_ce_grad_reference(probs, labels, float(seed))
assert np.array_equal(probs, probs_before), (
    "softmax_ce_grad_reference changed p in place: the caller's probabilities are gone. "
    "Compute the result as a new array, from p and the one-hot, leaving p as it was"
)
assert np.shape(mine) == (6, 4), f"expected shape (6, 4), got {np.shape(mine)}"
assert np.allclose(mine, logits.grad.data), (
    "your gradient differs from softmax_cross_entropy's: is the one-hot at each row's "
    "label, and is the result scaled by gy and divided by the batch size?"
)
mine32 = softmax_ce_grad_reference(probs.astype(np.float32), labels, float(seed))
assert mine32.dtype == np.float32, (
    f"for float32 probabilities the gradient should stay float32, got {mine32.dtype}: build "
    "the one-hot in p's dtype, not NumPy's default float64"
)
if use_gpu:
    from dezero_like import cuda_kernels

    fused = cuda_kernels.softmax_cross_entropy_grad(cuda.as_cupy(probs), cuda.as_cupy(labels),
                                                    cuda.as_cupy(seed))
    assert np.allclose(cuda.as_numpy(fused), mine), "the kernel disagrees with the reference"
print("self-check passed: the reference matches softmax_cross_entropy's gradient"
      + (" and the fused kernel" if use_gpu else ""))
