"""Held-back set 7, lesson 9 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb7-l09-bubble-trailing-idle-not-counted",
        module=M,
        exercise="bubble_fraction",
        what=(
            "The learner counts a stage idle only until its last op, reasoning that a stage "
            "that has finished is done rather than waiting, and divides by the cells up to "
            "each stage's last op: the idle ticks at the end of the schedule (GPipe's and "
            "1F1B's drain on the later stages) drop out and the bubble comes out too small."
        ),
        cause=("every cell", "ticks × stages", "trailing", "after its last op", "whole schedule"),
        kind="formula",
        code="""
def bubble_fraction(schedule: Schedule) -> float:
    idle = busy = 0
    for s in range(len(schedule[0])):
        column = [row[s] for row in schedule]
        last = max(t for t, op in enumerate(column) if op is not None)
        busy += sum(op is not None for op in column)
        idle += sum(op is None for op in column[: last + 1])  # a finished stage is not idle
    return idle / (idle + busy)
""",
    ),
    Held(
        id="hb7-l09-peaks-grid-read-as-stage-by-tick",
        module=M,
        exercise="peak_activations",
        what=(
            "The learner reads the grid as schedule[stage][tick] and walks each row as one "
            "stage's ops: a row is one tick across the stages, so it returns one count per "
            "tick (the wrong length) of F and B ops of different stages at the same tick."
        ),
        cause=("[tick][stage]", "transposed", "rows are ticks", "per stage", "column"),
        kind="index",
        code="""
def peak_activations(schedule: Schedule) -> list[int]:
    has_w = any(c is not None and c[0] == "W" for row in schedule for c in row)
    last = "W" if has_w else "B"
    peaks = []
    for ops in schedule:  # one stage's ops, tick by tick
        alive = peak = 0
        for op in ops:
            if op is not None:
                alive += (op[0] == "F") - (op[0] == last)
                peak = max(peak, alive)
        peaks.append(peak)
    return peaks
""",
    ),
    Held(
        id="hb7-l09-1f1b-drain-latest-micro-batch-first",
        module=M,
        exercise="one_f_one_b_schedule",
        what=(
            "Thinking of backpropagation as running in reverse, the learner drains a stage's "
            "remaining backwards latest micro-batch first, B(m − 1) … B(m − warm-up): each "
            "stage then waits for a gradient the next stage sends last, and the schedule runs "
            "past 2(m + p − 1) ticks."
        ),
        cause=("micro-batch order", "oldest first", "in order", "reverse", "makespan"),
        kind="other",
        patch=(
            (
                '        order += [("B", i) for i in range(m - warmup, m)]\n',
                '        order += [("B", i) for i in reversed(range(m - warmup, m))]  # backprop runs backwards\n',
            ),
        ),
    ),
    Held(
        id="hb7-l09-forward-every-stage-reads-x",
        module=M,
        exercise="pipeline_forward",
        what=(
            "Since x is replicated, the learner lets every stage take its micro-batch t − s "
            "straight from x instead of from the previous stage: each stage applies its one "
            "layer to raw inputs, and the last stage returns layer p − 1 of x instead of the "
            "whole model."
        ),
        cause=("previous stage", "received", "stage 0", "activations", "from x"),
        kind="state",
        patch=(
            (
                "            own = lax.dynamic_index_in_dim(micro, jnp.minimum(t, n_micro - 1), keepdims=False)\n"
                "            h = tinymodels.layer(jnp.where(s == 0, own, received), w_in[0], w_out[0])\n",
                "            mine = jnp.clip(t - s, 0, n_micro - 1)  # the micro-batch this stage runs\n"
                "            own = lax.dynamic_index_in_dim(micro, mine, keepdims=False)\n"
                "            h = tinymodels.layer(own, w_in[0], w_out[0])\n",
            ),
        ),
    ),
    Held(
        id="hb7-l09-grads-loss-gradient-without-the-mean",
        module=M,
        exercise="pipeline_grads",
        what=(
            "The last stage seeds the backward with out − y, the gradient of ½(out − y)², "
            "forgetting that the loss is the mean over the B rows: every gradient comes out B "
            "times too large."
        ),
        cause=("global batch", "mean", "batch size", "divide", "b times"),
        kind="factor",
        patch=(
            (
                "            cotangent = jnp.where(s == p - 1, (out - target) / b, received)\n",
                "            cotangent = jnp.where(s == p - 1, out - target, received)\n",
            ),
        ),
    ),
]
