"""Grading spec for lesson 13: many hosts, multi-controller JAX.

The student's functions run in a **cluster** of P student's processes with D
CPU devices each, joined by ``jax.distributed`` before the module is imported
(the backend's, reached with ``rt.cluster(P, D)``, whose ``run`` runs a task
declared in the exercise's ``tasks`` and gives plain values back); every
process runs the same function at the same time. Meshes are ``('host',
'local')`` of shape (P, D), row i holding process i's devices.

- ``host_local_slices`` is asked in every process, for every process index, and
  held against the union of the devices' blocks the grader computes itself
  (``devices_indices_map`` over mesh row i of a mesh of its own devices).
- ``global_batch`` is called in every process on that process's own rows of the
  grader's data (eager, like lesson 1's placement): each process's addressable
  shards must be exactly its block, on its own devices, with its own rows.
- ``hierarchical_all_reduce`` is traced and exported in every process (the
  programs must be the same, or they would deadlock), run there across the
  processes on decoy data (it must come back in every process), and the
  exported program is compiled and run **here** on the grader's own P·D devices
  on secret data: values, replica groups and bytes come from that run.
- ``multihost_train_step`` is called in every process on its own rows of the
  grader's data (it starts with host-local numpy rows, so it cannot be
  exported whole); params must come back identical on every device of every
  process and equal to the float64 reference step on the global batch. The
  jitted programs it runs on global arrays are exported as they are called
  (``on_process._Recorder``, in process 0 only) and replayed here: the gradient all-reduce's
  bytes across processes come from the worker's own compile
  (:class:`HierarchicalStep`).
- ``loader_indices`` and ``allreduce_time`` are pure, and called as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import relate
from grader.checks.groups import parse_groups, show_groups, spanned_axes
from grader.checks.scalar import Scalar
from grader.evidence import Evidence, Table
from grader.exported import HandedOver
from grader.later import expected
from grader.lessons.l13_multi_host import on_process
from grader.reference import training
from grader.results import CheckResult
from grader.runtime import GraderFault, StudentReturnError, call_pure
from grader.spec import FAST_COMPILE, Check, Context, Example, ExerciseSpec, LessonSpec, Trial

F = expected("l13_multi_host")
"""The grader's side: ``allreduce_time``'s model, ``loader_indices``' rows."""

HOST, LOCAL = on_process.HOST, on_process.LOCAL
CLUSTERS = ((2, 4), (3, 2), (4, 2))
"""(P, D) of the clusters examples run on: P = 2, 3, 4 processes, P·D ≤ 8."""
EXPLICIT_CLUSTERS = ((2, 4), (3, 2))
AHEAD = True
"""Start every cluster when the first one is needed, all at once: measured on two
busy cores (load ≈ 7), the lesson graded in 24 s with it and 43 s without (the
processes spend much of their start waiting on each other, so starts overlap)."""


def _ahead(p: int, d: int) -> tuple[tuple[int, int], ...]:
    return tuple(c for c in CLUSTERS if c != (p, d))


def _cluster(rt: Any, ex: Example) -> Any:
    return rt.cluster(
        ex["hosts"], ex["local"], ahead=_ahead(ex["hosts"], ex["local"]) if AHEAD else ()
    )


def clusters_of(ex: Example) -> tuple[tuple[int, int], ...]:
    """The example's cluster, then the others to start ahead (``ExerciseSpec.cluster``)."""
    own = (ex["hosts"], ex["local"])
    return (own, *(_ahead(*own) if AHEAD else ()))


def _task(rt: Any, ex: Example, exercise: str, task: Any, payloads: list[dict] | dict,
          measure: bool = False) -> list[Any]:  # fmt: skip
    """Run a process-side task (:mod:`on_process`, declared in the exercise's
    ``tasks``) in every process of the example's cluster; each process's result,
    or the student's exception re-raised here. ``measure``: what crossed between
    the processes during the call is measured (the cluster's ``traffic``)."""
    return _cluster(rt, ex).run(exercise, task, payloads, measure=measure)


def _mesh(rt: Any, ex: Example) -> Any:
    """The worker's own (P, D) mesh, of CPU devices like the cluster's processes
    (their programs are exported for the CPU), on an accelerator host too."""
    import jax
    from jax.sharding import AxisType, Mesh

    p, d = ex["hosts"], ex["local"]
    cpus = jax.devices("cpu")
    if len(cpus) < p * d:
        raise GraderFault(f"a {p}×{d} mesh needs {p * d} CPU devices here; there are {len(cpus)}")
    grid = np.array(cpus[: p * d], dtype=object).reshape(p, d)
    return Mesh(grid, (HOST, LOCAL), axis_types=(AxisType.Explicit,) * 2)


