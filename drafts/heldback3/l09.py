"""Held-back set 3, lesson 9 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb3-l09-forward-output-slot-one-late",
        module=M,
        exercise="pipeline_forward",
        what=(
            "The learner takes the micro-batch leaving the last stage at tick t to be t − p "
            "instead of t − (p − 1): every output lands one slot early, micro-batch 0's is "
            "never written and the last slot stays zero."
        ),
        cause=("p − 1", "t − (p − 1)", "last stage", "slot", "one tick"),
        kind="off-by-one",
        patch=(
            (
                "done = t - (p - 1)  # the micro-batch leaving the last stage at tick t",
                "done = t - p  # the micro-batch leaving the last stage at tick t",
            ),
        ),
    ),
    Held(
        id="hb3-l09-backward-waits-on-the-stage-before",
        module=M,
        exercise="one_f_one_b_schedule",
        what=(
            "In the dependency rule the learner makes B(s, i) wait for B(s − 1, i), as in the "
            "forward, instead of B(s + 1, i): the backward runs from stage 0 up, before the "
            "gradient from the later stage exists."
        ),
        cause=("s + 1", "later stage", "backward flows", "dependenc", "b(s + 1"),
        kind="index",
        patch=(
            (
                'return [("F", stage, micro)] + ([("B", stage + 1, micro)] if stage < p - 1 else [])',
                'return [("F", stage, micro)] + ([("B", stage - 1, micro)] if stage > 0 else [])',
            ),
        ),
    ),
    Held(
        id="hb3-l09-grads-error-sign-flipped",
        module=M,
        exercise="pipeline_grads",
        what=(
            "The last stage seeds the backward with (target − out)/B instead of "
            "(out − target)/B, the derivative of ½(out − y)²: every gradient has its sign "
            "flipped."
        ),
        cause=("sign", "out − target", "negative", "−1×", "derivative"),
        kind="formula",
        patch=(
            (
                "cotangent = jnp.where(s == p - 1, (out - target) / b, received)",
                "cotangent = jnp.where(s == p - 1, (target - out) / b, received)",
            ),
        ),
    ),
]
