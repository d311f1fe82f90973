"""Held-back wrong programs for lesson 15 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l15_optimizer"

HELD: list[Held] = [
    Held(
        id="hb-l15-adamw-moment-weights-swapped",
        module=M,
        exercise="adamw_step",
        what=(
            "The learner swapped the weights of both running averages, m ← (1−β₁)·m + β₁·g "
            "and v ← (1−β₂)·v + β₂·g², so the moments follow the latest gradient and the bias "
            "correction blows them up."
        ),
        cause=("swapped", "β₁", "b1", "1 − β"),
        kind="formula",
        patch=(
            (
                'm = hp["b1"] * m + (1 - hp["b1"]) * g',
                'm = (1 - hp["b1"]) * m + hp["b1"] * g',
            ),
            (
                'v = hp["b2"] * v + (1 - hp["b2"]) * g * g',
                'v = (1 - hp["b2"]) * v + hp["b2"] * g * g',
            ),
        ),
    ),
    Held(
        id="hb-l15-zero1-slices-interleaved-by-reshape",
        module=M,
        exercise="zero1_step",
        what=(
            "The learner reshaped the gradient buffer to [Ψ/N, N] and reduce-scattered its "
            "last axis, so device i gets elements i, i+N, i+2N, … while its master and "
            "moments hold the contiguous slice i·Ψ/N … (i+1)·Ψ/N."
        ),
        cause=("contiguous", "interleaved", "strided", "reshape"),
        kind="layout",
        patch=(
            (
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms",
                "shard = lax.psum_scatter(acc.reshape(-1, mesh.shape[AXIS]), AXIS, "
                "scatter_dimension=1) / n_terms",
            ),
        ),
    ),
    Held(
        id="hb-l15-zero2-micro-batches-summed-before-one-reduce-scatter",
        module=M,
        exercise="zero2_step",
        what=(
            "The learner added the M micro-batch gradients first, in bfloat16, and "
            "reduce-scattered the sum once, instead of reduce-scattering each micro-batch as "
            "it comes and accumulating the float32 slice."
        ),
        cause=("each micro-batch", "per micro-batch", "m reduce-scatters", "as soon as"),
        kind="collective",
        patch=(
            (
                "def add(acc, g_micro):  # g_micro: [Ψ] bfloat16\n"
                "            return acc + lax.psum_scatter(g_micro, AXIS, tiled=True)"
                ".astype(jnp.float32), None\n"
                "\n"
                '        start = jnp.zeros(s["master"].shape, jnp.float32)\n'
                '        acc, _ = lax.scan(add, lax.pcast(start, AXIS, to="varying"), g[0])',
                "summed = jnp.sum(g[0], axis=0)  # the micro-batches added first: [Ψ] bfloat16\n"
                "        acc = lax.psum_scatter(summed, AXIS, tiled=True).astype(jnp.float32)",
            ),
        ),
    ),
    Held(
        id="hb-l15-clip-norm-from-a-pmean",
        module=M,
        exercise="clip_by_global_norm",
        what=(
            "The learner combined the slices' sums of squares with lax.pmean instead of "
            "lax.psum, so the norm is √N too small and large gradients are clipped too little."
        ),
        cause=("pmean", "averaged", "√n", "mean of the"),
        kind="collective",
        patch=(
            (
                "norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))",
                "norm = jnp.sqrt(lax.pmean(jnp.sum(g * g), AXIS))",
            ),
        ),
    ),
    Held(
        id="hb-l15-loss-scale-count-kept-on-overflow",
        module=M,
        exercise="loss_scaled_step",
        what=(
            "The learner left the clean-step counter as it was on a skipped step, treating it "
            "like the weights, instead of resetting good to 0 after an overflow, so the scale "
            "grows again too soon."
        ),
        cause=("reset", "good ← 0", "good = 0", "becomes 0"),
        kind="state",
        patch=(
            (
                "good = jnp.where(skip | grow, 0, good)",
                'good = jnp.where(skip, sc["good"], jnp.where(grow, 0, good))'
                "  # a skipped step changes nothing",
            ),
        ),
    ),
    Held(
        id="hb-l15-fp8-scale-inverted",
        module=M,
        exercise="fp8_all_gather",
        what=(
            "The learner used amax/448 as the scale (the dequantisation factor) where 448/amax "
            "belongs, so w·scale shrinks the weights into float8's subnormals instead of "
            "stretching the largest onto 448."
        ),
        cause=("448 / amax", "inverted", "reciprocal", "upside down"),
        kind="formula",
        patch=(
            (
                "scale = jnp.float32(jnp.finfo(jnp.float8_e4m3fn).max) / amax",
                "scale = amax / jnp.float32(jnp.finfo(jnp.float8_e4m3fn).max)",
            ),
        ),
    ),
]
