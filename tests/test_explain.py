"""Report material beyond verdicts: the XLA side-by-side (lesson 4), the step
timeline (lesson 5), and the structural facts they are built from."""

from __future__ import annotations

import dataclasses

import pytest

from course import registry
from grader import engine
from grader.evidence import Note, Timeline, XlaComparison
from grader.measure import hlo
from grader.results import ExerciseResult, LessonResult, Status
from grader.sandbox import backends
from tests.test_report import lines, render


def test_lesson4_compares_every_exercise_with_xlas_partitioner(root):
    result = backends.grade_lesson(4, "l04_sharded_matmul", root / "solutions", max_examples=0)
    assert all(e.passed for e in result.exercises)
    for e in result.exercises:
        (c,) = e.explanation
        assert isinstance(c, XlaComparison)
        assert c.yours == c.optimum, e.exercise  # the reference is optimal
        assert isinstance(c.xla, int) and c.xla_kinds is not None
    (local,) = result.exercises[0].explanation
    assert local.yours == local.xla == 0
    # the most telling example is shown: one that needs communication
    assert all(e.explanation[0].optimum > 0 for e in result.exercises[1:])


def test_comparison_table_says_who_moves_less():
    def exercise(name, yours, xla):
        comparison = XlaComparison(
            example="m=4", mesh="4", shapes="16×32×24", yours=yours, yours_kinds=["reduce-scatter"],
            optimum=1152, optimum_kinds=["reduce-scatter"], xla=xla, xla_kinds=["all-reduce"],
        )  # fmt: skip
        return ExerciseResult(4, name, Status.PASSED, explanation=[comparison])

    lesson = LessonResult(
        4, "solutions", [exercise("ahead", 1152, 2304), exercise("level", 2304, 2304)]
    )
    from rich.console import Group

    from grader.report import lesson_wide

    text = render(Group(*lesson_wide(lesson.exercises)), width=120)
    assert "XLA's own" in text and "same in/out shardings" in text
    ahead = next(line for line in lines(text) if line.startswith("ahead"))
    assert "1,152 B RS" in ahead and "2,304 B AR" in ahead and "2× less" in ahead
    assert "= XLA" in next(line for line in lines(text) if line.startswith("level"))


def test_lesson5_timeline_follows_the_measured_ring_direction(root):
    result = backends.grade_lesson(
        5, "l05_collective_matmul", root / "solutions", only=["allgather_matmul"], max_examples=0
    )
    (e,) = result.exercises
    (t,) = e.explanation
    assert isinstance(t, Timeline)
    assert t.n == 4  # the N = 4 example is preferred for the picture
    # the reference sends to i − 1, so after s steps device i holds W block (i + s) mod 4
    for s, row in enumerate(t.rows):
        for i, cell in enumerate(row[1:]):
            assert cell.startswith(f"×W{(i + s) % 4}"), (s, i, cell)
            assert ("→" in cell) == (s < 3)
    assert len(t.rows) == 4  # N products, N − 1 sends


def test_timeline_is_drawn_for_passed_and_failed_exercises(root):
    from grader.report import ExercisePanel, LessonReport

    result = backends.grade_lesson(
        5, "l05_collective_matmul", root / "solutions", only=["allgather_matmul"], max_examples=0
    )
    card = registry.load().lesson(5).score_result(result)
    shown = render(LessonReport(result, card))
    assert "the ring schedule" in shown and "not measured" in shown
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
    (note,) = result.explanation
    assert isinstance(note, Note) and "ZeroDivisionError" in note.text


def test_results_round_trip_with_their_explanation():
    timeline = Timeline(n=2, example="n=2", rows=[[0, "×W0 →1", "×W1 →0"]], note="")
    e = ExerciseResult(5, "x", Status.PASSED, explanation=[timeline])
    assert ExerciseResult.from_dict(e.to_dict()) == e
    old = e.to_dict()
    del old["explanation"]  # results recorded before explanations existed still load
    assert ExerciseResult.from_dict(old).explanation == ()


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


def test_a_bonus_exercise_is_extra_credit(root, tmp_path):
    """Lesson 5 passes without its bonus; the bonus points come on top."""
    lesson = registry.load().lesson(5)
    assert [e.name for e in lesson.exercises if e.bonus] == ["allgather_matmul_bidirectional"]
    assert lesson.points == sum(e.points for e in lesson.required)
    text = (root / "solutions" / "l05_collective_matmul.py").read_text()
    stubbed = text.split("def allgather_matmul_bidirectional")[0] + (
        "def allgather_matmul_bidirectional(x, w, mesh):\n"
        "    raise NotImplementedError('allgather_matmul_bidirectional: TODO')\n"
    )
    (tmp_path / "l05_collective_matmul.py").write_text(stubbed)
    result = _as_full(backends.grade_lesson(5, "l05_collective_matmul", tmp_path, max_examples=0))
    card = lesson.score_result(result)
    assert card.passed and card.score == card.possible == 4 and card.bonus_score == 0
    assert result.exercises[-1].status == Status.NOT_STARTED
    assert card.exercises["allgather_matmul_bidirectional"].bonus
    done = _as_full(
        backends.grade_lesson(5, "l05_collective_matmul", root / "solutions", max_examples=0)
    )
    card = lesson.score_result(done)
    assert card.passed and card.score == 4 and card.bonus_score == 1
    again = lesson.score_result(LessonResult.from_dict(done.to_dict()))
    assert again.bonus_score == 1 and again.possible == 4


def test_a_permute_of_every_device_to_itself_sends_nothing():
    text = """HloModule m

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %cp = f32[4]{0} collective-permute(f32[4]{0} %p), source_target_pairs={{0,0}}
}
"""
    summary = hlo.summarize(text, num_devices=1)
    assert summary.kinds() == set() and summary.bytes() == 0
    moved = hlo.summarize(text.replace("{{0,0}}", "{{0,1},{1,0}}"), num_devices=2)
    assert moved.kinds() == {"collective-permute"} and moved.bytes() == 16


def _as_full(result: LessonResult) -> LessonResult:
    """The statuses as a full run would score them (only the explicit examples ran,
    to keep the test short; the scoring of bonus points is what is tested)."""
    return dataclasses.replace(
        result, exercises=[dataclasses.replace(e, narrowed=None) for e in result.exercises]
    )
