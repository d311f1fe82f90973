"""What a ring kernel does on each device, read from its Mosaic IR in the grading process.

The student's kernel reaches the worker as the program exported for a TPU
(``Runtime.kernels``: :func:`grader.exported.read_kernels`), whose kernels
:mod:`grader.measure.mosaic` reads: every DMA start, DMA wait and semaphore signal and
wait, in program order, with the loops and ``pl.when`` conditions around it and its
operands as small expressions over the device id and the loop counters. Nothing is run:
:func:`observe` evaluates those expressions for every device and every iteration of the
loops around an event (their trip counts are constants: the ring's N is static), and
counts what each device does, as a run would, into :class:`Observed`'s columns.

What it cannot count (a loop whose bounds are not constant, a device or a semaphore
index computed from a value read from memory) is said, never guessed (:attr:`Observed.unread`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from grader.measure import mosaic

COLUMNS = (
    "remote",  # remote DMAs started by the device
    "right",  # of them, to device i + 1
    "left",  # to device i − 1
    "bytes",  # bytes the device's remote DMAs send
    "recv_waits",  # DMA waits on the receive semaphores of its remote DMAs
    "recv_sems",  # distinct receive semaphores of its remote DMAs
    "barrier",  # 1: signalled both neighbours and waited before its first remote DMA
    "largest",  # bytes of its largest remote DMA
    "send_waits",  # DMA waits on the send semaphores of its remote DMAs
    "handshakes",  # signals of a regular (non-barrier) semaphore to another device
    "handshake_waits",  # waits on a regular semaphore
)


@dataclass(frozen=True)
class Observed:
    """Per device, by column (:data:`COLUMNS`); the kernel's order; what was not read."""

    rows: tuple[dict[str, int], ...]
    kernels: int
    """Pallas kernels in the program."""
    overlap: bool = False
    """A DMA started before a matmul and waited for after it, in one loop body."""
    unread: str | None = None
    """Why the counts are not complete (None: every event was counted)."""

    def column(self, name: str) -> list[int]:
        return [r[name] for r in self.rows]


def _points(kernel: mosaic.Kernel, event: mosaic.Event) -> Iterator[dict[str, int]] | None:
    """Every assignment of the counters of the loops around ``event`` (None: a loop
    whose bounds are not constant)."""
    loops = [kernel.loops[i] for i in event.loops]
    ranges = []
    for lp in loops:
        if lp.trips is None:
            return None
        ranges.append(range(lp.start.constant, lp.stop.constant, lp.step.constant))  # type: ignore[union-attr,arg-type]
    names = [f"s{lp.index}" for lp in loops]
    return (dict(zip(names, point, strict=True)) for point in itertools.product(*ranges))


def _runs(kernel: mosaic.Kernel, event: mosaic.Event, device: int) -> list[dict[str, int]] | None:
    """The environments (device and loop counters) in which ``event`` runs on ``device``
    (None: not read)."""
    points = _points(kernel, event)
    if points is None:
        return None
    out = []
    for point in points:
        env = {"device": device, **point}
        ran = event.runs(env)
        if ran is None:
            return None
        if ran:
            out.append(env)
    return out


def _ref(ref: mosaic.Ref, env: Mapping[str, int]) -> tuple | None:
    index = tuple(i.evaluate(env) for i in ref.index)
    return None if any(i is None for i in index) else (ref.root, index)


def observe(kernels: tuple[mosaic.Kernel, ...], n: int) -> Observed:
    """The first kernel's DMAs and semaphores, counted per device of ``n``."""
    rows = [dict.fromkeys(COLUMNS, 0) for _ in range(n)]
    if not kernels:
        return Observed(tuple(rows), 0)
    kernel = kernels[0]
    unread: list[str] = []
    first_remote = min((s.at for s in kernel.starts if s.remote), default=None)
    for device in range(n):
        row = rows[device]
        receive: set[tuple] = set()
        send: set[tuple] = set()
        for start in (s for s in kernel.starts if s.remote):
            runs = _runs(kernel, start, device)
            if runs is None:
                unread.append("a remote DMA under a loop or condition the grader cannot count")
                continue
            for env in runs:
                to = start.device.evaluate(env) if start.device is not None else None
                if to is None:
                    unread.append("a remote DMA whose device the grader cannot evaluate")
                    continue
                if to == device:
                    continue  # to itself: not a transfer
                row["remote"] += 1
                shift = (to - device) % n
                row["right"] += shift == 1
                row["left"] += shift == n - 1 and n > 2
                row["bytes"] += start.bytes
                row["largest"] = max(row["largest"], start.bytes)
                for ref, into in ((start.target_semaphore, receive),
                                  (start.source_semaphore, send)):  # fmt: skip
                    key = _ref(ref, env) if ref is not None else None
                    if key is not None:
                        into.add(key)
        row["recv_sems"] = len(receive)
        for wait in kernel.waits:
            runs = _runs(kernel, wait, device)
            if runs is None:
                unread.append("a DMA wait under a loop or condition the grader cannot count")
            for env in runs or []:
                key = _ref(wait.semaphore, env)
                row["recv_waits"] += key in receive
                row["send_waits"] += key in send
        signalled: set[int] = set()
        waited = False
        for event in kernel.barrier:
            if first_remote is not None and event.at > first_remote:
                continue
            for env in _runs(kernel, event, device) or []:
                if isinstance(event, mosaic.Signal) and event.device is not None:
                    to = event.device.evaluate(env)
                    if to is not None and to != device:
                        signalled.add(to)
                elif isinstance(event, mosaic.SemWait):
                    waited = True
        row["barrier"] = int(len(signalled) >= min(2, n - 1) and waited)
        for event in kernel.events:
            regular = (
                isinstance(event, mosaic.Signal | mosaic.SemWait)
                and event.semaphore.root != "barrier"
                and event.semaphore.dtype == "semaphore"
            )
            if not regular:
                continue
            for env in _runs(kernel, event, device) or []:
                if isinstance(event, mosaic.SemWait):
                    row["handshake_waits"] += 1
                elif event.device is not None and event.device.evaluate(env) not in (None, device):
                    row["handshakes"] += 1
    return Observed(
        tuple(rows),
        len(kernels),
        overlap=bool(kernel.overlaps()),
        unread="; ".join(dict.fromkeys(unread)) or None,
    )
