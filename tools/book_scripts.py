"""Run the DeZero book's own scripts, unchanged, against dezero_like.

    python tools/book_scripts.py PATH/TO/deep-learning-from-scratch-3
    python tools/book_scripts.py PATH step48 spiral      # just these scripts
    python tools/book_scripts.py PATH --quick            # fast: 1 epoch, MNIST's test split
    python tools/book_scripts.py PATH --compare          # also run the book's DeZero, diff

The book's repository has ``steps/step23.py`` ... ``step60.py`` and ``examples/*.py``,
which ``import dezero``. Each script runs in a fresh process, in an empty temporary folder,
with the import alias of ``tools/book_tests.py`` (``dezero`` is ``dezero_like``),
``np.random.seed(0)`` set before it starts (several of them set no seed) and Matplotlib's
``Agg`` backend. The book's files are read where they lie; nothing of them is copied into
this project.

Each script ends as one of:

* ``ok``: exit status 0 and no warning printed;
* ``known``: it stops where ``KNOWN_DIFFERENCES`` says it does, with the message that says
  what to write (docs/pytorch.md, "The book's scripts");
* ``no data``: exit status 3, the MNIST training images are neither here nor downloadable
  (``DEZERO_LIKE_DATA`` names the data folder; ``--quick`` uses the test split instead);
* ``warned``, ``failed`` or ``timeout``: a finding. The exit status is 1 when there is one.

``--quick`` runs a changed temporary copy of each script, and says so: ``max_epoch = 1``
(and at most 100 iterations for the ``iters``/``max_iter`` loops of steps 43-46), and
``MNIST(train=..., source='test-split', n_train=1000)``: 1,000 of the 10,000 test images to
train on, the other 9,000 to test, so that the MNIST scripts run offline and in minutes.

``--compare`` also runs each script with the book's own ``dezero`` (the same seed, the same
changes) and prints the first line where the two outputs differ, with the largest relative
difference of the numbers; it is information only, not a finding.

Set ``DEZERO_BOOK_SCRIPTS`` to the book's checkout and ``tests/test_book_scripts.py`` runs
``--quick`` as part of the suite; without it that test is skipped, with the reason.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent

STEPS = [f"step{n}" for n in range(23, 61)]
EXAMPLES = ["spiral", "tanh", "mnist", "gan", "vae", "grad_cam", "style_transfer"]

# Where a book script stops on purpose: name -> (text its output must hold, why). The output
# must hold one of the texts (a tuple), so that the message the reader gets is pinned too.
_SIMPLE_CORE = ("the book's DeZero has it, dezero_like leaves it out; it has one core",
                "reads dezero.is_simple_core to switch to core_simple (gradients as arrays); "
                "dezero_like has one core: write x.data -= lr * x.grad.data")
_GET_FILE = ("download with dezero_like.datasets.download",
             "downloads a picture with utils.get_file, left out here (and pretrained VGG16 "
             "weights): the message says to use datasets.download")
_FLOAT = ("only 0-dimensional arrays can be converted to Python scalars",
          "ends with float(y.data) of shape (1, 1), which NumPy 2.4 refuses, with the book's "
          "DeZero too: write float(y.data.item())")
KNOWN_DIFFERENCES = {
    "step28": _SIMPLE_CORE,
    "step29": _SIMPLE_CORE,
    "step58": _GET_FILE,
    "step59": _FLOAT,
    "step60": _FLOAT,
    "style_transfer": _GET_FILE,
    "grad_cam": ((_GET_FILE[0], "No module named 'cv2'"),
                 "imports OpenCV (cv2), then downloads like step58"),
    "gan": ("batch_norm in training needs more than one value per channel",
            "init_weight passes a batch of one through BatchNorm in training, which "
            "dezero_like refuses as PyTorch does: use a batch of 2 or dezero.test_mode(); "
            "then give binary_cross_entropy labels of shape (N, 1)"),
}

_RUNNER = """
import runpy, sys
mode, script = sys.argv[1], sys.argv[2]
if mode == "alias":
    sys.path.insert(0, {tools!r})
    import book_tests
    book_tests.install_alias()
import numpy as np
np.random.seed(0)
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""


def find_scripts(book, names=()):
    """``[(name, path)]`` of the book's scripts present under ``book``, in the book's order."""
    book = Path(book)
    found = [(n, book / "steps" / f"{n}.py") for n in STEPS]
    found += [(n, book / "examples" / f"{n}.py") for n in EXAMPLES]
    found = [(n, p) for n, p in found if p.is_file()]
    if names:
        unknown = sorted(set(names) - {n for n, _ in found})
        if unknown:
            raise SystemExit(f"book_scripts: no such script under {book}: {unknown}; "
                             f"found {[n for n, _ in found]}")
        found = [(n, p) for n, p in found if n in names]
    return found


