"""Held-back set 6, lesson 10 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb6-l10-ring-output-left-in-float32",
        module=M,
        exercise="ring_attention",
        what=(
            "The learner keeps the merged output in the float32 it was accumulated in and "
            "returns it without casting back: for bfloat16 q, k, v the result is float32 "
            "instead of q's dtype (float32 inputs are unaffected)."
        ),
        cause=("dtype", "float32", "astype", "cast back", "q's dtype", "bfloat16"),
        kind="dtype",
        patch=(
            (
                "        o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send\n"
                "        return o.astype(q_blk.dtype)",
                "        o, _ = attend(acc, kv, n - 1)  # the last block needs no onward send\n"
                "        return o",
            ),
        ),
    ),
    Held(
        id="hb6-l10-zigzag-loop-from-step-zero",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "The learner runs the zigzag loop for s = 0 … N − 2 instead of 1 … N − 1, keeping "
            "'send, then j = (i − s) mod N': after the first send the block is i − 1's but it is "
            "labelled i, so the branch and mask are chosen for the wrong block at every step and "
            "block i + 1 is never attended."
        ),
        cause=("step 1", "s = 1", "off by one", "i − s", "label", "from 1"),
        kind="off-by-one",
        patch=(
            (
                "lax.fori_loop(1, n, step, (halves, (k_blk, v_blk)))",
                "lax.fori_loop(0, n - 1, step, (halves, (k_blk, v_blk)))",
            ),
        ),
    ),
    Held(
        id="hb6-l10-ring-mask-owner-from-lesson-2",
        module=M,
        exercise="ring_attention",
        what=(
            "For the causal mask the learner takes the block held at step s to be (i − s − 1) "
            "mod N, lesson 2's owner of the block received at step s, but here the block is "
            "attended before it is sent on, so it is block i − s: with causal=True every block's "
            "key positions are off by one block (causal=False is unaffected)."
        ),
        cause=("i − s", "key positions", "block index", "causal mask", "owner"),
        kind="mask",
        patch=(
            (
                "j = (me - s) % n  # sending to i + 1: after s steps we hold block i − s",
                "j = (me - s - 1) % n  # sending to i + 1: the block received at step s started on i − s − 1",
            ),
        ),
    ),
]
