"""Held-back wrong programs for lesson 7 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l07_fsdp"

HELD: list[Held] = [
    Held(
        id="hb-l07-grads-divided-by-n-after-the-scatter",
        module=M,
        exercise="fsdp_grads",
        what="The learner divides every gradient shard by the number of devices 'to average the "
        "reduce-scatter's sum', although the loss is already divided by the global batch, so the "
        "gradients come out N times too small.",
        cause=("too small", "divided twice", "axis_size", "already divided"),
        kind="factor",
        patch=(
            (
                "return jax.grad(_local_loss)(p, xb, yb, batch)",
                "g = jax.grad(_local_loss)(p, xb, yb, batch)\n"
                "        # the reduce-scatter adds N devices' gradients: average them\n"
                "        return jax.tree.map(lambda a: a / lax.axis_size(AXIS), g)",
            ),
        ),
    ),
    Held(
        id="hb-l07-train-step-loss-pmean",
        module=M,
        exercise="fsdp_train_step",
        what="The learner reduces the devices' loss shares with lax.pmean instead of lax.psum, "
        "averaging shares that are already divided by the global batch, so the reported loss "
        "is N times too small.",
        cause=("pmean", "psum", "too small", "mean of the shares"),
        kind="collective",
        patch=(
            (
                "return new, lax.psum(local, AXIS)  # the one all-reduce: a scalar",
                "return new, lax.pmean(local, AXIS)  # average the devices' losses",
            ),
        ),
    ),
    Held(
        id="hb-l07-loss-mean-over-features",
        module=M,
        exercise="fsdp_grads",
        what="The learner writes the loss as a mean squared error over every element (dividing "
        "by B·D) instead of summing over D and dividing by the global batch B, so the "
        "gradients are D times too small.",
        cause=("features", "sum over d", "d times", "per element"),
        kind="factor",
        patch=(
            (
                "0.5 * jnp.sum(err * err) / batch",
                "0.5 * jnp.sum(err * err) / (batch * err.shape[-1])  # mean squared error",
            ),
        ),
    ),
    Held(
        id="hb-l07-forward-layers-in-reverse",
        module=M,
        exercise="fsdp_forward",
        what="The learner runs the layer scan with reverse=True, so the layers are applied from "
        "the last to the first and y is a different model's output.",
        cause=("reverse", "order of the layers", "last layer first", "reversed"),
        kind="index",
        patch=(
            (
                "h, _ = lax.scan(step, x, params)",
                "h, _ = lax.scan(step, x, params, reverse=True)",
            ),
        ),
    ),
]
