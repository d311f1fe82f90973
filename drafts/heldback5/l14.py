"""Held-back set 5, lesson 14 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb5-l14-flops-of-non-embedding-params",
        module=M,
        exercise="train_flops",
        what=(
            "Following the scaling-law papers' habit, the learner counts 6·N·T with N the "
            "non-embedding parameters, leaving the 2·D·V embedding and unembedding out: the "
            "unembedding is a real matmul every token pays (and the contract's P counts both)."
        ),
        cause=("embedding", "unembedding", "6·p·t", "all parameters", "2·d·v"),
        kind="formula",
        patch=(
            (
                "dense = 6 * param_count(m) * tokens",
                "dense = 6 * (param_count(m) - 2 * m.d_model * m.vocab) * tokens  # non-embedding",
            ),
        ),
    ),
    Held(
        id="hb5-l14-remat-one-micro-batch-of-inputs",
        module=M,
        exercise="memory_per_chip",
        what=(
            "With remat='block' the learner keeps each layer's 2·D-byte input for one "
            "micro-batch only, forgetting that under 1F1B the first stage holds min(n_micro, "
            "pp) micro-batches in flight: the kept inputs come out that many times too small."
        ),
        cause=("min(n_micro, pp)", "in flight", "micro-batches", "1f1b", "held"),
        kind="formula",
        patch=(
            (
                "activations = held * tokens * layers * BF16 * m.d_model + tokens * full_layer",
                "activations = tokens * layers * BF16 * m.d_model + tokens * full_layer",
            ),
        ),
    ),
    Held(
        id="hb5-l14-pipeline-hops-forward-only",
        module=M,
        exercise="step_time",
        what=(
            "The learner costs one hop per micro-batch between stages, the forward activation, "
            "and forgets that its gradient travels back the same way in the backward: the "
            "pipeline term is half what it should be."
        ),
        cause=("backward", "gradient", "two hops", "2·n_micro", "back"),
        kind="factor",
        patch=(
            (
                "pp = 2 * plan.n_micro * (latency + act / bandwidth)",
                "pp = plan.n_micro * (latency + act / bandwidth)",
            ),
        ),
    ),
    Held(
        id="hb5-l14-search-never-tries-remat",
        module=M,
        exercise="best_plan",
        what=(
            "Since remat only adds compute and never makes a step faster, the learner searches "
            "remat='none' alone: where no plan fits without remat it raises 'no plan fits' (or "
            "settles for a slower plan) although a remat='block' plan fits and is faster."
        ),
        cause=("remat", "block", "fits", "memory", "search"),
        kind="other",
        patch=(('for remat in ("none", "block"):', 'for remat in ("none",):'),),
    ),
]
