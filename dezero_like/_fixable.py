"""Errors that a learner fixes by installing or fetching something, shown as one paragraph.

Such an error says what is missing and how to get it; a stack of frames adds
nothing. Left uncaught in a script it prints its paragraph and ends the
process with status ``EXIT_CODE`` (3: "a part this step needs is missing",
which ``tools/run_steps.py`` tells apart from a failure); in Jupyter or Colab
the cell shows the paragraph alone. ``DEZERO_LIKE_TRACEBACK=1`` brings the
usual traceback back.
"""

from __future__ import annotations

import os
import sys

EXIT_CODE = 3


class FixableError(Exception):
    """Mixin base: the message is one paragraph ending in how to fix it."""

    def __init__(self, *args):
        super().__init__(*args)
        _install_excepthook()

    def _render_traceback_(self):  # IPython shows these lines instead of a traceback
        if os.environ.get("DEZERO_LIKE_TRACEBACK"):
            raise AttributeError("_render_traceback_")  # IPython falls back to the traceback
        return [f"{type(self).__name__}: {self}"]


def _install_excepthook():
    """Make an uncaught FixableError end a script with its paragraph only."""
    previous = sys.excepthook
    if getattr(previous, "_dezero_like", False) or os.environ.get("DEZERO_LIKE_TRACEBACK"):
        return

    def hook(kind, value, tb):
        if isinstance(value, FixableError):
            sys.stdout.flush()
            print(f"\n{type(value).__name__}: {value}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(EXIT_CODE)  # the paragraph is all that should show
        previous(kind, value, tb)

    hook._dezero_like = True
    sys.excepthook = hook
