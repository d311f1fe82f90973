"""Held-back set 8, lesson 15 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb8-l15-adamw-v-corrected-with-b1",
        module=M,
        exercise="adamw_step",
        what="Copying the m line, the learner bias-corrects v with 1 − b1ᵗ instead of 1 − b2ᵗ: the second moment is scaled wrongly in the early steps and the update is off.",
        cause=("b2 ** t", "1 − b2", "bias correction", "v_hat", "second moment"),
        kind="formula",
        patch=(('    v_hat = v / (1 - hp["b2"] ** t)\n', '    v_hat = v / (1 - hp["b1"] ** t)\n'),),
    ),
    Held(
        id="hb8-l15-adamw-moments-stored-bias-corrected",
        module=M,
        exercise="adamw_step",
        what="The learner stores the bias-corrected m̂ and v̂ in the state instead of the raw moments: the next step corrects them again, so the moments are inflated from the second step on.",
        cause=("raw", "m_hat", "state", "bias-corrected", "uncorrected"),
        kind="state",
        patch=(("    return master, m, v\n", "    return master, m_hat, v_hat\n"),),
    ),
    Held(
        id="hb8-l15-scaled-momentum-holds-scaled-gradients",
        module=M,
        exercise="loss_scaled_step",
        what="The learner adds the still-scaled gradient into the momentum and divides by the scale only at the update: the momentum buffer holds scaled values, so every later change of the scale rescales the old momentum too.",
        cause=("unscale", "before", "momentum", "scaled", "divide by scale"),
        kind="state",
        patch=(
            (
                '        g = g.astype(jnp.float32) / sc["scale"]  # unscale in float32: fp16 would underflow\n',
                "        g = g.astype(jnp.float32)\n",
            ),
            (
                '        master = s["master"] - hp["lr"] * m\n',
                '        master = s["master"] - hp["lr"] * m / sc["scale"]  # unscale at the update\n',
            ),
        ),
    ),
]
