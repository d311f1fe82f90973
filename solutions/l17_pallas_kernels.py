"""Lesson 17 — Kernels in Pallas: DMAs, semaphores and the grid (reference solution).

One level below the collectives of lessons 2 and 5: a kernel says itself what moves
between HBM and VMEM (BlockSpecs and a grid, or DMAs it starts and waits for), and a
collective is nothing but DMAs into another chip's memory, with DMA semaphores that
say when a block has left and when one has arrived.

Every ``pl.pallas_call`` here is written for a TPU. Without one (this machine, the
grader) the same code runs in TPU interpret mode, which simulates each device's HBM,
VMEM, DMA engines and semaphores on CPU: ``with pltpu.force_tpu_interpret_mode():``
around the call (the grader turns it on itself, with its race detector).
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

# ------------------------------------------------------------------ tiled matmul


def tiled_matmul(a: jax.Array, b: jax.Array, bm: int, bk: int, bn: int) -> jax.Array:
    """``A[M, K] · B[K, N] -> C[M, N]`` as a Pallas kernel over a grid of tiles.

    The grid is ``(M / bm, N / bn, K / bk)``: the program at ``(i, j, k)`` gets
    the tiles ``A[i, k]`` ``[bm, bk]`` and ``B[k, j]`` ``[bk, bn]`` in VMEM (its
    BlockSpecs say which), adds their product into a float32 accumulator that
    stays in VMEM across the k steps, and writes ``C[i, j]`` on the last one.
    A ValueError names a dim that its tile does not divide.
    """
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dims differ: A is {a.shape}, B is {b.shape}")
    for dim, size, tile in (("M", m, bm), ("K", k, bk), ("N", n, bn)):
        if size % tile:
            raise ValueError(f"{dim} = {size} is not a multiple of its tile {tile}")

    def kernel(a_ref, b_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():  # a new output tile: its sum starts from zero
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():  # the sum is complete only after the last k step
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")
        ),
    )(a, b)


# ------------------------------------------------------------------ the ring


def _neighbours(n: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    me = lax.axis_index("x")
    return me, lax.rem(me + 1, n), lax.rem(me + n - 1, n)


def _barrier(left: jax.Array, right: jax.Array) -> None:
    """Both neighbours have entered the kernel (their buffers exist) before the
    first remote write: signal each one's barrier semaphore, wait for both signals."""
    barrier = pltpu.get_barrier_semaphore()
    for peer in (left, right):
        pl.semaphore_signal(barrier, 1, device_id=(peer,))
    pl.semaphore_wait(barrier, 2)


def ring_all_gather(x: jax.Array, mesh: Mesh) -> jax.Array:
    """``X[N·b, d]`` split by rows over the mesh axis ``'x'`` -> every device holds
    all of X, ``[N·b, d]``, in device order.

    A kernel on HBM refs: each device copies its own block into its slot of the
    output, then N − 1 steps each send one block to the right neighbour with a
    remote DMA (the block that arrived the step before) and wait for the one
    from the left. One receive semaphore per step; a barrier first.
    """
    n = mesh.shape["x"]

    def kernel(x_ref, o_ref, copy_sem, send_sem, recv_sems):
        me, right, left = _neighbours(n)
        own = pltpu.make_async_copy(x_ref, o_ref.at[me], copy_sem)
        own.start()
        own.wait()
        _barrier(left, right)

        @pl.loop(0, n - 1)
        def _(s):
            slot = lax.rem(me + n - s, n)  # the block that started on device me − s
            send = pltpu.make_async_remote_copy(
                o_ref.at[slot], o_ref.at[slot], send_sem, recv_sems.at[s], device_id=(right,)
            )
            send.start()
            send.wait_send()  # our block has left: the buffer may be read again
            send.wait_recv()  # block me − s − 1 has arrived from the left

    def body(block):  # block: [b, d], this device's rows
        out = pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((n, *block.shape), block.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((max(n - 1, 1),)),
            ],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(block)
        return out.reshape(n * block.shape[0], block.shape[1])  # [N, b, d] -> [N·b, d]

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


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
    n = mesh.shape["x"]

    def kernel(x_ref, o_ref, acc, mine, recv, copy_sem, send_sem, recv_sems):
        me, right, left = _neighbours(n)

        def load(block):  # this device's block `block` of X, HBM -> VMEM
            pltpu.sync_copy(x_ref.at[block], mine)
            return mine[...].astype(jnp.float32)

        acc[...] = load(lax.rem(me + n - 1, n))
        _barrier(left, right)

        @pl.loop(0, n - 1)
        def _(s):
            send = pltpu.make_async_remote_copy(
                acc, recv.at[s], send_sem, recv_sems.at[s], device_id=(right,)
            )
            send.start()
            own = load(lax.rem(me + 2 * n - s - 2, n))  # read while the sum travels
            send.wait_send()  # acc has left: it may be overwritten
            send.wait_recv()  # the sum from the left is in recv[s]
            acc[...] = recv[s] + own

        mine[...] = acc[...].astype(mine.dtype)
        out = pltpu.make_async_copy(mine, o_ref, copy_sem)
        out.start()
        out.wait()

    def body(rows):  # rows: [N·b, d], this device's X_i
        b, d = rows.shape[0] // n, rows.shape[1]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((b, d), rows.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[
                pltpu.VMEM((b, d), jnp.float32),  # acc: the running sum, sent
                pltpu.VMEM((b, d), rows.dtype),  # mine: one block of X_i
                pltpu.VMEM((max(n - 1, 1), b, d), jnp.float32),  # one receive slot a step
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((max(n - 1, 1),)),
            ],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(rows.reshape(n, b, d))

    return jax.shard_map(
        body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None), check_vma=False
    )(x)


