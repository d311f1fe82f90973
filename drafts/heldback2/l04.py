"""Held-back set 2, lesson 4 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb2-l04-allreduce-sums-the-operands",
        module=M,
        exercise="matmul_allreduce",
        what=(
            "The learner all-reduces A's and B's blocks and multiplies the sums, "
            "psum(A_i) · psum(B_i), instead of all-reducing the partial products: the sum of "
            "products is not the product of sums, and it takes two all-reduces instead of one."
        ),
        cause=("partial product", "product of sums", "before multiplying", "operands"),
        kind="collective",
        patch=(
            (
                'return lax.psum(a_blk @ b_blk, "x")',
                'return lax.psum(a_blk, "x") @ lax.psum(b_blk, "x")  # add, then multiply',
            ),
        ),
    ),
    Held(
        id="hb2-l04-2d-out-specs-split-over-y",
        module=M,
        exercise="matmul_2d",
        what=(
            "On the 2-D mesh the learner writes out_specs=P('x', 'y'), but after the psum over "
            "'y' every device of a mesh row holds the same whole [I/X, K] block, so the result "
            "is 'y' copies side by side, [I, Y·K], instead of C[I_X, K]."
        ),
        cause=("out_specs", "p('x', none)", "replicated over 'y'", "shape"),
        kind="layout",
        patch=(
            (
                'in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None)',
                'in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", "y")',
            ),
        ),
    ),
    Held(
        id="hb2-l04-local-adds-a-psum",
        module=M,
        exercise="matmul_local",
        what=(
            "Thinking every shard_map needs a collective, the learner psums its rows of C over "
            "'x': each device's rows become the sum of every device's row block, and an "
            "all-reduce appears where the case needs no communication."
        ),
        cause=("no communication", "psum", "needs nothing", "own rows"),
        kind="collective",
        patch=(
            (
                "    def body(a_blk, b_full):\n        return a_blk @ b_full\n",
                "    def body(a_blk, b_full):\n"
                '        return lax.psum(a_blk @ b_full, "x")  # combine the devices\' results\n',
            ),
        ),
    ),
]
