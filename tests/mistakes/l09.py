"""Realistic wrong implementations for lesson 9 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L09 = "l09_pipeline"

MISTAKES: list[Mistake] = [
    # ---------------------------------------------------------------- schedules
    Mistake(
        id="pp-gpipe-phase-of-m-plus-p-ticks",
        module=L09,
        exercise="gpipe_schedule",
        code="",
        patch=(("phase = m + p - 1", "phase = m + p"),),
        status="failed",
        check="makespan",
        says=("2(m + p − 1)", "m + p − 1 ticks, not m + p"),
    ),
    Mistake(
        id="pp-gpipe-drops-last-micro-batch",
        module=L09,
        exercise="gpipe_schedule",
        code="",
        patch=(
            (
                "        for i in range(m):\n            grid[s + i]",
                "        for i in range(m - 1):\n            grid[s + i]",
            ),
        ),  # fmt: skip
        status="failed",
        check="ops",
        says=("never run", "last micro-batch"),
        never=("does not exist",),
    ),
    Mistake(
        id="pp-1f1b-steady-loop-over-every-micro-batch",
        module=L09,
        exercise="one_f_one_b_schedule",
        code="",
        patch=(
            (
                '        for i in range(m - warmup):\n            order += [("F", warmup + i), ("B", i)]',
                '        for i in range(m):\n            order += [("F", warmup + i), ("B", i)]',
            ),
        ),  # fmt: skip
        status="failed",
        check="ops",
        says=("does not exist: there are m = ",),
        never=("never run",),
    ),
    Mistake(
        id="pp-gpipe-rows-share-one-list",
        module=L09,
        exercise="gpipe_schedule",
        code="",
        patch=(
            (
                "grid: Schedule = [[None] * p for _ in range(2 * phase)]",
                "grid: Schedule = [[None] * p] * (2 * phase)",
            ),
        ),  # fmt: skip
        status="failed",
        check="ops",
        says=("runs twice", "share one list"),
    ),
    Mistake(
        id="pp-1f1b-backward-before-next-stage",
        module=L09,
        exercise="one_f_one_b_schedule",
        code="",
        # the gradient is taken to be ready once the stage's own forward ran
        patch=(
            (
                'return [("F", stage, micro)] + ([("B", stage + 1, micro)] if stage < p - 1 else [])',
                'return [("F", stage, micro)]',
            ),
        ),  # fmt: skip
        status="failed",
        check="dependencies",
        says=("needs backward B0 of micro-batch 0 on stage 1", "comes from the next stage"),
    ),
    Mistake(
        id="pp-1f1b-one-warmup-too-many",
        module=L09,
        exercise="one_f_one_b_schedule",
        code="",
        patch=(("warmup = min(p - 1 - s, m)", "warmup = min(p - s, m)"),),
        status="failed",
        check="memory",
        says=("min(p − s, m)", "warm-up"),
    ),
    Mistake(
        id="pp-zero-bubble-w-right-after-b",
        module=L09,
        exercise="zero_bubble_schedule",
        code="""
def zero_bubble_schedule(n_stages, n_micro):
    # 1F1B with each backward split in two, W straight after its B: no bubble filled
    p, m = n_stages, n_micro
    orders = []
    for s in range(p):
        warmup = min(p - 1 - s, m)
        order = [("F", i) for i in range(warmup)]
        for i in range(m - warmup):
            order += [("F", warmup + i), ("B", i), ("W", i)]
        for i in range(m - warmup, m):
            order += [("B", i), ("W", i)]
        orders.append(order)
    return _as_soon_as_ready(orders)
""",
        status="failed",
        check="makespan",
        says=("max(3m + p − 1, 2(m + p) − 1)", "Every W runs straight after its B"),
    ),
    # ---------------------------------------------------------------- measuring
    Mistake(
        id="pp-bubble-returns-the-formula",
        module=L09,
        exercise="bubble_fraction",
        code="""
def bubble_fraction(schedule):
    p = len(schedule[0])
    m = len({c[1] for row in schedule for c in row if c is not None})
    return (p - 1) / (m + p - 1)
""",
        status="failed",
        check="values",
        says=("idle cells", "the formula for GPipe and 1F1B"),
    ),
    Mistake(
        id="pp-peaks-return-the-1f1b-bound",
        module=L09,
        exercise="peak_activations",
        code="""
