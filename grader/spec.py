"""What a lesson's grading spec declares, and the examples it draws.

A lesson's spec module ``grader/lessons/lNN_slug/spec.py`` defines ``SPEC = LessonSpec(...)``
listing one :class:`ExerciseSpec` per exercise: how to draw examples, how to
run the student's function on one (producing a :class:`Trial`), and which
checks to hold the trial against.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.later import Later

if TYPE_CHECKING:
    import numpy as np

Example = dict[str, Any]
"""One drawn example: ordered named values (ints, strings, tuples of ints)."""

Run = Callable[[Any, Callable[..., Any], Example], "Trial"]
"""``run(rt, fn, ex) -> Trial``: run the student's ``fn`` on example ``ex``, given
the runtime ``rt`` (:class:`grader.runtime.Runtime`: the example's random source,
meshes, compile-and-run)."""


def example_rng(ex: Example, salt: int = 0) -> np.random.Generator:
    """The generator an example's input data is drawn from: its seed, mixed with
    ``salt``. Salt 0 (tests, reproducible) gives the seed's own data; the grading
    worker uses a secret salt, fresh per run, and the student's process a random
    one of its own, so the data a program is traced on there tells nothing about
    the data it is graded on (:class:`grader.runtime.Runtime`'s ``rng()`` and
    :meth:`Trial.rng`)."""
    import numpy as np

    seed = int(ex.get("seed", 0))
    return np.random.default_rng([seed, int(salt)] if salt else seed)


@dataclass(frozen=True)
class Context:
    """What the grading run knows about where it runs."""

    n_devices: int
    """Devices available for meshes."""
    mesh_sizes: tuple[int, ...]
    """1-D mesh sizes examples may use (a subset of :data:`MESH_SIZES`)."""


MESH_SIZES = (1, 2, 3, 4, 6, 8)
FULL = Context(n_devices=max(MESH_SIZES), mesh_sizes=MESH_SIZES)
"""Where a grade that counts draws its examples: every mesh size a lesson may use."""


REFERENCE = "expected from"
"""``trial.extra``'s key for the :class:`grader.later.Later` a trial's expected value was
computed from, once it has been: its reference and arguments, which
:mod:`grader.checks.variants` calls again on changed arguments."""


@dataclass
class Trial:
    """One example run: what went in, what came out, what it compiled to."""

    example: Example
    output: Any = None
    expected: Any = None
    """What the checks hold ``output`` to; ``run`` may set a :class:`grader.later.Later`,
    computed when first read (in the worker: the references are hidden elsewhere)."""
    comms: Any = None
    """A :class:`grader.measure.hlo.CommSummary`, for exercises that compile a program."""
    memory: dict[str, int] | None = None
    """``argument``/``output``/``temp`` bytes per device from memory_analysis."""
    mesh: Any = None
    inputs_intact: str | None = None
    """None when the inputs are unchanged, else what happened to them."""
    program: Any = None
    """The traced program (:class:`grader.measure.jaxpr.Program`): what the student wrote,
    with the dtypes it asked for, before XLA compiled it."""
    extra: dict[str, Any] = field(default_factory=dict)
    salt: int = 0
    """The data salt the example's inputs were drawn with (see :class:`grader.runtime.Runtime`)."""
    inputs: tuple = ()
    """The arguments the program ran on (the grader's own data): report material, for
    relations such as "equals an input unchanged" (:mod:`grader.checks.relate`)."""

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name == "expected" and isinstance(value, Later):
            # a reference ``run`` deferred (:func:`grader.later.later`): computed here,
            # in the worker, on first read; the student's process never reads it
            deferred, value = value, value.value()
            object.__setattr__(self, name, value)
            # kept for a failing check: the reference and its arguments (issue 45 §3)
            object.__getattribute__(self, "extra")[REFERENCE] = deferred
        return value

    def rng(self) -> Any:
        """The random source the example's inputs were drawn from: report material
        that re-derives the inputs (alternative diagnoses) must use this one."""
        return example_rng(self.example, self.salt)


