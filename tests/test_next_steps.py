"""Where a student goes next: after a lesson passes, and after the last hint."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console

from course import registry, scoring
from course.commands.common import make_app
from course.commands.grade import next_lesson
from course.commands.show import hint
from grader.results import ExerciseResult, LessonResult, Status

COURSE = registry.load()


def graded(number: int, status: Status = Status.PASSED, only: str | None = None):
    lesson = COURSE.lesson(number)
    names = [only] if only else [e.name for e in lesson.exercises]
    result = LessonResult(number, "/x", exercises=tuple(
        ExerciseResult(number, name, status, examples_run=3) for name in names
    ))  # fmt: skip
    return scoring.verdict([lesson], [result])


def test_a_passed_lesson_points_to_the_next_one_in_the_registry():
    assert str(next_lesson(COURSE, graded(1))) == (
        "Next: lesson 2 · Collectives from first principles — read it: course show 2"
    )
    numbers = [x.number for x in COURSE.lessons]
    after = numbers[numbers.index(12) + 1]  # the registry's next, not 12 + 1
    assert str(next_lesson(COURSE, graded(12))).startswith(f"Next: lesson {after} · ")


def test_the_last_lesson_says_so_and_points_to_status():
    last = COURSE.lessons[-1].number
    text = str(next_lesson(COURSE, graded(last)))
    assert text.startswith(f"Lesson {last} was the last one.") and "course status" in text


def test_no_pointer_after_a_failure_or_a_single_exercise():
    assert next_lesson(COURSE, graded(1, Status.FAILED)) is None
    assert next_lesson(COURSE, graded(1, only="place")) is None
    both = scoring.Verdict(graded(1).results * 2, graded(1).cards * 2)  # --all
    assert next_lesson(COURSE, both) is None


@pytest.fixture
def app(tmp_path):
    home = str(tmp_path / "home")  # handed in, as course's --home (COURSE_HOME) is
    return replace(make_app(home, None), console=Console(file=io.StringIO(), width=100))


def test_after_the_last_hint_it_says_the_next_call_starts_over(app):
    n = len(COURSE.lesson(2).hints)
    shown = []
    for _ in range(n + 1):
        app.console.file = io.StringIO()
        assert hint(app, 2) == 0
        shown.append(app.console.file.getvalue())
    assert all("again for the next one" in out for out in shown[: n - 1])
    assert f"hint {n} of {n}" in shown[n - 1]
    assert "That was the last hint for lesson 2; course hint 2 starts over at the first." in (
        " ".join(shown[n - 1].split())
    )
    assert "hint 1 of" in shown[n] and "again for the next one" in shown[n]
