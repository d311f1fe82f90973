"""Held-back set 8, lesson 7 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb8-l07-grads-batch-times-devices",
        module=M,
        exercise="fsdp_grads",
        what="Thinking x.shape[0] outside shard_map is one device's rows, the learner multiplies it by the number of devices to get the global batch; x is already global, so the loss is divided by N·B and every gradient is N times too small.",
        cause=("global batch", "x.shape[0]", "already global", "too small", "divided by n"),
        kind="factor",
        patch=(
            (
                "    batch = x.shape[0]\n\n    def body(p, xb, yb):\n        return jax.grad",
                "    batch = x.shape[0] * mesh.shape[AXIS]  # rows per device × devices\n\n    def body(p, xb, yb):\n        return jax.grad",
            ),
        ),
    ),
    Held(
        id="hb8-l07-step-lr-as-float32-array",
        module=M,
        exercise="fsdp_train_step",
        what="The learner writes the update as w − jnp.float32(lr)·g; a float32 array (unlike the Python float lr) is not weakly typed, so bfloat16 params come back promoted to float32.",
        cause=("float32", "bfloat16", "dtype", "promot", "weak"),
        kind="dtype",
        patch=(
            (
                "        new = jax.tree.map(lambda w, gw: w - lr * gw, p, g)\n",
                "        new = jax.tree.map(lambda w, gw: w - jnp.float32(lr) * gw, p, g)\n",
            ),
        ),
    ),
]
