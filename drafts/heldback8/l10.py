"""Held-back set 8, lesson 10 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l10_context_parallel"

HELD: list[Held] = [
    Held(
        id="hb8-l10-zigzag-halves-split-strided",
        module=M,
        exercise="zigzag_ring_attention",
        what="The learner splits the diagonal block's result into the two query chunks by alternate rows (o[::2], o[1::2]) instead of the first and last c rows: the device's rows are chunk i then chunk 2N − 1 − i, contiguous, so each running partial mixes rows of both chunks and the output rows are shuffled.",
        cause=("contiguous", "first c rows", "o[:c]", "strided", "halves"),
        kind="layout",
        patch=(
            (
                "        halves = ((o[:c], lse[:c]), (o[c:], lse[c:]))",
                "        halves = ((o[::2], lse[::2]), (o[1::2], lse[1::2]))",
            ),
        ),
    ),
    Held(
        id="hb8-l10-ring-kv-packed-as-v-k",
        module=M,
        exercise="ring_attention",
        what="The learner packs the travelling pair as (v, k) but unpacks it as (k, v) in the attention: every block's scores are q·vᵀ and its outputs are weighted keys.",
        cause=("(k, v)", "order", "swapped", "values", "keys"),
        kind="leaf",
        patch=(
            (
                "lax.fori_loop(0, n - 1, step, (_empty(q_blk), (k_blk, v_blk)))",
                "lax.fori_loop(0, n - 1, step, (_empty(q_blk), (v_blk, k_blk)))",
            ),
        ),
    ),
]
