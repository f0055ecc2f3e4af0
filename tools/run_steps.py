"""Run step scripts one after another and report how each went.

    python tools/run_steps.py            # every step, in order
    python tools/run_steps.py 1 14 53    # just these steps
    python tools/run_steps.py --quiet    # only the summary lines
    python tools/run_steps.py --exercises 10   # check your own answers to step 10
    python tools/run_steps.py --show 33  # also open each plot in a window

Each step runs as ``python steps/stepNN.py`` in a fresh process from the current
directory, exactly as a reader would run it, so the files it writes land in
``outputs/stepNN/`` there. Plots are drawn with Matplotlib's non-interactive
backend, so no window opens and stops the run: each step prints the path of every
picture it writes. ``--show`` opens them in windows instead (each plot then waits
for its window to be closed), as ``python steps/stepNN.py`` does on a desktop.

A step script runs its exercises' solutions, so its self-checks always pass. To
check your own answer, fill in the ``#| exercise`` cell in ``steps/stepNN.py`` and
run with ``--exercises``: the step then runs as its notebook does with the
solutions switched off, and each self-check prints ``self-check passed`` or what
is still wrong (without stopping the step).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

try:
    from dezero_like.datasets import DATA_ENV, DATA_EXIT_CODE
except ImportError as error:  # not installed (or a broken copy): say how to install it
    sys.exit(f"run_steps: cannot import dezero_like ({error}). To fix: run `pip install -e .` "
             f"in {ROOT}, then run this again.")


def _load_notebooks_tool():
    """tools/notebooks.py, beside this script: how a notebook runs a step's cells."""
    spec = importlib.util.spec_from_file_location("notebooks", ROOT / "tools" / "notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


notebooks = _load_notebooks_tool()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="*", type=int, help="step numbers (default: all)")
    parser.add_argument("--quiet", action="store_true", help="do not show the steps' output")
    parser.add_argument("--exercises", action="store_true",
                        help="run with the solutions off, so the self-checks test your answers")
    parser.add_argument("--show", action="store_true",
                        help="open the plots in windows (each waits until it is closed); "
                             "by default they are only written to files")
    args = parser.parse_args(argv)
    available = {int(p.stem[4:]): p for p in sorted((ROOT / "steps").glob("step[0-9][0-9].py"))}
    wanted = args.steps or sorted(available)
    missing = [n for n in wanted if n not in available]
    if missing:
        parser.error(f"no such step(s): {missing}; available: {sorted(available)}")
    stale = installed_elsewhere()
    if stale:
        print(stale, file=sys.stderr)
    env = step_environment(os.environ, show=args.show)
    failed, no_data = [], []
    total = time.perf_counter()
    for n in wanted:
        script = available[n]
        print(f"=== {script.relative_to(ROOT)} ===", flush=True)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            if args.exercises:
                result = run_counted(learner_version(script, Path(tmp)), env, args.quiet)
            else:
                result = run_teed(script, env, args.quiet)
        elapsed = time.perf_counter() - start
        if result.returncode == 0:
            status = "ok"
            if args.exercises:
                lines = result.stdout.splitlines()
                passed = sum(line.startswith("self-check passed") for line in lines)
                todo = sum(line.startswith("not solved yet") for line in lines)
                status += f", self-checks: {passed} passed, {todo} not solved yet"
        elif result.returncode == DATA_EXIT_CODE:  # the step printed why, in one paragraph
            part = missing_part(result.stderr)
            status = f"skipped: {part} is not available (see the paragraph above)"
            no_data.append((n, part))
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
    for part, fix in MISSING_PARTS.values():
        steps = [n for n, missing in no_data if missing == part]
        if steps:
            parts.append(f"{len(steps)} could not get {part} {steps} ({fix})")
    parts.append(f"{len(failed)} failed" + (f" {failed}" if failed else ""))
    steps = f"{len(wanted)} step{'s' * (len(wanted) != 1)}"
    print(f"ran {steps} in {time.perf_counter() - total:.1f} s: " + ", ".join(parts))
    return 1 if failed or no_data else 0


# What a step that stops on a missing part (exit status 3, dezero_like._fixable) lacked, told
# apart by the error it printed last: the part, and the fix for the summary line.
MISSING_PARTS = {
    "MNISTUnavailableError": ("MNIST", f"set {DATA_ENV} to a folder with mnist/, or allow the "
                                       "download"),
    "MPIUnavailableError": ("mpi4py", 'pip install -e ".[mpi]"'),
    None: ("a part it needs", "each step's paragraph says what to install"),
}


def missing_part(stderr):
    """The part a step that exited with status 3 lacked, from the error it printed last."""
    named = re.findall(r"^(\w+Error): ", stderr or "", re.MULTILINE)
    return MISSING_PARTS.get(named[-1] if named else None, MISSING_PARTS[None])[0]


