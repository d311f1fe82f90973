"""Held-back wrong programs for lesson 10 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb-l10-merge-weights-swapped",
        module=M,
        exercise="merge_partials",
        what="The learner weights each partial output by the other partial's share of the "
        "softmax mass (w2·o1 + w1·o2), mixing up which weight belongs to which partial.",
        cause=("swapped", "other partial", "which partial", "e^{lse_a − lse}"),
        kind="index",
        patch=(
            (
                "return (w1 * o1 + w2 * o2).astype(o1.dtype), lse",
                "return (w2 * o1 + w1 * o2).astype(o1.dtype), lse",
            ),
        ),
    ),
    Held(
        id="hb-l10-merge-lse-is-the-larger",
        module=M,
        exercise="merge_partials",
        what="The learner merges the outputs correctly relative to the larger lse but returns "
        "max(lse1, lse2) as the union's lse instead of log(e^lse1 + e^lse2), so every later "
        "merge in the ring weights the accumulated partial too little.",
        cause=("logaddexp", "log-sum-exp of the union", "maximum", "max(lse"),
        kind="formula",
        code="""
def merge_partials(o1, lse1, o2, lse2):
    big = jnp.maximum(lse1, lse2)  # the larger one dominates the union
    ref = jnp.where(jnp.isneginf(big), 0.0, big)
    w1, w2 = jnp.exp(lse1 - ref), jnp.exp(lse2 - ref)
    total = w1 + w2
    o = (w1[..., None] * o1 + w2[..., None] * o2) / jnp.where(total == 0, 1.0, total)[..., None]
    return o.astype(o1.dtype), big
""",
    ),
    Held(
        id="hb-l10-ring-own-block-attended-twice",
        module=M,
        exercise="ring_attention",
        what="The learner starts the accumulator from the device's own K/V block and then runs "
        "the full ring loop, which attends to that block again, so its keys count twice in "
        "the softmax.",
        cause=("twice", "own block", "double", "n + 1 blocks"),
        kind="state",
        patch=(
            (
                "acc, kv = lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))",
                "first = attend(_empty(q_blk), (k_blk, v_blk), 0)  # start from my own block\n"
                "        acc, kv = lax.fori_loop(0, n - 1, step, (first, (k_blk, v_blk)))",
            ),
        ),
    ),
    Held(
        id="hb-l10-zigzag-earlier-uses-the-late-key-chunk",
        module=M,
        exercise="zigzag_ring_attention",
        what="For a block from an earlier device (j < i) the learner attends to its second key "
        "chunk 2N − 1 − j instead of its first chunk j, the one both query chunks can see.",
        cause=("first key chunk", "chunk j", "k[:c]", "wrong key chunk"),
        kind="index",
        patch=(
            (
                "o, lse = _block_attention(q_blk, k_j[:c], v_j[:c], None)",
                "o, lse = _block_attention(q_blk, k_j[c:], v_j[c:], None)",
            ),
        ),
    ),
]
