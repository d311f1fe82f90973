"""Realistic wrong implementations for lesson 15 (see tests/mistakes/__init__.py).

Issue 35's list: moments in bf16; bias correction one step off; weight decay
inside the Adam update; clipping by the local norm; a psum of norms; the loss
scale not undone; master weights never updated; the whole optimizer state on
every device; a skipped step that still advances the moments. And the ZeRO
ones: an all-reduce where a reduce-scatter does, the float32 master gathered,
ZeRO-2 with ZeRO-1's whole float32 buffer, a float32 reduce-scatter, a
bfloat16 gradient sum, a sum where the mean is asked for. Issue 47's: eps inside
the square root, the params passed in returned, g² in bfloat16, a step or good not
advanced, the scale grown a clean step early.
"""

from __future__ import annotations

from tests.mistakes import Mistake

L15 = "l15_optimizer"

MOMENTS_IN_BF16 = """
def adamw_step(params, grads, state, hp):
    m = state["m"].astype(grads.dtype)  # kept like the params: bfloat16
    v = state["v"].astype(grads.dtype)
    master, m, v = _adamw(state["master"], m, v, state["step"], grads, hp)
    new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}
    return master.astype(jnp.bfloat16), new
"""

MASTER_NEVER_UPDATED = """
def adamw_step(params, grads, state, hp):
    g = grads.astype(jnp.float32)
    master, m, v = _adamw(state["master"], state["m"], state["v"], state["step"], g, hp)
    new = {"master": state["master"], "m": m, "v": v, "step": state["step"] + 1}
    return master.astype(jnp.bfloat16), new
"""

STALE_PARAMS = """
def adamw_step(params, grads, state, hp):
    g = grads.astype(jnp.float32)
    master, m, v = _adamw(state["master"], state["m"], state["v"], state["step"], g, hp)
    new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}
    return params, new  # the bfloat16 params it was given
"""

SQUARE_IN_BF16 = """
def adamw_step(params, grads, state, hp):
    t = (state["step"] + 1).astype(jnp.float32)
    g = grads.astype(jnp.float32)
    g2 = (grads * grads).astype(jnp.float32)  # squared in bfloat16, then widened
    m = hp["b1"] * state["m"] + (1 - hp["b1"]) * g
    v = hp["b2"] * state["v"] + (1 - hp["b2"]) * g2
    update = (m / (1 - hp["b1"] ** t)) / (jnp.sqrt(v / (1 - hp["b2"] ** t)) + hp["eps"])
    master = state["master"] - hp["lr"] * (update + hp["weight_decay"] * state["master"])
    new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}
    return master.astype(jnp.bfloat16), new
"""

STATE_REPLICATED = """
from jax.sharding import NamedSharding

def zero1_step(params, grads, state, hp, mesh):
    def body(p, g, s):
        acc = jnp.sum(g[0].astype(jnp.float32), axis=0)
        full = lax.psum(acc, AXIS) / (lax.axis_size(AXIS) * g.shape[1])
        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], full, hp)
        return master.astype(p.dtype), {"master": master, "m": m, "v": v, "step": s["step"] + 1}

    whole = {"master": P(), "m": P(), "v": P(), "step": P()}  # every device: all of it
    state = {k: jax.reshard(a, NamedSharding(mesh, P())) for k, a in state.items()}
    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P(AXIS), whole), out_specs=(P(), whole)
    )(params, grads, state)
"""

ALL_REDUCE_THEN_SLICE = """
def zero1_step(params, grads, state, hp, mesh):
    def body(p, g, s):
        acc = jnp.sum(g[0].astype(jnp.float32), axis=0)
        full = lax.psum(acc, AXIS) / (lax.axis_size(AXIS) * g.shape[1])
        k = s["master"].shape[0]
        shard = lax.dynamic_slice_in_dim(full, lax.axis_index(AXIS) * k, k)
        master, m, v = _adamw(s["master"], s["m"], s["v"], s["step"], shard, hp)
        return _finish(master, m, v, s["step"], p)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P(AXIS), STATE), out_specs=(P(), STATE)
    )(params, grads, state)
"""

