"""What a kernel did, watched while TPU interpret mode runs it: every DMA it started
(from which device to which, on which semaphores), every wait, every semaphore
signal, the bytes each DMA moved, and whether the race detector reported a race.

TPU interpret mode runs a kernel's memory operations as host callbacks into jax's
interpreter (``jax._src.pallas.mosaic.interpret.interpret_pallas_call``): its
module-level ``dma_start``, ``dma_wait``, ``semaphore_signal``, ``semaphore_wait``,
``get_barrier_semaphore`` and the ``DMA`` class's ``execute_write``. :func:`watch`
wraps them while a kernel is traced and run, and gives back the :class:`Log`. Whether this jax has them (with the
arguments named as read here) is asked of the module itself (:func:`supported`),
never of its version.

Such a kernel cannot be exported (its callbacks are this process's Python), so it
runs in the student's process only: the spec (``spec.py``) watches it there and
hands the summary over as the output of a constant program (:func:`encode`).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

HOOKS = ("dma_start", "dma_wait", "semaphore_signal", "semaphore_wait", "get_barrier_semaphore")
NAMES = {
    "dma_start": ("device_id", "dst_device_id", "dst_sem_id", "src_sem_id"),
    "dma_wait": ("device_id", "sem_id"),
    "semaphore_signal": ("device_id", "sem_id", "inc", "target_device_id"),
    "semaphore_wait": ("device_id", "sem_id", "value"),
    "get_barrier_semaphore": ("device_id", "collective_id"),
}


@dataclass
class Log:
    """Events in the order each device ran them (``(kind, device, fields)``)."""

    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    moved: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """DMA id → (from device, to device, bytes), for every DMA that wrote its destination."""
    races: bool = False


def _interpreter() -> Any:
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call

    return interpret_pallas_call


def supported() -> str | None:
    """None where this jax's interpreter has what :func:`watch` wraps, else what is missing."""
    try:
        ip = _interpreter()
    except ImportError as exc:
        return f"no TPU interpret mode ({exc})"
    for hook, names in NAMES.items():
        fn = getattr(ip, hook, None)
        if fn is None:
            return f"no {hook}"
        params = inspect.signature(fn).parameters
        if any(n not in params for n in names):
            return f"{hook} takes {list(params)}"
    dma = getattr(ip, "DMA", None)
    if dma is None or not hasattr(dma, "execute_write"):
        return "no DMA.execute_write"
    return None


_lock = threading.Lock()


@contextlib.contextmanager
def watch() -> Iterator[Log]:
    """Record what every kernel traced and run inside does (see the module docstring)."""
    ip = _interpreter()
    log = Log()
    saved = {name: getattr(ip, name) for name in HOOKS}
    write = ip.DMA.execute_write

    def wrap(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs).arguments
            fields = {k: _int(bound.get(k)) for k in NAMES[name]}
            log.events.append((name, int(fields.pop("device_id")), fields))
            return original(*args, **kwargs)

        return hooked

    def execute_write(self: Any) -> Any:
        # the data read is there until this write completes; a second call for the same
        # DMA (another thread's wait) finds it gone or records the same entry again
        data = self.data
        if data is not None:
            size = int(data.size) * int(data.itemsize)
            log.moved[int(self.id)] = (int(self.src_device_id), int(self.dst_device_id), size)
        return write(self)

    with _lock:
        try:
            for name in HOOKS:
                setattr(ip, name, wrap(name, saved[name]))
            ip.DMA.execute_write = execute_write
            ip.reset_tpu_interpret_mode_state()  # what a kernel that raised before left
            yield log
            log.races = bool(getattr(ip.races, "races_found", False))
        except BaseException:
            ip.reset_tpu_interpret_mode_state()  # a kernel that raises leaves its state
            raise
        finally:
            for name in HOOKS:
                setattr(ip, name, saved[name])
            ip.DMA.execute_write = write


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


# ------------------------------------------------------------------ the summary

