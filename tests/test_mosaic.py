"""The Mosaic reader (grader.measure.mosaic) on Pallas TPU kernels exported from this
CPU-only process, as the grading worker receives them.

The kernels below are this file's own small versions of lesson 17's: a tiled matmul
over a grid, a ring all-gather and a ring reduce-scatter made of remote DMAs with a
send semaphore, one receive semaphore per step and a barrier first, and an
all-gather matmul that keeps the next block's DMA in flight while it multiplies.
Each takes the mistakes a student makes as keyword arguments (one receive semaphore
for every step, a receive never waited for, the left neighbour, N steps, no barrier,
a bfloat16 accumulator, waiting before multiplying), and every test holds the
reader to telling the mistake apart from the right kernel, from the exported
program alone (serialised and read back, as it crosses between processes).
"""

from __future__ import annotations

import base64

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.measure import mosaic
from grader.measure.stablehlo import Unrecognised

pytestmark = pytest.mark.skipif(
    mosaic.dialect_missing() is not None, reason=f"jaxlib: {mosaic.dialect_missing()}"
)

F32, BF16 = jnp.float32, jnp.bfloat16


def mesh_of(n: int) -> jax.sharding.Mesh:
    return jax.make_mesh((n,), ("x",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:n])


def rows(mesh, shape, dtype=F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, P("x", None)))


@pytest.fixture(autouse=True)
def _lowered_for_the_chip():
    """Lesson 17's spec, once imported in this process, runs every kernel in TPU interpret
    mode (a global setting; ``pl.pallas_call`` reads it when it is made): these kernels are
    made and lowered for a TPU."""
    with pltpu.force_tpu_interpret_mode(None):
        yield


def exported(f, *args):
    """``f`` exported for a TPU, serialised and read back (what the worker is handed)."""
    exp = jax.export.export(jax.jit(f), platforms=["tpu"])(*args)
    return jax.export.deserialize(exp.serialize())


def one(exp) -> mosaic.Kernel:
    (kernel,) = mosaic.kernels(exp)
    return kernel


# ------------------------------------------------------------------ the kernels


