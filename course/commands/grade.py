"""``course grade``: grade lessons in a worker process, record, report."""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from course import scoring
from course.commands.common import App, UsageProblem
from course.registry import Course, Lesson
from course.scoring import Verdict
from course.versions import versions
from grader.faults import HOST_LIMIT
from grader.repo import shipped
from grader.results import ExerciseResult, LessonResult, Status
from grader.sandbox.protocol import DEFAULT_TIMEOUT, Event

if TYPE_CHECKING:
    from rich.text import Text

    from grader.sandbox.runner import Worker

INTERRUPTED = 130
"""Exit status after Ctrl-C, as shells report SIGINT (128 + the signal's number)."""
GRADER_FAULT = 3
"""Exit status when the grader's own code failed: nothing of it was recorded."""
OTHER_WRITER = (
    "warning: {db} was written by another process while grading ran. If no other course "
    "command (course watch, a second course grade) was running, the code under test wrote "
    "it: progress from this workspace is then not to be trusted."
)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Ctrl-C, ``kill``/``timeout``, a closed terminal: each stops grading the same way."""


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; grading is stopped like on Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into :class:`Stopped` in the main
    thread; the first one only, so that the worker is stopped and the attempt
    closed without a second signal cutting that short."""

    def stop(signum, frame):
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; KeyboardInterrupt still works there
        return
    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def stdout_kept_for_json(as_json: bool) -> Iterator[int]:
    """The file descriptor the JSON document goes to. With ``--json``, fd 1
    points at stderr while grading runs, so nothing else (a student's code
    writing to ``/proc/<our pid>/fd/1``) can land in the document."""
    if not as_json:
        yield 1
        return
    sys.stdout.flush()
    saved = os.dup(1)  # not inherited by the worker
    os.dup2(2, 1)
    try:
        yield saved
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@dataclass
class Target:
    lessons: list[Lesson]
    exercise: str | None = None


def parse_target(app: App, target: str | None, all_lessons: bool) -> Target:
    if all_lessons:
        if target:
            raise click.UsageError("give a lesson or --all, not both")
        return Target(list(app.course.lessons))
    if not target:
        return Target([current_lesson(app)])
    number, _, exercise = target.partition(".")
    if not re.fullmatch(r"[0-9]{1,6}", number):  # ASCII digits only: "²".isdigit() is true
        raise UsageProblem(f"{target!r}: expected N or N.exercise, e.g. 2 or 2.ring_all_gather")
    try:
        lesson = app.course.lesson(int(number))
    except KeyError as exc:
        raise UsageProblem(str(exc.args[0])) from None
    if exercise:
        names = [e.name for e in lesson.exercises]
        if exercise not in names:
            raise UsageProblem(
                f"lesson {lesson.number} has no exercise {exercise!r} (it has {', '.join(names)})"
            )
    return Target([lesson], exercise or None)


def current_lesson(app: App) -> Lesson:
    """The first lesson that does not pass yet (the last one if all do)."""
    states = app.states()

    def passes(lesson: Lesson) -> bool:
        statuses = {
            e.name: s.status for e in lesson.exercises if (s := states.get((lesson.number, e.name)))
        }
        return lesson.scorecard(statuses).passed

    return next(
        (lesson for lesson in app.course.lessons if not passes(lesson)), app.course.lessons[-1]
    )


