"""The engine contract (issue 34): what a spec's ``run`` may do, and what runs where.

One pass per example in the student's process: a spec whose programs take the
earlier programs' outputs grades the same in this process and through the
student's process (the sandbox's real path); and the core stays below the
sandbox (a test over the import graph, read with ``ast`` from the files).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.results import Status
from grader.sandbox import backends

LESSONS = "tests.data.lessons"
"""The tests' own lessons (``tests/data/lessons``)."""
MODULE = "l99_chained"
SALT = 0x7E57
"""One salt for both ways: the same data, so the same words."""
BACKWARDS = (
    "    return lax.ppermute(block, axis_name, [(i, (i + 1) % n) for i in range(n)])",
    "    return lax.ppermute(block, axis_name, [((i + 1) % n, i) for i in range(n)])",
)
"""A realistic mistake: the ring the other way round."""


def _grade(root: Path, tmp_path: Path, isolate: bool, patch: tuple[str, str] | None = None):
    source = (root / "tests" / "data" / "solutions" / f"{MODULE}.py").read_text()
    if patch is not None:
        assert source.count(patch[0]) == 1
        source = source.replace(*patch)
    (tmp_path / f"{MODULE}.py").write_text(source)
    chosen = backends.isolated(SALT, LESSONS) if isolate else backends.here(SALT, LESSONS)
    (er,) = backends.grade_lesson(
        99, MODULE, tmp_path, backend=chosen, lessons=LESSONS, timeout=120
    ).exercises
    return er


def _verdict(er) -> tuple:
    return (er.status, er.example, er.examples_run, er.error,
            [(c.name, c.passed, c.message) for c in er.checks])  # fmt: skip


def test_a_chained_spec_grades_the_same_in_process_and_isolated(root, tmp_path):
    """Three programs, each taking the last one's output: in the student's process
    the spec runs once and each program is traced on the decoy output of the one
    before (its traced shape, dtype and sharding); the worker replays them in
    order on its own data. Before the contract, the student's process handed
    earlier programs an empty result and the student was blamed for a TypeError."""
    here = _grade(root, _sub(tmp_path, "here"), isolate=False)
    isolated = _grade(root, _sub(tmp_path, "iso"), isolate=True)
    assert here.status == Status.PASSED, _verdict(here)
    assert _verdict(isolated) == _verdict(here), (_verdict(isolated), isolated.hint)


def test_a_wrong_chained_program_fails_the_same_way_both_ways(root, tmp_path):
    here = _grade(root, _sub(tmp_path, "here"), isolate=False, patch=BACKWARDS)
    isolated = _grade(root, _sub(tmp_path, "iso"), isolate=True, patch=BACKWARDS)
    assert here.status == Status.FAILED, _verdict(here)
    (values,) = [c for c in here.checks if not c.passed]
    assert values.name == "values" and "after the three programs" in values.message
    assert _verdict(isolated) == _verdict(here), (_verdict(isolated), isolated.hint)


def test_a_spec_that_fails_in_the_students_process_is_said_as_the_graders_code(root, tmp_path):
    """A spec whose ``run`` reaches the grader's side (hidden from the student's
    process) passes here and fails there: the report says the grader's own code failed
    in that process, and when it is the grader's bug to report. It stays the student's
    error (that process runs the student's module too), and is never "your code raised"."""
    source = (root / "tests" / "data" / "solutions" / f"{MODULE}.py").read_text()
    graded = {}
    for name, isolate in (("here", False), ("iso", True)):
        directory = _sub(tmp_path, name)
        (directory / "l98_graders_side.py").write_text(source)
        chosen = (backends.isolated if isolate else backends.here)(SALT, LESSONS)
        (graded[name],) = backends.grade_lesson(
            98, "l98_graders_side", directory, backend=chosen, lessons=LESSONS, timeout=120
        ).exercises
    assert graded["here"].status == Status.PASSED, _verdict(graded["here"])
    there = graded["iso"]
    assert there.status == Status.ERROR, _verdict(there)
    assert there.error.startswith(
        "The grader's own code failed in the process running your code while it ran shift: "
        "grader.expected.training is the grader's side and could not be imported"
    ), there.error
    assert "not your code's fault; please report it" in there.hint, there.hint


def test_the_students_process_says_a_grader_fault_as_the_graders():
    """Each end of the wire on its own: the student's process names a GraderFault
    raised there "grader"; the worker raises it as SpecFaultThere (a StudentFault, so
    the student's error) and any other failure as before."""
    from types import SimpleNamespace

    from grader.faults import GraderFault, SpecFaultThere, StudentFault
    from grader.later import Hidden
    from grader.sandbox.isolation import raise_from
    from grader.sandbox.student import Session

    where = SimpleNamespace(directory="/nowhere", scratch=None)
    for exc, kind in ((Hidden("h"), "grader"), (GraderFault("g"), "grader"),
                      (ValueError("v"), "error"), (NotImplementedError(), "not_started")):  # fmt: skip
        assert Session.raised(where, exc, 1)["kind"] == kind, exc
    with pytest.raises(SpecFaultThere, match="^the spec$"):
        raise_from({"raised": {"kind": "grader", "message": "the spec", "called": 0}})
    with pytest.raises(StudentFault) as other:
        raise_from({"raised": {"kind": "error", "message": "theirs", "called": 0}})
    assert not isinstance(other.value, SpecFaultThere)


