"""Held-back set 6, lesson 5 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb6-l05-reducescatter-one-lap-of-n-steps",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "The learner runs the running-sum loop for N steps, one per device, instead of N − 1: "
            "each sum takes one hop more and adds one term more, so device i returns block "
            "i − 1's sum plus an extra copy of one term instead of block i's sum."
        ),
        cause=("n − 1", "N - 1", "one step too many", "steps", "extra hop"),
        kind="off-by-one",
        patch=(
            (
                "        return lax.fori_loop(0, n - 1, step, product((me - 1) % n))",
                "        return lax.fori_loop(0, n, step, product((me - 1) % n))  # one step per device",
            ),
        ),
    ),
    Held(
        id="hb6-l05-bidirectional-own-block-in-both-streams",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "Copying allgather_matmul's 'multiply the block we hold, then pass it on' into both "
            "streams, the learner starts the loop at s = 0 with both streams holding its own "
            "block: the own block's product is added twice, every other block once."
        ),
        cause=("own block", "twice", "counted twice", "double", "both streams"),
        kind="other",
        code="""
def allgather_matmul_bidirectional(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]

        def partial(w_held, block):
            cols = lax.dynamic_slice_in_dim(x_blk, (block % n) * d, d, axis=1)
            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)

        def step(s, carry):  # multiply the two blocks we hold, then pass them on
            y, from_right, from_left = carry
            y = y + partial(from_right, me + s) + partial(from_left, me - s)
            from_right = lax.ppermute(from_right, "x", _left(n))  # now block me + s + 1
            from_left = lax.ppermute(from_left, "x", _right(n))  # now block me - s - 1
            return y, from_right, from_left

        y = lax.pcast(jnp.zeros((x_blk.shape[0], w_blk.shape[1]), jnp.float32), "x", to="varying")
        y, from_right, _ = lax.fori_loop(0, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))
        if n % 2 == 0 and n > 1:  # the opposite block has just arrived from the right
            y = y + partial(from_right, me + n // 2)
        return y.astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
    ),
    Held(
        id="hb6-l05-bidirectional-tail-left-stream-sent-left",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "For even N the learner takes the opposite block i − N/2 from the stream that came "
            "from the left but sends it one more hop to the left, the other stream's direction: "
            "the block that arrives is i − N/2 + 2, not i − N/2 (right at N = 2 and for odd N, wrong "
            "for even N ≥ 4)."
        ),
        cause=("direction", "_right", "opposite block", "stream", "i − N/2", "sent the wrong way"),
        kind="index",
        patch=(
            (
                "        y, from_right, _ = lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))",
                "        y, from_right, from_left = lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))",
            ),
            (
                '            from_right = lax.ppermute(from_right, "x", _left(n))\n'
                "            y = y + partial(from_right, me + n // 2)",
                '            from_left = lax.ppermute(from_left, "x", _left(n))\n'
                "            y = y + partial(from_left, me - n // 2)",
            ),
        ),
    ),
]
