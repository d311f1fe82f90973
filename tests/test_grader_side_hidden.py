"""The grader's side of the lessons is hidden from the student's process (issue 39).

The student's process imports a lesson's spec to run it, so whatever a spec
imports at import time is readable there. Before ``grader/expected/`` the
formulas of lessons 3, 14 and 16 were: a submission whose function imported the
grader's own formula and returned its result passed ``3.matmul_flops``,
``14.param_count`` and ``16.kv_cache_bytes`` through the real ``course grade``,
sandbox on, on all 23, 18 and 11 examples, recorded as passed; so did returning
lesson 9's own GPipe schedule (``9.gpipe_schedule``, 23 examples) and lesson 12's
``reference_bytes`` (``12.predict_step_bytes``, 8): measured when this file was written.

Each test runs the real command, bounded in time: a probe that tries to import
every module of :mod:`grader.expected` and to read every file of it from inside
the sandbox, beside the reference solution (which must still pass); and the
cheat above, which must now fail. Without a sandbox, the specs must still import
with :mod:`grader.expected` missing (what the sandbox makes of it), and an
installed wheel must ship it and hide it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import jail, references
from tests import reports
from tests.test_faults import ROOT, as_json, attempts, course, states

needs_sandbox = pytest.mark.skipif(not jail.on(), reason=f"no sandbox here: {jail.state()}")

HIDDEN = ROOT / "grader" / "expected"


def _hidden_modules() -> list[str]:
    """Every module of the grader's side, by name, found on disk (outside the sandbox)."""
    found = []
    for path in sorted(HIDDEN.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


PROBE = r"""
import importlib, os
_report = {"imported": [], "read": [], "listed": [], "control": []}
for _name in __MODULES__:
    if _name == "grader.expected":
        continue  # an empty folder imports as a namespace package: its modules are the point
    try:
        importlib.import_module(_name)
        _report["imported"].append(_name)
    except Exception:
        pass
for _path in __FILES__:
    try:
        with open(_path, "rb") as _f:
            _report["read"].append([_path, len(_f.read())])
    except OSError:
        pass
try:
    _report["listed"] = os.listdir(__FOLDER__)
except OSError:
    pass
# the control: the student's side of the same lesson is importable and readable here
importlib.import_module("grader.lessons.l14_planning.spec")
with open(__CONTROL__, "rb") as _f:
    _report["control"].append(len(_f.read()))
""" + reports.emit("_report")  # on its stdout: its folder is read-only


def _workspace(home: Path, source: str) -> Path:
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / "l14_planning.py").write_text(source)
    return ex


@needs_sandbox
def test_the_grader_side_cannot_be_imported_or_read_from_the_students_process(tmp_path):
    modules, files = _hidden_modules(), sorted(str(p) for p in HIDDEN.rglob("*.py"))
    assert "grader.expected.l14_planning.cost" in modules and len(files) >= 10, files
    probe = (PROBE.replace("__MODULES__", repr(modules)).replace("__FILES__", repr(files))
             .replace("__FOLDER__", repr(str(HIDDEN)))
             .replace("__CONTROL__", repr(str(ROOT / "grader/lessons/l14_planning/spec.py"))))  # fmt: skip
    home = tmp_path / "home"
    _workspace(home, (ROOT / "solutions" / "l14_planning.py").read_text() + probe)
    r = course(home, "grade", "14", "--max-examples", "2", "--json", timeout=300)
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"] == "on", lesson
    got = {e["exercise"]: e["status"] for e in lesson["exercises"]}
    assert set(got.values()) == {"passed"}, got  # the lesson still grades: the grader's side works
    seen = reports.read(r.stderr.decode(errors="replace"))
    assert seen["control"], seen  # the probe ran, and reads what it may
    assert seen["imported"] == [], seen["imported"]
    assert seen["read"] == [], seen["read"]
    assert seen["listed"] == [], seen["listed"]  # an empty folder: not even the names
    # outside, all of it is there
    assert all(Path(f).stat().st_size > 0 for f in files)


@needs_sandbox
def test_a_submission_returning_the_graders_formula_fails(tmp_path):
    cheat = (ROOT / "exercises" / "l14_planning.py").read_text() + (
        "\n\ndef param_count(m):\n"
        "    from grader.expected.l14_planning.cost import param_count as grader_formula\n\n"
        "    return grader_formula(m)\n"
    )
    home = tmp_path / "home"
    _workspace(home, cheat)
    r = course(home, "grade", "14.param_count", "--json", timeout=300)
    (lesson,) = as_json(r)["lessons"]
    assert lesson["sandbox"] == "on", lesson
    (ex,) = lesson["exercises"]
    assert ex["status"] == "error", ex
    assert "No module named 'grader.expected.l14_planning'" in ex["error"], ex["error"]
    assert all(s != "passed" for s in states(home).values()) and "passed" not in attempts(home)


def test_every_spec_imports_without_the_graders_side():
    """What the sandbox makes of ``grader.expected`` (an empty folder), in a process of
    its own: every lesson's spec (and what it imports) still imports, so none uses the
    grader's side at import time; a grader-side function called there is a grader fault."""
    code = r"""
import importlib.abc, sys
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith("grader.expected."):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Hidden())
import tomllib
from grader.spec import load_spec
from grader.faults import GraderFault
lessons = tomllib.loads(open("course/course.toml", "rb").read().decode())["lessons"]
for lesson in lessons:
    load_spec(f"l{lesson['number']:02d}_{lesson['slug']}")
from grader.lessons.l14_planning import spec
try:
    spec.cost.param_count
except GraderFault as exc:
    print("fault:", exc)
print("loaded", len(lessons))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "loaded 16" in r.stdout, r.stdout
    assert (
        "fault: grader.expected.l14_planning.cost is the grader's side and could not" in r.stdout
    ), r.stdout


def test_an_installed_wheel_ships_the_graders_side_and_hides_it(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        import setup
    finally:
        sys.path.remove(str(ROOT))
    shipped = setup.packages(str(ROOT))
    want = {m for m in _hidden_modules() if (ROOT / m.replace(".", "/") / "__init__.py").exists()}
    assert want and want <= set(shipped), sorted(want - set(shipped))
    site = tmp_path / "site-packages"  # a wheel's layout: the course's code is site-packages
    assert str(site / "grader" / "expected") in references.folders(site)
    assert str(HIDDEN) in references.folders(ROOT)
