"""Realistic wrong implementations for lesson 17 (see tests/mistakes/__init__.py)."""

from __future__ import annotations

from tests.mistakes import Mistake

L17 = "l17_pallas_kernels"

GATHER_SEND = "o_ref.at[slot], o_ref.at[slot], send_sem, recv_sems.at[s], device_id=(right,)"
GATHER_PARAMS = (
    "            compiler_params=pltpu.CompilerParams(collective_id=0),\n"
    "        )(block)\n        return out.reshape(n * block.shape[0], block.shape[1])"
)

MISTAKES: list[Mistake] = [
    Mistake(
        id="pallas-ring-one-receive-semaphore",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="semaphores",
        says=("One receive semaphore shared by every step",),
        patch=((GATHER_SEND, GATHER_SEND.replace("recv_sems.at[s]", "recv_sems.at[0]")),),
    ),
    Mistake(
        id="pallas-ring-receive-not-waited",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="waits",
        says=("A wait missing", "wait_recv"),
        patch=(
            (
                "            send.wait_recv()  # block me − s − 1 has arrived from the left\n",
                "",
            ),
        ),
    ),
    Mistake(
        id="pallas-ring-sends-left",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="direction",
        says=("left neighbour (i − 1)",),
        patch=(
            # sending left, the block that arrives at step s started on device me + s + 1
            ("slot = lax.rem(me + n - s, n)", "slot = lax.rem(me + s, n)"),
            (GATHER_SEND, GATHER_SEND.replace("(right,)", "(left,)")),
        ),  # fmt: skip
    ),
    Mistake(
        id="pallas-ring-n-steps",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="dmas",
        says=("N steps instead of N − 1",),
        patch=(
            (
                "        @pl.loop(0, n - 1)\n        def _(s):\n            slot",
                "        @pl.loop(0, n)\n        def _(s):\n            slot",
            ),
            (
                "                pltpu.SemaphoreType.DMA((max(n - 1, 1),)),\n            ],\n"
                "            compiler_params=pltpu.CompilerParams(collective_id=0),\n        )(block)",
                "                pltpu.SemaphoreType.DMA((n,)),\n            ],\n"
                "            compiler_params=pltpu.CompilerParams(collective_id=0),\n        )(block)",
            ),
        ),  # fmt: skip
    ),
    Mistake(
        id="pallas-ring-no-barrier",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="barrier",
        says=("No barrier", "get_barrier_semaphore"),
        patch=(
            ("        own.wait()\n        _barrier(left, right)\n", "        own.wait()\n"),
            (GATHER_PARAMS, GATHER_PARAMS.replace("pltpu.CompilerParams(collective_id=0)", "None")),
        ),
    ),
    Mistake(
        # the barrier left out but the pallas_call still names a collective_id: Mosaic
        # refuses to lower it (as the chip's compiler would), in its own words
        id="pallas-ring-no-barrier-collective-id-kept",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="returns",
        says=("could not be lowered for a TPU", "when not using a custom barrier"),
        patch=(("        own.wait()\n        _barrier(left, right)\n", "        own.wait()\n"),),
    ),
    Mistake(
        id="pallas-ring-reads-hbm-directly",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="returns",
        says=("could not be lowered for a TPU", "can only be accessed using async_copy"),
        patch=(
            (
                "        own = pltpu.make_async_copy(x_ref, o_ref.at[me], copy_sem)\n"
                "        own.start()\n        own.wait()\n",
                "        o_ref[me] = x_ref[...]  # HBM refs read and written as if they were VMEM\n",
            ),
        ),
    ),
    Mistake(
        id="pallas-reduce-scatter-bfloat16-running-sum",
        module=L17,
        exercise="ring_reduce_scatter",
        status="failed",
        check="bytes",
        says=("running sum travels in bfloat16",),
        patch=(
            (
                "pltpu.VMEM((b, d), jnp.float32),  # acc: the running sum, sent",
                "pltpu.VMEM((b, d), rows.dtype),  # acc: the running sum, sent",
            ),
            (
                "pltpu.VMEM((max(n - 1, 1), b, d), jnp.float32),",
                "pltpu.VMEM((max(n - 1, 1), b, d), rows.dtype),",
            ),
            (
                "acc[...] = load(lax.rem(me + n - 1, n))",
                "acc[...] = load(lax.rem(me + n - 1, n)).astype(acc.dtype)",
            ),
            ("acc[...] = recv[s] + own", "acc[...] = (recv[s] + own).astype(acc.dtype)"),
        ),  # fmt: skip
    ),
    Mistake(
        id="pallas-matmul-bfloat16-accumulator",
        module=L17,
        exercise="tiled_matmul",
        status="failed",
        check="accumulator",
        says=("bfloat16 accumulator", "float32"),
        patch=(
            (
                "scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],",
                "scratch_shapes=[pltpu.VMEM((bm, bn), a.dtype)],",
            ),
            (
                "acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)",
                "acc_ref[...] += jnp.dot(\n"
                "            a_ref[...], b_ref[...], preferred_element_type=jnp.float32\n"
                "        ).astype(acc_ref.dtype)",
            ),
        ),
    ),
    Mistake(
        id="pallas-matmul-accumulator-not-zeroed",
        module=L17,
        exercise="tiled_matmul",
        status="failed",
        check="values",
        says=("NaN", "not zeroed on the first k step"),
        patch=(
            (
                "        @pl.when(pl.program_id(2) == 0)\n"
                "        def _():  # a new output tile: its sum starts from zero\n"
                "            acc_ref[...] = jnp.zeros_like(acc_ref)\n\n",
                "",
            ),
        ),
    ),
    Mistake(
        id="pallas-matmul-output-every-k-step",
        module=L17,
        exercise="tiled_matmul",
        status="failed",
        check="accumulator",
        says=("written on every k step",),
        patch=(
            (
                "        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)\n"
                "        def _():  # the sum is complete only after the last k step\n"
                "            o_ref[...] = acc_ref[...].astype(o_ref.dtype)\n",
                "        o_ref[...] = acc_ref[...].astype(o_ref.dtype)  # (complete at the last)\n",
            ),
        ),
    ),
    Mistake(
        id="pallas-matmul-ragged-k-not-refused",
        module=L17,
        exercise="tiled_matmul",
        status="failed",
        check="refuses",
        says=("must refuse ragged K",),
        patch=(
            (
                '    for dim, size, tile in (("M", m, bm), ("K", k, bk), ("N", n, bn)):\n'
                "        if size % tile:\n"
                '            raise ValueError(f"{dim} = {size} is not a multiple of its tile {tile}")\n',
                "",
            ),
        ),
    ),
]

