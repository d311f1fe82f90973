"""course.toml → frozen dataclasses: the single source of lesson order."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from course import scoring
from course.scoring import ExerciseScore, Scorecard
from grader.results import LessonResult

REGISTRY = Path(__file__).with_name("course.toml")


@dataclass(frozen=True)
class Exercise:
    name: str
    """The function the student implements; also its name in the grading spec."""
    points: int
    """What passing it is worth."""
    summary: str
    """One line: what the function must do."""
    bonus: bool = False
    """Extra credit: its points come on top, and the lesson passes without it."""

    def scored(self, status: str | None, counted: bool = True) -> ExerciseScore:
        """Its score by the pass rule (:func:`course.scoring.score`)."""
        return scoring.score(self, status, counted)


@dataclass(frozen=True)
class Lesson:
    number: int
    """Position in the course, from 1."""
    slug: str
    """Short name: files are ``lNN_slug.py`` and ``NN_slug.md``."""
    title: str
    summary: str
    """One line shown by ``course list``."""
    hints: tuple[str, ...]
    """Shown one at a time by ``course hint N``; the first also for a stub not started."""
    exercises: tuple[Exercise, ...]

    @property
    def module(self) -> str:
        """The exercise/solution/spec module name, e.g. ``l02_collectives``."""
        return f"l{self.number:02d}_{self.slug}"

    @property
    def text_name(self) -> str:
        """The lesson text's file name in ``course/lessons``."""
        return f"{self.number:02d}_{self.slug}.md"

    @property
    def points(self) -> int:
        """Points of the required exercises (bonus points come on top)."""
        return sum(e.points for e in self.exercises if not e.bonus)

    @property
    def required(self) -> tuple[Exercise, ...]:
        """The exercises the lesson needs to pass: all but the bonus ones."""
        return tuple(e for e in self.exercises if not e.bonus)

    def exercise(self, name: str) -> Exercise:
        for ex in self.exercises:
            if ex.name == name:
                return ex
        raise KeyError(name)

    def scorecard(
        self,
        statuses: Mapping[str, str | None],
        graded: Iterable[str] | None = None,
        narrowed: Iterable[str] = (),
    ) -> Scorecard:
        """This lesson's statuses scored (:func:`course.scoring.scorecard`)."""
        return scoring.scorecard(self, statuses, graded, narrowed)

    def score_result(self, result: LessonResult) -> Scorecard:
        """The card of one grading run (:func:`course.scoring.score_result`)."""
        return scoring.score_result(self, result)


@dataclass(frozen=True)
class Course:
    lessons: tuple[Lesson, ...]

    def lesson(self, number: int) -> Lesson:
        for lesson in self.lessons:
            if lesson.number == number:
                return lesson
        known = ", ".join(str(x.number) for x in self.lessons)
        raise KeyError(f"there is no lesson {number} (lessons: {known})")


class RegistryError(Exception):
    pass


@cache
def load(path: Path = REGISTRY) -> Course:
    try:
        raw = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RegistryError(f"cannot read {path}: {exc}") from None
    lessons = []
    entries = raw.get("lessons", [])
    if not isinstance(entries, list):
        raise RegistryError(f"{path}: 'lessons' must be an array of tables ([[lessons]])")
    for i, entry in enumerate(entries, start=1):
        try:
            exercises = tuple(
                Exercise(
                    e["name"],
                    int(e.get("points", 1)),
                    e.get("summary", ""),
                    bool(e.get("bonus", False)),
                )  # fmt: skip
                for e in entry.get("exercises", [])
            )
            lesson = Lesson(
                number=int(entry["number"]), slug=entry["slug"], title=entry["title"],
                summary=entry.get("summary", ""), hints=tuple(entry.get("hints", [])),
                exercises=exercises,
            )  # fmt: skip
        except KeyError as exc:
            raise RegistryError(f"{path}: lesson #{i} lacks {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise RegistryError(f"{path}: lesson #{i} is malformed: {exc}") from None
        previous = lessons[-1].number if lessons else 0
        if lesson.number <= previous:  # a gap is allowed: a lesson not built yet
            raise RegistryError(
                f"{path}: lesson #{i} is numbered {lesson.number}, after {previous}; keep them "
                "in increasing order"
            )
        lessons.append(lesson)
    return Course(tuple(lessons))
