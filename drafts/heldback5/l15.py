"""Held-back set 5, lesson 15 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb5-l15-adamw-first-moment-uncorrected",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner bias-corrects v but divides the raw m by √v̂: the first moment, which "
            "also starts at zero, is left too small by 1 − b1ᵗ (ten times at the first step "
            "with b1 = 0.9), so the early updates are far too short."
        ),
        cause=("bias correction", "m_hat", "1 − b1", "first moment", "m̂"),
        kind="formula",
        patch=(
            (
                'update = m_hat / (jnp.sqrt(v_hat) + hp["eps"])',
                'update = m / (jnp.sqrt(v_hat) + hp["eps"])',
            ),
        ),
    ),
    Held(
        id="hb5-l15-fp8-rounded-to-integers-first",
        module=M,
        exercise="fp8_all_gather",
        what=(
            "Thinking of int8 quantisation, the learner rounds w · scale to the nearest integer "
            "before casting to float8_e4m3fn: e4m3 is a float with 3 mantissa bits, finer than "
            "1 below 8, so every scaled value under 8 in magnitude loses the fraction e4m3 "
            "would have kept (small weights become 0 or ±1)."
        ),
        cause=("round", "integer", "int8", "fraction", "mantissa"),
        kind="dtype",
        patch=(
            (
                "q = (blk * scale).astype(jnp.float8_e4m3fn)  # [Ψ/N], one byte each",
                "q = jnp.round(blk * scale).astype(jnp.float8_e4m3fn)  # quantise to the grid",
            ),
        ),
    ),
    Held(
        id="hb5-l15-clip-norm-as-the-largest-slice-norm",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "Copying the fp8 section's amax, the learner combines the devices with lax.pmax of "
            "each slice's own norm: the global norm is √(Σ over slices of ‖g_i‖²), larger than "
            "any one slice's, so large gradients are clipped too little."
        ),
        cause=("squares add", "psum", "sum of squares", "pmax", "largest slice"),
        kind="collective",
        patch=(
            (
                "norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))",
                "norm = lax.pmax(jnp.sqrt(jnp.sum(g * g)), AXIS)  # the largest, as amax",
            ),
        ),
    ),
    Held(
        id="hb5-l15-scaled-momentum-as-moving-average",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "Carrying Adam's first moment over, the learner updates the momentum as a moving "
            "average, m ← momentum·m + (1 − momentum)·g, instead of the heavy-ball "
            "m ← momentum·m + g the step asks for: every clean step moves the weights "
            "1 − momentum times as far."
        ),
        cause=("momentum", "1 − momentum", "moving average", "momentum·m + g", "heavy-ball"),
        kind="formula",
        patch=(
            (
                'm = hp["momentum"] * s["m"] + g',
                'm = hp["momentum"] * s["m"] + (1 - hp["momentum"]) * g',
            ),
        ),
    ),
]