def tiled_matmul(a, b, tile=128, accumulate=F32, zero_first=True, write_last=True):
    """C = A·B over a grid (M/t, N/t, K/t); the sum of a C tile kept in a VMEM
    scratch of dtype ``accumulate`` across the k steps, zeroed on the first
    (``zero_first``), written out on the last (``write_last``; else on every one)."""
    (m, k), (_, n) = a.shape, b.shape

    def kernel(a_tile, b_tile, c_tile, acc):
        if zero_first:

            @pl.when(pl.program_id(2) == 0)
            def _():
                acc[...] = jnp.zeros(acc.shape, acc.dtype)

        # with accumulate=bfloat16, the mistake: the running sum kept in the inputs' dtype
        acc[...] += jnp.dot(a_tile[...], b_tile[...], preferred_element_type=F32).astype(acc.dtype)

        if write_last:

            @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
            def _():
                c_tile[...] = acc[...].astype(c_tile.dtype)

        else:  # the mistake: a partial sum written out on every k step
            c_tile[...] = acc[...].astype(c_tile.dtype)

    return pl.pallas_call(
        kernel,
        grid=(m // tile, n // tile, k // tile),
        in_specs=[
            pl.BlockSpec((tile, tile), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((tile, tile), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((tile, tile), lambda i, j, kk: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_shapes=[pltpu.VMEM((tile, tile), accumulate)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")
        ),
    )(a, b)


def _ring(n):
    me = lax.axis_index("x")
    return me, lax.rem(me + 1, n), lax.rem(me + n - 1, n)


def _handshake(left, right):
    """Tell both neighbours this device is in the kernel; wait until both said so."""
    sem = pltpu.get_barrier_semaphore()
    pl.semaphore_signal(sem, 1, device_id=(left,))
    pl.semaphore_signal(sem, 1, device_id=(right,))
    pl.semaphore_wait(sem, 2)


def ring_all_gather(
    x, mesh, *, shared_receive=False, wait_receive=True, to_left=False, steps=None,
    barrier=True, collective_id=0,
):  # fmt: skip
    """Every device ends with all N blocks: its own copied into place, then N − 1
    hops, each forwarding the newest block to the neighbour with a remote DMA."""
    n = mesh.shape["x"]
    hops = n - 1 if steps is None else steps

    def kernel(x_hbm, out_hbm, local_sem, send_sem, recv_sems):
        me, right, left = _ring(n)
        mine = pltpu.make_async_copy(x_hbm, out_hbm.at[me], local_sem)
        mine.start()
        mine.wait()
        if barrier:
            _handshake(left, right)

        @pl.loop(0, hops)
        def _(step):
            # sending right, the newest block here started on device me − step
            block = lax.rem(me + step, n) if to_left else lax.rem(me + n - step, n)
            hop = pltpu.make_async_remote_copy(
                out_hbm.at[block], out_hbm.at[block], send_sem,
                recv_sems.at[0] if shared_receive else recv_sems.at[step],
                device_id=(left if to_left else right,),
            )  # fmt: skip
            hop.start()
            hop.wait_send()
            if wait_receive:
                hop.wait_recv()

    def body(block):
        out = pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((n, *block.shape), block.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((max(hops, 1),)),
            ],
            compiler_params=pltpu.CompilerParams(collective_id=collective_id),
        )(block)
        return out.reshape(n * block.shape[0], block.shape[1])

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


def ring_reduce_scatter(x, mesh, *, carry=F32):
    """Device i ends with block i of the sum over devices. A running sum (dtype
    ``carry``) travels right: N − 1 remote DMAs into the neighbour's inbox slot for
    the step, each receiver adding its own block of the sum's index."""
    n = mesh.shape["x"]

    def kernel(x_hbm, out_hbm, acc, staged, inbox, local_sem, send_sem, recv_sems):
        me, right, left = _ring(n)

        def fetch(k):  # block k of this device's rows, HBM -> VMEM, as float32
            c = pltpu.make_async_copy(x_hbm.at[k], staged, local_sem)
            c.start()
            c.wait()
            return staged[...].astype(F32)

        acc[...] = fetch(lax.rem(me + n - 1, n)).astype(acc.dtype)
        _handshake(left, right)

        @pl.loop(0, n - 1)
        def _(step):
            hop = pltpu.make_async_remote_copy(
                acc, inbox.at[step], send_sem, recv_sems.at[step], device_id=(right,)
            )
            hop.start()
            own = fetch(lax.rem(me + 2 * n - step - 2, n))
            hop.wait_send()
            hop.wait_recv()
            acc[...] = (inbox[step].astype(F32) + own).astype(acc.dtype)

        staged[...] = acc[...].astype(staged.dtype)
        out = pltpu.make_async_copy(staged, out_hbm, local_sem)
        out.start()
        out.wait()

    def body(mine):  # [N·b, d]: this device's rows
        b, d = mine.shape[0] // n, mine.shape[1]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((b, d), mine.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[
                pltpu.VMEM((b, d), carry),
                pltpu.VMEM((b, d), mine.dtype),
                pltpu.VMEM((n - 1, b, d), carry),
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((n - 1,)),
            ],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(mine.reshape(n, b, d))

    return jax.shard_map(
        body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None), check_vma=False
    )(x)


def all_gather_matmul(x, w, mesh, *, overlap=True):
    """Y = X·W with W's row blocks passed round the ring into two VMEM slots: the
    block for the next step travels while this one is multiplied (``overlap``), or,
    the mistake, the DMA is waited for before the multiply."""
    n = mesh.shape["x"]

    def kernel(x_vmem, w_hbm, y_vmem, slots, acc, local_sem, send_sem, recv_sems, free):
        me, right, left = _ring(n)
        rows_w = slots.shape[1]
        first = pltpu.make_async_copy(w_hbm, slots.at[0], local_sem)
        first.start()
        acc[...] = jnp.zeros(acc.shape, F32)
        first.wait()
        _handshake(left, right)

        def multiply(step, slot):  # W block (me − step) mod N against its columns of X
            cols = x_vmem[:, pl.ds(lax.rem(me + 2 * n - step, n) * rows_w, rows_w)]
            acc[...] += jnp.dot(cols, slots[slot], preferred_element_type=F32)

        @pl.loop(0, n - 1)
        def _(step):
            slot = lax.rem(step, 2)

            @pl.when(step > 0)
            def _():
                pl.semaphore_wait(free, 1)  # the right neighbour's other slot is free

            hop = pltpu.make_async_remote_copy(
                slots.at[slot], slots.at[1 - slot], send_sem, recv_sems.at[step],
                device_id=(right,),
            )  # fmt: skip
            hop.start()
            if overlap:
                multiply(step, slot)
            hop.wait_send()
            hop.wait_recv()
            if not overlap:
                multiply(step, slot)

            @pl.when(step < n - 2)
            def _():
                pl.semaphore_signal(free, 1, device_id=(left,))

        multiply(n - 1, lax.rem(n - 1, 2))
        y_vmem[...] = acc[...].astype(y_vmem.dtype)

    def body(xb, wb):
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((xb.shape[0], wb.shape[1]), xb.dtype),
            in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM), pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
            scratch_shapes=[
                pltpu.VMEM((2, *wb.shape), wb.dtype),
                pltpu.VMEM((xb.shape[0], wb.shape[1]), F32),
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA,
                pltpu.SemaphoreType.DMA((n - 1,)),
                pltpu.SemaphoreType.REGULAR,
            ],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(xb, wb)

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P("x", None), P("x", None)), out_specs=P("x", None),
        check_vma=False,
    )(x, w)  # fmt: skip


