"""Machine instructions per chain step, counted by Valgrind: a timing that does not wobble.

    python benchmarks/instructions.py                 # both chains, dezero_like (and DeZero)
    python benchmarks/instructions.py --chain sin --runs 5 20
    python benchmarks/instructions.py --chain mlp --chain cnn   # training steps

Wall-clock timings of a microsecond-sized step move by 10-20 % from run to run on
a shared machine, which hides the effect of a small change to the hot path.
Counting the instructions the CPU executes (``valgrind --tool=cachegrind``) gives
the same number every time, as long as nothing else varies: one BLAS thread
(an idle OpenBLAS thread spins and is counted), a fixed hash seed, and the same
bytecode: the counted processes read every module's bytecode from one fresh folder
(``PYTHONPYCACHEPREFIX``), since a process that compiles its modules (a checkout
without ``__pycache__``) counted 0.8% more per sin step than one that loads them.

The chain runs R1 times in one process and R2 times in another; the difference
divided by (R2 - R1) x 1000 steps is the cost of one step, without the start-up
(imports) that both processes share. Fewer instructions usually means less time,
but not always (cache misses and branch mispredictions are not counted), so
report wall-clock figures from ``overhead.py`` and use this one to compare two
versions of the code.

The training chains, ``mlp`` and ``cnn``, are whole training steps (forward, softmax cross
entropy, ``cleargrads``, backward, ``SGD.update``) of the two models of ``mnist_gpu.py`` with
tiny shapes, so that NumPy's arithmetic is small beside the Python work of a step, which is
the same on a GPU (where these models are launch- and Python-bound): the MLP 784-16-10 on
a batch of 2 rows, the small CNN on 2 images of 8x8 pixels (the same calls as on 28x28); a
"step" there is one training step. Run with
CuPy hidden (``PYTHONPATH=/tmp/nocupy:$PWD``, a ``cupy.py`` that raises ImportError) when
it is installed: its import costs nothing per step, but its checks might.

Needs Valgrind (``apt-get install valgrind``); runs the chains of overhead.py (sin, affine)
and the models of mnist_gpu.py (mlp, cnn).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import _machine  # benchmarks/_machine.py, beside this script
import overhead  # benchmarks/overhead.py: the same chains, written once

STEPS = overhead.N  # steps per chain
TRAIN_STEPS = 100  # training steps per run of a training chain
TRAINING = ("mlp", "cnn")


def run_chain(framework, chain, runs):
    """The child process: run the chain of overhead.py ``runs`` times; the last gradient."""
    import numpy as np

    if chain in TRAINING:
        return run_training(chain, runs * TRAIN_STEPS)
    if framework == "numpy":
        fn = overhead.numpy_sin if chain == "sin" else overhead.numpy_affine
    else:
        if framework == "dezero":
            if not hasattr(np, "int"):
                np.int = int  # DeZero 0.0.13 uses the alias NumPy 2 removed
            import dezero as mod
            import dezero.functions as F
        else:
            import dezero_like as mod
            import dezero_like.functions as F
        fn = overhead.framework_sin(mod, F) if chain == "sin" else overhead.framework_affine(mod)
    grad = None
    for _ in range(runs):
        grad = fn(np.array([0.5]))
    return grad


def run_training(chain, steps):
    """``steps`` training steps of mnist_gpu.py's MLP (784-16-10, batch 2) or small CNN (2
    images of 8x8), with SGD; the last loss (the models are made before the first step)."""
    import mnist_gpu  # benchmarks/mnist_gpu.py: the models the GPU benchmark times
    import numpy as np

    import dezero_like.functions as F
    from dezero_like import optimizers

    rng = np.random.default_rng(0)
    if chain == "mlp":
        model, lr = mnist_gpu.mlp_model((784, 16, 10)), mnist_gpu.LR
        x = rng.random((2, 784), dtype=np.float32)
    else:
        model, lr = mnist_gpu.small_cnn(size=8), 0.1  # the same Python work as on 28x28
        x = rng.random((2, 1, 8, 8), dtype=np.float32)
    t = np.array([3, 7])
    optimizer = optimizers.SGD(lr=lr).setup(model)
    loss = None
    for _ in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
    return loss


def count(framework, chain, runs, valgrind, tries=2, pycache=None):
    """Instructions executed by a child process (start-up included): the fewest of ``tries``.

    A count is exact, but a process can do one-off work now and then (a module compiled,
    a cache filled), seen as a difference of tens of thousands of instructions per step
    when the test suite ran beside it; the fewest of two counts leaves such work out.
    ``pycache``: the folder the children read their bytecode from (see ``child_env``).
    """
    return min(_count_once(framework, chain, runs, valgrind, pycache) for _ in range(tries))


def child_env(pycache=None):
    """The environment of a counted child: one BLAS thread, a fixed hash seed, and, with
    ``pycache``, every module's bytecode read from that folder (``PYTHONPYCACHEPREFIX``).

    The bytecode matters to the count per step, not only to the start-up: a process that
    compiles its modules (no ``__pycache__`` beside them, or ``PYTHONDONTWRITEBYTECODE``
    set) holds other objects at other addresses than one that loads them, and the steps
    then cost otherwise (0.8% for the sin chain, 62,793 against 62,308 instructions, the
    same code in two checkouts on 2026-11-29). ``main`` fills a fresh folder first
    (``fill_pycache``), so every checkout is counted in the same state."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = pycache
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # counted runs only read it
    return env


