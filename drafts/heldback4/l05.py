"""Held-back set 4, lesson 5 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb4-l05-allgather-running-sum-overwritten",
        module=M,
        exercise="allgather_matmul",
        what=(
            "In the loop the learner assigns each step's product to y instead of adding it, "
            "y = partial(…) rather than y + partial(…): every block but the last two is "
            "thrown away, so Y holds only two of the N terms."
        ),
        cause=("overwrit", "accumulat", "y +", "running sum", "adds"),
        kind="state",
        patch=(
            (
                "y = y + partial(w_held, s)  # multiply the block we hold …",
                "y = partial(w_held, s)  # multiply the block we hold …",
            ),
        ),
    ),
    Held(
        id="hb4-l05-reducescatter-partial-sums-averaged",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "Treating the reduction like a gradient average, the learner divides the finished "
            "running sum by N: the N terms are pieces of one contraction over D and must be "
            "added, so Y is N times too small."
        ),
        cause=("divided by n", "mean", "average", "too small", "sum, not"),
        kind="factor",
        patch=(
            (
                "return lax.fori_loop(0, n - 1, step, product((me - 1) % n))",
                "return lax.fori_loop(0, n - 1, step, product((me - 1) % n)) / n  # mean of the partials",
            ),
        ),
    ),
    Held(
        id="hb4-l05-bidirectional-own-block-never-multiplied",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "Copying allgather_matmul's start, the learner begins y from zeros and only adds the "
            "blocks that arrive from either side: the block the device holds from the start, "
            "W block i, is never multiplied."
        ),
        cause=("own block", "block i", "starts from zero", "never multiplied", "initial"),
        kind="state",
        patch=(
            (
                "y = partial(w_blk, me)",
                'y = lax.pcast(jnp.zeros((x_blk.shape[0], w_blk.shape[1]), jnp.float32), "x", to="varying")',
            ),
        ),
    ),
]