def peak_activations(schedule):
    p = len(schedule[0])
    m = len({c[1] for row in schedule for c in row if c is not None})
    return [min(p - s, m) for s in range(p)]
""",
        status="failed",
        check="values",
        says=("1F1B's bound",),
    ),
    Mistake(
        id="pp-peaks-free-at-b-despite-w",
        module=L09,
        exercise="peak_activations",
        code="",
        patch=(('last = "W" if has_w else "B"', 'last = "B"'),),
        status="failed",
        check="values",
        says=("until its W",),
    ),
    # ---------------------------------------------------------------- execution
    Mistake(
        id="pp-forward-gathers-the-weights",
        module=L09,
        exercise="pipeline_forward",
        code="""
def pipeline_forward(params, x, mesh, n_micro):
    def body(w_in, w_out, x):
        every = {  # every layer on every stage, then the plain model
            "w_in": lax.all_gather(w_in, AXIS, tiled=True, to="invarying"),
            "w_out": lax.all_gather(w_out, AXIS, tiled=True, to="invarying"),
        }
        return tinymodels.forward(every, x)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P()
    )(params["w_in"], params["w_out"], x)
""",
        status="failed",
        check="weights",
        says=("weights move", "all_gather"),
    ),
    Mistake(
        id="pp-forward-sends-the-whole-batch",
        module=L09,
        exercise="pipeline_forward",
        code="""
def pipeline_forward(params, x, mesh, n_micro):
    p = mesh.shape[AXIS]

    def body(w_in, w_out, x):
        s = lax.axis_index(AXIS)
        h = x
        for t in range(p):  # stage t runs the whole batch, then hands it on
            h = jnp.where(s == t, tinymodels.layer(h, w_in[0], w_out[0]), h)
            if t < p - 1:
                h = lax.ppermute(h, AXIS, [(i, i + 1) for i in range(p - 1)])
        return lax.psum(jnp.where(s == p - 1, h, 0.0), AXIS)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P()
    )(params["w_in"], params["w_out"], x)
""",
        status="failed",
        check="transfer size",
        says=("whole batch", "no micro-batching"),
    ),
    Mistake(
        id="pp-forward-one-tick-too-few",
        module=L09,
        exercise="pipeline_forward",
        code="",
        patch=(
            ("lax.fori_loop(0, n_micro + p - 1, tick,", "lax.fori_loop(0, n_micro + p - 2, tick,"),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("last micro-batch", "m + p − 1 ticks"),
    ),
    Mistake(
        id="pp-forward-stages-in-reverse",
        module=L09,
        exercise="pipeline_forward",
        code="""
def pipeline_forward(params, x, mesh, n_micro):
    # enters at the last stage and flows down to stage 0
    p = mesh.shape[AXIS]
    b, d = x.shape
    rows = b // n_micro
    to_prev = [(s + 1, s) for s in range(p - 1)]

    def body(w_in, w_out, x):
        s = lax.axis_index(AXIS)
        micro = x.reshape(n_micro, rows, d)

        def tick(t, carry):
            received, out = carry
            own = lax.dynamic_index_in_dim(micro, jnp.minimum(t, n_micro - 1), keepdims=False)
            h = tinymodels.layer(jnp.where(s == p - 1, own, received), w_in[0], w_out[0])
            done = t - (p - 1)
            keep = lax.dynamic_update_index_in_dim(out, h, jnp.maximum(done, 0), 0)
            out = jnp.where((s == 0) & (done >= 0), keep, out)
            received = lax.ppermute(h, AXIS, to_prev)
            return received, out

        start = lax.pcast(jnp.zeros((rows, d), x.dtype), AXIS, to="varying")
        out = lax.pcast(jnp.zeros((n_micro, rows, d), x.dtype), AXIS, to="varying")
        _, out = lax.fori_loop(0, n_micro + p - 1, tick, (start, out))
        return lax.psum(out, AXIS).reshape(b, d)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P()
    )(params["w_in"], params["w_out"], x)
