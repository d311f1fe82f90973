"""Lesson 1 — devices, meshes and sharded arrays (reference solution).

A spec entry is ``None`` (the dim is not split), an axis name (split over
that mesh axis) or a tuple of axis names (split over several, the first one
major). A spec shorter than the array's rank leaves the remaining dims
unsplit. Mesh axes the spec never names hold copies: the data is replicated
along them.
"""

import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def _axes(entry) -> tuple[str, ...]:
    """A spec entry as a tuple of mesh axis names (major first)."""
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    return tuple(entry)


def shard_shape(global_shape, mesh_shape: dict[str, int], spec: tuple) -> tuple[int, ...]:
    """The shape of the block each device holds.

    ``global_shape``: the array's shape; ``mesh_shape``: axis name → size;
    ``spec``: one entry per leading dim (see the module docstring). Raises
    ``ValueError`` when a dim is not divisible by the product of the sizes of
    the mesh axes it is split over.
    """
    if len(spec) > len(global_shape):
        raise ValueError(f"spec {spec} has more entries than the array has dims {global_shape}")
    out = []
    for dim, size in enumerate(global_shape):
        axes = _axes(spec[dim]) if dim < len(spec) else ()
        ways = math.prod(mesh_shape[a] for a in axes)
        if size % ways:
            raise ValueError(
                f"dim {dim} of size {size} cannot be split evenly over mesh axes "
                f"{axes} of total size {ways}"
            )
        out.append(size // ways)
    return tuple(out)


def device_slices(global_shape, mesh_shape, spec) -> dict[tuple[int, ...], tuple[slice, ...]]:
    """Which part of the global array each device holds.

    Keyed by mesh coordinate (one index per mesh axis, in ``mesh_shape``'s
    order); each value has one slice per dim of the array.
    """
    block = shard_shape(global_shape, mesh_shape, spec)
    names = list(mesh_shape)
    out = {}
    for coord in np.ndindex(*mesh_shape.values()):
        where = dict(zip(names, coord))
        slices = []
        for dim, size in enumerate(block):
            axes = _axes(spec[dim]) if dim < len(spec) else ()
            index = 0
            for a in axes:  # row-major over the named axes: the first is major
                index = index * mesh_shape[a] + where[a]
            slices.append(slice(index * size, (index + 1) * size))
        out[tuple(int(c) for c in coord)] = tuple(slices)
    return out


def place(x: np.ndarray, mesh: Mesh, spec: PartitionSpec) -> jax.Array:
    """``x`` laid out on ``mesh`` as ``spec`` says: a global jax.Array."""
    return jax.device_put(x, NamedSharding(mesh, spec))


def bytes_per_device(global_shape, dtype, mesh_shape, spec) -> int:
    """Bytes of the block each device holds; ``dtype`` is a numpy dtype."""
    return math.prod(shard_shape(global_shape, mesh_shape, spec)) * np.dtype(dtype).itemsize
