"""Held-back wrong programs for lesson 5 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb-l05-allgather-permute-then-multiply-step-index",
        module=M,
        exercise="allgather_matmul",
        what=(
            "Multiplies its own block first, then in each loop step receives the next block "
            "and pairs it with columns (i + s) mod N, although after s + 1 sends it holds block "
            "(i + s + 1) mod N: every received block meets the previous block's columns."
        ),
        cause=("s + 1", "off by one", "after the permute", "one step behind"),
        kind="off-by-one",
        code="""
from jax.sharding import PartitionSpec as P


def allgather_matmul(x, w, mesh):
    def body(x_blk, w_blk):
        n = lax.axis_size("x")
        me = lax.axis_index("x")
        d = w_blk.shape[0]

        def partial(w_held, s):
            cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)
            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)

        def step(s, carry):
            y, w_held = carry
            w_held = lax.ppermute(w_held, "x", _left(n))  # the next block arrives ...
            return y + partial(w_held, s), w_held  # ... and is multiplied at step s

        y = partial(w_blk, 0)  # my own block first
        y, _ = lax.fori_loop(0, n - 1, step, (y, w_blk))
        return y.astype(x_blk.dtype)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None)
    )(x, w)
""",
    ),
    Held(
        id="hb-l05-allgather-column-index-no-wrap",
        module=M,
        exercise="allgather_matmul",
        what=(
            "Slices X's columns at (i + s)·D/N without reducing i + s mod N: past the last "
            "block the dynamic slice clamps to the last columns instead of wrapping to block 0."
        ),
        cause=("mod n", "% n", "wrap", "clamp"),
        kind="index",
        patch=(
            (
                "cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)",
                "cols = lax.dynamic_slice_in_dim(x_blk, (me + s) * d, d, axis=1)",
            ),
        ),
    ),
    Held(
        id="hb-l05-reducescatter-starts-with-block-i-plus-1",
        module=M,
        exercise="matmul_reducescatter",
        what=(
            "Starts device i's running sum with its term for block (i + 1) mod N, reading "
            "'the sum that ends on device i starts on device i + 1' as the block index; "
            "device i must start block (i − 1) mod N, so from N = 3 the sums mix blocks."
        ),
        cause=("i - 1", "(i − 1)", "start", "first term"),
        kind="index",
        patch=(
            (
                "return lax.fori_loop(0, n - 1, step, product((me - 1) % n))",
                "return lax.fori_loop(0, n - 1, step, product((me + 1) % n))",
            ),
        ),
    ),
    Held(
        id="hb-l05-bidirectional-streams-swapped",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "Labels the two streams the wrong way: the copy sent left (arriving from the right) "
            "is paired with columns i − s and the copy sent right with columns i + s, so from "
            "N = 3 each arriving block meets the other block's columns."
        ),
        cause=("swapped", "direction", "from the right", "i + s"),
        kind="index",
        patch=(
            (
                "y = y + partial(from_right, me + s) + partial(from_left, me - s)",
                "y = y + partial(from_right, me - s) + partial(from_left, me + s)",
            ),
        ),
    ),
    Held(
        id="hb-l05-bidirectional-even-tail-without-send",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what=(
            "For even N multiplies the opposite block i + N/2 with the copy it already holds, "
            "skipping the last send: that block has not arrived yet, so the held block "
            "i + N/2 − 1 (its own at N = 2) is used twice and block i + N/2 never."
        ),
        cause=("last send", "not arrived", "n/2", "one send too few"),
        kind="off-by-one",
        patch=(
            (
                'from_right = lax.ppermute(from_right, "x", _left(n))\n'
                "            y = y + partial(from_right, me + n // 2)",
                "y = y + partial(from_right, me + n // 2)  # it is already here",
            ),
        ),
    ),
]
