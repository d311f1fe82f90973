"""Pipeline schedules: read one, simulate it, build the reference ones.

Pure Python (no jax): lesson 9 grades schedules by simulating them, not by
comparing them with one expected grid, so every valid schedule that meets
the bounds passes and an invalid one is told its first violation.

A schedule is ``list[list[Op | None]]`` indexed ``[tick][stage]``, an op is
``(kind, micro)`` with kind ``"F"`` (forward), ``"B"`` (backward; with W
split off, the input gradient only) or ``"W"`` (weight gradient), and every
op takes one tick. Dependencies, each "after" meaning a strictly later tick:

- F(s, i) after F(s − 1, i)  (the activation comes from the stage before),
- B(s, i) after F(s, i) and B(s + 1, i)  (the gradient comes from the stage after),
- W(s, i) after B(s, i).

A micro-batch's activations stay alive on a stage from its F until its last
backward op (B, or W where the schedule has W).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from grader.evidence import ScheduleChart

Op = tuple[str, int]
Schedule = list[list[Op | None]]
Key = tuple[str, int, int]
"""(kind, stage, micro): one op placed on its stage."""

FORWARD, BACKWARD, WEIGHT = "F", "B", "W"
ORDER = {FORWARD: 0, BACKWARD: 1, WEIGHT: 2}
WHAT = {FORWARD: "forward", BACKWARD: "backward", WEIGHT: "weight gradient"}

# Kinds of violation, in the order the grader reports them.
SHAPE, OPS, CLASH, DEPENDENCY = "shape", "ops", "clash", "dependency"


# ------------------------------------------------------------------ formulas


def makespan_bound(p: int, m: int, split_w: bool = False) -> int:
    """Fewest ticks with unit op times: 2(m + p − 1) for F and B; with W split
    off (ZB-H1), max(3m + p − 1, 2(m + p) − 1)."""
    if split_w:
        return max(3 * m + p - 1, 2 * (m + p) - 1)
    return 2 * (m + p - 1)


def bubble_formula(p: int, m: int) -> float:
    """(p − 1)/(m + p − 1): the idle share of GPipe and 1F1B."""
    return (p - 1) / (m + p - 1)


def one_f_one_b_peak(p: int, m: int, stage: int) -> int:
    """min(p − s, m): micro-batches 1F1B keeps alive on stage s."""
    return min(p - stage, m)


def describe_op(kind: str, stage: int, micro: int) -> str:
    """``backward B2 of micro-batch 2 on stage 1``: the words the grader uses everywhere."""
    return f"{WHAT[kind]} {kind}{micro} of micro-batch {micro} on stage {stage}"


# ------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Violation:
    """The first thing wrong with a schedule, where it is, and what it waits for."""

    kind: str
    """``shape``, ``ops``, ``clash`` or ``dependency``."""
    message: str
    tick: int | None = None
    stage: int | None = None
    waits_for: tuple[int, int] | None = None
    """(tick, stage) of the op it depends on, when that op runs at all."""
    micro: int | None = None
    """The micro-batch of an op that names one no example has (outside 0 … m − 1)."""


@dataclass
class Simulation:
    """A schedule read and replayed tick by tick."""

    p: int
    m: int
    split_w: bool
    ticks: int
    """The makespan: the schedule's length."""
    grid: list[list[str]]
    """Cells as drawn (``F3``, ``""`` idle, ``?`` unreadable), ``[tick][stage]``."""
    times: dict[Key, int] = field(default_factory=dict)
    """Tick of each op's first run."""
    violations: list[Violation] = field(default_factory=list)

    def first(self, *kinds: str) -> Violation | None:
        """The earliest violation of one of ``kinds`` (any kind if none given)."""
        return next((v for v in self.violations if not kinds or v.kind in kinds), None)

    @property
    def peaks(self) -> list[int]:
        """Per stage, the most micro-batches alive at once."""
        return peak_activations(self)

    @property
    def idle(self) -> int:
        return sum(c == "" for row in self.grid for c in row)

    @property
    def bubble(self) -> float:
        cells = self.ticks * self.p
        return self.idle / cells if cells else 0.0


def simulate(schedule: Any, p: int, m: int, split_w: bool = False) -> Simulation:
    """Read ``schedule`` for p stages and m micro-batches and list every violation.

    Order of the list: the schedule's shape, then each cell in tick order
    (unreadable, repeated, two ops in one cell), then missing ops, then
    dependencies in tick order — so ``violations[0]`` is the one to report.
    """
    kinds = (FORWARD, BACKWARD, WEIGHT) if split_w else (FORWARD, BACKWARD)
    sim = Simulation(p, m, split_w, 0, [])
    rows = _rows(schedule, sim)
    if rows is None:
        return sim
    sim.ticks = len(rows)
    for t, row in enumerate(rows):
        sim.grid.append([_read_cell(row[s], t, s, sim, kinds) for s in range(p)])
    missing = [
        (k, s, i) for k in kinds for s in range(p) for i in range(m) if (k, s, i) not in sim.times
    ]
    if missing:
        sim.violations.append(_missing(missing, p, m, len(kinds)))
    sim.violations.extend(_dependencies(sim))
    return sim