def grade(
    app: App, target: str | None, *, all_lessons: bool = False, solutions: bool = False,
    path: str | None = None, seed: int | None = None, example: str | None = None, as_json: bool = False,
    timeout: float = DEFAULT_TIMEOUT, devices: int | None = None, cpu: bool = False,
    max_examples: int | None = None, progress_line: Callable[[str], None] | None = None,
    deliver: Callable[[Verdict], None] | None = None, worker: Worker | None = None,
) -> int:  # fmt: skip
    """Grade; print the report (or JSON) and return the exit status.

    A notebook passes ``progress_line`` (shown instead of the terminal's spinner)
    and ``deliver`` (gets the verdict, results and scorecards, instead of the report).
    ``course watch`` and the notebook pass the ``worker`` they keep between grades.
    ``seed`` None (the default) draws a fresh one (:func:`grader.spec.fresh_seed`) for a grade
    that records, reported with it: a pass is recorded only on examples the student could
    not know beforehand; with a seed given, passes are shown but kept aside, like a narrowed
    run's. A grade that records nothing (``--solutions``, ``--path``) draws from seed 0.
    """
    from grader.sandbox.protocol import ExampleStarted, ExerciseGraded, LessonJob, Request
    from grader.sandbox.runner import GraderCrashed, RequestRejected
    from grader.sandbox.runner import grade as run_grading
    from grader.spec import fresh_seed

    check_environment()
    chosen_seed = seed is not None
    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageProblem(f"--timeout {timeout:g}: give a number of seconds above 0, e.g. 60")
    chosen = parse_target(app, target, all_lessons)
    if example and not chosen.exercise:
        raise click.UsageError(
            "--example needs one exercise: course grade N.exercise --example '…'"
        )
    if solutions and path:
        raise click.UsageError("give --solutions or --path, not both")
    if solutions:
        directory, counted = shipped(app.root).solutions, False
    elif path:
        directory = Path(path).resolve()
        if not directory.is_dir():
            raise click.BadParameter(f"{path} is not a directory", param_hint="--path")
        counted = app.workspace is not None and directory == app.workspace.exercises
    else:
        app.ensure_workspace()
        directory, counted = app.ws.exercises, True
    next_seed = None
    if seed is None:  # a grade that records draws a seed no one knows; others repeat seed 0
        seed = 0
        if counted:  # a kept worker was told it with the grade before, and drew it ahead
            told = worker.next_seed if worker is not None else None
            seed = told if told is not None else fresh_seed()
            if worker is not None:  # each told seed is drawn from once, never again
                worker.next_seed = next_seed = None if example else fresh_seed()
    if example:
        from grader.spec import parse_example

        try:
            parse_example(example)
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
    request = Request(
        lessons=tuple(
            LessonJob(lesson.number, lesson.module,
                      (chosen.exercise,) if chosen.exercise else tuple(e.name for e in lesson.exercises))
            for lesson in chosen.lessons
        ),
        directory=str(directory), seed=seed, example=example, max_examples=max_examples,
        timeout=timeout, devices=devices, platform="cpu" if cpu else None,
        cache_dir=app.compile_cache(), examples_dir=app.kept_examples(),
        hidden=(str(app.workspace.home), str(app.workspace.db.parent)) if app.workspace else (),
        next_seed=next_seed,
    )  # fmt: skip
    command = as_command(  # as the student ran it: a fresh seed is drawn again, not repeated
        target, all_lessons=all_lessons, solutions=solutions, path=path,
        seed=seed if chosen_seed else None,
        example=example, timeout=timeout, devices=devices, cpu=cpu, max_examples=max_examples,
    )  # fmt: skip
    lessons = {lesson.number: lesson for lesson in chosen.lessons}
    console = app.console
    graded: dict[int, list[ExerciseResult]] = {n: [] for n in lessons}
    """What the worker graded so far, for the JSON document of an interrupted run."""
    with (
        app.progress(record=counted) as progress,
        stop_signals(),
        stdout_kept_for_json(as_json) as out,
    ):
        opened: dict[bool, int] = {}
        """Attempts, each opened with its first result (a run refused or stopped before
        has none): the run's own, and, aside (True), one for passes on a narrowed run,
        kept but never the student's progress (a failure counts on any example set)."""
        status = (
            None
            if as_json or progress_line or not console.is_terminal
            else console.status("starting the grader …")
        )
        line = progress_line or (status.update if status is not None else None)

        def on_event(event: Event) -> None:
            if isinstance(event, ExerciseGraded):
                er = event.result
                graded[er.lesson].append(er)
                if er.status == Status.FAULT:  # the grader's failure is not the student's attempt
                    return
                aside = (bool(er.narrowed) or chosen_seed) and er.passed and counted
                if aside not in opened:
                    opened[aside] = progress.start_attempt(
                        str(directory), counted and not aside, command, versions()
                    )
                scored = scoring.score(
                    lessons[er.lesson].exercise(er.exercise), er.status, not er.narrowed
                )
                progress.record(opened[aside], er, scored)
            elif isinstance(event, ExampleStarted) and line is not None:
                line(
                    f"grading {event.lesson}.{event.exercise} — example {event.index + 1}: {event.example}"
                )

        def close(state: str) -> None:
            for attempt in opened.values():
                progress.finish_attempt(attempt, state)

        mark = progress.version_mark()
        try:
            if status is not None:
                status.start()
            results = run_grading(
                request, on_event, worker=worker, early=app.early, debug=app.debug
            )
        except RequestRejected as exc:
            raise UsageProblem(str(exc)) from None
        except GraderCrashed as exc:
            close("grader fault")
            _say(f"internal grader error — not your code's fault:\n{exc}")
            return GRADER_FAULT
        except KeyboardInterrupt as exc:
            close("interrupted")
            if status is not None:
                status.stop()
            _say("\nInterrupted. Results recorded so far are kept.")
            if as_json:
                partial = [
                    LessonResult(n, str(directory), exercises=tuple(ers), seed=seed)
                    for n, ers in graded.items()
                ]
                so_far = scoring.verdict([lessons[r.lesson] for r in partial], partial)
                _json_to(out, {**so_far.to_json(), "interrupted": True})
            return 128 + exc.signum if isinstance(exc, Stopped) else INTERRUPTED
        finally:
            if status is not None:
                status.stop()
        close("done")
        if progress.version_mark() != mark:
            _say(OTHER_WRITER.format(db=app.ws.db))
    verdict = first_hint_only(scoring.verdict(chosen.lessons, results))
    example_passes = bool(example) and all(
        er.passed for r in verdict.results for er in r.exercises
    ) and any(r.exercises for r in verdict.results)  # fmt: skip
    if deliver is not None:
        deliver(verdict)
    elif as_json:
        _json_to(1, verdict.to_json())
    else:
        render(app, verdict, solutions=solutions, path=path)
        if example_passes and counted:
            app.console.print(example_passed(chosen, example or ""), soft_wrap=True)
        elif (
            chosen_seed
            and counted
            and any(er.passed for r in verdict.results for er in r.exercises)
        ):
            app.console.print(seed_chosen(chosen, seed), soft_wrap=True)
    faulted = [er for r in verdict.results for er in r.exercises if er.status == Status.FAULT]
    limited = [er for er in faulted if (er.error or "").startswith(HOST_LIMIT)]
    faults = [er for er in faulted if er not in limited]
    if limited:
        _say(f"{len(limited)} exercise(s) cannot be graded on this host (each says why); "
             "they were not recorded.")  # fmt: skip
    if faults:
        _say(f"{len(faults)} exercise(s) could not be graded because of a fault in the grader; "
             "they were not recorded. Please report it with the command you ran and its output.")  # fmt: skip
        return GRADER_FAULT
    return 0 if verdict.passed or example_passes else 1


