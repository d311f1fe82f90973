"""``course grade``: grade lessons in a worker process, record, report."""

from __future__ import annotations

import inspect
import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import click

from course.commands.common import App
from course.registry import Lesson
from course.versions import versions
from grader.protocol import DEFAULT_TIMEOUT, Event
from grader.repo import shipped
from grader.results import ExerciseResult, LessonResult, Scorecard, Status, to_json

INTERRUPTED = 130
"""Exit status after Ctrl-C, as shells report SIGINT."""


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
    if not number.isdigit():
        raise click.BadParameter(
            f"{target!r}: expected N or N.exercise, e.g. 2 or 2.ring_all_gather",
            param_hint="TARGET",
        )
    lesson = app.lesson(int(number))
    if exercise:
        names = [e.name for e in lesson.exercises]
        if exercise not in names:
            raise click.BadParameter(
                f"lesson {lesson.number} has no exercise {exercise!r} (it has {', '.join(names)})",
                param_hint="TARGET",
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
    path: str | None = None, seed: int = 0, example: str | None = None, as_json: bool = False,
    timeout: float = DEFAULT_TIMEOUT, devices: int | None = None, cpu: bool = False,
    max_examples: int | None = None, progress_line: Callable[[str], None] | None = None,
    deliver: Callable[[list[LessonResult], list[Scorecard]], None] | None = None,
) -> int:  # fmt: skip
    """Grade; print the report (or JSON) and return the exit status.

    A notebook passes ``progress_line`` (shown instead of the terminal's spinner)
    and ``deliver`` (gets the results and their scorecards instead of the report).
    """
    from grader.protocol import ExampleStarted, ExerciseGraded, LessonJob, Request
    from grader.runner import grade as run_grading

    chosen = parse_target(app, target, all_lessons)
    if example and not chosen.exercise:
        raise click.UsageError(
            "--example needs one exercise: course grade N.exercise --example '…'"
        )
    if solutions and path:
        raise click.UsageError("give --solutions or --path, not both")
    if solutions:
        directory, counted = shipped().solutions, False
    elif path:
        directory = Path(path).resolve()
        if not directory.is_dir():
            raise click.BadParameter(f"{path} is not a directory", param_hint="--path")
        counted = app.workspace is not None and directory == app.workspace.exercises
    else:
        app.ensure_workspace()
        directory, counted = app.ws.exercises, True
    if example:
        from grader.spec import parse_example

        try:
            parse_example(example)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--example") from None
    request = Request(
        lessons=tuple(
            LessonJob(lesson.number, lesson.module,
                      (chosen.exercise,) if chosen.exercise else tuple(e.name for e in lesson.exercises))
            for lesson in chosen.lessons
        ),
        directory=str(directory), seed=seed, example=example, max_examples=max_examples,
        timeout=timeout, devices=devices, platform="cpu" if cpu else None,
        cache_dir=app.compile_cache(),
    )  # fmt: skip
    command = as_command(
        target, all_lessons=all_lessons, solutions=solutions, path=path, seed=seed,
        example=example, timeout=timeout, devices=devices, cpu=cpu, max_examples=max_examples,
    )  # fmt: skip
    lessons = {lesson.number: lesson for lesson in chosen.lessons}
    console = app.console
    with app.progress(record=counted) as progress:
        attempt = progress.start_attempt(str(directory), counted, command, versions())
        # a pass on a narrowed run goes to an attempt of its own that never counts,
        # opened when the first comes: kept, but never the student's progress (a
        # failure is one on any example set, and counts)
        narrow_attempt: list[int] = []
        status = (
            None
            if as_json or progress_line or not console.is_terminal
            else console.status("starting the grader …")
        )
        line = progress_line or (status.update if status is not None else None)

        def on_event(event: Event) -> None:
            if isinstance(event, ExerciseGraded):
                er = event.result
                aside = bool(er.narrowed) and er.passed and counted
                if aside and not narrow_attempt:
                    narrow_attempt.append(
                        progress.start_attempt(str(directory), False, command, versions())
                    )
                into = narrow_attempt[0] if aside else attempt
                scored = lessons[er.lesson].exercise(er.exercise).scored(er.status, not er.narrowed)
                progress.record(into, er, scored)
            elif isinstance(event, ExampleStarted) and line is not None:
                line(
                    f"grading {event.lesson}.{event.exercise} — example {event.index + 1}: {event.example}"
                )

        try:
            if status is not None:
                status.start()
            results = run_grading(request, on_event)
        except KeyboardInterrupt:
            if status is not None:
                status.stop()
            for a in (attempt, *narrow_attempt):
                progress.finish_attempt(a, "interrupted")
            console.print("\n[yellow]Interrupted.[/yellow] Results recorded so far are kept.")
            return INTERRUPTED
        finally:
            if status is not None:
                status.stop()
        for a in (attempt, *narrow_attempt):
            progress.finish_attempt(a)
    for lesson, result in zip(chosen.lessons, results):
        for er in result.exercises:
            if er.status == Status.NOT_STARTED and lesson.hints:
                er.hint = lesson.hints[0]
    cards = [lesson.score_result(result) for lesson, result in zip(chosen.lessons, results)]
    if deliver is not None:
        deliver(results, cards)
    elif as_json:
        click.echo(json.dumps(to_json(results, cards), indent=2))
    else:
        render(app, results, cards, solutions=solutions, path=path)
    return 0 if all(card.passed for card in cards) else 1


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
    """The command that re-runs exactly the example ``er`` failed on."""
    cmd = f"course grade {er.lesson}.{er.exercise}"
    if er.example:
        cmd += f" --example {shlex.quote(er.example)}"
    if solutions:
        cmd += " --solutions"
    elif path:
        cmd += f" --path {shlex.quote(path)}"
    return cmd


def render(
    app: App, results: list[LessonResult], cards: list[Scorecard], *, solutions: bool = False,
    path: str | None = None,
) -> None:  # fmt: skip
    from grader.report import LessonReport

    rerun = partial(rerun_command, solutions=solutions, path=path)
    for result, card in zip(results, cards):
        app.console.print(LessonReport(result, card, rerun), crop=False)  # re-run lines whole
