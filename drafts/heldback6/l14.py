"""Held-back set 6, lesson 14 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb6-l14-activations-per-sequence-not-token",
        module=M,
        exercise="memory_per_chip",
        what=(
            "The learner counts a micro-batch's sequences, B/(dp·fsdp·n_micro), where the "
            "per-token activation bytes need its tokens: the sequence length is never "
            "multiplied in, so the activations are S times too small."
        ),
        cause=("seq", "tokens", "sequence length", "per token", "S times"),
        kind="factor",
        patch=(
            (
                "    tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro) * m.seq\n",
                "    tokens = global_batch / (plan.dp * plan.fsdp * plan.n_micro)  # one micro-batch\n",
            ),
        ),
    ),
    Held(
        id="hb6-l14-fsdp-ring-on-the-chip-shard",
        module=M,
        exercise="step_time",
        what=(
            "The learner passes the FSDP ring the bytes of the shard one chip holds, divided by "
            "fsdp as well, but lesson 3's ring takes V, the whole gathered array: the gathers "
            "and reduce-scatter are timed fsdp times too short."
        ),
        cause=("whole", "gathered", "shard", "fsdp times", "V"),
        kind="factor",
        patch=(
            (
                "    stage = BF16 * p / (plan.tp * plan.pp)\n",
                "    stage = BF16 * p / (plan.tp * plan.pp * plan.fsdp)  # the stage's weights on this chip\n",
            ),
        ),
    ),
    Held(
        id="hb6-l14-dp-all-reduce-of-fp32-gradients",
        module=M,
        exercise="step_time",
        what=(
            "The learner all-reduces the data-parallel gradient at plan.grads' size, 4 bytes "
            "for fp32 gradients, while the model sends bf16 gradients (fp32 ones only cost "
            "memory): plans with fp32 gradients get a dp time twice too long."
        ),
        cause=("bf16", "grads", "fp32", "only cost memory", "2 bytes"),
        kind="dtype",
        patch=(
            (
                'dp = _ring("all_reduce", BF16 * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
                'dp = _ring("all_reduce", GRADS[plan.grads] * p / (plan.fsdp * plan.tp * plan.pp), plan.dp, dp_link)',
            ),
        ),
    ),
    Held(
        id="hb6-l14-pipeline-hops-at-every-boundary",
        module=M,
        exercise="step_time",
        what=(
            "The learner charges each micro-batch's activation and its gradient once per stage "
            "boundary, (pp − 1) hops each way, in a time that counts one chip's sends: each "
            "chip sends one hop forward and one back per micro-batch, so the pipeline time is "
            "pp − 1 times too large (right at pp ≤ 2)."
        ),
        cause=("one hop", "per chip", "pp − 1", "boundary", "each way"),
        kind="formula",
        patch=(
            (
                "        pp = 2 * plan.n_micro * (latency + act / bandwidth)",
                "        pp = 2 * plan.n_micro * (plan.pp - 1) * (latency + act / bandwidth)  # every boundary",
            ),
        ),
    ),
]
