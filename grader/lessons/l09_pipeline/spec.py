"""Grading spec for lesson 9: pipeline schedules and their execution.

Schedules are pure Python, graded by simulation (:mod:`grader.expected.l09_pipeline.schedules`,
the grader's side: hidden from the student's process, like the reference schedules there),
not against one expected grid: any schedule that runs every op once, one op
per stage per tick, each after the ops it needs, within the optimal makespan
and the schedule's activation memory passes. Explicit edge cases (p = 1,
m = 1, m < p, m = p, the largest p = 8, m = 16) come first, then drawn
(p, m) with p ≤ 8, m ≤ 16. ``bubble_fraction`` and ``peak_activations`` are
held against the simulator's measurement of drawn valid schedules, the
course's own and random ones, with and without W: a formula that is right
for GPipe and 1F1B only fails there.

``pipeline_forward`` and ``pipeline_grads`` run the course model with one
layer per stage on a ``('stage',)`` mesh. Values are held against the
float64 reference of :mod:`grader.reference.training` (tolerance derived there). The
compiled program may hold collective-permutes of at most one micro-batch
(B/m rows × D), plus, for the forward, one more collective that returns y to
every stage; no transfer is as large as one stage's weight (examples draw
F > B, so every activation — even the whole batch — is smaller); at p ≥ 4,
m ≥ 3 the forward's permutes run m + p − 1 (± 1) times, all in one loop; at
p = 1 nothing is sent. The gradients: only permutes, each of at most one
micro-batch (so no weight moves), 2(m + p − 1) ± 2 of them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from grader.checks import InputsUntouched, OnlyCollectives, OutputSharding, Values, vma
from grader.checks.hinted import Hinted
from grader.checks.program import precision_hint
from grader.checks.trees import PerLeaf
from grader.later import later
from grader.lessons.l09_pipeline.checks import (
    PERMUTE,
    ActivationMemory,
    Makespan,
    Measured,
    OneMicroBatch,
    PipelineCollectives,
    ScheduleDependencies,
    ScheduleOps,
    StageToStage,
    Ticks,
    WeightsStay,
    schedules,
)
from grader.reference import training
from grader.results import CheckResult
from grader.runtime import Runtime
from grader.spec import BACKEND_LEVEL_0, Context, Example, ExerciseSpec, LessonSpec, Run, Trial

MODULE = "l09_pipeline"
AXIS = "stage"
FLOAT32 = 4
MAX_STAGES, MAX_MICRO = 8, 16
EDGES = ((1, 1), (1, 4), (4, 1), (4, 2), (4, 4), (3, 7), (8, 16))
"""(p, m): one stage, one micro-batch, m < p, m = p, m > p, the largest."""
BUILDERS: dict[str, Callable[[int, int], schedules.Schedule]] = {
    "gpipe": schedules.fn("gpipe"),
    "1f1b": schedules.fn("one_f_one_b"),
    "zb": schedules.fn("zero_bubble"),
}
WITH_W = ("zb", "random_w")


# ------------------------------------------------------------------ schedules


def _pm(ctx: Context) -> Any:
    return st.fixed_dictionaries({"p": st.integers(1, MAX_STAGES), "m": st.integers(1, MAX_MICRO)})


def _edges(ctx: Context) -> list[Example]:
    return [{"p": p, "m": m} for p, m in EDGES]


def _shares_rows(schedule: Any) -> bool:
    """Ticks that are one list object (``[[None] * p] * ticks``)."""
    return isinstance(schedule, list) and len({id(row) for row in schedule}) < len(schedule)


def _run_schedule(
    name: str, reference: Callable[[int, int], schedules.Schedule], split_w: bool
) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        p, m = ex["p"], ex["m"]
        out = fn(p, m)
        return Trial(
            ex, output=out,
            extra={
                "title": f"{name}({p}, {m})",
                "sim": schedules.simulate(out, p, m, split_w),
                "reference": schedules.simulate(reference(p, m), p, m, split_w),
                "aliased": _shares_rows(out),
            },
        )  # fmt: skip

    return run


def _schedule_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    if isinstance(exc, IndexError):
        return (
            f"An index past the end of a list at p = {ex['p']}, m = {ex['m']}: is the grid as "
            "long as the last op's tick + 1 (2(m + p − 1) ticks for GPipe and 1F1B), with p "
            "cells per tick? Check the edge cases m = 1 and m < p too."
        )
    return None


SCHEDULE_PURPOSE: dict[str, dict[tuple[int, int], str]] = {
    "gpipe": {
        (1, 1): "one stage, one micro-batch (p = m = 1): its F, then its B, in 2 ticks",
        (1, 4): "one stage, m = 4: all 4 forwards, then all 4 backwards, in 8 ticks with no "
        "idle cell",
        (4, 1): "m = 1 < p = 4: the one micro-batch crosses the 4 stages and back in "
        "2(m + p − 1) = 8 ticks, 24 of the 32 cells idle",
        (4, 2): "m = 2 < p = 4, fewer micro-batches than stages: 2(m + p − 1) = 10 ticks, each "
        "stage holds both micro-batches at once",
        (4, 4): "m = p = 4: 2(m + p − 1) = 14 ticks, each stage holds all 4 micro-batches before "
        "its first backward",
        (3, 7): "m = 7 > p = 3: 2(m + p − 1) = 18 ticks, each stage holds all 7 micro-batches "
        "before its first backward",
        (8, 16): "the largest, p = 8 and m = 16: 2(m + p − 1) = 46 ticks, each stage holds all "
        "16 micro-batches",
    },
    "1f1b": {
        (1, 1): "one stage, one micro-batch (p = m = 1): its F, then its B, in 2 ticks",
        (1, 4): "one stage, m = 4: each backward follows its forward, so one micro-batch is "
        "alive at a time, 8 ticks",
        (4, 1): "m = 1 < p = 4: the one micro-batch crosses the 4 stages and back in "
        "2(m + p − 1) = 8 ticks, one alive per stage",
        (4, 2): "m = 2 < p = 4, fewer micro-batches than stages: the warm-up stops at m, "
        "min(p − s, m) = 2, 2, 2, 1 alive, 10 ticks",
        (4, 4): "m = p = 4: 2(m + p − 1) = 14 ticks, at most p − s = 4, 3, 2, 1 micro-batches "
        "alive on stage s",
        (3, 7): "m = 7 > p = 3: warm-up, one forward per backward, cool-down; 18 ticks, at most "
        "3, 2, 1 micro-batches alive",
        (8, 16): "the largest, p = 8 and m = 16: 2(m + p − 1) = 46 ticks, at most p − s = 8 … 1 "
        "micro-batches alive on stage s",
    },
    "zb": {
        (1, 1): "one stage, one micro-batch (p = m = 1): its F, B and W in 3 ticks",
        (1, 4): "one stage, m = 4: every F, B and W in 3m = 12 ticks with no idle cell, at most "
        "p = 1 micro-batch alive",
        (4, 1): "m = 1 < p = 4: F across the stages, B back, each W after its B: "
        "2(m + p) − 1 = 9 ticks",
        (4, 2): "m = 2 < p = 4, fewer micro-batches than stages: max(3m + p − 1, 2(m + p) − 1) = "
        "11 ticks",
        (4, 4): "m = p = 4: max(3m + p − 1, 2(m + p) − 1) = 15 ticks, at most p = 4 micro-batches "
        "alive per stage, each until its W",
        (3, 7): "m = 7 > p = 3: 3m + p − 1 = 23 ticks, W ops filling the idle cells, at most p = 3 "
        "micro-batches alive per stage",
        (8, 16): "the largest, p = 8 and m = 16: 3m + p − 1 = 55 ticks, at most p = 8 "
        "micro-batches alive per stage",
    },
}
"""What each (p, m) of :data:`EDGES` holds, per schedule (issue 45 §1)."""


def _schedule_exercise(
    name: str, reference: str, memory: ActivationMemory, split_w: bool = False
) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_pm,
        explicit=_edges,
        run=_run_schedule(name, BUILDERS[reference], split_w),
        checks=(ScheduleOps(), ScheduleDependencies(), Makespan(), memory),
        max_examples=16,
        diagnose_error=_schedule_error,
        purpose=lambda ex: SCHEDULE_PURPOSE[reference].get((ex["p"], ex["m"])),
    )


GPIPE_MEMORY = ActivationMemory(
    bound=lambda p, m, s: m,
    formula="all m (every forward before any backward)",
    who="GPipe",
    exact=True,
    hint="GPipe runs every micro-batch's forward before any backward, so each stage keeps all "
    "m alive; interleaving forwards and backwards is 1F1B, the next exercise.",
)
ONE_F_ONE_B_MEMORY = ActivationMemory(
    bound=schedules.fn("one_f_one_b_peak"),
    formula="min(p − s, m)",
    who="1F1B",
    hint="Too many forwards before the first backward: stage s has p − 1 − s warm-up "
    "forwards, then runs one forward per backward, so at most p − s micro-batches are alive "
    "on it (GPipe's all-forwards-first keeps m).",
)
ZERO_BUBBLE_MEMORY = ActivationMemory(
    bound=lambda p, m, s: p,
    formula="p",
    who="ZB-H1",
    hint="A micro-batch stays alive until its W. Once p are alive on a stage, run the W of the "
    "oldest before starting another F.",
)


# ------------------------------------------------------------------ measuring


def _given(ctx: Context) -> Any:
    return st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["random", "random_w", "gpipe", "1f1b", "zb"]),
            "p": st.integers(1, MAX_STAGES),
            "m": st.integers(1, MAX_MICRO),
            "seed": st.integers(0, 2**16),
        }
    )


def _given_edges(ctx: Context) -> list[Example]:
    """A random schedule first: there the formulas are wrong."""
    return [
        {"kind": "random", "p": 3, "m": 4, "seed": 1},
        {"kind": "random_w", "p": 4, "m": 3, "seed": 11},
        {"kind": "gpipe", "p": 4, "m": 8, "seed": 0},
        {"kind": "zb", "p": 4, "m": 6, "seed": 0},
        {"kind": "1f1b", "p": 1, "m": 1, "seed": 0},
    ]


def given_schedule(ex: Example) -> schedules.Schedule:
    """The valid schedule an example hands to the student's function."""
    kind, p, m = ex["kind"], ex["p"], ex["m"]
    if kind.startswith("random"):
        return schedules.random_schedule(p, m, ex["seed"], split_w=kind in WITH_W)
    return BUILDERS[kind](p, m)


