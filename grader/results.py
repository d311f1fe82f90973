"""Results of grading: plain dataclasses that travel as JSON.

The grading worker sends them to the ``course`` process with ``to_dict``;
``from_dict`` rebuilds them there. A result holds statuses and evidence
only: points, bonus and titles belong to the course registry, which scores a
result into a :class:`Scorecard` (``course.registry.Lesson.scorecard``).
Nothing here imports jax or rich.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from grader import evidence as ev
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


@dataclass
class CheckResult:
    """The verdict of one check over all examples of one exercise."""

    name: str
    """Short check name: ``values``, ``sharding``, ``collectives``, ``bytes``, ``steps``, ``memory`` …"""
    passed: bool
    message: str
    """One sentence a student can act on."""
    example: str | None = None
    """The failing example, in the ``key=value`` form ``--example`` accepts."""
    evidence: list[Evidence] = field(default_factory=list)
    """What the check measured, for the report (see :mod:`grader.evidence`)."""
    hint: str | None = None
    """The likely mistake behind a failure, when the evidence names one."""
    duration: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evidence"] = [ev.to_dict(e) for e in self.evidence]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        d = dict(d)
        d["evidence"] = [ev.from_dict(e) for e in d.get("evidence", [])]
        return cls(**d)


@dataclass
class ExerciseResult:
    """One exercise graded: its status, its checks, and what to do next."""

    lesson: int
    exercise: str
    status: Status
    checks: list[CheckResult] = field(default_factory=list)
    examples_run: int = 0
    example: str | None = None
    """The failing example (``key=value`` form), if one failed."""
    error: str | None = None
    """A student exception, formatted with the student's own frames only."""
    hint: str | None = None
    """The likeliest mistake, diagnosed from the evidence."""
    duration: float = 0.0
    explanation: list[Evidence] = field(default_factory=list)
    """Report material that is not a verdict: the comparison with XLA, the step
    timeline … (see :mod:`grader.evidence`)."""
    narrowed: str | None = None
    """Why this run does not count, when it ran fewer examples than a grade needs
    (``--example``, ``--max-examples``, too few devices); None for a full run."""

    @property
    def passed(self) -> bool:
        """The grader's verdict on the examples run; what it is worth is the
        registry's to say (a narrowed run never counts)."""
        return self.status == Status.PASSED

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = str(self.status)
        d["checks"] = [c.to_dict() for c in self.checks]
        d["explanation"] = [ev.to_dict(e) for e in self.explanation]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExerciseResult:
        d = dict(d)
        d["status"] = Status(d["status"])
        d["checks"] = [CheckResult.from_dict(c) for c in d.get("checks", [])]
        d["explanation"] = [ev.from_dict(e) for e in d.get("explanation", [])]
        return cls(**d)


@dataclass
class LessonResult:
    """Every exercise of one lesson graded against one directory."""

    lesson: int
    source: str
    """The directory graded (the student's exercises, solutions/, or another)."""
    exercises: list[ExerciseResult] = field(default_factory=list)
    devices: str = ""
    seed: int = 0
    duration: float = 0.0
    sandbox: str = ""
    """``on``: the student's code ran in the OS sandbox; ``off: <why>`` (``""``: not said)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exercises"] = [e.to_dict() for e in self.exercises]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LessonResult:
        d = dict(d)
        d["exercises"] = [ExerciseResult.from_dict(e) for e in d.get("exercises", [])]
        return cls(**d)


# ------------------------------------------------------------ scores


@dataclass(frozen=True)
class ExerciseScore:
    """What one exercise's status is worth, by the registry's rule."""

    points: int
    bonus: bool
    """Extra credit: its points come on top, and the lesson passes without it."""
    passed: bool
    score: int
    counted: bool = True
    """False when the run was narrowed (:attr:`ExerciseResult.narrowed`): it
    neither passes nor scores, whatever its status."""


@dataclass(frozen=True)
class Scorecard:
    """A lesson's statuses scored by the course registry
    (``course.registry.Lesson.scorecard``); the grader never builds one."""

    lesson: int
    title: str
    exercises: dict[str, ExerciseScore]
    """The exercises scored, by name."""
    score: int
    """Points earned on the required exercises."""
    bonus_score: int
    possible: int
    """Points of the required exercises; bonus points come on top of these."""
    passed: bool
    """Every required exercise scored has passed, on its full example set."""

    @property
    def counted(self) -> bool:
        """False when any exercise scored was graded on a narrowed run."""
        return all(s.counted for s in self.exercises.values())


def to_json(results: list[LessonResult], cards: list[Scorecard]) -> dict[str, Any]:
    """The ``course grade --json`` document: results with their scores (``docs/grade-json.md``)."""
    lessons = []
    for result, card in zip(results, cards, strict=True):
        d = result.to_dict()
        for e in d["exercises"]:
            s = card.exercises[e["exercise"]]
            e.update(points=s.points, bonus=s.bonus, score=s.score, counted=s.counted)
        d.update(title=card.title, score=card.score, bonus_score=card.bonus_score,
                 possible=card.possible, passed=card.passed)  # fmt: skip
        lessons.append(d)
    return {"version": JSON_VERSION, "lessons": lessons}
