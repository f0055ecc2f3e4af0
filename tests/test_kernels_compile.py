"""The GPU kernels compile, checked on a machine without a GPU.

CuPy compiles the CUDA C of ``dezero_like.cuda_kernels`` (step 71) with NVRTC,
NVIDIA's run-time compiler, the first time each kernel runs. NVRTC needs no GPU,
so these tests hand it the same sources on CI's CPU machines: a typo or a type
error in a kernel fails here, not first in a learner's GPU session. Whether the
kernels compute the right numbers is for tests/test_gpu.py, on a GPU.

* the hand-written modules (``RawModule`` sources), for two GPU generations, and
  the static shared memory each of their kernels declares (read from the PTX), which
  must fit the 48 KiB a block gets without an opt-in;
* every ``ElementwiseKernel`` of the package and step 71's exercise kernel,
  wrapped the way CuPy wraps them: with CuPy's own headers (``CArray``,
  ``float16``, ``complex``) when CuPy is installed, and with a plain wrapper
  (pointers, float and double) otherwise.

NVRTC comes from the ``nvidia-cuda-nvrtc-cu12`` wheel (CI installs it) or a CUDA
toolkit; without it the tests skip and say so.
"""

from __future__ import annotations

import ast
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import re
from pathlib import Path

import pytest

from dezero_like import cuda_kernels

# compute capability 7.5 is Colab's T4, 9.0 an H100
ARCHS = ("compute_75", "compute_90")
# the dtypes the package's fused paths hand to the elementwise kernels: real floating types
# (dezero_like.functions._fusable, Sigmoid.forward on a GPU); SGD's update takes a parameter
# of any dtype, and its one-line kernel compiles for complex and integer types as well
CUPY_TYPES = {"float16": "float16", "float32": "float", "float64": "double"}
PLAIN_TYPES = {"float32": "float", "float64": "double"}


def _folder_of(package):
    """The folder of an installed package (without importing it), or None."""
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:  # its parent package is not installed
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _nvrtc_library():
    """Path of libnvrtc, from the pip wheel or a CUDA toolkit, or None."""
    candidates = []
    wheel = _folder_of("nvidia.cuda_nvrtc")
    if wheel is not None:
        candidates += sorted(glob.glob(str(wheel / "lib" / "libnvrtc.so*")))
    for root in (os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates += sorted(glob.glob(os.path.join(root, "lib*", "libnvrtc.so*")))
    found = ctypes.util.find_library("nvrtc")
    if found:
        candidates.append(found)
    for path in candidates:
        if "builtins" in os.path.basename(path) or ".alt." in os.path.basename(path):
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


NVRTC = _nvrtc_library()
needs_nvrtc = pytest.mark.skipif(
    NVRTC is None, reason="needs NVRTC, CUDA's run-time compiler (pip install "
    "nvidia-cuda-nvrtc-cu12, Linux x86_64), to compile the GPU kernels without a GPU")


def _cupy_include_dirs():
    """CuPy's kernel headers and the CUDA headers they include, or None when either is missing."""
    cupy = _folder_of("cupy")
    runtime = _folder_of("nvidia.cuda_runtime")
    cuda_include = runtime / "include" if runtime else Path("/usr/local/cuda/include")
    if cupy is None or not (cuda_include / "cuda_fp16.h").exists():
        return None
    include = cupy / "_core" / "include"
    if not (include / "cupy" / "carray.cuh").exists():
        return None
    cccl = include / "cupy" / "_cccl"
    return [include, cccl / "libcudacxx", cccl / "thrust", cccl / "cub", cuda_include]


CUPY_INCLUDE = _cupy_include_dirs()
CUPY_HEADERS = ("complex.cuh", "carray.cuh", "atomics.cuh", "math_constants.h", "float16.cuh")


def _nvrtc(source, options):
    """Compile ``source`` with NVRTC; return (ok, the compiler's log, the PTX or None)."""
    program = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"kernel.cu",
                                    0, None, None) == 0
    try:
        encoded = [o.encode() for o in options]
        status = NVRTC.nvrtcCompileProgram(program, len(encoded),
                                           (ctypes.c_char_p * len(encoded))(*encoded))
        size = ctypes.c_size_t()
        NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        NVRTC.nvrtcGetProgramLog(program, log)
        ptx = None
        if status == 0:
            NVRTC.nvrtcGetPTXSize(program, ctypes.byref(size))
            ptx = ctypes.create_string_buffer(size.value)
            NVRTC.nvrtcGetPTX(program, ptx)
    finally:
        NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
    return status == 0, log.value.decode(errors="replace"), ptx and ptx.value.decode()


def compile_cuda(source, options):
    """Compile ``source`` with NVRTC; return (ok, the compiler's log)."""
    ok, log, _ = _nvrtc(source, options)
    return ok, log


