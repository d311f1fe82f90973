"""Held-back set 2, lesson 15 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb2-l15-adamw-bias-correction-multiplied",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner writes the bias corrections as 1 − β·t instead of 1 − βᵗ: the same at "
            "t = 1, but from the second step on the factor is wrong (negative for β = 0.9)."
        ),
        cause=("power", "b1ᵗ", "**", "exponent", "β^t"),
        kind="formula",
        patch=(
            ('m_hat = m / (1 - hp["b1"] ** t)', 'm_hat = m / (1 - hp["b1"] * t)'),
            ('v_hat = v / (1 - hp["b2"] ** t)', 'v_hat = v / (1 - hp["b2"] * t)'),
        ),
    ),
    Held(
        id="hb2-l15-clip-by-the-squared-norm",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "The learner adds the slices' sums of squares correctly but forgets the square "
            "root, comparing ‖g‖² with max_norm and scaling by max_norm/‖g‖²."
        ),
        cause=("square root", "sqrt", "squared norm", "√", "‖g‖²"),
        kind="formula",
        patch=(
            (
                "norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))",
                "norm = lax.psum(jnp.sum(g * g), AXIS)  # the global norm",
            ),
        ),
    ),
    Held(
        id="hb2-l15-scaled-scale-grown-a-step-late",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner grows the scale when the clean-step count exceeds growth_interval "
            "instead of when it reaches it, one clean step late."
        ),
        cause=("one step late", "reaches", ">=", "growth_interval", "off by one"),
        kind="off-by-one",
        patch=(
            (
                'grow = good >= hp["growth_interval"]',
                'grow = good > hp["growth_interval"]',
            ),
        ),
    ),
    Held(
        id="hb2-l15-fp8-e5m2",
        module=M,
        exercise="fp8_all_gather",
        what=(
            "The learner quantises to float8_e5m2 while scaling to e4m3's largest value: the "
            "bytes are the same, but e5m2 keeps two mantissa bits instead of three, so the "
            "gathered weights are rounded about twice as coarsely."
        ),
        cause=("e4m3", "float8_e4m3fn", "e5m2", "mantissa", "dtype"),
        kind="dtype",
        patch=(
            (
                "q = (blk * scale).astype(jnp.float8_e4m3fn)",
                "q = (blk * scale).astype(jnp.float8_e5m2)",
            ),
        ),
    ),
]
