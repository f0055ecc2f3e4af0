"""Run step scripts one after another and report how each went.

    python tools/run_steps.py            # every step, in order
    python tools/run_steps.py 1 14 53    # just these steps
    python tools/run_steps.py --quiet    # only the summary lines

Each step runs as ``python steps/stepNN.py`` in a fresh process from a
temporary directory, exactly as a reader would run it. Plots are drawn with
Matplotlib's non-interactive backend unless a display is available.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dezero_like.datasets import DATA_ENV, DATA_EXIT_CODE

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="*", type=int, help="step numbers (default: all)")
    parser.add_argument("--quiet", action="store_true", help="do not show the steps' output")
    args = parser.parse_args(argv)
    available = {int(p.stem[4:]): p for p in sorted((ROOT / "steps").glob("step[0-9][0-9].py"))}
    wanted = args.steps or sorted(available)
    missing = [n for n in wanted if n not in available]
    if missing:
        parser.error(f"no such step(s): {missing}; available: {sorted(available)}")
    env = dict(os.environ)
    if not env.get("DISPLAY"):
        env.setdefault("MPLBACKEND", "Agg")
    failed, no_data = [], []
    total = time.perf_counter()
    for n in wanted:
        script = available[n]
        print(f"=== {script.relative_to(ROOT)} ===", flush=True)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as cwd:
            result = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env,
                                    capture_output=args.quiet, text=True)
        elapsed = time.perf_counter() - start
        if result.returncode == 0:
            status = "ok"
        elif result.returncode == DATA_EXIT_CODE:  # the step printed why, in one paragraph
            status = "skipped: MNIST is not available (see the paragraph above)"
            no_data.append(n)
            if args.quiet:
                print(result.stderr.strip()[-2000:])
        else:
            status = f"FAILED (exit {result.returncode})"
            failed.append(n)
            if args.quiet:
                print(result.stdout[-2000:], result.stderr[-2000:], sep="\n")
        print(f"--- step {n:02d}: {status} in {elapsed:.1f} s\n", flush=True)
    ok = len(wanted) - len(failed) - len(no_data)
    parts = [f"{ok} ok"]
    if no_data:
        parts.append(f"{len(no_data)} could not get MNIST {no_data} (set {DATA_ENV} to a folder "
                     "with mnist/, or allow the download)")
    parts.append(f"{len(failed)} failed" + (f" {failed}" if failed else ""))
    print(f"ran {len(wanted)} steps in {time.perf_counter() - total:.1f} s: " + ", ".join(parts))
    return 1 if failed or no_data else 0


if __name__ == "__main__":
    sys.exit(main())
