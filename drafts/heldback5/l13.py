"""Held-back set 5, lesson 13 (see drafts/heldback5/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb5-l13-loader-offset-by-process-count",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner offsets process i's part by i · P, the process count, instead of i · "
            "B/P, the rows each process loads: unless B = P², the parts overlap or leave gaps "
            "and together are not the single-process batch."
        ),
        cause=("b/p", "rows per process", "offset", "overlap", "per"),
        kind="index",
        patch=(
            (
                "start = step * global_batch + process_index * per",
                "start = step * global_batch + process_index * process_count",
            ),
        ),
    ),
    Held(
        id="hb5-l13-time-cross-host-part-over-hosts",
        module=M,
        exercise="allreduce_time",
        what=(
            "In the hierarchical time the learner takes the part that crosses hosts to be "
            "nbytes/hosts instead of nbytes/local: after the reduce-scatter within a host each "
            "device holds 1/local of the data, and that is what its cross-host ring reduces."
        ),
        cause=("1/local", "nbytes / local", "local", "part each device holds", "reduce-scatter"),
        kind="factor",
        patch=(
            (
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
                "across = 2 * (hosts - 1) / hosts * (nbytes / hosts) / dcn",
            ),
        ),
    ),
    Held(
        id="hb5-l13-train-padding-in-front",
        module=M,
        exercise="multihost_train_step",
        what=(
            "The learner pads the flat gradient at the front, jnp.pad(flat, (pad, 0)), but "
            "strips the padding from the end after the reduction: whenever the gradient's size "
            "does not divide by the local devices, every gradient entry is read pad places "
            "late and the last pad entries are lost."
        ),
        cause=("pad", "front", "end", "shifted", "padding"),
        kind="index",
        patch=(
            (
                'flat = hierarchical_all_reduce(jnp.pad(flat, (0, pad))[:, None], "host", "local")',
                'flat = hierarchical_all_reduce(jnp.pad(flat, (pad, 0))[:, None], "host", "local")',
            ),
        ),
    ),
]