def _describe(ex: Example) -> str:
    """``random with W, p = 4, m = 3``."""
    kind = {"gpipe": "GPipe", "1f1b": "1F1B", "zb": "zero bubble", "random_w": "random with W"}
    return f"{kind.get(ex['kind'], ex['kind'])}, p = {ex['p']}, m = {ex['m']}"


def _run_measure(name: str) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        schedule = given_schedule(ex)
        handed = copy.deepcopy(schedule)
        out = fn(handed)
        sim = schedules.simulate(schedule, ex["p"], ex["m"], ex["kind"] in WITH_W)
        return Trial(
            ex,
            output=out,
            expected=sim.bubble if name == "bubble_fraction" else sim.peaks,
            inputs_intact=None if handed == schedule else "your function changed the schedule",
            extra={"title": f"the schedule given to {name} ({_describe(ex)})", "sim": sim},
        )

    return run


def _bubble_words(trial: Trial) -> str:
    sim = trial.extra["sim"]
    return f"{sim.idle} idle cells of {sim.ticks} ticks × {sim.p} stages"


def _bubble_suspects(trial: Trial) -> list[tuple[Any, str]]:
    sim, p, m = trial.extra["sim"], trial.example["p"], trial.example["m"]
    cells, busy = sim.ticks * p, sim.ticks * p - sim.idle
    lasts = [max((t for t, row in enumerate(sim.grid) if row[s] != ""), default=-1)
             for s in range(p)]  # fmt: skip
    early = sum(sum(sim.grid[t][s] == "" for t in range(last + 1))
                for s, last in enumerate(lasts))  # fmt: skip
    out = []
    if early != sim.idle and early + busy:
        out.append((early / (early + busy), f"Your fraction counts a stage idle only until its "
                    f"last op ({early} idle cells): the ticks after it count too ({sim.idle} "
                    "in all) — a stage that has finished waits for the step to end. Divide "
                    "every idle cell by ticks × stages."))  # fmt: skip
    return out + [
        (
            schedules.bubble_formula(p, m),
            "You returned (p − 1)/(m + p − 1), the formula for GPipe and 1F1B. This schedule "
            "is another one: measure it — count its None cells, divide by ticks × stages.",
        ),
        (busy / cells, "You returned the busy share: the bubble is the idle cells (None)."),
        (sim.idle / busy if busy else -1.0, "Divide the idle cells by all cells, busy ones too."),
        (float(sim.idle), "Return the fraction: idle cells / (ticks × stages)."),
        (sim.idle / sim.ticks, f"You divided the idle cells by the ticks alone: idle stages "
         f"per tick, p = {p} times the fraction. Divide by every cell, ticks × stages."),
    ]  # fmt: skip


