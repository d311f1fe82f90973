"""A class's results as files other tools read: a CSV gradebook, Gradescope
``results.json``, JUnit XML. Plain data in, text out; no jax, no grading.

Formats (docs/classroom.md says more):

- ``summary.csv``: one row per submission: ``submission, score, max_score,
  bonus``, then one column per exercise (``2.ring_all_gather``) holding its
  status (``passed``, ``failed``, ``error``, ``timeout``, ``not started``,
  ``not submitted``).
- Gradescope ``results.json``: ``score``, ``max_score``, ``execution_time``,
  ``output`` and ``tests``, each with ``name``, ``number``, ``score``,
  ``max_score``, ``status`` (``passed``/``failed``), ``output`` and
  ``visibility``. A bonus exercise has ``max_score`` 0, so its points come on
  top (Gradescope allows a score above the maximum).
- JUnit XML: one ``testsuite`` per lesson, one ``testcase`` per exercise; a
  failed or not-started exercise has a ``failure``, an error or a timeout an
  ``error``, a lesson file that was not handed in ``skipped``.
"""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

NOT_SUBMITTED = "not submitted"
"""Status of every exercise of a lesson whose file the submission lacks."""
FAILURES = ("failed", "not started")
"""Statuses that are the student's wrong or missing answer (JUnit ``failure``)."""
ERRORS = ("error", "timeout")
"""Statuses where the code crashed or never finished (JUnit ``error``)."""


@dataclass
class Row:
    """One exercise of one submission, graded and scored."""

    lesson: int
    module: str
    exercise: str
    status: str
    score: int
    max_score: int
    """Its points; 0 for a bonus exercise (whose points come on top)."""
    output: str = ""
    """What the student reads: the failing check, the example, the re-run command, a hint."""
    duration: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.lesson}.{self.exercise}"

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Submission:
    """Every graded exercise of one student's folder."""

    name: str
    rows: list[Row] = field(default_factory=list)
    duration: float = 0.0
    sandbox: str = ""
    """``on``: its code ran in the OS sandbox; ``off: <why>``."""

    @property
    def score(self) -> int:
        return sum(r.score for r in self.rows)

    @property
    def max_score(self) -> int:
        return sum(r.max_score for r in self.rows)

    @property
    def bonus(self) -> int:
        return sum(r.score for r in self.rows if r.max_score == 0)


def summary_csv(submissions: list[Submission]) -> str:
    """submission × exercise: totals, then each exercise's status."""
    names = list(dict.fromkeys(r.name for s in submissions for r in s.rows))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "score", "max_score", "bonus", *names])
    for s in submissions:
        status = {r.name: r.status for r in s.rows}
        writer.writerow(
            [s.name, s.score, s.max_score, s.bonus, *(status.get(n, "") for n in names)]
        )
    return out.getvalue()


def gradescope(submission: Submission) -> dict[str, Any]:
    """Gradescope's autograder ``results.json`` for one submission."""
    return {
        "score": submission.score,
        "max_score": submission.max_score,
        "execution_time": round(submission.duration, 3),
        "output": f"{submission.score}/{submission.max_score} points"
        + (f" + {submission.bonus} bonus" if submission.bonus else "")
        + (f" · sandbox: {submission.sandbox}" if submission.sandbox else ""),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": r.name + (" (bonus)" if r.max_score == 0 else ""),
                "number": r.name,
                "score": r.score,
                "max_score": r.max_score,
                "status": "passed" if r.passed else "failed",
                "output": r.output or r.status,
                "visibility": "visible",
            }
            for r in submission.rows
        ],
    }


def junit_xml(submission: Submission) -> str:
    """JUnit XML: a ``testsuites`` of one ``testsuite`` per lesson."""
    root = ET.Element("testsuites", name=submission.name)
    for module in dict.fromkeys(r.module for r in submission.rows):
        rows = [r for r in submission.rows if r.module == module]
        suite = ET.SubElement(
            root, "testsuite", name=f"{submission.name}.{module}", tests=str(len(rows)),
            failures=str(sum(r.status in FAILURES for r in rows)),
            errors=str(sum(r.status in ERRORS for r in rows)),
            skipped=str(sum(r.status == NOT_SUBMITTED for r in rows)),
            time=f"{sum(r.duration for r in rows):.3f}",
        )  # fmt: skip
        for r in rows:
            case = ET.SubElement(
                suite, "testcase", name=r.exercise, classname=f"{submission.name}.{module}",
                time=f"{r.duration:.3f}",
            )  # fmt: skip
            kind = (
                "failure" if r.status in FAILURES
                else "error" if r.status in ERRORS
                else "skipped" if r.status == NOT_SUBMITTED
                else None
            )  # fmt: skip
            if kind:
                attrs = {"message": (r.output or r.status).splitlines()[0]}
                if kind != "skipped":
                    attrs["type"] = r.status
                ET.SubElement(case, kind, attrs).text = r.output or r.status
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
