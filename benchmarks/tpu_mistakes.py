"""The catalogued mistakes of the programs that run on the chip, graded on it.

    python benchmarks/tpu_mistakes.py

One-device programs (lesson 10's ``merge_partials``, lesson 11's ``top1_dispatch`` and
``top2_dispatch``) run on the worker's accelerator when it has one, where float32
exp, log and matmuls are not the CPU's. Each catalogued mistake of those exercises
(``tests/mistakes``) is written into a fresh workspace and graded with ``course grade
N.EXERCISE --json``, as a student would; a line says whether it failed with its status,
its check and its words, as ``tests/test_mistakes.py`` asks on a CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ON_CHIP = {"merge_partials", "top1_dispatch", "top2_dispatch"}


def main() -> int:
    sys.path.insert(0, ".")
    from tests.mistakes import MISTAKES

    bad = 0
    mine = [m for m in MISTAKES if m.exercise in ON_CHIP]
    for m in mine:
        home = Path(tempfile.mkdtemp())
        lesson = int(m.module[1:3])
        subprocess.run(
            [sys.executable, "-m", "course", "--home", str(home), "grade", str(lesson), "--json"],
            capture_output=True,
        )  # fmt: skip  (the workspace)
        source = Path("solutions", f"{m.module}.py").read_text()
        (home / "exercises" / f"{m.module}.py").write_text(m.source(source))
        r = subprocess.run([sys.executable, "-m", "course", "--home", str(home), "grade",
                            f"{lesson}.{m.exercise}", "--json"], capture_output=True, text=True)  # fmt: skip
        (er,) = [e for lesson_ in json.loads(r.stdout)["lessons"] for e in lesson_["exercises"]]
        failed = {c["name"]: c for c in er["checks"] if not c["passed"]}
        if m.check is None:
            said = f"{er.get('error')} {er.get('hint')}"
        else:
            c = failed.get(m.check, {})
            said = f"{c.get('message')} {c.get('hint')} {er.get('hint')}"
        ok = er["status"] == m.status and (m.check is None or m.check in failed)
        ok = ok and all(w in said for w in m.says) and not any(w in said for w in m.never)
        bad += not ok
        print(f"{'ok  ' if ok else 'BAD '} {m.id}: {er['status']}, failed {sorted(failed)}"
              + ("" if ok else f"; said: {said[:300]}"), flush=True)  # fmt: skip
    print(
        f"{len(mine) - bad} of {len(mine)} catalogued mistakes of {sorted(ON_CHIP)} failed as they say"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
