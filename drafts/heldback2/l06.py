"""Held-back set 2, lesson 6 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb2-l06-accumulate-carry-overwritten",
        module=M,
        exercise="dp_accumulate",
        what=(
            "The scan step returns the micro-batch's gradient as the new carry instead of "
            "adding it to the carry, so only the last micro-batch's gradient survives the loop "
            "and the result is 1/n_micro of it."
        ),
        cause=("accumulate", "overwrit", "last micro-batch", "add", "sum"),
        kind="state",
        patch=(
            (
                "return jax.tree.map(jnp.add, acc, g), None",
                "return g, None  # the gradient of this micro-batch",
            ),
        ),
    ),
    Held(
        id="hb2-l06-step-tree-map-arguments-swapped",
        module=M,
        exercise="dp_train_step",
        what=(
            "The learner passes the gradients and the params to jax.tree.map in the wrong "
            "order, so the lambda's w is the gradient and g the weight: the new params are "
            "g − lr·w/N instead of w − lr·g/N."
        ),
        cause=("swapped", "order", "params", "w − lr", "arguments"),
        kind="leaf",
        patch=(
            (
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), p, summed)",
                "new = jax.tree.map(lambda w, g: w - lr * (g / n), summed, p)",
            ),
        ),
    ),
    Held(
        id="hb2-l06-grads-divided-by-the-batch",
        module=M,
        exercise="dp_grads",
        what=(
            "Treating the summed gradient as a sum over rows, the learner divides it by the "
            "global batch size B instead of N: each device's gradient is already the mean of "
            "its rows, so only the N devices' terms need averaging."
        ),
        cause=("already a mean", "divide by n", "batch size", "axis_size", "n devices"),
        kind="factor",
        patch=(
            (
                "return jax.tree.map(lambda g: g / n, summed)",
                "return jax.tree.map(lambda g: g / x.shape[0], summed)  # mean over the batch",
            ),
        ),
    ),
]
