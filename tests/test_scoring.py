"""course/scoring.py: one frozen verdict, and every export read from it."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from rich.console import Console

from course import scoring
from course.registry import Exercise, Lesson
from grader import evidence as ev
from grader.results import CheckResult, ExerciseResult, LessonResult, Status

DOCS = Path(__file__).parent.parent / "docs"
FORMATS = Path(__file__).parent / "data" / "formats"
LESSON = Lesson(
    7, "demo", "A demo lesson", "", ("Start with the first function.",),
    (Exercise("ok", 2, "", hints=("ok: add one.",)), Exercise("wrong", 3, ""),
     Exercise("fresh", 1, "", hints=("fresh: return the input unchanged.", "fresh: then more.")),
     Exercise("broke", 1, ""), Exercise("extra", 2, "", bonus=True)),
)  # fmt: skip


def rerun(er: ExerciseResult) -> str:
    return f"course grade {er.lesson}.{er.exercise} --example {er.example}"


def graded() -> LessonResult:
    sent = ev.BytesExpectation(expected=768, actual=1536)
    exercises = [
        ExerciseResult(7, "ok", Status.PASSED, examples_run=6, duration=0.5, checks=[
            CheckResult("bytes", True, "768 bytes sent per device", evidence=[
                ev.BytesExpectation(768, 768)])]),
        ExerciseResult(7, "wrong", Status.FAILED, examples_run=2, example="n=4", duration=0.25,
                       hint="one chunk too many", checks=[
            CheckResult("bytes", False, "1,536 bytes sent per device; the optimum is 768",
                        example="n=4", evidence=[sent])]),
        ExerciseResult(7, "fresh", Status.NOT_STARTED, examples_run=1, example="n=1"),
        ExerciseResult(7, "broke", Status.ERROR, examples_run=1, example="n=2",
                       error="ZeroDivisionError: division by zero"),
        ExerciseResult(7, "extra", Status.PASSED, examples_run=6),
    ]  # fmt: skip
    return LessonResult(7, "/ws/exercises", exercises, "8 CPU devices", 3, 1.5)


def test_results_cannot_be_changed_once_built():
    result = graded()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.exercises[0].status = Status.FAILED  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.exercises[1].checks[0].message = "fine"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.duration = 0.0  # type: ignore[misc]
    with pytest.raises(AttributeError):  # sequences are tuples: nothing to append to
        result.exercises[0].checks.append(result.exercises[1].checks[0])  # type: ignore[attr-defined]
    assert isinstance(result.exercises, tuple) and isinstance(result.exercises[1].checks, tuple)
    again = dataclasses.replace(result.exercises[1], hint="another")
    assert again.hint == "another" and result.exercises[1].hint == "one chunk too many"


def test_the_verdict_adds_the_stubs_own_hint_and_scores_it():
    result = graded()
    v = scoring.verdict([LESSON], [result])
    (shown,) = v.results
    fresh = next(e for e in shown.exercises if e.exercise == "fresh")
    assert fresh.hint == "fresh: return the input unchanged."  # the hint that names it
    assert next(e for e in result.exercises if e.exercise == "fresh").hint is None  # untouched
    (card,) = v.cards
    assert (card.score, card.possible, card.bonus_score, card.passed) == (2, 7, 2, False)
    assert not v.passed


def test_every_export_says_the_same_of_one_verdict():
    v = scoring.verdict([LESSON], [graded()])
    (result,) = v.results
    # --json
    doc = json.loads(json.dumps(v.to_json()))
    jsonschema.validate(doc, json.loads((DOCS / "grade-json.schema.json").read_text()))
    (lesson,) = doc["lessons"]
    by_name = {e["exercise"]: e for e in lesson["exercises"]}
    assert {n: (e["status"], e["score"]) for n, e in by_name.items()} == {
        "ok": ("passed", 2), "wrong": ("failed", 0), "fresh": ("not started", 0),
        "broke": ("error", 0), "extra": ("passed", 2),
    }  # fmt: skip
    assert by_name["fresh"]["hint"] == "fresh: return the input unchanged."
    # the terminal
    out = io.StringIO()
    for renderable in scoring.terminal(v, rerun):
        Console(file=out, width=120).print(renderable)
    text = out.getvalue()
    assert "Lesson 7 · A demo lesson" in text and "Score 2/7 + 2 bonus — not yet" in text
    assert "course grade 7.wrong --example n=4" in text
    # the progress rows
    rows = {e.exercise: scoring.progress_rows(e, card_of(v, e)) for e in result.exercises}
    assert rows["ok"].result == (7, "ok", "passed", 2, 2, 0.5, None)
    assert rows["wrong"].result[2:5] == ("failed", 0, 3)
    assert rows["wrong"].checks == (
        ("bytes", 0, "1,536 bytes sent per device; the optimum is 768", 0.0),
    )
    assert rows["ok"].figures == (scoring.Figure("bytes", True, "bytes", 768, 768),)
    assert rows["wrong"].figures == (scoring.Figure("bytes", False, "bytes", 1536, 768),)
    # a class's files
    sub = scoring.submission("ann", [LESSON], {7: result}, 2.0, rerun)
    assert [r.status for r in sub.rows] == [e.status for e in result.exercises]
    table = list(csv.DictReader(io.StringIO(scoring.summary_csv([sub]))))
    assert table == [{
        "submission": "ann", "score": "4", "max_score": "7", "bonus": "2", "7.ok": "passed",
        "7.wrong": "failed", "7.fresh": "not started", "7.broke": "error", "7.extra": "passed",
        "sandbox": "",  # not said: no process ran this one's code
    }]  # fmt: skip
    gs = scoring.gradescope(sub)
    jsonschema.validate(gs, json.loads((FORMATS / "gradescope-results.schema.json").read_text()))
    assert (gs["score"], gs["max_score"]) == (4, 7)
    wrong = next(t for t in gs["tests"] if t["number"] == "7.wrong")
    assert wrong["status"] == "failed" and "hint: one chunk too many" in wrong["output"]
    assert "re-run it: course grade 7.wrong --example n=4" in wrong["output"]
    xml = scoring.junit_xml(sub)
    xmlschema.XMLSchema(FORMATS / "junit.xsd").validate(xml)
    cases = {c.get("name"): c for c in ET.fromstring(xml.split("\n", 1)[1]).iter("testcase")}
    assert [k for k in ("failure", "error") if cases["wrong"].find(k) is not None] == ["failure"]
    assert cases["fresh"].find("failure") is not None
    assert cases["broke"].find("error").get("type") == "error"
    assert list(cases["ok"]) == []


def card_of(v: scoring.Verdict, er: ExerciseResult) -> scoring.ExerciseScore:
    (card,) = v.cards
    return card.exercises[er.exercise]


def test_a_lesson_not_handed_in_is_not_submitted_in_every_file():
    sub = scoring.submission("bo", [LESSON], {}, 0.1, rerun)
    assert {r.status for r in sub.rows} == {None}
    assert {r.label for r in sub.rows} == {scoring.NOT_SUBMITTED}
    assert "not submitted" in scoring.summary_csv([sub])
    suite = ET.fromstring(scoring.junit_xml(sub).split("\n", 1)[1])[0]
    assert suite.get("skipped") == str(len(LESSON.exercises))


def test_a_grader_fault_is_a_junit_error_not_a_pass():
    fault = ExerciseResult(7, "ok", Status.FAULT, error="internal grader error: boom")
    sub = scoring.submission("cy", [LESSON], {7: LessonResult(7, "/x", [fault])}, 0.1, rerun)
    suite = ET.fromstring(scoring.junit_xml(sub).split("\n", 1)[1])[0]
    (ok,) = [c for c in suite if c.get("name") == "ok"]
    assert ok.find("error").get("type") == "grader fault"


def test_figures_come_from_typed_evidence_only():
    said = CheckResult("bytes", True, "1,024 bytes sent per device = the ring optimum")
    assert scoring.figures(said) == []  # a message is no measurement
    unknown = CheckResult("bytes", False, "bytes unknown", evidence=[ev.BytesExpectation(8, None)])
    assert scoring.figures(unknown) == []
    step = CheckResult("bytes", True, "bytes per kind as the reference's", evidence=[
        ev.KindBytes("mesh=4x2", [ev.KindBytesRow("all-gather", 10, 100, 100),
                                  ev.KindBytesRow("all-reduce", None, 24, 24)])])  # fmt: skip
    assert scoring.figures(step) == [scoring.Figure("bytes", True, "kind_bytes", 124, 124)]


def test_a_stub_gets_its_own_first_hint_or_none():
    """A stub is shown the first hint course.toml declares for its exercise: never the
    lesson's general hint, another exercise's, or a hint that merely names it (what the
    registry used to be searched for)."""
    lesson = Lesson(1, "meshes", "Meshes", "", ("place and shard_shape: a general hint.",), (
        Exercise("shard_shape", 1, "", hints=("Divide each dim.", "Then check %.")),
        Exercise("place", 1, "", hints=("One line: jax.device_put.",)),
        Exercise("unhinted", 1, ""),
        Exercise("bytes_per_device", 1, "", hints=("unhinted is not this one.",)),
    ))  # fmt: skip
    got = {e.name: scoring.exercise_hint(lesson, e.name) for e in lesson.exercises}
    assert got == {
        "shard_shape": "Divide each dim.",
        "place": "One line: jax.device_put.",
        "unhinted": None,
        "bytes_per_device": "unhinted is not this one.",
    }
    assert scoring.exercise_hint(lesson, "no_such_exercise") is None
    # the real course: every stub is shown its exercise's first declared hint
    from course import registry

    for real in registry.load().lessons:
        for e in real.exercises:
            assert scoring.exercise_hint(real, e.name) == e.hints[0]
