"""Counting the grades a test run performs (``COURSE_TEST_GRADES=FILE pytest …``).

Every call of :func:`grader.engine.grade_lesson` in the test process (in-process and
sandboxed grades alike: the sandbox's backend runs under it) and every request to
:func:`grader.sandbox.runner.grade` (a worker process grades) is written to FILE as one
JSON line: the test that asked, the entry point, the lesson, what was graded (the
solutions, the stubs, or another folder), the backend (``Here``: this process;
``Isolated``: the student's process), the seed and the options. ``python -m
tests.gradecount FILE`` sums them by (entry, lesson, graded, backend, seed).

Installed by ``tests/conftest.py`` when the variable is set, before a test module
imports the entry points by name; nothing is counted otherwise.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CURRENT = {"test": "(collection)"}


def _folder(directory: object) -> str:
    path = Path(str(directory)).resolve()
    for name in ("solutions", "exercises"):
        if path == ROOT / name:
            return name
    return "other"


def _write(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row, default=str) + "\n")


def install(out: Path) -> None:
    from grader import engine
    from grader.sandbox import runner

    grade_lesson, grade = engine.grade_lesson, runner.grade

    @functools.wraps(grade_lesson)
    def counted_lesson(lesson, module, directory, *args, backend=None, **options):
        kinds: list[str] = [] if backend else ["Here"]

        def factory(d, m):
            made = backend(d, m)
            kinds.append(type(made).__name__)
            return made

        try:
            return grade_lesson(
                lesson, module, directory, *args, backend=backend and factory, **options
            )
        finally:
            _write(out, {"test": CURRENT["test"], "entry": "engine", "lesson": lesson,
                         "graded": _folder(directory), "backend": "".join(kinds),
                         "seed": options.get("seed", 0),
                         "options": sorted(k for k, v in options.items() if v is not None)})  # fmt: skip

    @functools.wraps(grade)
    def counted(request, *args, **kwargs):
        for job in request.lessons:
            _write(out, {"test": CURRENT["test"], "entry": "runner", "lesson": job.lesson,
                         "graded": _folder(request.directory), "backend": "worker",
                         "seed": getattr(request, "seed", 0), "options": []})  # fmt: skip
        return grade(request, *args, **kwargs)

    engine.grade_lesson = counted_lesson
    runner.grade = counted


def summary(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    by = Counter((r["entry"], r["graded"], r["backend"], r["seed"]) for r in rows)
    files = Counter(r["test"].split("::")[0] for r in rows)
    lines = [f"{len(rows)} grades"]
    lines += [f"  {n:5d}  {entry} {graded} {backend} seed={seed}"
              for (entry, graded, backend, seed), n in sorted(by.items(), key=str)]  # fmt: skip
    lines += ["by file:"] + [f"  {n:5d}  {f}" for f, n in files.most_common()]
    return "\n".join(lines)


def checks() -> Counter:
    """Assertion sites by file of tests/: ``assert`` statements and ``pytest.raises`` /
    ``pytest.warns`` / ``pytest.fail`` calls (each a check, wherever it sits)."""
    import ast

    found: Counter = Counter()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if isinstance(node, ast.Assert) or (
                called and node.func.attr in ("raises", "warns", "fail")
                and getattr(node.func.value, "id", "") == "pytest"
            ):  # fmt: skip
                found[str(path.relative_to(ROOT))] += 1
    return found


if __name__ == "__main__":
    if sys.argv[1:] == ["checks"]:
        counted = checks()
        print("\n".join(f"{n:5d}  {f}" for f, n in sorted(counted.items())))
        print(f"{sum(counted.values()):5d}  assertion sites in tests/")
    else:
        print(summary(Path(sys.argv[1])))