def _params(in_params, out_params):
    """[(name, type, is_raw, is_output)] of an ElementwiseKernel's parameter strings."""
    out = []
    for text, is_output in ((in_params, False), (out_params, True)):
        for param in text.split(","):
            words = param.split()
            raw = words[0] == "raw"
            ctype, name = words[-2], words[-1]
            ctype = {"int32": "int", "int64": "long long", "bool": "bool"}.get(ctype, ctype)
            out.append((name, ctype, raw, is_output))
    return out


def elementwise_source(spec, ctype, with_cupy):
    """The CUDA C that CuPy builds around an ElementwiseKernel's operation.

    Every non-raw parameter is read as one element per index ``i`` (a scalar argument
    is the same C value); raw parameters are indexed by the operation itself."""
    in_params, out_params, operation = spec
    params, reads = [], []
    for name, c, raw, is_output in _params(in_params, out_params):
        const = "" if is_output else "const "
        if raw:
            params.append(f"CArray<{c}, 1, 1, 1> {name}" if with_cupy else f"{c}* {name}")
            continue
        params.append(f"{const}CArray<{c}, 1, 1, 1> _raw_{name}" if with_cupy
                      else f"{const}{c}* _raw_{name}")
        at = "_ind.get()" if with_cupy else "i"
        reads.append(f"{const}{c} {'&' if is_output else ''}{name} = _raw_{name}[{at}];")
    if with_cupy:  # CuPy's own headers, those this CuPy has (float16.cuh is CuPy 14's)
        head = "".join(f"#include <cupy/{h}>\n" for h in CUPY_HEADERS
                       if (CUPY_INCLUDE[0] / "cupy" / h).exists())
        params.append("CIndexer<1> _ind")
        loop = "CUPY_FOR(i, _ind.size()) {\n    _ind.set(i);"
    else:
        head = ""
        params.append("long long _n")
        loop = ("for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < _n;\n"
                "       i += (long long)blockDim.x * gridDim.x) {")
    return (f"{head}typedef {ctype} T;\ntypedef long long I;\n"
            f"extern \"C\" __global__ void kernel({', '.join(params)}) {{\n"
            f"  {loop}\n    {' '.join(reads)}\n    {operation};\n  }}\n}}\n")


def compile_to_ptx(source, options):
    """The PTX NVRTC makes of ``source`` (an AssertionError with its log if it fails)."""
    ok, log, ptx = _nvrtc(source, options)
    assert ok, f"does not compile:\n{log}"
    return ptx


def static_shared_bytes(ptx):
    """{kernel: bytes of the static shared memory it declares} of a module's PTX."""
    sizes = {}
    for entry in re.split(r"\.visible \.entry ", ptx)[1:]:
        name = entry.split("(", 1)[0]
        sizes[name] = sum(int(bits) // 8 * int(count) for bits, count in re.findall(
            r"\.shared\s+(?:\.align\s+\d+\s+)?\.[a-z](\d+)\s+[\w$]+\[(\d+)\]", entry))
    return sizes


def _options(arch, with_cupy=False):
    options = ["--std=c++17", "-ftz=true", f"-arch={arch}"]
    if with_cupy:
        options += [f"-I{folder}" for folder in CUPY_INCLUDE]
    return options


def _assert_compiles(source, options, what):
    ok, log = compile_cuda(source, options)
    assert ok, f"{what} does not compile with NVRTC ({' '.join(options[:3])}):\n{log}"


def _step71_exercise_kernel():
    """Step 71's exercise kernel (TANH_GRAD), read from the step's solution cell."""
    text = (Path(__file__).parents[1] / "steps" / "step71.py").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("TANH_GRAD = (\""))
    return ast.literal_eval(line.split("=", 1)[1])  # a triple of strings


ELEMENTWISE = {**cuda_kernels._SPECS, "step71 TANH_GRAD": _step71_exercise_kernel()}


@needs_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("module", ["_RAW", "_CONV_RAW", "_SGD_RAW"])
def test_the_hand_written_kernels_compile(module, arch):
    _assert_compiles(getattr(cuda_kernels, module), _options(arch), f"cuda_kernels.{module}")


# CUDA's static shared memory per block without an opt-in (cudaFuncSetAttribute): 48 KiB
# on every GPU from the T4 to the H200; a kernel declaring more fails to load or launch
STATIC_SHARED_LIMIT = 48 * 1024