B, D = 8, 128
"""A block: 8 rows of 128 float32 (4 KiB), the smallest a TPU's tiles take whole."""


def gather(n: int, **mistake) -> mosaic.Kernel:
    mesh = mesh_of(n)
    return one(exported(lambda x: ring_all_gather(x, mesh, **mistake), rows(mesh, (n * B, D))))


def hops(k: mosaic.Kernel) -> list[mosaic.DmaStart]:
    return [s for s in k.starts if s.remote]


def after(k: mosaic.Kernel, start: mosaic.DmaStart) -> list[mosaic.DmaWait]:
    """The waits after ``start`` in the same loop body."""
    return [w for w in k.waits if w.loops == start.loops and w.at > start.at]


def receive_slots(k: mosaic.Kernel, start: mosaic.DmaStart) -> list[int | None]:
    """The receive semaphore's index at each step of ``start``'s loop."""
    (index,) = start.target_semaphore.index
    if not start.loops:  # one step: Pallas unrolled the loop
        return [index.constant]
    (loop,) = [k.loops[i] for i in start.loops]
    return [index.evaluate({f"s{loop.index}": s}) for s in range(loop.trips)]


# ------------------------------------------------------------------ the grid and the matmul


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_the_tiled_matmul_reads_its_grid_windows_and_f32_accumulator(dtype):
    a = jax.ShapeDtypeStruct((256, 512), dtype)
    b = jax.ShapeDtypeStruct((512, 384), dtype)
    k = one(exported(lambda a, b: tiled_matmul(a, b), a, b))
    assert k.grid == (2, 3, 4)
    assert k.semantics == ("parallel", "parallel", "arbitrary")
    assert [w.block for w in k.windows] == [(128, 128)] * 3
    assert [[str(i) for i in w.index] for w in k.windows] == [
        ["pid0", "pid2"], ["pid2", "pid1"], ["pid0", "pid1"]
    ]  # fmt: skip
    assert [o.role for o in k.operands] == ["program_id"] * 3 + ["input"] * 2 + [
        "output", "scratch"
    ]  # fmt: skip
    assert k.operands[-1].dtype == "float32" and k.operands[-1].space == "vmem"
    (mm,) = k.matmuls
    name = jnp.dtype(dtype).name
    assert (mm.lhs, mm.rhs) == (((128, 128), name), ((128, 128), name))
    assert mm.accumulator == "float32" and mm.result == ((128, 128), "float32")
    assert (str(mm.lhs_from), str(mm.rhs_from)) == ("arg3[0, 0]", "arg4[0, 0]")
    assert not k.starts and not k.has_communication and k.collective_id is None


def test_a_bfloat16_accumulator_is_told_apart():
    a = jax.ShapeDtypeStruct((256, 256), BF16)
    right = one(exported(lambda a, b: tiled_matmul(a, b), a, a))
    wrong = one(exported(lambda a, b: tiled_matmul(a, b, accumulate=BF16), a, a))
    assert right.operands[-1].dtype == "float32"
    assert wrong.operands[-1].dtype == "bfloat16"  # the scratch the sum is kept in
    (good,), (bad,) = right.matmuls, wrong.matmuls
    assert good.accumulator == bad.accumulator == "float32"  # each product alone: float32
    assert [(r.root, r.dtype) for r in good.kept_in] == [("arg6", "float32")]
    assert [(r.root, r.dtype) for r in bad.kept_in] == [("arg6", "bfloat16")]


