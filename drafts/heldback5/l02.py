"""Held-back set 5, lesson 2 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb5-l02-gather-concatenated-in-arrival-order",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The learner keeps a list that starts with its own block and appends each block as "
            "it arrives, then concatenates the list: device i returns B_i, B_(i−1), B_(i−2), … "
            "in arrival order instead of B_0 … B_(N−1) in device order (only device 0 at N = 2 "
            "comes out right)."
        ),
        cause=("device order", "arrival", "slot", "rotated", "order they arrive"),
        kind="layout",
        code="""
def ring_all_gather(x, axis_name):
    n = lax.axis_size(axis_name)
    blocks, block = [x], x
    for _ in range(n - 1):
        block = lax.ppermute(block, axis_name, _ring_right(n))
        blocks.append(block)  # in the order they arrive
    return jnp.concatenate(blocks, axis=0)
""",
    ),
    Held(
        id="hb5-l02-reduce-scatter-chunk-size-from-x-size",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "The learner takes the chunk length as x.size // N, the number of elements over N, "
            "instead of x.shape[0] // N, the rows: right for a 1-D x, but for x [N·c, d] each "
            "'chunk' is d·c rows long, so the sums cover the wrong rows and come back d times "
            "too long (or, where d > N, the slice is longer than x and tracing fails)."
        ),
        cause=("x.shape[0]", "rows", "size", "elements", "chunk length"),
        kind="shape",
        patch=(
            (
                "    c = x.shape[0] // n\n\n    def chunk(k):",
                "    c = x.size // n\n\n    def chunk(k):",
            ),
        ),
    ),
    Held(
        id="hb5-l02-all-reduce-rolled-by-one-chunk",
        module=M,
        exercise="ring_all_reduce",
        what=(
            "Misreading section 4 ('start each device with its own chunk … device i ends with "
            "chunk i + 1') as a description of the reduce-scatter it calls, the learner rolls "
            "the all-gathered sum back by one chunk to 'fix' the order: every device returns "
            "the sum with its chunks rotated by one place."
        ),
        cause=("roll", "rotated", "shifted", "one chunk", "chunk i"),
        kind="layout",
        patch=(
            (
                "return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name)",
                "total = ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name)\n"
                "    c = x.shape[0] // lax.axis_size(axis_name)\n"
                "    return jnp.roll(total, c, axis=0)  # device i ended with chunk i + 1",
            ),
        ),
    ),
]
