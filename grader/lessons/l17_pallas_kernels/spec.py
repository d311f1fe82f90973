"""Grading spec for lesson 17: kernels in Pallas (a tiled matmul; a ring all-gather and
reduce-scatter written as remote DMAs with semaphores).

Each example reads the student's kernel twice, in two forms, and trusts each only for
what the grading process observes of it itself:

1. **Its structure, from the program a TPU would run.** The program around the student's
   function goes to ``rt.kernels``: exported for a TPU (which a CPU-only process can
   do; through the sandbox, in the student's process, handed over like any program) and
   read here, in the worker, from its Mosaic IR (:mod:`grader.measure.mosaic`), never
   compiled or run. Every DMA, wait, semaphore signal and barrier, the loops and
   conditions around them, the accumulator's dtype and the stores: the structural checks
   count them per device from the IR (:mod:`.observed`), as a run would.
2. **Its values, from TPU interpret mode.** The student's function called on the
   grader's data (in the worker: the sandbox's ``call``, which runs it in the student's
   process on data it is sent, and hands back every device's shard), in TPU interpret
   mode (:func:`interpret_here`), which simulates each device's HBM, VMEM, DMA engines
   and semaphores and fills memory never written with NaN (a lost block shows). The
   values are held here to the reference.

A tiled matmul's kernel is read at TPU tiles (8 × 128 × 128, the smallest its lowering
takes; its grid is the example's) and run at the example's small ones, which interpret
mode runs quickly. Examples are small (interpret mode runs each kernel in Python:
0.3–1 s a call), and the student's process skips the call (``rt.exporting``), where
nothing it computes is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import Values
from grader.lessons.l17_pallas_kernels import observed as seen
from grader.results import CheckResult
from grader.runtime import FLOAT, Runtime, example_values, tpu_mesh
from grader.spec import Check, Context, Example, ExerciseSpec, LessonSpec, Trial


def interpret_here() -> None:
    """Every ``pallas_call`` of this process runs in TPU interpret mode (race detector
    off) unless a context says otherwise: the student's function is called on the
    grader's data by the sandbox's ``call``, which runs it with no context of the
    spec's around it. Set when the spec is imported (in the student's process, before
    any question; in the worker and the tests too, where only this lesson's kernels
    run)."""
    from jax.experimental.pallas import tpu as pltpu

    pltpu.set_tpu_interpret_mode(_interpret(False))


OBSERVED = "observed"
"""``trial.extra`` key: the :class:`.observed.Observed` counts of the example's kernel."""
KERNELS = "kernels"
"""``trial.extra`` key: the example's kernels as read (:class:`grader.measure.mosaic.Kernel`)."""


def _dtype(name: str) -> Any:
    import jax.numpy as jnp

    return np.dtype("float32") if name == "float32" else jnp.dtype("bfloat16")


def _itemsize(ex: Example) -> int:
    return 4 if ex["dtype"] == "float32" else 2


# ------------------------------------------------------------------ running a kernel


def _interpret(races: bool) -> Any:
    """TPU interpret mode's parameters: with the race detector or without. Where this
    jax's detector can raise on a race (its ``on_race``, "raise" by default), it is told
    to warn instead (a learner's own run of the detector says where)."""
    import dataclasses

    from jax.experimental.pallas import tpu as pltpu

    options: dict[str, Any] = {"detect_races": races}
    if races and "on_race" in {f.name for f in dataclasses.fields(pltpu.InterpretParams)}:
        options["on_race"] = "warn"
    return pltpu.InterpretParams(**options)


TPU_TILES = (8, 128, 128)
"""bm, bk, bn where a tiled matmul's kernel is read: the smallest its TPU lowering takes
(a block's last two dims divisible by 8 and 128)."""


# ------------------------------------------------------------------ examples


