"""What a grade tells whoever started it, as it goes: the events.

The engine emits them (``on_event``); the grading worker sends them, signed, to
the ``course`` process (:mod:`grader.sandbox.protocol` is their codec there).
Below the engine and the sandbox both: plain frozen dataclasses, no jax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.results import ExerciseResult, Status


@dataclass(frozen=True)
class LessonStarted:
    lesson: int
    devices: str
    """The devices grading runs on, e.g. ``8 CPU devices (simulated)``."""
    sandbox: str = ""
    """``on``: the student's process runs in the OS sandbox; ``off: <why>``."""
    type: str = field(default="lesson_start", init=False)


@dataclass(frozen=True)
class ImportStarted:
    """The student's module is about to be imported: the time limit starts now
    (a module that hangs at import is stopped like an example that hangs)."""

    lesson: int
    type: str = field(default="import", init=False)


@dataclass(frozen=True)
class Rejected:
    """The request cannot be graded as asked (an ``--example`` the exercise
    cannot take): a usage error, reported before anything is graded."""

    message: str
    lesson: int = 0
    type: str = field(default="rejected", init=False)


@dataclass(frozen=True)
class GraderFailed:
    """The grader's own code failed outside any exercise (a spec that will not
    load, a bug in the engine): never the student's error."""

    message: str
    lesson: int = 0
    type: str = field(default="grader_failed", init=False)


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


@dataclass(frozen=True)
class Served:
    """A serving worker (``--serve``) is done with the request and waits for the
    next one: the last event of each request."""

    lesson: int = 0
    type: str = field(default="served", init=False)


Event = (
    LessonStarted | ImportStarted | ExampleStarted | ExerciseGraded | LessonFinished
    | Rejected | GraderFailed | Served
)  # fmt: skip
EVENTS: dict[str, Any] = {
    c.type: c
    for c in (
        LessonStarted, ImportStarted, ExampleStarted, ExerciseGraded, LessonFinished, Rejected,
        GraderFailed, Served,
    )
}  # fmt: skip


# ---------------------------------------------------------------- results

REPORT = "not your code's fault; please report it with the command you ran and this message"
"""Said with every fault of the grader's own code."""

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
