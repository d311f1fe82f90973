"""What several commands share: the console, the app state, lesson lookup."""

from __future__ import annotations

from dataclasses import dataclass

import click
from rich.console import Console

from course import registry
from course.paths import Workspace, workspace
from course.progress import Progress, ProgressError


class UsageProblem(click.ClickException):
    """A mistake in how a command was called: one line, exit status 2, before
    anything is graded or recorded."""

    exit_code = 2


@dataclass
class App:
    """State the CLI group builds once and every command receives."""

    ws: Workspace
    console: Console
    course: registry.Course

    def progress(self, *, read_only: bool = False) -> Progress:
        try:
            return Progress(self.ws.db, read_only=read_only)
        except ProgressError as exc:
            raise click.ClickException(str(exc)) from None

    def ensure_workspace(self) -> None:
        copied = self.ws.ensure([lesson.module for lesson in self.course.lessons])
        if copied:  # a notice, not output: stderr keeps --json clean
            Console(stderr=True).print(
                f"[dim]Set up your workspace: {len(copied)} exercise file(s) copied to {self.ws.exercises}[/dim]"
            )

    def states(self) -> dict:
        """The student's latest result per (lesson, exercise); empty before any grading."""
        if not self.ws.db.exists():
            return {}
        with self.progress(read_only=True) as progress:
            return progress.states()

    def lesson(self, number: int) -> registry.Lesson:
        try:
            return self.course.lesson(number)
        except KeyError as exc:
            raise click.BadParameter(str(exc.args[0]), param_hint="LESSON") from None


def make_app(home: str | None, db: str | None) -> App:
    try:
        course = registry.load()
    except registry.RegistryError as exc:
        raise click.ClickException(str(exc)) from None
    return App(workspace(home, db), Console(highlight=False), course)
