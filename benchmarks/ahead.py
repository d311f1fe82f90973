"""What preparing the next example ahead saves (``grader.sandbox.prepared``):
``course grade N --solutions`` with ``COURSE_AHEAD=0`` and without, alternated,
cold (no compilation cache) unless ``--warm``; medians, and the machine's busy
core-seconds per run (from ``/proc/stat``: the whole machine, so run it idle).

    python benchmarks/ahead.py [--runs 3] [--only 2,4,6,12] [--all] [--warm]
"""

from __future__ import annotations

import argparse
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


def busy() -> float:
    """Core-seconds the machine has been busy since boot (Linux)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    b, t = busy(), time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    return time.perf_counter() - t, busy() - b


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="2,4,6,12")
    parser.add_argument("--all", action="store_true", help="also the whole course (--all)")
    parser.add_argument("--warm", action="store_true")
    args = parser.parse_args()
    env = {**os.environ, "COURSE_HOME": tempfile.mkdtemp(prefix="course-ahead-"),
           "COURSE_PLATFORM": "cpu"}  # fmt: skip
    if not args.warm:
        env["COURSE_COMPILE_CACHE"] = "off"
    targets = [[n.strip()] for n in args.only.split(",") if n.strip()] + (
        [["--all"]] if args.all else []
    )
    course = [sys.executable, "-m", "course.cli", "grade"]
    for t in targets:  # the kept draws, the OS file cache (and, with --warm, the compilation cache)
        timed([*course, *t, "--solutions"], {**env, "COURSE_COMPILE_CACHE": "on"})
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for t in targets:
            for ahead in ("0", "1"):
                key = (" ".join(t), ahead)
                run = timed([*course, *t, "--solutions"], {**env, "COURSE_AHEAD": ahead})
                got.setdefault(key, []).append(run)
    table = Table(title=f"course grade … --solutions, {'warm' if args.warm else 'cold'}, medians "
                  f"of {args.runs} (load {os.getloadavg()[0]:.1f} at the end)")  # fmt: skip
    for col in ("grade", "one after another", "ahead", "saved", "busy core-s (off / on)"):
        table.add_column(col, justify="left" if col == "grade" else "right")
    for t in targets:
        name = " ".join(t)
        off, on = got[(name, "0")], got[(name, "1")]
        w_off, w_on = statistics.median(r[0] for r in off), statistics.median(r[0] for r in on)
        b_off, b_on = statistics.median(r[1] for r in off), statistics.median(r[1] for r in on)
        table.add_row(name, f"{w_off:.2f} s", f"{w_on:.2f} s", f"{w_off - w_on:+.2f} s",
                      f"{b_off:.1f} / {b_on:.1f}")  # fmt: skip
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
