"""``course list`` and ``course status``: what there is, and how far you are."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from course.commands.common import App
from grader.report import status_text

NOT_STARTED = "not started"


def list_lessons(app: App) -> int:
    states = app.states()
    table = Table(box=box.SIMPLE_HEAD, title="scaling-course", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("lesson / exercise", no_wrap=True)
    table.add_column("what it asks", style="dim", ratio=1)
    table.add_column("points", justify="right")
    table.add_column("status", no_wrap=True)
    for lesson in app.course.lessons:
        table.add_row(
            str(lesson.number),
            Text(lesson.title, style="bold"),
            Text(lesson.summary),
            str(lesson.points),
            "",
        )
        for ex in lesson.exercises:
            st = states.get((lesson.number, ex.name))
            table.add_row(
                "", Text("  " + ex.name, style="cyan"), Text(ex.summary),
                f"+{ex.points} bonus" if ex.bonus else str(ex.points),
                status_text(st.status if st else NOT_STARTED),
            )  # fmt: skip
    app.console.print(table)
    app.console.print("[dim]course show N · course grade N · course hint N[/dim]")
    return 0


def status(app: App) -> int:
    app.ensure_workspace()
    states = app.states()
    table = Table(box=box.SIMPLE_HEAD, title="Your progress", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("lesson")
    table.add_column("done", justify="right")
    table.add_column("points", justify="right")
    table.add_column("last graded")
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
        mark = Text("✔ ", style="green") if card.passed else Text("  ")
        table.add_row(str(lesson.number), Text.assemble(mark, lesson.title),
                      f"{done}/{len(lesson.required)}",
                      f"{card.score}/{card.possible}"
                      + (f" +{card.bonus_score}" if card.bonus_score else ""),
                      _ago(last) if last else Text("never", style="dim"))  # fmt: skip
    app.console.print(table)
    bar = Table.grid(padding=(0, 1))
    bar.add_row(
        ProgressBar(total=possible or 1, completed=earned, width=40), f"{earned}/{possible} points"
    )
    app.console.print(bar)
    if next_step:
        n, name = next_step
        lesson = app.course.lesson(n)
        st = states.get(next_step)
        verb = "Fix" if st and st.status != NOT_STARTED else "Next"
        app.console.print(
            f"\n{verb}: [bold]{n}.{name}[/bold] in {app.ws.exercise_file(lesson.module)}\n"
            f"  read [cyan]course show {n}[/cyan] · grade [cyan]course grade {n}[/cyan] · "
            f"stuck? [cyan]course hint {n}[/cyan]"
        )
    else:
        app.console.print(_completion(app, states))
    return 0


def _completion(app: App, states: dict) -> Panel:
    """The closing screen: what the student built, and one figure each lesson measured."""
    with app.progress() as progress:
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
            Text("You built, checked and measured every strategy of a modern training stack "
                 "— and composed them into one step whose bytes you predicted.\n"),  # fmt: skip
            table,
        ),
        title="course complete", title_align="left", border_style="green",
    )  # fmt: skip


def _ago(t: float) -> str:
    import time

    s = time.time() - t
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return "just now"
