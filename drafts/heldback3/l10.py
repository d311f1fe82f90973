"""Held-back set 3, lesson 10 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb3-l10-block-max-over-the-queries",
        module=M,
        exercise="ring_attention",
        what=(
            "In the block attention the learner takes the running max over axis −2 (the "
            "queries) instead of −1 (the keys): each key column is shifted by its own "
            "amount, which changes the softmax weights and the lse."
        ),
        cause=("axis", "over the keys", "row max", "per row", "max"),
        kind="axis",
        patch=(
            (
                "m = jnp.max(s, axis=-1, keepdims=True)",
                "m = jnp.max(s, axis=-2, keepdims=True)",
            ),
        ),
    ),
    Held(
        id="hb3-l10-empty-partial-lse-zero",
        module=M,
        exercise="ring_attention",
        what=(
            "The learner starts the running partial with lse = 0 like o, instead of −inf: "
            "the empty start then weighs like a real block whose denominator is e⁰ = 1 and "
            "pulls every output towards 0."
        ),
        cause=("−inf", "-inf", "empty", "initial lse", "no keys"),
        kind="state",
        patch=(
            (
                "lse = jnp.full(q.shape[:2], -jnp.inf, jnp.float32)",
                "lse = jnp.zeros(q.shape[:2], jnp.float32)",
            ),
        ),
    ),
    Held(
        id="hb3-l10-ring-mask-block-ahead",
        module=M,
        exercise="ring_attention",
        what=(
            "For the causal mask the learner takes the block held after s steps to be "
            "(i + s) mod N, but sending to i + 1 it is (i − s) mod N: the key positions "
            "compared are another block's, so the mask is wrong (non-causal is unaffected)."
        ),
        cause=("i − s", "which block", "key positions", "direction", "started on"),
        kind="index",
        patch=(
            (
                "j = (me - s) % n  # sending to i + 1: after s steps we hold block i − s",
                "j = (me + s) % n  # the block s steps along the ring",
            ),
        ),
    ),
    Held(
        id="hb3-l10-zigzag-halves-concatenated-swapped",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "The learner concatenates the late chunk's output before the early chunk's: "
            "device i's rows come back as chunk 2N − 1 − i then chunk i, not in the order "
            "its queries came."
        ),
        cause=("order", "chunk i first", "concatenate", "first half", "layout"),
        kind="layout",
        patch=(
            (
                "return jnp.concatenate([o_first, o_second]).astype(q_blk.dtype)",
                "return jnp.concatenate([o_second, o_first]).astype(q_blk.dtype)",
            ),
        ),
    ),
]
