"""Held-back set 6, lesson 7 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb6-l07-grads-psummed-after-the-scatter",
        module=M,
        exercise="fsdp_grads",
        what=(
            "Remembering lesson 6, the learner all-reduces the gradients over 'data' after "
            "jax.grad, but here they arrive already reduce-scattered: each device holds a "
            "different slice, so the psum adds N different slices into one wrong block."
        ),
        cause=("already reduce-scattered", "psum", "reduce-scatter", "no all-reduce", "slices"),
        kind="collective",
        patch=(
            (
                "        return jax.grad(_local_loss)(p, xb, yb, batch)\n",
                "        g = jax.grad(_local_loss)(p, xb, yb, batch)\n"
                "        # every device saw different rows: add their gradients up\n"
                "        return jax.tree.map(lambda t: lax.psum(t, AXIS), g)\n",
            ),
        ),
    ),
    Held(
        id="hb6-l07-step-returns-the-old-params",
        module=M,
        exercise="fsdp_train_step",
        what=(
            "The learner computes the updated shards under a new name and returns the params it "
            "was given: the loss is right, but the step never changes the weights."
        ),
        cause=("old params", "unchanged", "never updated", "new params", "returns p"),
        kind="state",
        patch=(
            (
                "        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n"
                "        return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
                "        new_p = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n"
                "        return p, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
            ),
        ),
    ),
    Held(
        id="hb6-l07-grads-gathered-to-full-shape",
        module=M,
        exercise="fsdp_grads",
        what=(
            "Expecting jax.grad's result to have the params' full shape, the learner all-gathers "
            "each gradient shard back to [L, D, F] / [L, F, D] and returns them replicated "
            "(out_specs=P()): the values are right, but the gradients should stay sharded like "
            "the params, and the extra all-gathers move every weight's gradient."
        ),
        cause=("sharded like", "shard", "PARAMS", "replicated", "all-gather", "all_gather"),
        kind="collective",
        code="""
def fsdp_grads(params, x, y, mesh):
    batch = x.shape[0]

    def body(p, xb, yb):
        g = jax.grad(_local_loss)(p, xb, yb, batch)
        # the full gradient, shaped like the full params
        return {
            "w_in": lax.all_gather(g["w_in"], AXIS, axis=1, tiled=True, to="invarying"),
            "w_out": lax.all_gather(g["w_out"], AXIS, axis=2, tiled=True, to="invarying"),
        }

    return jax.shard_map(body, mesh=mesh, in_specs=(PARAMS, BATCH, BATCH), out_specs=P())(
        params, x, y
    )
""",
    ),
]
