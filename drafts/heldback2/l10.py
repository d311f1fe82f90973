"""Held-back set 2, lesson 10 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb2-l10-merge-weights-relative-to-the-max",
        module=M,
        exercise="merge_partials",
        what=(
            "Reading 'computed relative to the larger lse' literally, the learner weights the "
            "partials by e^(lse − max(lse1, lse2)) instead of e^(lse − lse_union): the weights "
            "no longer add up to 1, so the merged output is too large wherever both saw keys."
        ),
        cause=("normalis", "add up to 1", "logaddexp", "union's lse", "sum to 1"),
        kind="formula",
        patch=(
            (
                "ref = jnp.where(jnp.isneginf(lse), 0.0, lse)",
                "ref = jnp.where(jnp.isneginf(lse), 0.0, jnp.maximum(lse1, lse2))  # the larger",
            ),
        ),
    ),
    Held(
        id="hb2-l10-ring-causal-mask-reversed",
        module=M,
        exercise="ring_attention",
        what=(
            "The learner writes the causal comparison the wrong way round, query position ≤ "
            "key position, so each query sees itself and its future instead of its past."
        ),
        cause=("future", "reversed", "q_pos >= k_pos", "past", "wrong way"),
        kind="mask",
        patch=(
            (
                "mask = rows[:, None] >= (j * b + jnp.arange(b))[None, :] if causal else None",
                "mask = rows[:, None] <= (j * b + jnp.arange(b))[None, :] if causal else None",
            ),
        ),
    ),
    Held(
        id="hb2-l10-block-scale-from-the-sequence-length",
        module=M,
        exercise="ring_attention",
        what=(
            "In the block attention the learner scales the scores by 1/√(q.shape[0]), the "
            "block's number of query rows, instead of 1/√Dh from the last dimension."
        ),
        cause=("√dh", "head dim", "shape[-1]", "scale", "last dimension"),
        kind="axis",
        patch=(("scale = q.shape[-1] ** -0.5", "scale = q.shape[0] ** -0.5"),),
    ),
    Held(
        id="hb2-l10-zigzag-earlier-skips-the-second-query-chunk",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "For a block from an earlier device (j < i) the learner merges the result into the "
            "first query chunk only, thinking the late chunk 2N − 1 − i is handled elsewhere, "
            "though both of device i's query chunks come after key chunk j."
        ),
        cause=("both query chunks", "second query chunk", "2n − 1 − i", "j < i", "late chunk"),
        kind="mask",
        patch=(
            (
                "return merge_partials(*acc[0], o[:c], lse[:c]), merge_partials(*acc[1], o[c:], lse[c:])",
                "return merge_partials(*acc[0], o[:c], lse[:c]), acc[1]  # chunk i sees chunk j",
            ),
        ),
    ),  # fmt: skip
]