def _close(got: Any, want: Any) -> bool:
    return isinstance(got, (int, float, np.floating)) and abs(float(got) - want) <= 1e-9


def _peaks_words(trial: Trial) -> str:
    sim = trial.extra["sim"]
    last = "W" if sim.split_w else "B"
    return f"counted from each F to the micro-batch's {last}"


def _peaks_suspects(trial: Trial) -> list[tuple[Any, str]]:
    sim, p, m = trial.extra["sim"], trial.example["p"], trial.example["m"]
    out = []
    if sim.split_w:  # first: where it coincides with a formula, this is the likelier slip
        as_if_b = schedules.peak_activations(
            schedules.Simulation(sim.p, sim.m, False, sim.ticks, sim.grid)
        )
        out.append(
            (
                as_if_b,
                "This schedule has W ops: a micro-batch's activations stay alive until its W "
                "(the weight gradient needs them), not until its B.",
            )
        )
    walk = "walk its ticks, +1 at each F, −1 at each micro-batch's last backward op."
    top = max(sim.peaks, default=0)
    if len(set(sim.peaks)) > 1:  # (every stage's peak the same: the largest tells nothing)
        out.append(([top] * p, f"You returned the largest stage's peak ({top}) on every stage: "
                    f"each stage's count is its own; {walk}"))  # fmt: skip
    if sim.ticks != p:  # the grid read as [stage][tick]: one count per tick, across stages
        across = [list(row) for row in zip(*sim.grid)]  # a tick read as a stage
        per_tick = schedules.peak_activations(
            schedules.Simulation(sim.ticks, sim.m, sim.split_w, p, across)
        )
        out.append((per_tick, f"Your list has one count per tick ({sim.ticks}), each walked "
                    "across the stages of that tick: the grid is schedule[tick][stage], a row a "
                    f"tick. Return one count per stage ({p}): walk each stage's column, "
                    "schedule[t][s] for t in order."))  # fmt: skip
    return out + [
        (
            [m] * p,
            f"You returned m on every stage, what GPipe's formula gives (and what a walk "
            f"that counts every F and no backward op gives); this schedule is another "
            f"one: {walk}",
        ),
        (
            [schedules.one_f_one_b_peak(p, m, s) for s in range(p)],
            f"You returned 1F1B's bound min(p − s, m); this schedule is another one: {walk}",
        ),
    ]


