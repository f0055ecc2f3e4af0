"""What does a step add? The unified diff of a step script against the previous step's.

Steps are snapshots: step N is step N-1 plus what step N teaches (from step 23
on, what it adds on top of the package). The docs show this diff at the end of
every step page, so a learner sees exactly what changed.

    python tools/step_diffs.py 14           # print the diff of step 14 against step 13
    python tools/step_diffs.py --all DIR    # write DIR/stepNN.diff for every step

From step 24 on, a step page also shows what the step changes in the package
itself: the diff of the modules ``tools/export.py`` generates from steps 23..N-1
against those from steps 23..N (``--package``), so a step that replaces one
method of ``core.py`` shows exactly that change.

    python tools/step_diffs.py 69 --package   # the package diff of step 69

"Previous" is the closest lower-numbered step script that exists, so a gap in
the numbering (a merged or renumbered step) still gives a sensible diff. The
prose cells (``# %% [markdown]``) are left out by default: every step explains
itself afresh, so diffing the prose would drown the code changes; pass
``--with-prose`` to diff the whole files.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ROOT / "steps"
TOOLS = ROOT / "tools"
if str(TOOLS) not in sys.path:  # the sibling tool, also when this file is loaded by path
    sys.path.insert(0, str(TOOLS))

import export  # noqa: E402


def step_scripts(steps=STEPS):
    return sorted(Path(steps).glob("step[0-9][0-9]*.py"))


def _number(script):
    return int(re.fullmatch(r"step(\d+)", Path(script).stem).group(1))


def previous_script(script, steps=STEPS):
    """The step script just before ``script`` (by number), or None for the first step."""
    number = _number(script)
    earlier = [s for s in step_scripts(steps) if _number(s) < number]
    return max(earlier, key=_number) if earlier else None


def code_lines(text):
    """The lines of a percent-format script without its Markdown cells."""
    keep, out = True, []
    for line in text.splitlines(keepends=True):
        if line.startswith("# %%"):
            keep = "[markdown]" not in line
            if not keep:
                continue
        if keep:
            out.append(line)
    while out and not out[0].strip():
        out.pop(0)
    return out


def step_diff(script, steps=STEPS, context=3, prose=False):
    """Unified diff (text) of ``script`` against the previous step; '' for the first step.

    Only code cells are compared unless ``prose`` is true.
    """
    script = Path(script)
    previous = previous_script(script, steps)
    if previous is None:
        return ""
    if prose:
        old = previous.read_text().splitlines(keepends=True)
        new = script.read_text().splitlines(keepends=True)
    else:
        old, new = code_lines(previous.read_text()), code_lines(script.read_text())
    lines = difflib.unified_diff(
        old, new, fromfile=f"steps/{previous.name}", tofile=f"steps/{script.name}", n=context
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@functools.cache
def _generated(upto):
    """The generated modules up to a step; each is needed twice (after N, before N + 1)."""
    return export.generated(upto=upto)


def package_diff(number, context=3):
    """Unified diff of the generated package before step ``number`` against after it.

    '' when the step writes no export cell (or is a snapshot step before 24).
    """
    if number <= export.FIRST_STEP:
        return ""
    before, after = _generated(number - 1), _generated(number)
    out = []
    for path in sorted(set(before) | set(after)):
        old = before.get(path, "").splitlines(keepends=True)
        new = after.get(path, "").splitlines(keepends=True)
        if old == new:
            continue
        lines = difflib.unified_diff(old, new, fromfile=f"{path} (step {number - 1})",
                                     tofile=f"{path} (step {number})", n=context)
        out.append("".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines))
    return "".join(out)


def _fenced(diff):
    # The fence must be longer than any run of backticks inside the diff.
    longest = max((len(m) for m in re.findall(r"`+", diff)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{diff}{fence}"


def _package_markdown(script):
    diff = package_diff(_number(script))
    if not diff:
        return ""
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return (
        f"\n\n## What this step changes in the package\n\n"
        f"The modules generated from the steps up to this one, compared with those up "
        f"to the previous step ({added} lines added, {removed} removed):\n\n" + _fenced(diff)
    )


def diff_markdown(script, steps=STEPS):
    """A Markdown section showing the diff as a ```diff block (for the docs' step pages)."""
    script = Path(script)
    previous = previous_script(script, steps)
    if previous is None:
        return (
            "## What this step adds\n\n"
            "This is the first step: everything on this page is new. From the next step on, "
            "this section shows the diff of the step script against the previous one."
        )
    diff = step_diff(script, steps)
    if not diff:
        return (
            f"## What this step adds\n\n`steps/{script.name}` has the same code as "
            f"`steps/{previous.name}`: this step adds explanation only."
        ) + _package_markdown(script)
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return (
        f"## What this step adds\n\n"
        f"The code of `steps/{script.name}` compared with `steps/{previous.name}` "
        f"({added} lines added, {removed} removed; prose cells left out):\n\n"
        + _fenced(diff) + _package_markdown(script)
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", type=int, help="step number to diff")
    parser.add_argument("--all", type=Path, metavar="DIR", help="write DIR/stepNN.diff for all")
    parser.add_argument("--with-prose", action="store_true", help="diff the Markdown cells too")
    parser.add_argument("--package", action="store_true",
                        help="diff the generated package before and after the step instead")
    args = parser.parse_args(argv)
    if args.all:
        args.all.mkdir(parents=True, exist_ok=True)
        for script in step_scripts():
            text = step_diff(script, prose=args.with_prose)
            (args.all / f"{script.stem}.diff").write_text(text)
        return 0
    if args.step is None:
        parser.error("give a step number or --all DIR")
    matches = [s for s in step_scripts() if _number(s) == args.step]
    if not matches:
        parser.error(f"there is no steps/step{args.step:02d}.py")
    if args.package:
        sys.stdout.write(package_diff(args.step) or f"step {args.step} changes no module\n")
        return 0
    text = step_diff(matches[0], prose=args.with_prose)
    sys.stdout.write(text or f"{matches[0].name} is the first step\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