COLUMNS = (
    "remote",  # remote DMAs started by the device
    "right",  # of them, to device i + 1
    "left",  # to device i − 1
    "bytes",  # bytes the device's remote DMAs read and sent
    "recv_waits",  # DMA waits on the receive semaphores of its remote DMAs
    "recv_sems",  # distinct receive semaphores of its remote DMAs
    "barrier",  # 1: signalled both neighbours and waited before its first remote DMA
    "largest",  # bytes of its largest remote DMA
    "send_waits",  # DMA waits on the send semaphores of its remote DMAs
)


def summary(log: Log, n: int) -> list[list[int]]:
    """One row per device, :data:`COLUMNS`, then a last row: races (0/1), padded. The
    barrier semaphore is the one ``get_barrier_semaphore`` handed out (its id is the
    ``collective_id``: the interpreter gives it that fixed id)."""
    barriers = {f["collective_id"] for kind, _, f in log.events if kind == "get_barrier_semaphore"}
    rows = [[0] * len(COLUMNS) for _ in range(n)]
    sems: list[set[int]] = [set() for _ in range(n)]
    sends: list[set[int]] = [set() for _ in range(n)]
    waits: list[list[int]] = [[] for _ in range(n)]
    signalled: list[set[int]] = [set() for _ in range(n)]
    waited = [False] * n
    for kind, dev, f in log.events:
        if not 0 <= dev < n:
            continue
        row = rows[dev]
        if kind == "dma_start" and f["dst_device_id"] is not None and f["dst_device_id"] != dev:
            if row[0] == 0:
                row[6] = int(len(signalled[dev]) >= min(2, n - 1) and waited[dev])
            row[0] += 1
            shift = (f["dst_device_id"] - dev) % n
            row[1] += shift == 1
            row[2] += shift == n - 1 and n > 2
            sems[dev].add(f["dst_sem_id"])
            if f["src_sem_id"] is not None:
                sends[dev].add(f["src_sem_id"])
        elif kind == "dma_wait":
            waits[dev].append(f["sem_id"])
        elif kind == "semaphore_signal" and f["sem_id"] in barriers:
            if f["target_device_id"] is not None and f["target_device_id"] != dev:
                signalled[dev].add(f["target_device_id"])
        elif kind == "semaphore_wait" and f["sem_id"] in barriers:
            waited[dev] = True
    for src, dst, size in log.moved.values():
        if src != dst and 0 <= src < n:
            rows[src][3] += size
            rows[src][7] = max(rows[src][7], size)
    for dev in range(n):
        rows[dev][5] = len(sems[dev])
        # the semaphores of a kernel are allocated alike on every device: a device's
        # incoming DMAs signal the same ids as its outgoing ones
        rows[dev][4] = sum(w in sems[dev] for w in waits[dev])
        rows[dev][8] = sum(w in sends[dev] for w in waits[dev])
    return [*rows, [int(log.races)] + [0] * (len(COLUMNS) - 1)]


@dataclass(frozen=True)
class Observed:
    """:func:`summary` read back: per device, by column name; and the race flag."""

    rows: tuple[dict[str, int], ...]
    races: bool
    extra: tuple[int, ...] = ()
    """The last row's other columns (the bonus puts its kernel's order in the first)."""

    @classmethod
    def read(cls, array: Any, n: int) -> Observed:
        import numpy as np

        table = np.asarray(array).astype(int)
        if table.shape != (n + 1, len(COLUMNS)):
            raise ValueError(f"a summary of shape {table.shape}, not {(n + 1, len(COLUMNS))}")
        rows = tuple(dict(zip(COLUMNS, map(int, r))) for r in table[:n])
        return cls(rows, bool(table[n, 0]), tuple(int(v) for v in table[n, 1:]))

    @property
    def overlap(self) -> bool:
        """The bonus's kernel order (``spec.kernel_order``), where the summary has it."""
        return bool(self.extra[0]) if self.extra else False

    def column(self, name: str) -> list[int]:
        return [r[name] for r in self.rows]
