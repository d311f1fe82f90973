"""One frozen verdict → its scorecard and every export.

The grader hands back frozen results (:mod:`grader.results`): statuses and
evidence, nothing about points. This module is the one place they are scored
by the course registry (:class:`Scorecard`, by :func:`score`'s pass rule) and
the one place they become what leaves the course:

- the terminal report (:func:`terminal`, rendered by ``grader.report``),
- the ``course grade --json`` document (:func:`to_json`, ``docs/grade-json.md``),
- the rows the progress store writes (:func:`progress_rows`), with the figures
  it keeps as typed evidence (:func:`figures`), never read back from messages,
- a class's files (:func:`summary_csv`, :func:`gradescope`, :func:`junit_xml`,
  ``docs/classroom.md``): a CSV gradebook, Gradescope ``results.json``, JUnit XML.

Formats of the classroom files:

- ``summary.csv``: one row per submission: ``submission, score, max_score,
  bonus``, then one column per exercise (``2.ring_all_gather``) holding its
  status (``passed``, ``failed``, ``error``, ``timeout``, ``not started``,
  ``grader fault``, ``not submitted``).
- Gradescope ``results.json``: ``score``, ``max_score``, ``execution_time``,
  ``output`` and ``tests``, each with ``name``, ``number``, ``score``,
  ``max_score``, ``status`` (``passed``/``failed``), ``output`` and
  ``visibility``. A bonus exercise has ``max_score`` 0, so its points come on
  top (Gradescope allows a score above the maximum).
- JUnit XML: one ``testsuite`` per lesson, one ``testcase`` per exercise; a
  failed or not-started exercise has a ``failure``, an error, a timeout or a
  grader fault an ``error``, a lesson file that was not handed in ``skipped``.

No jax here (``course status``, ``list`` and ``hint`` import this module);
rich only inside :func:`terminal`.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from grader.results import JSON_VERSION, CheckResult, ExerciseResult, LessonResult, Status

if TYPE_CHECKING:
    from course.registry import Exercise, Lesson

Rerun = Callable[[ExerciseResult], str]
"""The command that re-runs the example an exercise failed on."""

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
    """A lesson's statuses scored by the course registry; the grader never builds one."""

    lesson: int
    title: str
    exercises: Mapping[str, ExerciseScore]
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

    @property
    def run_passed(self) -> bool:
        """What ``course grade``'s exit status follows (README, ``--help``): every required
        exercise graded passed — a bonus that did not pass leaves it 0, the report
        names it; a run that graded bonus exercises only passes when they all did."""
        required = [s for s in self.exercises.values() if not s.bonus]
        if required:
            return all(s.passed for s in required)
        return bool(self.exercises) and all(s.passed for s in self.exercises.values())


def score(exercise: Exercise, status: str | None, counted: bool = True) -> ExerciseScore:
    """The pass rule: an exercise passes when its (latest) status is "passed"
    on its full example set; a narrowed run (``counted=False``) never does."""
    passed = status == Status.PASSED and counted
    points = exercise.points
    return ExerciseScore(points, exercise.bonus, passed, points if passed else 0, counted)


def scorecard(
    lesson: Lesson,
    statuses: Mapping[str, str | None],
    graded: Iterable[str] | None = None,
    narrowed: Iterable[str] = (),
) -> Scorecard:
    """The one place a lesson is scored: each exercise by :func:`score`; the
    lesson passes when every required exercise does, bonus points on top.

    ``graded`` limits the card to the exercises one run graded (all by
    default); an exercise without a status has not passed. The exercises in
    ``narrowed`` ran fewer examples than a grade needs: they do not count.
    """
    names = set(graded) if graded is not None else {e.name for e in lesson.exercises}
    skip = set(narrowed)
    scores = {
        e.name: score(e, statuses.get(e.name), counted=e.name not in skip)
        for e in lesson.exercises
        if e.name in names
    }
    required = [s for s in scores.values() if not s.bonus]
    return Scorecard(
        lesson=lesson.number, title=lesson.title, exercises=scores,
        score=sum(s.score for s in required),
        bonus_score=sum(s.score for s in scores.values() if s.bonus),
        possible=sum(s.points for s in required),
        passed=bool(required) and all(s.passed for s in required),
    )  # fmt: skip


def score_result(lesson: Lesson, result: LessonResult) -> Scorecard:
    """The card of one grading run: the exercises it graded, by their status."""
    statuses = {e.exercise: e.status for e in result.exercises}
    narrowed = [e.exercise for e in result.exercises if e.narrowed]
    return scorecard(lesson, statuses, graded=statuses, narrowed=narrowed)


# ------------------------------------------------------------ the verdict


