"""Held-back set 6, lesson 13 (see drafts/heldback6/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb6-l13-allreduce-cross-host-step-over-both-axes",
        module=M,
        exercise="hierarchical_all_reduce",
        what=(
            "For the step across hosts the learner psums over both axes, (host, local), instead "
            "of host alone: after the in-host reduce-scatter each local device holds a different "
            "1/D part, so the psum also adds the D different parts together and the result is "
            "wrong (and the whole mesh, not one device per host, takes part)."
        ),
        cause=("host_axis", "host axis only", "both axes", "one device per host", "across hosts"),
        kind="axis",
        patch=(
            (
                "    part = lax.psum(part, host_axis)  # 1/D of the data crosses hosts, one device per host",
                "    part = lax.psum(part, (host_axis, local_axis))  # across every host",
            ),
        ),
    ),
    Held(
        id="hb6-l13-slices-replicated-blocks-counted-twice",
        module=M,
        exercise="host_local_slices",
        what=(
            "The learner collects its devices' blocks in a list, one entry per device, not a "
            "set of distinct blocks: when the spec leaves a mesh axis unused (the block is "
            "replicated over it) a block is counted once per copy, the held total exceeds the "
            "bounding box, and a valid block is refused with ValueError (e.g. P('host') or P(); "
            "specs that use every mesh axis are unaffected)."
        ),
        cause=("replicated", "distinct", "duplicate", "set", "counted twice", "ValueError"),
        kind="other",
        patch=(
            (
                "    mine = {  # distinct (start, stop) per dimension of each of this process's devices",
                "    mine = [  # (start, stop) per dimension of each of this process's devices",
            ),
            (
                "        if device.process_index == process_index\n    }\n",
                "        if device.process_index == process_index\n    ]\n",
            ),
        ),
    ),
    Held(
        id="hb6-l13-time-flat-ring-at-dcn-on-one-host",
        module=M,
        exercise="allreduce_time",
        what=(
            "The learner times the flat ring at dcn whatever the number of hosts, reading 'runs "
            "at its slowest link (dcn…)': on a single host the ring never leaves it and runs at "
            "ici, so the one-host flat time is too large (wrong only for hosts = 1)."
        ),
        cause=("one host", "ici", "hosts = 1", "single host", "slowest link"),
        kind="other",
        patch=(
            (
                "        return 2 * (n - 1) / n * nbytes / (dcn if hosts > 1 else ici)",
                "        return 2 * (n - 1) / n * nbytes / dcn  # a flat ring runs at its slowest link",
            ),
        ),
    ),
]
