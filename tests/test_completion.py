"""``course status`` once every lesson passes: the completion screen."""

from __future__ import annotations

import pytest

from course import registry
from course.progress import Progress
from course.scoring import ExerciseScore
from grader.evidence import BytesExpectation
from grader.results import CheckResult, ExerciseResult, Status
from tests.test_cli import course


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def _pass_everything(home, bonus: bool) -> None:
    """A progress file in which the student's own attempt passed every exercise."""
    home.mkdir(parents=True, exist_ok=True)
    with Progress(home / "progress.db") as progress:
        attempt = progress.start_attempt(str(home / "exercises"), True, "course grade --all")
        for lesson in registry.load().lessons:
            for ex in lesson.exercises:
                if ex.bonus and not bonus:
                    continue
                sent = lesson.number * 1000
                checks = [CheckResult("bytes", True, f"{sent:,} bytes per device",
                                      evidence=[BytesExpectation(sent, sent)])]  # fmt: skip
                result = ExerciseResult(lesson.number, ex.name, Status.PASSED, checks=checks)
                progress.record(
                    attempt, result, ExerciseScore(ex.points, ex.bonus, True, ex.points)
                )
        progress.finish_attempt(attempt)


def test_status_shows_the_completion_screen_when_every_lesson_passes(home):
    course(home, "status")  # sets up the workspace
    _pass_everything(home, bonus=True)
    r = course(home, "status")
    assert r.returncode == 0, r.stderr
    assert "course complete" in r.stdout
    lessons = registry.load().lessons
    assert f"Every lesson passes: {len(lessons)} lessons" in r.stdout
    assert "bonus points" in r.stdout
    for lesson in lessons:
        assert lesson.title[:30] in r.stdout
        assert f"{lesson.number * 1000:,} bytes per device" in r.stdout  # one figure each
    assert "Next:" not in r.stdout and "Fix:" not in r.stdout


def test_list_shows_every_lesson_and_its_bonuses(home):
    r = course(home, "list")
    assert r.returncode == 0
    for lesson in registry.load().lessons:
        assert lesson.title[:25] in r.stdout
    assert "bonus" in r.stdout
