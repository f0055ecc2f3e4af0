"""What a benchmark's numbers were measured on: one description shared by every benchmark."""

from __future__ import annotations

import os
import platform


def cpu_name():
    """The CPU's model name (from /proc/cpuinfo on Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas():
    """NumPy's BLAS library and how many threads it was told to use (its default: one per core)."""
    import numpy as np

    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name = f"{info['name']} {info.get('version', '')}".strip()
    except Exception:  # an older NumPy, or a build that does not say
        name = "unknown"
    told = [f"{var}={os.environ[var]}" for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
            if var in os.environ]
    return f"{name} ({', '.join(told) or 'default threads'})"


def describe():
    """One line: operating system, CPU, core count, Python, NumPy and its BLAS."""
    import numpy as np  # here, not at the top: benchmarks set BLAS threads before NumPy loads

    return (f"{platform.system()} {platform.release()}, {cpu_name()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, BLAS {blas()}")


def print_header(torch=None):
    """The lines a comparison with PyTorch begins with: the command as typed, the machine, and
    the versions of NumPy, dezero_like and (``torch``, the module, or None) PyTorch."""
    import shlex
    import sys

    import numpy as np

    import dezero_like as dz

    print("command:", shlex.join([os.path.basename(sys.executable)] + sys.argv))
    print("machine:", describe())
    print(f"numpy {np.__version__}, dezero_like {dz.__version__}"
          + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else
             ", torch not installed"))


def median_ms(fn, repeat, warmup=3):
    """The median time of ``fn()`` over ``repeat`` calls, in milliseconds, after ``warmup``
    untimed calls (allocations, BLAS threads, oneDNN's choice of kernels)."""
    import statistics
    import time

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)
