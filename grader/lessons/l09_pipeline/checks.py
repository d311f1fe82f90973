"""Checks for pipeline parallelism (lesson 9).

Schedules are simulated (:mod:`grader.expected.l09_pipeline.schedules`, hidden from
the student's process): a schedule trial carries
``extra["sim"]`` (the student's schedule replayed) and ``extra["reference"]``
(the expected one, for the picture); each check reports the first violation
of its own kind and hands the report a chart of both schedules with that
violation marked.

Pipelines are read from their compiled program (collectives, counts, sizes)
and their traced program (which loop the permutes sit in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grader.checks.comms import communication
from grader.evidence import CountExpectation, ScheduleChart
from grader.later import expected
from grader.results import CheckResult
from grader.spec import Check, Example, Trial

if TYPE_CHECKING:  # annotations only: the module is the grader's side
    from grader.expected.l09_pipeline.schedules import Simulation, Violation

schedules = expected("l09_pipeline.schedules")
"""The simulator and the reference schedules (the grader's side, hidden from the
student's process, which imports this module): imported when first used, in the worker."""

PERMUTE = "collective-permute"


# ------------------------------------------------------------------ schedules


def _chart(trial: Trial, v: Violation | None) -> ScheduleChart:
    """The student's schedule beside the reference, or (for a measuring
    exercise, which has no reference) the schedule it was given."""
    x = trial.extra
    return schedules.chart(x["title"], x["sim"], x.get("reference"), v)


def _unreadable(trial: Trial) -> bool:
    return trial.extra["sim"].first(schedules.SHAPE) is not None


NOT_READ = "not checked: the schedule could not be read (see ops)"


@dataclass(frozen=True)
class ScheduleOps(Check):
    """The schedule is a grid of p cells per tick, and every op of every
    micro-batch runs exactly once, one per stage per tick."""

    name: str = "ops"

    def __call__(self, trial: Trial) -> CheckResult:
        sim: Simulation = trial.extra["sim"]
        v = sim.first(schedules.SHAPE, schedules.OPS, schedules.CLASH)
        if v is None:
            kinds = "F, B and W" if sim.split_w else "F and B"
            return CheckResult(
                self.name, True, f"{kinds} of every micro-batch (m = {sim.m}) on every stage "
                f"(p = {sim.p}), each once, one op per stage per tick",
            )  # fmt: skip
        return CheckResult(
            self.name, False, v.message, evidence=[_chart(trial, v)],
            hint=_ops_hint(trial, v),
        )  # fmt: skip


def _ops_hint(trial: Trial, v: Violation) -> str | None:
    m = trial.example["m"]
    if trial.extra.get("aliased"):
        return (
            "Your ticks share one list: [[None] * p] * ticks repeats the same row object, so "
            "writing one cell writes it at every tick. Build the grid with "
            "[[None] * p for _ in range(ticks)]."
        )
    if v.message.startswith(f"micro-batch {m - 1} never run"):
        return (
            f"The last micro-batch ({m - 1}) never runs: micro-batches are 0 … m − 1, so loop "
            "over range(m) — a range(m - 1), or a grid too short to hold it, drops it."
        )
    if " op(s) never run" in v.message:  # some ops of a micro-batch, not all of them
        return (
            "Every op must sit in the grid once: F and B (and W, where it is split) of every "
            "micro-batch on every stage. A missing one was never placed, or was placed in a "
            "cell that another op of the same stage and tick took afterwards (one op per "
            "stage per tick: the later write replaces it)."
        )
    if v.micro is not None:  # an op of a micro-batch outside 0 … m − 1
        p = trial.example["p"]
        fewer = (
            f" This example has fewer micro-batches than stages (m = {m} < p = {p})."
            if m < p and v.micro >= m
            else ""
        )
        return (
            f"Micro-batch {v.micro} does not exist: there are m = {m} micro-batches, 0 … "
            f"{m - 1}, and a stage runs the ops of those only.{fewer}"
        )
    if v.kind == schedules.CLASH:
        return "A stage runs one op per tick: when two ops are ready, one waits for a later tick."
    if "runs twice" in v.message:
        return "Every op runs exactly once: look for two loops that place the same op."
    return None


@dataclass(frozen=True)
class ScheduleDependencies(Check):
    """Every op runs at a strictly later tick than the ops it needs."""

    name: str = "dependencies"

    def __call__(self, trial: Trial) -> CheckResult:
        if _unreadable(trial):
            return CheckResult(self.name, True, NOT_READ)
        v = trial.extra["sim"].first(schedules.DEPENDENCY)
        if v is None:
            return CheckResult(self.name, True, "every op runs after the ops it needs")
        return CheckResult(
            self.name, False, v.message, evidence=[_chart(trial, v)],
            hint=_dependency_hint(v),
        )  # fmt: skip


def _dependency_hint(v: Violation) -> str:
    same = "at the same tick" in v.message
    rule = (
        "'After' means a strictly later tick: what a stage produces at tick t is there for "
        "the others from tick t + 1 on. "
        if same
        else ""
    )
    needs = v.message.split(" needs ", 1)[1]
    if v.message.split(": ", 1)[-1].startswith("weight gradient"):
        return rule + "W uses the output gradient B computes: it runs after that B."
    if needs.startswith("backward"):
        return rule + (
            "The gradient of a micro-batch comes from the next stage: B(s, i) can run one tick "
            "after B(s + 1, i) at the earliest, and only the last stage starts a backward right "
            "after its own forward."
        )
    if needs.startswith("forward") and v.message.split(": ", 1)[1].startswith("backward"):
        return rule + "A stage can only run the backward of a micro-batch whose forward it ran."
    if needs.startswith("forward"):
        return rule + (
            "Micro-batch i reaches stage s one tick after stage s − 1 ran its forward: F(s, i) "
            "at tick s + i at the earliest."
        )
    return rule + "W uses the output gradient B computes: it runs after that B."


@dataclass(frozen=True)
class Makespan(Check):
    """The schedule takes at most the optimal number of ticks."""

    name: str = "makespan"

    def __call__(self, trial: Trial) -> CheckResult:
        if _unreadable(trial):
            return CheckResult(self.name, True, NOT_READ)
        sim: Simulation = trial.extra["sim"]
        p, m = sim.p, sim.m
        bound = schedules.makespan_bound(p, m, sim.split_w)
        formula = (
            f"max(3m + p − 1, 2(m + p) − 1) = max({3 * m + p - 1}, {2 * (m + p) - 1})"
            if sim.split_w
            else f"2(m + p − 1) = 2({m} + {p} − 1)"
        )
        if sim.ticks <= bound:
            return CheckResult(self.name, True, f"{sim.ticks} ticks ≤ {formula} = {bound}")
        v = schedules.Violation(
            "makespan", f"{sim.ticks} ticks; {formula} = {bound}", *_last_op(sim)
        )
        return CheckResult(
            self.name, False, f"{sim.ticks} ticks; {formula} = {bound} is enough",
            evidence=[_chart(trial, v)], hint=_makespan_hint(sim, bound),
        )  # fmt: skip


def _last_op(sim: Simulation) -> tuple[int, int]:
    """(tick, stage) of the last op run (the last tick if none runs)."""
    for t in reversed(range(sim.ticks)):
        for s in range(sim.p):
            if sim.grid[t][s]:
                return t, s
    return sim.ticks - 1, 0


def _ready(sim: Simulation, s: int, t: int) -> list[schedules.Key]:
    """The ops of stage ``s`` not yet run at tick ``t`` whose inputs are all there (run at
    an earlier tick), in the schedule's own later order."""
    later = [k for k, when in sim.times.items() if k[1] == s and when > t]
    return sorted((k for k in later
                   if all(sim.times.get(n, t) < t for n in schedules._needs(k, sim.p))),
                  key=sim.times.get)  # fmt: skip


def _zero_bubble_hint(sim: Simulation, bound: int) -> str:
    """What the replay shows of the extra ticks: the first tick a stage past the first runs
    an F or a W while a B of its is ready (the stage before waits for that B; stage 0's
    waits for nothing), and the first a stage idles while a B or a W is ready (an F may
    wait for memory: not counted); the rule alone where neither happens."""
    ran = {(when, k[1]): k for k, when in sim.times.items()}
    behind = idle = None
    for t in range(sim.ticks):
        for s in range(sim.p):
            ready = _ready(sim, s, t)
            op = ran.get((t, s))
            b = next((k for k in ready if k[0] == schedules.BACKWARD), None)
            if behind is None and s > 0 and op is not None and op[0] != schedules.BACKWARD and b:
                behind = (t, s, op, b)
            waiting = next((k for k in ready if k[0] != schedules.FORWARD), None)
            if idle is None and op is None and not sim.grid[t][s] and waiting:
                idle = (t, s, waiting)
    said = []
    ws = [k for k in sim.times if k[0] == schedules.WEIGHT]
    if ws and all(sim.times[w] == sim.times.get((schedules.BACKWARD, w[1], w[2]), -2) + 1
                  for w in ws):  # fmt: skip
        said.append("Every W runs straight after its B (the next tick, on its stage): no "
                    "op needs a W, so ZB-H1 keeps each for a gap where the stage would "
                    "otherwise wait for a B.")  # fmt: skip
    if behind:
        t, s, op, b = behind
        said.append(f"At tick {t} stage {s} runs {schedules.describe_op(*op)} while "
                    f"{schedules.describe_op(*b)} is ready: a B goes first, since the stage "
                    "before waits for it; an F or a W can wait.")  # fmt: skip
    if idle:
        t, s, op = idle
        said.append(f"At tick {t} stage {s} idles though {schedules.describe_op(*op)} is "
                    "ready: no stage waits while a B or a W of its can run.")  # fmt: skip
    if said:
        return " ".join(said)
    return (
        f"{sim.ticks - bound} tick(s) more than needed, and no stage runs an F or a W before "
        "a ready B or idles while a B or a W is ready: ZB-H1 also keeps at most p "
        "micro-batches alive and runs each W in a gap where the stage would otherwise wait."
    )


def _makespan_hint(sim: Simulation, bound: int) -> str:
    if sim.split_w:
        return _zero_bubble_hint(sim, bound)
    if sim.ticks == bound + 2:
        return (
            "Two ticks too many — one per phase? A phase takes m + p − 1 ticks, not m + p: the "
            "last micro-batch enters stage 0 at tick m − 1 and leaves stage p − 1 at tick "
            "m + p − 2."
        )
    empty = 0
    while empty < sim.ticks and not any(sim.grid[sim.ticks - 1 - empty]):
        empty += 1
    if empty:
        return (
            f"Your schedule ends with {empty} empty tick(s): they count. Make the grid exactly "
            "as long as the last op needs."
        )
    for s in range(sim.p):  # a stage that runs its backward passes out of micro-batch order
        order = sorted((when, k[2]) for k, when in sim.times.items()
                       if k[0] == schedules.BACKWARD and k[1] == s)  # fmt: skip
        later = next((i for i in range(1, len(order)) if order[i][1] < order[i - 1][1]), None)
        if later is not None:
            (t0, a), (t1, b) = order[later - 1], order[later]
            return (
                f"{sim.ticks - bound} tick(s) more than needed, and stage {s} runs backward "
                f"B{a} (tick {t0}) before B{b} (tick {t1}): out of micro-batch order. The "
                "gradients come back from the last stage in the order the micro-batches went "
                "in; a stage that runs them oldest first never waits for a later one's."
            )
    return (
        f"{sim.ticks - bound} tick(s) more than needed: some stage waits although an op is "
        "ready. Run each op at the first tick its inputs allow."
    )


@dataclass(frozen=True)
class ActivationMemory(Check):
    """Micro-batches alive per stage within ``bound(p, m, stage)``; with
    ``exact`` every stage must reach it (GPipe keeps all m)."""

    bound: Callable[[int, int, int], int] = lambda p, m, s: m
    formula: str = "m"
    who: str = "this schedule"
    """Whose memory the bound is, for the message: ``1F1B allows …``."""
    exact: bool = False
    hint: str = ""
    name: str = "memory"

    def __call__(self, trial: Trial) -> CheckResult:
        if _unreadable(trial):
            return CheckResult(self.name, True, NOT_READ)
        sim: Simulation = trial.extra["sim"]
        peaks = sim.peaks
        for s, got in enumerate(peaks):
            want = self.bound(sim.p, sim.m, s)
            if got > want or (self.exact and got != want):
                tick = _peak_tick(sim, s, got)
                if got > want:
                    text = (
                        f"stage {s} keeps {got} micro-batches alive at tick {tick}; {self.who} "
                        f"allows {self.formula} = {want}"
                    )
                else:
                    text = f"stage {s} keeps at most {got} alive; {self.who} keeps {self.formula} = {want}"
                v = schedules.Violation("memory", text, tick=tick, stage=s)
                return CheckResult(
                    self.name, False, text, evidence=[_chart(trial, v)],
                    hint=self.hint or None,
                )  # fmt: skip
        return CheckResult(
            self.name, True, f"micro-batches alive per stage: {peaks}; {self.who} keeps "
            f"{'' if self.exact else 'at most '}{self.formula}",
        )  # fmt: skip


def _peak_tick(sim: Simulation, stage: int, peak: int) -> int:
    last = schedules.WEIGHT if sim.split_w else schedules.BACKWARD
    alive = 0
    for t, row in enumerate(sim.grid):
        alive += row[stage].startswith(schedules.FORWARD) - row[stage].startswith(last)
        if alive == peak:
            return t
    return 0


@dataclass(frozen=True)
class Measured(Check):
    """A measurement of a given schedule equals the simulator's; a value the
    spec recognises (``suspects``) names the mistake."""

    what: str = "bubble fraction"
    same: Callable[[Any, Any], bool] = lambda got, want: got == want
    explain: Callable[[Trial], str] = lambda t: ""
    """How the expected value comes from this schedule, in its numbers."""
    suspects: Callable[[Trial], list[tuple[Any, str]]] = lambda t: []
    name: str = "values"

    def __call__(self, trial: Trial) -> CheckResult:
        got, want = trial.output, trial.expected
        if self.same(got, want):
            return CheckResult(
                self.name, True, f"{self.what} {_show(want)} ({self.explain(trial)})"
            )
        said = list(dict.fromkeys(why for value, why in self.suspects(trial)
                                  if self.same(got, value)))  # fmt: skip
        hint = (
            (said[0] if len(said) == 1 else "One of these: " + " Or: ".join(said)) if said else None
        )
        return CheckResult(
            self.name, False,
            f"returned {_show(got)}; the {self.what} of this schedule: {_show(want)} "
            f"({self.explain(trial)})",
            evidence=[_chart(trial, None)], hint=hint,
        )  # fmt: skip


def _show(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


# ------------------------------------------------------------------ execution


def _moving(trial: Trial, kind: str | None = None) -> list:
    return [
        c
        for c in trial.comms.collectives
        if c.moves_data and c.count != 0 and (kind is None or c.kind == kind)
    ]


def _size(c: Any) -> int:
    """Bytes of the larger side of a collective: what it carries or what it builds."""
    from grader.measure.hlo import shape_bytes

    return max(c.operand_bytes, shape_bytes(c.shape))


@dataclass(frozen=True)
class WeightsStay(Check):
    """No collective carries as much as one layer's weight (``weight(example)``
    bytes): the examples draw F > B, so every activation, even the whole
    batch, is smaller."""

    weight: Callable[[Example], int] = lambda ex: 0
    what: Callable[[Example], str] = lambda ex: ""
    batch: Callable[[Example], int] = lambda ex: 0
    """Bytes of the whole batch's activations, B × D: a transfer that is a whole number of
    them, and no whole number of weights, is activations (every stage's buffer), not
    weights."""
    name: str = "weights"

    def __call__(self, trial: Trial) -> CheckResult:
        bound = self.weight(trial.example)
        heavy = [c for c in _moving(trial) if _size(c) >= bound]
        evidence = [communication(trial)]
        if not heavy:
            return CheckResult(
                self.name, True, f"no transfer as large as one stage's weight ({bound:,} B)",
                evidence=evidence,
            )  # fmt: skip
        c = max(heavy, key=_size)
        size, batch = _size(c), self.batch(trial.example)
        if size % bound and batch and size % batch == 0:
            return CheckResult(
                self.name, False,
                f"{_article(c.kind)} {c.kind} of {size:,} bytes: {size // batch} whole batches "
                f"of activations (B × D = {batch:,} bytes each), more than one stage's "
                f"{self.what(trial.example)} = {bound:,} bytes, and no whole number of them",
                evidence=evidence,
                hint="Only the last stage's y has to reach every stage, once: one all-reduce "
                f"(a psum of y kept on the last stage, zeros elsewhere) moves one batch; yours "
                f"moves {size // batch}"
                + (" — p, as gathering every stage's buffer does." if size // batch
                   == trial.example.get("p") else "."),  # fmt: skip
            )  # fmt: skip
        if size % bound:
            return CheckResult(
                self.name, False,
                f"{_article(c.kind)} {c.kind} of {size:,} bytes, more than one stage's "
                f"{self.what(trial.example)} = {bound:,} bytes (and no whole number of them, "
                "nor of whole batches): only the activations of one micro-batch need to travel "
                "at a time, and the last stage's y once",
                evidence=evidence,
            )  # fmt: skip
        return CheckResult(
            self.name, False,
            f"{_article(c.kind)} {c.kind} of {size:,} bytes: weights move (one stage's "
            f"{self.what(trial.example)} = {bound:,} bytes, more than the whole batch)",
            evidence=evidence,
            hint="In a pipeline the weights stay where they are — stage s holds layer s "
            "(params sharded P('stage', None, None)) — and the activations travel. Use your own "
            "w_in[0], w_out[0] inside shard_map; do not all_gather the params (nor index a "
            "layer outside shard_map: jit then moves it for you).",
        )  # fmt: skip


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


@dataclass(frozen=True)
class PipelineCollectives(Check):
    """Collective-permutes, plus at most one execution of one other collective
    (the one that gives y to every stage)."""

    name: str = "collectives"

    def __call__(self, trial: Trial) -> CheckResult:
        others = [c for c in _moving(trial) if c.kind != PERMUTE]
        runs = sum(c.count or 0 for c in others) + sum(c.count is None for c in others)
        used = ", ".join(sorted(trial.comms.kinds())) or "no collectives"
        if runs <= 1:
            return CheckResult(self.name, True, f"uses {used}", evidence=[communication(trial)])
        kinds = ", ".join(sorted({c.kind for c in others}))
        return CheckResult(
            self.name, False,
            f"{runs} executions of {kinds} besides the permutes; at most one collective may "
            "return y to every stage",
            evidence=[communication(trial, allowed=frozenset({PERMUTE}))],
            hint="Activations move stage to stage with lax.ppermute only. Once, after the "
            "loop, one collective (a psum of the output that only the last stage filled) "
            "gives y to every stage.",
        )  # fmt: skip


@dataclass(frozen=True)
class StageToStage(Check):
    """Every collective-permute sends from a stage to the next (s → s + 1) or, with
    ``back``, to the one before (s + 1 → s): the stages are a line, not a ring. A pair from
    the last stage to the first (lesson 2's ring, (s, (s + 1) mod p)) moves a block nothing
    reads, each tick."""

    back: bool = False
    name: str = "pairs"

    def __call__(self, trial: Trial) -> CheckResult:
        p = trial.example["p"]
        allowed = {(s, s + 1) for s in range(p - 1)}
        if self.back:
            allowed |= {(s + 1, s) for s in range(p - 1)}
        stray = sorted({pair for c in _moving(trial, PERMUTE) for pair in (c.pairs or ())
                        if tuple(pair) not in allowed})  # fmt: skip
        if not stray:
            return CheckResult(self.name, True, "every permute sends to the next stage"
                               + (" or the one before" if self.back else ""))  # fmt: skip
        wrap = [(a, b) for a, b in stray if {a, b} == {0, p - 1} and p > 2]
        said = ", ".join(f"{a} → {b}" for a, b in stray)
        back_wrap = bool(wrap) and wrap[0] == (0, p - 1)
        hint = (
            f"Stage {wrap[0][0]} sends to stage {wrap[0][1]}: that closes a ring "
            + (
                "((s − 1) mod p), but the gradients come back along a line: stage 0's input "
                "gradient is the end (nothing before it reads it), and the last stage starts "
                "from the loss, not from what comes round."
                if back_wrap
                else "((s + 1) mod p, lesson 2's), but a pipeline is a line: the last stage's output "
                "is y, and stage 0 reads x, not what comes round."
            )
            + " The pairs are (s, s + 1) for s < p − 1"
            + (", and (s + 1, s) for the gradients coming back." if self.back else ".")  # fmt: skip
            if wrap
            else "A stage passes its activations to the next stage only"
            + (" (and the gradients to the one before)." if self.back else ".")
        )
        return CheckResult(
            self.name, False,
            f"permute pairs {said} (of p = {p} stages) are not stage to next stage"
            + (" or back" if self.back else ""),
            hint=hint,
        )  # fmt: skip


@dataclass(frozen=True)
class OneMicroBatch(Check):
    """Every collective-permute carries at most one micro-batch (``bound`` bytes)."""

    bound: Callable[[Example], int] = lambda ex: 0
    batch: Callable[[Example], int] = lambda ex: 0
    """Bytes of the whole batch, to recognise a pipeline without micro-batches."""
    name: str = "transfer size"

    def __call__(self, trial: Trial) -> CheckResult:
        bound, ex = self.bound(trial.example), trial.example
        what = f"one micro-batch of B/m = {ex['rows']} rows × D = {ex['d']}"
        largest = max((_size(c) for c in _moving(trial, PERMUTE)), default=0)
        evidence = [communication(trial)]
        if largest <= bound:
            return CheckResult(
                self.name, True, f"largest permute {largest:,} bytes ≤ {what} ({bound:,} bytes)",
                evidence=evidence,
            )  # fmt: skip
        hint = (
            "Each permute carries the whole batch: no micro-batching. Split x into n_micro "
            "micro-batches of B/n_micro rows (x.reshape(n_micro, -1, D)) and send one per tick, "
            "so stage s + 1 works on micro-batch i while stage s works on i + 1."
            if largest >= self.batch(ex)
            else "Send one micro-batch per permute: the activation of the micro-batch your "
            "stage just ran, nothing more."
        )
        return CheckResult(
            self.name, False, f"a permute carries {largest:,} bytes; {what} is {bound:,} bytes",
            evidence=evidence, hint=hint,
        )  # fmt: skip


@dataclass(frozen=True)
class Ticks(Check):
    """The permutes run ``expected(example)`` ± ``slack`` times; with ``loop``,
    where ``applies(example)``, they all sit in one loop of that many
    iterations. At p = 1 nothing is sent."""

    expected: Callable[[Example], int] = lambda ex: 0
    formula: str = "m + p − 1"
    slack: int = 1
    applies: Callable[[Example], bool] = lambda ex: True
    loop: bool = True
    name: str = "ticks"

    def __call__(self, trial: Trial) -> CheckResult:
        ex = trial.example
        evidence: list = [communication(trial)]
        if ex["p"] == 1:
            sent = _moving(trial)
            if not sent:
                return CheckResult(
                    self.name, True, "p = 1: one stage, nothing sent", evidence=evidence
                )
            return CheckResult(
                self.name, False, f"p = 1, yet the program runs {sent[0].kind}",
                evidence=evidence,
                hint="With one stage there is nowhere to send to: build the permutation from "
                "range(p − 1) (empty at p = 1) and skip the psum's data movement.",
            )  # fmt: skip
        if not self.applies(ex):
            return CheckResult(self.name, True, "not measured here (p < 4 or m < 3)")
        want = self.expected(ex)
        got = trial.comms.count(PERMUTE)
        evidence.append(CountExpectation(PERMUTE, want, got))
        low, high = want - self.slack, want + self.slack
        if got is None:
            return CheckResult(
                self.name, False, "a permute sits in a loop whose trip count is unknown",
                evidence=evidence,
                hint="Loop over the ticks with lax.fori_loop(0, n_micro + p - 1, …): Python int "
                "bounds make it a scan of known length.",
            )  # fmt: skip
        sends = f"{got} permutes; {self.formula} = {want}"
        if not low <= got <= high:
            return CheckResult(
                self.name, False, f"{sends} (± {self.slack})", evidence=evidence,
                hint=_ticks_hint(ex, got, want),
            )  # fmt: skip
        if self.loop:
            failure = _one_loop(trial, low, high)
            if failure:
                unrolled = not any(s.loops for s in trial.program.collectives if s.kind == PERMUTE)
                return CheckResult(self.name, False, failure, evidence=evidence,
                                   hint=LOOP_HINT + (UNROLLED if unrolled else ""))  # fmt: skip
        where = " in one loop" if self.loop else ""
        return CheckResult(self.name, True, f"{sends}{where}", evidence=evidence)


LOOP_HINT = (
    "Run the ticks in one lax.fori_loop (or lax.scan) of n_micro + p − 1 iterations, one "
    "ppermute per iteration."
)
UNROLLED = " No ppermute sits in a loop: a Python loop is unrolled into copies of the whole step."


def _one_loop(trial: Trial, low: int, high: int) -> str | None:
    """Why the traced program's permutes are not all in one loop of low … high iterations."""
    sites = [s for s in trial.program.collectives if s.kind == PERMUTE]
    if not sites:
        return None
    outside = sum(1 for s in sites if not s.loops)
    if outside == len(sites):
        return "every ppermute runs outside any loop: the ticks are unrolled in Python"
    if outside:
        return (
            f"{outside} of the {len(sites)} ppermutes run outside any loop; the ticks are one loop"
        )
    loops = {id(s.loops[-1]): s.loops[-1] for s in sites}
    if len(loops) > 1:
        return f"the ppermutes sit in {len(loops)} different loops; the ticks are one loop"
    (loop,) = loops.values()
    if loop.length is not None and not low <= loop.length <= high:
        return f"the ppermutes sit in a loop of {loop.length} iterations; expected {low} … {high}"
    return None


def _ticks_hint(ex: Example, got: int, want: int) -> str:
    p, m = ex["p"], ex["m"]
    if got == m * (p - 1):
        return (
            f"{got} = m·(p − 1) permutes: each micro-batch goes through every stage before the "
            "next one starts, so only one stage works at a time. Pipeline them: at tick t stage "
            "s runs micro-batch t − s, m + p − 1 ticks in all."
        )
    if got > want:
        return "More permutes than ticks: send once per tick, the micro-batch your stage just ran."
    return "Fewer permutes than ticks: every micro-batch must travel through every stage."
