"""Where grading time goes, per phase (issue 22 §2): off unless ``COURSE_PHASES``
names a file, to which each process appends one JSON line as it ends:
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


def on() -> bool:
    return bool(os.environ.get(VARIABLE))


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as ``name`` (summed over calls) when phases are on."""
    if not on():
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        _totals[name] += time.perf_counter() - start
        _counts[name] += 1


def add(name: str, seconds: float) -> None:
    if on():
        _totals[name] += seconds
        _counts[name] += 1


def dump(process: str) -> None:
    """Append this process's phases to the file (a no-op when off)."""
    path = os.environ.get(VARIABLE)
    if not path:
        return
    line = {"process": process, "pid": os.getpid(), "alive_s": time.perf_counter() - _born,
            "phases": dict(_totals), "counts": dict(_counts)}  # fmt: skip
    with contextlib.suppress(OSError), open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
    _totals.clear()
    _counts.clear()
