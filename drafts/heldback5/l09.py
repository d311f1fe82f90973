"""Held-back set 5, lesson 9 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb5-l09-bubble-idle-per-tick",
        module=M,
        exercise="bubble_fraction",
        what=(
            "The learner divides the idle cells by the number of ticks, len(schedule), instead "
            "of by every cell, ticks × stages: the result is the idle stages per tick, p times "
            "the fraction (and above 1 for most pipelines)."
        ),
        cause=("stages", "all cells", "ticks × stages", "per tick", "len(schedule)"),
        kind="formula",
        patch=(
            (
                "return sum(c is None for c in cells) / len(cells)",
                "return sum(c is None for c in cells) / len(schedule)",
            ),
        ),
    ),
    Held(
        id="hb5-l09-peaks-the-worst-stage-everywhere",
        module=M,
        exercise="peak_activations",
        what=(
            "The learner counts each stage's live micro-batches correctly but returns the "
            "largest peak for every stage, [max(peaks)] * p, as if the pipeline had one peak: "
            "under 1F1B stage s holds at most p − s, so every stage after the first is "
            "reported at stage 0's peak."
        ),
        cause=("per stage", "each stage", "stage s", "max over", "p − s"),
        kind="shape",
        patch=(
            (
                "        peaks.append(peak)\n    return peaks",
                "        peaks.append(peak)\n    return [max(peaks)] * len(peaks)  # the pipeline's peak",
            ),
        ),
    ),
    Held(
        id="hb5-l09-forward-first-stage-chosen-by-tick",
        module=M,
        exercise="pipeline_forward",
        what=(
            "The learner feeds the micro-batch from x where t == 0 instead of where s == 0, "
            "mixing up the tick and the stage: at tick 0 every stage runs micro-batch 0's "
            "input, and from tick 1 on stage 0 runs on the zeros nobody sends it instead of "
            "micro-batches 1, 2, …"
        ),
        cause=("s == 0", "stage 0", "first stage", "tick", "t == 0"),
        kind="mask",
        patch=(
            (
                "h = tinymodels.layer(jnp.where(s == 0, own, received), w_in[0], w_out[0])",
                "h = tinymodels.layer(jnp.where(t == 0, own, received), w_in[0], w_out[0])",
            ),
        ),
    ),
    Held(
        id="hb5-l09-grads-inputs-saved-by-tick",
        module=M,
        exercise="pipeline_grads",
        what=(
            "In the forward loop the learner files each stage's input under slot t, the tick, "
            "instead of i = t − s, the micro-batch: on stage s > 0 every saved input sits s "
            "slots late (the last ones piled into slot m − 1), so the backward re-runs the "
            "layer on another micro-batch's activations."
        ),
        cause=("t − s", "micro-batch index", "slot", "tick", "saved"),
        kind="index",
        patch=(
            (
                "kept = lax.dynamic_update_index_in_dim(saved, h, jnp.clip(i, 0, n_micro - 1), 0)",
                "kept = lax.dynamic_update_index_in_dim(saved, h, jnp.clip(t, 0, n_micro - 1), 0)",
            ),
        ),
    ),
]
