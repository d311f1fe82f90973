"""course.toml → frozen dataclasses: the single source of lesson order.

The file's form is described in its own header comment; :data:`FORMAT_VERSION`
is the one this code reads. Hints are declared where they belong: each
exercise's under its ``[[lessons.exercises]]`` entry, hints about the whole
lesson under its ``[[lessons]]`` entry. ``course hint N`` walks them all
(:attr:`Lesson.hints`); an untouched stub is shown its exercise's own
(:attr:`Exercise.hints`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from course import scoring
from course.scoring import ExerciseScore, Scorecard
from grader.results import LessonResult

REGISTRY = Path(__file__).with_name("course.toml")

FORMAT_VERSION = 2
"""The form of course.toml this code reads. 1 (no ``format_version`` key) had the hints
per lesson only; 2 declares each exercise's hints with the exercise."""


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
    hints: tuple[str, ...] = ()
    """This exercise's own hints, in the order ``course hint`` gives them; the first is
    the one its untouched stub is shown."""

    def scored(self, status: str | None, counted: bool = True) -> ExerciseScore:
        """Its score by the pass rule (:func:`course.scoring.score`)."""
        return scoring.score(self, status, counted)


@dataclass(frozen=True)
class Lesson:
    number: int
    """The lesson's number: its files' names (``lNN_slug``) and ``course grade N``. Unique;
    the course's order is the registry file's order, not the numbers'."""
    slug: str
    """Short name: files are ``lNN_slug.py`` and ``NN_slug.md``."""
    title: str
    summary: str
    """One line shown by ``course list``."""
    general_hints: tuple[str, ...]
    """Hints about the whole lesson, no one exercise's: ``course hint N`` gives them first."""
    exercises: tuple[Exercise, ...]

    @property
    def hints(self) -> tuple[str, ...]:
        """What ``course hint N`` shows, one at a time: the lesson's general hints, then
        each exercise's own in the exercises' order (a text declared twice, once)."""
        every = (*self.general_hints, *(h for e in self.exercises for h in e.hints))
        return tuple(dict.fromkeys(every))

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
    """In the course's order: the registry file's."""

    def lesson(self, number: int) -> Lesson:
        for lesson in self.lessons:
            if lesson.number == number:
                return lesson
        known = ", ".join(str(x.number) for x in self.lessons)
        raise KeyError(f"there is no lesson {number} (lessons: {known})")

    def after(self, number: int) -> Lesson | None:
        """The lesson that follows lesson ``number`` in the course's order (the
        registry's, not the numbers'), or None after the last."""
        numbers = [x.number for x in self.lessons]
        at = numbers.index(self.lesson(number).number)
        return self.lessons[at + 1] if at + 1 < len(self.lessons) else None

    def out_of_order(self) -> list[tuple[Lesson, Lesson | None]]:
        """The lessons whose numbers do not follow the course's order, each with the lesson
        it comes after (None: first): those outside the longest run of increasing numbers
        in the course's order. With 1–7, 15, 8–14, 16: [(lesson 15, lesson 7)]."""
        numbers = [x.number for x in self.lessons]
        best: list[list[int]] = []  # best[i]: the longest increasing run ending at i
        for i, n in enumerate(numbers):
            runs = [best[j] for j in range(i) if numbers[j] < n]
            best.append([*max(runs, key=len, default=[]), i])
        kept = set(max(best, key=len, default=[]))
        return [
            (lesson, self.lessons[i - 1] if i else None)
            for i, lesson in enumerate(self.lessons)
            if i not in kept
        ]

    def order_note(self) -> str | None:
        """One sentence on the course's order where numbers do not follow it (None where
        they do): what ``course list``, ``course status`` and the notebooks' index say."""
        moved = self.out_of_order()
        if not moved:
            return None
        said = "; ".join(
            f"lesson {x.number} comes after lesson {before.number}"
            if before is not None else f"lesson {x.number} comes first"
            for x, before in moved
        )  # fmt: skip
        return (
            f"Listed in the course's order: {said} (a lesson added later takes a new number, "
            "so that the others keep theirs, and your progress in them)."
        )


class RegistryError(Exception):
    pass


def _hints(table: Mapping[str, Any]) -> tuple[str, ...]:
    """A ``hints`` key: a list of non-empty strings (absent: none)."""
    hints = table.get("hints", [])
    if not isinstance(hints, list) or not all(isinstance(h, str) and h.strip() for h in hints):
        raise ValueError("'hints' must be a list of non-empty strings")
    return tuple(hints)


def _exercise(entry: Mapping[str, Any]) -> Exercise:
    bonus = entry.get("bonus", False)
    if not isinstance(bonus, bool):
        raise ValueError(f"exercise {entry['name']!r}: 'bonus' must be true or false")
    try:
        hints = _hints(entry)
    except ValueError as exc:
        raise ValueError(f"exercise {entry['name']!r}: {exc}") from None
    return Exercise(entry["name"], int(entry.get("points", 1)), entry.get("summary", ""), bonus, hints)  # fmt: skip


@cache
def load(path: Path = REGISTRY) -> Course:
    try:
        raw = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RegistryError(f"cannot read {path}: {exc}") from None
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        said = "has no format_version" if version is None else f"is format_version {version!r}"
        raise RegistryError(
            f"{path} {said}; this course reads format_version = {FORMAT_VERSION} (each "
            "exercise's hints under its [[lessons.exercises]] entry)"
        )
    lessons: list[Lesson] = []
    entries = raw.get("lessons", [])
    if not isinstance(entries, list):
        raise RegistryError(f"{path}: 'lessons' must be an array of tables ([[lessons]])")
    for i, entry in enumerate(entries, start=1):
        try:
            lesson = Lesson(
                number=int(entry["number"]), slug=entry["slug"], title=entry["title"],
                summary=entry.get("summary", ""), general_hints=_hints(entry),
                exercises=tuple(_exercise(e) for e in entry.get("exercises", [])),
            )  # fmt: skip
        except KeyError as exc:
            raise RegistryError(f"{path}: lesson #{i} lacks {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise RegistryError(f"{path}: lesson #{i} is malformed: {exc}") from None
        # Numbers are unique, and a gap is allowed (a lesson not built yet); the course's
        # order is the file's, so a lesson added later may sit between two older ones.
        twice = next((x for x in lessons if x.number == lesson.number), None)
        if twice is not None:
            raise RegistryError(
                f"{path}: lesson #{i} is numbered {lesson.number}, as lesson "
                f"#{lessons.index(twice) + 1} ({twice.slug}) is; numbers are unique"
            )
        names = [e.name for e in lesson.exercises]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise RegistryError(f"{path}: lesson #{i} lists {', '.join(repeated)} twice")
        lessons.append(lesson)
    return Course(tuple(lessons))
