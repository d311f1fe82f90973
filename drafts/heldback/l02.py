"""Held-back wrong programs for lesson 2 (see drafts/heldback/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb-l02-gather-slot-counts-steps-from-one",
        module=M,
        exercise="ring_all_gather",
        what=(
            "Writes the block received at fori_loop step s into slot (i - s) mod N, the lesson's "
            "formula for steps counted from 1, while the loop counts from 0: every arrival lands "
            "one slot too far right, its own block is overwritten and one slot stays empty."
        ),
        cause=("i - s - 1", "off by one", "counted from 0", "one slot"),
        kind="off-by-one",
        patch=(
            (
                "owner = (me - s - 1) % n  # the device this block started on",
                "owner = (me - s) % n  # the device this block started on",
            ),
        ),
    ),
    Held(
        id="hb-l02-gather-slot-bitmask-modulo",
        module=M,
        exercise="ring_all_gather",
        what=(
            "Wraps the slot index with a bit mask, (i - s - 1) & (N - 1), instead of mod N: "
            "the same thing for N = 1, 2, 4, 8, but wrong slots on rings of 3 or 6 devices."
        ),
        cause=("power of two", "bit mask", "& (n - 1)", "modulo"),
        kind="index",
        patch=(
            (
                "owner = (me - s - 1) % n  # the device this block started on",
                "owner = (me - s - 1) & (n - 1)  # the device this block started on (fast mod)",
            ),
        ),
    ),
    Held(
        id="hb-l02-reduce-scatter-sends-left",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "Passes the running sum to device i - 1 while choosing the chunk to add as if it "
            "came from the left (i - s - 2): from N = 3 on each partial sum collects different "
            "chunks on different devices and no device ends with a true chunk sum."
        ),
        cause=("direction", "left", "i - 1", "mirrored"),
        kind="collective",
        patch=(
            (
                "acc = lax.ppermute(acc, axis_name, _ring_right(n))",
                "acc = lax.ppermute(acc, axis_name, [(j, (j - 1) % n) for j in range(n)])",
            ),
        ),
    ),
    Held(
        id="hb-l02-reduce-scatter-chunk-offset-in-chunks",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "Slices chunk k at row offset k instead of k * c: right only when each chunk is one "
            "row, otherwise it adds overlapping row windows that are not the chunks."
        ),
        cause=("k * c", "offset", "chunk size", "rows"),
        kind="index",
        patch=(
            (
                "return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)",
                "return lax.dynamic_slice_in_dim(x, k, c, axis=0)",
            ),
        ),
    ),
    Held(
        id="hb-l02-all-reduce-gather-then-scatter",
        module=M,
        exercise="ring_all_reduce",
        what=(
            "Composes the two halves in the wrong order, all-gather then reduce-scatter: the "
            "gathered array is the same on every device, so device i returns N times its own "
            "x instead of the sum, and each send carries a whole x rather than one chunk."
        ),
        cause=("order", "reduce-scatter first", "swapped", "other way round"),
        kind="collective",
        code="""
def ring_all_reduce(x, axis_name):
    return ring_reduce_scatter(ring_all_gather(x, axis_name), axis_name)
""",
    ),
]
