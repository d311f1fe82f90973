"""Held-back set 3, lesson 6 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb3-l06-accumulate-scans-inputs-twice",
        module=M,
        exercise="dp_accumulate",
        what=(
            "A copy-paste slip: the learner scans over (xs, xs), so every micro-batch's loss "
            "compares the model's output with its own input instead of the targets y."
        ),
        cause=("targets", "ys", "y_rows", "inputs as targets", "y"),
        kind="leaf",
        patch=(
            (
                "total, _ = lax.scan(step, zeros, (xs, ys))",
                "total, _ = lax.scan(step, zeros, (xs, xs))",
            ),
        ),
    ),
    Held(
        id="hb3-l06-grads-only-w-in-averaged",
        module=M,
        exercise="dp_grads",
        what=(
            "The learner divides the summed gradient by N leaf by leaf and forgets w_out: "
            "w_in is the batch mean, w_out is still the sum over the N devices."
        ),
        cause=("w_out", "every leaf", "tree", "divide by n", "sum over devices"),
        kind="leaf",
        patch=(
            (
                "return jax.tree.map(lambda g: g / n, summed)",
                'return {"w_in": summed["w_in"] / n, "w_out": summed["w_out"]}',
            ),
        ),
    ),
    Held(
        id="hb3-l06-accumulate-pmean-then-divides-by-n",
        module=M,
        exercise="dp_accumulate",
        what=(
            "After the loop the learner both takes pmean over 'data' and divides by "
            "n_micro · N, as if pmean were a sum: the gradient comes out N times too small."
        ),
        cause=("pmean", "already", "divided twice", "1/n", "mean over devices"),
        kind="factor",
        patch=(
            (
                "return jax.tree.map(lambda g: lax.pmean(g, AXIS) / n_micro, total)",
                "return jax.tree.map(\n"
                "            lambda g: lax.pmean(g, AXIS) / (n_micro * lax.axis_size(AXIS)), total\n"
                "        )",
            ),
        ),
    ),
]
