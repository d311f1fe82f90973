"""Grade a lesson: draw examples, run them, hold checks.

The engine is the core's top: it is handed a backend (:mod:`grader.backend`:
where the student's code runs) by whoever starts it, and imports nothing of
:mod:`grader.sandbox`, which sits above it and runs it (the grading worker,
``grader.sandbox.worker``, with time limits and crash isolation; the tests and
``course dev`` through :func:`grader.sandbox.backends.grade_lesson`). Faults are
:mod:`grader.faults`, the events it emits :mod:`grader.events`.

It is single-threaded: it runs an exercise's examples one after another, each
in its turn, through the backend's :class:`~grader.backend.Examples`, and tells
them which exercise's examples come next (drawn before the exercise runs);
whatever is prepared ahead of an example's turn (the sandbox's next example,
received and compiled while one runs, the next exercise's first while an
exercise's last runs) is the backend's, behind that interface. So the
time limit (:func:`time_limit`, a signal) is set in the thread that grades,
around every example.
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader import phases
from grader.backend import Backend, BackendFactory, Examples, ExamplesFor, Here
from grader.config import GradeConfig
from grader.events import (
    REPORT,
    Event,
    ExampleStarted,
    ExerciseGraded,
    ImportStarted,
    LessonStarted,
    unfinished,
)
from grader.evidence import Evidence, Note
from grader.faults import (
    ExampleTimeout,
    GraderFault,
    HostCall,
    HostLimit,
    LoadError,
    SpecFaultThere,
    StudentFault,
    StudentProcessDied,
    StudentReturnError,
)
from grader.loader import format_student_error
from grader.results import CheckResult, ExerciseResult, LessonResult, Status
from grader.runtime import Runtime
from grader.spec import (
    FULL,
    LESSONS,
    MESH_SIZES,
    POOL,
    Context,
    Draws,
    Example,
    ExerciseSpec,
    LessonSpec,
    about,
    contrast,
    draw_examples,
    format_example,
    load_spec,
)

Listener = Callable[[Event], None]


RESTART_LIMIT = 120.0
"""Seconds a fresh student's process may take to start and import the module
again after the last one hung or died: never charged to an example's own limit
(a busy machine can take several seconds to import jax)."""


class BadExample(Exception):
    """An example given with ``--example`` that the exercise cannot be set up for."""


def context(simulated: bool = False) -> Context:
    """The devices at hand (``simulated``: the simulated CPU devices); with as
    many as the largest mesh, the full context."""
    from grader.measure import devices

    n = len(devices.devices(simulated))
    if n >= FULL.n_devices:
        return FULL
    return Context(n_devices=n, mesh_sizes=tuple(s for s in MESH_SIZES if s <= n))


def examples_for(
    spec: ExerciseSpec, ctx: Context, seed: int, n: int | None = None, draws: Draws | None = None
) -> list[Example]:
    """The explicit examples, then ``n`` drawn ones (the spec's number by default),
    kept by ``draws`` (:func:`grader.spec.draw_examples`)."""
    n = spec.max_examples if n is None else n
    explicit = spec.explicit(ctx)
    kept_as = _kept_as(spec, ctx)
    drawn = draw_examples(spec.strategy(ctx), n, seed, explicit, kept_as, draws) if n else []
    return explicit + drawn


def _kept_as(spec: ExerciseSpec, ctx: Context) -> str:
    """What an exercise's draws are kept as: its name, where its strategy and its
    run are defined (its lesson), the context."""

    def where(f: Any) -> str:
        return f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}"

    return f"{spec.name} {where(spec.strategy)} {where(spec.run)} {ctx!r}"


def plan(
    spec: ExerciseSpec,
    ctx: Context,
    *,
    seed: int = 0,
    example: Example | None = None,
    max_examples: int | None = None,
    draws: Draws | None = None,
) -> tuple[list[Example], str | None]:
    """The examples to run, and why they do not count (None when they are the
    full set: every example a grade on :data:`FULL` runs, for this seed)."""
    if example is not None:
        return [example], "one example (--example), not the full set"
    wanted = spec.max_examples if max_examples is None else max_examples
    examples = examples_for(spec, ctx, seed, min(wanted, spec.max_examples), draws)
    if wanted > spec.max_examples:  # the full set, and more on top
        examples += draw_examples(
            spec.strategy(ctx), wanted - spec.max_examples, seed, exclude=examples
        )
    if wanted < spec.max_examples:
        return examples, (
            f"{wanted} drawn example{'s' if wanted != 1 else ''} (--max-examples) "
            f"where a grade draws {spec.max_examples}"
        )
    missing = devices_missing(spec, ctx, seed, examples, draws)
    if missing:
        return examples, (
            f"{ctx.n_devices} device{'s' if ctx.n_devices != 1 else ''} here; {len(missing)} "
            f"example{'s' if len(missing) != 1 else ''} of the full set need more, "
            f"e.g. {format_example(missing[0])}"
        )
    return examples, None


def devices_missing(
    spec: ExerciseSpec, ctx: Context, seed: int, examples: list[Example] | None = None,
    draws: Draws | None = None,
) -> list[Example]:  # fmt: skip
    """Examples of the full set that ``ctx`` cannot run (it has too few devices)."""
    if ctx == FULL:
        return []
    have = examples if examples is not None else examples_for(spec, ctx, seed, draws=draws)
    return [e for e in examples_for(spec, FULL, seed, draws=draws) if e not in have]


@contextmanager
def time_limit(seconds: float | None):
    """Interrupt Python-level work after ``seconds`` (a ``SIGALRM``: the grading
    worker grades in its main thread, where signals are handled; graded from
    another thread, e.g. a test's, nothing is interrupted).

    Compiled code that never returns cannot be interrupted this way; the
    parent process (``grader.sandbox.runner``) kills the worker as a backstop.
    An alarm that lands where Python only prints the exception and drops it (a gc
    callback, such as hypothesis's; a weakref callback the collector runs; a
    ``__del__``) was lost, and a loop that never returns ran on for good: Python hands
    such an exception to ``sys.unraisablehook``, which, for the block, raises it again
    50 ms later.
    """
    if not seconds:
        yield
        return

    def expire(signum, frame):
        raise ExampleTimeout(f"no result after {seconds:g} s")

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread: only it may set a handler
        yield
        return
    hook = sys.unraisablehook

    def dropped(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, ExampleTimeout):
            signal.setitimer(signal.ITIMER_REAL, 0.05)  # lost where it landed: again
            return
        hook(unraisable)

    sys.unraisablehook = dropped
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.unraisablehook = hook


def grade_lesson(
    lesson: int,
    module: str,
    directory: Path,
    *,
    only: list[str] | None = None,
    seed: int = 0,
    example: dict | None = None,
    max_examples: int | None = None,
    timeout: float | None = None,
    on_event: Listener | None = None,
    backend: BackendFactory | None = None,
    lessons: str = LESSONS,
    config: GradeConfig | None = None,
) -> LessonResult:
    """Grade the exercises of one lesson found in ``directory``.

    ``backend`` says where the student's code runs (:class:`~grader.backend.Backend`):
    by default in this process, without clusters (the sandbox hands the others:
    :mod:`grader.sandbox.backends`). ``lessons``: the package the lesson's folder
    is in (a test's own lesson). ``config``: what else the grade depends on (a
    fresh :class:`~grader.config.GradeConfig` by default)."""
    emit = on_event or (lambda e: None)
    start = time.perf_counter()
    config = config or GradeConfig()
    with phases.phase("spec import"):
        spec = load_spec(module, lessons)
    names = only or [e.name for e in spec.exercises]
    if example is None and _needs_simulation(spec, names, seed, config):
        config = replace(config, simulated=True)
    factory = backend or (lambda directory, module: Here(directory, module, lessons=lessons))
    chosen = factory(Path(directory), module)
    try:
        return _grade_lesson(lesson, module, spec, names, directory, seed, example,
                             max_examples, timeout, emit, start, chosen, config)  # fmt: skip
    finally:
        chosen.close()


def _grade_lesson(
    lesson: int, module: str, spec: LessonSpec, names: list[str], directory: Path, seed: int,
    example: dict | None, max_examples: int | None, timeout: float | None, emit: Listener,
    start: float, backend: Backend, config: GradeConfig,
) -> LessonResult:  # fmt: skip
    from grader.measure import devices

    described = devices.describe(config.simulated)
    graded: list[ExerciseResult] = []
    emit(LessonStarted(lesson, described, backend.sandbox))

    def record(er: ExerciseResult) -> None:
        graded.append(er)
        emit(ExerciseGraded(lesson, er))

    def done() -> LessonResult:
        return LessonResult(lesson, str(directory), tuple(graded), described, seed,
                            time.perf_counter() - start, backend.sandbox)  # fmt: skip

    try:
        with (
            time_limit(timeout and max(timeout, RESTART_LIMIT)),
            phases.phase("wait: student's process start"),
        ):
            backend.prepare()  # before ImportStarted: the runner's deadline is not the import's yet
        emit(ImportStarted(lesson))
        with time_limit(timeout), phases.phase("wait: student's module import"):
            mod = backend.load()
    except (LoadError, ExampleTimeout) as exc:
        status = Status.TIMEOUT if isinstance(exc, ExampleTimeout) else Status.ERROR
        why = (
            f"importing {module}.py did not finish: {exc}" if status == Status.TIMEOUT else str(exc)
        )
        for name in names:
            record(unfinished(lesson, name, status, why))
        return done()
    except GraderFault as exc:  # e.g. no sandbox could be made for the student's process
        for name in names:
            record(unfinished(lesson, name, Status.FAULT, _grader_fault(exc)))
        return done()
    ctx = context(config.simulated)
    defined = [name for name in names if callable(getattr(mod, name, None))]
    planned: dict[str, Planned] = {}

    def planned_for(name: str) -> Planned:
        """Its examples drawn and handed to the backend, once."""
        if name not in planned:
            planned[name] = plan_exercise(
                spec.exercise(name), getattr(mod, name), ctx, seed=seed, example=example,
                max_examples=max_examples, config=config, runs=backend.examples,
                runtime=functools.partial(_runtime, backend, name, spec.compiler_options, config),
            )  # fmt: skip
        return planned[name]

    for name in names:
        if name not in defined:
            record(unfinished(lesson, name, Status.ERROR,
                              f"{module}.py defines no function {name}() — was it renamed or deleted?"))  # fmt: skip
            continue
        this = planned_for(name)
        after = defined[defined.index(name) + 1 :]
        if after:  # the backend may prepare its first example while this one's last runs
            with contextlib.suppress(Exception):  # its own grade draws again, and says why
                this.runs.followed_by(planned_for(after[0]).runs)
        record(grade_exercise(
            lesson, spec.exercise(name), getattr(mod, name), ctx, directory=Path(directory),
            seed=seed, example=example, max_examples=max_examples, timeout=timeout, emit=emit,
            config=config, planned=this,
        ))  # fmt: skip
    return done()


def _runtime(
    backend: Backend, name: str, options: dict[str, Any] | None, config: GradeConfig,
    example: Example, following: Example | None,
) -> Runtime:  # fmt: skip
    """The backend's runtime for ``example``, with the lesson's compiler options
    and its devices (simulated or not)."""
    rt = backend.runtime(name, example, following, simulated=config.simulated)
    rt.compiler_options = options
    rt.simulated = config.simulated
    return rt


def draw_ahead(
    module: str, names: Sequence[str], seed: int, config: GradeConfig,
    max_examples: int | None = None,
) -> None:  # fmt: skip
    """Draw the examples a grade of ``names`` of ``module`` on ``seed`` will run, into
    ``config``'s draws (its memo: a serving worker's, shared by its grades), by the
    very calls :func:`grade_lesson` makes, so that that grade finds them drawn."""
    spec = load_spec(module)
    if _needs_simulation(spec, list(names), seed, config):
        config = replace(config, simulated=True)
    ctx = context(config.simulated)
    for name in names:
        plan(spec.exercise(name), ctx, seed=seed, max_examples=max_examples, draws=config.draws)


def _grader_fault(exc: GraderFault) -> str:
    """What a verdict says of the grader's failure: a host's limit in its own
    sentence (:class:`~grader.faults.HostLimit`), anything else as a bug to report."""
    return str(exc) if isinstance(exc, HostLimit) else f"internal grader error: {exc} — {REPORT}"


def _needs_simulation(spec: LessonSpec, names: list[str], seed: int, config: GradeConfig) -> bool:
    """On fewer accelerators than the lesson's full example set needs, grade it on
    simulated CPU devices instead, when there are enough of those."""
    from grader.measure import devices

    if config.simulated:
        return False  # simulated already
    if not devices.on_accelerators() or devices.cpu_device_count() < FULL.n_devices:
        return False
    ctx = context()
    return any(
        devices_missing(spec.exercise(name), ctx, seed, draws=config.draws) for name in names
    )


def grade_exercise(
    lesson: int,
    spec: ExerciseSpec,
    fn: Callable[..., Any],
    ctx: Context,
    *,
    directory: Path,
    seed: int = 0,
    example: dict | None = None,
    max_examples: int | None = None,
    timeout: float | None = None,
    emit: Listener = lambda e: None,
    runtime: Callable[[Example, Example | None], Runtime] | None = None,
    runs: ExamplesFor = Examples,
    config: GradeConfig | None = None,
    planned: Planned | None = None,
) -> ExerciseResult:
    """Grade one exercise: ``runtime(example, following)`` gives each example's
    runtime (in this process, on salt 0, by default); ``runs``: how its examples
    run, one by one in order (the backend's :meth:`~grader.backend.Backend.examples`:
    the sandbox's prepares the next example while one runs; verdicts, events and
    the questions the student's process is asked are the same as one after
    another). ``config``: where the draws are kept, and the devices (a fresh
    :class:`~grader.config.GradeConfig` by default). ``planned``: its examples,
    drawn and handed to the backend already (:func:`plan_exercise`: the lesson's
    grade does it for the next exercise before this one runs)."""
    start = time.perf_counter()
    if planned is None:
        planned = plan_exercise(
            spec, fn, ctx, seed=seed, example=example, max_examples=max_examples,
            runtime=runtime, runs=runs, config=config,
        )  # fmt: skip
    try:
        return _grade_exercise(
            lesson, spec, planned.examples, planned.narrowed, start, directory, example, timeout,
            emit, planned.runs, fixed=spec.explicit(ctx),
        )  # fmt: skip
    finally:
        planned.runs.close()  # an example prepared ahead after one that failed: not wanted


@dataclass(frozen=True)
class Planned:
    """An exercise's examples, drawn, and how they run (the backend's)."""

    examples: list[Example]
    narrowed: str | None
    """Why they do not count (:func:`plan`)."""
    runs: Examples


def plan_exercise(
    spec: ExerciseSpec,
    fn: Callable[..., Any],
    ctx: Context,
    *,
    seed: int = 0,
    example: dict | None = None,
    max_examples: int | None = None,
    runtime: Callable[[Example, Example | None], Runtime] | None = None,
    runs: ExamplesFor = Examples,
    config: GradeConfig | None = None,
) -> Planned:
    """Draw an exercise's examples (:func:`plan`) and hand them to ``runs`` (see
    :func:`grade_exercise`); nothing of them runs yet."""
    from grader.runtime import InProcess

    config = config or GradeConfig()

    def here(ex: Example, following: Example | None) -> Runtime:
        rt = InProcess(ex)
        rt.simulated = config.simulated
        return rt

    with phases.phase("draw examples"):
        examples, narrowed = plan(
            spec, ctx, seed=seed, example=example, max_examples=max_examples, draws=config.draws
        )
    return Planned(examples, narrowed, runs(spec, examples, lambda: _Called(fn), runtime or here))


def _grade_exercise(
    lesson: int, spec: ExerciseSpec, examples: list[Example], narrowed: str | None,
    start: float, directory: Path, example: dict | None, timeout: float | None,
    emit: Listener, runs: Examples, fixed: Sequence[Example] = (),
) -> ExerciseResult:  # fmt: skip
    trials: list[Any] = []
    """Trials of the examples passed so far."""
    totals: list[float] = [0.0] * len(spec.checks)
    """Each check's time over the examples run."""
    last: list[CheckResult] = []
    """The last example's checks: a pass shows their evidence."""
    said: list[list[str]] = []
    """Each passed example's check messages, in check order."""

    def finish(status: Status, **fields: Any) -> ExerciseResult:
        """The result, built once with every field known (the checks of the last
        example passed, unless ``fields`` says which)."""
        fields.setdefault("checks", last)
        return ExerciseResult(
            lesson, spec.name, status, narrowed=narrowed, duration=time.perf_counter() - start,
            examples_run=len(trials) + (status != Status.PASSED), **fields,
        )  # fmt: skip

    for index, ex in enumerate(examples):
        shown = format_example(ex)
        try:  # not this example's time: a fresh student's process after a hang or crash
            with time_limit(timeout and max(timeout, RESTART_LIMIT)):
                called = runs.start(index)
        except ExampleTimeout as exc:
            return finish(
                Status.TIMEOUT, example=shown,
                error=f"the process that runs your code did not start again in time: {exc}",
            )  # fmt: skip
        except StudentProcessDied as exc:
            return finish(
                Status.ERROR, example=shown,
                error=f"The process running your code stopped while it started again: {exc}.",
            )  # fmt: skip
        except GraderFault as exc:
            return finish(Status.FAULT, example=shown, error=_grader_fault(exc))
        emit(ExampleStarted(lesson, spec.name, index, shown))  # its time limit starts now
        try:
            with time_limit(timeout), phases.phase("example (spec.run, all inside)"):
                trial = runs.run(index)
        except NotImplementedError as exc:
            return finish(Status.NOT_STARTED, example=shown, error=str(exc) or None)
        except StudentReturnError as exc:
            hint = exc.hint or (
                spec.diagnose_error(exc, ex, _examples(trials)) if spec.diagnose_error else None
            )
            check = CheckResult("returns", False, str(exc), example=shown, hint=hint)
            return finish(Status.FAILED, checks=[check], example=shown, hint=hint)
        except GraderFault as exc:
            return finish(Status.FAULT, example=shown, error=_grader_fault(exc))
        except SpecFaultThere as exc:  # the grader's code failed there, it says
            return finish(
                Status.ERROR, example=shown,
                error=f"The grader's own code failed in the process running your code while "
                f"it ran {spec.name}: {exc}.",
                hint="That process also runs your module, so the grader cannot tell whose "
                "failure this is. If your code changes nothing of the grader's or jax's "
                f"modules (no monkeypatching), it is {REPORT}.",
            )  # fmt: skip
        except StudentFault as exc:  # what that process says cannot be the grader's fault
            return finish(
                Status.ERROR, example=shown,
                error=f"The process running your code reported a failure while it ran "
                f"{spec.name}: {exc}.",
                hint="That process imports your module, so your code is what can make it fail: "
                "look for code that changes the grader's or jax's modules (monkeypatching), "
                "or that runs when your module is imported.",
            )  # fmt: skip
        except StudentProcessDied as exc:
            return finish(
                Status.ERROR, example=shown,
                error=f"The process running your code stopped while it ran {spec.name}: {exc}.",
                hint="Look for os._exit, sys.exit, os.kill or a crash (segfault) in your code.",
            )  # fmt: skip
        except HostCall as exc:
            check = CheckResult("returns", False, str(exc), example=shown)
            return finish(Status.FAILED, checks=[check], example=shown)
        except ExampleTimeout as exc:
            return finish(
                Status.TIMEOUT, example=shown,
                error=f"{spec.name} did not finish on this example: {exc}",
                hint=getattr(exc, "hint", None)
                or "Look for a loop whose exit condition never becomes true.",
            )  # fmt: skip
        except Exception as exc:
            if not called.count and not hasattr(exc, "student_text"):
                # it failed before your function ran: the grader's doing
                if example is not None:
                    raise BadExample(f"{spec.name} cannot be run on it ({exc!r})") from None
                return finish(Status.FAULT, example=shown,
                              error=f"internal grader error while setting up this example: {exc!r} — {REPORT}")  # fmt: skip
            hint = spec.diagnose_error(exc, ex, _examples(trials)) if spec.diagnose_error else None
            return finish(
                Status.ERROR, example=shown,
                error=format_student_error(exc, directory), hint=hint or _generic_error_hint(exc),
            )  # fmt: skip
        checks = []
        for i, check in enumerate(spec.checks):
            t = time.perf_counter()
            try:
                cr = check(trial)
            except Exception as exc:  # a grader bug must not look like a student bug
                return finish(Status.FAULT, example=shown,
                              error=f"internal grader error in the {check.name!r} check: {exc!r} — {REPORT}")  # fmt: skip
            took = time.perf_counter() - t
            phases.add("checks", took)
            totals[i] += took
            checks.append(replace(cr, duration=took, example=cr.example if cr.passed else shown))
        failed = [c for c in checks if not c.passed]
        if failed:
            hint = next((c.hint for c in failed if c.hint), None)
            apart = contrast(_examples(trials), ex)  # what the passed examples all had
            if apart is not None:
                hint = f"{hint} {apart}" if hint else apart
            return finish(
                Status.FAILED, checks=checks, example=shown, hint=hint,
                explanation=_explain(spec, [trial]), about=about(spec, ex, fixed),
            )  # fmt: skip
        trials.append(trial)
        last = checks
        said.append([c.message for c in checks])
    return finish(
        Status.PASSED,
        checks=[_over_all(c, [m[i] for m in said], took)
                for i, (c, took) in enumerate(zip(last, totals))],
        explanation=_explain(spec, trials),
    )  # fmt: skip


