"""Is one lesson's cold grade no slower than another's? (issue 35: "a cold grade of the
lesson takes no longer than lesson 7's")

    python benchmarks/cold_pair.py [--lessons 7,15] [--runs 3]

Each round runs ``course grade N --solutions`` once per lesson, alternated, each as a
fresh process in a fresh ``COURSE_HOME`` with the compilation cache off
(``COURSE_COMPILE_CACHE=off``: every program compiled, as on a student's first
grade) and ``COURSE_PHASES`` on (:mod:`grader.phases`). Prints every run's wall
time, the load average just before it, the worker's phases (medians) and, per
round, the ratio of each lesson's time to the first lesson's: a pair run back to
back shares the machine's load, so the ratios are steadier than the seconds on a
shared machine. One uncounted grade of each lesson first fills the OS file cache.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent


def cold_grade(lesson: int) -> dict[str, float]:
    """Wall seconds, the load before, and the worker's phases of one cold grade."""
    home = tempfile.mkdtemp(prefix="course-cold-")
    phases = Path(home) / "phases.jsonl"
    env = {**os.environ, "COURSE_HOME": home, "COURSE_PLATFORM": "cpu",
           "COURSE_COMPILE_CACHE": "off", "COURSE_PHASES": str(phases)}  # fmt: skip
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "course.cli", "grade", str(lesson),
                           "--solutions"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = {"wall": wall, "cpu": cpu, "load": load, "rc": float(done.returncode)}
    for line in phases.read_text().splitlines() if phases.exists() else []:
        d = json.loads(line)
        if d["process"] == "worker":
            row["worker alive"] = row.get("worker alive", 0.0) + d["alive_s"]
            for k, v in d["phases"].items():
                row[k] = row.get(k, 0.0) + v
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lessons", default="7,15", help="the first is the yardstick")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lessons = [int(n) for n in args.lessons.split(",")]
    for n in lessons:
        cold_grade(n)  # the OS file cache
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in lessons}
    for _ in range(args.runs):
        for n in lessons:
            runs[n].append(cold_grade(n))
    console = Console(width=160)
    each = Table(title="cold `course grade N --solutions`, every run (alternated)")
    each.add_column("round")
    for n in lessons:
        each.add_column(f"lesson {n}: wall s (load)", justify="right")
        each.add_column(f"{n}: CPU s", justify="right")
    for n in lessons[1:]:
        each.add_column(f"{n} / {lessons[0]} wall", justify="right")
        each.add_column(f"{n} / {lessons[0]} CPU", justify="right")
    for i in range(args.runs):
        cells = []
        for n in lessons:
            r = runs[n][i]
            rc = "" if r["rc"] == 0 else f" rc {r['rc']:.0f}"
            cells += [f"{r['wall']:.2f} ({r['load']:.1f}){rc}", f"{r['cpu']:.2f}"]
        ratios = [f"{runs[n][i][k] / runs[lessons[0]][i][k]:.2f}"
                  for n in lessons[1:] for k in ("wall", "cpu")]  # fmt: skip
        each.add_row(str(i + 1), *cells, *ratios)
    medians = [f"{statistics.median(r[k] for r in runs[n]):.2f}"
               for n in lessons for k in ("wall", "cpu")]  # fmt: skip
    ratio = [
        f"{statistics.median(a[k] / b[k] for a, b in zip(runs[n], runs[lessons[0]])):.2f}"
        for n in lessons[1:]
        for k in ("wall", "cpu")
    ]
    each.add_row("median", *medians, *ratio)
    console.print(each)
    names = sorted({k for rs in runs.values() for r in rs for k in r} - {"wall", "cpu", "load", "rc"},
                   key=lambda k: -statistics.median(r.get(k, 0.0) for r in runs[lessons[-1]]))  # fmt: skip
    phases = Table(title="the worker's phases, medians (s)")
    phases.add_column("phase")
    for n in lessons:
        phases.add_column(str(n), justify="right")
    for name in names:
        phases.add_row(name, *(f"{statistics.median(r.get(name, 0.0) for r in runs[n]):.2f}"
                               for n in lessons))  # fmt: skip
    console.print(phases)
    console.print(f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