def _rows(schedule: Any, sim: Simulation) -> list | None:
    """The rows if the schedule is a list of p-cell lists, else None (with why)."""
    if not isinstance(schedule, (list, tuple)):
        sim.violations.append(
            Violation(SHAPE, f"returned {type(schedule).__name__}; expected a list of ticks")
        )
        return None
    for t, row in enumerate(schedule):
        if not isinstance(row, (list, tuple)) or len(row) != sim.p:
            what = f"{len(row)} cells" if isinstance(row, (list, tuple)) else type(row).__name__
            sim.violations.append(
                Violation(
                    SHAPE,
                    f"tick {t} holds {what}; every tick needs one cell per stage "
                    f"(p = {sim.p}), None where the stage idles",
                    tick=t,
                )
            )
            return None
    return list(schedule)


def _is_op(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str)


def _read_cell(value: Any, t: int, s: int, sim: Simulation, kinds: tuple[str, ...]) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)) and len(value) > 1 and all(map(_is_op, value)):
        ops = ", ".join(f"{k}{i}" for k, i in value)
        sim.violations.append(
            Violation(CLASH, f"tick {t}, stage {s} runs {len(value)} ops ({ops}); a stage "
                      "runs one op per tick", tick=t, stage=s)
        )  # fmt: skip
        return "+".join(f"{k}{i}" for k, i in value)
    if not _is_op(value) or not isinstance(value[1], Integral) or isinstance(value[1], bool):
        sim.violations.append(
            Violation(OPS, f"tick {t}, stage {s} holds {value!r}; a cell is None or an op "
                      "(kind, micro-batch) such as ('F', 0)", tick=t, stage=s)
        )  # fmt: skip
        return "?"
    kind, micro = value[0], int(value[1])
    if kind not in kinds:
        allowed = ", ".join(repr(k) for k in kinds)
        sim.violations.append(
            Violation(OPS, f"tick {t}, stage {s} holds kind {kind!r}; this schedule's ops are "
                      f"{allowed}", tick=t, stage=s)
        )  # fmt: skip
        return "?"
    if not 0 <= micro < sim.m:
        sim.violations.append(
            Violation(OPS, f"tick {t}, stage {s} runs {kind}{micro}: micro-batches are "
                      f"0 … {sim.m - 1} (m = {sim.m})", tick=t, stage=s, micro=micro)
        )  # fmt: skip
        return "?"
    key = (kind, s, micro)
    if key in sim.times:
        sim.violations.append(
            Violation(OPS, f"{describe_op(*key)} runs twice: at tick {sim.times[key]} and "
                      f"at tick {t}", tick=t, stage=s, waits_for=(sim.times[key], s))
        )  # fmt: skip
    else:
        sim.times[key] = t
    return f"{kind}{micro}"  # as the chart draws it


def _missing(missing: list[Key], p: int, m: int, every: int) -> Violation:
    """The ops never run: whole micro-batches where every op of theirs (``every`` kinds on
    every stage) is missing, else the count and the first."""
    micros = sorted({i for _, _, i in missing})
    first = describe_op(*missing[0])
    if len(missing) == every * p * len(micros):
        what = ", ".join(map(str, micros))
        plural = "es" if len(micros) > 1 else ""
        return Violation(OPS, f"micro-batch{plural} {what} never run ({len(missing)} ops "
                         f"missing, e.g. {first})")  # fmt: skip
    return Violation(OPS, f"{len(missing)} op(s) never run, the first: {first}")


def _needs(key: Key, p: int) -> list[Key]:
    kind, s, i = key
    if kind == FORWARD:
        return [(FORWARD, s - 1, i)] if s > 0 else []
    if kind == BACKWARD:
        return [(FORWARD, s, i)] + ([(BACKWARD, s + 1, i)] if s < p - 1 else [])
    return [(BACKWARD, s, i)]


def _dependencies(sim: Simulation) -> list[Violation]:
    out = []
    for key, t in sorted(sim.times.items(), key=lambda kv: (kv[1], kv[0][1])):
        for need in _needs(key, sim.p):
            when = sim.times.get(need)
            if when is not None and when < t:
                continue
            if when is None:
                where, at = "which never runs", None
            elif when == t:
                where, at = f"which runs at the same tick {t}", (when, need[1])
            else:
                where, at = f"which runs later, at tick {when}", (when, need[1])
            out.append(
                Violation(
                    DEPENDENCY,
                    f"tick {t}: {describe_op(*key)} needs {describe_op(*need)}, {where} "
                    "— it must finish at an earlier tick",
                    tick=t,
                    stage=key[1],
                    waits_for=at,
                )  # fmt: skip
            )
    return out


def peak_activations(sim: Simulation) -> list[int]:
    """Per stage, the most micro-batches whose F has run and whose last
    backward op (W with W split off, else B) has not."""
    last = WEIGHT if sim.split_w else BACKWARD
    peaks = []
    for s in range(sim.p):
        alive = peak = 0
        for row in sim.grid:
            c = row[s]
            alive += c.startswith(FORWARD) - c.startswith(last)
            peak = max(peak, alive)
        peaks.append(peak)
    return peaks