def _matmul_strategy(ctx: Context) -> Any:
    return st.fixed_dictionaries(
        {
            "gm": st.integers(1, 2),  # tiles along M, K, N
            "gk": st.integers(1, 3),
            "gn": st.integers(1, 2),
            "bm": st.just(8),
            "bk": st.sampled_from([8, 16]),
            "bn": st.sampled_from([8, 16]),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _matmul_explicit(ctx: Context) -> list[Example]:
    """A 2×2×2 grid (the accumulator's reset and the last step's store both matter);
    four k steps of bfloat16 normal floats (a bfloat16 accumulator shows); K = 24 with
    a tile of 16 (refused)."""
    return [
        {"gm": 2, "gk": 2, "gn": 2, "bm": 8, "bk": 8, "bn": 8, "dtype": "float32", "seed": 0},
        {"gm": 1, "gk": 4, "gn": 1, "bm": 8, "bk": 16, "bn": 8, "dtype": "bfloat16",
         "values": FLOAT, "seed": 1},
        {"gm": 1, "gk": 1, "gn": 1, "bm": 8, "bk": 16, "bn": 8, "dtype": "float32",
         "ragged": 8, "seed": 2},
    ]  # fmt: skip


def _ring_strategy(ctx: Context) -> Any:
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from([n for n in ctx.mesh_sizes if n >= 2] or [1]),
            "b": st.integers(1, 2),  # rows of one block
            "d": st.sampled_from([8, 16]),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _ring_explicit(kind: str) -> Callable[[Context], list[Example]]:
    """Meshes of 2 (one step: the neighbours left and right are one device), 4 (the
    usual ring; floats in the reduce-scatter, whose float32 sum shows), 3 (not a power of
    two: left and right differ, and a hard-coded N shows) and 8 (the largest: a
    semaphore shared by the steps loses blocks there)."""

    def explicit(ctx: Context) -> list[Example]:
        out = []
        for i, n in enumerate(m for m in (2, 4, 3, 8) if m in ctx.mesh_sizes):
            ex: Example = {"n": n, "b": 2, "d": 8, "dtype": "float32", "seed": i}
            if n == 3:
                ex["dtype"] = "bfloat16"
            if n == 4 and kind == "scatter":
                ex["dtype"], ex["values"] = "bfloat16", FLOAT
            out.append(ex)
        return out

    return explicit


# ------------------------------------------------------------------ runs


def _run_matmul(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax

    bm, bk, bn = ex["bm"], ex["bk"], ex["bn"]
    m, k, n = ex["gm"] * bm, ex["gk"] * bk + ex.get("ragged", 0), ex["gn"] * bn
    rng = rt.rng()
    dtype = _dtype(ex["dtype"])
    a = example_values(rng, (m, k), ex, 3).astype(dtype)
    b = example_values(rng, (k, n), ex, 3).astype(dtype)
    if ex.get("ragged"):  # refused: no kernel to read
        try:
            out: Any = None if rt.exporting else fn(a, b, bm, bk, bn)
        except NotImplementedError:
            raise
        except Exception as exc:
            out = exc
        return Trial(example=ex, output=out, extra={"ragged": True})
    tm, tk, tn = TPU_TILES  # the kernel read on the example's grid, at tiles a TPU takes
    shapes = (jax.ShapeDtypeStruct((ex["gm"] * tm, ex["gk"] * tk), dtype),
              jax.ShapeDtypeStruct((ex["gk"] * tk, ex["gn"] * tn), dtype))  # fmt: skip
    kernels = rt.kernels(lambda p, q: fn(p, q, tm, tk, tn), shapes, None)
    out = None if rt.exporting else fn(a, b, bm, bk, bn)
    trial = Trial(example=ex, output=out, extra={KERNELS: kernels})
    trial.expected = (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    return trial


@dataclass(frozen=True)
class Layout:
    rows: int
    """Rows of X, the input (placed by rows over the mesh)."""
    block: int
    """Bytes of the block that travels on each step."""


def _layout(kind: str, ex: Example) -> Layout:
    if kind == "matmul":  # one W block [dblock, f] travels
        return Layout(ex["n"] * ex["rows"], ex["dblock"] * ex["f"] * _itemsize(ex))
    n, b, d = ex["n"], ex["b"], ex["d"]
    if kind == "gather":
        return Layout(n * b, b * d * _itemsize(ex))
    return Layout(n * n * b, b * d * 4)  # the running sum travels in float32


def _run_ring(kind: str) -> Callable[[Runtime, Callable[..., Any], Example], Trial]:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        n = ex["n"]
        mesh = rt.mesh((n,), ("x",))
        x = example_values(rt.rng(), (_layout(kind, ex).rows, ex["d"]), ex, 3)
        x = x.astype(_dtype(ex["dtype"]))
        placed = jax.device_put(x, NamedSharding(mesh, P("x", None)))
        kernels = _read(rt, fn, (placed,), n)
        out = None if rt.exporting else jax.block_until_ready(fn(placed, mesh))
        trial = Trial(example=ex, output=out, mesh=mesh,
                      extra={OBSERVED: seen.observe(kernels, n)})  # fmt: skip
        if kind == "gather":
            trial.expected = x
        else:  # device i's X_i is rows [i·N·b, (i+1)·N·b): block i of their sum
            trial.expected = x.astype(np.float64).reshape(n, n * ex["b"], ex["d"]).sum(0)
            trial.expected = trial.expected.astype(x.dtype)
        return trial

    return run


def _gather_matmul_strategy(ctx: Context) -> Any:
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from([n for n in ctx.mesh_sizes if n >= 2] or [1]),
            "rows": st.integers(1, 2),  # rows of X per device
            "dblock": st.sampled_from([8, 16]),  # rows of one W block
            "f": st.sampled_from([8, 16]),
            "dtype": st.sampled_from(["float32", "bfloat16"]),
            "seed": st.integers(0, 2**16),
        }
    )


def _gather_matmul_explicit(ctx: Context) -> list[Example]:
    """N = 4 with normal floats (a bfloat16 sum inside shows), N = 3 in bfloat16 (the two
    slots alternate over an odd number of blocks)."""
    sizes = [n for n in (4, 3) if n in ctx.mesh_sizes]
    out = []
    for i, n in enumerate(sizes):
        ex: Example = {"n": n, "rows": 2, "dblock": 8, "f": 16, "dtype": "float32", "seed": i}
        if n == 4:
            ex["values"] = FLOAT
        else:
            ex["dtype"] = "bfloat16"
        out.append(ex)
    return out


def _run_gather_matmul(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    n = ex["n"]
    mesh = rt.mesh((n,), ("x",))
    rng, dtype = rt.rng(), _dtype(ex["dtype"])
    x = example_values(rng, (n * ex["rows"], n * ex["dblock"]), ex, 3).astype(dtype)
    w = example_values(rng, (n * ex["dblock"], ex["f"]), ex, 3).astype(dtype)
    rows = NamedSharding(mesh, P("x", None))
    args = (jax.device_put(x, rows), jax.device_put(w, rows))
    kernels = _read(rt, fn, args, n)
    out = None if rt.exporting else jax.block_until_ready(fn(*args, mesh))
    trial = Trial(example=ex, output=out, mesh=mesh, extra={OBSERVED: seen.observe(kernels, n)})
    trial.expected = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype)
    return trial


# ------------------------------------------------------------------ checks


def _read(rt: Runtime, fn: Callable[..., Any], args: tuple[Any, ...], n: int) -> tuple:
    """The kernels of ``fn`` on a mesh of ``n`` TPUs, lowered for a TPU and read (never
    run): ``fn`` built on an abstract TPU mesh shaped as the example's (``tpu_mesh``: newer
    jax lowers ``pltpu.sync_copy`` only for a named TPU), its args placed there by rows."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = tpu_mesh((n,), ("x",))
    rows = NamedSharding(mesh, P("x", None))
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=rows) for a in args)
    return rt.kernels(lambda *xs: fn(*xs, mesh), shapes, mesh)


def observed(trial: Trial) -> seen.Observed:
    return trial.extra[OBSERVED]


def _unread(name: str, trial: Trial) -> CheckResult | None:
    """A failed check where the kernel's counts are not complete (:attr:`seen.Observed.unread`)."""
    why = observed(trial).unread
    if why is None:
        return None
    return CheckResult(
        name, False,
        f"the grader could not count your kernel's DMAs from its Mosaic IR: {why}",
        hint="Write the ring's loop with constant bounds (pl.loop(0, n - 1) or a Python "
        "for over range(n - 1)), and compute devices and semaphore slots from "
        "lax.axis_index and the step only.",
    )  # fmt: skip


def _per_device(values: list[int]) -> str:
    if len(set(values)) == 1:
        return f"{values[0]} on every device"
    return ", ".join(f"device {i}: {v}" for i, v in enumerate(values))


@dataclass(frozen=True)
class RemoteSteps(Check):
    """N − 1 remote DMAs per device."""

    name: str = "dmas"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        n = trial.example["n"]
        got = observed(trial).column("remote")
        if all(g == n - 1 for g in got):
            return CheckResult(self.name, True, f"N − 1 = {n - 1} remote DMAs per device")
        hint = None
        if all(g == n for g in got):
            hint = (
                f"N steps instead of N − 1: after N − 1 = {n - 1} sends every device holds "
                "every block (its own was there from the start); the N-th sends a block "
                "back to where it started."
            )
        elif all(g == 0 for g in got):
            hint = "No remote DMA: make_async_remote_copy(..., device_id=(right,)) sends one."
        return CheckResult(
            self.name,
            False,
            f"remote DMAs started: {_per_device(got)}; a ring moves one block per step, "
            f"N − 1 = {n - 1} steps",
            hint=hint,
        )


@dataclass(frozen=True)
class Direction(Check):
    """Every remote DMA goes to the right neighbour, i + 1 (mod N)."""

    name: str = "direction"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        n = trial.example["n"]
        obs = observed(trial)
        remote, right, left = obs.column("remote"), obs.column("right"), obs.column("left")
        if right == remote:
            return CheckResult(self.name, True, "every remote DMA goes to device i + 1")
        if n > 2 and left == remote:
            return CheckResult(
                self.name,
                False,
                f"every remote DMA goes to the left neighbour (i − 1), at N = {n}; the ring "
                "of this lesson sends to the right neighbour, i + 1 (mod N)",
                hint="Your values may still be right (you mirrored the slots too); the "
                "lesson's ring, its text and the reduce-scatter's block order count on the "
                "right: device_id = (lax.rem(me + 1, n),).",
            )
        return CheckResult(
            self.name,
            False,
            f"remote DMAs to i + 1: {_per_device(right)}; of all: {_per_device(remote)}: "
            "a ring sends to the neighbour only, i + 1 (mod N)",
        )


@dataclass(frozen=True)
class RingBytes(Check):
    """(N − 1) blocks per device, the ring optimum of lesson 2, one block a DMA."""

    what: str = "one block"
    name: str = "bytes"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        ex = trial.example
        n, block = ex["n"], _layout(self.kind(trial), ex).block
        obs = observed(trial)
        sent, largest = obs.column("bytes"), obs.column("largest")
        want = (n - 1) * block
        if all(s == want for s in sent) and all(g == (block if n > 1 else 0) for g in largest):
            return CheckResult(
                self.name, True, f"(N − 1) × {block} B = {want} B sent per device, "
                f"{self.what} a DMA: lesson 2's ring optimum",
            )  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"bytes sent by remote DMAs: {_per_device(sent)} (largest DMA: "
            f"{_per_device(largest)}); the ring optimum is (N − 1) × {block} B = {want} B, "
            f"{self.what} ({block} B) a DMA",
            hint=self.advice(trial, sent, largest, block),
        )

    def advice(self, trial: Trial, sent: list[int], largest: list[int], block: int) -> str | None:
        n = trial.example["n"]
        if any(g > block for g in largest):
            return "Send one block per step (o_ref.at[slot], not the whole buffer)."
        if (
            self.kind(trial) == "scatter"
            and trial.example["dtype"] == "bfloat16"
            and all(2 * s == (n - 1) * block for s in sent)
        ):
            return (
                "Half the bytes: the running sum travels in bfloat16, rounded to 8 bits of "
                "mantissa at every step. Keep the sum and the receive slots float32 "
                "(pltpu.VMEM(..., jnp.float32)) and cast once, when the block is stored."
            )
        return None

    def kind(self, trial: Trial) -> str:
        return "gather" if "all_gather" in str(trial.extra.get("exercise", "gather")) else "scatter"


@dataclass(frozen=True)
class ReceiveSemaphores(Check):
    """One receive semaphore per step."""

    name: str = "semaphores"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        n = trial.example["n"]
        got = observed(trial).column("recv_sems")
        if all(g == n - 1 for g in got):
            return CheckResult(self.name, True, f"N − 1 = {n - 1} receive semaphores, one a step")
        hint = None
        if all(g == 1 for g in got) and n > 2:
            hint = (
                "One receive semaphore shared by every step: a DMA semaphore counts bytes, "
                "not blocks, so a wait on it can be satisfied by a block of another step, and "
                "the block you wait for may be read before it has landed (a lost block "
                "reads NaN). Give each step its own: pltpu.SemaphoreType.DMA((n - 1,)) and "
                "recv_sems.at[s]."
            )
        return CheckResult(
            self.name,
            False,
            f"distinct receive semaphores of the remote DMAs: {_per_device(got)}; the "
            f"lesson's ring gives each of its N − 1 = {n - 1} steps its own",
            hint=hint,
        )


@dataclass(frozen=True)
class Waits(Check):
    """Every remote DMA waited for at both ends: N − 1 waits on receive semaphores and
    N − 1 on send semaphores per device."""

    name: str = "waits"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        n = trial.example["n"]
        obs = observed(trial)
        recv, send = obs.column("recv_waits"), obs.column("send_waits")
        if all(r == n - 1 for r in recv) and all(s == n - 1 for s in send):
            return CheckResult(
                self.name, True, f"N − 1 = {n - 1} waits for arrival and N − 1 for departure"
            )
        remote = obs.column("remote")
        if all(r == d and s == d for r, s, d in zip(recv, send, remote)) and any(
            d < n - 1 for d in remote
        ):  # one wait at each end of each DMA: the DMAs are short, not the waits
            return CheckResult(
                self.name, False,
                f"waits on the receive semaphores: {_per_device(recv)}; on the send "
                f"semaphores: {_per_device(send)}: one at each end of each of your remote "
                f"DMAs ({_per_device(remote)}), where N − 1 = {n - 1} DMAs belong",
                hint="Every DMA you start is waited for at both ends: the waits are as few "
                "as the DMAs (see the dmas check).",
            )  # fmt: skip
        which = []
        if any(r < n - 1 for r in recv):
            which.append(".wait_recv() says the block from the left has arrived (it may be read "
                         "or sent on)")  # fmt: skip
        if any(s < n - 1 for s in send):
            which.append(".wait_send() says your block has left (its buffer may be reused)")
        return CheckResult(
            self.name,
            False,
            f"waits on the receive semaphores: {_per_device(recv)}; on the send semaphores: "
            f"{_per_device(send)}; each of the N − 1 = {n - 1} remote DMAs is waited for at "
            "both ends",
            hint="A wait missing: " + "; ".join(which) + ". Without it the next step reads or "
            "overwrites a block in flight."
            if which
            else None,
        )


@dataclass(frozen=True)
class Barrier(Check):
    """Both neighbours signalled, and the signals waited for, before the first remote DMA."""

    name: str = "barrier"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        got = observed(trial).column("barrier")
        if all(got) or trial.example["n"] == 1:
            return CheckResult(self.name, True, "a barrier with both neighbours comes first")
        missing = [i for i, g in enumerate(got) if not g]
        return CheckResult(
            self.name,
            False,
            f"no barrier before the first remote DMA on device(s) {missing}: a device may "
            "write into a neighbour that has not entered the kernel yet",
            hint="No barrier: signal the barrier semaphore (pltpu.get_barrier_semaphore()) "
            "of both neighbours with pl.semaphore_signal(..., device_id=…), wait for both "
            "signals with pl.semaphore_wait(barrier, 2), then start the first remote DMA; "
            "the pallas_call needs compiler_params=pltpu.CompilerParams(collective_id=0).",
        )


@dataclass(frozen=True)
class Refuses(Check):
    """A K its tile does not divide is refused with a ValueError that says so."""

    name: str = "refuses"

    def __call__(self, trial: Trial) -> CheckResult:
        if not trial.extra.get("ragged"):
            return CheckResult(self.name, True, "(no ragged example here)")
        out = trial.output
        if isinstance(out, ValueError) and any(w in str(out) for w in ("K", "multiple", "divid")):
            return CheckResult(self.name, True, f"refused: {out}")
        what = f"raised {type(out).__name__}: {out}" if isinstance(out, BaseException) else (
            f"returned a {type(out).__name__}")  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"K = {trial.example['gk'] * trial.example['bk'] + trial.example['ragged']} with a "
            f"tile bk = {trial.example['bk']}: your function {what}; it must refuse ragged K "
            "with a ValueError that names the dim and its tile",
            hint="The last k tile would read past the end of A and B (or be dropped): check "
            "K % bk (and M % bm, N % bn) before the pallas_call and raise ValueError.",
        )


