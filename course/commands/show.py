"""``course show N``, ``course hint N``, ``course solution N``, ``course reset N``."""

from __future__ import annotations

import shutil

import click
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from course import paths
from course.commands.common import App

LESSONS = paths.root() / "course" / "lessons"


def _chosen(app: App, number: int | None):
    """Lesson ``number``, or the current one (the first that does not pass yet)."""
    from course.commands.grade import current_lesson

    return app.lesson(number) if number is not None else current_lesson(app)


def show(app: App, number: int | None) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    text_file = LESSONS / lesson.text_name
    if not text_file.exists():
        raise click.ClickException(f"the text of lesson {number} is missing ({text_file})")
    app.ensure_workspace()
    app.console.print(Markdown(text_file.read_text(), code_theme="ansi_dark"))
    app.console.print(
        Panel(
            "\n".join(
                f"[cyan]{e.name}[/cyan] ({e.points} pt{', bonus' if e.bonus else ''}) — "
                f"{escape(e.summary)}"
                for e in lesson.exercises
            )
            + f"\n\nEdit [bold]{app.ws.exercise_file(lesson.module)}[/bold], then [cyan]course grade {number}[/cyan].",
            title=f"Lesson {number} exercises",
            title_align="left",
        )
    )
    return 0


def hint(app: App, number: int | None) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    if not lesson.hints:
        app.console.print(f"Lesson {number} has no hints.")
        return 0
    with app.progress() as progress:
        i = progress.next_hint(number, len(lesson.hints))
    app.console.print(
        Panel(
            Text(lesson.hints[i]),
            title=f"Lesson {number} · hint {i + 1} of {len(lesson.hints)}",
            title_align="left",
            border_style="yellow",
        )  # fmt: skip
    )
    if i + 1 < len(lesson.hints):
        app.console.print(f"[dim]Run course hint {number} again for the next one.[/dim]")
    return 0


def solution(app: App, number: int | None, force: bool) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    states = app.states()
    passed = all(
        (s := states.get((number, e.name))) is not None and s.ever_passed for e in lesson.required
    )
    if not passed and not force:
        app.console.print(
            f"Lesson {number}'s solution unlocks once every exercise of it has passed "
            f"(course grade {number}). To look anyway: course solution {number} --force"
        )
        return 1
    source = paths.root() / "solutions" / f"{lesson.module}.py"
    app.console.print(Syntax(source.read_text(), "python", line_numbers=True, theme="ansi_dark"))
    return 0


def reset(app: App, number: int, yes: bool) -> int:
    lesson = app.lesson(number)
    target = app.ws.exercise_file(lesson.module)
    stub = paths.root() / "exercises" / f"{lesson.module}.py"
    backup = None
    if target.exists():
        question = f"Replace {target} with the original stub? Your code in it will be lost"
        if not yes and not click.confirm(question, default=False):
            app.console.print("Nothing changed.")
            return 1
        backup = target.with_suffix(".py.bak")
        shutil.copyfile(target, backup)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(stub, target)
    note = f" (your previous version is in {backup})" if backup else ""
    app.console.print(f"Restored the stub of lesson {number}: {target}{note}")
    return 0
