"""Held-back set 8, lesson 12 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l12_parallel_transformer"

HELD: list[Held] = [
    Held(
        id="hb8-l12-prediction-gather-of-the-whole-column",
        module=M,
        exercise="predict_step_bytes",
        what="The learner counts (G − 1) shards sent per all-gather but takes the shard to be the whole 'model' column of weights, forgetting that each device holds 1/data of it: the all-gather bytes come out data times too large.",
        cause=("1/data", "shard", "(g − 1)/g", "divide", "data"),
        kind="factor",
        patch=(
            (
                '        "all-gather": 2 * (data - 1) * weights // data,',
                '        "all-gather": 2 * (data - 1) * weights,',
            ),
        ),
    ),
    Held(
        id="hb8-l12-prediction-reduce-scatter-in-float32",
        module=M,
        exercise="predict_step_bytes",
        what="Believing gradients are reduce-scattered in float32, the learner counts 4 bytes a number for the reduce-scatter whatever itemsize says: the gradients have the params' dtype, so with bfloat16 the bytes are doubled.",
        cause=("itemsize", "float32", "4 bytes", "gradient dtype", "bfloat16"),
        kind="dtype",
        patch=(
            (
                '        "reduce-scatter": (data - 1) * weights // data,',
                '        "reduce-scatter": (data - 1) * (weights // itemsize * 4) // data,  # fp32 gradients',
            ),
        ),
    ),
    Held(
        id="hb8-l12-remat-without-the-save-policy",
        module=M,
        exercise="train_step",
        what="The learner wraps the block in jax.checkpoint without the policy that saves the mid-block h: the backward recomputes attention and with it attention's psum over 'model', one all-reduce of the activations more per layer than needed.",
        cause=("policy", "save_only_these_names", "mid", "checkpoint_name", "recompute"),
        kind="other",
        patch=(
            (
                "    block = jax.checkpoint(lambda h, w: _block(h, w, dh), policy=SAVE_MID)\n",
                "    block = jax.checkpoint(lambda h, w: _block(h, w, dh))\n",
            ),
        ),
    ),
]