@dataclass(frozen=True)
class Overlap(Check):
    """In the kernel's loop: a DMA started, then a matmul, then a DMA waited for."""

    name: str = "overlap"

    def __call__(self, trial: Trial) -> CheckResult:
        if observed(trial).overlap:
            return CheckResult(
                self.name, True, "the loop starts the next block's DMA, multiplies, then waits"
            )
        return CheckResult(
            self.name,
            False,
            "in your kernel's loop no DMA is started before the matmul and waited for after "
            "it: the next block does not move while this one is multiplied",
            hint="Not double buffered: start the remote copy of the block you hold "
            "(send.start()), add its product into the accumulator, and only then "
            "send.wait_send() and send.wait_recv(); the block arriving goes into the other "
            "slot of a two-slot buffer.",
        )


@dataclass(frozen=True)
class Handshake(Check):
    """With two slots, a device tells its left neighbour when a slot is free (a regular
    semaphore signalled to it) before that neighbour's next DMA writes into it (waited
    for): N − 2 of each per device, the blocks after the first two."""

    name: str = "handshake"

    def __call__(self, trial: Trial) -> CheckResult:
        if (unread := _unread(self.name, trial)) is not None:
            return unread
        n = trial.example["n"]
        obs = observed(trial)
        told, waited = obs.column("handshakes"), obs.column("handshake_waits")
        want = max(n - 2, 0)
        if all(t == want for t in told) and all(w == want for w in waited):
            return CheckResult(
                self.name, True,
                f"N − 2 = {want} free-slot signals to the left neighbour, and as many waits",
            )  # fmt: skip
        return CheckResult(
            self.name,
            False,
            f"signals of a regular semaphore to another device: {_per_device(told)}; waits on "
            f"one: {_per_device(waited)}; with two slots, each of the N − 2 = {want} blocks "
            "after the first two is written into a slot the right neighbour may still be "
            "multiplying, unless it said the slot is free",
            hint="No free-slot handshake: once a slot's block is multiplied, tell the left "
            "neighbour (pl.semaphore_signal(free, 1, device_id=(left,))), and before a remote "
            "DMA writes into the right neighbour's slot from the second step on, wait for its "
            "word (pl.semaphore_wait(free, 1)). Without it the DMA races the matmul: run the "
            "kernel under pltpu.force_tpu_interpret_mode(pltpu.InterpretParams("
            "detect_races=True)) to see the race.",
        )


