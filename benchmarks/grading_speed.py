"""Wall time of ``course grade N --solutions`` per lesson and of ``course status``.

    python benchmarks/grading_speed.py [--runs 5]

Each command runs as a fresh process (start-up included), like a student
types it. Grading is timed cold (no compilation cache: every program is
compiled, as on a first run or after changing every function) and warm (the
cache holds the programs, as when re-grading after changing one exercise).
Prints medians (and min/max) and writes benchmarks/results/speed.json.
Targets (issue 2): a lesson graded in ≤ 3 s, ``course status`` in ≤ 0.3 s;
for the training lessons (6 on, issue 10: ``jax.grad`` and ``lax.scan``
programs compile several times slower) ≤ 6 s cold and ≤ 2 s warm.
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


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "course.cli", *args], cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    return time.perf_counter() - start


def _target(grade: list[str], training: float) -> float:
    """Seconds allowed for ``course grade N``: 3 s, or ``training`` from lesson 6 on."""
    return training if int(grade[1]) >= TRAINING_LESSONS else 3.0


TRAINING_LESSONS = 6
"""The first lesson that trains the course model."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="course-bench-")
    warm = {**os.environ, "COURSE_HOME": home, "COURSE_PLATFORM": "cpu"}
    cold = {**warm, "COURSE_COMPILE_CACHE": "off"}
    grades = [["grade", str(lesson.number), "--solutions"] for lesson in registry.load().lessons]
    runs = [("course status", ["status"], warm, 0.3)]
    runs += [(f"course {' '.join(c)} (cold)", c, cold, _target(c, 6.0)) for c in grades]
    runs += [(f"course {' '.join(c)} (warm)", c, warm, _target(c, 2.0)) for c in grades]
    timed(["grade", "1", "--solutions"], cold)  # warm the OS file cache once
    for _, cmd, env, _ in runs[len(grades) + 1 :]:
        timed(cmd, env)  # fill the compilation cache
    rows = []
    for name, cmd, env, target in runs:
        times = [timed(cmd, env) for _ in range(args.runs)]
        rows.append({"command": name, "median_s": statistics.median(times), "min_s": min(times),
                     "max_s": max(times), "runs": args.runs, "target_s": target})  # fmt: skip
    table = Table(title=f"course command wall time, {args.runs} runs each ({os.cpu_count()} cores)")
    for col in ("command", "median", "min", "max", "target"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for r in rows:
        ok = "green" if r["median_s"] <= r["target_s"] else "red"
        table.add_row(r["command"], f"[{ok}]{r['median_s']:.2f} s[/{ok}]", f"{r['min_s']:.2f} s",
                      f"{r['max_s']:.2f} s", f"≤ {r['target_s']:.1f} s")  # fmt: skip
    Console().print(table)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
