"""Lesson 9's examples are drawn where its checks can tell right from wrong."""

from __future__ import annotations

from grader.engine import context
from grader.expected.l09_pipeline import schedules
from grader.lessons.l09_pipeline import spec as l09
from grader.spec import draw_examples


def _examples(name: str, n: int = 40) -> list[dict]:
    ex = l09.SPEC.exercise(name)
    ctx = context()
    return ex.explicit(ctx) + (draw_examples(ex.strategy(ctx), n, seed=0) if n else [])


def test_schedules_run_on_the_edge_cases_first():
    for name in ("gpipe_schedule", "one_f_one_b_schedule", "zero_bubble_schedule"):
        examples = _examples(name)
        pm = [(ex["p"], ex["m"]) for ex in examples]
        assert {(1, 1), (4, 1), (4, 4), (8, 16)} <= set(pm[: len(l09.EDGES)])
        assert any(m < p for p, m in pm) and any(m > p for p, m in pm)
        assert all(1 <= p <= l09.MAX_STAGES and 1 <= m <= l09.MAX_MICRO for p, m in pm)


def test_the_first_schedules_to_measure_refute_the_formulas():
    """A formula in place of a measurement fails on the first (or second) example."""
    first, with_w = _examples("bubble_fraction")[:2]
    sim = schedules.simulate(l09.given_schedule(first), first["p"], first["m"])
    assert abs(sim.bubble - schedules.bubble_formula(first["p"], first["m"])) > 0.05
    p, m = first["p"], first["m"]
    assert sim.peaks not in ([m] * p, [min(p - s, m) for s in range(p)])
    sim_w = schedules.simulate(l09.given_schedule(with_w), with_w["p"], with_w["m"], True)
    as_if_b = schedules.Simulation(sim_w.p, sim_w.m, False, sim_w.ticks, sim_w.grid).peaks
    assert sim_w.peaks != as_if_b


def test_drawn_schedules_to_measure_are_valid():
    for ex in _examples("peak_activations", 20):
        split_w = ex["kind"] in l09.WITH_W
        assert not schedules.simulate(l09.given_schedule(ex), ex["p"], ex["m"], split_w).violations


def test_a_weight_is_larger_than_the_whole_batch():
    """F > B: a transfer as large as one weight can only be a weight."""
    for name in ("pipeline_forward", "pipeline_grads"):
        for ex in _examples(name):
            assert l09.weight_bytes(ex) > l09.batch_bytes(ex) > l09.micro_bytes(ex)


def test_the_forward_is_checked_where_the_loop_shows_and_at_one_stage():
    examples = _examples("pipeline_forward", 0)
    assert sum(ex["p"] >= 4 and ex["m"] >= 3 for ex in examples) >= 2
    assert any(ex["p"] == 1 for ex in examples)
    assert any(ex["m"] < ex["p"] for ex in examples)


def test_the_dependency_hint_follows_the_op_that_ran_too_early():
    """A weight gradient run before its own stage's backward is told W's rule (it runs
    after that B), not the backward's (which waits for the next stage's): a zero-bubble
    schedule built from the last tick and never turned round showed the wrong one; a
    backward run before the next stage's keeps its rule (both ways)."""
    from grader.expected.l09_pipeline.schedules import Violation, describe_op
    from grader.lessons.l09_pipeline.checks import _dependency_hint

    w_first = Violation("dependency", f"tick 0: {describe_op('W', 0, 0)} needs "
                        f"{describe_op('B', 0, 0)}, which runs later, at tick 1", tick=0, stage=0)  # fmt: skip
    assert (
        _dependency_hint(w_first) == "W uses the output gradient B computes: it runs after that B."
    )
    b_first = Violation("dependency", f"tick 3: {describe_op('B', 0, 0)} needs "
                        f"{describe_op('B', 1, 0)}, which runs later, at tick 4", tick=3, stage=0)  # fmt: skip
    assert _dependency_hint(b_first).startswith(
        "The gradient of a micro-batch comes from the next stage"
    )