@dataclass(frozen=True)
class NaNs(Check):
    """``inner`` (the values), with what NaN in the output measures: TPU interpret
    mode fills memory never written with NaN. ``cause``: what leaves memory unwritten, or,
    where ``measured`` is given, a function of the names of those of its checks that fail
    on the trial (a wait missing, a semaphore shared…): a cause is named only where its
    check measured it."""

    inner: Check = None  # type: ignore[assignment]
    cause: str | Callable[[list[str]], str] = ""
    measured: tuple[Check, ...] = ()

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def __call__(self, trial: Trial) -> CheckResult:
        import dataclasses

        result = self.inner(trial)
        if result.passed or isinstance(trial.output, BaseException):
            return result
        try:
            shards = [np.asarray(s.data, np.float32) for s in trial.output.addressable_shards]
        except AttributeError:
            return result
        bad = [i for i, a in enumerate(shards) if np.isnan(a).any()]
        if not bad:
            return result
        where = f"device(s) {bad}" if len(shards) > 1 else "the output"
        count = sum(int(np.isnan(shards[i]).sum()) for i in bad)
        cause = self.cause
        if callable(cause):
            cause = cause([c.name for c in self.measured if not c(trial).passed])
        return dataclasses.replace(
            result,
            hint=f"{count} NaN values on {where}: TPU interpret mode fills memory never "
            f"written with NaN, so {cause}",
        )


