"""Lesson 6's examples are drawn where its checks can tell right from wrong."""

from __future__ import annotations

from grader.engine import context
from grader.lessons.l06_data_parallel import spec as l06
from grader.spec import draw_examples


def _examples(name: str, n: int = 30) -> list[dict]:
    ex = l06.SPEC.exercise(name)
    ctx = context()
    return ex.explicit(ctx) + draw_examples(ex.strategy(ctx), n, seed=0)


def test_values_are_checked_on_several_devices():
    """At N = 1 an N× mistake is invisible; N = 3 is not a power of two."""
    for name in ("dp_grads", "dp_train_step", "dp_accumulate"):
        examples = _examples(name)
        assert all(ex["n"] >= 2 for ex in examples)
        assert {4, 3} <= {ex["n"] for ex in examples[:2]}


def test_accumulation_draws_where_activations_dominate():
    """n_micro ≥ 4 and A ≥ 5·|params| (the syllabus's bound), n_micro ≠ N in the
    first example so an N× and an n_micro× mistake get different hints."""
    examples = _examples("dp_accumulate")
    for ex in examples:
        assert ex["micro"] >= 4 and ex["rows"] % ex["micro"] == 0
        assert l06.activation_bytes(ex) >= 5 * l06.params_bytes(ex)
    assert examples[0]["micro"] != examples[0]["n"]


def test_tolerance_is_tighter_than_a_bfloat16_rounding():
    """The derived allowance stays far below bfloat16's 2⁻⁹ relative rounding."""
    for name in ("dp_grads", "dp_accumulate"):
        for ex in _examples(name):
            assert l06.training.tolerance(l06.model_sizes(ex)) < 2**-9 / 20