class Check:
    """A small named check: ``check(trial) -> CheckResult``, its evidence typed
    (:mod:`grader.evidence`).

    ``name`` is what the student reads (``values``, ``steps``, ``bytes``) and what
    the catalogue of mistakes asserts on; one name stands for different checks in
    different lessons (lesson 5's ``steps`` counts collective-permutes, lesson 10's
    counts K/V rotations). :attr:`id` names the check itself, unique across the
    course: the check's class, by its module below ``grader`` and qualified name,
    then its name: ``checks.comms.Count:steps``,
    ``checks.ring_attention.RotationSteps:steps``. The class tells two rules of one
    name apart (two ``WeightsStay`` classes), the name one class's instances that
    check different things (``all-gather bytes``, ``reduce-scatter bytes``). A check
    that wraps another (``inner``) only to add a hint or to apply it leaf by leaf
    has the id of the check it wraps. A class may fix its id with a class attribute
    ``id = "…"``. ``tests/test_check_ids.py`` holds the ids of every lesson's spec
    unique: one id, one check; within an exercise, no id twice.
    """

    name: str = "check"

    @property
    def id(self) -> str:
        """Unique across the course (see the class's docstring)."""
        inner = getattr(self, "inner", None)
        if isinstance(inner, Check):
            return inner.id
        cls = type(self)
        return f"{cls.__module__.removeprefix('grader.')}.{cls.__qualname__}:{self.name}"

    def __call__(self, trial: Trial) -> Any:  # -> CheckResult
        raise NotImplementedError


@dataclass(frozen=True)
class ExerciseSpec:
    name: str
    """The function's name in the exercise module."""
    strategy: Callable[[Context], Any]
    """Context → hypothesis strategy of examples."""
    explicit: Callable[[Context], list[Example]]
    """Edge cases always run first: the smallest legal shape, an axis of size 1 …"""
    run: Run
    """``run(rt, fn, ex) -> Trial``: run the student's function on one example.

    The contract (ARCHITECTURE.md, "One run, as data flows"). ``run`` builds the
    example's inputs from ``rt.rng()`` and its meshes with ``rt.mesh``, hands each
    program it builds around ``fn`` to ``rt.compile_and_run`` and returns the
    :class:`Trial` the checks read (``expected`` set by ``run`` itself). It runs
    in two places, and must not tell which:

    - in the student's process, **once per example**, on decoy data: every
      program it hands over is traced and exported, in order, and never run;
      ``compile_and_run`` returns a trial whose ``output`` is decoy arrays of the
      traced shapes, dtypes and shardings. So a later program may take an earlier
      one's output (a decode step its prefill's cache), and the second program
      is traced on what the worker will hand it;
    - in the grading worker (or, for the tests, this process alone), on the
      real data: the k-th ``compile_and_run`` takes the k-th exported program,
      checks it, compiles and runs it here, so ``output`` holds real values.

    So: the programs, their number and their order depend on the example and
    the earlier programs' shapes only, never on values (the student's process
    sees decoys); whatever ``run`` computes from outputs is computed in the worker
    for real and in the student's process on decoys (wasted there, never trusted).
    A reference is never computed in ``run`` itself: ``trial.expected =
    later(reference, ...)`` (:func:`grader.later.later`) defers it to the first
    read, by a check, in the worker; a program input the grader derives from a
    reference has a same-shaped stand-in in the student's process
    (:func:`grader.later.in_worker`). ``fn`` called outside a program (plain
    Python, eager placement) runs in the student's process, on copies of its
    arguments. ``rt.compile_and_run(..., ours=True)`` (the grader's own program)
    and ``rt.cluster`` (lesson 13) run where ``run`` runs.

    The student's process imports the spec, so a spec holds no answer there: its
    formulas, known mistakes and the grader's own programs (:mod:`grader.expected`,
    hidden from that process) are reached through :func:`grader.later.expected`,
    only from the checks and from the ``run`` of an exercise that hands over no
    program (which never runs in the student's process)."""
    checks: Sequence[Check]
    max_examples: int = 6
    """Drawn examples on top of the explicit ones."""
    diagnose_error: Callable[[BaseException, Example, list[Example]], str | None] | None = None
    """Hint for an exception, given the examples that passed before it."""
    cluster: Callable[[Example], tuple[tuple[int, int], ...]] | None = None
    """Lesson 13: the clusters of student's processes, as (P, D), an example runs
    on (``rt.cluster``), its own first, then any to start ahead. The backend forms
    them before the example's time limit starts: the machine's time, not the student's."""
    tasks: Sequence[Callable[..., Any]] = ()
    """Lesson 13: the process-side functions its clusters' processes may run
    (``rt.cluster(P, D).run(exercise, task, payloads)``), each
    ``task(fn, payload, salt) -> plain data``, defined at the top of a module of
    the lesson's; no other is run there."""
    explain: Callable[[list[Trial]], list[Any]] | None = None
    """Report material (:mod:`grader.evidence` items) from the trials: all passed
    ones, or the failing one alone. Called once per exercise, never a verdict
    (see ExerciseResult.explanation)."""
    purpose: Callable[[Example], str | None] | None = None
    """What a fixed example (one of ``explicit``'s) is for, in one sentence: the
    contrast it holds (e.g. "an inf on one device: the step is skipped everywhere").
    Shown beside the numbers when a check fails on it (:func:`about`)."""