def _same_list(got: Any, want: Any) -> bool:
    """A list, tuple or 1-D array of the same integers."""
    if not isinstance(got, (list, tuple, np.ndarray)) or np.ndim(got) != 1:
        return False
    try:
        return all(float(g).is_integer() for g in got) and [int(g) for g in got] == list(want)
    except (TypeError, ValueError):
        return False


MEASURE_PURPOSE: dict[str, dict[str, str]] = {
    "bubble_fraction": {
        "random": "a random valid schedule, p = 3, m = 4: 21 idle cells of 15 ticks × 3 "
        "stages, not the (p − 1)/(m + p − 1) = 1/3 of GPipe and 1F1B",
        "random_w": "a random valid schedule with W ops, p = 4, m = 3: 40 idle cells of 19 "
        "ticks × 4 stages",
        "gpipe": "GPipe, p = 4, m = 8: 24 idle cells of 22 ticks × 4 stages, which here is "
        "(p − 1)/(m + p − 1) = 3/11",
        "zb": "zero bubble, p = 4, m = 6: W ops fill idle cells, 12 of 21 ticks × 4 stages "
        "(1/7), below (p − 1)/(m + p − 1) = 1/3",
        "1f1b": "one stage, one micro-batch (1F1B, p = m = 1): 2 ticks, no idle cell, a bubble "
        "of 0",
    },
    "peak_activations": {
        "random": "a random valid schedule, p = 3, m = 4: peaks 4, 3, 2, counted tick by tick "
        "from each F to its B; no formula of GPipe or 1F1B gives them",
        "random_w": "a random valid schedule with W ops, p = 4, m = 3: a micro-batch is alive "
        "from its F until its W, peaks 3, 3, 3, 3",
        "gpipe": "GPipe, p = 4, m = 8: every stage holds all m = 8 micro-batches at its peak",
        "zb": "zero bubble, p = 4, m = 6: a micro-batch is alive from its F until its W, every "
        "stage peaks at p = 4",
        "1f1b": "one stage, one micro-batch (1F1B, p = m = 1): a peak of 1",
    },
}
"""What each schedule of :func:`_given_edges` holds, per exercise (issue 45 §1)."""


def _measure_exercise(name: str) -> ExerciseSpec:
    bubble = name == "bubble_fraction"
    check = Measured(
        what="bubble fraction" if bubble else "peak activations",
        same=_close if bubble else _same_list,
        explain=_bubble_words if bubble else _peaks_words,
        suspects=_bubble_suspects if bubble else _peaks_suspects,
    )
    return ExerciseSpec(
        name=name,
        strategy=_given,
        explicit=_given_edges,
        run=_run_measure(name),
        checks=(check, InputsUntouched()),
        max_examples=10,
        purpose=lambda ex: MEASURE_PURPOSE[name].get(ex["kind"]),
    )


# ------------------------------------------------------------------ execution


