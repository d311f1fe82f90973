"""Held-back set 2, lesson 14 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb2-l14-params-embeddings-in-every-layer",
        module=M,
        exercise="param_count",
        what=(
            "The learner multiplies the embeddings by the number of layers along with the "
            "attention and MLP weights, though the embedding and unembedding exist once."
        ),
        cause=("embedding", "once", "not per layer", "2·d·v", "every layer"),
        kind="formula",
        patch=(
            (
                "return embeddings + m.layers * (attention + mlp)",
                "return m.layers * (embeddings + attention + mlp)",
            ),
        ),
    ),
    Held(
        id="hb2-l14-memory-optimizer-sharded-by-fsdp-only",
        module=M,
        exercise="memory_per_chip",
        what=(
            "Remembering ZeRO as 'the optimizer state is split over the data-parallel ranks', "
            "the learner divides Adam's 12 bytes per parameter by fsdp alone, though the "
            "state is split like the weights, by fsdp·tp·pp."
        ),
        cause=("fsdp·tp·pp", "tp·pp", "optimizer", "shards", "like the weights"),
        kind="factor",
        patch=(
            (
                '"optimizer": ADAM * p / shards,',
                '"optimizer": ADAM * p / plan.fsdp,  # ZeRO: split over the data ranks',
            ),
        ),
    ),
    Held(
        id="hb2-l14-time-tp-all-reduces-ignore-remat",
        module=M,
        exercise="step_time",
        what=(
            "The learner counts 4 tensor-parallel all-reduces per layer and micro-batch "
            "whatever the remat, though with remat='block' the recomputed forward runs its "
            "2 all-reduces again: 6."
        ),
        cause=("6", "remat", "recomput", "forward again", "per layer"),
        kind="formula",
        patch=(
            (
                'per_layer = 6 if plan.remat == "block" else 4',
                "per_layer = 4  # two forward, two backward",
            ),
        ),
    ),
    Held(
        id="hb2-l14-time-bubble-of-pp-stages",
        module=M,
        exercise="step_time",
        what=(
            "The learner takes the bubble as compute·pp/n_micro instead of "
            "compute·(pp − 1)/n_micro, so even a plan without pipeline (pp = 1) pays a bubble."
        ),
        cause=("pp − 1", "p − 1", "(p−1)/m", "off by one", "pp = 1"),
        kind="off-by-one",
        patch=(
            (
                "bubble = compute * (plan.pp - 1) / plan.n_micro",
                "bubble = compute * plan.pp / plan.n_micro",
            ),
        ),
    ),
]
