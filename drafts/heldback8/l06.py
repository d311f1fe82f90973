"""Held-back set 8, lesson 6 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb8-l06-accumulate-targets-strided-inputs-contiguous",
        module=M,
        exercise="dp_accumulate",
        what="The learner cuts the inputs into contiguous micro-batches with reshape but the targets with a strided split (rows k, k + n_micro, …): micro-batch k then pairs inputs with other rows' targets, and the gradient is wrong.",
        cause=("targets", "y_rows", "same split", "strided", "pair"),
        kind="layout",
        patch=(
            (
                "        ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])\n",
                "        ys = y_rows.reshape(-1, n_micro, y_rows.shape[-1]).swapaxes(0, 1)  # rows k, k + n_micro, …\n",
            ),
        ),
    ),
    Held(
        id="hb8-l06-accumulate-running-average",
        module=M,
        exercise="dp_accumulate",
        what="The learner keeps a running average, acc ← (acc + g)/2, and drops the final division by n_micro: that weights the micro-batches 1/2, 1/4, … (the first ones almost vanish, and even one micro-batch is halved) instead of averaging them equally.",
        cause=("running average", "equal weight", "sum", "n_micro", "halv"),
        kind="formula",
        patch=(
            (
                "            return jax.tree.map(jnp.add, acc, g), None\n",
                "            return jax.tree.map(lambda a, b: (a + b) / 2, acc, g), None  # running average\n",
            ),
            (
                "        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)\n",
                "        return jax.tree.map(lambda g: lax.pmean(g, AXIS), total)\n",
            ),
        ),
    ),
    Held(
        id="hb8-l06-accumulate-divided-by-micro-batch-rows",
        module=M,
        exercise="dp_accumulate",
        what="After the loop the learner divides the summed micro-batch gradients by the rows in a micro-batch (xs.shape[1]) instead of by n_micro; each micro gradient is already a mean over its rows, so the result is off by n_micro over the micro-batch size.",
        cause=("n_micro", "micro-batch size", "rows", "mean of means", "divide"),
        kind="factor",
        patch=(
            (
                "        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)\n",
                "        return jax.tree.map(lambda g: lax.pmean(g, AXIS) / xs.shape[1], total)\n",
            ),
        ),
    ),
]