@dataclass(frozen=True)
class Verdict:
    """One grading run, final: each lesson's result as the course shows it
    (a stub not started carries its own hint, :func:`exercise_hint`), with its scorecard.
    Every export below reads this and nothing else."""

    results: tuple[LessonResult, ...]
    cards: tuple[Scorecard, ...]

    @property
    def passed(self) -> bool:
        """The exit status's rule, :attr:`Scorecard.run_passed`, over every lesson of the run."""
        return all(card.run_passed for card in self.cards)

    def to_json(self) -> dict[str, Any]:
        return to_json(self.results, self.cards)


def verdict(lessons: Sequence[Lesson], results: Sequence[LessonResult]) -> Verdict:
    """The results of one run, one per lesson of ``lessons`` (same order), scored."""
    shown = tuple(_with_hints(lesson, r) for lesson, r in zip(lessons, results, strict=True))
    return Verdict(shown, tuple(score_result(ls, r) for ls, r in zip(lessons, shown)))


def _with_hints(lesson: Lesson, result: LessonResult) -> LessonResult:
    """A stub not started gets its exercise's hint, :func:`exercise_hint` (the grader
    knows no hints), or none."""
    if not any(e.status == Status.NOT_STARTED for e in result.exercises):
        return result
    return replace(result, exercises=tuple(
        replace(e, hint=exercise_hint(lesson, e.exercise)) if e.status == Status.NOT_STARTED
        else e
        for e in result.exercises
    ))  # fmt: skip


def exercise_hint(lesson: Lesson, name: str) -> str | None:
    """The hint a stub not started is shown: the first of the hints course.toml declares
    for that exercise (:attr:`course.registry.Exercise.hints`), never a lesson's general
    hint or another exercise's; None when it has none or the lesson lists no such exercise."""
    try:
        hints = lesson.exercise(name).hints
    except KeyError:
        return None
    return hints[0] if hints else None


def to_json(results: Sequence[LessonResult], cards: Sequence[Scorecard]) -> dict[str, Any]:
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


def terminal(
    v: Verdict,
    rerun: Rerun | None = None,
    full_grade: Callable[[int], str] | None = None,
    ask_hint: Callable[[int], str] | None = None,
) -> list[Any]:
    """The report of every lesson, as rich renderables (``grader.report``); ``rerun``,
    ``full_grade`` and ``ask_hint`` say its commands as the reader types them (a
    notebook's calls)."""
    from grader.report import LessonReport

    return [
        LessonReport(result, card, rerun, full_grade, ask_hint)
        for result, card in zip(v.results, v.cards)
    ]


# ------------------------------------------------------------ progress


@dataclass(frozen=True)
class Figure:
    """One figure a check measured, as typed evidence carries it: what the
    progress store keeps (table ``figures``) for the completion screen."""

    check: str
    """The check's name."""
    passed: bool
    """Whether that check passed."""
    kind: str
    """The evidence type it comes from (``bytes``, ``kind_bytes``)."""
    measured: int
    """Bytes sent per device, measured in the compiled program."""
    expected: int | None
    """What the check held it against (the optimum, the reference's), when it says."""


def figures(check: CheckResult) -> list[Figure]:
    """The figures in a check's evidence: bytes measured, where they are known."""
    from grader import evidence as ev  # here: `course status` never needs it

    out = []
    for item in check.evidence:
        if isinstance(item, ev.BytesExpectation) and item.actual is not None:
            out.append(Figure(check.name, check.passed, item.type_name, item.actual, item.expected))
        elif isinstance(item, ev.KindBytes) and item.rows:
            measured = [row.measured for row in item.rows]
            if None not in measured:
                reference = [row.reference for row in item.rows]
                expected = None if None in reference else sum(reference)  # type: ignore[arg-type]
                out.append(Figure(check.name, check.passed, item.type_name,
                                  sum(measured), expected))  # type: ignore[arg-type]  # fmt: skip
    return out


@dataclass(frozen=True)
class ProgressRows:
    """One scored exercise as the progress store writes it (``course.progress``)."""

    result: tuple[int, str, str, int, int, float, str | None]
    """lesson, exercise, status, score, possible, duration, example."""
    checks: tuple[tuple[str, int, str, float], ...]
    """Per check: name, passed, message, duration."""
    figures: tuple[Figure, ...]


def progress_rows(result: ExerciseResult, scored: ExerciseScore) -> ProgressRows:
    return ProgressRows(
        (result.lesson, result.exercise, str(result.status), scored.score, scored.points,
         result.duration, result.example),
        tuple((c.name, int(c.passed), c.message, c.duration) for c in result.checks),
        tuple(f for c in result.checks for f in figures(c)),
    )  # fmt: skip


