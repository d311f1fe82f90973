"""Held-back set 7, lesson 10 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb7-l10-merge-reference-zeroed-where-either-is-empty",
        module=M,
        exercise="merge_partials",
        what=(
            "Guarding against NaN, the learner replaces the reference point by 0 wherever "
            "either lse is −inf instead of only where both are: with one partial empty and the "
            "other's lse = ℓ, the weight of the non-empty one becomes e^ℓ instead of 1, so the "
            "merged o is scaled by e^ℓ (and overflows for ℓ > 88)."
        ),
        cause=("both", "−inf", "only where both", "reference point", "weights e^(lse"),
        kind="mask",
        patch=(
            (
                "    ref = jnp.where(jnp.isneginf(lse), 0.0, lse)  # both −inf: weights e^−inf = 0, not NaN\n",
                "    ref = jnp.where(jnp.isneginf(lse1) | jnp.isneginf(lse2), 0.0, lse)  # no NaN\n",
            ),
        ),
    ),
    Held(
        id="hb7-l10-ring-causal-mask-on-the-diagonal-block-only",
        module=M,
        exercise="ring_attention",
        what=(
            "Reading the causal picture as 'only the diagonal block needs the triangle', the "
            "learner masks the block it starts with and attends to every block that arrives "
            "round the ring unmasked: the queries of every device but the last also see the "
            "keys of later devices, their future."
        ),
        cause=("future", "every block", "global positions", "later blocks", "diagonal"),
        kind="mask",
        code="""
def ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, mesh: Mesh, causal: bool) -> jax.Array:
    def body(q_blk, k_blk, v_blk):
        n = lax.axis_size(AXIS)
        b = q_blk.shape[0]
        # the causal triangle lives on the diagonal block, the one we start with
        diagonal = jnp.arange(b)[:, None] >= jnp.arange(b)[None, :] if causal else None
        acc = merge_partials(*_empty(q_blk), *_block_attention(q_blk, k_blk, v_blk, diagonal))

        def step(s, carry):
            acc, kv = carry
            kv = lax.ppermute(kv, AXIS, _right(n))
            return merge_partials(*acc, *_block_attention(q_blk, *kv, None)), kv

        (o, _), _ = lax.fori_loop(1, n, step, (acc, (k_blk, v_blk)))
        return o.astype(q_blk.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=(ROWS, ROWS, ROWS), out_specs=ROWS)(q, k, v)
""",
    ),
    Held(
        id="hb7-l10-zigzag-later-block-first-key-chunk-only",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "Mirroring the earlier-device case, the learner lets the late query chunk attend "
            "to a later device's first key chunk j only, but both of that device's chunks, j "
            "and 2N − 1 − j, come before chunk 2N − 1 − i: the late queries miss the keys of "
            "every later device's second chunk."
        ),
        cause=("both key chunks", "second key chunk", "2n − 1 − j", "later device", "j > i"),
        kind="mask",
        patch=(
            (
                "            return acc[0], merge_partials(*acc[1], *_block_attention(q_blk[c:], *kv, None))\n",
                "            k_j, v_j = kv\n"
                "            late = _block_attention(q_blk[c:], k_j[:c], v_j[:c], None)\n"
                "            return acc[0], merge_partials(*acc[1], *late)\n",
            ),
        ),
    ),
]