ZERO2_WHOLE_BUFFER = """
def zero2_step(params, grads, state, hp, mesh):
    return zero1_step(params, grads, state, hp, mesh)
"""

CLIP_LOCAL = """
def clip_by_global_norm(grads, max_norm, mesh):
    def body(g, limit):
        norm = jnp.sqrt(jnp.sum(g * g))  # this device's slice only
        return g * (limit / jnp.maximum(norm, limit))

    return jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P(AXIS))(
        grads, max_norm
    )
"""

CLIP_GATHERED = """
def clip_by_global_norm(grads, max_norm, mesh):
    def body(g, limit):
        whole = lax.all_gather(g, AXIS, tiled=True)
        norm = jnp.sqrt(jnp.sum(whole * whole))
        return g * (limit / jnp.maximum(norm, limit))

    return jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P(AXIS))(
        grads, max_norm
    )
"""

SKIP_DECIDED_LOCALLY = (
    "skip = lax.psum(bad_here, AXIS) > 0  # the one scalar all-reduce",
    "skip = bad_here > 0",
)

OWN_AMAX = (
    "amax = lax.pmax(jnp.max(jnp.abs(blk)), AXIS)",
    "amax = jnp.max(jnp.abs(blk))  # this device's slice only",
)

MISTAKES: list[Mistake] = [
    Mistake(
        id="l15-adamw-moments-bf16",
        module=L15,
        exercise="adamw_step",
        code=MOMENTS_IN_BF16,
        status="failed",
        check="values",
        says=("The moments are kept in bfloat16", "must be float32"),
    ),
    Mistake(
        id="l15-adamw-moments-bf16-precision",
        module=L15,
        exercise="adamw_step",
        code=MOMENTS_IN_BF16,
        status="failed",
        check="precision",
        says=("in bfloat16", "the optimizer's arithmetic must be float32"),
    ),
    Mistake(
        id="l15-adamw-bias-correction-one-behind",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("1 − β^t is 0 for t = 0", "t = step + 1"),
        patch=(("t = (step + 1).astype(jnp.float32)", "t = step.astype(jnp.float32)"),),
    ),
    Mistake(
        id="l15-adamw-bias-correction-one-ahead",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("one step ahead",),
        patch=(("t = (step + 1).astype(jnp.float32)", "t = (step + 2).astype(jnp.float32)"),),
    ),
    Mistake(
        id="l15-adamw-no-bias-correction",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("No bias correction",),
        patch=(
            ('m_hat = m / (1 - hp["b1"] ** t)', "m_hat = m"),
            ('v_hat = v / (1 - hp["b2"] ** t)', "v_hat = v"),
        ),
    ),
    Mistake(
        id="l15-adamw-decay-inside-adam",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("weight decay is inside the Adam update", "decoupled"),
        patch=(
            (
                'm = hp["b1"] * m + (1 - hp["b1"]) * g',
                'g = g + hp["weight_decay"] * master  # L2\n'
                '    m = hp["b1"] * m + (1 - hp["b1"]) * g',
            ),
            (
                'master = master - hp["lr"] * (update + hp["weight_decay"] * master)',
                'master = master - hp["lr"] * update',
            ),
        ),
    ),
    Mistake(
        id="l15-adamw-decay-not-scaled-by-lr",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("not scaled by the learning rate",),
        patch=(
            (
                'master = master - hp["lr"] * (update + hp["weight_decay"] * master)',
                'master = master - hp["lr"] * update - hp["weight_decay"] * master',
            ),
        ),
    ),
    Mistake(
        id="l15-adamw-master-never-updated",
        module=L15,
        exercise="adamw_step",
        code=MASTER_NEVER_UPDATED,
        status="failed",
        check="values",
        says=("master weights are never updated",),
    ),
    Mistake(
        id="l15-adamw-eps-inside-the-square-root",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("eps is inside the square root",),
        patch=(
            (
                'update = m_hat / (jnp.sqrt(v_hat) + hp["eps"])',
                'update = m_hat / jnp.sqrt(v_hat + hp["eps"])',
            ),
        ),
    ),
    Mistake(
        id="l15-adamw-returns-the-params-it-was-given",
        module=L15,
        exercise="adamw_step",
        code=STALE_PARAMS,
        status="failed",
        check="values",
        says=("the params you were given", "bfloat16(master)"),
    ),
    Mistake(  # issue 45 audit: its update is 0 at step 0, so its params equal the old ones
        # to a bfloat16 step — but they are bfloat16(its master): no stale cast to name
        id="l15-adamw-v-correction-one-step-behind",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("master",),
        never=("the params you were given", "were not made from them"),
        patch=(('v_hat = v / (1 - hp["b2"] ** t)', 'v_hat = v / (1 - hp["b2"] ** (t - 1))'),),
    ),
    Mistake(
        id="l15-adamw-gradient-squared-in-bf16",
        module=L15,
        exercise="adamw_step",
        code=SQUARE_IN_BF16,
        status="failed",
        check="precision",
        says=("mul in bfloat16", "the optimizer's arithmetic must be float32"),
    ),
    Mistake(
        id="l15-adamw-step-not-advanced",
        module=L15,
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("step counter is not advanced", "step + 1"),
        patch=(
            (
                'new = {"master": master, "m": m, "v": v, "step": state["step"] + 1}\n    return master.astype(jnp.bfloat16), new',
                'new = {"master": master, "m": m, "v": v, "step": state["step"]}\n    return master.astype(jnp.bfloat16), new',
            ),
        ),
    ),
    Mistake(
        id="l15-zero1-whole-state-on-every-device",
        module=L15,
        exercise="zero1_step",
        code=STATE_REPLICATED,
        status="failed",
        check="memory",
        says=("whole optimizer state is on every device", "P('data')"),
    ),
    Mistake(
        id="l15-zero1-all-reduce-then-slice",
        module=L15,
        exercise="zero1_step",
        code=ALL_REDUCE_THEN_SLICE,
        status="failed",
        check="collectives",
        says=("An all-reduce of the gradients", "lax.psum_scatter"),
    ),
    Mistake(
        id="l15-zero1-sum-not-mean",
        module=L15,
        exercise="zero1_step",
        status="failed",
        check="values",
        says=("you summed them",),
        patch=(
            (
                "shard = lax.psum_scatter(acc, AXIS, tiled=True) / n_terms",
                "shard = lax.psum_scatter(acc, AXIS, tiled=True)",
            ),
        ),
    ),
    Mistake(
        id="l15-zero1-gradient-summed-in-bf16",
        module=L15,
        exercise="zero1_step",
        status="failed",
        check="precision",
        says=("add in bfloat16", "sum micro-batch gradients in float32"),
        patch=(
            (
                "acc = jnp.sum(g[0].astype(jnp.float32), axis=0)",
                "acc = functools.reduce(operator.add, list(g[0])).astype(jnp.float32)",
            ),
            ("import jax\n", "import functools\nimport operator\n\nimport jax\n"),
        ),
    ),
    Mistake(
        id="l15-zero1-gathers-float32-master",
        module=L15,
        exercise="zero1_step",
        status="failed",
        check="all-gather bytes",
        says=("sends float32", "Gather the bfloat16 params"),
        patch=(
            (
                'lax.all_gather(master.astype(params.dtype), AXIS, tiled=True, to="invarying")',
                'lax.all_gather(master, AXIS, tiled=True, to="invarying").astype(params.dtype)',
            ),
        ),
    ),
    Mistake(
        id="l15-zero2-keeps-the-whole-float32-gradient",
        module=L15,
        exercise="zero2_step",
        code=ZERO2_WHOLE_BUFFER,
        status="failed",
        check="gradient buffer",
        says=("ZeRO-1's full float32 gradient buffer",),
    ),
    Mistake(
        id="l15-zero2-reduce-scatters-float32",
        module=L15,
        exercise="zero2_step",
        status="failed",
        check="reduce-scatter bytes",
        says=("sends float32", "bfloat16 gradient"),
        patch=(
            (
                "lax.psum_scatter(g_micro, AXIS, tiled=True).astype(jnp.float32)",
                "lax.psum_scatter(g_micro.astype(jnp.float32), AXIS, tiled=True)",
            ),
        ),
    ),
    Mistake(
        id="l15-clip-by-local-norm",
        module=L15,
        exercise="clip_by_global_norm",
        code=CLIP_LOCAL,
        status="failed",
        check="values",
        says=("by its own norm",),
    ),
    Mistake(
        id="l15-clip-psum-of-norms",
        module=L15,
        exercise="clip_by_global_norm",
        status="failed",
        check="values",
        says=("norms do not add",),
        patch=(
            (
                "norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))",
                "norm = lax.psum(jnp.sqrt(jnp.sum(g * g)), AXIS)",
            ),
        ),
    ),
    Mistake(
        id="l15-clip-always-rescales",
        module=L15,
        exercise="clip_by_global_norm",
        status="failed",
        check="values",
        says=("rescaled the gradient to norm max_norm although its norm is below it",),
        patch=(
            (
                "return g * (limit / jnp.maximum(norm, limit))",
                "return g * (limit / norm)  # every gradient scaled to norm max_norm",
            ),
        ),
    ),
    Mistake(
        id="l15-clip-gathers-the-gradient",
        module=L15,
        exercise="clip_by_global_norm",
        code=CLIP_GATHERED,
        status="failed",
        check="collectives",
        says=("all-gather",),
    ),
    Mistake(
        id="l15-scaled-scale-grown-a-step-early",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("one clean step early",),
        patch=(
            (
                'grow = good >= hp["growth_interval"]',
                'grow = good + 1 >= hp["growth_interval"]  # this step counted twice',
            ),
        ),
    ),
    Mistake(  # found by the wrong-cause audit of stop 64: told "grew one clean step early
        # … compare … once" on the clean step one short; a clean step three short comes first
        id="l15-scaled-scale-grows-every-clean-step",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("['scale']",),
        never=("one clean step early",),
        patch=(
            (
                'scale = jnp.where(skip, sc["scale"] / 2, jnp.where(grow, sc["scale"] * 2, sc["scale"]))',
                'scale = jnp.where(skip, sc["scale"] / 2, sc["scale"] * 2)  # a clean step: grow',
            ),
        ),
    ),
    Mistake(
        # passed before stop 62: both skipped examples had good one short of the interval,
        # where the count reaches it and the reset hides the mistake (the inf one now has
        # good 1 of 4)
        id="l15-scaled-skip-counts-the-step",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("[1]['good']", "+ 1 on every one of the 1 wrong elements: one more than it came in"),
        patch=(
            (
                "good = jnp.where(skip | grow, 0, good)",
                "good = jnp.where(grow, 0, good)  # a skipped step still counted",
            ),
        ),
    ),
    Mistake(
        id="l15-scaled-good-not-advanced",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("good is not",),
        patch=(('good = sc["good"] + 1', 'good = sc["good"]'),),
    ),
    Mistake(
        id="l15-scaled-loss-scale-not-undone",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("loss scale is not undone",),
        patch=(('g = g.astype(jnp.float32) / sc["scale"]', "g = g.astype(jnp.float32)"),),
    ),
    Mistake(
        id="l15-scaled-unscaled-in-fp16",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("unscaled in float16",),
        patch=(
            (
                'g = g.astype(jnp.float32) / sc["scale"]',
                'g = (g / sc["scale"].astype(g.dtype)).astype(jnp.float32)',
            ),
        ),
    ),
    Mistake(
        id="l15-scaled-skip-still-advances-momentum",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("skipped step still advanced the momentum",),
        patch=(
            (
                '"m": jnp.where(skip, s["m"], m)',
                '"m": jnp.where(skip, hp["momentum"] * s["m"], m)',
            ),
        ),
    ),
    Mistake(
        id="l15-scaled-skip-on-inf-only",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("nan gradient", "was applied", "should have been skipped"),
        patch=(
            (
                "bad_here = jnp.logical_not(jnp.all(jnp.isfinite(g))).astype(jnp.float32)",
                "bad_here = jnp.any(jnp.isinf(g)).astype(jnp.float32)  # a nan goes through",
            ),
        ),
    ),
    Mistake(
        id="l15-scaled-skip-on-nan-only",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("an inf (and no nan)", "an overflowed gradient was applied", "jnp.isnan misses inf"),
        patch=(
            (
                "bad_here = jnp.logical_not(jnp.all(jnp.isfinite(g))).astype(jnp.float32)",
                "bad_here = jnp.any(jnp.isnan(g)).astype(jnp.float32)  # an inf goes through",
            ),
        ),
    ),
    Mistake(
        id="l15-scaled-overflow-found-locally",
        module=L15,
        exercise="loss_scaled_step",
        status="error",
        check=None,
        says=("decided from its own slice", "all-reduce the flag"),
        patch=(SKIP_DECIDED_LOCALLY,),
    ),
    Mistake(
        id="l15-scaled-all-reduces-the-gradient",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="all-reduce",
        says=("an all-reduce of", "needs one scalar"),
        patch=(
            (
                "skip = lax.psum(bad_here, AXIS) > 0  # the one scalar all-reduce",
                "skip = jnp.logical_not(jnp.all(jnp.isfinite(lax.psum(g.astype(jnp.float32), "
                "AXIS))))",
            ),
        ),
    ),
    Mistake(
        id="l15-fp8-gathered-in-float32",
        module=L15,
        exercise="fp8_all_gather",
        status="failed",
        check="all-gather bytes",
        says=("sends float32", "Quantise before you gather"),
        patch=(
            (
                'whole = lax.all_gather(q, AXIS, tiled=True, to="invarying")  # [Ψ] float8',
                'whole = lax.all_gather(blk, AXIS, tiled=True, to="invarying")\n'
                "        whole = (whole * scale).astype(jnp.float8_e4m3fn)",
            ),
        ),
    ),
    Mistake(
        id="l15-fp8-amax-summed",
        module=L15,
        exercise="fp8_all_gather",
        status="failed",
        check="values",
        says=("added the devices' amaxes",),
        patch=(
            (
                "amax = lax.pmax(jnp.max(jnp.abs(blk)), AXIS)",
                "amax = lax.psum(jnp.max(jnp.abs(blk)), AXIS)",
            ),
        ),
    ),
    Mistake(
        id="l15-fp8-scale-not-undone",
        module=L15,
        exercise="fp8_all_gather",
        status="failed",
        check="values",
        says=("scale is not undone",),
        patch=(
            (
                "return whole.astype(jnp.float32) / scale",
                "return whole.astype(jnp.float32)",
            ),
        ),
    ),
    Mistake(
        id="l15-fp8-amax-of-own-slice",
        module=L15,
        exercise="fp8_all_gather",
        status="error",
        check=None,
        says=("One of two things varies", "lax.pmax of every device's max"),
        patch=(OWN_AMAX,),
    ),
    Mistake(
        id="l15-fp8-amax-of-own-slice-check-vma-off",
        module=L15,
        exercise="fp8_all_gather",
        status="failed",
        check="values",
        says=("scaled by its own slice's amax", "lax.pmax"),
        patch=(
            OWN_AMAX,
            ("out_specs=P())(w)", "out_specs=P(), check_vma=False)(w)"),
        ),
    ),
    Mistake(
        id="l15-fp8-gathered-as-varying",
        module=L15,
        exercise="fp8_all_gather",
        status="error",
        check=None,
        says=("One of two things varies", "without to='invarying'"),
        patch=(
            (
                'whole = lax.all_gather(q, AXIS, tiled=True, to="invarying")',
                "whole = lax.all_gather(q, AXIS, tiled=True)",
            ),
        ),
    ),
    Mistake(
        id="l15-zero1-params-gathered-as-varying",
        module=L15,
        exercise="zero1_step",
        status="error",
        check=None,
        says=("output [0]", "to='invarying'"),
        patch=(
            (
                'lax.all_gather(master.astype(params.dtype), AXIS, tiled=True, to="invarying")',
                "lax.all_gather(master.astype(params.dtype), AXIS, tiled=True)",
            ),
        ),
    ),
    Mistake(  # issue 45 audit: isfinite is right here; the test asks it of every element
        id="l15-scaled-skip-only-when-every-element-is-bad",
        module=L15,
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("gradient was applied", "all where any belongs"),
        patch=(
            (
                "        bad_here = jnp.logical_not(jnp.all(jnp.isfinite(g))).astype(jnp.float32)\n",
                "        bad_here = jnp.all(jnp.logical_not(jnp.isfinite(g))).astype(jnp.float32)\n",
            ),
        ),
    ),
    Mistake(  # issue 45: the largest slice's norm, measured against max_norm, is a reading
        id="l15-clip-norm-as-the-largest-slice-norm",
        module=L15,
        exercise="clip_by_global_norm",
        status="failed",
        check="values",
        says=("the largest slice's norm, lax.pmax of the devices' norms, is",),
        patch=(
            (
                "        norm = jnp.sqrt(lax.psum(jnp.sum(g * g), AXIS))  # squares add; norms do not",
                "        norm = lax.pmax(jnp.sqrt(jnp.sum(g * g)), AXIS)  # the largest slice's norm",
            ),
        ),
    ),
    Mistake(  # drafts/heldback5: Adam's first moment carried over to the heavy-ball step
        id="l15-scaled-momentum-as-moving-average",
        module="l15_optimizer",
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("a running average's weight `1 - hp['momentum']`",),
        patch=(
            (
                'm = hp["momentum"] * s["m"] + g',
                'm = hp["momentum"] * s["m"] + (1 - hp["momentum"]) * g',
            ),
        ),
    ),
    Mistake(  # drafts/heldback5: an int8 quantiser's rounding before the float8 cast
        id="l15-fp8-rounded-to-integers-first",
        module="l15_optimizer",
        exercise="fp8_all_gather",
        status="failed",
        check="values",
        says=("rounded to integers before the cast",),
        patch=(
            (
                "q = (blk * scale).astype(jnp.float8_e4m3fn)  # [Ψ/N], one byte each",
                "q = jnp.round(blk * scale).astype(jnp.float8_e4m3fn)",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the master stepped with the momentum it was given
        id="l15-scaled-master-stepped-with-the-old-momentum",
        module="l15_optimizer",
        exercise="loss_scaled_step",
        status="failed",
        check="values",
        says=("`m` read before its update",),
        patch=(
            (
                '        master = s["master"] - hp["lr"] * m\n',
                '        master = s["master"] - hp["lr"] * s["m"]\n',
            ),
        ),
    ),
    Mistake(  # audit 67b: the update left out, m starting at 0: "read before its update" came first
        id="l15-adamw-update-term-left-out",
        module="l15_optimizer",
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("a term left out",),
        patch=(
            ('    update = m_hat / (jnp.sqrt(v_hat) + hp["eps"])\n', "    update = 0.0 * m_hat\n"),
        ),
    ),
    Mistake(  # audit 67b: the stale read quoted the enclosing `with` line
        id="l15-adamw-m-hat-from-the-old-m",
        module="l15_optimizer",
        exercise="adamw_step",
        status="failed",
        check="values",
        says=(),  # the stale reading sits near the search's budget here: its words are
        # held by test_mutants' `stale` kinds; this entry holds the quoted line's fault
        never=("in `with np.errstate",),
        patch=(
            (
                '    m = hp["b1"] * m + (1 - hp["b1"]) * g\n',
                '    m_old = m\n    m = hp["b1"] * m + (1 - hp["b1"]) * g\n',
            ),
            ("    m_hat = m / (1", "    m_hat = m_old / (1"),
        ),
    ),
    Mistake(  # drafts/heldback8: v bias-corrected with b1 (the m line copied); no hint before
        id="l15-adamw-v-corrected-with-b1",
        module="l15_optimizer",
        exercise="adamw_step",
        status="failed",
        check="values",
        says=("another variable read — `b1` in place of `b2`",),
        patch=(('    v_hat = v / (1 - hp["b2"] ** t)\n', '    v_hat = v / (1 - hp["b1"] ** t)\n'),),
    ),
]
