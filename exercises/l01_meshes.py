"""Lesson 1 — devices, meshes and sharded arrays.

A spec entry is ``None`` (the dim is not split), an axis name (split over
that mesh axis) or a tuple of axis names (split over several, the first one
major). A spec shorter than the array's rank leaves the remaining dims
unsplit. Mesh axes the spec never names hold copies: the data is replicated
along them.

Read the lesson first: ``course show 1``. Grade with ``course grade 1``.
"""

import math

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def shard_shape(global_shape, mesh_shape: dict[str, int], spec: tuple) -> tuple[int, ...]:
    """The shape of the block each device holds.

    ``global_shape``: the array's shape; ``mesh_shape``: axis name → size;
    ``spec``: one entry per leading dim (see the module docstring). Raises
    ``ValueError`` when a dim is not divisible by the product of the sizes of
    the mesh axes it is split over.
    """
    # TODO: for each dim, divide its size by the product of the sizes of the
    #       mesh axes its spec entry names; raise ValueError if it won't go.
    raise NotImplementedError("shard_shape: TODO")


def device_slices(global_shape, mesh_shape, spec) -> dict[tuple[int, ...], tuple[slice, ...]]:
    """Which part of the global array each device holds.

    Keyed by mesh coordinate (one index per mesh axis, in ``mesh_shape``'s
    order); each value has one slice per dim of the array.
    """
    # TODO: for every mesh coordinate (np.ndindex helps), work out the block
    #       index along each dim from the coordinates of the axes that split
    #       it (the first named axis is major), and turn it into a slice.
    raise NotImplementedError("device_slices: TODO")


def place(x: np.ndarray, mesh: Mesh, spec: PartitionSpec) -> jax.Array:
    """``x`` laid out on ``mesh`` as ``spec`` says: a global jax.Array."""
    # TODO: one line with jax.device_put and a NamedSharding.
    raise NotImplementedError("place: TODO")


def bytes_per_device(global_shape, dtype, mesh_shape, spec) -> int:
    """Bytes of the block each device holds; ``dtype`` is a numpy dtype."""
    # TODO: the number of elements of one shard times the dtype's itemsize.
    raise NotImplementedError("bytes_per_device: TODO")