def _exec_strategy(ctx: Context) -> Any:
    sizes = [n for n in ctx.mesh_sizes if n >= 2] or [1]
    return st.fixed_dictionaries(
        {
            "p": st.sampled_from(sizes),
            "m": st.integers(2, 6),
            "rows": st.integers(1, 2),
            "d": st.just(8),
            "f": st.sampled_from([16, 24]),
            "seed": st.integers(0, 2**16),
        }
    )


def _exec_explicit(grads: bool) -> Callable[[Context], list[Example]]:
    """p = 4, m = 3 (m < p: the loop check applies), then p = 6 with m = 4 for
    the forward (p = 3, m = 5 for the gradients), and p = 1 for the forward."""

    def explicit(ctx: Context) -> list[Example]:
        base = {"d": 8, "f": 16}
        wanted = [{"p": 4, "m": 3, "rows": 2, "seed": 0}]
        if grads:
            wanted.append({"p": 3, "m": 5, "rows": 1, "seed": 1})
        else:
            wanted += [
                {"p": 6, "m": 4, "rows": 1, "seed": 1},
                {"p": 1, "m": 2, "rows": 2, "seed": 2},
            ]
        out = [{**w, **base} for w in wanted if w["p"] in ctx.mesh_sizes]
        return [{k: ex[k] for k in ("p", "m", "rows", "d", "f", "seed")} for ex in out]

    return explicit


def _sizes(ex: Example) -> training.Sizes:
    return training.Sizes(ex["p"], ex["m"] * ex["rows"], ex["d"], ex["f"])


def micro_bytes(ex: Example) -> int:
    return ex["rows"] * ex["d"] * FLOAT32


def batch_bytes(ex: Example) -> int:
    return ex["m"] * micro_bytes(ex)


def weight_bytes(ex: Example) -> int:
    return ex["d"] * ex["f"] * FLOAT32


def run_exec(grads: bool) -> Run:
    def run(rt: Runtime, fn: Callable[..., Any], ex: Example) -> Trial:
        import jax
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        mesh = rt.mesh((ex["p"],), (AXIS,))
        sizes = _sizes(ex)
        rng = rt.rng()
        params = training.draw_params(rng, sizes.n_layers, sizes.d, sizes.f)
        x, y = training.draw_batch(rng, sizes.batch, sizes.d)
        layers = NamedSharding(mesh, P(AXIS, None, None))
        everywhere = NamedSharding(mesh, P())
        args = [jax.device_put(params, layers), jax.device_put(x, everywhere)]
        if grads:
            args.append(jax.device_put(y, everywhere))
            jitted = jax.jit(lambda p, a, b: fn(p, a, b, mesh, ex["m"]))
        else:
            jitted = jax.jit(lambda p, a: fn(p, a, mesh, ex["m"]))
        trial = rt.compile_and_run(
            jitted, tuple(args), mesh, inputs=(params, x, y),
            layers=layers, replicated=everywhere, dtype="float32",
        )  # fmt: skip
        trial.expected = later(_expected, grads, params, x, y)  # in the worker only
        return trial

    return run


def _expected(grads: bool, params: dict, x: np.ndarray, y: np.ndarray) -> Any:
    """The float64 reference: the gradients, or the forward pass's output."""
    return training.grads(params, x, y)[1] if grads else training.forward(params, x)


def _atol(trial: Trial) -> float:
    return training.tolerance(_sizes(trial.example))


def _slots(trial: Trial) -> dict[int, list[tuple[int, str, str]]]:
    """y's rows come in m micro-batch slots of ``rows`` rows: a shift by whole slots is
    said in them (an output written one tick early lands one slot early)."""
    rows = trial.example["rows"]
    return {0: [(rows, "one micro-batch slot", "micro-batch slots")]}