def fill_pycache(framework, chain, pycache):
    """Run ``chain`` once, without Valgrind, writing the bytecode of what it imports into
    ``pycache``."""
    env = child_env(pycache)
    del env["PYTHONDONTWRITEBYTECODE"]
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", framework, chain, "1"],
                   env=env, capture_output=True, check=True)


def _count_once(framework, chain, runs, valgrind, pycache=None):
    cmd = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           sys.executable, os.path.abspath(__file__), "--child", framework, chain, str(runs)]
    proc = subprocess.run(cmd, env=child_env(pycache), capture_output=True, text=True,
                          check=False)
    return parse_total(proc.stderr, proc.returncode)


def parse_total(valgrind_output, returncode=0):
    """The ``I refs`` total from cachegrind's summary, as an int."""
    match = re.search(r"I\s+refs:\s+([\d,]+)", valgrind_output)
    if returncode != 0 or match is None:
        tail = "\n".join(valgrind_output.strip().splitlines()[-10:])
        raise RuntimeError(f"the counted run failed (exit {returncode}):\n{tail}")
    return int(match.group(1).replace(",", ""))


def per_step(low, high, runs_low, runs_high, steps=STEPS):
    """Instructions of one chain step from two totals (``steps`` steps per run)."""
    return (high - low) / ((runs_high - runs_low) * steps)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chain", action="append", choices=["sin", "affine", *TRAINING],
                   help="chain(s) to count (default sin and affine); mlp and cnn are "
                        "training steps of dezero_like")
    p.add_argument("--runs", nargs=2, type=int, default=[2, 8], metavar=("R1", "R2"),
                   help="runs of the chain in the two processes (default 2 8)")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        framework, chain, runs = args.child
        run_chain(framework, chain, int(runs))
        return 0
    r1, r2 = args.runs
    if not 0 <= r1 < r2:
        p.error("--runs needs 0 <= R1 < R2")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        p.exit(2, "valgrind is not installed: apt-get install valgrind (or use overhead.py, "
                  "which measures wall-clock time)\n")
    frameworks = ["numpy", "dezero_like"]
    if importlib.util.find_spec("dezero") is not None:  # the book's framework, if installed
        frameworks.append("dezero")
    print("command:", " ".join([os.path.basename(sys.executable)] + sys.argv))
    print("machine:", _machine.describe())
    chains = args.chain or ["sin", "affine"]
    what = []
    if any(c not in TRAINING for c in chains):
        what.append(f"chain step (forward + backward), {STEPS} steps per run")
    if any(c in TRAINING for c in chains):
        what.append("training step (MLP 784-16-10 on 2 rows, small CNN on 2 images of 8x8; "
                    "forward, loss, cleargrads, backward, SGD update), "
                    f"{TRAIN_STEPS} steps per run")
    print(f"instructions per {'; per '.join(what)}; runs {r1} vs {r2}, valgrind cachegrind "
          "(fewest of 2 counts), 1 BLAS thread, PYTHONHASHSEED=0, bytecode compiled once into "
          "a fresh PYTHONPYCACHEPREFIX (a checkout's own __pycache__, or none, moves the count "
          "per step by up to 1%)")
    print(f"{'chain':8} {'framework':12} {'instructions':>13}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="instructions-pyc-") as pycache:
        for chain in chains:
            steps = TRAIN_STEPS if chain in TRAINING else STEPS
            for fw in ["dezero_like"] if chain in TRAINING else frameworks:
                fill_pycache(fw, chain, pycache)
                low, high = (count(fw, chain, r, valgrind, pycache=pycache) for r in (r1, r2))
                n = per_step(low, high, r1, r2, steps)
                results[chain, fw] = n
                print(f"{chain:8} {fw:12} {n:13,.0f}")
    for chain in chains:
        if (chain, "dezero") in results:
            ours, theirs, floor = (results[chain, k] for k in ("dezero_like", "dezero", "numpy"))
            overhead_ratio = (ours - floor) / (theirs - floor)
            print(f"{chain}: dezero_like / dezero = {ours / theirs:.2f}; overhead (instructions "
                  f"beyond NumPy's) vs dezero's = {overhead_ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
