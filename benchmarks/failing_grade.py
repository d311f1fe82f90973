"""A failing grade's wall time in two checkouts, A/B (issue 45: feedback may cost a failing
grade at most 1.5× what it cost before).

    python benchmarks/failing_grade.py OTHER_CHECKOUT [--rounds 3] [--ids a,b,…]

Each catalogued mistake named (``tests/mistakes``, ``tests/own_wrong.py``: OWN, VARIANTS and FORMULAS) is written into a
fresh workspace of each checkout and graded as a student grades it, ``course grade
N.EXERCISE --json`` in that checkout (the sandbox where the host has one; this Python for
both), the two checkouts alternating, ``--rounds`` times. Prints each grade, then each
program's fastest grade in each checkout and their sums. The defaults fail in different
checks: lesson 4's all-reduce gathering both operands (collectives), lesson 15's Adam
moments swapped (a pytree's values), lesson 3's collective time with the whole array a
step (a formula), lesson 16's decode without its caches (a formula), lesson 2's ring the
wrong way (values on a ring).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

IDS = (
    "allreduce-gathers-both-operands",
    "own-adam-m-v-swapped",
    "collective-whole-array-per-step",
    "l16-decode-without-caches",
    "wrong-ring-direction",
)


def grade(checkout: Path, mistake: object) -> tuple[float, str]:
    """(seconds, status) of one cold ``course grade`` of ``mistake`` in ``checkout``."""
    home = Path(tempfile.mkdtemp(prefix="failing-grade-"))
    module, exercise = mistake.module, mistake.exercise  # type: ignore[attr-defined]
    lesson = int(module[1:3])
    course = [sys.executable, "-m", "course", "--home", str(home), "grade"]
    subprocess.run([*course, str(lesson), "--json"], cwd=checkout, capture_output=True)
    solution = (checkout / "solutions" / f"{module}.py").read_text()
    (home / "exercises" / f"{module}.py").write_text(mistake.source(solution))  # type: ignore[attr-defined]
    start = time.perf_counter()
    done = subprocess.run([*course, f"{lesson}.{exercise}", "--json"], cwd=checkout,
                          capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - start
    try:
        status = json.loads(done.stdout)["lessons"][0]["exercises"][0]["status"]
    except (ValueError, KeyError, IndexError):
        status = f"no JSON: {done.stderr[-200:]}"
    return seconds, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the checkout to compare with this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ids", default=",".join(IDS))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.mistakes import MISTAKES
    from tests.own_wrong import FORMULAS, OWN, VARIANTS

    known = {m.id: m for m in [*MISTAKES, *OWN, *VARIANTS, *FORMULAS]}
    trees = {"other": args.other.resolve(), "this": ROOT}
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for r in range(args.rounds):
        for mid in args.ids.split(","):
            for name, checkout in trees.items():
                seconds, status = grade(checkout, known[mid])
                best[name][mid] = min(seconds, best[name].get(mid, seconds))
                print(
                    f"round {r + 1}  {mid:40s} {name:5s} {status:8s} {seconds:6.2f} s", flush=True
                )
    for name in trees:
        each = "  ".join(f"{mid} {s:.2f}" for mid, s in best[name].items())
        print(f"{name}: {each}  — sum of the fastest {sum(best[name].values()):.2f} s")


if __name__ == "__main__":
    main()