FEATURES: dict[str, str] = {
    "n": "a mesh of {} devices",
    "mesh": "mesh {}",
    "dtype": "{}",
    "step": "at step {}",
}
"""How a drawn example's field reads as a feature (the others read ``key = value``)."""


def about(spec: ExerciseSpec, example: Example, fixed: Sequence[Example]) -> str:
    """What the example is for: a fixed one's sentence (``spec.purpose``), a drawn one's
    distinguishing features (issue 45 §1)."""
    if any(example == f for f in fixed):
        said = spec.purpose(example) if spec.purpose is not None else None
        return f"a fixed example: {said}" if said else "a fixed example (one every grade runs)"
    features = [
        FEATURES.get(k, k + " = {}").format(v)
        for k, v in example.items()
        if k != "seed" and not isinstance(v, (dict, list))
    ]
    return "a drawn example" + (f": {', '.join(features)}" if features else "")


def contrast(passed: Sequence[Example], failing: Example) -> str | None:
    """What sets the failing example apart from every example that passed before it in
    this grade (issue 45 §1), measured, never a cause: a number field whose passed values
    (two or more distinct ones) were all powers of two, all even, all odd or all above 1,
    or were all 1, where the failing one's is not; a flag or a name every passed example had
    one value of, where the failing one's differs. None where nothing does, or fewer than
    two examples passed. ``"The 3 examples before this one passed, all with n a power of
    two (2, 4, 8); this is the first with n = 3."``"""
    if len(passed) < 2:
        return None
    found = []
    for key, value in failing.items():
        seen = [p[key] for p in passed if key in p]
        if key == "seed" or len(seen) < 2:
            continue
        if _number(value) and all(_number(v) for v in seen):
            distinct = sorted({int(v) for v in seen})
            if distinct == [1] and value != 1:  # a degenerate size: one row, one device
                found.append((f"{key} = 1", f"{key} = {value}"))
                continue
            if len(distinct) < 2:
                continue
            for words, holds in _PROPERTIES:
                if all(holds(v) for v in distinct) and not holds(value):
                    shown = ", ".join(map(str, distinct[:6])) + (", …" if len(distinct) > 6 else "")
                    found.append((f"{key} {words} ({shown})", f"{key} = {value}"))
                    break
        elif isinstance(value, bool | str) and len(set(map(repr, seen))) == 1 and seen[0] != value:
            found.append((f"{key} = {seen[0]}", f"{key} = {value}"))
    if not found:
        return None
    had = " and ".join(h for h, _ in found[:2])
    first = " and ".join(f for _, f in found[:2])
    return (f"The {len(passed)} examples before this one passed, all with {had}; this is the "
            f"first with {first}.")  # fmt: skip


