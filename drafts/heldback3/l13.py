"""Held-back set 3, lesson 13 (see drafts/heldback3/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb3-l13-loader-steps-by-the-local-batch",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner advances the start by step · B/P, the rows one process loads, "
            "instead of step · B: consecutive steps' batches overlap and the data is not the "
            "single-process loader's."
        ),
        cause=("s·b", "global batch", "step ·", "overlap", "whole batch per step"),
        kind="formula",
        patch=(
            (
                "start = step * global_batch + process_index * per",
                "start = step * per + process_index * per",
            ),
        ),
    ),
    Held(
        id="hb3-l13-slices-no-hole-check",
        module=M,
        exercise="host_local_slices",
        what=(
            "The learner returns the bounding box of the process's blocks without checking "
            "that they fill it, so a strided layout (rows over ('local', 'host')) yields a "
            "slice instead of the ValueError."
        ),
        cause=("valueerror", "not one block", "holes", "rectangular", "strided"),
        kind="other",
        patch=(
            (
                "    if held != box:  # the blocks leave holes in their bounding box: not one block\n"
                "        raise ValueError(\n"
                '            f"process {process_index}\'s blocks under {spec} are not one block of {tuple(global_shape)}"\n'
                "        )\n",
                "",
            ),
        ),
    ),
    Held(
        id="hb3-l13-time-whole-array-crosses-hosts",
        module=M,
        exercise="allreduce_time",
        what=(
            "In the hierarchical time the learner all-reduces the whole nbytes across hosts, "
            "not the 1/local part each device holds after the in-host reduce-scatter."
        ),
        cause=("nbytes/local", "1/d", "1/local", "reduce-scatter first", "part"),
        kind="factor",
        patch=(
            (
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
                "across = 2 * (hosts - 1) / hosts * nbytes / dcn",
            ),
        ),
    ),
    Held(
        id="hb3-l13-train-step-mean-over-local-devices",
        module=M,
        exercise="multihost_train_step",
        what=(
            "After the hierarchical all-reduce the learner divides by the devices of one "
            "host instead of all hosts · local devices: the step is P times too large."
        ),
        cause=("n_devices", "every device", "hosts ·", "mesh.size", "all devices"),
        kind="factor",
        patch=(
            (
                "flat = flat[: flat.shape[0] - pad, 0] / n_devices  # sum of local means → global mean",
                "flat = flat[: flat.shape[0] - pad, 0] / local  # mean over the host's devices",
            ),
        ),
    ),
]
