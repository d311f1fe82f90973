"""Held-back set 8, lesson 14 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb8-l14-params-mlp-of-two-matrices",
        module=M,
        exercise="param_count",
        what="The learner counts a plain MLP, up and down projections, 2·D·F per layer; the lesson's models use SwiGLU with a gate as well, 3·D·F.",
        cause=("swiglu", "gate", "3·d·f", "three", "3*d*f"),
        kind="formula",
        patch=(("    mlp = 3 * d * m.d_ff\n", "    mlp = 2 * d * m.d_ff  # up and down\n"),),
    ),
    Held(
        id="hb8-l14-memory-grads-always-bf16",
        module=M,
        exercise="memory_per_chip",
        what="The learner counts the gradients at 2 bytes a parameter whatever plan.grads says: a plan with float32 gradients holds twice those bytes.",
        cause=("plan.grads", "fp32", "4 bytes", "float32 gradients", "grads"),
        kind="dtype",
        patch=(
            (
                '        "grads": GRADS[plan.grads] * p / shards,',
                '        "grads": BF16 * p / shards,',
            ),
        ),
    ),
    Held(
        id="hb8-l14-time-dp-all-reduce-of-the-whole-model",
        module=M,
        exercise="step_time",
        what="The learner all-reduces the gradient of the whole model over dp, 2·P bytes, though each chip holds and all-reduces only its shard, 2·P/(fsdp·tp·pp).",
        cause=("shard", "fsdp·tp·pp", "whole model", "per chip", "divided"),
        kind="factor",
        patch=(
            (
                '    dp = _ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
                '    dp = _ring("all_reduce", BF16 * p, plan.dp, dp_link)',
            ),
        ),
    ),
]