# ------------------------------------------------------------------ building


Priority = Callable[[Key], Any]


def _feeds(key: Key, p: int) -> list[Key]:
    """The ops that need ``key`` (the dependencies read backwards)."""
    kind, s, i = key
    if kind == FORWARD:
        return ([(FORWARD, s + 1, i)] if s < p - 1 else []) + [(BACKWARD, s, i)]
    if kind == BACKWARD:
        return ([(BACKWARD, s - 1, i)] if s > 0 else []) + [(WEIGHT, s, i)]
    return []


def list_schedule(
    p: int,
    m: int,
    priority: Priority,
    *,
    split_w: bool = False,
    cap: Callable[[int], int] | None = None,
    idle: Callable[[], bool] | None = None,
    backward: bool = False,
) -> Schedule:
    """Greedy list scheduling: each tick, each stage runs its ready op of lowest
    ``priority``. A stage starts no new F while ``cap(stage)`` micro-batches are
    alive on it; ``idle()`` true makes a stage wait a tick although an op is ready.

    ``backward`` schedules from the last tick towards the first (an op is
    ready once everything that needs it is placed; the cap then holds back
    the op that ends a micro-batch's life) and returns the schedule reversed."""
    kinds = (FORWARD, BACKWARD, WEIGHT) if split_w else (FORWARD, BACKWARD)
    last = WEIGHT if split_w else BACKWARD
    opens, closes = (last, FORWARD) if backward else (FORWARD, last)
    links = _feeds if backward else _needs
    todo = [{(k, s, i) for k in kinds for i in range(m)} for s in range(p)]
    done: set[Key] = set()
    alive = [0] * p
    schedule: Schedule = []
    while any(todo):
        row: list[Op | None] = [None] * p
        finished = []
        for s in range(p):
            ready = [
                key
                for key in todo[s]
                if all(n in done for n in links(key, p))
                and (key[0] != opens or cap is None or alive[s] < cap(s))
            ]
            if not ready or (idle is not None and idle()):
                continue
            key = min(ready, key=priority)
            row[s] = (key[0], key[2])
            todo[s].remove(key)
            finished.append(key)
            alive[s] += (key[0] == opens) - (key[0] == closes)
        done.update(finished)
        schedule.append(row)
    return schedule[::-1] if backward else schedule


def _rank(*order: str) -> Priority:
    """Ops by kind in ``order``, then by micro-batch (the latest first when
    scheduling backwards, so it ends last)."""
    rank = {k: r for r, k in enumerate(order)}
    return lambda key: (rank[key[0]], key[2])


def gpipe(p: int, m: int) -> Schedule:
    """Every forward, then every backward."""
    return list_schedule(p, m, _rank(FORWARD, BACKWARD))


def one_f_one_b(p: int, m: int) -> Schedule:
    """Backward first whenever one is ready; at most p − s micro-batches alive on stage s."""
    return list_schedule(p, m, _rank(BACKWARD, FORWARD), cap=lambda s: p - s)


def zero_bubble(p: int, m: int) -> Schedule:
    """ZB-H1 with unit op times, built from the last tick backwards: B before F
    before W, at most p micro-batches alive per stage. Meets
    :func:`makespan_bound` for every p ≤ 8, m ≤ 16 (``tests/test_schedules.py``)."""
    rank = {BACKWARD: 0, FORWARD: 1, WEIGHT: 2}
    return list_schedule(
        p, m, lambda key: (rank[key[0]], -key[2]), split_w=True, cap=lambda s: p, backward=True
    )


def random_schedule(p: int, m: int, seed: int, split_w: bool = False) -> Schedule:
    """A valid schedule in a random order, idling now and then (the same for a
    seed in every process: priorities are drawn in a fixed order, not a set's)."""
    rng = random.Random(seed)
    kinds = (FORWARD, BACKWARD, WEIGHT) if split_w else (FORWARD, BACKWARD)
    weights = {(k, s, i): rng.random() for k in kinds for s in range(p) for i in range(m)}
    return list_schedule(
        p, m, weights.__getitem__, split_w=split_w, idle=lambda: rng.random() < 0.15
    )


# ------------------------------------------------------------------ the picture


def chart(
    title: str, yours: Simulation, expected: Simulation | None, v: Violation | None
) -> ScheduleChart:
    """The report's picture of one example, its first violation ``v`` marked."""
    mark = [v.tick, v.stage] if v and v.tick is not None and v.stage is not None else None
    return ScheduleChart(
        title=title,
        yours=_by_stage(yours),
        expected=_by_stage(expected) if expected else None,
        mark=mark,
        waits_for=list(v.waits_for) if v and v.waits_for else None,
        note=v.message if v else "",
    )


def _by_stage(sim: Simulation) -> list[list[str]]:
    return [[row[s] for row in sim.grid] for s in range(sim.p)]
