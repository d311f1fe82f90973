"""Lesson 9 — pipeline parallelism: schedules and their execution.

The course model's L layers are split over p stages, one layer per stage,
and the batch into m micro-batches. A schedule says which op each stage runs
at each tick: ``schedule[tick][stage]`` is ``None`` (idle) or ``(kind,
micro)`` with kind ``"F"`` (forward), ``"B"`` (backward) or, when the
backward is split, ``"B"`` (input gradient) and ``"W"`` (weight gradient).
Every op takes one tick; F(s, i) needs F(s − 1, i), B(s, i) needs F(s, i) and
B(s + 1, i), W(s, i) needs B(s, i), each at a strictly earlier tick.

The grader simulates your schedules (every op once, one op per stage per
tick, dependencies, makespan, activation memory) on many (p, m), and runs
``pipeline_forward``/``pipeline_grads`` on a ``('stage',)`` mesh: values,
only collective-permutes of one micro-batch, m + p − 1 ticks in one loop,
weights that never move.

Read the lesson first: ``course show 9``. Grade with ``course grade 9``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import tinymodels

Op = tuple[str, int]
Schedule = list[list[Op | None]]
AXIS = "stage"


# ---------------------------------------------------------------- schedules


def gpipe_schedule(n_stages: int, n_micro: int) -> Schedule:
    """GPipe: every micro-batch's forward, then every backward.

    A forward phase of m + p − 1 ticks, then a backward phase as long:
    makespan 2(m + p − 1), and every stage keeps all m micro-batches alive.
    """
    p, m = n_stages, n_micro
    phase = m + p - 1
    grid: Schedule = [[None] * p for _ in range(2 * phase)]
    for s in range(p):
        for i in range(m):
            grid[s + i][s] = ("F", i)
            grid[phase + (p - 1 - s) + i][s] = ("B", i)
    return grid


def one_f_one_b_schedule(n_stages: int, n_micro: int) -> Schedule:
    """1F1B: stage s runs min(p − 1 − s, m) warm-up forwards, then alternates
    one forward and one backward, then drains the remaining backwards.

    At most p − s micro-batches are alive on stage s (GPipe keeps m);
    makespan 2(m + p − 1), the same as GPipe.
    """
    p, m = n_stages, n_micro
    orders = []
    for s in range(p):
        warmup = min(p - 1 - s, m)
        order: list[Op] = [("F", i) for i in range(warmup)]
        for i in range(m - warmup):
            order += [("F", warmup + i), ("B", i)]
        order += [("B", i) for i in range(m - warmup, m)]
        orders.append(order)
    return _as_soon_as_ready(orders)


def _needs(kind: str, stage: int, micro: int, p: int) -> list[tuple[str, int, int]]:
    """The ops (kind, stage, micro) that must have run before this one."""
    if kind == "F":
        return [("F", stage - 1, micro)] if stage > 0 else []
    if kind == "B":
        return [("F", stage, micro)] + ([("B", stage + 1, micro)] if stage < p - 1 else [])
    return [("B", stage, micro)]


def _as_soon_as_ready(orders: list[list[Op]]) -> Schedule:
    """Each stage runs its ops in the given order, each at the first tick
    whose inputs were produced at an earlier tick."""
    p = len(orders)
    done: dict[tuple[str, int, int], int] = {}
    nxt = [0] * p
    grid: Schedule = []
    while any(nxt[s] < len(orders[s]) for s in range(p)):
        t = len(grid)
        row: list[Op | None] = [None] * p
        for s in range(p):
            if nxt[s] < len(orders[s]):
                kind, i = orders[s][nxt[s]]
                if all(done.get(need, t) < t for need in _needs(kind, s, i, p)):
                    row[s] = (kind, i)
        for s, op in enumerate(row):
            if op is not None:
                done[(op[0], s, op[1])] = t
                nxt[s] += 1
        grid.append(row)
    return grid


def bubble_fraction(schedule: Schedule) -> float:
    """Idle cells / all cells (ticks × stages)."""
    cells = [c for row in schedule for c in row]
    return sum(c is None for c in cells) / len(cells)


def peak_activations(schedule: Schedule) -> list[int]:
    """Per stage, the most micro-batches whose F has run and whose last
    backward op (B, or W where the schedule has W) has not."""
    has_w = any(c is not None and c[0] == "W" for row in schedule for c in row)
    last = "W" if has_w else "B"
    peaks = []
    for s in range(len(schedule[0])):
        alive = peak = 0
        for row in schedule:
            if row[s] is not None:
                alive += (row[s][0] == "F") - (row[s][0] == last)
                peak = max(peak, alive)
        peaks.append(peak)
    return peaks


def zero_bubble_schedule(n_stages: int, n_micro: int) -> Schedule:
    """ZB-H1: B split into B (input gradient, on the critical path) and W
    (weight gradient, needed by no other op), W filling the ticks 1F1B
    leaves idle. Makespan at most max(3m + p − 1, 2(m + p) − 1), at most p
    micro-batches alive per stage (a micro-batch lives from F to W).
    """
    p, m = n_stages, n_micro
    # Built backwards from the last tick: walking time in reverse, an op is
    # ready once every op that needs it is placed. Each stage takes a ready B
    # (it unblocks the stage before), else an F, else a W, the latest
    # micro-batch first, and starts no new W — in reverse, the start of a
    # micro-batch's life — while p are alive on it.
    rank = {"B": 0, "F": 1, "W": 2}
    todo = [{(k, i) for k in rank for i in range(m)} for _ in range(p)]
    placed: set[tuple[str, int, int]] = set()
    alive = [0] * p
    reversed_grid: Schedule = []
    while any(todo):
        row: list[Op | None] = [None] * p
        for s in range(p):
            ready = [
                (k, i)
                for k, i in todo[s]
                if all(user in placed for user in _users(k, s, i, p)) and (k != "W" or alive[s] < p)
            ]
            if ready:
                row[s] = min(ready, key=lambda op: (rank[op[0]], -op[1]))
        for s, op in enumerate(row):
            if op is not None:
                todo[s].remove(op)
                placed.add((op[0], s, op[1]))
                alive[s] += (op[0] == "W") - (op[0] == "F")
        reversed_grid.append(row)
    return reversed_grid[::-1]


def _users(kind: str, stage: int, micro: int, p: int) -> list[tuple[str, int, int]]:
    """The ops that need this one (``_needs`` read backwards)."""
    if kind == "F":
        return ([("F", stage + 1, micro)] if stage < p - 1 else []) + [("B", stage, micro)]
    if kind == "B":
        return ([("B", stage - 1, micro)] if stage > 0 else []) + [("W", stage, micro)]
    return []


# ---------------------------------------------------------------- execution


def pipeline_forward(params: dict, x: jax.Array, mesh: Mesh, n_micro: int) -> jax.Array:
    """``tinymodels.forward(params, x)``, stage s running layer s.

    ``params`` sharded ``P('stage', None, None)`` (stage s holds layer s),
    ``x: [B, D]`` replicated, the result replicated. Micro-batches of
    B/n_micro rows move to the next stage with ``lax.ppermute``: at tick t
    stage s runs micro-batch t − s, so m + p − 1 ticks run every micro-batch
    through every stage.
    """
    p = mesh.shape[AXIS]
    b, d = x.shape
    rows = b // n_micro
    to_next = [(s, s + 1) for s in range(p - 1)]

    def body(w_in, w_out, x):
        s = lax.axis_index(AXIS)
        micro = x.reshape(n_micro, rows, d)

        def tick(t, carry):
            received, out = carry
            own = lax.dynamic_index_in_dim(micro, jnp.minimum(t, n_micro - 1), keepdims=False)
            h = tinymodels.layer(jnp.where(s == 0, own, received), w_in[0], w_out[0])
            done = t - (p - 1)  # the micro-batch leaving the last stage at tick t
            keep = lax.dynamic_update_index_in_dim(out, h, jnp.maximum(done, 0), 0)
            out = jnp.where((s == p - 1) & (done >= 0), keep, out)
            received = lax.ppermute(h, AXIS, to_next)  # an empty perm at p = 1
            return received, out

        start = lax.pcast(jnp.zeros((rows, d), x.dtype), AXIS, to="varying")
        out = lax.pcast(jnp.zeros((n_micro, rows, d), x.dtype), AXIS, to="varying")
        _, out = lax.fori_loop(0, n_micro + p - 1, tick, (start, out))
        # only the last stage holds y: one all-reduce gives it to every stage
        return lax.psum(out, AXIS).reshape(b, d)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P())(
        params["w_in"], params["w_out"], x
    )


def pipeline_grads(params: dict, x: jax.Array, y: jax.Array, mesh: Mesh, n_micro: int) -> dict:
    """``jax.grad(tinymodels.loss)(params, x, y)``, sharded like ``params``.

    A GPipe forward (m + p − 1 ticks) keeps each stage's input of every
    micro-batch; a mirrored backward (m + p − 1 ticks) sends input gradients
    to the stage before with ``lax.ppermute`` and adds up each stage's
    weight gradients where they are. Nothing else crosses devices: no
    all-reduce, 2(m + p − 1) permutes of one micro-batch.
    """
    p = mesh.shape[AXIS]
    b, d = x.shape
    rows = b // n_micro
    to_next = [(s, s + 1) for s in range(p - 1)]
    to_prev = [(s + 1, s) for s in range(p - 1)]

    def body(w_in, w_out, x, y):
        s = lax.axis_index(AXIS)
        micro_x = x.reshape(n_micro, rows, d)
        micro_y = y.reshape(n_micro, rows, d)

        def forward_tick(t, carry):
            received, saved = carry
            i = t - s  # the micro-batch this stage runs at tick t
            own = lax.dynamic_index_in_dim(micro_x, jnp.clip(t, 0, n_micro - 1), keepdims=False)
            h = jnp.where(s == 0, own, received)
            kept = lax.dynamic_update_index_in_dim(saved, h, jnp.clip(i, 0, n_micro - 1), 0)
            saved = jnp.where((i >= 0) & (i < n_micro), kept, saved)
            out = tinymodels.layer(h, w_in[0], w_out[0])
            received = lax.ppermute(out, AXIS, to_next)
            return received, saved

        def backward_tick(t, carry):
            received, g_in, g_out = carry
            i = t - (p - 1 - s)  # the last stage starts with micro-batch 0
            at = jnp.clip(i, 0, n_micro - 1)
            h = lax.dynamic_index_in_dim(saved, at, keepdims=False)
            out, pullback = jax.vjp(tinymodels.layer, h, w_in[0], w_out[0])
            target = lax.dynamic_index_in_dim(micro_y, at, keepdims=False)
            cotangent = jnp.where(s == p - 1, (out - target) / b, received)
            g_h, gw_in, gw_out = pullback(cotangent)
            valid = (i >= 0) & (i < n_micro)
            g_in = g_in + jnp.where(valid, gw_in, 0.0)
            g_out = g_out + jnp.where(valid, gw_out, 0.0)
            received = lax.ppermute(g_h, AXIS, to_prev)
            return received, g_in, g_out

        zeros = lax.pcast(jnp.zeros((rows, d), x.dtype), AXIS, to="varying")
        saved = lax.pcast(jnp.zeros((n_micro, rows, d), x.dtype), AXIS, to="varying")
        ticks = n_micro + p - 1
        _, saved = lax.fori_loop(0, ticks, forward_tick, (zeros, saved))
        start = (zeros, jnp.zeros_like(w_in[0]), jnp.zeros_like(w_out[0]))
        _, g_in, g_out = lax.fori_loop(0, ticks, backward_tick, start)
        return g_in[None], g_out[None]

    layer_spec = P(AXIS, None, None)
    g_in, g_out = jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P(), P()),
        out_specs=(layer_spec, layer_spec),
    )(params["w_in"], params["w_out"], x, y)  # fmt: skip
    return {"w_in": g_in, "w_out": g_out}
