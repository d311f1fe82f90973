"""Held-back set 4, lesson 10 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb4-l10-merge-lse-added",
        module=M,
        exercise="merge_partials",
        what=(
            "The learner takes the union's log-sum-exp as lse1 + lse2, adding the logs, though "
            "the denominators themselves add: log(e^lse1 + e^lse2). The lse and both weights "
            "e^(lse − lse_union) are wrong."
        ),
        cause=(
            "logaddexp",
            "log(e^lse1 + e^lse2)",
            "denominators add",
            "lse1 + lse2",
            "log-sum-exp",
        ),
        kind="formula",
        patch=(
            (
                "lse = jnp.logaddexp(lse1, lse2)",
                "lse = lse1 + lse2  # the logs of the two denominators",
            ),
        ),
    ),
    Held(
        id="hb4-l10-block-lse-without-its-max",
        module=M,
        exercise="ring_attention",
        what=(
            "In the block attention the learner returns lse = log Σ e^(s − m), forgetting to add "
            "the row max m back: each block's lse is shifted by its own max, so the merge weighs "
            "blocks with different maxima wrongly."
        ),
        cause=("max", "m +", "shift", "log-sum-exp", "stabil"),
        kind="formula",
        patch=(
            (
                "lse = (m[..., 0] + jnp.log(denom)).T",
                "lse = jnp.log(denom).T",
            ),
        ),
    ),
    Held(
        id="hb4-l10-zigzag-earlier-block-attended-whole",
        module=M,
        exercise="zigzag_ring_attention",
        what=(
            "For a block from an earlier device (j < i) the learner attends to both of its key "
            "chunks, reasoning 'an earlier device is in the past', but that block's second chunk "
            "2N − 1 − j lies after both of device i's query chunks: the queries see future keys."
        ),
        cause=("2n − 1 − j", "second key chunk", "future", "causal", "first key chunk"),
        kind="mask",
        patch=(
            (
                "o, lse = _block_attention(q_blk, k_j[:c], v_j[:c], None)",
                "o, lse = _block_attention(q_blk, k_j, v_j, None)  # an earlier device: all past",
            ),
        ),
    ),
]
