"""Held-back set 2, lesson 13 (see drafts/heldback2/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb2-l13-time-hierarchical-links-swapped",
        module=M,
        exercise="allreduce_time",
        what=(
            "In the hierarchical all-reduce the learner times the in-host reduce-scatter and "
            "all-gather at the cross-host dcn bandwidth and the cross-host all-reduce at ici, "
            "the two link classes swapped."
        ),
        cause=("ici", "dcn", "swapped", "within a host", "link"),
        kind="other",
        patch=(
            (
                "within = 2 * (local - 1) / local * nbytes / ici",
                "within = 2 * (local - 1) / local * nbytes / dcn",
            ),
            (
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / ici",
            ),
        ),
    ),
    Held(
        id="hb2-l13-loader-float-indices",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner computes the rows per process with true division, B / P, so "
            "np.arange and the modulo give float indices: the row numbers are right but the "
            "function must return an int array."
        ),
        cause=("int", "integer", "//", "float", "dtype"),
        kind="dtype",
        patch=(
            (
                "per = global_batch // process_count",
                "per = global_batch / process_count",
            ),
        ),
    ),
    Held(
        id="hb2-l13-slices-by-device-id",
        module=M,
        exercise="host_local_slices",
        what=(
            "The learner picks the process's devices by device.id == process_index instead of "
            "device.process_index, so a process 'holds' the one device whose id equals its "
            "index and the block returned is that device's, not the union of its own devices'."
        ),
        cause=("process_index", "device id", "its devices", "d.process_index", "union"),
        kind="index",
        patch=(
            (
                "if device.process_index == process_index",
                "if device.id == process_index",
            ),
        ),
    ),
]
