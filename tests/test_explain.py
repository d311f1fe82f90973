"""Report material beyond verdicts: the XLA side-by-side (lesson 4), the step
timeline (lesson 5), and the structural facts they are built from."""

from __future__ import annotations

import dataclasses

import pytest

from grader import engine, hlo
from grader.results import ExerciseResult, LessonResult, Status
from tests.test_report import lines, render


def test_lesson4_compares_every_exercise_with_xlas_partitioner(root):
    result = engine.grade_lesson(4, "l04_sharded_matmul", root / "solutions", max_examples=0)
    assert result.passed
    for e in result.exercises:
        c = e.explanation["comparison"]
        assert c["yours"] == c["optimum"], e.exercise  # the reference is optimal
        assert isinstance(c["xla"], int) and c["xla_kinds"] is not None
    local = result.exercises[0].explanation["comparison"]
    assert local["yours"] == local["xla"] == 0
    # the most telling example is shown: one that needs communication
    assert all(e.explanation["comparison"]["optimum"] > 0 for e in result.exercises[1:])


def test_comparison_table_says_who_moves_less():
    def exercise(name, yours, xla):
        comparison = {"mesh": "4", "shapes": "16×32×24", "yours": yours, "optimum": 1152,
                      "xla": xla, "yours_kinds": ["reduce-scatter"], "xla_kinds": ["all-reduce"]}  # fmt: skip
        return ExerciseResult(4, name, Status.PASSED, explanation={"comparison": comparison})

    lesson = LessonResult(4, "", "solutions")
    lesson.exercises = [exercise("ahead", 1152, 2304), exercise("level", 2304, 2304)]
    from grader.report import ComparisonTable

    text = render(ComparisonTable(lesson.exercises), width=120)
    assert "XLA's own partitioner" in text
    ahead = next(line for line in lines(text) if line.startswith("ahead"))
    assert "1,152 B RS" in ahead and "2,304 B AR" in ahead and "2× fewer" in ahead
    assert "= XLA" in next(line for line in lines(text) if line.startswith("level"))


def test_lesson5_timeline_follows_the_measured_ring_direction(root):
    result = engine.grade_lesson(
        5, "l05_collective_matmul", root / "solutions", only=["allgather_matmul"], max_examples=0
    )
    (e,) = result.exercises
    t = e.explanation["timeline"]
    assert t["n"] == 4  # the N = 4 example is preferred for the picture
    # the reference sends to i − 1, so after s steps device i holds W block (i + s) mod 4
    for s, row in enumerate(t["rows"]):
        for i, cell in enumerate(row[1:]):
            assert cell.startswith(f"×W{(i + s) % 4}"), (s, i, cell)
            assert ("→" in cell) == (s < 3)
    assert len(t["rows"]) == 4  # N products, N − 1 sends


def test_timeline_is_drawn_for_passed_and_failed_exercises(root):
    from grader.report import ExercisePanel, LessonReport

    result = engine.grade_lesson(
        5, "l05_collective_matmul", root / "solutions", only=["allgather_matmul"], max_examples=0
    )
    assert "step timeline of your program" in render(LessonReport(result))
    failed = dataclasses.replace(result.exercises[0], status=Status.FAILED)
    assert "×W" in render(ExercisePanel(failed))


def test_a_failing_explanation_never_changes_the_verdict(root, monkeypatch):
    spec = engine.load_spec("l04_sharded_matmul")
    broken = dataclasses.replace(
        spec.exercise("matmul_local"), explain=lambda trials: 1 / 0, max_examples=0
    )
    from grader.loader import load_module

    fn = load_module(root / "solutions", "l04_sharded_matmul").matmul_local
    result = engine.grade_exercise(4, broken, fn, engine.context(), directory=root)
    assert result.status == Status.PASSED
    assert "ZeroDivisionError" in result.explanation["error"]


def test_results_round_trip_with_their_explanation():
    e = ExerciseResult(5, "x", Status.PASSED, explanation={"timeline": {"n": 2, "rows": []}})
    assert ExerciseResult.from_dict(e.to_dict()) == e
    old = e.to_dict()
    del old["explanation"]  # results recorded before explanations existed still load
    assert ExerciseResult.from_dict(old).explanation == {}


@pytest.mark.parametrize(
    "attrs,moves",
    [
        ("replica_groups={{0}}", False),
        ("replica_groups={{0,1}}", True),
    ],
)
def test_a_collective_over_one_device_moves_nothing(attrs, moves):
    text = f"""HloModule m

ENTRY %main (p: f32[4]) -> f32[4] {{
  %p = f32[4]{{0}} parameter(0)
  ROOT %ar = f32[4]{{0}} all-reduce(f32[4]{{0}} %p), {attrs}, to_apply=%add
}}
"""
    summary = hlo.summarize(text, num_devices=2)
    assert (summary.kinds() == {"all-reduce"}) is moves
