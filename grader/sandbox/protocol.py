"""What the ``course`` process and the grading worker say to each other.

The parent writes one :class:`Request` to the worker's stdin; the worker
streams :data:`Event` s back, one JSON line each, on a pipe of their own
(the student's prints go to stdout/stderr and never mix with them). Each
line is signed with a key fresh per worker (:func:`sign`, :func:`verify`),
so code that writes to the pipe without the key cannot pass for the grader.
Both directions are encoded and decoded here and nowhere else.

The request carries only what grading needs: which modules and exercises,
which directory, and the run options. Titles, points and bonus flags stay
with the course registry.

This module does not import jax.
"""

from __future__ import annotations

import hashlib
import hmac
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
    examples_dir: str | None = None
    """Where the worker keeps drawn examples between runs (None: not kept)."""
    hidden: tuple[str, ...] = ()
    """Folders the student's process must not see (in the sandbox): a classroom's
    submissions and results, the workspace holding the progress file. The
    worker adds ``cache_dir`` and the course's ``solutions/``."""
    key: str = ""
    """The secret the worker signs its events with (see :func:`sign`); fresh per worker."""

    def encode(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def decode(cls, text: str) -> Request:
        d = json.loads(text)
        lessons = tuple(
            LessonJob(j["lesson"], j["module"], tuple(j["exercises"])) for j in d.pop("lessons")
        )
        hidden = tuple(str(h) for h in d.pop("hidden", ()))
        return cls(lessons=lessons, hidden=hidden, **d)


# ---------------------------------------------------------------- events


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
_EVENTS: dict[str, Any] = {
    c.type: c
    for c in (
        LessonStarted, ImportStarted, ExampleStarted, ExerciseGraded, LessonFinished, Rejected,
        GraderFailed, Served,
    )
}  # fmt: skip


class BadEvent(ValueError):
    """A line on the events channel that is not an event this protocol knows."""


def encode_event(event: Event) -> str:
    """One line of JSON, without the newline."""
    d = asdict(event) if not isinstance(event, ExerciseGraded) else {
        "type": event.type, "lesson": event.lesson, "result": event.result.to_dict()
    }  # fmt: skip
    return json.dumps(d)


def decode_event(line: str | bytes) -> Event:
    """The event on one line; :class:`BadEvent` for anything else (bad JSON,
    an unknown type, missing or extra fields, a field of the wrong type)."""
    try:
        d = json.loads(line)
        cls = _EVENTS[d.pop("type")]
        if cls is ExerciseGraded:
            event = ExerciseGraded(d["lesson"], ExerciseResult.from_dict(d["result"]))
        else:
            event = cls(**d)
    except Exception as exc:  # anything malformed, however it fails
        raise BadEvent(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(event.lesson, int) or isinstance(event.lesson, bool):
        raise BadEvent(f"lesson is not a whole number: {event.lesson!r}")
    return event


def sign(key: str, seq: int, line: str) -> str:
    """``line`` (one encoded event) as sent: prefixed with its MAC, which binds
    it to its place ``seq`` in the stream. Code that writes to the channel
    without the key cannot make a line the parent accepts."""
    return f"{_mac(key, seq, line.encode())} {line}"


def verify(key: str, seq: int, signed: bytes) -> bytes | None:
    """The event line inside ``signed`` if its MAC is right for place ``seq``, else None."""
    mac, _, line = signed.partition(b" ")
    return line if hmac.compare_digest(mac, _mac(key, seq, line).encode()) else None


def _mac(key: str, seq: int, line: bytes) -> str:
    return hmac.new(key.encode(), b"%d\n" % seq + line, hashlib.sha256).hexdigest()


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