# ------------------------------------------------------------------ bonus


def all_gather_matmul(x: jax.Array, w: jax.Array, mesh: Mesh) -> jax.Array:
    """Bonus: lesson 5's ``X[B_X, D] · W[D_X, F] -> Y[B_X, F]`` as one kernel.

    The W blocks travel right round the ring as remote DMAs into a double buffer of
    two VMEM slots: at step s the block held (block i − s, in slot s mod 2) is sent on
    and, while it travels, multiplied by the matching columns of X; the DMA is waited
    for after the matmul. Before writing into its right neighbour's other slot, a
    device waits for that neighbour to say the slot is free (a REGULAR semaphore the
    neighbour signals once it has multiplied and sent on what was there).
    """
    n = mesh.shape["x"]

    def kernel(x_ref, w_ref, o_ref, buf, acc, copy_sem, send_sem, recv_sems, free):
        me, right, left = _neighbours(n)
        d = buf.shape[1]
        first = pltpu.make_async_copy(w_ref, buf.at[0], copy_sem)
        first.start()
        acc[...] = jnp.zeros_like(acc)
        first.wait()
        _barrier(left, right)

        def multiply(s, slot):  # W block (me − s) mod N times X's columns for it
            cols = x_ref[:, pl.ds(lax.rem(me + 2 * n - s, n) * d, d)]
            acc[...] += jnp.dot(cols, buf[slot], preferred_element_type=jnp.float32)

        @pl.loop(0, n - 1)
        def _(s):
            held = lax.rem(s, 2)

            @pl.when(s > 0)
            def _():  # the right neighbour has used its slot 1 − held: we may write it
                pl.semaphore_wait(free, 1)

            send = pltpu.make_async_remote_copy(
                buf.at[held], buf.at[1 - held], send_sem, recv_sems.at[s], device_id=(right,)
            )
            send.start()  # the next block moves …
            multiply(s, held)  # … while this one is multiplied
            send.wait_send()
            send.wait_recv()

            @pl.when(s < n - 2)
            def _():  # our slot `held` is free for the left neighbour's next block
                pl.semaphore_signal(free, 1, device_id=(left,))

        multiply(n - 1, lax.rem(n - 1, 2))
        o_ref[...] = acc[...].astype(o_ref.dtype)

    def body(x_blk, w_blk):  # x_blk: [b, D]; w_blk: [d, F]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((x_blk.shape[0], w_blk.shape[1]), x_blk.dtype),
            in_specs=[
                pl.BlockSpec(memory_space=pltpu.VMEM),
                pl.BlockSpec(memory_space=pl.ANY),
            ],
            out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
            scratch_shapes=[
                pltpu.VMEM((2, *w_blk.shape), w_blk.dtype),  # the double buffer
                pltpu.VMEM((x_blk.shape[0], w_blk.shape[1]), jnp.float32),
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((max(n - 1, 1),)),
                pltpu.SemaphoreType.REGULAR,
            ],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(x_blk, w_blk)

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P("x", None), P("x", None)),
        out_specs=P("x", None),
        check_vma=False,
    )(x, w)