def test_an_accumulator_not_zeroed_and_an_output_written_every_step_are_told_apart():
    a, b = jax.ShapeDtypeStruct((256, 512), F32), jax.ShapeDtypeStruct((512, 256), F32)
    right = one(exported(lambda a, b: tiled_matmul(a, b), a, b))  # k: 4 steps
    zeroing = [s for s in right.stores if s.constant == 0.0]
    assert [(s.ref.root, [s.runs({"pid2": k}) for k in range(4)]) for s in zeroing] == [
        ("arg6", [True, False, False, False])
    ]  # fmt: skip
    (out,) = [s for s in right.stores if s.ref.root == "arg5"]
    assert [out.runs({"pid2": k}) for k in range(4)] == [False, False, False, True]

    unzeroed = one(exported(lambda a, b: tiled_matmul(a, b, zero_first=False), a, b))
    assert [s.constant for s in unzeroed.stores] == [None, None]
    every = one(exported(lambda a, b: tiled_matmul(a, b, write_last=False), a, b))
    (out,) = [s for s in every.stores if s.ref.root == "arg5"]
    assert [out.runs({"pid2": k}) for k in range(4)] == [True] * 4


def test_a_bfloat16_matmul_does_not_even_export():
    """``jnp.dot`` of two bfloat16 tiles without ``preferred_element_type`` asks Mosaic
    for a bfloat16 accumulator, which its verifier refuses when the kernel is lowered:
    the student's process cannot export it, so no reader ever sees one."""

    def kernel(a, b, c):
        c[...] = jnp.dot(a[...], b[...])

    a = jax.ShapeDtypeStruct((128, 128), BF16)
    call = pl.pallas_call(kernel, out_shape=a)
    with pytest.raises(Exception, match="32-bit"):
        exported(call, a, a)


# ------------------------------------------------------------------ the ring all-gather


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_ring_all_gather_as_the_reader_sees_it(n):
    k = gather(n)
    assert k.devices == n and k.has_communication and k.collective_id == 0
    local, hop = k.starts
    assert not local.remote and local.bytes == B * D * 4
    assert hop.remote and hop.bytes == B * D * 4 and k.times(hop) == n - 1
    if n > 2:
        (loop,) = k.loops
        assert (loop.start.constant, loop.stop.constant, loop.trips) == (0, n - 1, n - 1)
        assert hop.loops == (0,) and [str(i) for i in hop.target_semaphore.index] == ["s0"]
    else:  # a loop of one step leaves no scf.for: Pallas unrolls it
        assert k.loops == () and hop.loops == ()
    assert hop.peers == tuple((d + 1) % n for d in range(n))  # the right neighbour
    assert hop.target_semaphore.root == "arg4" and receive_slots(k, hop) == list(range(n - 1))
    assert hop.source_semaphore is not None and hop.source_semaphore.index == ()
    sides = [(w.side, w.semaphore) for w in after(k, hop)]
    assert sides == [("send", hop.source_semaphore), ("receive", hop.target_semaphore)]
    # the barrier: a signal to each neighbour, then a wait for both
    signals = [e for e in k.barrier if isinstance(e, mosaic.Signal)]
    (wait,) = [e for e in k.barrier if isinstance(e, mosaic.SemWait)]
    assert sorted(s.peers for s in signals) == sorted(
        [tuple((d + 1) % n for d in range(n)), tuple((d - 1) % n for d in range(n))]
    )
    assert wait.amount.constant == 2
    assert all(e.at < hop.at for e in k.barrier)  # before the first remote write


