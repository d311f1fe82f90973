"""Stale bytecode of the grader is hidden from the student's process (issue 47, item 11).

A ``git pull`` that moves a module (lesson 16's cost model, to ``grader/expected/``)
leaves its compiled code in the old folder's ``__pycache__``: untracked, so git keeps it.
A student's module found it through ``grader.lessons.l16_serving.__file__``, unmarshalled
it and passed ``kv_cache_bytes`` unwritten. The sandbox now hides every ``__pycache__``
of the course's packages that holds bytecode not compiled from the source beside it."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.sandbox import references
from tests.sandboxed import needs_sandbox
from tests.test_faults import ROOT


def _package(tmp_path: Path) -> Path:
    lesson = tmp_path / "grader" / "lessons" / "l99_x"
    lesson.mkdir(parents=True)
    (lesson / "__init__.py").write_text("")
    (lesson / "spec.py").write_text("SPEC = 1\n")
    return lesson


def _compiled(source: Path, invalidation=py_compile.PycInvalidationMode.TIMESTAMP) -> Path:
    import importlib.util

    return Path(py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)),
                                   invalidation_mode=invalidation, doraise=True))  # fmt: skip


def test_current_bytecode_is_left_and_stale_bytecode_is_found(tmp_path):
    lesson = _package(tmp_path)
    cache = lesson / "__pycache__"
    _compiled(lesson / "spec.py")
    _compiled(lesson / "__init__.py")
    assert references.stale_bytecode(tmp_path) == []  # compiled from the source beside it
    moved = lesson / "cost.py"
    moved.write_text("def kv_cache_bytes(m, tokens, itemsize):\n    return 42\n")
    _compiled(moved)
    moved.unlink()  # moved away by a pull: its bytecode stays
    assert references.stale_bytecode(tmp_path) == [str(cache)]
    assert str(cache) in references.folders(tmp_path)


def test_bytecode_of_a_source_that_changed_is_stale(tmp_path):
    lesson = _package(tmp_path)
    _compiled(lesson / "spec.py")
    (lesson / "spec.py").write_text("SPEC = 2  # the formulas moved out\n")
    assert references.stale_bytecode(tmp_path) == [str(lesson / "__pycache__")]


def test_hash_based_bytecode_is_checked_against_its_source(tmp_path):
    lesson = _package(tmp_path)
    _compiled(lesson / "spec.py", py_compile.PycInvalidationMode.CHECKED_HASH)
    assert references.stale_bytecode(tmp_path) == []
    (lesson / "spec.py").write_text("SPEC = 3\n")
    assert references.stale_bytecode(tmp_path) == [str(lesson / "__pycache__")]


THIEF = '''

def kv_cache_bytes(m, tokens, itemsize):
    """Read the grader's stale bytecode of lesson 16's cost model, if it can be read."""
    import glob
    import marshal
    import os

    import grader.lessons.l16_serving as lesson

    folder = os.path.join(os.path.dirname(lesson.__file__), "__pycache__")
    for path in glob.glob(os.path.join(folder, "cost.*.pyc")):
        with open(path, "rb") as f:
            code = marshal.loads(f.read()[16:])
        found = {"__name__": "stolen"}
        exec(code, found)
        return found["kv_cache_bytes"](m, tokens, itemsize)
    raise NotImplementedError
'''


@needs_sandbox
def test_a_stale_cost_model_in_a_lessons_pycache_is_not_readable_when_graded():
    """The hole as it was found: lesson 16's cost model compiled where it used to live,
    and an exercise file that unmarshals it. Graded through ``course grade`` in the
    sandbox, the exercise is not started (the bytecode is not there to read), where before
    it passed."""
    import importlib.util

    lesson = ROOT / "grader" / "lessons" / "l16_serving"
    planted = Path(importlib.util.cache_from_source(str(lesson / "cost.py")))
    assert not (lesson / "cost.py").exists() and not planted.exists()
    home = Path(tempfile.mkdtemp(prefix=".course-stale-bytecode-", dir=Path.home())).resolve()
    made = not planted.parent.exists()
    try:
        planted.parent.mkdir(exist_ok=True)
        py_compile.compile(str(ROOT / "grader" / "expected" / "l16_serving" / "cost.py"),
                           cfile=str(planted), doraise=True)  # fmt: skip
        (home / "exercises").mkdir()
        stub = (ROOT / "exercises" / "l16_serving.py").read_text()
        (home / "exercises" / "l16_serving.py").write_text(stub + THIEF)
        env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu"}
        r = subprocess.run(
            [sys.executable, "-m", "course.cli", "grade", "16.kv_cache_bytes", "--json",
             "--timeout", "120"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        (got,) = json.loads(r.stdout)["lessons"]
        assert got["sandbox"] == "on"
        (exercise,) = [e for e in got["exercises"] if e["exercise"] == "kv_cache_bytes"]
        assert exercise["status"] == "not started", exercise
    finally:
        planted.unlink(missing_ok=True)
        if made:
            shutil.rmtree(planted.parent, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