@dataclass(frozen=True)
class NotRagged(Check):
    """``inner`` on every example but the ragged one (which has no output to check)."""

    inner: Check = None  # type: ignore[assignment]

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.extra.get("ragged"):
            return CheckResult(self.name, True, "(a ragged example: refused)")
        return self.inner(trial)


@dataclass(frozen=True)
class Accumulator(Check):
    """One kernel; its running sum kept in float32 (for bfloat16 inputs too); the output
    tile stored on the last k step only: read from the kernel's Mosaic IR."""

    name: str = "accumulator"

    def __call__(self, trial: Trial) -> CheckResult:
        if trial.extra.get("ragged"):
            return CheckResult(self.name, True, "(a ragged example: refused)")
        kernels = trial.extra[KERNELS]
        if len(kernels) != 1:
            return CheckResult(
                self.name, False, f"{len(kernels)} Pallas kernels in your program; write one",
                hint="Compute the product inside one pl.pallas_call with a grid, not with "
                "jnp.dot outside it." if not kernels else None,
            )  # fmt: skip
        (kernel,) = kernels
        outputs = {f"arg{o.index}" for o in kernel.operands if o.role == "output"}
        sums = {r.dtype for m in kernel.matmuls for r in m.kept_in if r.root not in outputs}
        if sums != {"float32"}:
            kept = ", ".join(sorted(sums)) or "no scratch buffer (straight into the output)"
            return CheckResult(
                self.name,
                False,
                f"the kernel's running sum is kept in {kept}, not a float32 accumulator",
                hint="A bfloat16 accumulator rounds the running sum to 8 bits of mantissa at "
                "every k step: keep it in float32 (pltpu.VMEM((bm, bn), jnp.float32)) and "
                "cast once, when the output tile is stored."
                if "bfloat16" in sums
                else "Keep the running sum in a float32 VMEM scratch buffer "
                "(scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)]), zero it on the first k "
                "step, and store the output tile from it once, on the last.",
            )
        steps = kernel.grid[-1] if kernel.grid else 1
        stored = sorted(
            {k for st_ in kernel.stores if st_.ref.root in outputs for k in range(steps)
             if st_.runs({"pid0": 0, "pid1": 0, "pid2": k}) is not False}
        )  # fmt: skip
        if stored != [steps - 1]:
            return CheckResult(
                self.name,
                False,
                f"the kernel stores its output tile on k steps {stored} of 0 … {steps - 1}, "
                "not on the last one only",
                hint="The output written on every k step: the output tile is complete only "
                "after the last k step; store it under "
                "@pl.when(pl.program_id(2) == pl.num_programs(2) - 1).",
            )
        return CheckResult(self.name, True, "a float32 accumulator, stored on the last k step")