def _sub(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


# ------------------------------------------------------------------ the import graph

GRADER = Path(__file__).resolve().parent.parent / "grader"
CORE = ("engine", "runtime", "spec", "results", "evidence", "report", "faults", "backend",
        "events", "exported", "loader", "checks", "measure", "reference", "lessons")  # fmt: skip
"""The core: modules and packages below ``grader``, none of which may import the sandbox."""
TRANSPORT = ("grader.sandbox",)


def _imports(path: Path, package: str | None = None) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (relative
    imports resolved against its package: ``package``, or where it lies)."""
    tree = ast.parse(path.read_text())
    if package is None:
        package = ".".join(path.relative_to(GRADER.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _core_files() -> list[Path]:
    files = []
    for name in CORE:
        if (GRADER / f"{name}.py").exists():
            files.append(GRADER / f"{name}.py")
        else:
            files.extend(sorted((GRADER / name).rglob("*.py")))
    return files


@pytest.mark.parametrize("path", _core_files(), ids=lambda p: str(p.relative_to(GRADER)))
def test_the_core_imports_nothing_of_the_sandbox(path):
    """The engine is handed its backends; runtime, spec, results, evidence, report,
    faults, events, checks, measure, reference and every lesson sit below the
    sandbox, which runs them."""
    reached = sorted(m for m in _imports(path) if m.startswith(TRANSPORT))
    assert not reached, f"{path.relative_to(GRADER)} imports {reached}"


SINGLE_THREADED = ("engine", "runtime", "backend")
"""The engine, the runtimes and the backend interface: one thread grades. What is
prepared ahead of an example's turn is the sandbox's (``grader.sandbox.prepared``)."""
THREADS = ("threading", "_thread", "concurrent.futures", "multiprocessing", "asyncio")


@pytest.mark.parametrize("name", SINGLE_THREADED)
def test_the_engine_and_the_runtimes_start_no_thread(name):
    """Single-threaded, the engine's time limit (a signal, in the grading thread)
    covers every example; nothing below the sandbox starts or waits on a thread."""
    imported = _imports(GRADER / f"{name}.py")
    reached = sorted(m for m in imported if any(m == t or m.startswith(f"{t}.") for t in THREADS))
    assert not reached, f"grader/{name}.py imports {reached}"


def test_the_import_graph_reader_sees_a_sandbox_import(tmp_path):
    """The reader itself: an import inside a function, and a relative one, are seen."""
    sample = tmp_path / "probe.py"
    sample.write_text("def f():\n    from grader.sandbox import wire\n")
    assert "grader.sandbox.wire" in _imports(sample, "grader.lessons.lxx_probe")
    sample.write_text("from ...sandbox.isolation import raise_from\n")
    assert "grader.sandbox.isolation" in _imports(sample, "grader.lessons.lxx_probe")
    sample.write_text("import grader.sandbox.cluster as c\n")
    assert "grader.sandbox.cluster" in _imports(sample, "grader.lessons.lxx_probe")
    sample.write_text("def f():\n    from threading import Thread\n")
    assert "threading" in _imports(sample, "grader.lessons.lxx_probe")


# ------------------------------------------------------------------ lesson 13's tasks


def test_a_cluster_runs_only_the_tasks_its_exercise_declares():
    """The spec declares each exercise's process-side tasks (``ExerciseSpec.tasks``);
    the worker's cluster refuses any other before it asks anything, and a
    cluster's process runs only a function of a lesson's module."""
    from grader.faults import GraderFault
    from grader.lessons.l13_multi_host import on_process
    from grader.sandbox.cluster import Cluster
    from grader.sandbox.student import Session

    cluster = Cluster("/nowhere", "l13_multi_host", 2, 1)  # never started: refused first
    with pytest.raises(GraderFault, match="not a task the spec declares"):
        cluster.run("global_batch", on_process.batch, {"rows": []})
    refused = Session(salt=1, cluster=True).task({"task": "os:system", "exercise": "x"})
    assert refused == {"fault": "not a lesson's task: 'os:system'"}


def test_every_cluster_exercise_declares_its_tasks():
    from grader.spec import load_spec

    spec = load_spec("l13_multi_host")
    for ex in spec.exercises:
        if ex.cluster is not None:
            assert ex.tasks, ex.name
            for task in ex.tasks:
                assert task.__module__.startswith("grader.lessons.l13_multi_host.")
                assert task.__qualname__.isidentifier(), task  # a module-level function
