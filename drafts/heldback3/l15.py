"""Held-back set 3, lesson 15 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb3-l15-clip-divides-by-the-smaller",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "The learner scales by max_norm / min(‖g‖, max_norm): a small gradient is blown "
            "up to norm max_norm and a large one is never clipped."
        ),
        cause=("max(", "maximum", "larger", "scale up", "only shrink"),
        kind="formula",
        patch=(
            (
                "return g * (limit / jnp.maximum(norm, limit))",
                "return g * (limit / jnp.minimum(norm, limit))",
            ),
        ),
    ),
    Held(
        id="hb3-l15-scaled-master-steps-with-raw-gradient",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner updates the momentum m but steps the master weights by lr · g, the "
            "new gradient, instead of lr · m: the momentum is stored and never used."
        ),
        cause=("momentum", "lr·m", "lr · m", "velocity", "m instead"),
        kind="leaf",
        patch=(
            (
                'master = s["master"] - hp["lr"] * m',
                'master = s["master"] - hp["lr"] * g',
            ),
        ),
    ),
    Held(
        id="hb3-l15-fp8-amax-without-abs",
        module=M,
        exercise="fp8_all_gather",
        what=(
            "The learner takes amax as the largest value instead of the largest magnitude: "
            "when the most negative weight is larger in size, scaled values exceed e4m3's 448 "
            "and are lost."
        ),
        cause=("abs", "magnitude", "|w|", "absolute", "negative"),
        kind="formula",
        patch=(
            (
                "amax = lax.pmax(jnp.max(jnp.abs(blk)), AXIS)",
                "amax = lax.pmax(jnp.max(blk), AXIS)",
            ),
        ),
    ),
    Held(
        id="hb3-l15-zero1-first-moment-from-master",
        module=M,
        exercise="zero1_step",
        what=(
            "A copy-paste slip in the call: the learner passes the master slice where the "
            "first moment m goes, so Adam's m starts from the weights instead of the stored m."
        ),
        cause=('s["m"]', "first moment", "state['m']", "wrong argument", "m"),
        kind="leaf",
        patch=(
            (
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms  # [Ψ] -> [Ψ/N]\n"
                '        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], shard, hp)',
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms  # [Ψ] -> [Ψ/N]\n"
                '        master, m, v = _adamw(s["master"], s["master"], s["v"], s["step"], shard, hp)',
            ),
        ),
    ),
]
