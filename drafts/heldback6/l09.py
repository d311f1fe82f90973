"""Held-back set 6, lesson 9 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb6-l09-grads-unpacked-in-the-wrong-order",
        module=M,
        exercise="pipeline_grads",
        what=(
            "The learner unpacks the backward loop's carry as (received, g_out, g_in) while it "
            "is built as (received, g_in, g_out): the w_in gradient is returned under 'w_out' "
            "and the other way round (wrong shapes when D ≠ F, wrong values when D = F)."
        ),
        cause=("swapped", "w_in", "w_out", "order", "unpack"),
        kind="leaf",
        patch=(
            (
                "_, g_in, g_out = lax.fori_loop(0, ticks, backward_tick, start)",
                "_, g_out, g_in = lax.fori_loop(0, ticks, backward_tick, start)",
            ),
        ),
    ),
    Held(
        id="hb6-l09-forward-permute-closes-the-ring",
        module=M,
        exercise="pipeline_forward",
        what=(
            "The learner reuses lesson 2's ring, (s, (s + 1) mod p), to pass micro-batches on: "
            "the values are right (stage 0 ignores what it receives), but every tick the last "
            "stage also sends its output back to stage 0, one more transfer than the pipeline's "
            "p − 1 per tick."
        ),
        cause=("ring", "last stage", "stage 0", "wrap", "p − 1 pairs", "(p - 1, 0)"),
        kind="collective",
        patch=(
            (
                "    to_next = [(s, s + 1) for s in range(p - 1)]\n\n    def body(w_in, w_out, x):",
                "    to_next = [(s, (s + 1) % p) for s in range(p)]  # the ring of lesson 2\n\n"
                "    def body(w_in, w_out, x):",
            ),
        ),
    ),
    Held(
        id="hb6-l09-zero-bubble-alive-bound-of-1f1b",
        module=M,
        exercise="zero_bubble_schedule",
        what=(
            "Carrying over 1F1B's memory bound, the learner lets stage s start a new W (in "
            "reverse) only while fewer than p − s micro-batches are alive instead of p: the "
            "later stages are throttled, so the schedule is longer than ZB-H1's makespan."
        ),
        cause=("p − s", "alive", "makespan", "memory bound", "at most p"),
        kind="formula",
        patch=(
            (
                '(k != "W" or alive[s] < p)',
                '(k != "W" or alive[s] < p - s)',
            ),
        ),
    ),
]
