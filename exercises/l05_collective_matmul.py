"""Lesson 5 — collective matmul: overlap communication with compute.

Instead of gathering a whole operand and then multiplying, pass blocks
around the ring with ``lax.ppermute`` and multiply each block while the next
one is on its way. The grader accepts collective-permutes only, each
carrying at most one block, and checks that no device ever holds the whole
weight (from the compiled program's memory analysis).

Read the lesson first: ``course show 5``. Grade with ``course grade 5``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def allgather_matmul(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[B_X, D] · W[D_X, F] -> Y[B_X, F]`` without an all-gather.

    N steps: each device multiplies the W block it holds by the matching
    columns of its X rows, and (for the first N − 1 steps) passes the block
    on with ``ppermute``. Only one W block is in flight per device at a time.
    """
    # TODO: inside shard_map (in_specs P('x', None) for both, out_specs
    #       P('x', None)): multiply the W block you hold by the matching
    #       columns of your X rows, pass the block on with lax.ppermute, and
    #       repeat — N products, N − 1 sends.
    raise NotImplementedError("allgather_matmul: TODO")


def matmul_reducescatter(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[B, D_X] · W[D_X, F] -> Y[B, F_X]`` without a reduce-scatter.

    Every device holds a slice of the contracting dim, so its products are
    partial sums. A running partial sum of one output block travels the
    ring: at each step a device adds its own product for that block and
    passes it on. The sum that ends on device i is complete for block i.
    """
    # TODO: in_specs (P(None, 'x'), P('x', None)), out_specs P(None, 'x').
    #       Pass a running partial sum of one output block around the ring,
    #       adding your own product for that block at every step, as
    #       ring_reduce_scatter of lesson 2 did with chunks.
    raise NotImplementedError("matmul_reducescatter: TODO")


def allgather_matmul_bidirectional(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """As :func:`allgather_matmul`, with W blocks travelling both ways round the ring.

    At step s a device receives block i + s from its right neighbour and
    block i − s from its left one, so all N blocks have visited after
    ⌊N/2⌋ steps instead of N − 1. The bytes are the same (N − 1 blocks per
    device); the number of sequential steps halves.
    """
    # TODO: keep two copies of your W block, one travelling left and one
    #       right; at step s multiply both arrivals (only one when 2·s = N).
    raise NotImplementedError("allgather_matmul_bidirectional: TODO")
