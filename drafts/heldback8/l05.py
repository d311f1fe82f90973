"""Held-back set 8, lesson 5 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l05_collective_matmul"

HELD: list[Held] = [
    Held(
        id="hb8-l05-allgather-accumulates-in-bfloat16",
        module=M,
        exercise="allgather_matmul",
        what="The learner accumulates the N block products in the inputs' dtype (no preferred_element_type, a bf16 running sum): with bfloat16 inputs each addition rounds to 8 bits of mantissa, so the result drifts from the float32-accumulated product.",
        cause=("float32", "preferred_element_type", "accumulat", "bfloat16", "running sum"),
        kind="dtype",
        patch=(
            (
                "            cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)\n            return jnp.dot(cols, w_held, preferred_element_type=jnp.float32)\n",
                "            cols = lax.dynamic_slice_in_dim(x_blk, ((me + s) % n) * d, d, axis=1)\n            return jnp.dot(cols, w_held)\n",
            ),
            (
                "        y = jnp.zeros((x_blk.shape[0], w_blk.shape[1]), jnp.float32)\n",
                "        y = jnp.zeros((x_blk.shape[0], w_blk.shape[1]), x_blk.dtype)\n",
            ),
        ),
    ),
    Held(
        id="hb8-l05-reducescatter-strided-columns",
        module=M,
        exercise="matmul_reducescatter",
        what="The learner takes output block k as the strided columns k, k + N, k + 2N, … of W (round-robin ownership) instead of the contiguous columns k·F/N … (k+1)·F/N − 1 that P(None, 'x') gives device k.",
        cause=("contiguous", "strided", "block k", "k·f/n", "columns"),
        kind="layout",
        patch=(
            (
                "            cols = lax.dynamic_slice_in_dim(w_blk, block * f, f, axis=1)\n",
                "            cols = jnp.take(w_blk, block + n * jnp.arange(f), axis=1)  # columns block, block + N, …\n",
            ),
        ),
    ),
    Held(
        id="hb8-l05-bidirectional-even-tail-from-both-sides-halved",
        module=M,
        exercise="allgather_matmul_bidirectional",
        what="For even N the learner fetches the opposite block me + N/2 from both neighbours and adds half of each product: the values are right, but one block more is sent per device than needed (the lesson says take it from one side only).",
        cause=("one side", "both sides", "n/2", "extra", "twice"),
        kind="collective",
        patch=(
            (
                '            from_right = lax.ppermute(from_right, "x", _left(n))\n            y = y + partial(from_right, me + n // 2)\n',
                '            from_right = lax.ppermute(from_right, "x", _left(n))\n            from_left = lax.ppermute(from_left, "x", _right(n))\n            y = y + 0.5 * partial(from_right, me + n // 2) + 0.5 * partial(from_left, me - n // 2)\n',
            ),
            (
                "        y, from_right, _ = lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))\n",
                "        y, from_right, from_left = lax.fori_loop(1, (n - 1) // 2 + 1, step, (y, w_blk, w_blk))\n",
            ),
        ),
    ),
]