MISTAKES += [
    Mistake(
        id="pallas-gather-matmul-waits-before-multiplying",
        module=L17,
        exercise="all_gather_matmul",
        status="failed",
        check="overlap",
        says=("Not double buffered", "does not move while this one is multiplied"),
        patch=(
            (
                "            send.start()  # the next block moves …\n"
                "            multiply(s, held)  # … while this one is multiplied\n"
                "            send.wait_send()\n"
                "            send.wait_recv()\n",
                "            send.start()\n"
                "            send.wait_send()\n"
                "            send.wait_recv()\n"
                "            multiply(s, held)  # the block has left and the next arrived\n",
            ),
        ),
    ),
    Mistake(
        id="pallas-gather-matmul-no-free-slot-handshake",
        module=L17,
        exercise="all_gather_matmul",
        status="failed",
        check="handshake",
        says=("No free-slot handshake", "signals of a regular semaphore"),
        patch=(
            (
                "            @pl.when(s > 0)\n"
                "            def _():  # the right neighbour has used its slot 1 − held: we may "
                "write it\n"
                "                pl.semaphore_wait(free, 1)\n",
                "",
            ),
            (
                "            @pl.when(s < n - 2)\n"
                "            def _():  # our slot `held` is free for the left neighbour's next "
                "block\n"
                "                pl.semaphore_signal(free, 1, device_id=(left,))\n",
                "",
            ),
        ),
    ),
]

SPECS = "from jax.sharding import PartitionSpec as P\n"

MISTAKES += [
    Mistake(
        id="pallas-ring-calls-all-gather",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="dmas",
        says=("No remote DMA",),
        code=SPECS
        + """
def ring_all_gather(x, mesh):
    def body(block):  # lesson 2's collective, not a kernel
        return lax.all_gather(block, "x", tiled=True)

    return jax.shard_map(
        body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False
    )(x)
""",
    ),
    Mistake(
        id="pallas-matmul-without-a-kernel",
        module=L17,
        exercise="tiled_matmul",
        status="failed",
        check="accumulator",
        says=("0 Pallas kernels", "one pl.pallas_call with a grid"),
        code="""
def tiled_matmul(a, b, bm, bk, bn):
    for size, tile in ((a.shape[0], bm), (a.shape[1], bk), (b.shape[1], bn)):
        if size % tile:
            raise ValueError(f"{size} is not a multiple of its tile {tile}")
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
""",
    ),
    # issue 45 audit (round 3): both were told "a wait missing, or one receive semaphore
    # shared" while the waits and semaphores checks passed; NaN now names a cause only where
    # its check measured it
    Mistake(
        id="pallas-ring-slot-counted-the-wrong-way",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=("memory was read that nothing wrote", "the block that started on device me − s"),
        never=("a wait missing", "semaphore shared"),
        patch=(
            (
                "            slot = lax.rem(me + n - s, n)  # the block that started on device me − s\n",
                "            slot = lax.rem(me + s, n)  # the block we hold after s steps\n",
            ),
        ),
    ),
    Mistake(
        id="pallas-ring-own-block-sent-every-step",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=("the same block was sent at every step",),
        never=("a wait missing", "semaphore shared"),
        patch=(
            (
                GATHER_SEND,
                GATHER_SEND.replace("o_ref.at[slot], o_ref.at[slot]", "o_ref.at[me], o_ref.at[me]"),
            ),
        ),
    ),
    # audit 67: a loop one step short (none at all at N = 2) was told "a wait missing, or
    # one receive semaphore shared" too: the waits and semaphores are short because the
    # DMAs are
    Mistake(
        id="pallas-ring-loop-from-one",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="values",
        says=("a step's block was never sent",),
        never=("a wait missing", "semaphore shared"),
        patch=(
            (
                "        @pl.loop(0, n - 1)\n        def _(s):\n            slot = lax.rem(me + n - s, n)",
                "        @pl.loop(1, n - 1)\n        def _(s):\n            slot = lax.rem(me + n - s, n)",
            ),
        ),
    ),
    Mistake(
        id="pallas-ring-loop-from-one-waits",
        module=L17,
        exercise="ring_all_gather",
        status="failed",
        check="waits",
        says=("the waits are as few as the DMAs",),
        never=("A wait missing",),
        patch=(
            (
                "        @pl.loop(0, n - 1)\n        def _(s):\n            slot = lax.rem(me + n - s, n)",
                "        @pl.loop(1, n - 1)\n        def _(s):\n            slot = lax.rem(me + n - s, n)",
            ),
        ),
    ),
]