@needs_nvrtc
@pytest.mark.parametrize("module", ["_RAW", "_CONV_RAW", "_SGD_RAW"])
def test_the_hand_written_kernels_fit_the_static_shared_memory_of_a_block(module):
    """Counted in the PTX NVRTC makes (the emulator's shared arrays are ordinary statics, of
    any size): the loss kernel's 256 partial sums are 1 KiB in float32, 2 KiB in float64."""
    ptx = compile_to_ptx(getattr(cuda_kernels, module), _options(ARCHS[0]))
    sizes = static_shared_bytes(ptx)
    assert sizes, f"no kernel found in the PTX of cuda_kernels.{module}"
    assert all(size <= STATIC_SHARED_LIMIT for size in sizes.values()), sizes
    if module == "_RAW":
        assert sizes["softmax_ce_f32"] == 1024 and sizes["softmax_ce_f64"] == 2048, sizes


@needs_nvrtc
def test_a_kernel_over_the_shared_memory_limit_is_caught():
    """The count can fail: 64 KiB of doubles in one block (NVRTC itself compiles it)."""
    source = ('extern "C" __global__ void big(double* out) {\n'
              '    __shared__ double tile[8192];\n'
              '    tile[threadIdx.x] = threadIdx.x; __syncthreads(); out[0] = tile[1]; }')
    sizes = static_shared_bytes(compile_to_ptx(source, _options(ARCHS[0])))
    assert sizes == {"big": 65536} and sizes["big"] > STATIC_SHARED_LIMIT


@needs_nvrtc
@pytest.mark.parametrize("dtype", sorted(PLAIN_TYPES))
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_every_elementwise_kernel_compiles(name, dtype):
    source = elementwise_source(ELEMENTWISE[name], PLAIN_TYPES[dtype], with_cupy=False)
    _assert_compiles(source, _options(ARCHS[-1]), f"kernel {name!r} for {dtype}")


@needs_nvrtc
@pytest.mark.skipif(CUPY_INCLUDE is None, reason="needs CuPy's kernel headers and CUDA's "
                    "cuda_fp16.h (pip install cupy-cuda12x nvidia-cuda-runtime-cu12), which "
                    "are what CuPy wraps an ElementwiseKernel with")
@pytest.mark.parametrize("dtype", sorted(CUPY_TYPES))
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_every_elementwise_kernel_compiles_as_cupy_builds_it(name, dtype):
    source = elementwise_source(ELEMENTWISE[name], CUPY_TYPES[dtype], with_cupy=True)
    _assert_compiles(source, _options(ARCHS[-1], with_cupy=True),
                     f"kernel {name!r} for {dtype} (in CuPy's wrapper)")


@needs_nvrtc
def test_a_broken_kernel_fails_to_compile_with_the_compilers_message():
    """The check can fail: a kernel with a type error is reported with NVRTC's log."""
    broken = ("T x", "T y", "y = undefined_name * x")
    ok, log = compile_cuda(elementwise_source(broken, "float", with_cupy=False),
                           _options(ARCHS[-1]))
    assert not ok and "undefined_name" in log


@needs_nvrtc
@pytest.mark.skipif(CUPY_INCLUDE is None, reason="needs CuPy's kernel headers (see above)")
def test_integer_arithmetic_on_cupy_complex_is_refused_which_is_why_sigmoid_takes_real_types():
    """``1 + exp(-x)`` with CuPy's ``complex<float>``: an int plus a complex has no operator.
    This is why the package hands the fused sigmoid real floating types only."""
    source = elementwise_source(cuda_kernels._SPECS["sigmoid"], "complex<float>", with_cupy=True)
    ok, log = compile_cuda(source, _options(ARCHS[-1], with_cupy=True))
    assert not ok and "operator" in log



def _benchmark_kernels(load_benchmark):
    """The specs of ``benchmarks/mnist_gpu.py``'s hand-fused kernels, as its ``kernels(cp)``
    hands them to CuPy: ``{name: ("elementwise", (in, out, operation)) or ("raw", source)}``.
    Its ``cp`` here only keeps what it is given (what CuPy would compile on first use)."""
    import types

    keep = types.SimpleNamespace(
        ElementwiseKernel=lambda in_params, out_params, operation, name: (
            "elementwise", (in_params, out_params, operation)),
        RawKernel=lambda code, name: ("raw", code))
    return load_benchmark("mnist_gpu").kernels(keep)


@needs_nvrtc
@pytest.mark.parametrize("arch", ARCHS)
def test_the_benchmarks_hand_fused_kernels_compile(load_benchmark, arch):
    """The GPU benchmark's "by hand, fused" column builds four kernels of its own, which no
    other test compiles: a typo there would fail first on a lent GPU, in its bench stage."""
    kernels = _benchmark_kernels(load_benchmark)
    assert sorted(kernels) == ["bias_sigmoid", "sgd", "sigmoid_grad", "softmax_ce"]
    for name, (kind, spec) in kernels.items():
        for ctype in (("float",) if kind == "raw" else ("float", "double")):
            source = spec if kind == "raw" else elementwise_source(spec, ctype, with_cupy=False)
            _assert_compiles(source, _options(arch), f"benchmark kernel {name!r} ({ctype})")