""",
        status="failed",
        check="values",
        says=("reverse order",),
    ),
    Mistake(
        id="pp-forward-ticks-unrolled-in-python",
        module=L09,
        exercise="pipeline_forward",
        code="",
        patch=(
            (
                "_, out = lax.fori_loop(0, n_micro + p - 1, tick, (start, out))",
                "carry = (start, out)\n"
                "        for t in range(n_micro + p - 1):\n"
                "            carry = tick(t, carry)\n"
                "        _, out = carry",
            ),
        ),  # fmt: skip
        status="failed",
        check="ticks",
        says=("outside any loop", "lax.fori_loop"),
    ),
    Mistake(
        id="pp-forward-micro-batches-one-after-another",
        module=L09,
        exercise="pipeline_forward",
        code="""
def pipeline_forward(params, x, mesh, n_micro):
    p = mesh.shape[AXIS]
    b, d = x.shape
    rows = b // n_micro

    def body(w_in, w_out, x):
        s = lax.axis_index(AXIS)
        micro = x.reshape(n_micro, rows, d)

        def one(i, out):  # one micro-batch through every stage, then the next
            h = lax.dynamic_index_in_dim(micro, i, keepdims=False)
            for t in range(p):
                h = jnp.where(s == t, tinymodels.layer(h, w_in[0], w_out[0]), h)
                if t < p - 1:
                    h = lax.ppermute(h, AXIS, [(j, j + 1) for j in range(p - 1)])
            return lax.dynamic_update_index_in_dim(out, h, i, 0)

        out = lax.pcast(jnp.zeros((n_micro, rows, d), x.dtype), AXIS, to="varying")
        out = lax.fori_loop(0, n_micro, one, out)
        return lax.psum(jnp.where(s == p - 1, out, 0.0), AXIS).reshape(b, d)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P()
    )(params["w_in"], params["w_out"], x)
""",
        status="failed",
        check="ticks",
        says=("m·(p − 1)", "one stage works at a time"),
    ),
    Mistake(
        id="pp-grads-through-the-forward-psum",
        module=L09,
        exercise="pipeline_grads",
        code="""
def pipeline_grads(params, x, y, mesh, n_micro):
    def loss(p):  # autodiff through pipeline_forward, psum of y included
        err = pipeline_forward(p, x, mesh, n_micro) - y
        return 0.5 * jnp.mean(jnp.sum(err * err, axis=-1))

    return jax.grad(loss)(params)
""",
        status="failed",
        check="collectives",
        says=("all-reduce", "gives y to every stage"),
    ),
    Mistake(
        id="pp-grads-mean-over-the-micro-batch",
        module=L09,
        exercise="pipeline_grads",
        code="",
        patch=(("(out - target) / b", "(out - target) / rows"),),
        status="failed",
        check="values",
        says=("m = 3 times", "(out − y_i)/B"),
    ),
    Mistake(
        id="pp-forward-bfloat16-inside-float32",
        module=L09,
        exercise="pipeline_forward",
        code="",
        patch=(
            (
                "h = tinymodels.layer(jnp.where(s == 0, own, received), w_in[0], w_out[0])",
                "half = [a.astype(jnp.bfloat16) for a in (jnp.where(s == 0, own, received), "
                "w_in[0], w_out[0])]\n"
                "            h = tinymodels.layer(*half).astype(x.dtype)  # half the bytes to send",
            ),
        ),  # fmt: skip
        status="failed",
        check="values",
        says=("bfloat16", "float32"),
    ),
    # ---------------------------------------------------------------- check_vma's refusals
    Mistake(
        id="pp-forward-gathers-the-weights-check-vma",
        module=L09,
        exercise="pipeline_forward",
        code="""
def pipeline_forward(params, x, mesh, n_micro):
    def body(w_in, w_out, x):
        every = {  # every layer on every stage, then the plain model
            "w_in": lax.all_gather(w_in, AXIS, tiled=True),
            "w_out": lax.all_gather(w_out, AXIS, tiled=True),
        }
        return tinymodels.forward(every, x)

    layer_spec = P(AXIS, None, None)
    return jax.shard_map(
        body, mesh=mesh, in_specs=(layer_spec, layer_spec, P()), out_specs=P()
    )(params["w_in"], params["w_out"], x)