MATMUL_NAN = (
    "a sum read memory before anything was written there: the accumulator not zeroed on "
    "the first k step (its first += reads uninitialised VMEM), or an output tile never "
    "stored."
)


def ring_nan(failing: list[str]) -> str:
    """What left a ring's memory unwritten, by the checks of :data:`RING_MEASURED` that
    fail: a cause is named only where its check measured it."""
    said = {
        "dmas": "a step's block was never sent (see the dmas check)",
        "waits": "a block was read or sent on before it landed (a wait missing: see the "
        "waits check)",
        "semaphores": "a block was read before it landed (one receive semaphore shared by "
        "several steps: see the semaphores check)",
        "barrier": "a block was sent before its neighbour was ready (see the barrier check)",
    }
    # no DMA (or too few) leaves the waits and semaphores short too: the dmas check is the
    # cause measured, the others follow from it
    named = [said[f] for f in (["dmas"] if "dmas" in failing else failing) if f in said]
    if named:
        return "; or ".join(named) + "."
    return (
        "memory was read that nothing wrote, though the DMAs and their waits measured "
        "right: a DMA sent a slot that held nothing yet, or wrote its block into another "
        "slot than the block's own (after s steps of a ring, the block that started on "
        "device me − s), or the same block was sent at every step."
    )


