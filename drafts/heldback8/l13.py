"""Held-back set 8, lesson 13 (see drafts/heldback8/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb8-l13-slices-own-process-not-the-argument",
        module=M,
        exercise="host_local_slices",
        what="The learner filters the devices by jax.process_index(), the process it runs in, instead of the process_index argument: asked about another process it answers for its own (or finds no device).",
        cause=("process_index", "argument", "jax.process_index", "parameter", "this process"),
        kind="state",
        patch=(
            (
                "        if device.process_index == process_index\n",
                "        if device.process_index == jax.process_index()\n",
            ),
        ),
    ),
    Held(
        id="hb8-l13-allreduce-gathered-before-crossing-hosts",
        module=M,
        exercise="hierarchical_all_reduce",
        what="The learner reduce-scatters within the host, all-gathers within the host, then all-reduces across hosts: the values are right, but the whole array crosses hosts instead of 1/D of it — the cross-host all-reduce belongs between the two in-host steps.",
        cause=("1/d", "whole array", "between", "order", "across hosts"),
        kind="other",
        code="""
def hierarchical_all_reduce(x, host_axis, local_axis):
    part = lax.psum_scatter(x, local_axis, scatter_dimension=0, tiled=True)
    whole = lax.all_gather(part, local_axis, axis=0, tiled=True, to="invarying")
    return lax.psum(whole, host_axis)
""",
    ),
    Held(
        id="hb8-l13-time-within-host-without-its-two",
        module=M,
        exercise="allreduce_time",
        what="For the in-host part of the hierarchical all-reduce the learner counts (local − 1)/local · nbytes, one pass: it is a reduce-scatter and an all-gather, 2(local − 1)/local · nbytes over ici.",
        cause=("2(local", "all-gather", "reduce-scatter and", "twice", "factor of 2"),
        kind="factor",
        patch=(
            (
                "    within = 2 * (local - 1) / local * nbytes / ici",
                "    within = (local - 1) / local * nbytes / ici",
            ),
        ),
    ),
]
