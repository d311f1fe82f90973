"""Lesson 3's grading spec: its presets, its formulas and its diagnoses."""

from __future__ import annotations

import dataclasses

import pytest

from grader.checks.scalar import RAISES, Agrees, close
from grader.expected import l03_cost_model as formulas
from grader.expected import matmul as costs
from grader.lessons.l03_cost_model import spec as spec
from grader.loader import load_module
from grader.reference import matmul
from grader.spec import Trial

PURE = {e.name: e for e in spec.EXERCISES if isinstance(e.explicit, tuple)}


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_presets_match_the_lesson_files(root, folder):
    """The grader's copies of the presets hold the figures the student sees."""
    mod = load_module(root / folder, "l03_cost_model")
    for name, chip in mod.CHIPS.items():
        assert dataclasses.astuple(chip) == dataclasses.astuple(spec.CHIPS[name])
    for name, link in mod.LINKS.items():
        assert dataclasses.astuple(link) == dataclasses.astuple(spec.LINKS[name])
    assert set(spec.CHIPS) - set(mod.CHIPS) == {"toy-chip"}
    assert set(spec.LINKS) - set(mod.LINKS) == {"toy-link"}
    assert mod.COLLECTIVES == spec.KINDS and tuple(matmul.CASES) == mod.CASES


def test_lesson_figures():
    """The numbers quoted in course/lessons/03_cost_model.md."""
    h100, nvlink, ib = spec.CHIPS["h100-sxm"], spec.LINKS["nvlink4"], spec.LINKS["infiniband-ndr"]
    crit = {n: round(c.peak_flops / c.hbm_bandwidth) for n, c in spec.CHIPS.items()}
    assert crit == {
        "tpu-v5e": 241,
        "tpu-v5p": 166,
        "h100-sxm": 295,
        "h200-sxm": 206,
        "toy-chip": 100,
    }
    d = 8192
    first = next(
        b for b in range(1, d) if formulas.flops(b, d, d) / formulas.traffic(b, d, d, 2) >= 295.2238
    )
    assert first == 319
    assert round(formulas.dp_threshold(h100, nvlink)) == 1465
    assert round(formulas.dp_threshold(h100, ib)) == 13187
    assert round(formulas.dp_threshold(spec.CHIPS["tpu-v5e"], spec.LINKS["tpu-v5e-ici"])) == 2919
    assert formulas.dp_threshold(spec.CHIPS["tpu-v5p"], spec.LINKS["tpu-v5p-ici"]) == pytest.approx(
        3400
    )
    assert formulas.ring_time("all_reduce", 2**28, 8, nvlink) == pytest.approx(1.0579e-3, rel=1e-4)
    shapes = (4096, 8192, 2048)
    got = {c: formulas.case_bytes(c, shapes, (2, 4) if c == "2d" else 8, 2) for c in matmul.CASES}
    assert got == {
        "local": 0, "allgather": 58_720_256, "allreduce": 29_360_128,
        "reducescatter": 14_680_064, "conflict": 29_360_128, "2d": 12_582_912,
    }  # fmt: skip


def test_one_device_costs_nothing_and_unknown_kinds_raise():
    link = spec.LINKS["nvlink4"]
    assert all(formulas.ring_time(k, 2**20, 1, link) == 0.0 for k in spec.KINDS)
    gather = {"kind": "gather", "nbytes": 1, "n": 2, "link": "nvlink4"}
    assert spec.COLLECTIVE_TIME.want(gather) == RAISES


@pytest.mark.parametrize("exercise", sorted(PURE))
def test_every_suspect_is_caught_by_the_explicit_examples(exercise):
    """Each known mistake gives a wrong answer on at least one explicit example."""
    scalar = PURE[exercise]
    caught, seen = set(), set()
    for ex in scalar.examples(None):
        right = scalar.want(ex)
        if right == RAISES:
            continue
        for value, hint in scalar.suspected(ex):
            key = hint.split(":")[0]  # some hints carry the example's numbers after a colon
            seen.add(key)
            if not close(value, right):
                caught.add(key)
    assert seen - caught == set()


