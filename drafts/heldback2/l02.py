"""Held-back set 2, lesson 2 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l02_collectives"

HELD: list[Held] = [
    Held(
        id="hb2-l02-gather-forwards-its-own-block",
        module=M,
        exercise="ring_all_gather",
        what=(
            "At every step the learner sends its own x to the right instead of the block it "
            "received last, so every device only ever receives its left neighbour's block and "
            "writes that one block into all N − 1 other slots."
        ),
        cause=("received", "forward", "pass on", "own block", "neighbour's block"),
        kind="state",
        patch=(
            (
                "block = lax.ppermute(block, axis_name, _ring_right(n))",
                "block = lax.ppermute(x, axis_name, _ring_right(n))  # send my block on",
            ),
        ),
    ),
    Held(
        id="hb2-l02-reduce-scatter-adds-before-sending",
        module=M,
        exercise="ring_reduce_scatter",
        what=(
            "Inside the loop the learner adds its chunk first and then sends the running sum, "
            "instead of receiving and then adding: the last addition happens on the sender, so "
            "the sum each device keeps is missing a term and belongs to another chunk."
        ),
        cause=("order", "before", "after the send", "receive then add", "add then send"),
        kind="off-by-one",
        patch=(
            (
                "        acc = lax.ppermute(acc, axis_name, _ring_right(n))\n"
                "        return acc + chunk((me - s - 2) % n)",
                "        acc = acc + chunk((me - s - 2) % n)  # add my part, then pass it on\n"
                "        return lax.ppermute(acc, axis_name, _ring_right(n))",
            ),
        ),
    ),
]