@pytest.mark.parametrize("n", [3, 4])
def test_one_receive_semaphore_for_every_step_is_told_apart(n):
    right, wrong = gather(n), gather(n, shared_receive=True)
    (good,), (bad,) = hops(right), hops(wrong)
    assert receive_slots(right, good) == list(range(n - 1))
    assert receive_slots(wrong, bad) == [0] * (n - 1)
    assert (
        bad.target_semaphore.index[0].free == set()
        and good.target_semaphore != bad.target_semaphore
    )


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_missing_receive_wait_is_told_apart(n):
    wrong = gather(n, wait_receive=False)
    (hop,) = hops(wrong)
    assert [w.side for w in after(wrong, hop)] == ["send"]
    assert not any(w.semaphore == hop.target_semaphore for w in wrong.waits)
    right = gather(n)
    assert any(w.semaphore == hops(right)[0].target_semaphore for w in right.waits)


@pytest.mark.parametrize("n", [3, 4])
def test_the_left_neighbour_is_told_apart(n):
    (hop,) = hops(gather(n, to_left=True))
    assert hop.peers == tuple((d - 1) % n for d in range(n))
    assert hop.peers != hops(gather(n))[0].peers


def test_on_two_devices_left_and_right_are_one_device():
    """What the IR cannot tell apart: on a ring of two, both neighbours are the other."""
    assert hops(gather(2, to_left=True))[0].peers == hops(gather(2))[0].peers == (1, 0)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_n_steps_instead_of_n_minus_one_are_told_apart(n):
    right, wrong = gather(n), gather(n, steps=n)
    assert right.times(hops(right)[0]) == n - 1
    assert wrong.times(hops(wrong)[0]) == n and wrong.loops[0].trips == n
    assert right.operands[-1].shape == (n - 1,) and wrong.operands[-1].shape == (n,)


def test_a_loop_with_bounds_not_constant_has_no_trip_count():
    unread = mosaic.Expr(("?", "load"))
    loop = mosaic.Loop(0, "for", mosaic.Expr(("const", 0)), unread, mosaic.Expr(("const", 1)), None)
    assert loop.trips is None
    k = gather(3)
    k = mosaic.Kernel(**{**vars(k), "loops": (loop,)})
    assert k.times(hops(k)[0]) is None


@pytest.mark.parametrize("n", [2, 4])
def test_no_barrier_is_told_apart(n):
    right = gather(n)
    wrong = gather(n, barrier=False, collective_id=None)
    assert right.barrier and not wrong.barrier
    assert wrong.has_communication and wrong.collective_id is None
    assert not wrong.signals and not wrong.sem_waits


def test_no_barrier_with_a_collective_id_does_not_even_export():
    """Mosaic refuses a collective_id without the barrier semaphore when it lowers the
    kernel, so a student's process that exports such a kernel fails there."""
    mesh = mesh_of(4)
    with pytest.raises(ValueError, match="collective_id"):
        exported(lambda x: ring_all_gather(x, mesh, barrier=False), rows(mesh, (4 * B, D)))


# ------------------------------------------------------------------ the ring reduce-scatter


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_reduce_scatter_sends_a_float32_running_sum(n):
    mesh = mesh_of(n)
    x = rows(mesh, (n * n * B, D), BF16)
    right = one(exported(lambda x: ring_reduce_scatter(x, mesh), x))
    wrong = one(exported(lambda x: ring_reduce_scatter(x, mesh, carry=BF16), x))
    (good,), (bad,) = hops(right), hops(wrong)
    assert (good.source.dtype, good.bytes) == ("float32", B * D * 4)
    assert (bad.source.dtype, bad.bytes) == ("bfloat16", B * D * 2)
    assert good.peers == tuple((d + 1) % n for d in range(n))
    # its inbox slot for the step (the one step of a ring of two is unrolled: slot 0)
    assert [str(i) for i in good.target.index] == ["s0" if n > 2 else "0", "0", "0"]
    # the local loads: one before the loop, one a step, one to write the output
    local = [s for s in right.starts if not s.remote]
    assert [right.times(s) for s in local] == [1, n - 1, 1]
    assert {s.source.space for s in local[:2]} == {"any"} and local[0].target.space == "vmem"


# ------------------------------------------------------------------ double buffering


