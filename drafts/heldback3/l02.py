"""Held-back set 3, lesson 2 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb3-l02-gather-owner-counted-forwards",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The ring sends to the right, but the learner files the block received at step s "
            "under device (i + s + 1) mod N, as if it came from the devices ahead: the blocks "
            "land in mirrored slots (right only when N = 2)."
        ),
        cause=("i − s − 1", "came from", "started on", "owner", "left neighbour"),
        kind="index",
        patch=(
            (
                "owner = (me - s - 1) % n  # the device this block started on",
                "owner = (me + s + 1) % n  # the device this block started on",
            ),
        ),
    ),
    Held(
        id="hb3-l02-gather-own-block-in-slot-0",
        module=M,
        exercise="ring_all_gather",
        what=(
            "The learner starts the output buffer by writing its own block at offset 0, as if "
            "appending to a list, instead of at slot i: on every device but 0 its own slot "
            "stays zero (slot 0 is later overwritten by device 0's block)."
        ),
        cause=("own block", "slot i", "its own slot", "me · b", "offset"),
        kind="index",
        patch=(
            (
                "out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)",
                "out = lax.dynamic_update_slice_in_dim(out, x, 0, axis=0)  # start with mine",
            ),
        ),
    ),
    Held(
        id="hb3-l02-reduce-scatter-steps-counted-from-one",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "The learner runs the ring steps as s = 1 … N − 1 instead of 0 … N − 2, keeping "
            "the chunk formula (i − s − 2) mod N: every addition uses the chunk one step "
            "behind, so each running sum mixes different chunks."
        ),
        cause=("s = 0", "loop range", "counted from", "0 … n − 2", "shifted"),
        kind="off-by-one",
        patch=(
            (
                "return lax.fori_loop(0, n - 1, step, acc)",
                "return lax.fori_loop(1, n, step, acc)  # steps 1 … N − 1",
            ),
        ),
    ),
]
