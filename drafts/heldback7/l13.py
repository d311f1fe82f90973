"""Held-back set 7, lesson 13 (see drafts/heldback7/__init__.py)."""

from __future__ import annotations

from drafts.heldback import Held

M = "l13_multi_host"

HELD: list[Held] = [
    Held(
        id="hb7-l13-loader-no-wrap-at-the-dataset-end",
        module=M,
        exercise="loader_indices",
        what=(
            "The learner computes the start of its part and returns start + k, forgetting the "
            "modulo dataset_size of the single-process loader: once the steps pass the end of "
            "the dataset the indices run past its last row instead of wrapping round to row 0."
        ),
        cause=("dataset_size", "wrap", "modulo", "mod", "past the end"),
        kind="index",
        patch=(
            (
                "    return (start + np.arange(per)) % dataset_size\n",
                "    return start + np.arange(per)\n",
            ),
        ),
    ),
    Held(
        id="hb7-l13-slices-of-one-device-only",
        module=M,
        exercise="host_local_slices",
        what=(
            "The learner returns the block of the first device it finds on the process, "
            "reading 'a process holds its device's block': a process holds the union of all "
            "its devices' blocks, so with D > 1 devices per process the slice is D times too "
            "small (and a strided layout is never refused)."
        ),
        cause=("union", "every device", "all its devices", "one device", "bounding"),
        kind="other",
        code="""
def host_local_slices(
    global_shape: tuple[int, ...], mesh: Mesh, spec: P, process_index: int
) -> tuple[slice, ...]:
    blocks = NamedSharding(mesh, spec).devices_indices_map(tuple(global_shape))
    for device, index in blocks.items():
        if device.process_index == process_index:  # this process's device holds this block
            return tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, global_shape))
    raise ValueError(f"process {process_index} holds no device of this mesh")
""",
    ),
    Held(
        id="hb7-l13-allreduce-host-and-local-swapped",
        module=M,
        exercise="hierarchical_all_reduce",
        what=(
            "The learner swaps the roles of the two axes: it reduce-scatters and all-gathers "
            "over host_axis and all-reduces the part over local_axis. The sum is right, but the "
            "reduce-scatter and all-gather, (P − 1)/P of x each, now cross hosts, and only the "
            "small all-reduce stays inside them."
        ),
        cause=("local_axis", "host_axis", "within the host", "across hosts", "swapped"),
        kind="axis",
        code="""
def hierarchical_all_reduce(x: jax.Array, host_axis: str, local_axis: str) -> jax.Array:
    part = lax.psum_scatter(x, host_axis, scatter_dimension=0, tiled=True)
    part = lax.psum(part, local_axis)
    return lax.all_gather(part, host_axis, axis=0, tiled=True, to="invarying")
""",
    ),
]
