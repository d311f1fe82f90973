"""Held-back set 3, lesson 5 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb3-l05-allgather-passes-right-indexes-left",
        module=M,
        exercise="allgather_matmul",
        what=(
            "The learner passes each W block to the next device, i + 1, but still reads X's "
            "columns for block (i + s) mod N: sending right, device i holds block i − s, so "
            "every step after the first multiplies the wrong columns."
        ),
        cause=("direction", "i − s", "left", "i + s", "ring"),
        kind="index",
        patch=(
            (
                'return y, lax.ppermute(w_held, "x", _left(n))  # … while it moves on',
                'return y, lax.ppermute(w_held, "x", _right(n))  # … pass it to the next device',
            ),
        ),
    ),
    Held(
        id="hb3-l05-reducescatter-block-one-step-early",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "In the loop the learner adds its product for block (i − s − 1) mod N, the "
            "all-gather's owner formula, instead of (i − s − 2): the running sum that left "
            "device j with block j − 1 gets block j added next, so the sums mix blocks."
        ),
        cause=("i − s − 2", "block", "same block", "running sum", "off by one"),
        kind="off-by-one",
        patch=(
            (
                "return acc + product((me - s - 2) % n)",
                "return acc + product((me - s - 1) % n)",
            ),
        ),
    ),
    Held(
        id="hb3-l05-allgather-last-block-never-multiplied",
        module=M,
        exercise="allgather_matmul",
        what=(
            "The learner returns y straight after the N − 1 loop steps, forgetting that the "
            "block received at the last step still has to be multiplied: one of the N terms "
            "of every row is missing."
        ),
        cause=("last block", "n terms", "after the loop", "final", "missing"),
        kind="off-by-one",
        patch=(
            (
                "return (y + partial(w_last, n - 1)).astype(x_blk.dtype)",
                "return y.astype(x_blk.dtype)  # every block went through the loop",
            ),
        ),
    ),
]
