"""Held-back set 2, lesson 3 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l03_cost_model"

HELD: list[Held] = [
    Held(
        id="hb2-l03-permute-costed-as-a-ring-pass",
        module=M,
        exercise="collective_time",
        what=(
            "The learner costs a permute like an all-gather, N − 1 hops of V/N, though in a "
            "permute every device sends its shard one hop once: N − 1 times too slow."
        ),
        cause=("one hop", "permute", "single step", "n − 1", "once"),
        kind="formula",
        patch=(
            (
                "    return step  # permute: every device sends its shard one hop",
                "    return (n - 1) * step  # permute: the shard goes round the ring",
            ),
        ),
    ),
    Held(
        id="hb2-l03-all-to-all-without-latency",
        module=M,
        exercise="collective_time",
        what=(
            "For the all-to-all the learner keeps only the bandwidth term (N−1)/(2N)·V/W and "
            "drops the (N − 1) hop latencies, although every other collective pays α per hop."
        ),
        cause=("latency", "alpha", "per hop", "α"),
        kind="formula",
        patch=(
            (
                "return (n - 1) * alpha + (n - 1) / (2 * n) * nbytes / w",
                "return (n - 1) / (2 * n) * nbytes / w",
            ),
        ),
    ),
    Held(
        id="hb2-l03-predict-allgather-counts-own-block",
        module=M,
        exercise="predict_bytes",
        what=(
            "The learner counts N blocks of A sent in the all-gather case, its own included, "
            "though a device already holds its own block and sends N − 1."
        ),
        cause=("n − 1", "own block", "already holds", "n - 1", "one block too many"),
        kind="off-by-one",
        patch=(
            (
                "return (n - 1) * (i * j // n) * b",
                "return n * (i * j // n) * b  # N blocks of A, each [I, J/N]",
            ),
        ),
    ),
]
