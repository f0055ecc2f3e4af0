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


def describe():
    """One line: operating system, CPU, core count, Python and NumPy versions."""
    import numpy as np  # here, not at the top: benchmarks set BLAS threads before NumPy loads

    return (f"{platform.system()} {platform.release()}, {cpu_name()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, NumPy {np.__version__}")