def example_passed(chosen: Target, example: str) -> Text:
    """What a re-run of one example that now passes says: plainly that it passes, that a
    re-run is never recorded, and the command that records it (exit status 0)."""
    from rich.text import Text

    (lesson,) = chosen.lessons
    return Text.assemble(
        ("Fixed: ", "bold green"), f"{lesson.number}.{chosen.exercise} now passes this example ",
        f"({example}). A re-run of one example is never recorded; to record the pass, grade "
        "the whole lesson on examples of its own: ", (f"course grade {lesson.number}", "cyan"),
    )  # fmt: skip


def seed_chosen(chosen: Target, seed: int) -> Text:
    """Under a grade whose seed the student chose: its passes are not recorded."""
    from rich.text import Text

    numbers = " ".join(str(lesson.number) for lesson in chosen.lessons)
    return Text.assemble(
        ("Not recorded: ", "bold yellow"),
        f"--seed {seed} chose the examples, so the passes are shown but not recorded as your "
        "progress; a grade that records draws a seed no one knows beforehand: ",
        (f"course grade {numbers}" if len(chosen.lessons) == 1 else "course grade --all", "cyan"),
    )  # fmt: skip


def first_hint_only(v: Verdict) -> Verdict:
    """A lesson file not started at all (every exercise graded still a stub) shows one
    hint, the first exercise's (``course hint N`` gives the rest, one at a time), not
    every exercise's unasked."""
    from dataclasses import replace

    results = []
    for r in v.results:
        if len(r.exercises) > 1 and all(e.status == Status.NOT_STARTED for e in r.exercises):
            first = next((e for e in r.exercises if e.hint), None)
            r = replace(r, exercises=tuple(
                e if e is first else replace(e, hint=None) for e in r.exercises
            ))  # fmt: skip
        results.append(r)
    return replace(v, results=tuple(results))


