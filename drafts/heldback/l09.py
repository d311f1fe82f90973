"""Held-back wrong programs for lesson 9 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb-l09-gpipe-backward-starts-at-stage-0",
        module=M,
        exercise="gpipe_schedule",
        what="The learner copies the forward's offset into the backward phase (B(s, i) at tick "
        "phase + s + i), so stage 0 runs its backward first although the gradient starts at "
        "the last stage and flows back.",
        cause=("last stage", "p − 1 − s", "mirror", "backward starts"),
        kind="index",
        patch=(
            (
                'grid[phase + (p - 1 - s) + i][s] = ("B", i)',
                'grid[phase + s + i][s] = ("B", i)',
            ),
        ),
    ),
    Held(
        id="hb-l09-1f1b-warmup-not-capped-by-m",
        module=M,
        exercise="one_f_one_b_schedule",
        what="The learner uses p − 1 − s warm-up forwards without capping them at m, so with "
        "fewer micro-batches than stages the early stages schedule forwards of micro-batches "
        "that do not exist.",
        cause=("min(p − 1 − s, m)", "m < p", "does not exist", "fewer micro-batches"),
        kind="off-by-one",
        code="""
def one_f_one_b_schedule(n_stages, n_micro):
    p, m = n_stages, n_micro
    orders = []
    for s in range(p):
        warmup = p - 1 - s  # the deeper the stage, the fewer forwards before its first backward
        order = [("F", i) for i in range(warmup)]
        steady = max(m - warmup, 0)
        for i in range(steady):
            order += [("F", warmup + i), ("B", i)]
        order += [("B", i) for i in range(steady, m)]
        orders.append(order)
    return _as_soon_as_ready(orders)
""",
    ),
    Held(
        id="hb-l09-bubble-idle-over-busy",
        module=M,
        exercise="bubble_fraction",
        what="The learner divides the idle cells by the busy cells instead of by all "
        "ticks × stages cells, an idle-to-work ratio rather than a fraction.",
        cause=("all cells", "ticks × stages", "busy", "denominator"),
        kind="formula",
        code="""
def bubble_fraction(schedule):
    cells = [c for row in schedule for c in row]
    idle = sum(c is None for c in cells)
    return idle / (len(cells) - idle)  # idle time per unit of work
""",
    ),
    Held(
        id="hb-l09-forward-every-stage-writes-the-output",
        module=M,
        exercise="pipeline_forward",
        what="The learner drops the s == p − 1 condition when writing the output buffer, so "
        "every stage stores its intermediate activations and the final psum adds them to y.",
        cause=("last stage", "every stage", "s == p − 1", "intermediate"),
        kind="mask",
        patch=(
            (
                "out = jnp.where((s == p - 1) & (done >= 0), keep, out)",
                "out = jnp.where(done >= 0, keep, out)",
            ),
        ),
    ),
    Held(
        id="hb-l09-grads-backward-indexed-like-the-forward",
        module=M,
        exercise="pipeline_grads",
        what="The learner indexes the backward loop's micro-batch as t − s, like the forward, so "
        "stage 0 starts the backward and each stage pulls back a micro-batch whose gradient "
        "has not arrived from the next stage (the last stage must start, i = t − (p − 1 − s)).",
        cause=("last stage", "p − 1 − s", "mirror", "starts the backward"),
        kind="index",
        patch=(
            (
                "i = t - (p - 1 - s)  # the last stage starts with micro-batch 0",
                "i = t - s  # the micro-batch this stage handles at tick t, as in the forward",
            ),
        ),
    ),
]
