"""Held-back set 6, lesson 6 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb6-l06-step-grad-of-the-pmean-loss-divided-again",
        module=M,
        exercise="dp_train_step",
        what=(
            "The learner differentiates the global loss pmean(local loss) over 'data', whose "
            "gradient is already the mean over devices, and then still divides by N as the "
            "lesson does for the summed gradient: the update is N times too small."
        ),
        cause=("divided by n twice", "already the mean", "pmean", "N times too small", "twice"),
        kind="factor",
        code="""
def dp_train_step(params, x, y, mesh, lr):
    def body(p, x_rows, y_rows):
        def global_loss(p):
            # the loss of the whole batch: the mean of the devices' equal-sized means
            return lax.pmean(tinymodels.loss(p, x_rows, y_rows), AXIS)

        loss, summed = jax.value_and_grad(global_loss)(p)
        n = lax.axis_size(AXIS)
        new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)
        return new, loss

    return _data_parallel(body, mesh, (P(), P()))(params, x, y)
""",
    ),
    Held(
        id="hb6-l06-accumulate-psum-after-the-loop",
        module=M,
        exercise="dp_accumulate",
        what=(
            "After the loop the learner all-reduces the accumulated local gradients with psum "
            "and divides by n_micro only: the result is the sum over the N devices of their mean "
            "gradients, N times the gradient of the global mean."
        ),
        cause=("pmean", "psum", "divide by n", "N times", "mean over devices"),
        kind="collective",
        patch=(
            (
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "return jax.tree.map(lambda g: lax.psum(g, AXIS) / n_micro, total)",
            ),
        ),
    ),
    Held(
        id="hb6-l06-grads-returned-split-over-data",
        module=M,
        exercise="dp_grads",
        what=(
            "Thinking of each device's gradient as its own piece, the learner writes "
            "out_specs=P('data') for the gradients: every device holds the same full gradient, "
            "and shard_map stacks the N copies on dim 0, so each leaf comes back [N·L, …]."
        ),
        cause=("out_specs", "P()", "replicated", "stacked", "shape"),
        kind="layout",
        code="""
def dp_grads(params, x, y, mesh):
    def body(p, x_rows, y_rows):
        summed = jax.grad(tinymodels.loss)(p, x_rows, y_rows)
        n = lax.axis_size(AXIS)
        return jax.tree.map(lambda g: g / n, summed)

    # each device returns its gradient
    return _data_parallel(body, mesh, P(AXIS))(params, x, y)
""",
    ),
]