def test_dp_mistakes_are_each_diagnosed_alone():
    """The explicit dp examples catch each threshold mistake where it is the only suspect left."""
    dp = spec.DP_IS_COMPUTE_BOUND
    diagnose = dp.check().diagnose
    cases = dp.examples(None)
    for index in range(len(dp.suspected(cases[0]))):
        failing = next(ex for ex in cases if dp.suspected(ex)[index][0] != dp.want(ex))
        value, hint = dp.suspected(failing)[index]
        assert diagnose(value, dp.want(failing), Trial(failing)) == hint


def test_dp_explicit_batches_visit_the_threshold_steps():
    """The explicit batches, written out in the spec (the threshold is the grader's side),
    are round(r·T) of h100-sxm on nvlink4 for each step r the diagnoses rely on."""
    t = formulas.dp_threshold(spec.CHIPS["h100-sxm"], spec.LINKS["nvlink4"])
    assert tuple(round(r * t) for r in spec._DP_STEPS) == spec.DP_STEP_BATCHES


def test_dp_draws_stay_away_from_the_threshold():
    from grader.spec import Context, draw_examples

    ctx = Context(n_devices=8, mesh_sizes=(1, 2, 3, 4, 6, 8))
    for ex in draw_examples(spec.DP_IS_COMPUTE_BOUND.draw(ctx), 50, seed=1):
        comp, comm = formulas.dp_times(
            ex["batch"], ex["d_model"], ex["d_ff"], spec.CHIPS[ex["chip"]], spec.LINKS[ex["link"]]
        )
        assert abs(comp - comm) > 1e-6 * max(comp, comm)


def _trial(output, expected, **extra):
    return Trial(
        {}, output=output, expected=expected, extra={"call": "f()", "formula": "F", **extra}
    )


def _agrees(kind: type) -> Agrees:
    return spec.Scalar("f", kind, None, (), None, None, None, None).check()


def test_agrees_types():
    ints, floats, bools = _agrees(int), _agrees(float), _agrees(bool)
    assert ints(_trial(48, 48)).passed
    whole = ints(_trial(48.0, 48))
    assert not whole.passed and "a float" in whole.message and "value itself is right" in whole.hint
    assert floats(_trial(3, 3.0)).passed  # an int where a float is due is fine
    assert floats(_trial(1.0 + 1e-12, 1.0)).passed and not floats(_trial(1.0 + 1e-6, 1.0)).passed
    assert not floats(_trial(True, 1.0)).passed
    assert not bools(_trial(1, True)).passed and bools(_trial(True, True)).passed
    assert "forget the return" in ints(_trial(None, 48)).hint


def test_agrees_holds_predictions_against_the_measurement():
    check = _agrees(int)
    assert check(_trial(288, 288, measured=288)).passed
    wrong = check(_trial(144, 288, measured=288))
    assert (
        "you predict 144 bytes; the compiled reference moves 288 bytes per device (formula: F)"
        in wrong.message
    )
    assert "grader bug" in check(_trial(288, 288, measured=300)).message


def test_unknown_names_must_raise():
    check = _agrees(float)
    assert check(_trial(ValueError("no"), RAISES)).passed
    assert not check(_trial(0.0, RAISES)).passed
    assert not check(_trial(KeyError("x"), RAISES)).passed


def test_the_graders_own_programs_move_the_optimum(root):
    """Lesson 3's measurement compiles grader.expected.matmul's programs, not solutions/."""
    for case in matmul.CASES.values():
        mesh = (2, 3) if case.two_d else (3,)
        shapes = (12, 18, 6) if case.two_d else (6, 9, 12)
        assert costs.measure(case, shapes, mesh, "float32") == case.bytes(shapes, mesh, 4)


def test_a_fault_in_the_graders_measurement_is_not_the_students(root):
    from grader import engine

    broken = dataclasses.replace(spec.PREDICT_BYTES, measure=lambda **ex: 1 / 0)
    ctx = engine.context()
    fn = load_module(root / "solutions", "l03_cost_model").predict_bytes
    er = engine.grade_exercise(3, broken.spec(), fn, ctx, directory=root, max_examples=0)
    assert er.status == "grader fault" and er.error.startswith("internal grader error")
    assert "ZeroDivisionError" in er.error and "please report it" in er.error
