"""Lesson 4 — the four cases of a sharded matmul.

Every function takes global arrays already placed on ``mesh`` with the
sharding in its docstring and returns the global C with the sharding named
there. Notation: ``A[I_X, J]`` means dim I of A is split over mesh axis
``'x'``; ``{U_X}`` means partial sums still to be added over ``'x'``.

Write each body under ``jax.shard_map``, so the collectives are the ones you
write and no others: the grader reads the compiled program and holds their
kinds and bytes against the optimum for each case, and shows what XLA's own
partitioner moves for the same layouts.

Read the lesson first: ``course show 4``. Grade with ``course grade 4``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def matmul_local(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """``A[I_X, J] · B[J, K] -> C[I_X, K]``: no communication at all.

    Each device holds whole rows of A and all of B, so its rows of C need
    nothing from anyone.
    """
    # TODO: jax.shard_map a body that multiplies its blocks, with
    #       in_specs=(P('x', None), P()) and out_specs=P('x', None).
    raise NotImplementedError("matmul_local: TODO")


def matmul_allgather(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """``A[I, J_X] · B[J, K] -> C[I, K]`` (replicated): all-gather A, then multiply.

    The contracting dim of A is split but B is whole: gather A's columns
    (one all-gather of A, never of B) and every device computes all of C.
    """
    # TODO: inside shard_map, lax.all_gather A's block along its columns
    #       (axis=1, tiled=True, to='invarying' since the result is the same
    #       everywhere) and multiply by B; out_specs=P().
    raise NotImplementedError("matmul_allgather: TODO")


def matmul_allreduce(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """``A[I, J_X] · B[J_X, K] -> C[I, K]`` (replicated): one all-reduce.

    Both operands are split along J, so each device can multiply its own
    blocks into a partial C ``{U_X}``; one ``psum`` adds the partials.
    """
    # TODO: multiply the local blocks into a partial C, then add the
    #       partials of all devices with one collective.
    raise NotImplementedError("matmul_allreduce: TODO")


def matmul_reducescatter(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """``A[I, J_X] · B[J_X, K] -> C[I, K_X]``: one reduce-scatter.

    As in :func:`matmul_allreduce`, but each device keeps only its own
    columns of the sum: ``psum_scatter`` moves half the bytes of a ``psum``.
    """
    # TODO: as matmul_allreduce, but sum and scatter C's columns in one
    #       collective, so each device keeps its own K block.
    raise NotImplementedError("matmul_reducescatter: TODO")


def matmul_conflict(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """``A[I_X, J] · B[J, K_X] -> C[I_X, K]``: gather B, then multiply.

    A and B are split along different non-contracting dims over the same
    axis, and C keeps A's split: gather B's columns (never A) and multiply
    the local rows of A by all of B.
    """
    # TODO: gather B's columns on every device, then multiply the local
    #       rows of A; C stays split over 'x' by rows.
    raise NotImplementedError("matmul_conflict: TODO")


def matmul_2d(a: jax.Array, b: jax.Array, mesh: Mesh) -> jax.Array:
    """Mesh ``('x', 'y')``: ``A[I_X, J_Y] · B[J_Y, K] -> C[I_X, K]``.

    Rows of A are split over ``'x'`` and need no communication; the
    contracting dim is split over ``'y'``, so the partial products are
    summed over ``'y'`` only — one all-reduce within each row of the mesh.
    """
    # TODO: in_specs (P('x', 'y'), P('y', None)); which mesh axis holds the
    #       pieces of the contracting dim? Sum over that one only.
    raise NotImplementedError("matmul_2d: TODO")