def run_teed(script, env, quiet):
    """Run a step as ``python script``; its output shows as it comes (unless ``quiet``).

    Its stderr passes through a pipe, written on at once (tqdm's bars stay live), so that
    the runner can read which part a step that stopped on one lacked; the result's stderr
    holds its last 4,000 characters (all of it with ``quiet``, stdout then captured too).
    """
    if quiet:
        return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True)
    with subprocess.Popen([sys.executable, str(script)], env=env,
                          stderr=subprocess.PIPE) as child:
        said = _tee(child.stderr)()  # returns once the step has closed its stderr
    return subprocess.CompletedProcess(child.args, child.returncode, None, said)


def _tee(stream):
    """Copy ``stream`` to this process's stderr as it comes; return a getter of its tail."""
    kept = bytearray()

    def copy():
        while chunk := os.read(stream.fileno(), 4096):
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
            kept.extend(chunk)
            del kept[:-4000]

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()

    def tail():
        thread.join()
        return kept.decode("utf-8", "replace")

    return tail


def step_environment(environ, show=False):
    """The environment the steps run in: Matplotlib draws into files only, unless ``show``.

    With a display (Linux's DISPLAY, or any macOS or Windows desktop), Matplotlib would open
    each ``plt.show()`` in a window and stop the run until it is closed, so a demo of several
    steps would wait on a window nobody asked for. A backend the user chose is kept.
    """
    env = dict(environ)
    if not show:
        env.setdefault("MPLBACKEND", "Agg")
    return env


def installed_elsewhere():
    """A warning when ``import dezero_like`` finds a copy other than this checkout's, else None.

    The steps from 23 on import the package; one installed from another checkout (an
    older clone, say) fails them with ImportErrors about names it does not have yet.
    """
    found = importlib.util.find_spec("dezero_like")
    if found is None or found.origin is None:
        return None
    package = Path(found.origin).resolve().parent
    if package == (ROOT / "dezero_like").resolve():
        return None
    return (f"warning: `import dezero_like` finds {package}, not this checkout's "
            f"{ROOT / 'dezero_like'}: the steps from 23 on may fail with ImportErrors. "
            f"To fix: run `pip install -e .` in {ROOT}.")


def run_counted(path, env, quiet):
    """Run ``path``, echoing its output as it comes (unless ``quiet``); return what it printed.

    The result has ``returncode``, ``stdout`` and ``stderr`` as ``subprocess.run`` gives them
    (with ``quiet``, stderr is merged into stdout, so a failure's message can be shown;
    without, stderr shows as it comes and the result keeps its tail, as in ``run_teed``).
    """
    env = dict(env, PYTHONIOENCODING="utf-8")
    with subprocess.Popen([sys.executable, str(path)], env=env, text=True, encoding="utf-8",
                          stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if quiet else subprocess.PIPE) as child:
        tail = (lambda: "") if quiet else _tee(child.stderr)
        lines = []
        for line in child.stdout:
            lines.append(line)
            if not quiet:
                print(line, end="", flush=True)
        said = tail()
    merged = "".join(lines)
    return subprocess.CompletedProcess(child.args, child.returncode, merged,
                                       merged[-4000:] if quiet else said)


def learner_version(script, folder):
    """Write a runner for ``script`` as its notebook runs it, solutions off; return its path.

    Each code cell runs as the notebook holds it (``notebooks.notebook_cell_source``): a
    solution only if ``use_solution`` is ticked (it is not), and a self-check that prints
    what is still wrong instead of stopping the step. Each cell is compiled under the
    script's own path, with its lines where they are in the script, so a traceback points
    at the line the learner wrote.
    """
    text = script.read_text(encoding="utf-8")
    cells = []
    for kind, source, line in notebooks.split_cells_at(text):
        if kind != "code":
            continue
        role, body = notebooks.exercise_role(source)
        shown = notebooks.notebook_cell_source(source)[0]
        if role is not None:
            # the body's first line in the script: after the marker and any blank lines ...
            line += source.count("\n") - body.count("\n")
            # ... less the lines the notebook puts before it (title, switch, `if`, `try:`)
            placed = body if role == "exercise" else notebooks._indent(body)
            line -= shown[:shown.index(placed)].count("\n")
        cells.append((max(line, 1), shown))
    path = folder / script.name
    path.write_text(RUNNER.format(script=str(script.resolve()), cells=json.dumps(cells)),
                    encoding="utf-8")
    return path


RUNNER = """\
# Runs {script} as its notebook does, solutions off (tools/run_steps.py --exercises).
import json

SCRIPT = {script!r}
for first_line, source in json.loads({cells!r}):
    exec(compile("\\n" * (first_line - 1) + source, SCRIPT, "exec"), globals())
"""


if __name__ == "__main__":
    sys.exit(main())
