"""``course dev check --mistakes``: each catalogued mistake of the lessons asked for,
graded once, as ``tests/test_mistakes.py`` grades it (its ``assert_caught``: the
exercise's status, the check that must fail, every one of the entry's words).

Run as ``python -m course.commands.dev_mistakes ROOT N [N …]`` by ``course dev check``:
in a process of its own, which simulates 8 CPU devices before jax is imported (as the
tests' ``conftest.py`` does) and grades in-process, the checkout's ``tests/`` on its
path. One JSON line per mistake on stdout: ``{"lesson", "id", "exercise", "problem"}``, the
problem None when the grader fails the mistake as the catalogue says.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from grader.repo import CODE


def catalogue(root: Path, number: int) -> ModuleType:
    """``root/tests/mistakes/lNN.py`` (the tests' own module when ``root`` is this checkout)."""
    name = f"l{number:02d}"
    path = root / "tests" / "mistakes" / f"{name}.py"
    if path.resolve() == (CODE / "tests" / "mistakes" / f"{name}.py").resolve():
        return importlib.import_module(f"tests.mistakes.{name}")
    found = importlib.util.spec_from_file_location(f"_course_dev_mistakes_{name}", path)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    sys.modules[found.name] = module  # dataclasses look their module up while the file runs
    found.loader.exec_module(module)
    return module


def problem(exc: BaseException, mistake: Any) -> str:
    """What ``assert_caught`` found wrong, in a line."""
    said = exc.args[0] if exc.args else ""
    if isinstance(exc, AssertionError) and isinstance(said, tuple) and len(said) == 3:
        status, error, checks = said  # the status assertion: (status, error, checks)
        failed = [c["name"] for c in checks if not c["passed"]]
        why = f"the checks that failed: {', '.join(failed)}" if failed else "no check failed"
        return (
            f"graded {getattr(status, 'value', status)}, the catalogue says {mistake.status}"
            f" ({why}{'; error: ' + str(error)[:200] if error else ''})"
        )
    if isinstance(exc, AssertionError):
        return " ".join(str(said).split())[:400]
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"


def main(argv: list[str]) -> int:
    root, numbers = Path(argv[0]), [int(n) for n in argv[1:]]
    from grader.measure import devices

    devices.configure(8)  # jax on 8 simulated CPU devices, as the tests' conftest.py
    sys.path.insert(0, str(CODE))  # the checkout's tests/
    from tests.test_mistakes import assert_caught

    for number in numbers:
        for mistake in catalogue(root, number).MISTAKES:
            found = None
            try:
                assert_caught(mistake, isolate=False, root=root)
            except Exception as exc:  # an entry that no longer applies is a problem too
                found = problem(exc, mistake)
            line = {"lesson": number, "id": mistake.id, "exercise": mistake.exercise,
                    "problem": found}  # fmt: skip
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