def _number(v: Any) -> bool:
    """An integer (Python's or numpy's), not a flag."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


_PROPERTIES: tuple[tuple[str, Callable[[int], bool]], ...] = (
    ("a power of two", lambda v: v >= 1 and v & (v - 1) == 0),
    ("even", lambda v: v % 2 == 0),
    ("odd", lambda v: v % 2 == 1),
    ("above 1", lambda v: v > 1),
)
"""Properties of a number field a passed run may share and the failing one lack, the
most telling first (2, 4, 8 passed and 6 fails: not a power of two; 3 and 5 passed and 4
fails: not odd). ``1`` alone is a value, not a property: it is said as "above 1" where
every passed example had more."""


LESSONS = "grader.lessons"
"""The package holding every lesson's folder (a test may grade a lesson of its own
from another: ``grade_lesson``'s ``lessons``)."""


def load_spec(module: str, lessons: str = LESSONS) -> LessonSpec:
    """The grading spec of lesson ``module``: ``grader/lessons/<module>/spec.py``
    (``<lessons>.<module>.spec``)."""
    import importlib

    return importlib.import_module(f"{lessons}.{module}.spec").SPEC


@dataclass(frozen=True)
class LessonSpec:
    """A lesson's exercises, in the registry's order. The lesson's number and
    module name are the registry's (``course/course.toml``): a spec does not
    repeat them, so they cannot disagree."""

    exercises: Sequence[ExerciseSpec]
    compiler_options: dict[str, Any] | None = None
    """XLA options for every program the lesson compiles that asks for none itself:
    :data:`FAST_COMPILE` (or :data:`BACKEND_LEVEL_0`) where
    ``benchmarks/fast_compile.py`` found the compiled HLO's collectives and the
    memory analysis identical for every program of the solution and of the
    lesson's mistakes catalogue."""

    def exercise(self, name: str) -> ExerciseSpec:
        for ex in self.exercises:
            if ex.name == name:
                return ex
        names = ", ".join(e.name for e in self.exercises)
        raise KeyError(f"the spec has no exercise {name!r} (it has {names})")


BACKEND_LEVEL_0 = {"xla_backend_optimization_level": 0}
"""XLA's backend (code generation) optimisation off: the HLO passes run as
usual, so the compiled HLO (what the checks read: collectives, their bytes,
loops) and the memory analysis are the same; only the speed of the CPU code and
the last bits of some floating-point results change (measured per lesson with
``benchmarks/fast_compile.py``). Compiles take 20–40 % less time."""

LEGACY_EMITTERS = {"xla_cpu_use_fusion_emitters": False}
"""XLA:CPU's own kernel emitters instead of its MLIR fusion emitters (jaxlib 0.10;
newer XLA has no such option, and it is dropped there: :data:`OPTIONAL_OPTIONS`).
Compiles take about half the time (``benchmarks/fast_compile.py --option
xla_cpu_use_fusion_emitters=false``: 3.56 → 1.77 s for lesson 2's 41 programs,
12.5 → 4.6 s for lesson 12's 15). The compiled HLO differs only in whether a
lone scalar operation is wrapped in a fusion of its own: its collectives were the
same for every program of every lesson, solutions and mistakes catalogue, and so
was the memory analysis but in lessons 4 and 9 (4 of 53 and 3 of 20 programs
differ in temporary bytes), which therefore keep XLA's default emitters."""

FAST_COMPILE = {**BACKEND_LEVEL_0, **LEGACY_EMITTERS}
"""What a lesson compiles with where ``benchmarks/fast_compile.py`` found both
options leave collectives and memory as they are (see each)."""

