"""Held-back set 4, lesson 2 (see drafts/heldback4/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb4-l02-gather-writes-before-receiving",
        module=M,
        exercise="ring_all_gather",
        what=(
            "In each ring step the learner files the block it holds under (i − s − 1) mod N and "
            "only then passes it on, instead of receiving first: every block is filed one slot "
            "early (its own block lands in slot i − 1 as well as i) and the block received at "
            "the last step is never written."
        ),
        cause=("receive", "before", "order", "last step", "one slot"),
        kind="off-by-one",
        patch=(
            (
                "        block = lax.ppermute(block, axis_name, _ring_right(n))\n"
                "        owner = (me - s - 1) % n  # the device this block started on\n"
                "        return lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0), block",
                "        owner = (me - s - 1) % n  # the device this block started on\n"
                "        out = lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0)\n"
                "        return out, lax.ppermute(block, axis_name, _ring_right(n))  # then pass it on",
            ),
        ),
    ),
    Held(
        id="hb4-l02-reduce-scatter-sum-starts-empty",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "The learner starts the running sum from zeros instead of the device's chunk "
            "(i − 1) mod N and then adds one chunk per ring step: with N − 1 steps only N − 1 "
            "devices contribute, so each result misses the chunk of the device the sum started on."
        ),
        cause=("starts from zero", "initial", "own chunk", "i − 1", "n − 1 terms"),
        kind="state",
        patch=(
            (
                "acc = chunk((me - 1) % n)",
                "acc = jnp.zeros_like(chunk(me))  # the running sum starts empty",
            ),
        ),
    ),
    Held(
        id="hb4-l02-all-reduce-tiles-the-reduced-chunk",
        module=M,
        exercise="ring_all_reduce",
        what=(
            "After the reduce-scatter the learner tiles its own summed chunk N times to get x's "
            "shape back instead of all-gathering the chunks: device i returns chunk i of the sum "
            "in every slot, not the whole sum."
        ),
        cause=("all-gather", "tile", "only its own chunk", "second half", "gather the chunks"),
        kind="collective",
        patch=(
            (
                "return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name)",
                "total = ring_reduce_scatter(x, axis_name)  # my chunk of the sum\n"
                "    return jnp.tile(total, (lax.axis_size(axis_name),) + (1,) * (x.ndim - 1))",
            ),
        ),
    ),
]
