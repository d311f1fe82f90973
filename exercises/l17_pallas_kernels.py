"""Lesson 17 — Kernels in Pallas: DMAs, semaphores and the grid.

One level below the collectives: write a matmul as a Pallas kernel over a grid of
tiles, then an all-gather and a reduce-scatter as kernels that move blocks between
devices with remote DMAs and DMA semaphores themselves.

Every ``pl.pallas_call`` here is written for a TPU. Without one, run it in TPU
interpret mode, which simulates each device's HBM, VMEM, DMAs and semaphores on CPU:
``with pltpu.force_tpu_interpret_mode(): ...`` around the call (the grader turns it
on itself, with its race detector).

Read the lesson first: ``course show 17``. Grade with ``course grade 17``.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def tiled_matmul(a: jax.Array, b: jax.Array, bm: int, bk: int, bn: int) -> jax.Array:
    """``A[M, K] · B[K, N] -> C[M, N]`` as a Pallas kernel over a grid of tiles.

    The grid is ``(M / bm, N / bn, K / bk)``: the program at ``(i, j, k)`` gets
    the tiles ``A[i, k]`` ``[bm, bk]`` and ``B[k, j]`` ``[bk, bn]`` in VMEM (its
    BlockSpecs say which), adds their product into a float32 accumulator that
    stays in VMEM across the k steps, and writes ``C[i, j]`` on the last one.
    A ValueError names a dim that its tile does not divide.
    """
    # TODO: check that each tile divides its dim (ValueError otherwise); a kernel
    #       that zeroes a float32 VMEM scratch on the first k step (pl.program_id(2)),
    #       adds a_ref[...] @ b_ref[...] into it, and stores it, cast, on the last;
    #       pl.pallas_call with grid=(M // bm, N // bn, K // bk) and a BlockSpec per
    #       operand whose index map picks the tile each program needs.
    raise NotImplementedError("tiled_matmul: TODO")


def ring_all_gather(x: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[N·b, d]`` split by rows over the mesh axis ``'x'`` -> every device holds
    all of X, ``[N·b, d]``, in device order.

    A kernel on HBM refs: each device copies its own block into its slot of the
    output, then N − 1 steps each send one block to the right neighbour with a
    remote DMA (the block that arrived the step before) and wait for the one
    from the left. One receive semaphore per step; a barrier first.
    """
    # TODO: inside jax.shard_map(..., in_specs=P('x', None), out_specs=P(),
    #       check_vma=False), a pl.pallas_call whose input and output stay in HBM
    #       (pl.BlockSpec(memory_space=pl.ANY)), output [N, b, d], with DMA semaphores
    #       as scratch and pltpu.CompilerParams(collective_id=0). In the kernel: copy
    #       your block into o_ref.at[me]; a barrier with both neighbours; then N − 1
    #       pltpu.make_async_remote_copy(...) to device (me + 1) mod N, each waited for.
    raise NotImplementedError("ring_all_gather: TODO")


def ring_reduce_scatter(x: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[N·N·b, d]`` split by rows over ``'x'`` (device i holds its own
    ``X_i[N·b, d]``) -> ``Y[N·b, d]`` split by rows: device i ends with block i
    of ``Σ_j X_j``, ``[b, d]``.

    A running sum of one block travels right: it starts as block i − 1 of the
    device's own X_i; at each of the N − 1 steps it is sent to the right
    neighbour (a remote DMA into that device's receive slot for the step), and
    the sum received from the left gets this device's own block (i − s − 2) mod
    N added. The sum is kept in float32 (bfloat16 inputs too).
    """
    # TODO: as ring_all_gather, with out_specs=P('x', None) and VMEM scratch: a
    #       float32 running sum, one block of X_i, and N − 1 float32 receive slots.
    #       Load blocks from HBM with pltpu.sync_copy; send the sum with
    #       make_async_remote_copy into recv.at[s] of the right neighbour.
    raise NotImplementedError("ring_reduce_scatter: TODO")


def all_gather_matmul(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """Bonus: lesson 5's ``X[B_X, D] · W[D_X, F] -> Y[B_X, F]`` as one kernel.

    The W blocks travel right round the ring as remote DMAs into a double buffer of
    two VMEM slots: at step s the block held (block i − s, in slot s mod 2) is sent on
    and, while it travels, multiplied by the matching columns of X; the DMA is waited
    for after the matmul. Before writing into its right neighbour's other slot, a
    device waits for that neighbour to say the slot is free (a REGULAR semaphore the
    neighbour signals once it has multiplied and sent on what was there).
    """
    # TODO: shard_map with in_specs (P('x', None), P('x', None)), out_specs
    #       P('x', None), check_vma=False; a pallas_call with X in VMEM, W in HBM
    #       (pl.ANY), a [2, d, F] VMEM buffer, a float32 accumulator, DMA semaphores and
    #       a pltpu.SemaphoreType.REGULAR one. Each step: start the DMA of the block you
    #       hold, multiply it, then wait; the last block is multiplied after the loop.
    raise NotImplementedError("all_gather_matmul: TODO")