@pytest.mark.parametrize("n", [3, 4])
def test_a_dma_in_flight_across_the_matmul_is_told_from_one_waited_first(n):
    mesh = mesh_of(n)
    x, w = rows(mesh, (n * B, n * D)), rows(mesh, (n * D, 256))
    right = one(exported(lambda x, w: all_gather_matmul(x, w, mesh), x, w))
    wrong = one(exported(lambda x, w: all_gather_matmul(x, w, mesh, overlap=False), x, w))
    ((start, matmul, wait),) = right.overlaps()
    assert start.remote and start.loops == matmul.loops == wait.loops == (0,)
    assert start.at < matmul.at < wait.at and wait.side == "receive"
    # it multiplies the slot that is not being written
    slot, other = matmul.rhs_from.index[0], start.target.index[0]
    assert all(slot.evaluate({"s0": s}) != other.evaluate({"s0": s}) for s in range(n - 1))
    assert wrong.overlaps() == ()
    kinds = [type(e).__name__ for e in wrong.in_loop(0) if not isinstance(e, mosaic.Store)]
    assert kinds[-4:] == [
        "DmaWait", "DmaWait", "Matmul", "Signal"
    ]  # fmt: skip
    # the free-slot handshake: a wait from the second step on, a signal to the left
    (sem_wait,) = [e for e in right.sem_waits if e.loops == (0,)]
    assert [sem_wait.runs({"s0": s}) for s in range(n - 1)] == [False] + [True] * (n - 2)
    (free,) = [e for e in right.signals if e.loops == (0,)]
    assert free.peers == tuple((d - 1) % n for d in range(n))
    assert free.semaphore == sem_wait.semaphore and free.semaphore.dtype == "semaphore"


# ------------------------------------------------------------------ forms and refusals


def test_it_reads_the_module_and_its_text_as_the_exported_program():
    mesh = mesh_of(3)
    exp = exported(lambda x: ring_all_gather(x, mesh), rows(mesh, (3 * B, D)))
    from grader.measure import stablehlo

    from_exp = mosaic.kernels(exp)
    assert mosaic.kernels(stablehlo.parse_exported(exp)) == from_exp
    assert mosaic.kernels(exp.mlir_module()) == from_exp
    assert from_exp[0].devices == 3


def test_a_program_without_kernels_has_none():
    mesh = mesh_of(2)
    exp = exported(lambda x: x * 2, rows(mesh, (8, 8)))
    assert mosaic.kernels(exp) == ()


def test_a_body_that_is_not_mosaic_is_refused():
    a = jax.ShapeDtypeStruct((128, 128), F32)
    text = exported(lambda a: tiled_matmul(a, a), a).mlir_module()
    body = text.split("\\22body\\22: \\22", 1)[1].split("\\22", 1)[0]
    junk = base64.b64encode(b"MLIR but not really").decode()
    with pytest.raises(Unrecognised, match="Mosaic body"):
        mosaic.kernels(text.replace(body, junk))
    with pytest.raises(Unrecognised, match="backend_config"):
        mosaic.kernels(text.replace(body, "not base64!"))


def test_a_scoped_copy_reads_as_a_local_dma_on_a_scoped_semaphore():
    """``pltpu.sync_copy`` allocates its semaphore in a ``run_scoped`` region. Newer
    jax asks which TPU it lowers such a region for, which a CPU-only process must say
    with an abstract mesh (``Unsupported TPU device kind: cpu`` otherwise)."""

    def kernel(x_hbm, o_ref, buf):
        pltpu.sync_copy(x_hbm.at[1], buf)
        o_ref[...] = buf[...] * 2

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((B, D), F32),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM((B, D), F32)],
    )
    x = jax.ShapeDtypeStruct((2, B, D), F32)
    try:
        exp = exported(call, x)
    except ValueError as exc:
        assert "use_abstract_mesh" in str(exc)
        tpu = jax.sharding.AbstractDevice(device_kind="TPU v5 lite", num_cores=1, platform="tpu")
        mesh = jax.sharding.AbstractMesh((1,), ("x",), (AxisType.Explicit,), abstract_device=tpu)
        with jax.sharding.use_abstract_mesh(mesh):
            exp = exported(call, x)
    k = one(exp)
    (start,), (wait,) = k.starts, k.waits
    (store,) = k.stores
    assert (store.ref.root, store.ref.space, store.constant) == ("arg1", "vmem", None)
    assert start.at < wait.at < store.at
    assert not start.remote and str(start.source) == "arg0[1, 0, 0]" and start.bytes == B * D * 4
    assert start.target.root == "arg2" and start.target.space == "vmem"
    assert start.target_semaphore.root == "scoped0" == wait.semaphore.root
    assert wait.side == "receive"
