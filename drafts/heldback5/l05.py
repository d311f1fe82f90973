"""Held-back set 5, lesson 5 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb5-l05-allgather-columns-by-step-alone",
        module=M,
        exercise="allgather_matmul",
        what=(
            "The learner slices X's columns for step s at block s, the step alone, instead of "
            "block (i + s) mod N, the block it holds after s sends to the left: right on device "
            "0 only, every other device pairs W block i + s with columns s."
        ),
        cause=("i + s", "device index", "axis_index", "block it holds", "device 0"),
        kind="index",
        patch=(
            (
                "cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)",
                "cols = lax.dynamic_slice_in_dim(x_blk, (s % n) * d, d, axis=1)",
            ),
        ),
    ),
    Held(
        id="hb5-l05-bidirectional-tail-skipped-on-two-devices",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "The learner guards the even-N tail step with n > 2, thinking a ring of two has "
            "no 'opposite' block: at N = 2 the loop runs no step (⌊(N − 1)/2⌋ = 0), so the "
            "tail is the only place the other device's block i + 1 = i + N/2 is received, and "
            "Y misses that term (N = 4, 6, 8 are right)."
        ),
        cause=("n = 2", "two devices", "n/2", "tail", "opposite block"),
        kind="off-by-one",
        patch=(
            (
                "if n % 2 == 0 and n > 1:  # block me + N/2",
                "if n % 2 == 0 and n > 2:  # block me + N/2",
            ),
        ),
    ),
    Held(
        id="hb5-l05-bidirectional-steps-n-over-2-for-odd-n",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "The learner runs the two-way loop for s = 1 … N//2 − 1 (range(1, N // 2)), reading "
            "'all N blocks have visited after ⌊N/2⌋ steps' as the loop's upper bound: for even "
            "N the tail step still brings block i + N/2, but for odd N the last pair of blocks, "
            "i ± (N − 1)/2, never arrives (at N = 3 only the own block is multiplied)."
        ),
        cause=("(n − 1) / 2", "odd", "one step short", "loop bound", "never arrive"),
        kind="off-by-one",
        patch=(
            (
                "lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))",
                "lax.fori_loop(1, n // 2, step, (y, w_blk, w_blk))",
            ),
        ),
    ),
]
