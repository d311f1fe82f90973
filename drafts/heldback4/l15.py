"""Held-back set 4, lesson 15 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb4-l15-adamw-master-kept-in-bfloat16",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner stores the updated master weights in the state as bfloat16, like the "
            "params: the master copy exists to keep float32 precision, and rounding it each "
            "step loses the small updates."
        ),
        cause=("master", "float32", "bfloat16", "precision", "dtype"),
        kind="dtype",
        patch=(
            (
                'new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}',
                'new = {"master": master.astype(jnp.bfloat16), "m": m, "v": v, "step": state["step"] + 1}',
            ),
        ),
    ),
    Held(
        id="hb4-l15-zero1-own-gradient-slice-unreduced",
        module=M,
        exercise="zero1_step",
        what=(
            "Since each device updates only its slice of the state, the learner slices its own "
            "micro-batches' gradient there and never reduces over 'data': each slice is updated "
            "with one device's gradient instead of the mean over all N·M micro-batches."
        ),
        cause=("reduce-scatter", "psum_scatter", "other devices", "mean over all", "unreduced"),
        kind="collective",
        patch=(
            (
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms  # [Ψ] -> [Ψ/N]",
                "size = acc.shape[0] // lax.axis_size(AXIS)\n"
                "        shard = lax.dynamic_slice_in_dim(acc, lax.axis_index(AXIS) * size, size) / g.shape[1]",
            ),
        ),
    ),
    Held(
        id="hb4-l15-clip-by-value",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "The learner clips each element to ±max_norm (clip by value) instead of scaling the "
            "whole gradient by max_norm/‖g‖: the direction changes and the norm can stay far "
            "above max_norm."
        ),
        cause=("global norm", "by value", "element", "scale", "‖g‖"),
        kind="formula",
        patch=(
            (
                "norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))  # squares add; norms do not\n"
                "        return g * (limit / jnp.maximum(norm, limit))",
                "return jnp.clip(g, -limit, limit)  # keep every element within ±max_norm",
            ),
        ),
    ),
    Held(
        id="hb4-l15-scaled-count-not-reset-on-growth",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner resets the clean-step counter only after an overflow, not when the "
            "scale grows: after the first growth good stays ≥ growth_interval and the scale "
            "doubles on every later clean step."
        ),
        cause=("reset", "good", "growth", "doubles", "0 after"),
        kind="state",
        patch=(
            (
                "good = jnp.where(skip | grow, 0, good)",
                "good = jnp.where(skip, 0, good)",
            ),
        ),
    ),
]