""",
        status="error",
        check=None,
        says=("pipeline_forward that all-gathers the weights", "stay on their stage"),
    ),
    Mistake(
        id="pp-forward-buffer-from-zeros",
        module=L09,
        exercise="pipeline_forward",
        status="error",
        check=None,
        says=("a buffer built with jnp.zeros is invariant", "lax.pcast(buf, 'stage'"),
        patch=(
            (
                'start = lax.pcast(jnp.zeros((rows, d), x.dtype), AXIS, to="varying")',
                "start = jnp.zeros((rows, d), x.dtype)",
            ),
        ),
    ),
    Mistake(
        id="pp-forward-result-never-reduced",
        module=L09,
        exercise="pipeline_forward",
        status="error",
        check=None,
        says=("still varies over 'stage'", "lax.psum(out, 'stage')", "a psum adds them all"),
        patch=(("return lax.psum(out, AXIS).reshape(b, d)", "return out.reshape(b, d)"),),
    ),
    # ---------------------------------------------------------------- issue 18 §4: value failures
    Mistake(
        id="pp-forward-strided-micro-batches",
        module=L09,
        exercise="pipeline_forward",
        status="failed",
        check="values",
        says=("right but in the wrong place", "rows i, i + m, i + 2m"),
        patch=(
            (
                "        micro = x.reshape(n_micro, rows, d)\n",
                "        micro = x.reshape(rows, n_micro, d).swapaxes(0, 1)  # row r → micro-batch r % m\n",
            ),
        ),
    ),
    Mistake(
        id="pp-grads-idle-ticks-not-masked",
        module=L09,
        exercise="pipeline_grads",
        status="failed",
        check="values",
        says=("idle ticks are not masked", "only where 0 ≤ i < m"),
        patch=(
            ("g_in = g_in + jnp.where(valid, gw_in, 0.0)", "g_in = g_in + gw_in"),
            ("g_out = g_out + jnp.where(valid, gw_out, 0.0)", "g_out = g_out + gw_out"),
        ),
    ),
    Mistake(
        id="pp-grads-input-gradient-sent-forward",
        module=L09,
        exercise="pipeline_grads",
        status="failed",
        check="values",
        says=("sends each input gradient", "perm pairs (s + 1, s)"),
        patch=(
            (
                "received = lax.ppermute(g_h, AXIS, to_prev)",
                "received = lax.ppermute(g_h, AXIS, to_next)",
            ),
        ),
    ),
    Mistake(
        id="pp-forward-merged-strided",
        module=L09,
        exercise="pipeline_forward",
        status="failed",
        check="values",
        says=("right but in the wrong place", "Merge as you split"),
        patch=(
            (
                "return lax.psum(out, AXIS).reshape(b, d)",
                "return lax.psum(out, AXIS).swapaxes(0, 1).reshape(b, d)  # [rows, m, d]",
            ),
        ),
    ),
    Mistake(  # issue 45 audit: a walk that never decrements was told "GPipe's m" alone
        id="l09-peak-walk-never-decrements",
        module="l09_pipeline",
        exercise="peak_activations",
        status="failed",
        check="values",
        says=("counts every F and no backward op",),
        patch=(
            (
                'alive += (row[s][0] == "F") - (row[s][0] == last)',
                'alive += (row[s][0] == "F") - (row[s] == last)  # the op\'s kind',
            ),
        ),
    ),
    Mistake(  # issue 45: idle stages per tick, p times the fraction
        id="l09-bubble-idle-cells-over-ticks",
        module="l09_pipeline",
        exercise="bubble_fraction",
        status="failed",
        check="values",
        says=("by the ticks alone", "Divide by every cell"),
        patch=(
            (
                "    return sum(c is None for c in cells) / len(cells)",
                "    return sum(c is None for c in cells) / len(schedule)  # per tick",
            ),
        ),
    ),
    Mistake(  # issue 45: one peak for the pipeline, the largest stage's on every stage
        id="l09-peaks-largest-on-every-stage",
        module="l09_pipeline",
        exercise="peak_activations",
        status="failed",
        check="values",
        says=("the largest stage's peak (4) on every stage",),
        patch=(
            ("    return peaks", "    return [max(peaks)] * len(peaks)  # the pipeline's peak"),
        ),
    ),
    Mistake(  # drafts/heldback6: right values, one pair too many; passed before `pairs`
        id="l09-forward-permute-closes-the-ring",
        module="l09_pipeline",
        exercise="pipeline_forward",
        status="failed",
        check="pairs",
        says=("Stage 3 sends to stage 0: that closes a ring",),
        patch=(
            (
                "    to_next = [(s, s + 1) for s in range(p - 1)]\n\n    def body(w_in, w_out, x):",
                "    to_next = [(s, (s + 1) % p) for s in range(p)]  # the ring of lesson 2\n\n"
                "    def body(w_in, w_out, x):",
            ),
        ),
    ),
    Mistake(  # the same in pipeline_grads: the forward pairs wrap, the backward's do not
        id="l09-grads-forward-permute-closes-the-ring",
        module="l09_pipeline",
        exercise="pipeline_grads",
        status="failed",
        check="pairs",
        says=("Stage 3 sends to stage 0: that closes a ring",),
        patch=(
            (
                "    to_next = [(s, s + 1) for s in range(p - 1)]\n    to_prev",
                "    to_next = [(s, (s + 1) % p) for s in range(p)]  # the ring of lesson 2\n    to_prev",
            ),
        ),
    ),
    Mistake(  # drafts/heldback6: a wrong shape that is another leaf's expected value
        id="l09-grads-leaves-swapped-by-the-unpacking",
        module="l09_pipeline",
        exercise="pipeline_grads",
        status="failed",
        check="values",
        says=("is exactly the expected ['w_out']", "the two are swapped"),
        patch=(
            (
                "_, g_in, g_out = lax.fori_loop(0, ticks, backward_tick, start)",
                "_, g_out, g_in = lax.fori_loop(0, ticks, backward_tick, start)",
            ),
        ),
    ),
    Mistake(  # its neighbour: one leaf is the other's gradient, the other right: not "swapped"
        id="l09-grads-w-in-given-the-w-out-gradient",
        module="l09_pipeline",
        exercise="pipeline_grads",
        status="failed",
        check="values",
        says=("is exactly the expected ['w_out']", "the leaves are mixed up"),
        never=("swapped",),
        patch=(
            (
                '    return {"w_in": g_in, "w_out": g_out}',
                '    return {"w_in": g_out, "w_out": g_out}',
            ),
        ),
    ),
    Mistake(  # audit 67: the forward's pairs reversed; the last stage receives nothing
        id="l09-forward-pairs-reversed",
        module="l09_pipeline",
        exercise="pipeline_forward",
        status="failed",
        check="values",
        says=("nothing is sent to device 3",),
        never=("the result buffer is never written", "A ring's pairs", "the first stage's input"),
        patch=(
            (
                "    to_next = [(s, s + 1) for s in range(p - 1)]\n\n    def body(w_in, w_out, x):",
                "    to_next = [(s + 1, s) for s in range(p - 1)]\n\n    def body(w_in, w_out, x):",
            ),
        ),
    ),
    Mistake(  # audit 67: the gradients sent back round a ring; the hint told the forward's story
        id="l09-grads-backward-permute-closes-the-ring",
        module="l09_pipeline",
        exercise="pipeline_grads",
        status="failed",
        check="pairs",
        says=(
            "Stage 0 sends to stage 3: that closes a ring",
            "the gradients come back along a line",
        ),
        never=("stage 0 reads x",),
        patch=(
            (
                "    to_prev = [(s + 1, s) for s in range(p - 1)]",
                "    to_prev = [((s + 1) % p, s) for s in range(p)]",
            ),
        ),
    ),
    Mistake(  # drafts/heldback7: the grid walked row by row as if a row were a stage
        id="l09-peaks-grid-read-as-stage-by-tick",
        module="l09_pipeline",
        exercise="peak_activations",
        status="failed",
        check="values",
        says=("one count per tick", "the grid is schedule[tick][stage]"),
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
    Mistake(  # drafts/heldback7: idle counted up to each stage's last op only
        id="l09-bubble-trailing-idle-not-counted",
        module="l09_pipeline",
        exercise="bubble_fraction",
        status="failed",
        check="values",
        says=("counts a stage idle only until its last op",),
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
    Mistake(  # audit 67b: stage 0 reads what the permute hands it (zeros), the pairs right
        id="l09-forward-stage-0-reads-the-received-block",
        module="l09_pipeline",
        exercise="pipeline_forward",
        status="failed",
        check="values",
        says=(
            "device 0, where the line starts, is sent nothing",
            "the first stage's input is its own micro-batch",
        ),
        patch=(
            (
                "            h = tinymodels.layer(jnp.where(s == 0, own, received), w_in[0], w_out[0])\n"
                "            done = t - (p - 1)",
                "            h = tinymodels.layer(received, w_in[0], w_out[0])\n            done = t - (p - 1)",
            ),
        ),
    ),
]
