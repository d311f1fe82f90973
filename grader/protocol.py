"""What the ``course`` process and the grading worker say to each other.

The parent writes one :class:`Request` to the worker's stdin; the worker
streams :data:`Event` s back, one JSON line each, on a pipe of their own
(the student's prints go to stdout/stderr and never mix with them). Both
directions are encoded and decoded here and nowhere else.

The request carries only what grading needs: which modules and exercises,
which directory, and the run options. Titles, points and bonus flags stay
with the course registry.

This module does not import jax.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from grader.results import ExerciseResult, Status

DEFAULT_TIMEOUT = 60.0
"""Seconds one example may run before it is reported as timed out."""


@dataclass(frozen=True)
class LessonJob:
    """One lesson to grade."""

    lesson: int
    module: str
    """The exercise/solution/spec module, e.g. ``l02_collectives``."""
    exercises: tuple[str, ...]
    """The exercises to grade, in the order results should come back."""


@dataclass(frozen=True)
class Request:
    """Everything the worker needs to grade some lessons of one directory."""

    lessons: tuple[LessonJob, ...]
    directory: str
    """The directory holding the ``lNN_slug.py`` modules under test."""
    seed: int = 0
    example: str | None = None
    """One example to re-run, in ``--example`` form (one exercise only)."""
    max_examples: int | None = None
    """Drawn examples per exercise on top of the explicit ones (None: the spec's)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds per example."""
    devices: int | None = None
    """Simulated CPU devices (None: the default, or the real accelerators)."""
    platform: str | None = None
    cache_dir: str | None = None
    """Where the worker keeps compiled programs between runs (None: no cache)."""

    def encode(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def decode(cls, text: str) -> Request:
        d = json.loads(text)
        lessons = tuple(
            LessonJob(j["lesson"], j["module"], tuple(j["exercises"])) for j in d.pop("lessons")
        )
        return cls(lessons=lessons, **d)


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class LessonStarted:
    lesson: int
    devices: str
    """The devices grading runs on, e.g. ``8 CPU devices (simulated)``."""
    type: str = field(default="lesson_start", init=False)


@dataclass(frozen=True)
class ExampleStarted:
    """An example is about to run: the time limit starts now."""

    lesson: int
    exercise: str
    index: int
    example: str
    """In ``--example`` form."""
    type: str = field(default="example", init=False)


@dataclass(frozen=True)
class ExerciseGraded:
    lesson: int
    result: ExerciseResult
    type: str = field(default="exercise", init=False)


@dataclass(frozen=True)
class LessonFinished:
    lesson: int
    duration: float
    type: str = field(default="lesson_end", init=False)


Event = LessonStarted | ExampleStarted | ExerciseGraded | LessonFinished
_EVENTS: dict[str, Any] = {
    c.type: c for c in (LessonStarted, ExampleStarted, ExerciseGraded, LessonFinished)
}


def encode_event(event: Event) -> str:
    """One line of JSON, without the newline."""
    d = asdict(event) if not isinstance(event, ExerciseGraded) else {
        "type": event.type, "lesson": event.lesson, "result": event.result.to_dict()
    }  # fmt: skip
    return json.dumps(d)


def decode_event(line: str | bytes) -> Event:
    d = json.loads(line)
    cls = _EVENTS[d.pop("type")]
    if cls is ExerciseGraded:
        return ExerciseGraded(d["lesson"], ExerciseResult.from_dict(d["result"]))
    return cls(**d)


# ---------------------------------------------------------------- results

STUCK_HINT = (
    "Look for a loop that never ends: a while_loop whose condition stays true, or a "
    "Python loop over a value that never changes."
)


def unfinished(
    lesson: int, exercise: str, status: Status, error: str, *, example: str | None = None
) -> ExerciseResult:
    """The result of an exercise whose grading never finished: its module would
    not import (``ERROR``), the worker crashed (``ERROR``) or was stopped after
    the time limit (``TIMEOUT``, with a hint). ``example`` names the example
    that was running, when one was."""
    hint = STUCK_HINT if status == Status.TIMEOUT else None
    return ExerciseResult(lesson, exercise, status, example=example, error=error, hint=hint)