def _fits(ctx: Context) -> tuple[tuple[int, int], ...]:
    """The clusters whose P·D devices the worker has (all of them on the full set)."""
    return tuple(c for c in CLUSTERS if c[0] * c[1] <= ctx.n_devices) or (
        (2, max(1, ctx.n_devices // 2)),
    )


def _fitting(ctx: Context, examples: list[Example]) -> list[Example]:
    """The examples whose cluster the worker can replay (a grade on fewer devices
    runs fewer, and says so: :func:`grader.engine.plan`)."""
    return [e for e in examples if e["hosts"] * e["local"] <= ctx.n_devices]


def _cluster_dict(ctx: Context, **fields: Any) -> Any:
    return st.sampled_from(_fits(ctx)).flatmap(
        lambda c: st.fixed_dictionaries({"hosts": st.just(c[0]), "local": st.just(c[1]), **fields})
    )


def _box(index: tuple, shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape))


def _show_box(box: Any) -> str:
    if box is None:
        return "no single block (ValueError)"
    return "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]"


# ------------------------------------------------------------ host_local_slices

SPECS = {
    "rows": ((HOST, LOCAL),),
    "host": (HOST,),
    "local": (LOCAL,),
    "cols": (None, HOST),
    "grid": (HOST, LOCAL),
    "swapped": (LOCAL, HOST),
    "interleaved": ((LOCAL, HOST),),
    "replicated": (),
}
"""Partition specs by name (examples name them): ``interleaved`` gives process 0
rows 0, P, 2P, …: no single block."""


def _pspec(name: str) -> Any:
    from jax.sharding import PartitionSpec as P

    return P(*SPECS[name])


def process_blocks(mesh: Any, spec: Any, shape: tuple[int, ...]) -> list[Any]:
    """The grader's own answer: for each process (mesh row), the union of its
    devices' blocks as one box, or None when it is not one block."""
    from jax.sharding import NamedSharding

    index = NamedSharding(mesh, spec).devices_indices_map(shape)
    out = []
    for row in mesh.devices:
        boxes = {_box(index[d], shape) for d in row}
        lo = [min(b[k][0] for b in boxes) for k in range(len(shape))]
        hi = [max(b[k][1] for b in boxes) for k in range(len(shape))]
        whole = int(np.prod([h - s for s, h in zip(lo, hi)]))
        held = sum(int(np.prod([b - a for a, b in box])) for box in boxes)
        out.append(tuple(zip(lo, hi)) if held == whole else None)
    return out


def run_slices(rt: Any, fn: Any, ex: Example) -> Trial:
    from jax.sharding import NamedSharding

    p, d = ex["hosts"], ex["local"]
    shape = (p * d * ex["rows"], p * d * ex["cols"])
    spec = _pspec(ex["spec"])
    mesh = _mesh(rt, ex)
    want = process_blocks(mesh, spec, shape)
    index = NamedSharding(mesh, spec).devices_indices_map(shape)
    boxes = [sorted({_box(index[d], shape) for d in row}) for row in mesh.devices]
    said = _task(rt, ex, "host_local_slices", on_process.slices, {"shape": shape, "spec": spec})
    for i, s in enumerate(said):  # the grader's model of the cluster: mesh row i = process i
        theirs = {_box(ix, shape) for ix in s["addressable"]}
        if want[i] is not None and not all(_inside(b, want[i]) for b in theirs):
            raise GraderFault(f"process {i}'s devices hold {sorted(theirs)}, not in {want[i]}")
    return Trial(ex, output=[s["answers"] for s in said], expected=want,
                 extra={"shape": shape, "spec": str(spec), "device_boxes": boxes})  # fmt: skip


def _inside(box: Any, outer: Any) -> bool:
    return all(a >= c and b <= e for (a, b), (c, e) in zip(box, outer))


def _answer_box(answer: dict, shape: tuple[int, ...]) -> Any:
    """A student's answer as a box; TypeError for what is not a tuple of slices."""
    if "raised" in answer:
        return None
    got = answer["slices"]
    if not isinstance(got, tuple | list) or len(got) != len(shape):
        raise TypeError(f"returned {got!r}; expected a tuple of {len(shape)} slices")
    if not all(isinstance(s, slice) and s.step in (None, 1) for s in got):
        raise TypeError(f"returned {got!r}; expected slice(start, stop) per dimension")
    return _box(tuple(got), shape)


@dataclass(frozen=True)
class Blocks(Check):
    """Every process says, for every process index, the block jax gives it."""

    name: str = "block"

    def __call__(self, trial: Trial) -> CheckResult:
        shape, want = trial.extra["shape"], trial.expected
        rows = [[str(q), _show_box(w)] for q, w in enumerate(want)]
        for asker, answers in enumerate(trial.output):
            for q, (answer, w) in enumerate(zip(answers, want)):
                try:
                    got = _answer_box(answer, shape)
                except TypeError as exc:
                    return CheckResult(self.name, False, f"in process {asker}, host_local_slices(…, {q}) {exc}")  # fmt: skip
                if got != w:
                    return CheckResult(
                        self.name, False,
                        f"in process {asker}, host_local_slices({shape}, mesh, {trial.extra['spec']}, {q}) "
                        f"gave {_show_box(got)}; process {q}'s devices hold {_show_box(w)}",
                        evidence=(Table(["process", "its block"], rows),),
                        hint=_blocks_hint(got, w, q, trial),
                    )  # fmt: skip
        return CheckResult(self.name, True, "every process names every process's block",
                           evidence=(Table(["process", "its block"], rows),))  # fmt: skip


def _blocks_hint(got: Any, want: Any, q: int, trial: Trial) -> str | None:
    if want is None:
        return ("Its devices' blocks leave holes between them (rows split over "
                "('local', 'host') put process 0's rows at 0, P, 2P, …): raise ValueError.")  # fmt: skip
    if got is None:
        return "The union of this process's blocks is one block: return it."
    if got == tuple((0, n) for n in trial.extra["shape"]):
        return "That is the whole array: a process holds only its own devices' blocks (d.process_index)."
    boxes = trial.extra.get("device_boxes") or []
    mine = boxes[q] if q < len(boxes) else []
    if got in mine and len(mine) > 1:
        return (f"That is one device's block, {_show_box(got)}, of the {len(mine)} that process "
                f"{q}'s devices hold: a process holds the union of all its devices' blocks — "
                "the smallest start and the largest stop along each dimension, over every "
                "device whose process_index is the process's.")  # fmt: skip
    return None


SLICES_PURPOSE = {
    "rows": "rows split over ('host', 'local'), an 8 × 8 array on P = 2 processes of D = 4: "
    "process 0 holds rows 0:4, process 1 rows 4:8, every column",
    "grid": "rows over 'host', columns over 'local', 6 × 12 on P = 3 of D = 2: process i's two "
    "devices together hold rows 2i:2i + 2 and all 12 columns",
    "interleaved": "rows split over ('local', 'host'), P = 2: process 0 holds rows 0, 2, 4, 6, "
    "process 1 rows 1, 3, 5, 7, neither one block: ValueError for both",
    "swapped": "rows over 'local', columns over 'host', 12 × 6 on P = 3 of D = 2: process i "
    "holds every row of columns 2i:2i + 2",
}
"""What each fixed example of host_local_slices holds, by its partition spec (issue 45 §1)."""


# ------------------------------------------------------------ global_batch


def _rows_index(p: int, d: int, n: int, i: int, j: int) -> tuple[int, int]:
    """Rows of mesh position (i, j) under P(('host', 'local')): n rows each, host-major."""
    k = (i * d + j) * n
    return (k, k + n)


def run_batch(rt: Any, fn: Any, ex: Example) -> Trial:
    p, d, n = ex["hosts"], ex["local"], ex["rows"]
    rng = rt.rng()
    data = rng.integers(-99, 100, size=(p * d * n, ex["cols"])).astype(ex["dtype"])
    parts = np.split(data, p)
    said = _task(rt, ex, "global_batch", on_process.batch, [{"rows": part} for part in parts], measure=True)  # fmt: skip
    traffic = _cluster(rt, ex).traffic
    return Trial(ex, output=said, expected=data, extra={"traffic": traffic})


def _batch_purpose(ex: Example) -> str | None:
    """What each fixed example of global_batch holds (issue 45 §1)."""
    p, d, n = ex["hosts"], ex["local"], ex["rows"]
    return (
        f"P = {p} processes of D = {d} devices, {n} rows per device: each process passes its own "
        f"{d * n} rows, which stay on its own devices; no row crosses processes"
    )


@dataclass(frozen=True)
class Returned(Check):
    """Every process returned a jax array of the global shape and dtype."""

    name: str = "returns"

    def __call__(self, trial: Trial) -> CheckResult:
        want = trial.expected
        for i, got in enumerate(trial.output):
            if got.get("type") != "Array":
                return CheckResult(self.name, False, f"in process {i} it returned {got.get('type')}; expected a jax.Array")  # fmt: skip
            if tuple(got["shape"]) != want.shape:
                p = trial.example["hosts"]
                hint = None
                if tuple(got["shape"]) == (want.shape[0] // p, *want.shape[1:]):
                    hint = ("That is one process's rows as if they were the whole batch (jax.device_put "
                            "of the local rows): make_array_from_process_local_data builds the global array.")  # fmt: skip
                return CheckResult(self.name, False,
                                   f"in process {i} it returned shape {tuple(got['shape'])}; the global batch is {want.shape}",
                                   hint=hint)  # fmt: skip
            if got["dtype"] != want.dtype.name:
                return CheckResult(self.name, False, f"in process {i} it returned dtype {got['dtype']}; expected {want.dtype.name}")  # fmt: skip
        return CheckResult(self.name, True, f"every process returned the global {want.shape} array")


@dataclass(frozen=True)
class HoldsItsBlock(Check):
    """Each process holds exactly its block, on its own devices, with the right rows."""

    name: str = "placement"

    def __call__(self, trial: Trial) -> CheckResult:
        ex, data = trial.example, trial.expected
        p, d, n = ex["hosts"], ex["local"], ex["rows"]
        parts = np.split(data, p)
        for i, got in enumerate(trial.output):
            if got.get("type") != "Array":
                return CheckResult(self.name, False, f"process {i} returned no jax.Array")
            local = sorted(got["local_devices"])
            shards = {dev: (idx, arr) for dev, idx, arr in got["shards"]}
            if sorted(shards) != local:
                return CheckResult(self.name, False,
                                   f"process {i} holds shards on devices {sorted(shards)}; its own are {local}")  # fmt: skip
            for j, dev in enumerate(local):
                idx, arr = shards[dev]
                box = _box(tuple(idx), data.shape)
                want = (_rows_index(p, d, n, i, j), (0, data.shape[1]))
                if box != want:
                    theirs = [q for q in range(p) for jj in range(d)
                              if box == (_rows_index(p, d, n, q, jj), (0, data.shape[1]))]  # fmt: skip
                    if theirs and theirs[0] != i:
                        return CheckResult(
                            self.name, False,
                            f"device {j} of process {i} holds rows {box[0][0]}:{box[0][1]}, the place of "
                            f"process {theirs[0]}'s rows: the rows are in the wrong process order",
                            hint="Process i's rows go to mesh row i (host i): build the array over the "
                            "mesh you were given, with P(('host', 'local')).",
                        )  # fmt: skip
                    return CheckResult(
                        self.name, False,
                        f"device {j} of process {i} holds rows {box[0][0]}:{box[0][1]}; under "
                        f"P(('host', 'local')) it holds rows {want[0][0]}:{want[0][1]}",
                        hint="Shard the rows over both axes, host first: P(('host', 'local')).",
                    )  # fmt: skip
                expect = data[want[0][0] : want[0][1]]
                if not np.array_equal(np.asarray(arr), expect):
                    return CheckResult(self.name, False,
                                       f"device {j} of process {i} holds the wrong values in rows {want[0][0]}:{want[0][1]}",
                                       hint=_whose_rows(np.asarray(arr), parts, i, n, j))  # fmt: skip
        return CheckResult(self.name, True,
                           "each process holds exactly its own rows, on its own devices, in process order")  # fmt: skip


def _whose_rows(arr: np.ndarray, parts: list[np.ndarray], i: int, n: int, j: int) -> str | None:
    for q, part in enumerate(parts):
        if np.array_equal(arr, part[j * n : (j + 1) * n]) and q != i:
            return (f"They are process {q}'s rows: the rows are in the wrong process order. "
                    "Process i's rows go to mesh row i (host i), in order.")  # fmt: skip
    return None


# ------------------------------------------------------------ loader_indices


def _loader(ctx: Context) -> Any:
    return st.fixed_dictionaries({
        "step": st.integers(0, 50), "processes": st.sampled_from([2, 3, 4]),
        "per": st.integers(1, 16), "dataset": st.integers(8, 400),
    })  # fmt: skip


LOADER_EXPLICIT = [
    {"step": 0, "processes": 2, "per": 4, "dataset": 64},
    {"step": 3, "processes": 3, "per": 5, "dataset": 40},
    {"step": 7, "processes": 4, "per": 2, "dataset": 50},
    {"step": 1, "processes": 3, "per": 0, "dataset": 20},  # per 0: a batch of 10 over 3
]
LOADER_PURPOSE = [
    "step 0, B = 8 over P = 2 processes, 64 rows: process 0 loads rows 0–3, process 1 rows 4–7",
    "step 3, B = 15 over P = 3, a dataset of 40: rows 45–59 wrap around to 5–19, five per "
    "process in process order",
    "step 7, B = 8 over P = 4, a dataset of 50: rows 56–63 wrap around to 6–13, two per process",
    "a batch of 10 over P = 3 processes: 3 does not divide 10, so every process raises ValueError",
]
"""What each example of :data:`LOADER_EXPLICIT` holds, in its order (issue 45 §1)."""


def run_loader(rt: Any, fn: Any, ex: Example) -> Trial:
    p, step, size = ex["processes"], ex["step"], ex["dataset"]
    batch = p * ex["per"] if ex["per"] else 10
    raises = batch % p != 0
    want = None if raises else F.loader_rows(step, batch, size)
    got = [call_pure(fn, (step, batch, size, i, p), raises) for i in range(p)]
    return Trial(ex, output=got, expected=want, extra={"batch": batch})


@dataclass(frozen=True)
class LoaderRows(Check):
    """The processes' rows, in process order, are the single-process batch."""

    name: str = "rows"

    def __call__(self, trial: Trial) -> CheckResult:
        ex, want, got = trial.example, trial.expected, trial.output
        p, b = ex["processes"], trial.extra["batch"]
        call = f"loader_indices({ex['step']}, {b}, {ex['dataset']}, i, {p})"
        if want is None:
            for i, g in enumerate(got):
                if not isinstance(g, ValueError):
                    did = f"raised {g!r}" if isinstance(g, BaseException) else f"returned {g!r}"
                    return CheckResult(self.name, False, f"{call.replace('i,', f'{i},')} {did}; "
                                       f"{p} processes cannot split a batch of {b}: raise ValueError",
                                       hint=_unsplit_hint(g, got, p, b))  # fmt: skip
            return CheckResult(self.name, True, f"ValueError when {p} does not divide {b}")
        parts = []
        for i, g in enumerate(got):
            try:
                arr = np.asarray(g)
            except Exception:
                arr = None
            if arr is None or arr.ndim != 1 or arr.dtype.kind not in "iu":
                return CheckResult(self.name, False, f"process {i}'s answer is {g!r}; expected a 1-D int array",
                                   hint=_float_rows_hint(got, want, p, b))  # fmt: skip
            parts.append(arr)
        if all(
            np.array_equal(a, want[i * (b // p) : (i + 1) * (b // p)]) for i, a in enumerate(parts)
        ):
            return CheckResult(self.name, True, "the processes' rows, in process order, are the single-process batch")  # fmt: skip
        message = _loader_message(parts, want, p, b, call, ex["step"], ex["dataset"])
        return CheckResult(self.name, False, message,
                           evidence=(Table(["process", "rows it loads"],
                                           [[str(i), _show_rows(a)] for i, a in enumerate(parts)]),),
                           hint=_rearranged(parts, want, p) or _loader_rule(message))  # fmt: skip


def _float_rows_hint(got: list[Any], want: np.ndarray, p: int, b: int) -> str | None:
    """Where every process's answer is the right rows as floats (measured: each equals its
    rows exactly), that; else None."""
    rows = b // p
    try:
        arrays = [np.asarray(g) for g in got]
        right = all(a.ndim == 1 and a.dtype.kind == "f" and np.array_equal(a, want[i * rows : (i + 1) * rows])
                    for i, a in enumerate(arrays))  # fmt: skip
    except Exception:  # an answer numpy cannot read: the message says what came back
        return None
    if not right:
        return None
    return (f"Every process's rows are the right ones, but as floats ({arrays[0].dtype}): index "
            "arithmetic stays in integers where every step is one — // where you divide, an "
            "int bound for np.arange — or cast the result with .astype(int).")  # fmt: skip


def _rearranged(parts: list[np.ndarray], want: np.ndarray, p: int) -> str | None:
    """The processes' rows in process order, where they are the batch's rows rearranged
    one way of :func:`relate.rearranged` (strided where contiguous blocks belong, say)."""
    joined = np.concatenate(parts)
    if joined.shape != want.shape or np.array_equal(joined, want):
        return None
    how = relate.rearranged(joined, want, lambda a, e: a == e, [(0, p)], ("process", "processes"))
    if how is None:
        return None
    return (f"The rows your processes load, put together in process order, are the "
            f"single-process batch's rows {how}.")  # fmt: skip


def _show_rows(a: np.ndarray) -> str:
    return " ".join(map(str, a[:8].tolist())) + (" …" if a.size > 8 else "")


def _unsplit_hint(first: Any, got: list[Any], p: int, b: int) -> str:
    """What a loader that did not raise ValueError on a batch its processes cannot split
    did instead (``first``: the first process's answer that is not one; ``got``: every
    process's), measured on these calls."""
    split = f"{p} does not divide the batch of {b} ({b} = {p}·{b // p} + {b % p})"
    if isinstance(first, BaseException):
        return (f"Your loader refused the batch, but with {type(first).__name__}: {split}, "
                "and the exercise asks for a ValueError, the error a caller catches for a bad "
                "argument.")  # fmt: skip
    rows = []
    for g in got:
        try:
            rows.append(int(np.size(np.asarray(g))))
        except Exception:
            return f"Your loader did not refuse the batch, though {split}: raise ValueError."
    return (f"Your loader did not refuse the batch, though {split}: its {p} processes hold "
            f"{' + '.join(map(str, rows))} = {sum(rows)} rows of the {b}. Such a batch is "
            "refused: raise ValueError.")  # fmt: skip


def _loader_rule(message: str) -> str | None:
    """The rule a :func:`_loader_message` states after what it measured (the clause after
    its colon, before the single-process batch), as the hint: ``Each step moves on by the
    global batch, …``; None where the message states none."""
    measured, colon, rest = message.partition(": ")
    rule = rest.split("; the single-process batch is ")[0] if colon else ""
    if not rule or rule.startswith("the processes' rows") or "single-process" in measured:
        return None
    return f"{rule[0].upper()}{rule[1:]}."


def _loader_message(parts: list[np.ndarray], want: np.ndarray, p: int, b: int, call: str, step: int = 0, size: int = 0) -> str:  # fmt: skip
    single = "the single-process batch is " + _show_rows(want)
    joined = np.concatenate(parts)
    if size and joined.size == b and np.array_equal(joined, step * b + np.arange(b)) and joined.max() >= size:  # fmt: skip
        return (f"the processes load rows up to {int(joined.max())}, past the dataset's {size}: "
                f"the loader wraps around, (s·B + k) mod {size}; {single}")  # fmt: skip
    stride = (step * (b // p) + np.arange(b)) % size if size else None
    if stride is not None and step and np.array_equal(joined, stride):
        return (f"at step {step} the processes load rows from {step}·B/P = {step * (b // p)} on: "
                f"each step moves on by the global batch, B = {b} rows, so process i starts at "
                f"s·B + i·B/P; {single}")  # fmt: skip
    if all(a.size == b and np.array_equal(a, want) for a in parts):
        return (f"every process loads the whole global batch ({b} rows each): process i must load "
                f"only its B/P = {b // p} rows; {single}")  # fmt: skip
    if all(np.array_equal(a, parts[0]) for a in parts[1:]):
        return (f"every process loads the same rows ({_show_rows(parts[0])}): the process index "
                f"must choose which part of the batch; {single}")  # fmt: skip
    if joined.size == b and np.array_equal(np.sort(joined), np.sort(want)):
        return f"the processes together load the batch's rows, but not in process order; {single}"
    starts = [int(a[0]) for a in parts if a.size]
    runs = len(starts) == p > 1 and all(a.size == b // p and np.array_equal(a, a[0] + np.arange(a.size)) for a in parts)  # fmt: skip
    k = starts[1] - starts[0] if runs else 0
    if runs and k != b // p and starts == [starts[0] + i * k for i in range(p)]:
        named = ", the process count P," if k == p else ""
        return (f"process i's rows start at row {starts[0]} + {k}·i: a step of {k}{named} "
                f"where B/P = {b // p}, the rows each process loads, belongs (process i starts "
                f"at s·B + i·B/P); {single}")  # fmt: skip
    for i in range(p):
        for q in range(i):
            common = np.intersect1d(parts[i], parts[q])
            if common.size:
                return f"processes {q} and {i} both load rows {_show_rows(common)}; {single}"
    return f"{call}: the processes' rows in order are {_show_rows(joined)}; {single}"


# ------------------------------------------------------------ hierarchical_all_reduce


def run_allreduce(rt: Any, fn: Any, ex: Example) -> Trial:
    import jax
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    p, d = ex["hosts"], ex["local"]
    n = p * d * ex["rows"]  # per device: divisible by D (scatter within) and P (the wrong order)
    payload = {"shape": (n, ex["cols"]), "dtype": ex["dtype"]}
    blobs = [r["blob"] for r in _task(rt, ex, "hierarchical_all_reduce", on_process.allreduce_export, payload)]  # fmt: skip
    first = HandedOver.read(blobs[0])  # read once: checked, compiled and run below as read here
    differ = [i for i, b in enumerate(blobs)
              if b != blobs[0] and HandedOver.read(b).text != first.text]  # fmt: skip
    if differ:
        raise StudentReturnError(
            f"the processes traced different programs (process {differ[0]}'s is not process 0's): "
            "run across processes, they would wait for each other for ever",
            hint="Every process must run the same collectives in the same order: look for code "
            "that depends on jax.process_index() (a branch, a loop count, a shape).",
        )  # fmt: skip
    _task(
        rt, ex, "hierarchical_all_reduce", on_process.allreduce_run, payload
    )  # it comes back everywhere
    mesh = _mesh(rt, ex)
    rng = rt.rng()
    data = rng.integers(-8, 9, size=(p * d * n, ex["cols"])).astype(ex["dtype"])
    x = jax.device_put(data, NamedSharding(mesh, P((HOST, LOCAL))))
    flat = rt.compile_and_run(
        jax.shard_map(lambda v: lax.psum(v, (HOST, LOCAL)), mesh=mesh,
                      in_specs=P((HOST, LOCAL)), out_specs=P((HOST, LOCAL))),
        (x,), mesh, ours=True,
    )  # fmt: skip
    trial = rt.run_exported(first, (x,), mesh, xla_psum=flat.comms)
    blocks = data.astype(np.float64).reshape(p, d, n, ex["cols"])
    trial.expected = blocks.sum(axis=(0, 1))
    trial.extra["host_sums"] = blocks.sum(axis=1)
    return trial


def _allreduce_purpose(ex: Example) -> str | None:
    """What each fixed example of hierarchical_all_reduce holds (issue 45 §1)."""
    p, d = ex["hosts"], ex["local"]
    n = p * d * ex["rows"]
    x = n * ex["cols"] * (2 if ex["dtype"] == "bfloat16" else np.dtype(ex["dtype"]).itemsize)
    return (
        f"P = {p} processes of D = {d}, a {ex['dtype']} block of {n} × {ex['cols']} per device: "
        f"each ends with the sum over all {p * d}, 2(P − 1)/P·|x|/D = {optimum(p, d, x):.0f} "
        "bytes crossing processes"
    )


@dataclass(frozen=True)
class SumEverywhere(Check):
    """Every device's block is the sum over all P·D devices."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        want = trial.expected
        for shard in trial.output.addressable_shards:
            got = np.asarray(shard.data, dtype=np.float64)
            if got.shape != want.shape:
                pos = _position(trial.mesh, shard.device)
                msg = f"device {pos} holds a block of shape {got.shape}; the sum's block is {want.shape}"  # fmt: skip
                return CheckResult(self.name, False, msg, hint=_shape_hint(got, want, trial))
            if not np.array_equal(got, want):
                pos = _position(trial.mesh, shard.device)
                msg = f"device {pos} holds a block that is not the sum over all {trial.mesh.size} devices"  # fmt: skip
                return CheckResult(self.name, False, msg, hint=_sum_hint(got, want, trial, pos[0]))
        return CheckResult(self.name, True, f"every device holds the sum over all {trial.mesh.size} devices")  # fmt: skip


def _position(mesh: Any, device: Any) -> tuple[int, int]:
    where = np.argwhere(mesh.devices == device)
    return tuple(int(v) for v in where[0]) if len(where) else (-1, -1)


def _shape_hint(got: np.ndarray, want: np.ndarray, trial: Trial) -> str | None:
    """Measured: the parts stacked on a new leading axis of D (an untiled all-gather)."""
    d = trial.example["local"]
    if got.shape == (d, want.shape[0] // d, *want.shape[1:]) and np.array_equal(got.reshape(want.shape), want):  # fmt: skip
        return (f"The values are the sum, stacked as {d} parts on a new leading axis: "
                "lax.all_gather without tiled=True adds that axis; tiled=True joins the parts "
                "along dimension 0.")  # fmt: skip
    return None


def _sum_hint(got: np.ndarray, want: np.ndarray, trial: Trial, host: int) -> str | None:
    sums = trial.extra.get("host_sums")
    if sums is not None and got.shape == sums[host].shape and np.array_equal(got, sums[host]):
        return ("That is the sum over this host's devices only: the all-reduce across hosts "
                "(over host_axis) is missing.")  # fmt: skip
    p, d = trial.example["hosts"], trial.example["local"]
    scale = float(np.max(np.abs(want))) or 1.0
    causes: dict[int, list[tuple[str, str]]] = {}  # by factor: P = D gives one factor, two causes
    for k, name, cause in (
        (p, "P", "a mean across hosts (lax.pmean over host_axis, or a division by P) where the sum (lax.psum) belongs"),
        (d, "D", "a mean within the host (lax.pmean over local_axis, or a division by D) where the sum belongs"),
        (p * d, "P·D", "a mean over every device where the sum belongs"),
    ):  # fmt: skip
        causes.setdefault(k, []).append((name, cause))
    for k, named in causes.items():
        if k > 1 and np.allclose(got * k, want, rtol=1e-2, atol=1e-2 * scale):
            names = " = ".join(name for name, _ in named)
            return (
                f"Every value is the sum divided by {names} = {k}: "
                + "; or ".join(c for _, c in named)
                + "."
            )
    return None


def cross_process(trial_comms: Any, mesh_shape: tuple[int, int], itemsize: int) -> list[tuple[Any, Any, set[str]]]:  # fmt: skip
    """Each collective that moves data, its groups and the axes they span."""
    n = mesh_shape[0] * mesh_shape[1]
    out = []
    for c in trial_comms.collectives:
        if not c.count or not c.moves_data or c.kind == "collective-permute":
            continue
        groups = parse_groups(c.replica_groups, n)
        out.append((c, groups, spanned_axes(groups, mesh_shape, (HOST, LOCAL))))
    return out


def crossing_bytes(comms: Any, mesh_shape: tuple[int, int], itemsize: int) -> int:
    """Bytes one device sends in collectives whose groups span processes (ring
    model, at the program's own item size)."""
    return sum(c.count * c.elements_each * itemsize
               for c, _, axes in cross_process(comms, mesh_shape, itemsize) if HOST in axes)  # fmt: skip


def _sizes(trial: Trial) -> tuple[int, int, int, int]:
    ex = trial.example
    p, d = ex["hosts"], ex["local"]
    itemsize = np.dtype(ex["dtype"]).itemsize
    n = p * d * ex["rows"]
    return p, d, itemsize, n * ex["cols"] * itemsize


def optimum(p: int, d: int, x: int) -> float:
    """Cross-process bytes per device of the hierarchical all-reduce: 2(P−1)/P·|x|/D."""
    return 2 * (p - 1) / p * x / d


def flat_ring(p: int, d: int, x: int) -> float:
    """Bytes per device of one flat ring over all P·D devices: 2(PD−1)/(PD)·|x|."""
    return 2 * (p * d - 1) / (p * d) * x


@dataclass(frozen=True)
class Hierarchy(Check):
    """From the replica groups: reduce-scatter and all-gather within a process,
    the all-reduce across processes with one device of each."""

    name: str = "groups"

    def __call__(self, trial: Trial) -> CheckResult:
        p, d, itemsize, x = _sizes(trial)
        try:
            found = cross_process(trial.comms, (p, d), itemsize)
        except ValueError as exc:
            return CheckResult(self.name, False, str(exc), hint="Please report it with your JAX version.")  # fmt: skip
        rows = [[c.kind, show_groups(g), ", ".join(sorted(a)) or "—",
                 "crosses processes" if HOST in a else "within a process"] for c, g, a in found]  # fmt: skip
        evidence: tuple[Evidence, ...] = (Table(["collective", "groups", "spans", "where"], rows),)
        kinds = {(c.kind, frozenset(a)) for c, _, a in found}
        flat = [c for c, _, a in found if c.kind == "all-reduce" and a == {HOST, LOCAL}]
        if flat:
            return CheckResult(
                self.name, False,
                f"one all-reduce spans every device ({show_groups(parse_groups(flat[0].replica_groups, p * d))}): "
                f"a flat psum over both axes. Its ring crosses processes with "
                f"2(PD−1)/(PD)·|x| = {flat_ring(p, d, x):.0f} bytes per device, where the hierarchical "
                f"one sends 2(P−1)/P·|x|/D = {optimum(p, d, x):.0f}",
                evidence=evidence,
                hint="Reduce-scatter within the host first (psum_scatter over the local axis), "
                "all-reduce only that 1/D part across hosts, then all-gather within the host.",
            )  # fmt: skip
        if ("all-reduce", frozenset({LOCAL})) in kinds and any(
            k in kinds for k in (("reduce-scatter", frozenset({HOST})), ("all-gather", frozenset({HOST})))
        ):  # fmt: skip
            return CheckResult(
                self.name, False,
                "the all-reduce runs within each process and the reduce-scatter/all-gather across "
                "processes: the wrong order — the whole |x| crosses processes instead of |x|/D",
                evidence=evidence,
                hint="Scatter within the host (local axis), all-reduce across (host axis), gather within.",
            )  # fmt: skip
        for c, g, a in found:
            if c.kind in ("reduce-scatter", "all-gather") and HOST in a:
                return CheckResult(self.name, False, f"a {c.kind} groups devices {show_groups(g)}, which spans processes; it must stay within one", evidence=evidence)  # fmt: skip
            if c.kind == "all-reduce" and (LOCAL in a or len(g[0]) != p):
                return CheckResult(self.name, False, f"the all-reduce groups devices {show_groups(g)}; across processes it must take one device of each ({p} per group)", evidence=evidence)  # fmt: skip
        need = {("reduce-scatter", frozenset({LOCAL})), ("all-reduce", frozenset({HOST})),
                ("all-gather", frozenset({LOCAL}))}  # fmt: skip
        if d == 1:
            need = {("all-reduce", frozenset({HOST}))}
        missing = sorted(k for k, _ in need - kinds)
        if missing:
            return CheckResult(self.name, False,
                               f"no {' or '.join(missing)} with the groups of the three steps; found: "
                               + ("; ".join(f"{r[0]} over {r[2]}" for r in rows) or "no collective"),
                               evidence=evidence)  # fmt: skip
        return CheckResult(self.name, True,
                           "reduce-scatter and all-gather stay within each process; the all-reduce "
                           f"takes one device of each of the {p} processes", evidence=evidence)  # fmt: skip


@dataclass(frozen=True)
class CrossBytes(Check):
    """Bytes that cross processes, per device: at most 2(P−1)/P·|x|/D."""

    name: str = "bytes"

    def __call__(self, trial: Trial) -> CheckResult:
        p, d, itemsize, x = _sizes(trial)
        try:
            got = crossing_bytes(trial.comms, (p, d), itemsize)
            xla = crossing_bytes(trial.extra["xla_psum"], (p, d), itemsize)
        except ValueError as exc:
            return CheckResult(self.name, False, str(exc))
        best, ring = optimum(p, d, x), flat_ring(p, d, x)
        table = Table(
            ["program", "bytes per device across processes"],
            [["yours", f"{got}"], ["hierarchical optimum 2(P−1)/P·|x|/D", f"{best:.0f}"],
             ["flat ring 2(PD−1)/(PD)·|x|", f"{ring:.0f}"], ["XLA's psum over both axes", f"{xla}"]],
        )  # fmt: skip
        if got > best * (1 + 1e-9):
            return CheckResult(self.name, False,
                               f"{got} bytes per device cross processes; the hierarchical all-reduce sends "
                               f"2(P−1)/P·|x|/D = {best:.0f} (|x| = {x} bytes, P = {p}, D = {d})",
                               evidence=(table,))  # fmt: skip
        return CheckResult(self.name, True,
                           f"{got} bytes per device cross processes = 2(P−1)/P·|x|/D; a flat ring "
                           f"sends {ring:.0f}, XLA's psum over both axes {xla}", evidence=(table,))  # fmt: skip


# ------------------------------------------------------------ multihost_train_step

LR = 0.1


def run_train(rt: Any, fn: Any, ex: Example) -> Trial:
    p, d = ex["hosts"], ex["local"]
    rng = rt.rng()
    params = training.draw_params(rng, ex["layers"], ex["d"], ex["f"])
    x, y = training.draw_batch(rng, p * d * ex["rows"], ex["d"])
    payloads = [{"params": params, "x": xs, "y": ys, "lr": LR, "export": i == 0}
                for i, (xs, ys) in enumerate(zip(np.split(x, p), np.split(y, p)))]  # fmt: skip
    # a first call, not measured: what any first call makes (compiled programs, the
    # collectives' connections) is made, as it is when the grader replays them
    from grader import phases  # where the step's time goes (benchmarks/grading_phases.py)

    with phases.phase("lesson 13 step: first call"):
        _task(rt, ex, "multihost_train_step", on_process.train,
              [{**q, "export": False} for q in payloads])  # fmt: skip
    with phases.phase("lesson 13 step: measured call"):
        said = _task(rt, ex, "multihost_train_step", on_process.train, payloads, measure=True)
    cluster = _cluster(rt, ex)
    measured = cluster.traffic
    with phases.phase("lesson 13 step: its programs measured alone"):
        shown = cluster.measure_alone(on_process.replay, [{"blob": b} for b in said[0].get("programs", [])[: on_process.MAX_PROGRAMS]])  # fmt: skip
    want, loss = training.sgd_step(params, x, y, LR)
    sizes = training.Sizes(ex["layers"], p * d * ex["rows"], ex["d"], ex["f"])
    extra = {"tol": training.tolerance(sizes), "params": params}
    with phases.phase("lesson 13 step: its programs replayed here"):
        extra["replayed"] = _replay_steps(rt, ex, said[0], params, rng)
    extra["traffic"] = None if measured is None or shown is None else {**measured, "shown": shown}
    return Trial(ex, output=said, expected=(want, loss), extra=extra)


def _replay_steps(rt: Any, ex: Example, said: dict, params: dict, rng: Any) -> dict:
    """The programs process 0 says its step ran on global arrays, each replayed
    here on the worker's own P·D devices: on the grader's own params and a fresh
    batch the student's processes never saw when its inputs map to (params, x,
    y), else on inputs drawn from its avals; and their collectives read. Its
    outputs are held to the step (``mapped``) only for the call whose outputs
    the step returned, as that process tells."""
    p, d = ex["hosts"], ex["local"]
    x, y = training.draw_batch(rng, p * d * ex["rows"], ex["d"])
    mesh = _mesh(rt, ex)
    runs = []
    for blob in said.get("programs", [])[: on_process.MAX_PROGRAMS]:
        program = HandedOver.read(blob)  # read once: its inputs below, then replayed
        args, mapped = _replay_inputs(program.exported, mesh, (params, x, y), rng)
        trial = rt.run_exported(program, args, mesh)
        crossing = [(c, g) for c, g, a in cross_process(trial.comms, (p, d), 4) if HOST in a]
        # this call's outputs are what the step returned: its values are the step's
        returned = said.get("returned_by") == len(runs)
        runs.append({"trial": trial, "mapped": mapped and returned, "crossing": crossing})
    ref = training.sgd_step(params, x, y, LR) if runs else None
    return {"runs": runs, "calls": said.get("calls", 0), "notes": said.get("notes", []), "reference": ref}  # fmt: skip


def _replay_inputs(exported: Any, mesh: Any, ours: tuple, rng: Any) -> tuple[tuple, bool]:
    """The program's inputs on the worker's mesh, at the shardings it was exported
    with: ours (params, x, y) when its inputs are exactly those, else drawn."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    shardings = [s if s is not None else NamedSharding(mesh, P())
                 for s in exported.in_shardings_jax(mesh)]  # fmt: skip
    avals = exported.in_avals
    mapped = exported.in_tree == jax.tree.structure((ours, {})) and all(
        (tuple(a.shape), np.dtype(a.dtype)) == (v.shape, v.dtype)
        for a, v in zip(avals, jax.tree.leaves(ours))
    )
    if mapped:
        leaves = jax.tree.leaves(ours)
    else:
        leaves = [rng.standard_normal(a.shape).astype(a.dtype)
                  if np.issubdtype(np.dtype(a.dtype), np.floating) else np.zeros(a.shape, a.dtype)
                  for a in avals]  # fmt: skip
    placed = [jax.device_put(v, s) for v, s in zip(leaves, shardings)]
    args, kwargs = jax.tree.unflatten(exported.in_tree, placed)
    if kwargs:
        raise GraderFault("a recorded program takes keyword arguments")
    return tuple(args), mapped


def _replicated(leaf: dict, shape: tuple[int, ...]) -> list[np.ndarray] | str:
    if leaf.get("type") != "Array":
        return f"a {leaf.get('type')}, not a jax.Array"
    if tuple(leaf["shape"]) != tuple(shape):
        return f"shape {tuple(leaf['shape'])}, not {tuple(shape)}"
    out = []
    for dev, idx, arr in leaf["shards"]:
        if _box(tuple(idx), tuple(shape)) != tuple((0, n) for n in shape):
            return f"a shard on device {dev} that holds only {_show_box(_box(tuple(idx), tuple(shape)))}: not replicated"  # fmt: skip
        out.append(np.asarray(arr))
    if sorted(dev for dev, _, _ in leaf["shards"]) != sorted(leaf["local_devices"]):
        return "no copy on some of the process's devices"
    return out


@dataclass(frozen=True)
class SameEverywhere(Check):
    """Every device of every process holds the same params and loss."""

    name: str = "same everywhere"

    def __call__(self, trial: Trial) -> CheckResult:
        return _once(self, trial, self._measure)

    def _measure(self, trial: Trial) -> CheckResult:
        want, _ = trial.expected
        first: dict[str, np.ndarray] = {}
        for i, got in enumerate(trial.output):
            if "returned" in got:
                return CheckResult(self.name, False, f"in process {i} it returned {got['returned']}; expected (params, loss)")  # fmt: skip
            if sorted(got["params"]) != sorted(want):
                return CheckResult(self.name, False, f"in process {i} params have keys {sorted(got['params'])}; expected {sorted(want)}")  # fmt: skip
        leaves = [(i, k, v) for i, got in enumerate(trial.output) for k, v in got["params"].items()]
        leaves += [(i, "loss", got["loss"]) for i, got in enumerate(trial.output)]  # params first
        for i, key, leaf in leaves:
            shape = () if key == "loss" else want[key].shape
            copies = _replicated(leaf, shape)
            if isinstance(copies, str):
                return CheckResult(self.name, False, f"process {i} returned {key} as {copies}",
                                   hint="Return params and loss replicated: out_specs P().")  # fmt: skip
            for c in copies:
                ref = first.setdefault(key, c)
                if not np.array_equal(c, ref) and key == "loss":  # every params leaf agreed
                    return CheckResult(
                        self.name, False,
                        f"process {i} holds another loss than process 0's first device, while "
                        "the params agree everywhere: the loss returned is each device's own",
                        hint="The params are reduced, the loss is not: return the mean of the "
                        "devices' losses, lax.pmean(loss, ('host', 'local')).",
                    )  # fmt: skip
                if not np.array_equal(c, ref):
                    return CheckResult(
                        self.name, False,
                        f"process {i} holds other {key} than process 0: the processes did not end the step alike",
                        hint="Each process's gradient must be reduced across hosts too: the "
                        "all-reduce over the host axis makes it the global batch's gradient everywhere.",
                    )  # fmt: skip
        return CheckResult(self.name, True, "every device of every process holds the same params and loss")  # fmt: skip


@dataclass(frozen=True)
class StepValues(Check):
    """Params and loss equal the float64 reference step on the global batch."""

    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        return _once(self, trial, self._measure)

    def _measure(self, trial: Trial) -> CheckResult:
        want, loss = trial.expected
        tol = trial.extra["tol"]
        got = trial.output[0]
        for key, ref in [*want.items(), ("loss", np.asarray(loss))]:
            leaf = got["loss"] if key == "loss" else got["params"][key]
            copies = _replicated(leaf, np.shape(ref))
            if isinstance(copies, str):
                return CheckResult(self.name, False, f"{key}: {copies}")
            value = np.asarray(copies[0], np.float64)
            scale = max(float(np.max(np.abs(ref))), 1e-30)
            err = float(np.max(np.abs(value - ref)))
            if err > tol * scale:
                return CheckResult(
                    self.name, False,
                    f"{key} differs from the single-process step on the global batch by {err:.3g} "
                    f"(allowed {tol * scale:.3g})",
                    hint=_train_hint(key, value, ref, trial),
                )  # fmt: skip
        return CheckResult(self.name, True, "params and loss equal the single-process step on the global batch")  # fmt: skip


LOSS_ALLOWANCE = 8
"""Cross-process bytes per device allowed beyond the gradient's optimum: the
loss's all-reduce, one float32 scalar (a flat ring sends ⌈2(PD−1)/(PD)⌉ ≤ 2 elements)."""


PAD_ELEMENTS = 64
"""Padding allowed per device: the flat gradient may be padded to a multiple of
64·D elements before it is scattered (Horovod pads its fusion buffer so; the
solution pads to a multiple of D), so each device's part is ⌈n/(64·D)⌉·64
elements at most. Bounded by the nearest mistake, the whole gradient all-reduced
across hosts without the scatter, 2(P−1)/P·|g|: on every example the step
draws (:data:`TRAIN_D`, :data:`TRAIN_F`) that mistake sends at least 1.9 times the
allowance (D = 2 bounds it: without padding the ratio is D), and a flat ring
2(PD−1)/(PD)·|g| at least 2.2 times (P = 4, D = 2). Horovod's form of the step
(260 bytes per device for a 512-byte gradient on 2×4, where the unpadded figure
is 136) passes."""


def grad_budget(p: int, d: int, n: int) -> int:
    """Cross-process bytes per device allowed for the hierarchical all-reduce of
    ``n`` float32 gradient elements: 2(P−1)/P·(part)·4 with each device's part
    padded to a multiple of :data:`PAD_ELEMENTS`, plus the loss's all-reduce."""
    part = -(-n // (PAD_ELEMENTS * d)) * PAD_ELEMENTS
    return int(np.ceil(2 * (p - 1) / p * part)) * 4 + LOSS_ALLOWANCE


@dataclass(frozen=True)
class HierarchicalStep(Check):
    """The step's gradient all-reduce is hierarchical: bytes crossing processes
    per device at most 2(P−1)/P·|g|/D (:func:`grad_budget`).

    Read from the programs the step ran on global arrays, as process 0 exported
    them while it ran (:mod:`on_process`, ``_Recorder``) and the worker replays
    on its own P·D devices: their collectives, replica groups and bytes come from
    the worker's compile, never from the student's process. That a program is
    what ran is the student's process's word; so where its inputs map to (params,
    x, y) it is run on the grader's own params and a fresh batch and its outputs
    held to the float64 reference step too, and where they do not, only its
    collectives are read (also when it is not the call whose outputs the step
    returned). A step that ran no program on global arrays fails.
    What this cannot see: a program called beside the step only to be read (a
    decoy, on other inputs) while the real reduction runs eagerly; the
    eager-run checks still hold the step's values, not its bytes."""

    name: str = "hierarchical"

    def __call__(self, trial: Trial) -> CheckResult:
        ex, rep = trial.example, trial.extra["replayed"]
        p, d = ex["hosts"], ex["local"]
        n = sum(int(v.size) for v in trial.extra["params"].values())
        g = 4 * n
        best, ring, budget = optimum(p, d, g), flat_ring(p, d, g), grad_budget(p, d, n)
        figures = (f"|g| = {g} bytes, P = {p}, D = {d}: the hierarchical all-reduce sends "
                   f"2(P−1)/P·|g|/D = {best:.0f} bytes per device across processes, a flat one "
                   f"2(PD−1)/(PD)·|g| = {ring:.0f}")  # fmt: skip
        if not rep["runs"]:
            said = "; ".join(rep["notes"][:2])
            return CheckResult(
                self.name, False,
                f"the step ran no jitted program on global arrays that the grader could read "
                f"({rep['calls']} call{'s' if rep['calls'] != 1 else ''} of a jitted function with a "
                f"global array{'; not exportable: ' + said if said else ''}), so its gradient "
                f"all-reduce cannot be measured; {figures}",
                hint="Build the global arrays, then run the whole step as one jax.jit-ed shard_map "
                "over the mesh: its collectives are what the grader measures.",
            )  # fmt: skip
        rows, got, flat = [], 0, None
        for k, run in enumerate(rep["runs"]):
            for c, groups in run["crossing"]:
                sent = c.count * c.elements_each * 4
                got += sent
                spans = len(groups[0]) == p * d
                if spans and c.kind == "all-reduce" and c.operand_elements > 1 and flat is None:
                    flat = (c, groups)
                rows.append(
                    [str(k), c.kind, show_groups(groups), str(c.operand_elements), str(sent)]
                )
        evidence: tuple[Evidence, ...] = (
            Table(["program", "collective across processes", "groups", "elements", "bytes per device"], rows),
        )  # fmt: skip
        if not rows:
            return CheckResult(
                self.name, False,
                f"the {len(rep['runs'])} program(s) the step ran on global arrays move nothing "
                f"across processes: the gradient all-reduce across hosts is not in them; {figures}",
            )  # fmt: skip
        if _own_values_right(trial):  # else the values check says what is wrong, not this one
            for run in rep["runs"]:
                bad = _replayed_values(run, rep["reference"], trial.extra["tol"])
                if bad:
                    return CheckResult(
                        self.name, False,
                        f"the program the step handed back, run here on the grader's params and a "
                        f"fresh batch: {bad}, while the step's own result on its batch was right: "
                        "it is not the step that ran, or it is right only on the batch it saw",
                    )  # fmt: skip
        allowed = (f"allowed {budget}: each device's part padded to a multiple of {PAD_ELEMENTS} "
                   "elements, and the loss's all-reduce")  # fmt: skip
        if got > budget and flat and _double_sum(rep, p, d, n):
            return CheckResult(
                self.name, False,
                f"the gradient is summed twice: an all-reduce over every device "
                f"({show_groups(flat[1])}, {flat[0].operand_elements} elements) and a hierarchical "
                f"one across hosts; {got} bytes per device cross processes; {figures} ({allowed})",
                evidence=evidence, hint=DOUBLE_SUM_HINT,
            )  # fmt: skip
        if got > budget:
            what = (f"the gradient all-reduce spans every device ({show_groups(flat[1])}): a flat psum "
                    "over both axes. " if flat else "")  # fmt: skip
            return CheckResult(
                self.name, False,
                f"{what}{got} bytes per device cross processes; {figures} ({allowed})",
                evidence=evidence,
                hint="Reduce the gradients with the hierarchical all-reduce: reduce-scatter within "
                "the host (local axis), all-reduce that 1/D part across hosts, all-gather within.",
            )  # fmt: skip
        mapped = all(r["mapped"] for r in rep["runs"])
        return CheckResult(
            self.name, True,
            f"{got} bytes per device cross processes, within the {budget} allowed: "
            f"2(P−1)/P·|g|/D = {best:.0f} (each part padded to at most a multiple of "
            f"{PAD_ELEMENTS} elements) and the loss's all-reduce; a flat all-reduce sends {ring:.0f}"
            + ("" if mapped else " (the program's inputs are not (params, x, y): only its collectives were read)"),
            evidence=evidence,
        )  # fmt: skip


DOUBLE_SUM_HINT = (
    "Params that enter jax.grad inside shard_map unchanged are the same on every device "
    "(invariant), and autodiff already sums their gradient over every device (the transpose "
    "of their implicit cast to varying is a psum): your hierarchical all-reduce then sums it "
    "again. Cast the params first, lax.pcast(params, ('host', 'local'), to='varying'), so "
    "each device's gradient stays its own until your all-reduce."
)


def _flat_elements(rep: dict, p: int, d: int) -> int:
    """Elements all-reduced over every device (scalars such as the loss left out)."""
    return sum(c.operand_elements * c.count for run in rep["runs"] for c, groups in run["crossing"]
               if c.kind == "all-reduce" and c.operand_elements > 1 and len(groups[0]) == p * d)  # fmt: skip


def _double_sum(rep: dict, p: int, d: int, n: int) -> bool:
    """Measured: the step's programs all-reduce at least the whole gradient (n
    elements) over every device *and* all-reduce across hosts with one device of
    each process (the hierarchical step's middle): the gradient summed twice."""
    across = any(c.kind == "all-reduce" and c.operand_elements > 1 and len(groups[0]) == p
                 for run in rep["runs"] for c, groups in run["crossing"])  # fmt: skip
    return across and _flat_elements(rep, p, d) >= n


def _once(check: Check, trial: Trial, measure: Any) -> CheckResult:
    """``measure(trial)``, the verdict of ``check``, computed once per trial: kept in
    ``trial.extra`` (under ``VERDICTS``), for :func:`_own_values_right` to read
    what the values checks, run before it, found."""
    kept = trial.extra.setdefault(VERDICTS, {})
    key = type(check).__name__
    if key not in kept:
        kept[key] = measure(trial)
    return kept[key]


VERDICTS = "verdicts"
"""``trial.extra``'s entry holding the values checks' verdicts (:func:`_once`)."""


def _own_values_right(trial: Trial) -> bool:
    """Whether the params and loss the step returned equal the reference: the
    verdicts of the values checks (:class:`SameEverywhere`, :class:`StepValues`),
    as they found them (run before :class:`HierarchicalStep`: computed once);
    False when they cannot be read."""
    try:
        return SameEverywhere()(trial).passed and StepValues()(trial).passed
    except (KeyError, TypeError, ValueError, IndexError):
        return False


def _replayed_values(run: dict, reference: Any, tol: float) -> str | None:
    """None when the replayed program's outputs are the reference step (or its
    inputs or outputs are not those of the step, so nothing can be compared)."""
    import jax

    if not run["mapped"]:
        return None
    want, loss = reference
    out = run["trial"].output
    if not (isinstance(out, tuple | list) and len(out) == 2 and isinstance(out[0], dict)
            and sorted(out[0]) == sorted(want)):  # fmt: skip
        return None
    for key, ref in [*want.items(), ("loss", np.asarray(loss))]:
        value = out[1] if key == "loss" else out[0][key]
        if not isinstance(value, jax.Array) or tuple(value.shape) != np.shape(ref):
            return f"{key} comes back as {type(value).__name__} of shape {np.shape(value)}"
        got = np.asarray(value, np.float64)  # the worker's own devices: fully addressable here
        scale = max(float(np.max(np.abs(ref))), 1e-30)
        if float(np.max(np.abs(got - ref))) > tol * scale:
            return f"its {key} differs from the single-process step on the same batch"
    return None


def _train_hint(key: str, value: np.ndarray, ref: np.ndarray, trial: Trial) -> str | None:
    """A hint only when the measured error is a known factor: the student's update
    (or loss) exactly P·D, D or P times the reference's, or that many times too
    small; otherwise None (the message says what was measured)."""
    p, d = int(trial.example["hosts"]), int(trial.example["local"])
    floor = 0.0
    if key == "loss":
        got, want = np.asarray(value, np.float64), np.asarray(ref, np.float64)
        what = "loss"
    else:
        start = np.asarray(trial.extra["params"][key], np.float64)
        got, want = start - value, start - ref  # the updates: lr·g
        what = f"update of {key}"
        # an update read as a difference of float32 params is known to a few of their ulps
        # (a small update of a large weight loses its digits): that much is no evidence
        floor = 8 * 2.0**-23 * float(np.max(np.abs(start)))
    if not np.any(want) or floor > 0.1 * float(np.max(np.abs(want))):
        return None  # (an update lost in the params' rounding tells no factor)
    replayed = trial.extra.get("replayed") or {"runs": []}
    n = sum(int(np.size(v)) for v in trial.extra["params"].values())
    atol = max(1e-9 * float(np.max(np.abs(want))), floor)
    if key != "loss" and p * d > 1 and np.allclose(got, p * d * want, rtol=1e-3, atol=atol):
        times = f"Your {what} is exactly P·D = {p * d} times the single-process step's"
        if _double_sum(replayed, p, d, n):
            return (f"{times}, and the step's program sums the gradient twice (measured: an "
                    "all-reduce of the whole gradient over every device, then one across hosts). "
                    + DOUBLE_SUM_HINT)  # fmt: skip
        if not replayed["runs"] or _flat_elements(replayed, p, d) >= n:
            # a flat all-reduce of the gradient: autodiff's (params left invariant) or one by
            # hand; the programs cannot tell which, nor whether a division follows
            return (f"{times}. One of these: the devices' summed gradients are not divided by "
                    f"P·D = {p * d} (the mean over all B rows needs it); or the gradient is summed "
                    f"twice. {DOUBLE_SUM_HINT}")  # fmt: skip
    named = {p * d: ("P·D", "both axes"), d: ("D", "'local'"), p: ("P", "'host'")}
    if p == d:  # one factor, and a mean over either axis gives it
        named[p] = ("P", "'host' or 'local'")
    for k, (name, axis) in named.items():
        for factor, times in ((k, f"{name} = {k} times the single-process step's"),
                              (1 / k, f"1/{name} = 1/{k} of the single-process step's")):  # fmt: skip
            if k > 1 and np.allclose(got, factor * want, rtol=1e-3, atol=atol):
                small = "" if factor > 1 or key == "loss" else (
                    f" Yours is divided by {name} = {k} once more than that (a mean over {axis} "
                    "where the sum belongs, before the division by P·D, does this).")  # fmt: skip
                return (f"Your {what} is exactly {times}. The mean over all B rows divides the "
                        f"devices' summed {'losses' if key == 'loss' else 'gradients'} by every "
                        f"device, P·D = {p * d}.{small}")  # fmt: skip
    return None


# ------------------------------------------------------------ measured between processes

EXCHANGE_MARGIN = 1024
"""Payload bytes between processes a call may move beyond what it must, as the
kernel counts them on the cluster's own loopback (``Cluster.traffic``), plus
:data:`HEARTBEAT` per process. Honest calls vary by the coordination service's
own messages that fall inside the call: measured, the solution's step at P = 3,
D = 2 (d = 16, f = 64) moved 39696, 40420, 41144 or 42600 bytes, steps of about
724 bytes, its programs alone the same set. The nearest exchange it must catch
does not fit: one process_allgather of the smallest example's rows (P = 3,
D = 2, one row per device) moves 7680 bytes over gloo, its framing included;
a flat psum hidden behind a decoy, 20 KB more than the decoy alone."""
HEARTBEAT = 1024
"""Bytes allowed per process for the coordination service's messages in a call
(one exchange measured 724–728 bytes)."""


def exchange_margin(processes: int) -> int:
    """What a call may move beyond what it must (see :data:`EXCHANGE_MARGIN`)."""
    return EXCHANGE_MARGIN + HEARTBEAT * processes


@dataclass(frozen=True)
class RowsStay(Check):
    """Nothing crosses between processes while the global batch is built: each
    process's rows stay on its own devices (measured, ``Cluster.traffic``)."""

    name: str = "rows stay"

    def __call__(self, trial: Trial) -> CheckResult:
        traffic = trial.extra.get("traffic")
        if traffic is None:
            return CheckResult(self.name, True, "not measured: the sandbox is off here (no network of the cluster's own)")  # fmt: skip
        got = int(traffic["crossing"])
        if got > exchange_margin(trial.example["hosts"]):
            return CheckResult(
                self.name, False,
                f"{got} bytes crossed between the processes while global_batch ran (measured on "
                f"the cluster's network): rows were sent to other processes; building the global "
                f"array from each process's own rows moves none",
            )  # fmt: skip
        return CheckResult(self.name, True, f"{got} bytes crossed between the processes: each kept its own rows")  # fmt: skip


@dataclass(frozen=True)
class MeasuredStep(Check):
    """What crossed between the processes during the step is what its programs move.

    The kernel counts the bytes on the cluster's own loopback between two different
    processes during the step's call (after a first call, so connections and
    compiled programs exist already); the programs the step ran on global arrays
    (as process 0 recorded them) are run again, twice, in the grader's own cluster
    of the same shape — processes in a sandbox of their own that never import the
    student's module — and the second run measured. More crossed during the call
    than those programs move, beyond :func:`exchange_margin`: something else sent
    bytes between processes (a jitted function made where the recorder does not
    see it, beside a program that does not reduce the gradient; process_allgather
    of rows). And the programs' own collectives across processes (the worker's
    compile) must carry the gradient: at least half of 2(P−1)/P·|g|/D per device
    (half: the smallest a gradient sent in bfloat16 would carry; a 4-byte psum
    beside rows exchanged another way carries nothing of it)."""

    name: str = "measured"

    def __call__(self, trial: Trial) -> CheckResult:
        ex, rep, traffic = trial.example, trial.extra["replayed"], trial.extra.get("traffic")
        p, d = ex["hosts"], ex["local"]
        n = sum(int(v.size) for v in trial.extra["params"].values())
        least = optimum(p, d, 4 * n) / 2
        carried = sum(
            c.count * c.elements_each * 4 for run in rep["runs"] for c, _ in run["crossing"]
        )
        if rep["runs"] and carried < least:
            return CheckResult(
                self.name, False,
                f"the programs the step ran on global arrays move {carried} bytes per device across "
                f"processes; the gradient's all-reduce across hosts moves 2(P−1)/P·|g|/D = "
                f"{2 * least:.0f} (|g| = {4 * n} bytes, P = {p}, D = {d}): the gradient is not "
                f"reduced across processes in them",
            )  # fmt: skip
        if traffic is None:
            return CheckResult(self.name, True, "not measured: the sandbox is off here (no network of the cluster's own)")  # fmt: skip
        got, shown = int(traffic["crossing"]), [int(v) for v in traffic["shown"]]
        rows = [[f"program {k}, run alone", str(v)] for k, v in enumerate(shown)]
        rows.append(["the step's call", str(got)])
        evidence: tuple[Evidence, ...] = (Table(["measured between processes", "bytes"], rows),)
        extra = got - sum(shown)
        if extra > exchange_margin(p):
            unseen = rep["calls"] - len(shown)
            return CheckResult(
                self.name, False,
                f"{got} bytes crossed between the processes during the step (measured on the "
                f"cluster's network); the {len(shown)} program(s) it ran on global arrays move "
                f"{sum(shown)} when the grader runs them alone: {extra} bytes crossed by other "
                f"means — a program the grader was not shown (a jitted function made where "
                f"the step's calls are not seen), process_allgather, or rows sent another way"
                + (f" ({unseen} call(s) of a jitted function with a global array not exported)" if unseen > 0 else ""),
                evidence=evidence,
            )  # fmt: skip
        return CheckResult(
            self.name, True,
            f"{got} bytes crossed between the processes during the step: what its program(s) move run alone ({sum(shown)})",
            evidence=evidence,
        )  # fmt: skip


# ------------------------------------------------------------ allreduce_time


GB = 10**9


ALLREDUCE_TIME_PURPOSE = {
    (16, 8, "yes"): "14 GB over 16 hosts of 8 chips, hierarchical: a ring within each host over "
    "ici, then each chip's 1/8 all-reduced across the 16 hosts over dcn",
    (16, 8, "no"): "the same 14 GB over 16 × 8 chips in one flat ring of 128: the ring crosses "
    "hosts, so it runs at dcn's 50 GB/s",
    (1, 8, "no"): "one host of 8 chips, flat: the ring never leaves the host, so it runs at ici's "
    "450 GB/s",
    (4, 1, "yes"): "4 hosts of one chip each, hierarchical: nothing to reduce within a host, the "
    "whole 100 MB is all-reduced across the 4 hosts over dcn's 25 GB/s",
}
"""What each fixed example of allreduce_time holds, by (hosts, local, hierarchical)."""


ALLREDUCE_TIME = Scalar(
    "allreduce_time", float,
    lambda ctx: st.fixed_dictionaries({
        "nbytes": st.sampled_from([2**20, 10**8, 2 * 7 * 10**9]), "hosts": st.integers(1, 64),
        "local": st.sampled_from([1, 2, 4, 8]), "ici": st.sampled_from([450 * GB, 45 * GB]),
        "dcn": st.sampled_from([50 * GB, 25 * GB, 6 * GB]), "hierarchical": st.sampled_from(["yes", "no"]),
    }),
    explicit=(
        {"nbytes": 14 * GB, "hosts": 16, "local": 8, "ici": 450 * GB, "dcn": 50 * GB, "hierarchical": "yes"},
        {"nbytes": 14 * GB, "hosts": 16, "local": 8, "ici": 450 * GB, "dcn": 50 * GB, "hierarchical": "no"},
        {"nbytes": 10**8, "hosts": 1, "local": 8, "ici": 450 * GB, "dcn": 50 * GB, "hierarchical": "no"},
        {"nbytes": 10**8, "hosts": 4, "local": 1, "ici": 450 * GB, "dcn": 25 * GB, "hierarchical": "yes"},
    ),
    answer=F.fn("ring_time"),
    args=lambda nbytes, hosts, local, ici, dcn, hierarchical: (nbytes, hosts, local, ici, dcn, hierarchical == "yes"),  # fmt: skip
    call=lambda nbytes, hosts, local, ici, dcn, hierarchical: (
        f"allreduce_time({nbytes}, {hosts}, {local}, ici={ici:g}, dcn={dcn:g}, hierarchical={hierarchical == 'yes'})"),  # fmt: skip
    formula=lambda nbytes, hosts, local, ici, dcn, hierarchical: (
        "2(L−1)/L·n/ici + 2(H−1)/H·(n/L)/dcn" if hierarchical == "yes" else "2(N−1)/N·n/(dcn, or ici on one host)"),  # fmt: skip
    suspects=lambda nbytes, hosts, local, ici, dcn, hierarchical: F.time_suspects(
        nbytes, hosts, local, ici, dcn, hierarchical == "yes"),
    terms=F.fn("time_terms"),
    quantities=F.fn("time_quantities"),
    max_examples=12,
    purpose=lambda ex: ALLREDUCE_TIME_PURPOSE.get((ex["hosts"], ex["local"], ex["hierarchical"])),
)  # fmt: skip


# ------------------------------------------------------------ the lesson


def _explicit_clusters(**fields: Any) -> list[Example]:
    return [{"hosts": p, "local": d, **fields} for p, d in EXPLICIT_CLUSTERS]


TRAIN_D, TRAIN_F = (16, 17), (64, 65)
"""The course model's widths for the step: n = 2·L·d·f params, at least 2048 =
512·D for every cluster, so the padding allowed (:data:`PAD_ELEMENTS`) is at most
an eighth of a device's part; and odd d·f draws a count that D = 4 does not
divide (a flat gradient reshaped to [D, −1] without padding fails)."""
TRAIN_EXPLICIT = [
    {"hosts": 2, "local": 4, "layers": 1, "rows": 2, "d": 17, "f": 65},  # 2210 params: 4 ∤ 2210
    {"hosts": 3, "local": 2, "layers": 1, "rows": 2, "d": 16, "f": 64},
]
TRAIN_PURPOSE = {
    (2, 4): "P = 2 processes of D = 4, d = 17, f = 65: 2210 gradient elements, which D = 4 does "
    "not divide; params come back the same on every device",
    (3, 2): "P = 3 processes of D = 2, 2048 gradient elements: each process feeds its own rows; "
    "params match one step on the global batch, the same on every device",
}
"""What each example of :data:`TRAIN_EXPLICIT` holds, by cluster (issue 45 §1)."""


def _error_hint(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    text = str(exc)
    if (
        "non-addressable" in text
        or "spans non-addressable" in text
        or "not fully addressable" in text
    ):
        return ("Your code read a global array whole (jax.device_get, np.asarray, print or "
                ".item() of it) in one process: a process can read only its own shards "
                "(x.addressable_shards), or gather on purpose with "
                "jax.experimental.multihost_utils.process_allgather.")  # fmt: skip
    if "passed to device_put is not the same on each process" in text:
        return ("jax.device_put takes the whole global value, the same in every process; each "
                "process passed only its own local rows, so the processes disagree. Build the "
                "global array from each process's rows with jax.make_array_from_process_local_data"
                "(NamedSharding(mesh, P(('host', 'local'))), local_rows).")  # fmt: skip
    if "traced different programs" in text:
        return ("Every process must trace the same program: look for code inside the step that "
                "depends on jax.process_index() (a branch, a loop count, a shape).")  # fmt: skip
    return _reshape_hint(text, ex)


def _reshape_hint(text: str, ex: Example) -> str | None:
    """A reshape of n elements into D rows (or columns) where D, the devices per
    host, does not divide n: the gradient flattened for the hierarchical
    all-reduce without padding (examples draw parameter counts D does not divide)."""
    import re

    found = re.search(
        r"cannot reshape array of shape \((\d+),\) \(size \d+\) into shape \(([-\d, ]+)\)", text
    )
    d = ex.get("local")
    if not found or not d:
        return None
    n = int(found.group(1))
    target = [int(v) for v in found.group(2).replace(" ", "").split(",") if v]
    if n % d == 0 or d not in (target[0], target[-1]):
        return None
    return (f"The flat vector has {n} elements and D = {d} (devices per host) does not divide "
            f"{n}, so it cannot be reshaped into {d} equal parts. Pad it to a multiple of D "
            f"first (jnp.pad with (-n) % D zeros), reduce, and drop the padding afterwards.")  # fmt: skip


SPEC = LessonSpec(
    exercises=[
        ExerciseSpec(
            name="host_local_slices",
            strategy=lambda ctx: _cluster_dict(
                ctx,
                rows=st.integers(1, 2),
                cols=st.integers(1, 2),
                spec=st.sampled_from(sorted(SPECS)),
            ),  # fmt: skip
            explicit=lambda ctx: _fitting(
                ctx,
                [
                    {"hosts": 2, "local": 4, "rows": 1, "cols": 1, "spec": "rows"},
                    {"hosts": 3, "local": 2, "rows": 1, "cols": 2, "spec": "grid"},
                    {"hosts": 2, "local": 4, "rows": 1, "cols": 1, "spec": "interleaved"},
                    {"hosts": 3, "local": 2, "rows": 2, "cols": 1, "spec": "swapped"},
                ],
            ),
            run=run_slices,
            cluster=clusters_of,
            tasks=(on_process.slices,),
            checks=(Blocks(),),
            max_examples=4,
            diagnose_error=_error_hint,
            purpose=lambda ex: SLICES_PURPOSE.get(ex["spec"]),
        ),
        ExerciseSpec(
            name="global_batch",
            strategy=lambda ctx: _cluster_dict(
                ctx,
                rows=st.integers(1, 3),
                cols=st.integers(1, 5),
                dtype=st.sampled_from(["float32", "int32"]),
            ),  # fmt: skip
            explicit=lambda ctx: _fitting(ctx, _explicit_clusters(rows=2, cols=3, dtype="float32")),
            run=run_batch,
            cluster=clusters_of,
            tasks=(on_process.batch,),
            checks=(Returned(), HoldsItsBlock(), RowsStay()),
            max_examples=3,
            diagnose_error=_error_hint,
            purpose=_batch_purpose,
        ),
        ExerciseSpec(
            name="loader_indices",
            strategy=_loader,
            explicit=lambda ctx: list(LOADER_EXPLICIT),
            run=run_loader,
            checks=(LoaderRows(),),
            max_examples=12,
            purpose=lambda ex: next(
                (said for e, said in zip(LOADER_EXPLICIT, LOADER_PURPOSE) if e == ex), None
            ),
        ),
        ExerciseSpec(
            name="hierarchical_all_reduce",
            strategy=lambda ctx: _cluster_dict(
                ctx,
                rows=st.integers(1, 2),
                cols=st.integers(1, 6),
                dtype=st.sampled_from(["float32", "bfloat16"]),
            ),  # fmt: skip
            explicit=lambda ctx: _fitting(
                ctx,
                [
                    *_explicit_clusters(rows=1, cols=4, dtype="float32"),
                    {"hosts": 2, "local": 4, "rows": 2, "cols": 3, "dtype": "bfloat16"},
                ],
            ),
            run=run_allreduce,
            cluster=clusters_of,
            tasks=(on_process.allreduce_export, on_process.allreduce_run),
            checks=(SumEverywhere(), Hierarchy(), CrossBytes()),
            max_examples=2,
            diagnose_error=_error_hint,
            purpose=_allreduce_purpose,
        ),
        ExerciseSpec(
            name="multihost_train_step",
            strategy=lambda ctx: _cluster_dict(
                ctx,
                layers=st.integers(1, 2),
                rows=st.integers(1, 3),
                d=st.sampled_from(TRAIN_D),
                f=st.sampled_from(TRAIN_F),
            ),  # fmt: skip
            explicit=lambda ctx: _fitting(ctx, TRAIN_EXPLICIT),
            run=run_train,
            cluster=clusters_of,
            tasks=(on_process.train, on_process.replay),
            checks=(SameEverywhere(), StepValues(), HierarchicalStep(), MeasuredStep()),
            max_examples=1,
            diagnose_error=_error_hint,
            purpose=lambda ex: TRAIN_PURPOSE.get((ex["hosts"], ex["local"])),
        ),
        ALLREDUCE_TIME.spec(),
    ],
    compiler_options=FAST_COMPILE,
)
