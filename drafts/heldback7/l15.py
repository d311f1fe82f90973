"""Held-back set 7, lesson 15 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb7-l15-adamw-params-stepped-in-bfloat16",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner updates the float32 master correctly but hands back the bfloat16 "
            "params minus this step's update cast to bfloat16, instead of bfloat16(master): "
            "the subtraction happens in bfloat16, so updates below half a bfloat16 step round "
            "away and the returned params drift from the master copy."
        ),
        cause=("bfloat16(master)", "master", "rounds away", "in bfloat16", "cast the master"),
        kind="dtype",
        code="""
def adamw_step(params, grads, state, hp):
    g = grads.astype(jnp.float32)
    master, m, v = _adamw(state["master"], state["m"], state["v"], state["step"], g, hp)
    new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}
    update = (state["master"] - master).astype(jnp.bfloat16)  # this step's change
    return params - update, new
""",
    ),
    Held(
        id="hb7-l15-clip-by-the-root-mean-square",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "The learner takes the norm as the square root of the mean of the squares (each "
            "slice's mean, then a pmean over 'data'): that is the RMS, ‖g‖/√Ψ, so nearly every "
            "gradient looks smaller than max_norm and is not clipped."
        ),
        cause=("sum of squares", "mean", "rms", "σ g²", "root mean square"),
        kind="formula",
        patch=(
            (
                "        norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))  # squares add; norms do not\n",
                "        norm = jnp.sqrt(lax.pmean(jnp.mean(g * g), AXIS))  # √(mean g²) over the slices\n",
            ),
        ),
    ),
    Held(
        id="hb7-l15-scaled-master-stepped-with-the-old-momentum",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner steps the master weights with the momentum it was given, s['m'], "
            "instead of the one just updated with this step's gradient: each step applies the "
            "previous step's momentum, one step behind (and a fresh run does not move at all)."
        ),
        cause=("new momentum", "updated m", "previous step", "one step behind", "stale"),
        kind="state",
        patch=(
            (
                '        master = s["master"] - hp["lr"] * m\n',
                '        master = s["master"] - hp["lr"] * s["m"]\n',
            ),
        ),
    ),
]