def quick_copy(path, folder):
    """A copy of the script with fewer epochs and MNIST's test split; ``(path, changes)``."""
    text = path.read_text(encoding="utf-8")
    changes = []
    text, k = re.subn(r"^max_epoch = \d+", "max_epoch = 1", text, flags=re.M)
    changes += ["max_epoch = 1"] * bool(k)
    text, k = re.subn(r"^(iters|max_iter) = (\d{4,})", r"\1 = 100", text, flags=re.M)
    changes += ["100 iterations"] * bool(k)
    text, k = re.subn(r"MNIST\(train=(True|False)",
                      r"MNIST(train=\1, source='test-split', n_train=1000", text)
    changes += ["MNIST test split, 1,000 to train"] * bool(k)
    if not changes:
        return path, []
    copy = Path(folder) / path.name
    copy.write_text(text, encoding="utf-8")
    return copy, changes


def run_one(path, mode, timeout, book_root):
    """Run one script (``mode`` "alias": against dezero_like; "book": the book's dezero)."""
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="default")
    if mode == "book":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(book_root), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as cwd:
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-c", _RUNNER.format(tools=str(TOOLS)), mode, str(path)],
                cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            return None, out, "", time.perf_counter() - start
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - start


def classify(name, returncode, stdout, stderr):
    """``(result, detail)`` for one run of a script against dezero_like."""
    text = stdout + stderr
    last = (stderr.strip().splitlines() or [""])[-1][:300]
    if returncode is None:
        return "timeout", "ran past the time limit"
    if name in KNOWN_DIFFERENCES and returncode != 0:
        needles, why = KNOWN_DIFFERENCES[name]
        needles = (needles,) if isinstance(needles, str) else needles
        if any(n in text for n in needles):
            return "known", why
        return "failed", f"expected a stop with {needles[0]!r} ({why}), got: {last}"
    if returncode == 3 and "MNISTUnavailableError" in text:
        return "no data", "the MNIST training images are not here (try --quick)"
    if returncode != 0:
        return "failed", last
    warnings = [line for line in stderr.splitlines() if "Warning" in line]
    if warnings:
        return "warned", warnings[0][:300]
    if name in KNOWN_DIFFERENCES:
        return "failed", "ran to the end: remove it from KNOWN_DIFFERENCES (and the docs)"
    return "ok", ""


_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+(?:e[-+]?\d+)?")


def _shape(line):
    """A line with each number replaced by # and the spaces taken out (NumPy pads columns)."""
    return "".join(_NUMBER.sub("#", line).split())


def compare(ours, theirs):
    """The first differing line of two outputs and the largest relative difference of their
    numbers (where both have the same lines with the same count of numbers)."""
    a, b = ours.splitlines(), theirs.splitlines()
    worst = 0.0
    first = None
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        first = first if first is not None else i
        nx, ny = _NUMBER.findall(x), _NUMBER.findall(y)
        if len(nx) != len(ny) or _shape(x) != _shape(y):
            return f"line {i + 1} differs: {x[:80]!r} against the book's {y[:80]!r}"
        for u, v in zip(map(float, nx), map(float, ny)):
            worst = max(worst, abs(u - v) / max(abs(u), abs(v), 1e-300))
    if len(a) != len(b):
        return f"{len(a)} lines against the book's {len(b)}"
    if first is None:
        return "the same output"
    return (f"the same lines, numbers differ from line {first + 1}: largest relative "
            f"difference {worst:.2g}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("book", type=Path, help="a checkout of the book's repository")
    parser.add_argument("names", nargs="*", help="scripts to run (step48, spiral, ...)")
    parser.add_argument("--quick", action="store_true",
                        help="1 epoch, MNIST's test split (a changed temporary copy)")
    parser.add_argument("--compare", action="store_true",
                        help="also run the book's own dezero and compare the outputs")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per script")
    parser.add_argument("--verbose", action="store_true", help="show each script's output")
    args = parser.parse_args(argv)
    if not (args.book / "steps").is_dir():
        print(f"error: {args.book} has no steps/ folder. Point this tool at a checkout of the "
              "book's repository (oreilly-japan/deep-learning-from-scratch-3).", file=sys.stderr)
        return 2
    scripts = find_scripts(args.book, args.names)
    findings = 0
    with tempfile.TemporaryDirectory() as folder:
        for name, path in scripts:
            run_path, changes = quick_copy(path, folder) if args.quick else (path, [])
            code, out, err, seconds = run_one(run_path, "alias", args.timeout, args.book)
            result, detail = classify(name, code, out, err)
            findings += result in ("warned", "failed", "timeout")
            changed = f" [changed copy: {', '.join(changes)}]" if changes else ""
            print(f"{name:15} {result:8} {seconds:6.1f} s{changed}" +
                  (f"  {detail}" if detail else ""), flush=True)
            if args.verbose:
                print(out + err)
            if args.compare:
                book_code, book_out, book_err, _ = run_one(run_path, "book", args.timeout,
                                                           args.book)
                verdict = compare(out, book_out)
                if book_code != 0:
                    last = (book_err.strip().splitlines() or ["ran past the time limit"])[-1]
                    verdict += f"; the book's DeZero stopped too: {last[:200]}"
                print(f"{'':15} against the book's DeZero: {verdict}", flush=True)
    print(f"{len(scripts)} scripts, {findings} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