def _forward_alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], Any]]]:
    params, x, _ = trial.extra["inputs"]
    p = trial.example["p"]
    reverse = training.forward({k: v[::-1] for k, v in params.items()}, x)
    ref = np.asarray(trial.expected)
    out = []
    m, rows = trial.example["m"], trial.example["rows"]
    if (
        m > 1 and rows > 1
    ):  # micro-batch i as rows i, i + m, …: split at one stride, merged at another
        d = ref.shape[-1]
        split_strided = ref.reshape(rows, m, d).swapaxes(0, 1).reshape(-1, d)
        merged_strided = ref.reshape(m, rows, d).swapaxes(0, 1).reshape(-1, d)
        out.append((
            f"Every row of y is right but in the wrong place: your micro-batch i is the rows "
            f"i, i + m, i + 2m, … of x (x.reshape(B/m, m, D) swapped, m = {m}), while the "
            "output is put back in contiguous blocks of B/m rows. Split x as you merge y: "
            "micro-batch i is rows i·B/m … (i+1)·B/m, x.reshape(m, B/m, D).",
            lambda coord, index: split_strided[index],
        ))  # fmt: skip
        out.append((
            "Every row of y is right but in the wrong place: x is split into contiguous blocks "
            "of B/m rows, but the outputs are put back strided (row r of micro-batch i at "
            "r·m + i). Merge as you split: out.reshape(B, D) from [m, B/m, D].",
            lambda coord, index: merged_strided[index],
        ))  # fmt: skip
    if p > 1:
        out.append((
            "Your stages run the layers in reverse order. Stage s holds layer s (params "
            "sharded P('stage', None, None)): micro-batches enter at stage 0, move to s + 1 "
            "(perm pairs (s, s + 1)), and leave from stage p − 1.",
            lambda coord, index: reverse[index],
        ))  # fmt: skip
        out.append((
            "Only the last stage holds y; the others return zeros. After the loop, one "
            "collective gives it to every stage: a psum of the output that only stage p − 1 "
            "filled.",
            lambda coord, index: ref[index] if coord[0] == p - 1 else np.zeros_like(ref[index]),
        ))  # fmt: skip
    return out


def _missing_micro_batches(trial: Trial) -> str | None:
    """A hint when exactly the last k micro-batches are wrong (on device 0)."""
    import jax

    out = trial.output
    if not isinstance(out, jax.Array) or out.shape != np.shape(trial.expected):
        return None
    ex = trial.example
    got = np.asarray(out.addressable_shards[0].data, np.float64)
    want = np.asarray(trial.expected)
    atol = _atol(trial) * float(np.max(np.abs(want)))
    rows = ex["rows"]
    wrong = [
        i
        for i in range(ex["m"])
        if not np.all(
            np.abs(got[i * rows : (i + 1) * rows] - want[i * rows : (i + 1) * rows]) <= atol
        )
    ]
    k = len(wrong)
    if not wrong or wrong != list(range(ex["m"] - k, ex["m"])) or k == ex["m"]:
        return None
    which = f"micro-batch {wrong[0]}" if k == 1 else f"micro-batches {wrong[0]} … {wrong[-1]}"
    return (
        f"The rows of the last {which} are wrong, the others right: it never came out of the "
        "last stage. The pipeline needs m + p − 1 ticks: the last micro-batch enters stage 0 "
        "at tick m − 1 and leaves stage p − 1 at tick m + p − 2 — one tick too few?"
    )


def _grads_alternatives(trial: Trial) -> list[tuple[str, Callable[[tuple, tuple], Any]]]:
    m = trial.example["m"]
    if m == 1:
        return []
    scaled = np.asarray(trial.expected) * m
    return [
        (
            f"Your gradient is m = {m} times the reference: the loss is the mean over all B "
            "rows, so the last stage's output gradient is (out − y_i)/B, not divided by the "
            "B/m rows of the micro-batch.",
            lambda coord, index: scaled[index],
        )
    ]


def gpipe_grads(
    params: dict, x: np.ndarray, y: np.ndarray, p: int, m: int,
    mask_idle: bool = True, send: int = -1,
) -> dict[str, np.ndarray]:  # fmt: skip
    """The GPipe backward of the lesson's solution, tick by tick, in float64: at
    tick t stage s works on micro-batch i = t − (p − 1 − s) (clipped to 0 … m − 1),
    the last stage from (out − y_i)/B, the others from what they received; each
    stage then sends its input gradient to stage s + ``send``. ``mask_idle``
    False: the ticks with i outside 0 … m − 1 add their weight gradients too."""
    w_in, w_out = (np.asarray(params[k], np.float64) for k in ("w_in", "w_out"))
    b, d = x.shape
    rows = b // m
    h = np.asarray(x, np.float64).reshape(m, rows, d)
    saved = []  # saved[s][i]: stage s's input for micro-batch i
    for s in range(p):
        saved.append(h)
        h = h + np.tanh(h @ w_in[s]) @ w_out[s]
    target = np.asarray(y, np.float64).reshape(m, rows, d)
    g_in, g_out = np.zeros_like(w_in), np.zeros_like(w_out)
    received = np.zeros((p, rows, d))
    for t in range(m + p - 1):
        sent = np.zeros((p, rows, d))
        for s in range(p):
            i = t - (p - 1 - s)
            at = min(max(i, 0), m - 1)
            h_s = saved[s][at]
            a = np.tanh(h_s @ w_in[s])
            out = h_s + a @ w_out[s]
            cot = (out - target[at]) / b if s == p - 1 else received[s]
            da = (cot @ w_out[s].T) * (1.0 - a * a)
            if mask_idle is False or 0 <= i < m:
                g_in[s] += h_s.T @ da
                g_out[s] += a.T @ cot
            sent[s] = cot + da @ w_in[s].T
        received = np.zeros((p, rows, d))
        for s in range(p):
            if 0 <= s + send < p:
                received[s + send] = sent[s]
    return {"w_in": g_in, "w_out": g_out}


