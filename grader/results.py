"""Results of grading: plain dataclasses that travel as JSON.

The grading worker sends them to the ``course`` process with ``to_dict``;
``from_dict`` rebuilds them there. Nothing here imports jax or rich.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_STARTED = "not started"
    ERROR = "error"
    """The student's code raised, or its module would not import."""
    TIMEOUT = "timeout"


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
    details: dict[str, Any] = field(default_factory=dict)
    """Evidence for the report: errors, device map, expected/actual collectives …"""
    hint: str | None = None
    """The likely mistake behind a failure, when the evidence names one."""
    duration: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        return cls(**d)


@dataclass
class ExerciseResult:
    """One exercise graded: its status, its checks, and what to do next."""

    lesson: int
    exercise: str
    status: Status
    points: int = 1
    checks: list[CheckResult] = field(default_factory=list)
    examples_run: int = 0
    example: str | None = None
    """The failing example (``key=value`` form), if one failed."""
    error: str | None = None
    """A student exception, formatted with the student's own frames only."""
    hint: str | None = None
    """The likeliest mistake, diagnosed from the evidence."""
    duration: float = 0.0
    bonus: bool = False
    """Extra credit: the lesson passes without it, and its points come on top."""
    explanation: dict[str, Any] = field(default_factory=dict)
    """Report material that is not a verdict: ``comparison`` (bytes against the
    optimum and XLA's partitioner), ``timeline`` (ring steps), ``example``."""

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def score(self) -> int:
        return self.points if self.passed else 0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = str(self.status)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExerciseResult:
        d = dict(d)
        d["status"] = Status(d["status"])
        d["checks"] = [CheckResult.from_dict(c) for c in d.get("checks", [])]
        return cls(**d)


@dataclass
class LessonResult:
    """Every exercise of one lesson graded against one directory."""

    lesson: int
    title: str
    source: str
    """The directory graded (the student's exercises, solutions/, or another)."""
    exercises: list[ExerciseResult] = field(default_factory=list)
    devices: str = ""
    seed: int = 0
    duration: float = 0.0
    interrupted: bool = False

    @property
    def score(self) -> int:
        """Points earned on the required exercises."""
        return sum(e.score for e in self.exercises if not e.bonus)

    @property
    def bonus_score(self) -> int:
        return sum(e.score for e in self.exercises if e.bonus)

    @property
    def possible(self) -> int:
        """Points of the required exercises; bonus points come on top of these."""
        return sum(e.points for e in self.exercises if not e.bonus)

    @property
    def passed(self) -> bool:
        required = [e for e in self.exercises if not e.bonus]
        return bool(required) and all(e.passed for e in required)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exercises"] = [e.to_dict() for e in self.exercises]
        d.update(score=self.score, bonus_score=self.bonus_score, possible=self.possible,
                 passed=self.passed)  # fmt: skip
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LessonResult:
        d = {k: v for k, v in d.items() if k not in ("score", "bonus_score", "possible", "passed")}
        d["exercises"] = [ExerciseResult.from_dict(e) for e in d.get("exercises", [])]
        return cls(**d)
