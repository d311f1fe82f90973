"""Lesson 2 — collectives from first principles (reference solution).

Each function is the body of a ``jax.shard_map`` over a 1-D mesh axis of N
devices: ``x`` is this device's block, ``axis_name`` names the ring. Only
``lax.ppermute``, ``lax.axis_index``, ``lax.axis_size`` and local operations
are used, so the compiled program holds collective-permutes and nothing else.

The ring sends to the right: device i → device (i + 1) mod N. At step s
(s = 0, 1, …) device i therefore receives what device (i − s − 1) mod N
started with.
"""

import jax
import jax.numpy as jnp
from jax import lax


def _ring_right(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def ring_all_gather(x: jax.Array, axis_name: str) -> jax.Array:
    """Every device returns all N blocks, in device order, tiled on dim 0.

    ``x``: this device's block, shape [b, ...]. Returns shape [N·b, ...],
    equal to ``lax.all_gather(x, axis_name, tiled=True)``. N − 1 ring steps,
    each sending one block: (N − 1)/N of the result leaves every device.
    """
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    b = x.shape[0]
    out = jnp.zeros((n * b, *x.shape[1:]), x.dtype)
    out = lax.pcast(out, axis_name, to="varying")  # the buffer differs per device
    out = lax.dynamic_update_slice_in_dim(out, x, me * b, axis=0)

    def step(s, carry):
        out, block = carry
        block = lax.ppermute(block, axis_name, _ring_right(n))
        owner = (me - s - 1) % n  # the device this block started on
        return lax.dynamic_update_slice_in_dim(out, block, owner * b, axis=0), block

    out, _ = lax.fori_loop(0, n - 1, step, (out, x))
    return out


def ring_reduce_scatter(x: jax.Array, axis_name: str) -> jax.Array:
    """Device i returns the sum over devices of chunk i of ``x``.

    ``x``: shape [N·c, ...]; returns shape [c, ...], equal to
    ``lax.psum_scatter(x, axis_name, scatter_dimension=0, tiled=True)``.
    A running partial sum travels the ring; N − 1 steps of one chunk each.
    """
    n = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    c = x.shape[0] // n

    def chunk(k):
        return lax.dynamic_slice_in_dim(x, k * c, c, axis=0)

    # The partial sum that ends on device i must visit every device and add
    # chunk i there. Run the schedule backwards from its end: at the last
    # step (s = N − 2) device i adds chunk i, so at step s it adds chunk
    # (i − s − 2) mod N, and it starts with its own chunk (i − 1) mod N.
    acc = chunk((me - 1) % n)

    def step(s, acc):
        acc = lax.ppermute(acc, axis_name, _ring_right(n))
        return acc + chunk((me - s - 2) % n)

    return lax.fori_loop(0, n - 1, step, acc)


def ring_all_reduce(x: jax.Array, axis_name: str) -> jax.Array:
    """Every device returns the sum over devices of ``x``.

    ``x``: shape [N·c, ...]; returns the same shape, equal to
    ``lax.psum(x, axis_name)``. A reduce-scatter then an all-gather:
    2(N − 1) steps and 2(N − 1)/N of ``x`` sent per device, the ring optimum.
    """
    return ring_all_gather(ring_reduce_scatter(x, axis_name), axis_name)
