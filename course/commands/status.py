"""``course list`` and ``course status``: what there is, and how far you are."""

from __future__ import annotations

import json

import click
from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from course.commands.common import App, page
from grader.results import JSON_VERSION, Status

NOT_STARTED = "not started"


SUMMARY_MIN = 24
"""Columns the "what it asks" text needs to be worth showing; narrower terminals drop it."""


def list_lessons(app: App, as_json: bool = False) -> int:
    if as_json:
        click.echo(json.dumps(progress_json(app), indent=2))
        return 0
    from grader.report import status_text  # course status needs none of the report's imports

    states = app.states()
    names = [e.name for lesson in app.course.lessons for e in lesson.exercises]
    name_width = 2 + max(map(len, names))  # exercise names are indented under their lesson
    # no edges and one space each side of a divider: the whole table fits 60 columns
    table = Table(box=box.SIMPLE_HEAD, title="scaling-course", title_justify="left",
                  show_edge=False, pad_edge=False, collapse_padding=True)  # fmt: skip
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("lesson / exercise", min_width=name_width, overflow="fold")
    table.add_column("pts", justify="right", no_wrap=True)
    # a grader fault is never recorded as the student's: the widest status is "· not started"
    status_width = max(len(status_text(s)) for s in Status if s != Status.FAULT)
    table.add_column("status", no_wrap=True, min_width=status_width)
    # what is left after the other columns and the gaps between them (2 each)
    fixed = len("14") + name_width + len("pts") + status_width + 2 * 4
    wide = app.console.width - fixed >= SUMMARY_MIN
    if wide:
        table.add_column("what it asks", style="dim", ratio=1)
    for lesson in app.course.lessons:
        row = [str(lesson.number), Text(lesson.title, style="bold"), str(lesson.points), ""]
        table.add_row(*row, *([Text(lesson.summary)] if wide else []))
        for ex in lesson.exercises:
            st = states.get((lesson.number, ex.name))
            row = [
                "", Text("  " + ex.name, style="cyan"), f"+{ex.points}" if ex.bonus else str(ex.points),
                status_text(st.status if st else NOT_STARTED),
            ]  # fmt: skip
            table.add_row(*row, *([Text(ex.summary)] if wide else []))
    note = "" if wide else " · a wider terminal also shows what each exercise asks"
    # about 80 lines: paged on a terminal shorter than that
    legend = Text(f"+N: bonus points · course show N · course grade N{note}", style="dim")
    page(app.console, *_in_order(app, table), legend)  # the legend wraps, like the table
    return 0


def _in_order(app: App, table: Table) -> list:
    """``table`` (its rows in the course's order) and, where the lessons' numbers do not
    follow that order, the sentence that says so and why, under it."""
    note = app.course.order_note()
    return [table, Text(note, style="dim")] if note else [table]