OPTIONAL_OPTIONS = frozenset(LEGACY_EMITTERS)
"""Compile options that some XLA versions lack: where this one refuses one, it is
left out (:func:`grader.runtime.known_options`)."""


# ---------------------------------------------------------------- examples


def format_example(example: Example) -> str:
    """``{'n': 6, 'shape': (2, 3)}`` → ``'n=6 shape=2x3'`` (``--example`` form)."""
    parts = []
    for key, value in example.items():
        if isinstance(value, tuple):
            value = "x".join(str(v) for v in value) if value else "()"
        parts.append(f"{key}={value}")
    return " ".join(parts)


def parse_example(text: str) -> Example:
    """Inverse of :func:`format_example`."""
    out: Example = {}
    for token in text.replace(",", " ").split():
        key, sep, raw = token.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value in --example, got {token!r}")
        out[key] = _parse_value(raw)
    return out


def _parse_value(raw: str) -> Any:
    if raw == "()":
        return ()
    if raw.lstrip("-").isdigit():
        return int(raw)
    parts = raw.split("x")
    if len(parts) > 1 and all(p.isdigit() for p in parts):
        return tuple(int(p) for p in parts)
    return raw


FRESH_SEEDS = range(10**9, 10**10)
"""Where :func:`fresh_seed` draws from: the seed of a grade that records a pass
(``course grade``, ``course classroom``, the autograder), which the student cannot
know beforehand. Such a seed draws :data:`FRESH_EXAMPLES` of an exercise's examples
itself, the others are seed 0's (:func:`draw_examples`): no table of answers for
known examples passes, and most programs are those of earlier grades, compiled
already. Reported with the grade: ``--seed S`` draws the same examples again."""
FRESH_EXAMPLES = 2
"""Drawn examples per exercise a fresh seed draws itself (the rest are seed 0's, whose
programs earlier grades compiled). ``course grade 2`` of the solution, compile cache
warm, 2 cores at load 12-16: seed 0 5.5-9.4 s; every example fresh 8.0-8.4 s (against
5.5-5.7 s alternated); two fresh 5.7-10.3 s (against 5.9-9.4 s alternated: noise)."""


def fresh_seed() -> int:
    """A seed no one can know before the grade that draws it (:data:`FRESH_SEEDS`)."""
    import secrets

    return FRESH_SEEDS.start + secrets.randbelow(len(FRESH_SEEDS))


@dataclass(frozen=True)
class Draws:
    """Where drawn examples are kept, handed to whatever draws them (the engine,
    from its :class:`grader.config.GradeConfig`): nothing about it is a global.

    ``kept``: folders where draws are kept between processes (the worker names
    one, next to the compilation cache; none: kept in ``memo`` only).
    ``memo``: the draws made or read so far, keyed by everything a draw depends
    on (:func:`draw_examples`), so one object shared by several grades (a serving
    worker's) draws each once; a fresh one has none."""

    kept: tuple[Path, ...] = ()
    memo: dict[str, list[Example]] = field(default_factory=dict, compare=False, repr=False)