def _over_all(check: CheckResult, messages: list[str], duration: float) -> CheckResult:
    """A passed check as shown for the whole exercise: the last example's evidence,
    its time summed over the examples, and :func:`over_examples` of their messages."""
    return replace(check, message=over_examples(messages), duration=duration)


NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def over_examples(messages: list[str]) -> str:
    """One line for what a check said on each passed example, true of all of them:
    the message, "— on all N examples", when every example said the same; where only
    figures differ, each figure that varies as its range ("0–2,560 bytes sent …");
    else each distinct message with how many examples said it. Never the last
    example's words as if every example had said them."""
    n = len(messages)
    if n <= 1 or len(set(messages)) == 1:
        return messages[-1] + (f" — on all {n} examples" if n > 1 else "") if messages else ""
    forms = [NUMBER.split(m) for m in messages]
    if all(f == forms[0] for f in forms):
        figures = [NUMBER.findall(m) for m in messages]
        out = forms[0][0]
        for k in range(len(figures[0])):
            values = [f[k] for f in figures]
            shown = values[0]
            if len(set(values)) > 1:
                by = sorted(values, key=lambda v: float(v.replace(",", "")))
                shown = f"{by[0]}–{by[-1]}"
                before, after = forms[0][k][-1:], forms[0][k + 1][:1]
                if (before and before in "·×/^") or (after and after in "·×/^"):
                    shown = f"({shown})"  # a figure inside a product: 2·(12–24)·2
            out += shown + forms[0][k + 1]
        return f"{out} — on all {n} examples"
    counted: dict[str, int] = {}
    for m in messages:
        counted[m] = counted.get(m, 0) + 1
    parts = [f"{m} ({c} example{'s' if c > 1 else ''})" for m, c in counted.items()]
    return f"on all {n} examples: " + "; ".join(parts)


