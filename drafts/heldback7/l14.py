"""Held-back set 7, lesson 14 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb7-l14-params-embedding-tied",
        module=M,
        exercise="param_count",
        what=(
            "Used to GPT-2's tied weights, the learner counts one D·V table for the embedding "
            "and the unembedding together, while the lesson's models keep them untied: D·V "
            "parameters are missing."
        ),
        cause=("untied", "2·d·v", "unembedding", "embedding and", "two tables"),
        kind="formula",
        patch=(
            (
                "    embeddings = 2 * d * m.vocab\n",
                "    embeddings = d * m.vocab  # one table, shared by input and output\n",
            ),
        ),
    ),
    Held(
        id="hb7-l14-flops-attention-halved-for-the-mask",
        module=M,
        exercise="train_flops",
        what=(
            "Knowing that a causal mask needs only half the S×S scores, the learner counts "
            "attention as 6·L·N·H·S·T, half of the model-FLOPs convention's 12·L·N·H·S·T, which "
            "counts the whole score matrix: the attention term is half of what MFU counts."
        ),
        cause=("whole s×s", "causal", "half", "12·l·n·h·s", "palm"),
        kind="factor",
        patch=(
            (
                "    attention = 12 * m.layers * m.heads * m.head_dim * m.seq * tokens\n",
                "    attention = 6 * m.layers * m.heads * m.head_dim * m.seq * tokens  # causal: half\n",
            ),
        ),
    ),
    Held(
        id="hb7-l14-memory-optimizer-split-over-replicas-too",
        module=M,
        exercise="memory_per_chip",
        what=(
            "Mixing in ZeRO-1, the learner divides Adam's 12 bytes per parameter by dp as well "
            "as by fsdp·tp·pp: in this lesson's plans every data-parallel replica keeps its own "
            "optimizer state, so the optimizer term is dp times too small whenever dp > 1."
        ),
        cause=("data-parallel", "replica", "every replica", "not split by dp", "fsdp·tp·pp"),
        kind="factor",
        patch=(
            (
                '        "optimizer": ADAM * p / shards,\n',
                '        "optimizer": ADAM * p / (shards * plan.dp),  # ZeRO: spread over the replicas\n',
            ),
        ),
    ),
    Held(
        id="hb7-l14-time-bubble-as-a-share-of-the-step",
        module=M,
        exercise="step_time",
        what=(
            "The learner adds the bubble as compute·(pp − 1)/(n_micro + pp − 1), lesson 9's "
            "bubble fraction, but that is the idle share of the whole pipelined step, not an "
            "addition to the compute time: the extra time is compute·(pp − 1)/n_micro."
        ),
        cause=(
            "(pp − 1)/n_micro",
            "fraction",
            "share",
            "of the pipelined step",
            "n_micro + pp − 1",
        ),
        kind="formula",
        patch=(
            (
                "    bubble = compute * (plan.pp - 1) / plan.n_micro\n",
                "    bubble = compute * (plan.pp - 1) / (plan.n_micro + plan.pp - 1)  # lesson 9\n",
            ),
        ),
    ),
    Held(
        id="hb7-l14-time-fsdp-ring-span-without-tp",
        module=M,
        exercise="step_time",
        what=(
            "The learner picks the FSDP ring's link from a span of fsdp chips, as if its groups "
            "were consecutive chips; tp is inside fsdp in the mesh, so a group spans tp·fsdp "
            "chips and may leave the node where fsdp alone would not."
        ),
        cause=("tp·fsdp", "span", "inner axes", "consecutive", "inter-node"),
        kind="axis",
        patch=(
            (
                "    fsdp_link = _link(hw, plan.tp * plan.fsdp)\n",
                "    fsdp_link = _link(hw, plan.fsdp)\n",
            ),
        ),
    ),
]
