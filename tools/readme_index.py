"""Keep the curriculum index in README.md in step with the step scripts.

The index is the Markdown table between two marker lines in README.md:

    <!-- curriculum:start -->
    ...generated table...
    <!-- curriculum:end -->

One table per stage of the course (``STAGES`` in tools/notebooks.py), under its
heading, and in it one row per ``steps/stepNN.py``: its number, its title (from
the script's ``# # Step NN: Title`` cell) and links to the script, the notebook,
the test and Colab.

    python tools/readme_index.py write    # rewrite the table between the markers
    python tools/readme_index.py check    # exit 1 if the table is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
if str(TOOLS) not in sys.path:  # the sibling tool, also when this file is loaded by path
    sys.path.insert(0, str(TOOLS))

import notebooks  # noqa: E402

ROOT = TOOLS.parent
README = ROOT / "README.md"
START = "<!-- curriculum:start -->"
END = "<!-- curriculum:end -->"


class MarkersMissing(ValueError):
    """README.md lacks the curriculum markers."""


def markers_help():
    return (
        f"README.md needs the curriculum markers, each on a line of its own, where the "
        f"index should go:\n\n{START}\n{END}\n\n"
        f"then run: python tools/readme_index.py write"
    )


def index_table(scripts=None):
    """The Markdown table of every step (links relative to the repository root)."""
    parts = []
    for number, stage_title, members in notebooks.stages(scripts):
        rows = [
            f"### {notebooks.stage_heading(number, stage_title, members)}",
            "",
            "| Step | Title | Files |",
            "| ---: | --- | --- |",
        ]
        for script in members:
            n, name = notebooks.step_number(script), script.stem
            title = notebooks.step_title(script).replace("|", "\\|")
            files = " · ".join([
                f"[script](steps/{name}.py)",
                f"[notebook](notebooks/{name}.ipynb)",
                f"[test](tests/steps/test_{name}.py)",
                f"[Colab]({notebooks.colab_url(name)})",
            ])
            rows.append(f"| {n:02d} | {title} | {files} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


def render(readme_text, table):
    """``readme_text`` with the part between the markers replaced by ``table``."""
    lines = readme_text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.strip() == START]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        found = f"found {len(starts)} start and {len(ends)} end marker(s)"
        raise MarkersMissing(f"{found}. {markers_help()}")
    body = ["\n", table.rstrip("\n") + "\n", "\n"]
    return "".join(lines[: starts[0] + 1] + body + lines[ends[0]:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["write", "check"])
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    try:
        new = render(text, index_table())
    except MarkersMissing as e:
        print(f"{args.readme}: {e}", file=sys.stderr)
        return 2
    if args.command == "write":
        if new != text:
            args.readme.write_text(new)
            print(f"rewrote the curriculum index in {args.readme}")
        return 0
    if new != text:
        print(f"{args.readme}: the curriculum index is stale: "
              "run python tools/readme_index.py write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
