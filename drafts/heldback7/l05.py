"""Held-back set 7, lesson 5 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb7-l05-allgather-last-product-at-step-n",
        module=M,
        exercise="allgather_matmul",
        what=(
            "For the product after the loop the learner passes the step count N instead of "
            "N − 1, so it pairs the last block it received, block (i + N − 1) mod N, with "
            "columns (i + N) mod N = i, its own: one term of every row of Y uses the wrong "
            "columns of X (from N = 2 on)."
        ),
        cause=("n − 1", "last block", "columns", "(i + n − 1)", "own columns"),
        kind="off-by-one",
        patch=(
            (
                "        return (y + partial(w_last, n - 1)).astype(x_blk.dtype)\n",
                "        return (y + partial(w_last, n)).astype(x_blk.dtype)\n",
            ),
        ),
    ),
    Held(
        id="hb7-l05-bidirectional-left-stream-with-columns-i-plus-s",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "A copy-paste slip in the two-way loop: the block arriving from the left, block "
            "i − s, is multiplied by columns i + s like the block from the right: both streams "
            "use the same columns, and the left stream's blocks meet the wrong columns of X "
            "(from N = 3 on)."
        ),
        cause=("i − s", "left stream", "columns", "from the left", "paired"),
        kind="index",
        patch=(
            (
                "            y = y + partial(from_right, me + s) + partial(from_left, me - s)\n",
                "            y = y + partial(from_right, me + s) + partial(from_left, me + s)\n",
            ),
        ),
    ),
    Held(
        id="hb7-l05-reducescatter-sends-its-term-not-the-sum",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "The learner sends its own term for the block of the step and adds what arrives to "
            "a sum that stays put, instead of passing the running sum on: each device adds up "
            "terms its left neighbour computed for N − 1 different output blocks, and never "
            "the other devices' terms of its own block i."
        ),
        cause=("running sum", "travels", "pass the sum", "partial sum", "block i"),
        kind="collective",
        code="""
def matmul_reducescatter(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        f = w_blk.shape[1] // n

        def product(block):
            cols = lax.dynamic_slice_in_dim(w_blk, block * f, f, axis=1)
            return x_blk @ cols

        def step(s, acc):
            # send my term for this step's block; add the one that comes in
            return acc + lax.ppermute(product((me - s - 2) % n), "x", _right(n))

        return lax.fori_loop(0, n - 1, step, product((me - 1) % n))

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P(None, "x")
    )(x, w)
""",
    ),
]
