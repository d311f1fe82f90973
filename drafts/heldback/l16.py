"""Held-back wrong programs for lesson 16 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l16_serving"

HELD: list[Held] = [
    Held(
        id="hb-l16-decode-writes-the-cache-at-pos-plus-one",
        module=M,
        exercise="decode_step",
        what=(
            "The learner wrote the new token's keys and values at pos + 1 instead of pos, so "
            "attention over 0 … pos sees an empty slot where the new token belongs and never "
            "the token itself."
        ),
        cause=("pos + 1", "written at", "wrong position", "write"),
        kind="off-by-one",
        patch=(
            (
                "cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos, 0, 0))  # in place",
                "cache = lax.dynamic_update_slice(cache, new, (i, 0, 0, pos + 1, 0, 0))"
                "  # after the pos cached tokens",
            ),
        ),
    ),
    Held(
        id="hb-l16-max-batch-rounded-not-floored",
        module=M,
        exercise="max_batch",
        what=(
            "The learner rounded the number of caches that fit to the nearest integer instead "
            "of flooring it, so a fraction of a sequence ≥ ½ counts as a whole one that does "
            "not fit (17 for LLaMA-2-13B on 8 v5e, not 16)."
        ),
        cause=("floor", "round down", "rounded", "⌊"),
        kind="other",
        patch=(
            (
                "return max(0, int(free // kv_cache_bytes(m, context, itemsize)))",
                "return max(0, round(free / kv_cache_bytes(m, context, itemsize)))",
            ),
        ),
    ),
    Held(
        id="hb-l16-prefill-attention-not-halved-for-the-mask",
        module=M,
        exercise="prefill_time",
        what=(
            "The learner counted prefill's Q·Kᵀ and P·V over the whole T×T (as lesson 14's "
            "model-FLOPs convention does), though this lesson's causal prefill does T²/2 "
            "of them: 4·L·N·H·T² where 2·L·N·H·T² is asked."
        ),
        cause=("causal", "half", "t²/2", "t^2/2"),
        kind="factor",
        patch=(
            (
                "flops += 2.0 * m.layers * m.heads * m.head_dim * batch * tokens**2",
                "flops += 4.0 * m.layers * m.heads * m.head_dim * batch * tokens**2",
            ),
        ),
    ),
    Held(
        id="hb-l16-decode-weights-read-per-sequence",
        module=M,
        exercise="decode_step_time",
        what=(
            "The learner charged the weights' HBM read once per sequence, B·P·itemsize, "
            "though the batch shares one read of the weights per step."
        ),
        cause=("shared", "read once", "whole batch", "once per step"),
        kind="factor",
        patch=(
            (
                "p * itemsize / bandwidth)",
                "batch * p * itemsize / bandwidth)  # each sequence reads them",
            ),
        ),
    ),
    Held(
        id="hb-l16-gqa-own-rows-indexed-by-data",
        module=M,
        exercise="decode_step_gqa",
        what=(
            "The learner found the device's own B/(data·model) rows of h with "
            "lax.axis_index('data') instead of lax.axis_index('model'), so each device "
            "computes and caches keys and values for another device's sequences."
        ),
        cause=("axis_index", "wrong rows", "own rows", "'model' index"),
        kind="index",
        patch=(
            (
                "mine = lax.axis_index(MODEL) * rows",
                "mine = lax.axis_index(DATA) * rows  # my rows of the batch",
            ),
        ),
    ),
    Held(
        id="hb-l16-speculative-residual-sign-flipped",
        module=M,
        exercise="verify_draft",
        what=(
            "The learner resampled a rejected token from max(q − p, 0), the tokens the draft "
            "over-proposes, instead of max(p − q, 0), the mass the target is missing."
        ),
        cause=("p − q", "p - q", "max(p − q", "the target is missing"),
        kind="formula",
        patch=(
            (
                "residual = np.maximum(p - q, 0.0)",
                "residual = np.maximum(q - p, 0.0)",
            ),
        ),
    ),
]