RING_MEASURED = (RemoteSteps(), Waits(), ReceiveSemaphores(), Barrier())
"""The checks whose failure :func:`ring_nan` names as a cause of NaN: a ring's."""

MATMUL_MEASURED = (RemoteSteps(), Waits(), Barrier())
"""The same for the all-gather matmul, whose semaphores the lesson does not fix."""


def _checks(kind: str) -> list[Check]:
    values = Values(reduce_size=lambda ex: ex["n"]) if kind == "scatter" else Values()
    return [
        NaNs(values, ring_nan, RING_MEASURED),
        RemoteSteps(),
        Direction(),
        _Bytes(kind),
        ReceiveSemaphores(),
        Waits(),
        Barrier(),
    ]


def _Bytes(kind: str) -> Check:  # noqa: N802 (a check's factory)
    return GatherBytes() if kind == "gather" else ScatterBytes()


@dataclass(frozen=True)
class GatherBytes(RingBytes):
    what: str = "one block [b, d]"

    def kind(self, trial: Trial) -> str:
        return "gather"


@dataclass(frozen=True)
class WeightBytes(RingBytes):
    what: str = "one W block [D/N, F]"

    def kind(self, trial: Trial) -> str:
        return "matmul"


@dataclass(frozen=True)
class ScatterBytes(RingBytes):
    what: str = "one float32 partial sum [b, d]"

    def kind(self, trial: Trial) -> str:
        return "scatter"