# ------------------------------------------------------------ a class's files

NOT_SUBMITTED = "not submitted"
"""What the files say of every exercise of a lesson whose file the submission lacks."""
FAILURES = (Status.FAILED, Status.NOT_STARTED)
"""Statuses that are the student's wrong or missing answer (JUnit ``failure``)."""
ERRORS = (Status.ERROR, Status.TIMEOUT, Status.FAULT)
"""Statuses where the code crashed, never finished, or could not be graded (JUnit ``error``)."""


@dataclass(frozen=True)
class Row:
    """One exercise of one submission, graded and scored."""

    lesson: int
    module: str
    exercise: str
    status: Status | None
    """None when the lesson's file was not handed in."""
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
        return self.status == Status.PASSED

    @property
    def label(self) -> str:
        """The status in words, ``not submitted`` for a missing file."""
        return NOT_SUBMITTED if self.status is None else str(self.status)


@dataclass(frozen=True)
class Submission:
    """Every graded exercise of one student's folder."""

    name: str
    rows: tuple[Row, ...] = ()
    duration: float = 0.0
    sandbox: str = ""
    """``on``: its code ran in the OS sandbox; ``off: <why>`` (``""``: not said)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))

    @property
    def score(self) -> int:
        return sum(r.score for r in self.rows)

    @property
    def max_score(self) -> int:
        return sum(r.max_score for r in self.rows)

    @property
    def bonus(self) -> int:
        return sum(r.score for r in self.rows if r.max_score == 0)


def submission(
    name: str,
    lessons: Sequence[Lesson],
    results: Mapping[int, LessonResult],
    duration: float,
    rerun: Rerun,
    sandbox: str = "",
) -> Submission:
    """One submission's rows: every exercise of ``lessons``, graded (``results``,
    by lesson number) or, where the lesson's file was missing, not submitted."""
    rows = []
    for lesson in lessons:
        result = results.get(lesson.number)
        graded = {er.exercise: er for er in result.exercises} if result else {}
        for ex in lesson.exercises:
            rows.append(row(lesson, ex, graded.get(ex.name), rerun))
    return Submission(name, tuple(rows), duration, sandbox)


def row(lesson: Lesson, ex: Exercise, er: ExerciseResult | None, rerun: Rerun) -> Row:
    """One exercise, scored by the registry's rule (a bonus one counts on top: max 0)."""
    scored = score(ex, er.status if er else None)
    max_score = 0 if scored.bonus else scored.points
    if er is None:
        return Row(lesson.number, lesson.module, ex.name, None, 0, max_score,
                   f"{lesson.module}.py was not handed in")  # fmt: skip
    return Row(lesson.number, lesson.module, ex.name, er.status, scored.score, max_score,
               feedback(er, rerun), er.duration)  # fmt: skip


def feedback(er: ExerciseResult, rerun: Rerun) -> str:
    """What a student reads about one exercise: a one-line :func:`headline` (JUnit's
    ``message``), then why in full, the example, what to run, a hint."""
    if er.passed:
        return f"passed on {er.examples_run} example(s)"
    lines = [headline(er)]
    lines += [f"{c.name}: {c.message}" for c in er.checks if not c.passed]
    return "\n".join(lines + feedback_tail(er, rerun, lines[0]))


def feedback_tail(er: ExerciseResult, rerun: Rerun, said_first: str) -> list[str]:
    """The end of a failed exercise's feedback: the error in full (less a first line
    ``said_first`` already says), the example, what to run, a hint."""
    lines: list[str] = []
    if er.error:
        said, *rest = er.error.splitlines() or [""]
        first = said.strip().rstrip(":")
        lines += rest if first and first in said_first else [said, *rest]
    if er.example:
        lines.append(f"example: {er.example}")
    if er.status != Status.NOT_STARTED:
        lines.append(f"re-run it: {rerun(er)}")
    if er.hint:
        lines.append(f"hint: {er.hint}")
    return lines


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")


HEADLINE = 160
"""Characters a headline keeps (a CI screen's one line); the output below it has the rest."""


def headline(er: ExerciseResult, *, whole: bool = False) -> str:
    """One sentence on an exercise that did not pass: what failed and why, in at most
    :data:`HEADLINE` characters (``whole``: uncut)."""
    line = _headline(er)
    if whole or len(line) <= HEADLINE:
        return line
    return line[: HEADLINE - 2].rsplit(" ", 1)[0] + " …"


