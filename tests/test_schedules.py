"""grader/expected/l09_pipeline/schedules.py: the simulator names each violation; the reference schedules meet the bounds."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from rich.console import Console

from grader.expected.l09_pipeline import schedules as S
from grader.schedule_chart import ChartView

ALL_PM = [(p, m) for p in range(1, 9) for m in range(1, 17)]


@pytest.mark.parametrize("p, m", ALL_PM)
def test_reference_schedules_are_valid_and_meet_the_bounds(p, m):
    """The syllabus's bounds, measured on the grader's own schedules for p ≤ 8, m ≤ 16."""
    gpipe, ofob = S.simulate(S.gpipe(p, m), p, m), S.simulate(S.one_f_one_b(p, m), p, m)
    zb = S.simulate(S.zero_bubble(p, m), p, m, split_w=True)
    assert not gpipe.violations and not ofob.violations and not zb.violations
    assert gpipe.ticks == ofob.ticks == 2 * (m + p - 1)
    assert gpipe.bubble == pytest.approx(S.bubble_formula(p, m))
    assert ofob.bubble == pytest.approx(S.bubble_formula(p, m))
    assert gpipe.peaks == [m] * p
    assert ofob.peaks == [min(p - s, m) for s in range(p)]
    assert zb.ticks <= max(3 * m + p - 1, 2 * (m + p) - 1)
    assert max(zb.peaks) <= p


def test_zero_bubble_makespan_bound_is_reached():
    """The bound is the makespan, not a loose ceiling: equality on every (p, m)."""
    for p, m in ALL_PM:
        assert len(S.zero_bubble(p, m)) == S.makespan_bound(p, m, split_w=True)


def _first(schedule, p, m, split_w=False):
    return S.simulate(schedule, p, m, split_w).first()


def test_a_row_of_the_wrong_length_is_a_shape_violation():
    v = _first([[("F", 0)], [("B", 0), None]], 1, 1)
    assert v.kind == S.SHAPE and "tick 1 holds 2 cells" in v.message


def test_unreadable_and_foreign_cells_are_named():
    assert "holds 'F0'" in _first([["F0"]], 1, 1).message
    assert "kind 'W'" in _first([[("F", 0)], [("W", 0)]], 1, 1).message
    assert "micro-batches are 0 … 0" in _first([[("F", 1)]], 1, 1).message


def test_a_repeated_op_names_both_ticks():
    v = _first([[("F", 0)], [("F", 0)], [("B", 0)]], 1, 1)
    assert v.kind == S.OPS and "runs twice: at tick 0 and at tick 1" in v.message


def test_two_ops_in_one_cell_are_a_clash():
    v = _first([[[("F", 0), ("B", 0)]]], 1, 1)
    assert v.kind == S.CLASH and "runs 2 ops (F0, B0)" in v.message


def test_a_missing_micro_batch_is_named_as_a_whole():
    sched = S.gpipe(2, 3)
    dropped = [[c if c is None or c[1] != 2 else None for c in row] for row in sched]
    v = _first(dropped, 2, 3)
    assert v.message.startswith("micro-batch 2 never run (4 ops missing")


def test_a_micro_batch_missing_only_some_ops_is_not_said_never_run():
    """Its forwards lost, its backwards there (a backward written over the forward's cell):
    the ops are counted, not the micro-batch called never run, and the hint says both ways
    an op goes missing — not a loop one short."""
    from grader.lessons.l09_pipeline.checks import _ops_hint
    from grader.spec import Trial

    sched = S.gpipe(2, 3)
    lost = [[c if c is None or c != ("F", 2) else None for c in row] for row in sched]
    v = _first(lost, 2, 3)
    assert v.message.startswith("2 op(s) never run, the first: forward F2"), v.message
    hint = _ops_hint(Trial({"p": 2, "m": 3}, extra={}), v)
    assert "another op of the same stage and tick took afterwards" in hint
    assert "range(m - 1)" not in hint


def test_dependencies_name_what_waits_for_what_and_when():
    same_tick = [[("F", 0), None], [None, ("F", 0)], [("B", 0), ("B", 0)]]
    v = _first(same_tick, 2, 1)
    assert v.kind == S.DEPENDENCY and (v.tick, v.stage, v.waits_for) == (2, 0, (2, 1))
    assert (
        "needs backward B0 of micro-batch 0 on stage 1, which runs at the same tick 2" in v.message
    )
    later = [[("F", 0), None], [None, ("F", 0)], [("B", 0), None], [None, ("B", 0)]]
    assert "which runs later, at tick 3" in _first(later, 2, 1).message
    never = [[("F", 0), None], [("B", 0), None]]
    v = S.simulate(never, 2, 1).first(S.DEPENDENCY)
    assert "which never runs" in v.message and v.waits_for is None


def test_peaks_count_until_the_last_backward_op():
    with_w = [[("F", 0)], [("F", 1)], [("B", 0)], [("B", 1)], [("W", 0)], [("W", 1)]]
    assert S.simulate(with_w, 1, 2, split_w=True).peaks == [2]
    one_by_one = [[("F", 0)], [("B", 0)], [("W", 0)], [("F", 1)], [("B", 1)], [("W", 1)]]
    assert S.simulate(one_by_one, 1, 2, split_w=True).peaks == [1]


def test_random_schedules_are_valid_and_vary():
    bubbles = set()
    for seed in range(20):
        for split_w in (False, True):
            sim = S.simulate(S.random_schedule(4, 5, seed, split_w), 4, 5, split_w)
            assert not sim.violations
            bubbles.add(round(sim.bubble, 9))
    assert len(bubbles) > 10


def test_random_schedules_are_the_same_in_every_process(root):
    """Drawn examples must re-run exactly: no dependence on set order (string hashing)."""
    code = "from grader.expected.l09_pipeline import schedules as S; print(S.random_schedule(5, 6, 3, True))"
    outs = {
        subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "PYTHONHASHSEED": str(h)}, check=True).stdout
        for h in (1, 2, 3)
    }  # fmt: skip
    assert len(outs) == 1


def _render(chart, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(ChartView(chart))
    return console.file.getvalue()


def test_the_chart_draws_both_schedules_and_the_violation():
    p, m = 2, 1
    bad = [[("F", 0), None], [None, ("F", 0)], [("B", 0), ("B", 0)]]
    yours, want = S.simulate(bad, p, m), S.simulate(S.one_f_one_b(p, m), p, m)
    text = _render(S.chart("one_f_one_b_schedule(2, 1)", yours, want, yours.first()), 80)
    rows = text.splitlines()
    assert rows[1].split() == ["tick", "0", "1", "2", "3"]
    assert rows[2].split() == ["yours", "0", "F0", "·", "B0"]
    assert rows[4].split() == ["expected", "0", "F0", "·", "·", "B0"]
    assert "first violation" in text and "what it waits for" in text


def test_a_wide_chart_shows_the_ticks_around_the_mark():
    p, m = 8, 16
    sim = S.simulate(S.gpipe(p, m), p, m)
    mark = S.Violation("ops", "here", tick=40, stage=3)
    text = _render(S.chart("gpipe_schedule(8, 16)", sim, sim, mark), 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "of 46)" in text
    ticks = [int(t) for t in text.splitlines()[1].split()[1:]]
    assert 40 in ticks and ticks == list(range(ticks[0], ticks[-1] + 1))


def test_a_given_schedule_is_drawn_alone():
    sim = S.simulate(S.random_schedule(3, 2, 0), 3, 2)
    title = "the schedule given to bubble_fraction (random, p = 3, m = 2)"
    text = _render(S.chart(title, sim, None, None), 80)
    assert "expected" not in text and "yours" not in text
    assert text.splitlines()[2].split()[0] == "given"


def test_a_zero_bubble_schedule_too_long_is_told_what_its_replay_shows():
    """The makespan hint of a split-W schedule says what was measured: a stage idle while
    one of its Ws is ready; every W straight after its B; neither, the rule alone (each
    both ways)."""
    from grader.lessons.l09_pipeline.checks import _makespan_hint

    f, b, w = ("F", 0), ("B", 0), ("W", 0)
    idle = [[f, None], [None, f], [None, b], [b, None], [w, None], [None, w]]
    said = _makespan_hint(S.simulate(idle, 2, 1, split_w=True), 5)
    assert "At tick 3 stage 1 idles though weight gradient W0" in said, said
    assert "straight after its B" not in said
    straight = [[f, None], [None, f], [None, b], [b, w], [w, None], [None, None]]
    said = _makespan_hint(S.simulate(straight, 2, 1, split_w=True), 5)
    assert said.startswith("Every W runs straight after its B"), said
    assert "idles though" not in said


def test_a_stage_past_the_first_running_an_f_while_its_b_is_ready_is_said():
    """Stage 1 runs F1 at tick 2 while B0 of its own is ready (its forward at tick 1, the
    last stage): said, as the tick, the op run and the op that waited; stage 0 running an F
    while its B is ready is not (nothing waits for stage 0's B)."""
    from grader.lessons.l09_pipeline.checks import _makespan_hint

    f0, f1, b0, b1, w0, w1 = ("F", 0), ("F", 1), ("B", 0), ("B", 1), ("W", 0), ("W", 1)
    late = [[f0, None], [f1, f0], [None, f1], [None, b0], [b0, b1], [b1, w0], [w0, w1],
            [w1, None]]  # fmt: skip
    said = _makespan_hint(S.simulate(late, 2, 2, split_w=True), 7)
    assert said.startswith("At tick 2 stage 1 runs forward F1 of micro-batch 1 on stage 1 while "
                           "backward B0 of micro-batch 0 on stage 1 is ready"), said  # fmt: skip
    assert "stage 0 runs" not in said