SPEC = LessonSpec(
    exercises=[
        ExerciseSpec(
            name="tiled_matmul",
            strategy=_matmul_strategy,
            explicit=_matmul_explicit,
            run=_run_matmul,
            checks=[
                Refuses(),
                NotRagged(NaNs(Values(reduce_size=lambda ex: ex["gk"] * ex["bk"]), MATMUL_NAN)),
                Accumulator(),
            ],  # fmt: skip
            max_examples=1,
        ),
        ExerciseSpec(
            name="ring_all_gather",
            strategy=_ring_strategy,
            explicit=_ring_explicit("gather"),
            run=_run_ring("gather"),
            checks=_checks("gather"),
            max_examples=1,
        ),
        ExerciseSpec(
            name="ring_reduce_scatter",
            strategy=_ring_strategy,
            explicit=_ring_explicit("scatter"),
            run=_run_ring("scatter"),
            checks=_checks("scatter"),
            max_examples=1,
        ),
        ExerciseSpec(
            name="all_gather_matmul",
            strategy=_gather_matmul_strategy,
            explicit=_gather_matmul_explicit,
            run=_run_gather_matmul,
            checks=[
                NaNs(
                    Values(reduce_size=lambda ex: ex["n"] * ex["dblock"]), ring_nan, MATMUL_MEASURED
                ),
                RemoteSteps(),
                Direction(),
                WeightBytes(),
                Waits(),
                Barrier(),
                Overlap(),
                Handshake(),
            ],
            max_examples=1,
        ),
    ]
)


interpret_here()
