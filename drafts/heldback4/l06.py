"""Held-back set 4, lesson 6 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb4-l06-grads-local-loss-summed-over-rows",
        module=M,
        exercise="dp_grads",
        what=(
            "The learner writes each device's loss as the sum of its rows' squared errors "
            "instead of their mean and then divides the summed gradient by N: the result is "
            "B/N times the gradient of the mean loss."
        ),
        cause=("sum over the rows", "mean over", "local batch", "b/n", "per-row"),
        kind="factor",
        code="""
def dp_grads(params, x, y, mesh):
    def local_loss(p, x_rows, y_rows):
        err = tinymodels.forward(p, x_rows) - y_rows
        return 0.5 * jnp.sum(err * err)  # the squared error of my rows

    def body(p, x_rows, y_rows):
        summed = jax.grad(local_loss)(p, x_rows, y_rows)
        n = lax.axis_size(AXIS)
        return jax.tree.map(lambda g: g / n, summed)

    return _data_parallel(body, mesh, P())(params, x, y)
""",
    ),
    Held(
        id="hb4-l06-step-lr-scaled-by-devices",
        module=M,
        exercise="dp_train_step",
        what=(
            "Remembering the linear scaling rule for large batches, the learner multiplies the "
            "learning rate by the number of devices: the step asked for is p − lr·g, so every "
            "update is N times too large."
        ),
        cause=("learning rate", "linear scaling", "lr ·", "n times", "times n"),
        kind="factor",
        patch=(
            (
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - (lr * n) * (g / n), p, summed)  # lr × devices",
            ),
        ),
    ),
    Held(
        id="hb4-l06-accumulate-first-micro-batch-twice",
        module=M,
        exercise="dp_accumulate",
        what=(
            "Following the docstring's 'start the sum with the first micro-batch', the learner "
            "initialises the carry with micro-batch 0's gradient but still scans over all "
            "n_micro micro-batches, so micro-batch 0 is counted twice."
        ),
        cause=("first micro-batch", "twice", "counted twice", "n_micro − 1", "initial"),
        kind="off-by-one",
        patch=(
            (
                "zeros = jax.tree.map(jnp.zeros_like, pv)\n"
                "        total, _ = lax.scan(step, zeros, (xs, ys))",
                "first = jax.grad(tinymodels.loss)(pv, xs[0], ys[0])  # start with micro-batch 0\n"
                "        total, _ = lax.scan(step, first, (xs, ys))",
            ),
        ),
    ),
]
