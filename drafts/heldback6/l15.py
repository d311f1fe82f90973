"""Held-back set 6, lesson 15 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb6-l15-zero1-mean-over-devices-only",
        module=M,
        exercise="zero1_step",
        what=(
            "The learner divides the reduce-scattered sum by N, the devices, forgetting that "
            "each device added M micro-batch gradients: the step's gradient is M times the "
            "mean over all N·M micro-batches."
        ),
        cause=("N·M", "micro-batch", "M times", "mean", "n_terms"),
        kind="factor",
        patch=(
            (
                "        n_terms = lax.axis_size(AXIS) * g.shape[1]\n",
                "        n_terms = lax.axis_size(AXIS)  # one gradient per device\n",
            ),
        ),
    ),
    Held(
        id="hb6-l15-adamw-step-stored-as-float",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner computes t = step + 1.0, the update's number, and stores that as the "
            "new step: the values are right but the state's step becomes a float32 scalar "
            "instead of an int32."
        ),
        cause=("int32", "dtype", "step", "float32", "integer"),
        kind="dtype",
        code="""
def adamw_step(params, grads, state, hp):
    g = grads.astype(jnp.float32)
    t = state["step"] + 1.0  # this update's number, counted from 1
    master, m, v = _adamw(state["master"], state["m"], state["v"], state["step"], g, hp)
    return master.astype(jnp.bfloat16), {"master": master, "m": m, "v": v, "step": t}
""",
    ),
    Held(
        id="hb6-l15-fp8-amax-by-all-gather",
        module=M,
        exercise="fp8_all_gather",
        what=(
            "The learner finds the global amax by all-gathering every device's largest "
            "magnitude and taking the max of those N scalars: the values are right, but a "
            "pmax (one scalar all-reduce) is the one collective the scale needs."
        ),
        cause=("pmax", "all-reduce", "one scalar", "all_gather", "all-gather"),
        kind="collective",
        patch=(
            (
                "        amax = lax.pmax(jnp.max(jnp.abs(blk)), AXIS)  # the one scalar all-reduce",
                "        # every device's largest magnitude, then the largest of those\n"
                '        amax = jnp.max(lax.all_gather(jnp.max(jnp.abs(blk)), AXIS, to="invarying"))',
            ),
        ),
    ),
    Held(
        id="hb6-l15-scaled-growth-checked-before-overflow",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner tests growth before overflow when choosing the new scale, and counts "
            "good + 1 even on a skipped step: when an overflow comes just as the clean-step "
            "count would reach growth_interval, the scale doubles instead of halving."
        ),
        cause=("overflow", "halve", "skip", "precedence", "growth_interval", "doubles"),
        kind="other",
        patch=(
            (
                'scale = jnp.where(skip, sc["scale"] / 2, jnp.where(grow, sc["scale"] * 2, sc["scale"]))',
                'scale = jnp.where(grow, sc["scale"] * 2, jnp.where(skip, sc["scale"] / 2, sc["scale"]))',
            ),
        ),
    ),
]
