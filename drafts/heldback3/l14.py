"""Held-back set 3, lesson 14 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l14_planning"

HELD: list[Held] = [
    Held(
        id="hb3-l14-params-kv-as-many-as-query-heads",
        module=M,
        exercise="param_count",
        what=(
            "The learner counts four attention matrices of D·N·H each, ignoring grouped-query "
            "attention: W_k and W_v have K key/value heads, not N."
        ),
        cause=("kv_heads", "grouped-query", "k heads", "n + k", "w_k"),
        kind="formula",
        patch=(
            (
                "attention = 2 * d * h * (m.heads + m.kv_heads)",
                "attention = 4 * d * h * m.heads  # W_q, W_k, W_v, W_o",
            ),
        ),
    ),
    Held(
        id="hb3-l14-activations-of-every-micro-batch",
        module=M,
        exercise="memory_per_chip",
        what=(
            "The learner keeps all n_micro micro-batches' activations alive on the first "
            "stage, as GPipe would, instead of min(n_micro, pp) under 1F1B."
        ),
        cause=("min(n_micro, pp)", "1f1b", "in flight", "pp micro-batches", "alive"),
        kind="formula",
        patch=(
            (
                "held = min(plan.n_micro, plan.pp)",
                "held = plan.n_micro",
            ),
        ),
    ),
    Held(
        id="hb3-l14-fsdp-gathers-once-per-step",
        module=M,
        exercise="step_time",
        what=(
            "The learner costs FSDP's gathers and reduce-scatter once per step, but the "
            "stage's weights are gathered again for every micro-batch: the fsdp time is "
            "n_micro times too small."
        ),
        cause=("per micro-batch", "n_micro", "every micro-batch", "each micro-batch", "times"),
        kind="factor",
        patch=(
            (
                "fsdp = plan.n_micro * (2 * gather + scatter)",
                "fsdp = 2 * gather + scatter  # once per step",
            ),
        ),
    ),
]
