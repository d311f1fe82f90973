"""Source only (issue 39, item 2): the student's module, and every module it
imports from its own folder, is compiled from its source text; bytecode in a
``__pycache__`` the student can write is never loaded.

An unchecked hash-based ``.pyc`` is the one Python loads without looking at the
source at all: each test plants one, compiled from the passing reference, next
to the untouched stub, and runs the real ``course grade`` (bounded in time).
Against the loader as it was (``spec_from_file_location``'s own loader), both
graded 3/3 passed: measured when this file was written.
"""

from __future__ import annotations

import importlib.util
import py_compile
from pathlib import Path

from tests.test_faults import ROOT, as_json, attempts, course, states

STUB = (ROOT / "exercises" / "l02_collectives.py").read_text()
SOLUTION = (ROOT / "solutions" / "l02_collectives.py").read_text()


def _plant(py: Path, compiled_from: str, tmp: Path) -> Path:
    """An unchecked hash-based ``.pyc`` of ``compiled_from`` where Python looks for ``py``'s."""
    source = tmp / f"other-{py.name}"
    source.write_text(compiled_from)
    target = Path(importlib.util.cache_from_source(str(py)))
    target.parent.mkdir(exist_ok=True)
    py_compile.compile(str(source), cfile=str(target), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)  # fmt: skip
    return target


def _workspace(home: Path) -> Path:
    ex = home / "exercises"
    ex.mkdir(parents=True)
    for stub in (ROOT / "exercises").glob("l[0-9]*.py"):
        (ex / stub.name).write_text(stub.read_text())
    return ex


def _not_started(r) -> None:
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"].startswith(("on", "off")), lesson
    got = {e["exercise"]: e["status"] for e in lesson["exercises"]}
    assert got == dict.fromkeys(
        ["ring_all_gather", "ring_reduce_scatter", "ring_all_reduce"], "not started"
    ), got


def test_a_planted_pyc_of_the_module_is_not_loaded(tmp_path):
    home = tmp_path / "home"
    ex = _workspace(home)
    planted = _plant(ex / "l02_collectives.py", SOLUTION, tmp_path)
    r = course(home, "grade", "2", "--max-examples", "0", "--json", timeout=300)
    _not_started(r)
    assert all(s != "passed" for s in states(home).values()) and "passed" not in attempts(home)
    assert planted.read_bytes()[4:8] == (1).to_bytes(4, "little")  # still unchecked: not rewritten


def test_a_planted_pyc_of_a_module_it_imports_from_its_folder_is_not_loaded(tmp_path):
    """The stub imports its functions from a sibling module whose source is the stub
    again, but whose planted bytecode is the reference."""
    home = tmp_path / "home"
    ex = _workspace(home)
    (ex / "ring_parts.py").write_text(STUB)
    _plant(ex / "ring_parts.py", SOLUTION, tmp_path)
    (ex / "l02_collectives.py").write_text(
        STUB + "\n\nimport os as _os, sys as _sys\n"
        "_sys.path.insert(0, _os.path.dirname(__file__))\n"
        "from ring_parts import ring_all_gather, ring_all_reduce, ring_reduce_scatter  # noqa\n"
    )
    r = course(home, "grade", "2", "--max-examples", "0", "--json", timeout=300)
    _not_started(r)
    assert not Path(importlib.util.cache_from_source(str(ex / "l02_collectives.py"))).exists()
