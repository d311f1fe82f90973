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

The events themselves are :mod:`grader.events` (below the engine, which emits
them); this module is their codec on the wire and the request's. It does not
import jax.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import asdict, dataclass

from grader.events import (
    EVENTS,
    REPORT,
    STUCK_HINT,
    Event,
    ExampleStarted,
    ExerciseGraded,
    GraderFailed,
    ImportStarted,
    LessonFinished,
    LessonStarted,
    Rejected,
    Served,
    unfinished,
)
from grader.results import ExerciseResult

__all__ = [  # the events are re-exported: this module is their codec
    "EVENTS",
    "REPORT",
    "STUCK_HINT",
    "Event",
    "ExampleStarted",
    "ExerciseGraded",
    "GraderFailed",
    "ImportStarted",
    "LessonFinished",
    "LessonStarted",
    "Rejected",
    "Served",
    "unfinished",
    "BadEvent",
    "LessonJob",
    "Request",
    "decode_event",
    "encode_event",
    "sign",
    "verify",
    "DEFAULT_TIMEOUT",
]

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
    next_seed: int | None = None
    """The seed the next grade like this one will draw from (a fresh one, chosen by
    ``course`` now): a serving worker draws that grade's examples while it waits for
    it (None: nothing to draw ahead)."""

    def encode(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def decode(cls, text: str | bytes) -> Request:
        d = json.loads(text)
        lessons = tuple(
            LessonJob(j["lesson"], j["module"], tuple(j["exercises"])) for j in d.pop("lessons")
        )
        hidden = tuple(str(h) for h in d.pop("hidden", ()))
        return cls(lessons=lessons, hidden=hidden, **d)


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
        cls = EVENTS[d.pop("type")]
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