def _grads_named(trial: Trial) -> str | None:
    """A hint when every gradient is exactly that of a known wrong GPipe backward."""
    import jax

    ex, out = trial.example, trial.output
    p, m = ex["p"], ex["m"]
    if p < 2 or not isinstance(out, dict) or set(out) != {"w_in", "w_out"}:
        return None
    params, x, y = trial.extra["inputs"]
    cases = [
        (
            "Your gradients are exactly those of a backward whose idle ticks are not masked: "
            "at the ticks where stage s has no micro-batch (i = t − (p − 1 − s) outside "
            "0 … m − 1) its weight gradients are still added, so stage s adds s extra "
            "gradients of the clipped micro-batch (stage 0 none: it is right). Add a tick's "
            "gradients only where 0 ≤ i < m: jnp.where(valid, gw, 0).",
            dict(mask_idle=False),
        ),
        (
            "Your gradients are exactly those of a backward that sends each input gradient "
            "to the next stage (s → s + 1) instead of the one before: stage p − 1, which starts "
            "from the loss, is right, every other stage works from the wrong stage's gradient. "
            "In the backward the gradient flows against the forward: perm pairs (s + 1, s).",
            dict(send=+1),
        ),
    ]
    for why, kw in cases:
        wrong = gpipe_grads(params, x, y, p, m, **kw)
        frac = _atol(trial)
        if all(
            isinstance(out[k], jax.Array)
            and out[k].shape == wrong[k].shape
            and np.max(np.abs(np.asarray(out[k], np.float64) - wrong[k]))
            <= frac * float(np.max(np.abs(np.asarray(trial.expected[k]))))
            for k in wrong
        ):
            return why
    return None


def _grads_explain(trial: Trial) -> str | None:
    return _precision(trial) or _grads_named(trial)


def _grads_advice(kind: str, trial: Trial) -> str | None:
    if kind != "all-reduce":
        return None
    return (
        "An all-reduce in the gradient program: each stage's weight gradient is its own, so "
        "nothing needs summing across stages. If you took jax.grad of a loss built on "
        "pipeline_forward, that forward still runs the psum that gives y to every stage — the "
        "all-reduce. Only the last stage needs its output: start the backward there, from "
        "(out − y_i)/B, and send input gradients back with lax.ppermute (lesson section 6)."
    )


def _precision(trial: Trial) -> str | None:
    return precision_hint(trial, "Keep the activations and weights in float32.")


def _forward_values_hint(trial: Trial, result: CheckResult) -> str | None:
    return _precision(trial) or _missing_micro_batches(trial)


def _exec_checks(grads: bool) -> tuple:
    micro = OneMicroBatch(bound=micro_bytes, batch=batch_bytes)
    if grads:
        return (
            PerLeaf(
                inner=Values(atol=_atol, alternatives=_grads_alternatives),
                explain_failure=_grads_explain,
            ),
            PerLeaf(inner=OutputSharding(expected=lambda t: t.extra["layers"])),
            InputsUntouched(),
            OnlyCollectives(
                frozenset({PERMUTE}),
                why="Each stage's weight gradient stays on its stage, and x and y are on every "
                "stage already: only the activations (forward) and their gradients (backward) "
                "move, stage to stage, with lax.ppermute. No all-reduce.",
                advice=_grads_advice,
            ),
            StageToStage(back=True),
            micro,
            Ticks(
                expected=lambda ex: 2 * (ex["m"] + ex["p"] - 1),
                formula="2(m + p − 1)",
                slack=2,
                loop=False,
            ),
        )
    return (
        Hinted(
            inner=Values(atol=_atol, alternatives=_forward_alternatives, units=_slots),
            explain=_forward_values_hint,
        ),
        OutputSharding(expected=lambda t: t.extra["replicated"]),
        InputsUntouched(),
        WeightsStay(
            weight=weight_bytes,
            what=lambda ex: f"w_in[s] of D × F = {ex['d']} × {ex['f']} float32",
            batch=lambda ex: ex["m"] * ex["rows"] * ex["d"] * 4,
        ),
        PipelineCollectives(),
        StageToStage(),
        micro,
        Ticks(
            expected=lambda ex: ex["m"] + ex["p"] - 1,
            applies=lambda ex: ex["p"] >= 4 and ex["m"] >= 3,
        ),
    )


