"""Held-back wrong programs for lesson 6 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l06_data_parallel"

HELD: list[Held] = [
    Held(
        id="hb-l06-step-loss-all-gathered",
        module=M,
        exercise="dp_train_step",
        what=(
            "Averages the loss by all-gathering every device's local loss and taking the mean: "
            "the value is right, but the step now holds an all-gather where a data-parallel "
            "step needs only all-reduces (a pmean of the scalar)."
        ),
        cause=("the loss", "scalar"),
        kind="collective",
        patch=(
            (
                "return new, lax.pmean(local_loss, AXIS)  # mean of equal-sized local means",
                'return new, jnp.mean(lax.all_gather(local_loss, AXIS, to="invarying"))',
            ),
        ),
    ),
    Held(
        id="hb-l06-accumulate-reshape-micro-last",
        module=M,
        exercise="dp_accumulate",
        what=(
            "Reshapes the rows to [B/(N·n_micro), n_micro, D] instead of [n_micro, "
            "B/(N·n_micro), D], so the scan runs B/(N·n_micro) times over micro-batches of "
            "n_micro rows and the sum divided by n_micro is the wrong multiple of the mean."
        ),
        cause=("reshape", "n_micro, -1", "iterations", "leading"),
        kind="layout",
        patch=(
            (
                "xs = x_rows.reshape(n_micro, -1, x_rows.shape[-1])",
                "xs = x_rows.reshape(-1, n_micro, x_rows.shape[-1])",
            ),
            (
                "ys = y_rows.reshape(n_micro, -1, y_rows.shape[-1])",
                "ys = y_rows.reshape(-1, n_micro, y_rows.shape[-1])",
            ),
        ),
    ),
    Held(
        id="hb-l06-accumulate-skips-first-micro-batch",
        module=M,
        exercise="dp_accumulate",
        what=(
            "Loops over the other n_micro − 1 micro-batches, as the docstring allows, but "
            "starts the sum from zeros instead of the first micro-batch's gradient: micro-batch "
            "0 is never seen."
        ),
        cause=("first micro-batch", "skipped", "left out", "micro-batch 0"),
        kind="off-by-one",
        patch=(
            (
                "total, _ = lax.scan(step, zeros, (xs, ys))",
                "total, _ = lax.scan(step, zeros, (xs[1:], ys[1:]))  # the other n_micro - 1",
            ),
        ),
    ),
]
