"""Held-back wrong programs for lesson 13 (see drafts/heldback/__init__.py).

Only the plain-Python exercises (``loader_indices``, ``allreduce_time``): the cluster
ones are slow to grade.
"""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb-l13-loader-strided-like-distributed-sampler",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner split the step's batch the way PyTorch's DistributedSampler does, "
            "process i taking rows i, i+P, i+2P, …, instead of the i-th contiguous block, so "
            "the parts in process order are not the single-process batch."
        ),
        cause=("contiguous", "strided", "interleaved", "every p-th"),
        kind="index",
        patch=(
            (
                "start = step * global_batch + process_index * per  # this process's part of "
                "the step's batch\n"
                "    return (start + np.arange(per)) % dataset_size",
                "start = step * global_batch + process_index  # every P-th row from mine on\n"
                "    return (start + process_count * np.arange(per)) % dataset_size",
            ),
        ),
    ),
    Held(
        id="hb-l13-loader-uneven-batch-not-refused",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner only refused a batch smaller than the process count, so when P does "
            "not divide B each process silently loads ⌊B/P⌋ rows and some rows are dropped "
            "instead of raising ValueError."
        ),
        cause=("valueerror", "divide", "divisible", "does not split"),
        kind="other",
        patch=(
            (
                "if global_batch % process_count:",
                "if global_batch < process_count:  # at least one row for every process",
            ),
        ),
    ),
    Held(
        id="hb-l13-time-hierarchical-phases-overlapped",
        module=M,
        exercise="allreduce_time",
        what=(
            "The learner took the hierarchical all-reduce's time as the larger of its in-host "
            "and cross-host parts, as if they overlapped, though the all-reduce across hosts "
            "waits for the reduce-scatter and the all-gather waits for it: the times add."
        ),
        cause=("one after another", "sequential", "sum of", "add"),
        kind="formula",
        patch=(
            (
                "return within + across",
                "return max(within, across)  # the fast and the slow links work at once",
            ),
        ),
    ),
    Held(
        id="hb-l13-time-cross-host-ring-over-every-device",
        module=M,
        exercise="allreduce_time",
        what=(
            "The learner gave the cross-host all-reduce of the 1/local part the ring factor "
            "of all N = hosts·local devices, 2(N−1)/N, though each of its groups holds one "
            "device per host: 2(hosts−1)/hosts."
        ),
        cause=("hosts − 1", "(hosts−1)/hosts", "one device per host", "2(p−1)/p"),
        kind="formula",
        patch=(
            (
                "across = 2 * (hosts - 1) / hosts * (nbytes / local) / dcn",
                "across = 2 * (n - 1) / n * (nbytes / local) / dcn",
            ),
        ),
    ),
]
