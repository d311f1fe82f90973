"""Held-back set 4, lesson 9 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb4-l09-gpipe-backward-from-the-last-forward-tick",
        module=M,
        exercise="gpipe_schedule",
        what=(
            "The learner sets the backward phase's start to m + p − 2, the index of the forward "
            "phase's last tick rather than its length m + p − 1: on the last stage B of "
            "micro-batch 0 lands in the tick of its last forward (one of them is lost) and "
            "every backward runs a tick early."
        ),
        cause=("m + p − 1", "last tick", "same tick", "one tick early", "phase"),
        kind="off-by-one",
        patch=(
            (
                "phase = m + p - 1\n    grid: Schedule = [[None] * p for _ in range(2 * phase)]",
                "phase = m + p - 2  # the forward phase's last tick\n"
                "    grid: Schedule = [[None] * p for _ in range(2 * (m + p - 1))]",
            ),
        ),
    ),
    Held(
        id="hb4-l09-zero-bubble-forwards-ranked-first",
        module=M,
        exercise="zero_bubble_schedule",
        what=(
            "The learner ranks a ready F above a ready B when a stage chooses its op, as in "
            "1F1B's warm-up, though B is the op on the critical path (it unblocks the stage "
            "before): the schedule stays valid but runs longer than ZB-H1's makespan bound."
        ),
        cause=("critical path", "b first", "priority", "makespan", "unblocks"),
        kind="other",
        patch=(
            (
                'rank = {"B": 0, "F": 1, "W": 2}',
                'rank = {"F": 0, "B": 1, "W": 2}',
            ),
        ),
    ),
    Held(
        id="hb4-l09-forward-gathers-every-stage-buffer",
        module=M,
        exercise="pipeline_forward",
        what=(
            "To hand the last stage's outputs to every stage the learner all-gathers every "
            "stage's output buffer and keeps the last one: the values are right, but p whole "
            "buffers travel where one all-reduce (or broadcast) of y was enough."
        ),
        cause=("all-gather", "every stage's buffer", "psum", "p times", "all-reduce"),
        kind="collective",
        patch=(
            (
                "return lax.psum(out, AXIS).reshape(b, d)",
                'return lax.all_gather(out, AXIS, to="invarying")[p - 1].reshape(b, d)  # the last stage\'s',
            ),
        ),
    ),
    Held(
        id="hb4-l09-grads-averaged-over-micro-batches",
        module=M,
        exercise="pipeline_grads",
        what=(
            "Out of gradient-accumulation habit the learner divides the summed weight gradients "
            "by n_micro, though the last stage's seed (out − y)/B already makes each micro-batch's "
            "term its share of the mean over B: the gradients are n_micro times too small."
        ),
        cause=("n_micro", "average", "divided", "micro-batches", "too small"),
        kind="factor",
        patch=(
            (
                "return g_in[None], g_out[None]",
                "return g_in[None] / n_micro, g_out[None] / n_micro  # average over micro-batches",
            ),
        ),
    ),
]