def _headline(er: ExerciseResult) -> str:
    failed = [c for c in er.checks if not c.passed]
    lines = [line.strip() for line in (er.error or "").splitlines() if line.strip()]
    raised = next((line for line in lines if _EXCEPTION_LINE.match(line)), None)
    first = lines[0].rstrip(":") if lines else ""
    if er.status == Status.NOT_STARTED:
        return "Not started: it still raises NotImplementedError; replace the TODOs with your code."
    if failed:
        others = [c.name for c in failed[1:]]
        also = f" (also failed: {', '.join(others)})" if others else ""
        message = (failed[0].message.splitlines() or [""])[0]
        return f"Failed the {failed[0].name} check{also}: {message}"
    if er.status == Status.TIMEOUT:
        return f"Timed out: {first or 'it did not finish in time'}"
    if er.status == Status.FAULT:
        return "Not graded: the grader itself failed here, not your code; please report it."
    if er.status == Status.ERROR and lines:
        if lines[0].startswith("Traceback"):
            return f"Your code raised {raised or lines[-1]}"
        return first + (f": {raised}" if raised and raised != lines[0] else "")
    return f"Did not pass: {er.status}"


def summary_csv(submissions: Sequence[Submission]) -> str:
    """submission × exercise: totals, then each exercise's status, then whether its
    code ran in the OS sandbox (``sandbox``: ``on``, ``off: <why>``; the last column,
    so that the others keep their places)."""
    import csv

    names = list(dict.fromkeys(r.name for s in submissions for r in s.rows))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "score", "max_score", "bonus", *names, "sandbox"])
    for s in submissions:
        status = {r.name: r.label for r in s.rows}
        writer.writerow(
            [csv_cell(s.name), s.score, s.max_score, s.bonus, *(status.get(n, "") for n in names),
             csv_cell(s.sandbox)]
        )  # fmt: skip
    return out.getvalue()


def csv_cell(text: str) -> str:
    """A cell a spreadsheet shows as text: one that starts like a formula (``=``, ``+``,
    ``-``, ``@``, tab, return) gets a leading ``'`` (OWASP's advice on CSV injection)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@functools.cache
def _not_xml() -> re.Pattern[str]:
    """The characters XML 1.0 cannot hold; compiled when first needed (it takes
    longer than the rest of this module's import, which ``course status`` pays)."""
    return re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold (ESC and the other control
    characters, stray surrogates) written out as ``\\xNN``: a student's message may hold them."""
    return _not_xml().sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def gradescope(sub: Submission) -> dict[str, Any]:
    """Gradescope's autograder ``results.json`` for one submission."""
    return {
        "score": sub.score,
        "max_score": sub.max_score,
        "execution_time": round(sub.duration, 3),
        "output": f"{sub.score}/{sub.max_score} points"
        + (f" + {sub.bonus} bonus" if sub.bonus else "")
        + (f" · sandbox: {sub.sandbox}" if sub.sandbox else ""),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": r.name + (" (bonus)" if r.max_score == 0 else ""),
                "number": r.name,
                "score": r.score,
                "max_score": r.max_score,
                "status": "passed" if r.passed else "failed",
                "output": r.output or r.label,
                "visibility": "visible",
            }
            for r in sub.rows
        ],
    }


def junit_xml(sub: Submission) -> str:
    """JUnit XML: a ``testsuites`` of one ``testsuite`` per lesson; each suite's
    ``<properties>`` holds ``sandbox`` (``on``, ``off: <why>``) when it is known."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name=xml_text(sub.name))
    for module in dict.fromkeys(r.module for r in sub.rows):
        rows = [r for r in sub.rows if r.module == module]
        suite = ET.SubElement(
            root, "testsuite", name=xml_text(f"{sub.name}.{module}"), tests=str(len(rows)),
            failures=str(sum(r.status in FAILURES for r in rows)),
            errors=str(sum(r.status in ERRORS for r in rows)),
            skipped=str(sum(r.status is None for r in rows)),
            time=f"{sum(r.duration for r in rows):.3f}",
        )  # fmt: skip
        if sub.sandbox:  # before the testcases, as the Ant/Jenkins schema orders them
            properties = ET.SubElement(suite, "properties")
            ET.SubElement(properties, "property", name="sandbox", value=xml_text(sub.sandbox))
        for r in rows:
            case = ET.SubElement(
                suite, "testcase", name=r.exercise, classname=xml_text(f"{sub.name}.{module}"),
                time=f"{r.duration:.3f}",
            )  # fmt: skip
            kind = (
                "failure" if r.status in FAILURES
                else "error" if r.status in ERRORS
                else "skipped" if r.status is None
                else None
            )  # fmt: skip
            if kind:
                attrs = {"message": xml_text((r.output or r.label).splitlines()[0])}
                if kind != "skipped":
                    attrs["type"] = r.label
                ET.SubElement(case, kind, attrs).text = xml_text(r.output or r.label)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
