"""Held-back set 4, lesson 7 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb4-l07-forward-stacked-gathers-reshaped",
        module=M,
        exercise="fsdp_forward",
        what=(
            "The learner gathers both weights untiled, stacked on a new axis 0, and reshapes the "
            "stack to the full shape: for w_in [N, D/N, F] → [D, F] that is right, but w_out's "
            "stack [N, F, D/N] reshaped to [F, D] scrambles rows and columns."
        ),
        cause=("reshape", "tiled", "stacked", "axis=1", "w_out"),
        kind="layout",
        patch=(
            (
                "w_in = lax.all_gather(w_in_blk, AXIS, axis=0, tiled=True)  # [D/N, F] -> [D, F]\n"
                "    w_out = lax.all_gather(w_out_blk, AXIS, axis=1, tiled=True)  # [F, D/N] -> [F, D]",
                "w_in = lax.all_gather(w_in_blk, AXIS).reshape(-1, w_in_blk.shape[1])  # [N, D/N, F] -> [D, F]\n"
                "    w_out = lax.all_gather(w_out_blk, AXIS).reshape(w_out_blk.shape[0], -1)  # [N, F, D/N] -> [F, D]",
            ),
        ),
    ),
    Held(
        id="hb4-l07-grads-batch-size-read-from-features",
        module=M,
        exercise="fsdp_grads",
        what=(
            "The learner takes the global batch size from x.shape[1], the model width D, instead "
            "of x.shape[0]: the loss is divided by D, so every gradient is B/D times the right one."
        ),
        cause=("x.shape[0]", "batch size", "shape[1]", "global batch", "width"),
        kind="index",
        patch=(
            (
                '    """\n    batch = x.shape[0]\n\n    def body(p, xb, yb):\n        return jax.grad',
                '    """\n    batch = x.shape[1]\n\n    def body(p, xb, yb):\n        return jax.grad',
            ),
        ),
    ),
    Held(
        id="hb4-l07-step-params-stored-in-bfloat16",
        module=M,
        exercise="fsdp_train_step",
        what=(
            "To keep the shards small the learner casts the updated weights to bfloat16: the "
            "float32 params come back in bfloat16, rounded to 8 bits of mantissa, so small "
            "updates lr·g are partly lost."
        ),
        cause=("bfloat16", "dtype", "float32", "precision", "rounded"),
        kind="dtype",
        patch=(
            (
                "new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n"
                "        return new, lax.psum(local, AXIS)",
                "new = jax.tree.map(lambda w, gw: (w - lr * gw).astype(jnp.bfloat16), p, g)  # small shards\n"
                "        return new, lax.psum(local, AXIS)",
            ),
        ),
    ),
]