def check_environment() -> None:
    """COURSE_PLATFORM and COURSE_DEVICES hold values the worker can use."""
    from grader.measure import devices

    try:  # read here, the command's edge; the worker reads them again at its own
        devices.parse_platform(os.environ.get("COURSE_PLATFORM", ""))
        devices.parse_devices(os.environ.get("COURSE_DEVICES", ""))
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None


def _say(message: str) -> None:
    """A notice on stderr (never stdout: it may hold --json), even with the terminal gone."""
    with contextlib.suppress(OSError, ValueError):
        click.echo(message, err=True)


def _json_to(fd: int, document: dict) -> None:
    data = (json.dumps(document, indent=2) + "\n").encode()
    with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) has nowhere to print
        while data:
            data = data[os.write(fd, data) :]


def as_command(target: str | None, **options) -> str:
    """The ``course grade`` command line that repeats a grading: recorded with
    each attempt (a notebook's kernel argv would be no use to anyone)."""
    defaults = inspect.signature(grade).parameters  # options at their default are left out
    parts = ["course", "grade"] + ([target] if target else [])
    for name, value in options.items():
        if value is None or value is False or defaults[name].default == value:
            continue
        flag = "--" + ("all" if name == "all_lessons" else name.replace("_", "-"))
        parts += (
            [flag]
            if value is True
            else [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        )
    return " ".join(shlex.quote(p) for p in parts)


def rerun_command(er: ExerciseResult, solutions: bool = False, path: str | None = None) -> str:
    """The command that re-runs the example ``er`` failed on (same shapes and mesh)."""
    cmd = f"course grade {er.lesson}.{er.exercise}"
    if er.example:
        cmd += f" --example {shlex.quote(er.example)}"
    if solutions:
        cmd += " --solutions"
    elif path:
        cmd += f" --path {shlex.quote(path)}"
    return cmd


def render(app: App, verdict: Verdict, *, solutions: bool = False, path: str | None = None) -> None:
    rerun = partial(rerun_command, solutions=solutions, path=path)
    for report in scoring.terminal(verdict, rerun):
        app.console.print(report, crop=False)  # re-run lines whole
    step = None if solutions else next_lesson(app.course, verdict)
    if step is not None:
        app.console.print(step)


def next_lesson(
    course: Course, verdict: Verdict, say: Callable[[str, int | None], str] | None = None
) -> Text | None:
    """After a grading that passed one whole lesson: where to go next (a rich ``Text``),
    the lesson after it or, after the last, the end; None after any other grading.
    ``say(command, lesson)``: how a command is written where the report is read (a
    notebook's ``course.show(8)``; default: the terminal's ``course show 8``)."""
    from rich.text import Text

    if len(verdict.cards) != 1 or not verdict.passed:
        return None
    (card,) = verdict.cards
    lesson = course.lesson(card.lesson)
    if any(e.name not in card.exercises for e in lesson.required):  # one exercise of it
        return None
    say = say or terminal_command
    n = course.after(lesson.number)  # the registry's order: 15 follows 7
    if n is None:
        return Text.assemble(
            (f"Lesson {lesson.number} was the last one. ", "bold"),
            "The whole course, and whatever is left in it: ", (say("status", None), "cyan"),
        )  # fmt: skip
    return Text.assemble(
        ("Next: ", "bold"), (f"lesson {n.number} · {n.title}", "bold"), " — read it: ",
        (say("show", n.number), "cyan"),
    )  # fmt: skip


def terminal_command(command: str, lesson: int | None) -> str:
    """``course show 8``, ``course status``: a command as typed in a terminal."""
    return f"course {command}" + ("" if lesson is None else f" {lesson}")
