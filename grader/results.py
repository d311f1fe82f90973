"""Results of grading: frozen dataclasses that travel as JSON.

A result is built once, with every field known, and never edited: where a
new value is needed (a hint added, an error message extended) a new result
is made with :func:`dataclasses.replace`. Sequences are tuples (a list given
is turned into one).

The grading worker sends them to the ``course`` process with ``to_dict``;
``from_dict`` rebuilds them there. A result holds statuses and evidence
only: points, bonus and titles belong to the course registry, and
``course.scoring`` turns a result into its scorecard and every export; the
grader never builds a scorecard. Nothing here imports jax or rich.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.evidence import Evidence

JSON_VERSION = 1
"""Version of the ``course grade --json`` document (``docs/grade-json.md``)."""


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_STARTED = "not started"
    ERROR = "error"
    """The student's code raised, or its module would not import."""
    TIMEOUT = "timeout"
    FAULT = "grader fault"
    """The grader's own code failed on this exercise: reported, never recorded
    as the student's attempt."""


def _evidence() -> Any:
    """:mod:`grader.evidence`, imported when a result is written or read
    (``course status`` does neither, and its two dozen dataclasses take ~8 ms)."""
    from grader import evidence

    return evidence


def _tuples(obj: Any, *names: str) -> None:
    """Turn the sequence fields ``names`` of a frozen dataclass into tuples."""
    for name in names:
        value = getattr(obj, name)
        if not isinstance(value, tuple):
            object.__setattr__(obj, name, tuple(value))


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check over all examples of one exercise."""

    name: str
    """Short check name: ``values``, ``sharding``, ``collectives``, ``bytes``, ``steps``, ``memory`` …"""
    passed: bool
    message: str
    """One sentence a student can act on."""
    example: str | None = None
    """The failing example, in the ``key=value`` form ``--example`` accepts."""
    evidence: tuple[Evidence, ...] = ()
    """What the check measured, for the report (see :mod:`grader.evidence`)."""
    hint: str | None = None
    """The likely mistake behind a failure, when the evidence names one."""
    duration: float = 0.0

    def __post_init__(self) -> None:
        _tuples(self, "evidence")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = [_evidence().to_dict(e) for e in self.evidence]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        d = dict(d)
        d["evidence"] = [_evidence().from_dict(e) for e in d.get("evidence", [])]
        return cls(**d)


@dataclass(frozen=True)
class ExerciseResult:
    """One exercise graded: its status, its checks, and what to do next."""

    lesson: int
    exercise: str
    status: Status
    checks: tuple[CheckResult, ...] = ()
    examples_run: int = 0
    example: str | None = None
    """The failing example (``key=value`` form), if one failed."""
    error: str | None = None
    """A student exception, formatted with the student's own frames only."""
    hint: str | None = None
    """The likeliest mistake, diagnosed from the evidence."""
    duration: float = 0.0
    explanation: tuple[Evidence, ...] = ()
    """Report material that is not a verdict: the comparison with XLA, the step
    timeline … (see :mod:`grader.evidence`)."""
    about: str | None = None
    """What the failing example is for: a fixed example's sentence, or a drawn one's
    features (:func:`grader.spec.about`)."""
    narrowed: str | None = None
    """Why this run does not count, when it ran fewer examples than a grade needs
    (``--example``, ``--max-examples``, too few devices); None for a full run."""

    def __post_init__(self) -> None:
        _tuples(self, "checks", "explanation")

    @property
    def passed(self) -> bool:
        """The grader's verdict on the examples run; what it is worth is the
        registry's to say (a narrowed run never counts)."""
        return self.status == Status.PASSED

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = str(self.status)
        d["checks"] = [c.to_dict() for c in self.checks]
        d["explanation"] = [_evidence().to_dict(e) for e in self.explanation]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExerciseResult:
        d = dict(d)
        d["status"] = Status(d["status"])
        d["checks"] = [CheckResult.from_dict(c) for c in d.get("checks", [])]
        d["explanation"] = [_evidence().from_dict(e) for e in d.get("explanation", [])]
        return cls(**d)


@dataclass(frozen=True)
class LessonResult:
    """Every exercise of one lesson graded against one directory."""

    lesson: int
    source: str
    """The directory graded (the student's exercises, solutions/, or another)."""
    exercises: tuple[ExerciseResult, ...] = ()
    devices: str = ""
    seed: int = 0
    duration: float = 0.0
    sandbox: str = ""
    """``on``: the student's code ran in the OS sandbox; ``off: <why>`` (``""``: not said)."""

    def __post_init__(self) -> None:
        _tuples(self, "exercises")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exercises"] = [e.to_dict() for e in self.exercises]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LessonResult:
        d = dict(d)
        d["exercises"] = [ExerciseResult.from_dict(e) for e in d.get("exercises", [])]
        return cls(**d)
