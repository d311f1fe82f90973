"""Held-back wrong programs for lesson 14 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb-l14-remat-recomputed-layer-not-counted",
        module=M,
        exercise="memory_per_chip",
        what=(
            "With remat='block' the learner counted only each layer's kept input, 2·D bytes "
            "a token, and forgot the one layer's full activations of one micro-batch that "
            "the backward's recomputation holds on top."
        ),
        cause=("one layer's full activations", "recompute", "on top", "full activations"),
        kind="formula",
        patch=(
            (
                "activations = held * tokens * layers * BF16 * m.d_model + tokens * full_layer",
                "activations = held * tokens * layers * BF16 * m.d_model  # the block inputs",
            ),
        ),
    ),
    Held(
        id="hb-l14-pipeline-hops-on-the-link-of-pp-chips",
        module=M,
        exercise="step_time",
        what=(
            "The learner chose the pipeline hop's link from a span of pp chips, as if the "
            "stages were neighbours, though pp is the outermost axis and its groups span "
            "every chip: pp = 8 on 8-chip nodes goes over InfiniBand, not NVLink."
        ),
        cause=("outermost", "span", "across nodes", "inter-node"),
        kind="axis",
        patch=(
            (
                "bandwidth, latency = _link(hw, chips)",
                "bandwidth, latency = _link(hw, plan.pp)",
            ),
        ),
    ),
    Held(
        id="hb-l14-mfu-counts-the-recompute",
        module=M,
        exercise="step_time",
        what=(
            "The learner computed MFU from the FLOPs the hardware runs, the 4/3 with remat "
            "included, which is the hardware FLOP utilisation (HFU), not MFU's model FLOPs."
        ),
        cause=("hfu", "recompute", "model flops", "hardware flop"),
        kind="formula",
        patch=(
            (
                'out["mfu"] = model_flops / (hw.chips * hw.peak_flops * out["total"])',
                'out["mfu"] = flops / (hw.chips * hw.peak_flops * out["total"])',
            ),
        ),
    ),
    Held(
        id="hb-l14-dp-all-reduce-every-micro-batch",
        module=M,
        exercise="step_time",
        what=(
            "The learner all-reduced the data-parallel gradient once per micro-batch instead "
            "of once per step after accumulating, so the dp term is n_micro times too large."
        ),
        cause=("once per step", "per micro-batch", "every micro-batch", "accumulat"),
        kind="factor",
        patch=(
            (
                'dp = _ring("all_reduce", BF16 * p',
                'dp = plan.n_micro * _ring("all_reduce", BF16 * p',
            ),
        ),
    ),
]
