"""Held-back set 8, lesson 9 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb8-l09-forward-last-stage-picked-by-pmax",
        module=M,
        exercise="pipeline_forward",
        what="Only the last stage holds y and the others hold zeros, so the learner picks it out with lax.pmax instead of psum: wherever y is negative the zeros of the other stages win and the output is 0 there.",
        cause=("pmax", "psum", "negative", "zeros", "max"),
        kind="collective",
        patch=(
            (
                "        return lax.psum(out, AXIS).reshape(b, d)\n",
                "        return lax.pmax(out, AXIS).reshape(b, d)\n",
            ),
        ),
    ),
    Held(
        id="hb8-l09-grads-valid-through-n-micro",
        module=M,
        exercise="pipeline_grads",
        what="The learner masks the backward ticks with i ≤ n_micro instead of i < n_micro: on every stage but the last, the tick after its last micro-batch adds that (clipped) micro-batch's weight gradient a second time.",
        cause=("i < n_micro", "off-by-one", "twice", "last micro-batch", "mask"),
        kind="off-by-one",
        patch=(
            (
                "            valid = (i >= 0) & (i < n_micro)\n",
                "            valid = (i >= 0) & (i <= n_micro)\n",
            ),
        ),
    ),
]