def draw_examples(
    strategy: Any,
    n: int,
    seed: int,
    exclude: Sequence[Example] = (),
    kept_as: str | None = None,
    draws: Draws | None = None,
) -> list[Example]:
    """``n`` distinct examples from a hypothesis strategy, deterministic for a seed,
    none of them in ``exclude`` (the explicit examples, which run anyway).

    ``kept_as`` names what the strategy is for (lesson, exercise, context: a
    strategy's repr need not tell two apart): then the draw is made once and
    kept (in ``draws``' memo, and in its ``kept`` folders), keyed by that name and
    everything else the draw depends on: the strategy's repr, ``n``, ``seed``,
    ``exclude``, hypothesis's version and the grader's own code. A kept draw is
    the list hypothesis draws (``tests/test_kept_draws.py``). Without ``draws``,
    a fresh :class:`Draws` (kept nowhere but for this call)."""
    draws = Draws() if draws is None else draws
    if seed in FRESH_SEEDS:  # seed 0's draw (kept), less what this seed draws itself
        fresh = min(FRESH_EXAMPLES, n)
        known = draw_examples(strategy, n, 0, exclude, kept_as, draws)[: n - fresh]
        key = _draw_key(kept_as or "", strategy, n, seed, exclude)
        if key not in draws.memo:  # one grade's draw: kept in memory, never on disk
            draws.memo[key] = hypothesis_draw(strategy, fresh, seed, [*exclude, *known])
        return known + [dict(ex) for ex in draws.memo[key]]
    if kept_as is None:
        return hypothesis_draw(strategy, n, seed, exclude)
    key = _draw_key(kept_as, strategy, n, seed, exclude)
    kept = draws.memo.get(key)
    if kept is None:
        kept = _read_kept(key, draws.kept)
    if kept is None:
        kept = hypothesis_draw(strategy, n, seed, exclude)
        _write_kept(key, kept, draws.kept)
    draws.memo[key] = kept
    return [dict(ex) for ex in kept]


def _draw_key(name: str, strategy: Any, n: int, seed: int, exclude: Sequence[Example]) -> str:
    import hashlib

    import hypothesis

    said = repr((hypothesis.__version__, _code_digest(), name, repr(strategy), n, seed,
                 list(exclude)))  # fmt: skip
    return hashlib.sha256(said.encode()).hexdigest()


@functools.cache
def _code_digest() -> str:
    """The grader's code (every strategy is in it): a change draws anew."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.rglob("*.py")):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _read_kept(key: str, folders: Sequence[Path]) -> list[Example] | None:
    import ast

    for folder in folders:
        try:
            kept = ast.literal_eval((folder / f"{key}.txt").read_text())
        except (OSError, ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(kept, list) and all(isinstance(ex, dict) for ex in kept):
            return kept
    return None


def _write_kept(key: str, examples: list[Example], folders: Sequence[Path]) -> None:
    """Keep ``examples`` where they read back equal (ints, words, shapes)."""
    import ast
    import contextlib
    import os

    text = repr(examples)
    try:
        same = ast.literal_eval(text) == examples
    except (ValueError, SyntaxError):
        same = False
    if not same:
        return
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
            staged = folder / f"{key}.{os.getpid()}.tmp"
            staged.write_text(text)
            os.replace(staged, folder / f"{key}.txt")  # whole or not at all


def hypothesis_draw(
    strategy: Any, n: int, seed: int, exclude: Sequence[Example] = ()
) -> list[Example]:
    """The draw itself (what :func:`draw_examples` keeps).

    Only hypothesis' generate phase runs (no shrinking, no database): the
    grader runs the examples itself afterwards, compiling each once.
    Hypothesis tries the simplest examples first (all minima: the same for
    every seed, often an explicit case, small cubes of shapes): so a larger
    pool is drawn and ``n`` of it are picked at random for the seed. Fewer
    than ``n`` come back only when the strategy cannot make more.
    """
    import random

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    drawn: list[Example] = []

    @settings(
        max_examples=max(POOL, n + n // 2) + len(exclude) + 1,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hseed(seed)
    @given(strategy)
    def collect(example: Example) -> None:
        if example not in drawn and example not in exclude:
            drawn.append(example)

    collect()
    if len(drawn) > n:
        picked = sorted(random.Random(seed).sample(range(len(drawn)), n))
        drawn = [drawn[i] for i in picked]
    return [_ordered_like(ex, exclude[0]) if exclude else ex for ex in drawn]


def _ordered_like(example: Example, model: Example) -> Example:
    """The example's fields in the order of an explicit one (hypothesis may draw
    a dict's keys in any order), so every example of an exercise reads alike."""
    rank = {key: i for i, key in enumerate(model)}
    return dict(sorted(example.items(), key=lambda kv: rank.get(kv[0], len(rank))))


POOL = 24
"""Candidates drawn at least, to pick examples from (drawing is cheap; compiling is not)."""