class _Called:
    """The student's function, counting its calls: an exception before the
    first call comes from the grader's side of the example."""

    def __init__(self, fn: Callable[..., Any]):
        functools.update_wrapper(self, fn)
        self.fn, self.count = fn, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        return self.fn(*args, **kwargs)


def example_problem(module: str, name: str, example: Example) -> str | None:
    """Why exercise ``name`` cannot take ``example`` (given with ``--example``),
    judged against the examples it draws itself: the same keys, values of the
    same kinds, words from the same set. None when it can."""
    spec = load_spec(module).exercise(name)
    ctx = context()
    explicit = spec.explicit(ctx)
    pool = explicit + draw_examples(spec.strategy(ctx), POOL, 0, exclude=explicit)
    alike = [ex for ex in pool if set(ex) == set(example)]
    if not alike and pool:
        keys = list(pool[0])
        missing = [k for k in keys if k not in example]
        extra = [k for k in example if k not in keys]
        said = ([f"no {', '.join(missing)}"] if missing else []) + (
            [f"{', '.join(extra)} is not one of its keys"] if extra else []
        )
        return f"{'; '.join(said)} (an example of {name}: {format_example(pool[0])!r})"
    for key, value in example.items():
        seen = {ex[key] for ex in alike}
        kinds = {type(v) for v in seen} | ({int} if tuple in {type(v) for v in seen} else set())
        if type(value) not in kinds:  # a 1-tuple is printed, and parsed back, as a number
            kind = {int: "a whole number", tuple: "a shape like 4x8"}.get(
                type(next(iter(seen))), "a word"
            )
            return f"{key}={format_example({key: value}).partition('=')[2]} is not {kind}"
        words = sorted(v for v in seen if isinstance(v, str))
        if isinstance(value, str) and value not in words:
            return f"{key} must be one of {', '.join(words)}, not {value!r}"
    return None


def _examples(trials: list[Any]) -> list[dict]:
    return [t.example for t in trials]


def _explain(spec: ExerciseSpec, trials: list[Any]) -> list[Evidence]:
    """The spec's report material; a failure here must never change a verdict."""
    if spec.explain is None or not trials:
        return []
    try:
        return spec.explain(trials)
    except Exception as exc:  # report material only
        return [Note(f"could not prepare the explanation: {exc!r}")]


def _generic_error_hint(exc: Exception) -> str | None:
    from grader.checks import vma

    text = str(exc)
    found = vma.read(exc)
    if found is not None:
        return vma.explain(found)
    if "ppermute" in text and "perm" in text:
        return "Every (source, destination) pair of a ppermute must name devices in 0 … N−1, each at most once as source and once as destination."
    return None
