"""How a probe graded in the sandbox hands what it saw back to its test.

The submission's folder is read-only in the sandbox (:mod:`grader.sandbox.jail`),
and what the student's process writes in its private ``/tmp`` vanishes with it,
so a probe cannot leave a file for its test to read. It prints one line on its stdout instead,
which reaches the process that asked for the grade: relayed, bounded, to
``course``'s stderr for the real command; on the stdout the student's process
inherits, or this process's stderr, for a runner started here (:func:`relayed`).
:func:`emit` writes that line, :func:`read` finds it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

MARK = "course-probe-report: "


def emit(expression: str) -> str:
    """Code for a probe: print ``expression`` (a JSON-able value) on the relayed stdout."""
    return f"print({MARK!r} + __import__('json').dumps({expression}), flush=True)\n"


def read(text: str) -> dict:
    """The last report in ``text`` (what the relay wrote); AssertionError where none."""
    lines = [line for line in text.splitlines() if line.startswith(MARK)]
    assert lines, f"no report from the probe in: {text[-2000:]!r}"
    return json.loads(lines[-1].removeprefix(MARK))


class Kept:
    """What :func:`relayed` keeps: :meth:`getvalue`, so far (while it lasts) or all."""

    def __init__(self, out: IO[bytes], said: io.StringIO) -> None:
        self.out, self.said, self.text = out, said, None

    def getvalue(self) -> str:
        if self.text is not None:
            return self.text
        size = os.fstat(self.out.fileno()).st_size
        return os.pread(self.out.fileno(), size, 0).decode(errors="replace") + self.said.getvalue()

    def reports(self) -> list[dict]:
        """Every report so far, in the order they were printed."""
        text = self.getvalue()
        return [json.loads(line.removeprefix(MARK)) for line in text.splitlines()
                if line.startswith(MARK)]  # fmt: skip


@contextlib.contextmanager
def relayed() -> Iterator[Kept]:
    """What the processes started meanwhile print on the stdout they inherit (the
    descriptor, kept in a file) and what is written to ``sys.stderr`` here (a
    runner relays the student's prints there), together."""
    sys.stdout.flush()
    with tempfile.TemporaryFile() as out:
        kept = Kept(out, io.StringIO())
        saved = os.dup(1)
        os.dup2(out.fileno(), 1)
        try:
            with contextlib.redirect_stderr(kept.said):
                yield kept
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            kept.text = kept.getvalue()
