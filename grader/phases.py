"""Where grading time goes, per phase (issue 22 §2): each process sums the time
of its phases as it runs (a clock read on each side: nothing next to what they
time), and appends one JSON line to the file its entry was told
(``COURSE_PHASES``, read by the worker's ``main`` into
:attr:`grader.sandbox.worker.Options.phases`), when it was told one:
``{"process": …, "phases": {name: seconds}, "counts": {name: n}}``.

Phases nest only where said (``compile`` is inside no other); a process's
phases need not add up to its wall time (what it waits for is ``wait: …``).
``benchmarks/grading_phases.py`` runs ``course grade`` with it and sums.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator

VARIABLE = "COURSE_PHASES"
_totals: dict[str, float] = defaultdict(float)
_counts: dict[str, int] = defaultdict(int)
_born = time.perf_counter()


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as ``name`` (summed over calls)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        _totals[name] += time.perf_counter() - start
        _counts[name] += 1


def add(name: str, seconds: float) -> None:
    _totals[name] += seconds
    _counts[name] += 1


def dump(process: str, path: str = "") -> None:
    """Append this process's phases to ``path`` (none: dropped), and start afresh."""
    if not path:
        _totals.clear()
        _counts.clear()
        return
    line = {"process": process, "pid": os.getpid(), "alive_s": time.perf_counter() - _born,
            "phases": dict(_totals), "counts": dict(_counts)}  # fmt: skip
    with contextlib.suppress(OSError), open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
    _totals.clear()
    _counts.clear()
