"""Lesson 2 — collectives from first principles.

Each function is the body of a ``jax.shard_map`` over a 1-D mesh axis of N
devices: ``x`` is this device's block, ``axis_name`` names the ring. Use only
``lax.ppermute``, ``lax.axis_index``, ``lax.axis_size`` and local operations:
the grader reads the compiled program and accepts collective-permutes only.

Read the lesson first: ``course show 2``. Grade with ``course grade 2``.
"""

import jax
import jax.numpy as jnp
from jax import lax


def ring_all_gather(x: jax.Array, axis_name: str) -> jax.Array:
    """Every device returns all N blocks, in device order, tiled on dim 0.

    ``x``: this device's block, shape [b, ...]. Returns shape [N·b, ...],
    equal to ``lax.all_gather(x, axis_name, tiled=True)``. N − 1 ring steps,
    each sending one block: (N − 1)/N of the result leaves every device.
    """
    # TODO: put your own block at offset axis_index·b of an [N·b, ...] buffer
    #       (lax.pcast it to 'varying'), then N − 1 times: pass the block you
    #       hold to the next device with lax.ppermute and write what arrives
    #       at the offset of the device it started on.
    raise NotImplementedError("ring_all_gather: TODO")


def ring_reduce_scatter(x: jax.Array, axis_name: str) -> jax.Array:
    """Device i returns the sum over devices of chunk i of ``x``.

    ``x``: shape [N·c, ...]; returns shape [c, ...], equal to
    ``lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True)``.
    A running partial sum travels the ring; N − 1 steps of one chunk each.
    """
    # TODO: pass a running partial sum around the ring N − 1 times, adding
    #       your own copy of the right chunk at each step, so that the sum
    #       that ends on device i is the sum of everyone's chunk i.
    raise NotImplementedError("ring_reduce_scatter: TODO")


def ring_all_reduce(x: jax.Array, axis_name: str) -> jax.Array:
    """Every device returns the sum over devices of ``x``.

    ``x``: shape [N·c, ...]; returns the same shape, equal to
    ``lax.psum(x, axis_name)``. A reduce-scatter then an all-gather:
    2(N − 1) steps and 2(N − 1)/N of ``x`` sent per device, the ring optimum.
    """
    # TODO: compose the two functions above.
    raise NotImplementedError("ring_all_reduce: TODO")
