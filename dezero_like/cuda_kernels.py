"""Fused GPU kernels for the hot elementwise chains (step 71).

Each CuPy operation is one kernel launch, and each launch costs a few
microseconds of Python and driver time however little arithmetic it does.
``1 / (1 + exp(-x))`` written with array operations is four launches and three
temporary arrays; the kernels below do such a chain in one pass. They are built
(compiled by CuPy, then cached on disk) the first time they are used, so
importing this module costs nothing and needs no CuPy. The NumPy path of the
framework never calls them.
"""

from __future__ import annotations

_built = {}


def _kernel(name):
    """The kernel ``name``, built on first use."""
    kernel = _built.get(name)
    if kernel is None:
        import cupy

        kernel = _built[name] = cupy.ElementwiseKernel(*_SPECS[name], name=f"dezero_like_{name}")
    return kernel


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
        acc += log(s) + m - row[label];
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


def _raw(name, dtype):
    import cupy

    module = _built.get("raw")
    if module is None:
        module = _built["raw"] = cupy.RawModule(code=_RAW)
    return module.get_function(f"{name}_f{dtype.itemsize * 8}")


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
}


def sigmoid(x):
    return _kernel("sigmoid")(x)


def sigmoid_grad(gy, y):
    return _kernel("sigmoid_grad")(gy, y)


def sgd_update(param, grad, lr):
    """``param -= lr * grad`` in place, in one kernel."""
    _kernel("sgd")(grad, param.dtype.type(lr), param)


def softmax_cross_entropy(x, t):
    """(mean loss as a 0-d array, probabilities) of logits ``x`` (N, C) and labels ``t`` (N,).

    ``x`` must be float32 or float64 (``RAW_DTYPES``)."""
    import cupy

    n, c = x.shape
    x = cupy.ascontiguousarray(x)
    t = cupy.ascontiguousarray(t.astype(cupy.int64, copy=False))
    p = cupy.empty_like(x)
    loss = cupy.empty((), x.dtype)
    _raw("softmax_ce", x.dtype)((1,), (256,), (x, t, p, loss, cupy.int32(c), cupy.int32(n)))
    return loss, p


def sum_rows(g):
    """``g.sum(axis=0)`` of a C-contiguous float32/float64 matrix, in one light launch."""
    import cupy

    n, c = g.shape
    out = cupy.empty(c, g.dtype)
    threads = 128
    _raw("sum_rows", g.dtype)(((c + threads - 1) // threads,), (threads,),
                              (g, out, cupy.int32(n), cupy.int32(c)))
    return out


def softmax_cross_entropy_grad(p, t, gy):
    n, c = p.shape
    return _kernel("softmax_ce_grad")(p, t, gy, c, p.dtype.type(1 / n))
