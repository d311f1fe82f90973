"""Held-back set 2, lesson 9 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l09_pipeline"

HELD: list[Held] = [
    Held(
        id="hb2-l09-peaks-not-reset-per-stage",
        module=M,
        exercise="peak_activations",
        what=(
            "The learner initialises the alive and peak counters once, before the loop over "
            "stages, so each stage's peak carries the largest peak of the stages before it."
        ),
        cause=("reset", "per stage", "each stage", "carried over", "counter"),
        kind="state",
        patch=(
            (
                "    for s in range(len(schedule[0])):\n        alive = peak = 0\n",
                "    alive = peak = 0\n    for s in range(len(schedule[0])):\n",
            ),
        ),
    ),
    Held(
        id="hb2-l09-1f1b-dependency-in-the-same-tick",
        module=M,
        exercise="one_f_one_b_schedule",
        what=(
            "The learner marks an op done as soon as it is placed while still filling the same "
            "tick, so stage s + 1 can run F of a micro-batch in the tick where stage s runs it: "
            "a dependency must have run at a strictly earlier tick."
        ),
        cause=("same tick", "earlier tick", "strictly", "dependenc", "t − 1"),
        kind="off-by-one",
        code="""
def _as_soon_as_ready(orders):
    p = len(orders)
    done = set()
    nxt = [0] * p
    grid = []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        row = [None] * p
        for s in range(p):
            if nxt[s] < len(orders[s]):
                kind, i = orders[s][nxt[s]]
                if all(need in done for need in _needs(kind, s, i, p)):
                    row[s] = (kind, i)
                    done.add((kind, s, i))  # it has run: the ops that need it may go
                    nxt[s] += 1
        grid.append(row)
    return grid
""",
    ),
    Held(
        id="hb2-l09-zero-bubble-left-reversed",
        module=M,
        exercise="zero_bubble_schedule",
        what=(
            "The learner builds the zero-bubble schedule backwards from the last tick, as the "
            "lesson suggests, but returns the grid without turning it round, so every op comes "
            "before the ops it needs."
        ),
        cause=("reverse", "backwards", "[::-1]", "order of the ticks", "turn"),
        kind="index",
        patch=(("return reversed_grid[::-1]", "return reversed_grid"),),
    ),
    Held(
        id="hb2-l09-grads-save-the-layer-output",
        module=M,
        exercise="pipeline_grads",
        what=(
            "In the forward the learner saves each stage's output activation instead of its "
            "input, so the backward's jax.vjp re-runs the layer at the wrong point and every "
            "stage's gradients are those of the layer applied to its own output."
        ),
        cause=("input", "output", "saved", "activation", "vjp"),
        kind="leaf",
        patch=(
            (
                "            h = jnp.where(s == 0, own, received)\n"
                "            kept = lax.dynamic_update_index_in_dim(saved, h, jnp.clip(i, 0, n_micro - 1), 0)\n"
                "            saved = jnp.where((i >= 0) & (i < n_micro), kept, saved)\n"
                "            out = tinymodels.layer(h, w_in[0], w_out[0])\n",
                "            h = jnp.where(s == 0, own, received)\n"
                "            out = tinymodels.layer(h, w_in[0], w_out[0])\n"
                "            kept = lax.dynamic_update_index_in_dim(saved, out, jnp.clip(i, 0, n_micro - 1), 0)\n"
                "            saved = jnp.where((i >= 0) & (i < n_micro), kept, saved)  # the activation\n",
            ),
        ),
    ),  # fmt: skip
]
