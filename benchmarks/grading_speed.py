"""Wall time of ``course grade N --solutions`` per lesson and of ``course status``.

    python benchmarks/grading_speed.py [--runs 5]

Each command runs as a fresh process (start-up included), like a student
types it. Prints medians (and min/max) and writes benchmarks/results/speed.json.
Targets (issue 2): a lesson graded in ≤ 3 s, ``course status`` in ≤ 0.3 s.
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="course-bench-")
    env = {**os.environ, "COURSE_HOME": home, "COURSE_PLATFORM": "cpu"}
    commands = [["status"]] + [
        ["grade", str(lesson.number), "--solutions"] for lesson in registry.load().lessons
    ]
    timed(["grade", "1", "--solutions"], env)  # warm the OS file cache once
    rows = []
    for cmd in commands:
        times = [timed(cmd, env) for _ in range(args.runs)]
        target = 0.3 if cmd == ["status"] else 3.0
        rows.append({"command": "course " + " ".join(cmd), "median_s": statistics.median(times),
                     "min_s": min(times), "max_s": max(times), "runs": args.runs, "target_s": target})  # fmt: skip
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
