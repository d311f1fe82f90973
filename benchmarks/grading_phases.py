"""Where the time of one ``course grade N --solutions`` goes, per phase
(issue 22 §2): runs it with ``COURSE_PHASES`` (:mod:`grader.phases`) and prints,
per lesson, the wall time, the worker's life and each phase's seconds
(medians over the runs).

    python benchmarks/grading_phases.py [--runs 3] [--only 2,4] [--warm]

Cold by default (``COURSE_COMPILE_CACHE=off``: every program compiled);
``--warm`` keeps the compilation cache (filled by one run first). ``wait: …``
phases are the worker waiting for the student's process (its start, its import
of the module, its tracing and export); the rest is the worker's own work.
"wall − worker" is the ``course`` process: its start, imports, report.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course import registry  # noqa: E402


def run_once(n: int, env: dict[str, str]) -> dict[str, float]:
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        path = f.name
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "course.cli", "grade", str(n), "--solutions"], cwd=ROOT,
                   env={**env, "COURSE_PHASES": path}, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    wall = time.perf_counter() - start
    row = {"wall": wall}
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        row["worker alive"] = row.get("worker alive", 0.0) + d["alive_s"]
        for k, v in d["phases"].items():
            row[k] = row.get(k, 0.0) + v
    os.unlink(path)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--warm", action="store_true")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="course-phases-")
    env = {**os.environ, "COURSE_HOME": home, "COURSE_PLATFORM": "cpu"}
    if not args.warm:
        env["COURSE_COMPILE_CACHE"] = "off"
    wanted = {int(n) for n in args.only.split(",") if n.strip()}
    lessons = [le.number for le in registry.load().lessons if not wanted or le.number in wanted]
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in lessons}
    for n in lessons:  # fill the OS file cache (and, with --warm, the compilation cache)
        run_once(n, env)
    for _ in range(args.runs):  # alternated: load changes hit every lesson alike
        for n in lessons:
            runs[n].append(run_once(n, env))
    names = sorted(
        {k for rows in runs.values() for r in rows for k in r} - {"wall", "worker alive"}
    )
    table = Table(title=f"course grade N --solutions, {'warm' if args.warm else 'cold'}, "
                  f"medians of {args.runs} (load {os.getloadavg()[0]:.1f})")  # fmt: skip
    table.add_column("phase (s)")
    for n in lessons:
        table.add_column(str(n), justify="right")
    for name in ["wall", "worker alive", *names]:
        table.add_row(name, *(f"{statistics.median(r.get(name, 0.0) for r in runs[n]):.2f}"
                              for n in lessons))  # fmt: skip
    Console(width=200).print(table)


if __name__ == "__main__":
    main()
