"""Held-back set 4, lesson 14 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb4-l14-flops-attention-forward-only",
        module=M,
        exercise="train_flops",
        what=(
            "The learner counts attention's Q·Kᵀ and P·V as 4·L·N·H·S FLOPs a token, the "
            "forward pass only, forgetting that the backward costs twice the forward: 12, "
            "as for the weights' 6 = 2 + 4."
        ),
        cause=("backward", "12·l·n·h·s", "forward only", "three times", "factor 3"),
        kind="factor",
        patch=(
            (
                "attention = 12 * m.layers * m.heads * m.head_dim * m.seq * tokens",
                "attention = 4 * m.layers * m.heads * m.head_dim * m.seq * tokens",
            ),
        ),
    ),
    Held(
        id="hb4-l14-remat-layer-recomputed-per-held-micro-batch",
        module=M,
        exercise="memory_per_chip",
        what=(
            "With remat='block' the learner charges the one recomputed layer's full activations "
            "for every micro-batch held in flight, min(n_micro, pp) of them, though the backward "
            "recomputes one layer of one micro-batch at a time."
        ),
        cause=("one layer", "one micro-batch", "recompute", "held", "at a time"),
        kind="factor",
        patch=(
            (
                "activations = held * tokens * layers * BF16 * m.d_model + tokens * full_layer",
                "activations = held * tokens * (layers * BF16 * m.d_model + full_layer)",
            ),
        ),
    ),
    Held(
        id="hb4-l14-mfu-over-the-compute-time",
        module=M,
        exercise="step_time",
        what=(
            "The learner divides the model FLOPs by chips · peak · the compute time instead of "
            "the step's total: the bubble and every collective are left out, so MFU comes out "
            "1 without remat (3/4 with it) whatever the plan."
        ),
        cause=("total", "step time", "bubble", "communication", "compute time"),
        kind="formula",
        patch=(
            (
                'out["mfu"] = model_flops / (hw.chips * hw.peak_flops * out["total"])',
                'out["mfu"] = model_flops / (hw.chips * hw.peak_flops * out["compute"])',
            ),
        ),
    ),
    Held(
        id="hb4-l14-search-memory-of-the-replica-batch",
        module=M,
        exercise="best_plan",
        what=(
            "The learner passes each replica's batch, B/(dp·fsdp), to memory_per_chip, which "
            "divides by dp·fsdp itself: the activations come out dp·fsdp times too small, and "
            "plans that do not fit in HBM are taken."
        ),
        cause=("global batch", "dp·fsdp", "divided twice", "does not fit", "activations"),
        kind="other",
        patch=(
            (
                'if memory_per_chip(m, plan, global_batch)["total"] <= hw.hbm_bytes:',
                'if memory_per_chip(m, plan, global_batch // (dp * fsdp))["total"] <= hw.hbm_bytes:',
            ),
        ),
    ),
]