def _vma_error(exc: BaseException) -> str | None:
    """check_vma's refusals in a pipeline: a carry that starts invariant and gains 'stage', or
    a result that still varies over 'stage'. Which, read from the error and its frames."""
    found = vma.read(exc)
    if found is None:
        return None
    carry = next((c for c in found.carries if AXIS in c.gained and not c.before), None)
    if carry is not None:
        whole_model = any(f == "forward" or "forward(" in line for f, line in vma.frames(exc))
        if whole_model:
            return (
                f"The loop carry {carry.path} inside the whole model's forward starts the same on "
                "every stage (x is replicated) and comes out varying over 'stage': the layers it "
                "ran on differ per stage, which is what all-gathered weights are (an "
                "all_gather's result varies unless to='invarying'). Running every layer on every "
                "stage means you all-gather the weights: a pipeline_forward that all-gathers the "
                "weights is no pipeline. The weights stay on their stage, the activations move "
                "(lax.ppermute), one layer per stage per tick."
            )
        return (
            f"The loop carry {carry.path} starts the same on every stage and the loop body "
            "returns it varying over 'stage': a buffer built with jnp.zeros is invariant, and "
            "each stage writes its own values into it. Start it varying: lax.pcast(buf, "
            "'stage', to='varying'). (If the carry varies because the weights were all-gathered, "
            "that is the mistake instead: the weights stay on their stage.)"
        )
    if found.kind == vma.OUT_SPECS and AXIS in found.varying_axes:
        return (
            "The result has out_specs P() but still varies over 'stage': each stage holds its "
            "own output buffer. If only the last stage wrote y and the others hold zeros, "
            "lax.psum(out, 'stage') gives it to every stage (one all-reduce); if every stage "
            "holds values, a psum adds them all: keep only the last stage's first "
            "(jnp.where(s == p - 1, out, 0))."
        )
    return None


def _exec_error(exc: BaseException, ex: Example, passed: list[Example]) -> str | None:
    said = _vma_error(exc)
    if said:
        return said
    name = type(exc).__name__
    if name in ("TracerBoolConversionError", "ConcretizationTypeError"):
        return (
            "lax.axis_index('stage') and the loop counter are traced values: a Python `if` or "
            "`range` cannot test them. Choose with jnp.where (e.g. jnp.where(s == 0, own, "
            "received)) and slice with lax.dynamic_index_in_dim."
        )
    return None


EXEC_PURPOSE: dict[tuple[bool, int, int], str] = {
    (False, 4, 3): "p = 4 stages, m = 3 < p micro-batches of 2 rows: one loop of m + p − 1 = 6 "
    "ticks moves them stage to stage, then y reaches every stage",
    (False, 6, 4): "p = 6 stages, m = 4 micro-batches of one row: m + p − 1 = 9 ticks, each "
    "stage applying its own layer, then y reaches every stage",
    (False, 1, 2): "p = 1: the one stage holds the one layer and runs both micro-batches itself, "
    "nothing is sent",
    (True, 4, 3): "p = 4 stages, m = 3 < p micro-batches of 2 rows: each stage's weight "
    "gradients stay on it, input gradients flow back from stage s + 1 to s",
    (True, 3, 5): "p = 3 stages, m = 5 > p micro-batches of one row: the loss is the mean over "
    "all B = 5 rows, gradients flow back stage to stage",
}
"""What each example of :func:`_exec_explicit` holds, by (grads, p, m) (issue 45 §1)."""


def _exec_exercise(name: str, grads: bool) -> ExerciseSpec:
    return ExerciseSpec(
        name=name,
        strategy=_exec_strategy,
        explicit=_exec_explicit(grads),
        run=run_exec(grads),
        checks=_exec_checks(grads),
        max_examples=1,
        diagnose_error=_exec_error,
        purpose=lambda ex: EXEC_PURPOSE.get((grads, ex["p"], ex["m"])),
    )


SPEC = LessonSpec(
    exercises=(
        _schedule_exercise("gpipe_schedule", "gpipe", GPIPE_MEMORY),
        _schedule_exercise("one_f_one_b_schedule", "1f1b", ONE_F_ONE_B_MEMORY),
        _measure_exercise("bubble_fraction"),
        _measure_exercise("peak_activations"),
        _schedule_exercise("zero_bubble_schedule", "zb", ZERO_BUBBLE_MEMORY, split_w=True),
        _exec_exercise("pipeline_forward", grads=False),
        _exec_exercise("pipeline_grads", grads=True),
    ),
    compiler_options=BACKEND_LEVEL_0,
)
