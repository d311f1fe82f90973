"""``course show N``, ``course hint N``, ``course solution N``, ``course reset N``."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown, TableElement
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from course import figure_links
from course.commands.common import App, page
from grader.repo import shipped
from grader.results import Status


def _chosen(app: App, number: int | None):
    """Lesson ``number``, or the current one (the first that does not pass yet)."""
    from course.commands.grade import current_lesson

    return app.lesson(number) if number is not None else current_lesson(app)


def show(app: App, number: int | None) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    text_file = shipped(app.root).lessons / lesson.text_name
    if not text_file.exists():
        raise click.ClickException(f"the text of lesson {number} is missing ({text_file})")
    app.ensure_workspace()
    exercises = Panel(
        "\n".join(
            f"[cyan]{e.name}[/cyan] ({e.points} pt{', bonus' if e.bonus else ''}) — "
            f"{escape(e.summary)}"
            for e in lesson.exercises
        ),
        title=f"Lesson {number} exercises",
        title_align="left",
    )
    # the path and the command on lines of their own, never wrapped: each copies whole
    footer = (
        f"Write your code in\n  [bold]{app.ws.exercise_file(lesson.module)}[/bold]\n"
        f"then grade it:\n  [cyan]course grade {number}[/cyan]"
    )
    # a figure: what it shows and its file's path; the text diagrams stay
    text = figure_links.plain(text_file.read_text(), text_file.parent)
    page(app.console, LessonText(text, code_theme="ansi_dark"), exercises, footer=footer)
    return 0


class UnwrappedCode(CodeBlock):
    """A code block or diagram, each line whole: wrapped code or a wrapped picture is
    nonsense, so a line wider than the terminal runs past it (the pager scrolls sideways)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        highlighted = Syntax(code, self.lexer_name, theme=self.theme).highlight(code)
        for line in highlighted.split("\n", allow_blank=True):
            yield Text.assemble(" ", line, no_wrap=True, overflow="ignore")


class FoldedTable(TableElement):
    """A Markdown table whose long words fold onto the next line instead of being cut to "…"."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for table in super().__rich_console__(console, options):
            for column in table.columns:
                column.overflow = "fold"
            yield table


class LessonText(Markdown):
    """A lesson's Markdown: prose wraps to the terminal, code and diagrams never do."""

    elements = {
        **Markdown.elements,
        "fence": UnwrappedCode, "code_block": UnwrappedCode, "table_open": FoldedTable,
    }  # fmt: skip


def hint(app: App, number: int | None) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    if not lesson.hints:
        app.console.print(f"Lesson {number} has no hints.")
        return 0
    from course.progress import read_only

    stuck = read_only(app.ws.db)
    if stuck:  # a read-only workspace: the next hint is shown, but not counted
        i = 0
        if app.ws.db.exists() and app.ws.db.stat().st_size:
            with app.progress(read_only=True) as progress:
                i = progress.hint_index(number, len(lesson.hints))
    else:
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
    if stuck:
        app.console.print(
            f"[dim]Not counted, so the next course hint {number} shows this one again: "
            f"{escape(stuck)}[/dim]"
        )
    elif i + 1 < len(lesson.hints):
        app.console.print(f"[dim]Run course hint {number} again for the next one.[/dim]")
    else:
        app.console.print(
            f"[dim]That was the last hint for lesson {number}; course hint {number} "
            "starts over at the first.[/dim]"
        )
    return 0


def solution(app: App, number: int | None, force: bool) -> int:
    lesson = _chosen(app, number)
    number = lesson.number
    states = app.states()
    ever = {
        e.name: Status.PASSED
        for e in lesson.exercises
        if (s := states.get((number, e.name))) and s.ever_passed
    }
    if not lesson.scorecard(ever).passed and not force:
        locked = (
            f"Lesson {number}'s solution unlocks once every exercise of it has passed "
            f"(course grade {number}). To look anyway: course solution {number} --force"
        )
        if app.console.is_terminal:
            app.console.print(locked)
        else:  # piped or redirected (`> ref.py`): stdout stays Python, empty here
            click.echo(locked, err=True)
        return 1
    source = shipped(app.root).solutions / f"{lesson.module}.py"
    if not source.is_file():
        raise click.ClickException(
            f"this installation of the course holds no reference solutions ({source} is absent: "
            "it was built without them, e.g. for an autograder)"
        )
    code = source.read_text()
    if not app.console.is_terminal:  # piped or redirected: the file itself, valid Python
        click.echo(code, nl=False)
        return 0
    widest = max((len(line) for line in code.splitlines()), default=0)
    # every line whole (the pager scrolls sideways), paged when longer than the screen
    page(app.console, Syntax(code, "python", line_numbers=True, theme="ansi_dark",
                             code_width=widest + 1))  # fmt: skip
    return 0


def reset(app: App, number: int, yes: bool) -> int:
    lesson = app.lesson(number)
    target = app.ws.exercise_file(lesson.module)
    stub = shipped(app.root).stubs / f"{lesson.module}.py"
    backup = None
    if target.exists() and target.read_bytes() != stub.read_bytes():
        backup = next_backup(target)
        question = (
            f"Replace {target} with the original stub? Your current code will be kept in {backup}"
        )
        if not yes and not click.confirm(question, default=False):
            app.console.print("Nothing changed.")
            return 1
    try:
        if backup:
            shutil.copyfile(target, backup)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stub, target)
    except OSError as exc:  # a read-only workspace, a full disk: say so, change nothing more
        if backup and backup.exists() and target.exists():
            backup.unlink(missing_ok=True)  # the file is as it was; no half backup kept
        raise click.ClickException(
            f"cannot reset lesson {number}: {exc.filename or target} cannot be written "
            f"({exc.strerror or exc}). {target} is unchanged; make its folder writable and "
            "run course reset again."
        ) from None
    note = f" (your previous version is in {backup})" if backup else ""
    app.console.print(f"Restored the stub of lesson {number}: {target}{note}")
    return 0


def next_backup(target: Path) -> Path:
    """``l02_collectives.py`` → ``l02_collectives.py.1.bak``, ``.2.bak`` …: the first
    number not taken, so that no reset ever overwrites an earlier backup."""
    n = 1
    while (candidate := target.with_name(f"{target.name}.{n}.bak")).exists():
        n += 1
    return candidate
