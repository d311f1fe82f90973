"""Wrong code fails, each mistake with its own diagnosis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import engine
from grader.results import Status
from grader.sandbox import backends
from tests import grades
from tests.mistakes import MISTAKES, Mistake, lesson_modules


def write_variant(root, tmp_path, mistake: Mistake):
    source = (root / "solutions" / f"{mistake.module}.py").read_text()
    (tmp_path / f"{mistake.module}.py").write_text(mistake.source(source))
    return tmp_path


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.id)
def test_mistake_is_caught_with_its_diagnosis(mistake: Mistake):
    """Graded once a run (:func:`tests.grades.mistake`): the sample of
    :data:`tests.grades.SAMPLE` with the student's code in a process of its own, as
    ``course grade`` grades, the rest in this process (``COURSE_TEST_ISOLATE=1``: all
    of them in the student's process)."""
    assert_caught(mistake)


def assert_caught(
    mistake: Mistake, isolate: bool | None = None, *, root: Path | None = None
) -> None:
    """The mistake's grade (the run's one: :func:`tests.grades.mistake`) fails as it says.
    ``isolate``: True in the student's process, False in this one, None as the run grades
    the catalogue (:func:`tests.grades.mistake_mode`); ``root``: the course whose solution
    the mistake edits (``course dev check --mistakes``'s)."""
    mode = None if isolate is None else ("isolated" if isolate else "here")
    result = grades.mistake(mistake, mode=mode, root=root)
    (er,) = result.exercises
    assert er.status == Status(mistake.status), (
        er.status,
        er.error,
        [c.to_dict() for c in er.checks],
    )
    if mistake.check is None:
        evidence = f"{er.error} {er.hint}"
    else:
        failed = {c.name: c for c in er.checks if not c.passed}
        assert mistake.check in failed, (
            f"expected {mistake.check} to fail; failed: {sorted(failed)}"
        )
        check = failed[mistake.check]
        evidence = f"{check.message} {check.hint} {er.hint}"
        assert er.example, "a failing exercise names its example"
    for words in mistake.says:
        assert words in evidence, f"{words!r} not in: {evidence}"
    for words in mistake.never:
        assert words not in evidence, f"{words!r}, a wrong cause here, in: {evidence}"


def test_every_mistake_targets_a_real_exercise():
    for m in MISTAKES:
        spec = engine.load_spec(m.module)
        assert spec.exercise(m.exercise)


def test_each_lesson_has_its_own_catalogue():
    """``tests/mistakes/lNN.py`` is collected by its name and holds lesson NN's mistakes only."""
    import importlib

    from course import registry

    for lesson in registry.load().lessons:
        name = f"l{lesson.number:02d}"
        assert name in lesson_modules(), f"no tests/mistakes/{name}.py"
        mistakes = importlib.import_module(f"tests.mistakes.{name}").MISTAKES
        assert mistakes and all(m.module == lesson.module for m in mistakes)
    assert len({m.id for m in MISTAKES}) == len(MISTAKES), "mistake ids are unique"


def test_solution_copy_itself_passes(root, tmp_path):
    """The harness is sound: the unmodified copy passes, so failures come from the mistakes."""
    shutil.copy(root / "solutions" / "l02_collectives.py", tmp_path)
    result = backends.grade_lesson(
        2, "l02_collectives", tmp_path, only=["ring_reduce_scatter"], max_examples=0
    )
    assert result.exercises[0].status == Status.PASSED
