"""Held-back set 5, lesson 12 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb5-l12-embed-rule-unsplit",
        module=M,
        exercise="shard_params",
        what=(
            "Mixing up the params' embedding dim with the activations' (act_embed, which stays "
            "whole), the learner maps 'embed' to None: every weight is split over 'model' only "
            "and replicated over 'data', so FSDP is gone and each device holds data times its "
            "share of the params."
        ),
        cause=("embed", "fsdp", "'data'", "replicated over", "act_embed"),
        kind="layout",
        patch=(
            (
                '"embed": "data",  # FSDP: every weight split over \'data\' on D',
                '"embed": None,  # D stays whole, like the activations\'',
            ),
        ),
    ),
    Held(
        id="hb5-l12-attention-vmapped-over-the-heads",
        module=M,
        exercise="train_step",
        what=(
            "The learner vmaps the single-head attention over the heads axis (in_axes=2) "
            "instead of the batch: each call gets a [B, S, Dh] slice that attention reads as "
            "[S, H, Dh], so the softmax and the causal mask run over the batch's sequences, "
            "not over each sequence's positions."
        ),
        cause=("vmap", "batch", "in_axes", "sequence", "positions"),
        kind="axis",
        patch=(
            (
                "o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True))(q, k, v)",
                "o = jax.vmap(lambda q, k, v: attention(q, k, v, causal=True), in_axes=2, out_axes=2)(\n"
                "        q, k, v\n    )",
            ),
        ),
    ),
    Held(
        id="hb5-l12-prediction-counts-x-as-a-weight",
        module=M,
        exercise="predict_step_bytes",
        what=(
            "The learner sums the sizes of every entry of shapes as the weights to gather and "
            "reduce-scatter, 'x' included: the batch is never all-gathered over 'data' nor "
            "reduce-scattered, so both predictions are too large by |x|'s share."
        ),
        cause=("'x'", "batch", "weights only", "not a weight", "param names"),
        kind="formula",
        patch=(
            (
                "weights = sum(_size(shapes[k]) for k in NAMES) * itemsize // model",
                "weights = sum(_size(s) for s in shapes.values()) * itemsize // model",
            ),
        ),
    ),
]
