"""Lesson 11: the routing reference, examples drawn where the checks can tell,
and the mistakes that must fail more than one check."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Group

from grader.engine import context
from grader.evidence import ExpertLoad
from grader.lessons.l11_expert_parallel import routing as moe_routing
from grader.lessons.l11_expert_parallel import spec as l11
from grader.lessons.l11_expert_parallel.checks import dispatch_mistakes
from grader.report import draw
from grader.results import ExerciseResult, Status
from grader.runtime import example_rng
from grader.sandbox import backends
from grader.spec import draw_examples
from tests import grades
from tests.mistakes.l11 import MISTAKES

# ------------------------------------------------------------------ the reference, by hand

LOGITS = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [3.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0, 1, 0]])


def test_top1_routing_by_hand():
    """Token 0 ties experts 0 and 1 (lowest wins), token 3 ties all three; C = 2:
    expert 0 gets tokens 0, 2, 3 and drops token 3; expert 1 gets 1 and 4."""
    r = moe_routing.route(LOGITS, capacity=2)
    assert r.choice[:, 0].tolist() == [0, 1, 0, 0, 1]
    assert r.slot[:, 0].tolist() == [0, 0, 1, 2, 1]
    assert r.kept[:, 0].tolist() == [True, True, True, False, True]
    assert r.load() == [(3, 2), (2, 2), (0, 0)]
    d = r.dispatch()
    assert d.shape == (5, 3, 2) and d.sum() == 4 and not d[3].any()
    assert d[2, 0, 1] and d[4, 1, 1]
    np.testing.assert_allclose(r.combine()[0, 0, 0], 0.5 / (1 + np.exp(-1) / 2) * 1)


def test_a_token_twice_in_one_expert_is_said_and_a_zero_mask_only_where_measured():
    """A dispatch where a token sits in two slots of one expert is told so (its second
    choice is its first expert again), whatever the logits; that a first choice's logit
    set to 0 stays the largest is said only where every such token's other logits are
    ≤ 0 (measured), not where one of them is positive (both ways); a dispatch without such
    a token gets neither sentence."""
    from grader.lessons.l11_expert_parallel.checks import _dispatch_hint

    r = moe_routing.route(LOGITS[:3] - 0.5, capacity=3, k=2)  # token 1's others: −0.5, 0.5
    twice = r.dispatch().copy()
    twice[0] = False
    twice[0, 0, 0] = twice[0, 0, 1] = True  # token 0 twice in expert 0
    negative = np.array([[1.0, -0.2, -0.3], [0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
    said = _dispatch_hint(twice, 2, negative)
    assert said.startswith(
        "1 token(s) sit twice in one expert; first, token 0 in expert 0 "
        "(slots 0, 1): its second choice is its first expert again"
    ), said
    assert (
        "token 0's: [-0.2, -0.3]): a first choice's logit replaced by 0 is still the "
        "largest there — leave it out with −inf." in said
    )
    positive = negative.copy()
    positive[0, 2] = 0.4
    said = _dispatch_hint(twice, 2, positive)
    assert "its second choice is its first expert again" in said and "−inf" not in said
    assert _dispatch_hint(r.dispatch(), 2, negative) is None
    said = _dispatch_hint(np.zeros_like(twice), 2, negative)
    assert said.startswith("Your dispatch holds no True at all: every token is dropped")


def test_a_device_whose_tokens_went_through_another_expert_is_told_which():
    """Lesson 11's layer family: a device's block whose wrong tokens are each exactly their
    gate times another expert's output is told which (the expert the device holds, where
    all of them went through it); a block without a gate (the catalogued "not weighted by
    the gate"), the right block and a single wrong token get nothing (both ways)."""
    from grader.lessons.l11_expert_parallel.spec import Experts, layer_inputs, reference
    from grader.spec import Trial

    ex = {"n": 4, "rows": 8, "d": 8, "f": 16, "capacity": 8, "dtype": "float32", "seed": 0}
    inputs = layer_inputs(ex, np.random.default_rng(62))
    family = Experts(Trial(ex, extra={"inputs": inputs}))
    right = reference(ex, inputs)[8:16]  # device 1's tokens
    x = np.asarray(inputs["x"], np.float64)[8:16]
    r = moe_routing.route(x @ np.asarray(inputs["router_w"], np.float64), 8)
    w_in, w_out = (np.asarray(inputs[k], np.float64) for k in ("w_in", "w_out"))
    own = np.stack([r.gates[t, r.choice[t, 0]] * np.tanh(x[t] @ w_in[1]) @ w_out[1]
                    for t in range(8)])  # fmt: skip

    def close(a, e):
        return np.abs(a - e) <= 1e-9

    said = family.said((1,), own, close, "device (1,)'s block")
    moved = int(np.sum(r.choice[:, 0] != 1))
    assert moved >= 2 and said.startswith(
        f"device (1,)'s block: each of its {moved} wrong tokens' outputs is exactly its gate "
        "times the output of expert 1, the expert this device holds, not of the expert it was "
        "routed to (first, its token "
    ), said
    assert family.said((1,), right, close, "it") is None
    ungated = reference(ex, inputs, gate="none")[8:16]
    assert family.said((1,), ungated, close, "it") is None
    one = right.copy()
    t = int(np.argmax(r.choice[:, 0] != 1))
    one[t] = own[t]
    assert family.said((1,), one, close, "it") is None


def test_highest_ties_differ_only_on_ties():
    r = moe_routing.route(LOGITS, 2, ties=moe_routing.HIGHEST)
    assert r.choice[:, 0].tolist() == [1, 1, 0, 2, 1]


def test_top2_gshard_order_by_hand():
    """Second choices take slots after every first choice at that expert."""
    r = moe_routing.route(LOGITS, capacity=3, k=2)
    assert r.choice.tolist() == [[0, 1], [1, 2], [0, 1], [0, 1], [1, 0]]
    # expert 0: firsts 0, 2, 3 → slots 0, 1, 2; token 4's second → slot 3: dropped
    # expert 1: firsts 1, 4 → 0, 1; seconds of 0, 2, 3 → 2, 3, 4 (only token 0's kept)
    assert r.slot.tolist() == [[0, 2], [0, 0], [1, 3], [2, 4], [1, 3]]
    assert r.kept.sum() == 7


def test_layer_reference_zeroes_dropped_tokens_and_gates_after():
    ex = {"n": 2, "rows": 6, "d": 8, "f": 16, "capacity": 1, "dtype": "float32", "seed": 0}
    inputs = l11.layer_inputs(ex, example_rng(ex))
    y = l11.reference(ex, inputs)
    x = np.asarray(inputs["x"], np.float64)
    logits = x @ inputs["router_w"]
    for dev in range(2):
        rows = slice(6 * dev, 6 * (dev + 1))
        r = moe_routing.route(logits[rows], 1)
        for t, (e, kept) in enumerate(zip(r.choice[:, 0], r.kept[:, 0])):
            want = (
                0
                if not kept
                else r.gates[t, e]
                * moe_routing.expert(x[rows][t], inputs["w_in"][e], inputs["w_out"][e])
            )
            np.testing.assert_allclose(y[rows][t], want, atol=1e-12)


# ------------------------------------------------------------------ examples


def _examples(name: str, n: int = 20) -> list[dict]:
    ex = l11.SPEC.exercise(name)
    ctx = context()
    return ex.explicit(ctx) + draw_examples(ex.strategy(ctx), n, seed=0)


@pytest.mark.parametrize("name,k", [("top1_dispatch", 1), ("top2_dispatch", 2)])
def test_dispatch_examples_tie_and_drop_and_tell_each_mistake(name, k):
    """The first explicit example has ties and drops, and every known wrong dispatch
    differs there from the reference (so each mistake fails on it)."""
    first = _examples(name)[0]
    logits = l11.logits_for(first, example_rng(first))
    routing = moe_routing.route(logits, first["capacity"], k)
    assert not routing.kept.all()
    assert any(np.sum(row == row.max()) > 1 for row in logits)
    for why, wrong in dispatch_mistakes(logits.astype(np.float64), first["capacity"], k):
        assert not np.array_equal(wrong, routing.dispatch()), why


def test_layer_logits_are_exact_and_tie():
    """Routing-exact draws: float32 logits equal float64 ones (no argmax can flip),
    and some tokens tie every expert."""
    for ex in _examples("moe_layer"):
        inputs = l11.layer_inputs(ex, example_rng(ex))
        if ex["dtype"] != "float32":
            continue
        f32 = inputs["x"] @ inputs["router_w"]
        f64 = np.asarray(inputs["x"], np.float64) @ np.asarray(inputs["router_w"], np.float64)
        assert np.array_equal(f32, f64)
        assert np.all(f64[:: l11.TIE_EVERY] == 0)


def test_layer_explicit_examples_drop_and_tell_each_wrong_layer():
    """At N ≥ 2 the explicit examples drop tokens, and every wrong layer the values
    check knows differs from the reference by several times the loosest allowance."""
    for ex in l11.layer_explicit(context()):
        inputs = l11.layer_inputs(ex, example_rng(ex))
        (load,) = l11.explain_layer([l11.Trial(example=ex, extra={"inputs": inputs})])
        assert sum(load.routed) == ex["n"] * ex["rows"] and load.groups == ex["n"]
        assert sum(load.kept) < sum(load.routed)  # tokens dropped
        assert max(load.kept) <= ex["n"] * ex["capacity"]
        if ex["n"] < 2:
            continue
        want = l11.reference(ex, inputs)
        trial = l11.Trial(example=ex, extra={"inputs": inputs})
        for why, wrong in l11.layer_mistakes(trial):
            err = np.abs(wrong(None, ...) - want).max() / np.abs(want).max()
            assert err > 4 * l11.BF16_SAFETY * 2.0**-8, why  # 4× the loosest allowance


def test_bytes_are_the_ring_share_of_the_buffer_in_the_exercise_dtype():
    ex = {"n": 6, "capacity": 2, "d": 8}
    for dtype, size in l11.ITEMSIZE.items():
        trial = l11.Trial(example={**ex, "dtype": dtype})
        assert l11.optimum_bytes(trial) == 2 * 5 * (6 * 2 * 8 * size) // 6


# ------------------------------------------------------------------ mistakes failing several checks


def _failed_checks(mistake_id: str) -> dict:
    (mistake,) = [m for m in MISTAKES if m.id == mistake_id]
    result = grades.mistake(mistake)  # the catalogue's grade of it (tests/grades.py)
    return {c.name: c for c in result.exercises[0].checks if not c.passed}


def test_all_gathered_tokens_fail_on_kinds_and_bytes():
    failed = _failed_checks("moe-all-gathers-the-tokens")
    assert {"collectives", "bytes", "all-to-alls"} <= set(failed)
    assert "values" not in failed  # the layer computes the right thing, the wrong way
    assert "reduce-scatter" in failed["collectives"].message


def test_missing_return_all_to_all_fails_on_values_and_count():
    failed = _failed_checks("moe-results-never-sent-back")
    assert {"values", "all-to-alls"} <= set(failed)
    assert "1 × all-to-all executed; expected 2" in failed["all-to-alls"].message
    assert "second all-to-all" in failed["all-to-alls"].hint


# ------------------------------------------------------------------ the report


def test_expert_load_is_drawn_per_expert_within_80_columns():
    from tests.test_report import lines, render

    item = ExpertLoad(example="n=2 rows=6", capacity=2, groups=2, routed=[7, 3, 2], kept=[4, 3, 2])
    exercise = ExerciseResult(11, "moe_layer", Status.PASSED, explanation=[item])
    text = render(Group(*draw(item, exercise)), width=80)
    assert "moe_layer: tokens per expert, as the reference routes them" in text
    assert "example n=2 rows=6" in text
    rows = {line.split()[0]: line.split()[1:4] for line in lines(text) if line[:1].isdigit()}
    assert rows["0"] == ["7", "4", "3"] and rows["1"] == ["3", "3", "0"]
    assert "C = 2 slot(s) per expert on each of 2 devices: an expert keeps at most 4" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_a_passed_layer_explains_its_expert_load(root):
    result = backends.grade_lesson(11, l11.MODULE, root / "solutions", only=["moe_layer"])
    (er,) = result.exercises
    (load,) = er.explanation
    assert isinstance(load, ExpertLoad) and load.groups >= max(ex["n"] for ex in _layer_examples())
    assert sum(load.routed) > sum(load.kept)


def _layer_examples() -> list[dict]:
    return l11.layer_explicit(context())


def test_bfloat16_gates_sit_well_inside_their_allowance():
    """The bfloat16 combine allowance (4·2⁻⁸) against what correct gates measure on 44
    bfloat16 examples: the solution's softmax in bfloat16 (≤ 1.25·2⁻⁸ measured) and a
    float32 softmax rounded at the end (≤ 0.49·2⁻⁸) stay under half of it."""
    import jax
    import jax.numpy as jnp

    from grader.lessons.l11_expert_parallel.checks import BF16_COMBINE

    examples = [dict(ex, dtype="bfloat16") for ex in _examples("top1_dispatch", 40)]
    for ex in examples:
        logits = l11.logits_for(ex, example_rng(ex))
        assert logits.dtype.name == "bfloat16"
        want = moe_routing.softmax(logits.astype(np.float64))
        in_bf16 = jax.nn.softmax(jnp.asarray(logits), -1).astype(jnp.float32)
        rounded = jax.nn.softmax(jnp.asarray(logits, jnp.float32), -1).astype(jnp.bfloat16)
        for got in (in_bf16, rounded):
            err = np.abs(np.asarray(got, np.float64) - want).max()
            assert err <= BF16_COMBINE / 2, (ex, err / 2**-8)


def test_dispatch_examples_include_bfloat16_logits():
    for name in ("top1_dispatch", "top2_dispatch"):
        assert {ex["dtype"] for ex in _examples(name, 0)} == {"float32", "bfloat16"}


def test_combine_names_every_cause_that_gives_the_values_and_one_alone():
    """Where capacity keeps one expert per token, combine renormalised over the kept
    gates is all ones where dispatched, as a combine of ones is: the hint names both
    causes. Where they differ (a token keeps both), each mistake gets its own alone."""
    from grader.lessons.l11_expert_parallel.checks import Combine

    # capacity 1: token 0 takes expert 0 and token 1 expert 1 as first choices, so each
    # one's second choice is full; token 2 is dropped
    logits = np.array([[3.0, 2.0, 0.0], [2.0, 3.0, 0.0], [3.0, 2.0, 0.0]], np.float32)
    routing = moe_routing.route(logits, 1, k=2)
    kept_per_token = routing.dispatch().sum(axis=(1, 2))
    assert kept_per_token.max() == 1  # every kept token has one expert only
    dispatch = routing.dispatch()
    ones = dispatch.astype(np.float64)

    def hint(combine):
        trial = l11.Trial(example={"dtype": "float32"}, extra={"logits": logits})
        trial.output, trial.expected = (dispatch, combine), routing
        result = Combine()(trial)
        assert not result.passed
        return result.hint

    both = hint(ones)
    assert both.startswith("One of these") and "renormalised" in both and "is 1" in both
    # two kept experts for a token: renormalised is no longer all ones
    wide = moe_routing.route(logits, 3, k=2)
    chosen = wide.combine() / wide.combine().sum(axis=(1, 2), keepdims=True)
    trial = l11.Trial(example={"dtype": "float32"}, extra={"logits": logits})
    trial.output, trial.expected = (wide.dispatch(), chosen), wide
    alone = Combine()(trial).hint
    assert "renormalised" in alone and not alone.startswith("One of these")
