"""Held-back set 3, lesson 4 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb3-l04-conflict-gathers-the-product",
        module=M,
        exercise="matmul_conflict",
        what=(
            "To send fewer bytes the learner multiplies its own blocks first and all-gathers "
            "the [I/N, K/N] products along K: device j's product holds rows j of C, so the "
            "gathered columns belong to other devices' rows."
        ),
        cause=(
            "gather b",
            "other devices' rows",
            "rows of a",
            "before multiplying",
            "columns of b",
        ),
        kind="collective",
        patch=(
            (
                '        b_full = lax.all_gather(b_blk, "x", axis=1, tiled=True)\n'
                "        return a_blk @ b_full",
                "        # multiply first: the product is smaller than B, so gather that\n"
                '        return lax.all_gather(a_blk @ b_blk, "x", axis=1, tiled=True)',
            ),
        ),
    ),
    Held(
        id="hb3-l04-allreduce-as-gather-and-sum",
        module=M,
        exercise="matmul_allreduce",
        what=(
            "The learner all-gathers every device's partial C and sums the stack locally: "
            "the value is right, but each device receives N − 1 whole [I, K] partials "
            "instead of an all-reduce's 2(N − 1)/N of one."
        ),
        cause=("all-reduce", "psum", "bytes", "all-gather", "n − 1 partials"),
        kind="collective",
        patch=(
            (
                'return lax.psum(a_blk @ b_blk, "x")',
                'return lax.all_gather(a_blk @ b_blk, "x", to="invarying").sum(axis=0)',
            ),
        ),
    ),
    Held(
        id="hb3-l04-2d-gathers-both-over-y",
        module=M,
        exercise="matmul_2d",
        what=(
            "The learner gathers A's columns and B's rows over 'y' and multiplies whole "
            "operands, instead of multiplying the local blocks and all-reducing the [I/X, K] "
            "partial over 'y': right values, far more bytes and the wrong collective."
        ),
        cause=("all-reduce", "psum", "partial", "operands", "bytes"),
        kind="collective",
        patch=(
            (
                'return lax.psum(a_blk @ b_blk, "y")',
                'a_full = lax.all_gather(a_blk, "y", axis=1, tiled=True, to="invarying")\n'
                '        b_full = lax.all_gather(b_blk, "y", axis=0, tiled=True, to="invarying")\n'
                "        return a_full @ b_full",
            ),
        ),
    ),
]