def status(app: App, as_json: bool = False) -> int:
    app.ensure_workspace()
    if as_json:
        click.echo(json.dumps(progress_json(app), indent=2))
        return 0
    states = app.states()
    table = Table(box=box.SIMPLE_HEAD, title="Your progress", title_justify="left",
                  show_edge=False, pad_edge=False, collapse_padding=True)  # fmt: skip
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("lesson")
    table.add_column("done", justify="right", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    table.add_column("last graded", no_wrap=True)
    earned = possible = 0
    next_step: tuple[int, str] | None = None
    for lesson in app.course.lessons:
        mine = {e.name: st for e in lesson.exercises if (st := states.get((lesson.number, e.name)))}
        card = lesson.scorecard({name: st.status for name, st in mine.items()})
        done = sum(card.exercises[e.name].passed for e in lesson.required)
        last = max((st.last for st in mine.values()), default=None)
        if next_step is None:
            todo = next(
                (e.name for e in lesson.required if not card.exercises[e.name].passed), None
            )
            next_step = (lesson.number, todo) if todo else None
        earned += card.score
        possible += card.possible
        number = Text.assemble(("✔ ", "green") if card.passed else "", str(lesson.number))
        table.add_row(number, Text(lesson.title),
                      f"{done}/{len(lesson.required)}",
                      f"{card.score}/{card.possible}"
                      + (f" +{card.bonus_score}" if card.bonus_score else ""),
                      _ago(last) if last else Text("never", style="dim"))  # fmt: skip
    bar = Table.grid(padding=(0, 1))
    bar.add_row(
        ProgressBar(total=possible or 1, completed=earned, width=40), f"{earned}/{possible} points"
    )
    if next_step:
        n, name = next_step
        lesson = app.course.lesson(n)
        st = states.get(next_step)
        verb = "Fix" if st and st.status != NOT_STARTED else "Next"
        # one path or command per line, never wrapped: each copies as a whole
        page(
            app.console, *_in_order(app, table), bar,
            footer=f"\n{verb}: [bold]{n}.{name}[/bold] in\n  {app.ws.exercise_file(lesson.module)}\n"
            f"  read:   [cyan]course show {n}[/cyan]\n"
            f"  grade:  [cyan]course grade {n}[/cyan]\n"
            f"  stuck?  [cyan]course hint {n}[/cyan]",
        )  # fmt: skip
    else:
        page(app.console, *_in_order(app, table), bar, _completion(app, states))
    return 0


def _completion(app: App, states: dict) -> Panel:
    """The closing screen: what the student built, and one figure each lesson measured."""
    with app.progress(read_only=True) as progress:
        measured = progress.measurements()
    lessons = app.course.lessons
    bonus = sum(e.points for lesson in lessons for e in lesson.exercises
                if e.bonus and (st := states.get((lesson.number, e.name)))
                and st.status == "passed")  # fmt: skip
    required = sum(len(lesson.required) for lesson in lessons)
    gradings = sum(st.attempts for st in states.values())
    table = Table(box=None, show_header=False, padding=(0, 1))
    table.add_column("#", justify="right", style="green")
    table.add_column("lesson", ratio=1)
    for lesson in lessons:
        figure = measured.get(lesson.number)
        table.add_row(f"✔ {lesson.number}", Text.assemble(
            (lesson.title, "bold"), *((("\n" + figure), "dim"),) if figure else ()))  # fmt: skip
    return Panel(
        Group(
            Text(f"Every lesson passes: {len(lessons)} lessons, {required} exercises"
                 + (f" and {bonus} bonus points" if bonus else "") + f", {gradings} gradings.",
                 style="bold green"),  # fmt: skip
            Text("You built, checked and measured every strategy of a modern training stack, "
                 "composed them into one step whose bytes you predicted, and planned a run "
                 "on thousands of chips with the same cost model.\n"),  # fmt: skip
            table,
        ),
        title="course complete", title_align="left", border_style="green",
    )  # fmt: skip


def progress_json(app: App) -> dict:
    """``course status --json`` and ``course list --json``: the course and your progress,
    on a schema of its own (docs/progress-json.schema.json), version 1 like
    ``course grade --json``'s and with the same field names (docs/grade-json.md)."""
    states = app.states()
    lessons, next_step = [], None
    for lesson in app.course.lessons:
        mine = {e.name: st for e in lesson.exercises if (st := states.get((lesson.number, e.name)))}
        card = lesson.scorecard({name: st.status for name, st in mine.items()})
        exercises = []
        for e in lesson.exercises:
            st, scored = mine.get(e.name), card.exercises[e.name]
            exercises.append({
                "lesson": lesson.number, "exercise": e.name, "summary": e.summary,
                "status": st.status if st else NOT_STARTED, "points": scored.points,
                "bonus": scored.bonus, "score": scored.score,
                "ever_passed": bool(st and st.ever_passed), "attempts": st.attempts if st else 0,
                "last_graded": st.last if st else None,
            })  # fmt: skip
            if next_step is None and not scored.bonus and not scored.passed:
                next_step = {"lesson": lesson.number, "exercise": e.name,
                             "file": str(app.ws.exercise_file(lesson.module)) if app.workspace else None}  # fmt: skip
        lessons.append({
            "lesson": lesson.number, "title": lesson.title, "summary": lesson.summary,
            "score": card.score, "bonus_score": card.bonus_score, "possible": card.possible,
            "passed": card.passed, "exercises": exercises,
        })  # fmt: skip
    return {
        "version": JSON_VERSION,
        "workspace": str(app.workspace.home) if app.workspace else None,
        "score": sum(x["score"] for x in lessons),
        "bonus_score": sum(x["bonus_score"] for x in lessons),
        "possible": sum(x["possible"] for x in lessons),
        "next": next_step,
        "lessons": lessons,
    }


def _ago(t: float) -> str:
    import time

    s = time.time() - t
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return "just now"
