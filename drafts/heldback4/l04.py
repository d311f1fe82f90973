"""Held-back set 4, lesson 4 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l04_sharded_matmul"

HELD: list[Held] = [
    Held(
        id="hb4-l04-allgather-as-sliced-all-reduce",
        module=M,
        exercise="matmul_allgather",
        what=(
            "Seeing A's contracting dim split, the learner slices the rows of the whole B that "
            "meet its columns of A and all-reduces the partial products: the values are right, "
            "but it all-reduces C [I, K] where the case is one all-gather of A."
        ),
        cause=("all-gather of a", "all-reduce", "psum", "gather a", "instead of gathering"),
        kind="collective",
        code="""
def matmul_allgather(a, b, mesh):
    def body(a_blk, b_full):
        me = lax.axis_index("x")
        j = a_blk.shape[1]
        rows = lax.dynamic_slice_in_dim(b_full, me * j, j, axis=0)  # B's rows for my columns
        return lax.psum(a_blk @ rows, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(None, "x"), P()), out_specs=P())(a, b)
""",
    ),
    Held(
        id="hb4-l04-reducescatter-reshaped-for-untiled",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "To get the leading axis of size N an untiled psum_scatter wants, the learner "
            "reshapes the partial C [I, K] to [N, I, K/N] without moving the column blocks "
            "first: each 'block' is a run of consecutive memory, not columns k·K/N … of C."
        ),
        cause=("reshape", "column blocks", "transpose", "tiled", "memory order"),
        kind="layout",
        patch=(
            (
                'return lax.psum_scatter(a_blk @ b_blk, "x", scatter_dimension=1, tiled=True)',
                "c = a_blk @ b_blk  # the partial C [I, K]\n"
                '        n = lax.axis_size("x")\n'
                '        return lax.psum_scatter(c.reshape(n, c.shape[0], -1), "x", scatter_dimension=0)',
            ),
        ),
    ),
    Held(
        id="hb4-l04-conflict-gathers-b-in-bfloat16",
        module=M,
        exercise="matmul_conflict",
        what=(
            "To halve the bytes the learner casts B's blocks to bfloat16 before the all-gather "
            "and multiplies float32 A by the rounded B: the product loses B's low bits, off by "
            "about 1e-3 relative, though the case asked for C in the inputs' precision."
        ),
        cause=("bfloat16", "precision", "cast", "rounded", "dtype"),
        kind="dtype",
        patch=(
            (
                'b_full = lax.all_gather(b_blk, "x", axis=1, tiled=True)',
                'b_full = lax.all_gather(b_blk.astype("bfloat16"), "x", axis=1, tiled=True)  # half the bytes',
            ),
        ),
    ),
]
