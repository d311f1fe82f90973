"""What several commands share: the console, the app state, lesson lookup."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click
from rich.console import Console, RenderableType

from course import registry
from course.paths import Workspace, workspace
from course.progress import Progress, ProgressError
from grader.config import Sandbox
from grader.repo import CODE

if TYPE_CHECKING:
    from grader.sandbox.spares import Early

NO_WORKSPACE = (
    "No workspace here. Make one with `course init DIR` (or `course init` for this folder) "
    "and run course from inside it, or point --home / COURSE_HOME at one."
)


class UsageProblem(click.ClickException):
    """A mistake in how a command was called: one line, exit status 2, before
    anything is graded or recorded."""

    exit_code = 2


@dataclass
class App:
    """State the CLI group builds once and every command receives."""

    workspace: Workspace | None
    """None when no rule of course.paths finds one."""
    console: Console
    course: registry.Course
    early: Early | None = None
    """The worker ``course grade`` started as it started
    (:func:`grader.sandbox.spares.early`): its first one-off grade's."""
    debug: bool = False
    """The worker's stderr shown as it comes (``COURSE_DEBUG=1``, read by
    :func:`course.cli.cli` and the notebook's calls: the edge)."""
    root: Path = CODE
    """The course's checkout (``COURSE_ROOT``, read at the same edge;
    :func:`grader.repo.root`): its stubs, references and texts are
    ``shipped(app.root)``."""
    sandbox: Sandbox = Sandbox()
    """The OS sandbox's settings (``COURSE_SANDBOX``, ``COURSE_SANDBOX_MEMORY``, read
    at the same edge), for what a command says of it before a worker starts (the
    worker reads its own, from the environment it inherits)."""

    @property
    def ws(self) -> Workspace:
        """The workspace; a command that needs one and has none stops with what to do."""
        if self.workspace is None:
            raise click.ClickException(NO_WORKSPACE)
        return self.workspace

    def kept_examples(self) -> str | None:
        """Where the worker keeps the examples it drew: the workspace's, if there is one."""
        return str(self.workspace.home / ".cache" / "examples") if self.workspace else None

    def compile_cache(self) -> str | None:
        """Where compiled programs are kept: the workspace's cache, if there is one."""
        cache = self.workspace.compile_cache if self.workspace else None
        return str(cache) if cache else None

    def progress(self, record: bool = True, *, read_only: bool = False) -> Progress:
        """The progress file; ``record=False`` gives a throwaway one in memory, for
        grading someone else's code (a teacher's ``--path``), which never writes to yours;
        ``read_only`` opens it only to read (``status``, ``list``: a read-only workspace works)."""
        try:
            if not record:
                return Progress(Path(":memory:"))
            return Progress(self.ws.db, read_only=read_only)
        except ProgressError as exc:
            raise click.ClickException(str(exc)) from None

    def ensure_workspace(self) -> None:
        try:
            copied = self.ws.ensure([lesson.module for lesson in self.course.lessons], self.root)
        except OSError as exc:  # a read-only workspace: reading commands still answer
            Console(stderr=True).print(
                f"[dim]Could not set up your workspace ({exc.strerror or exc}: "
                f"{exc.filename or self.ws.exercises}); missing exercise files were not copied.[/dim]",
                highlight=False,
            )
            return
        if copied:  # a notice, not output: stderr keeps --json clean
            Console(stderr=True).print(
                f"[dim]Set up your workspace: {len(copied)} exercise file(s) copied to {self.ws.exercises}[/dim]"
            )

    def states(self) -> dict:
        """The student's latest result per (lesson, exercise); empty before any grading."""
        if self.workspace is None or not self.workspace.db.exists():
            return {}
        if self.workspace.db.stat().st_size == 0:  # made, never written (a full disk once)
            return {}
        with self.progress(read_only=True) as progress:
            return progress.states()

    def lesson(self, number: int) -> registry.Lesson:
        try:
            return self.course.lesson(number)
        except KeyError as exc:
            raise click.BadParameter(str(exc.args[0]), param_hint="LESSON") from None


class TrimmedLines(io.TextIOBase):
    """Writes complete lines without their trailing spaces: rich pads every table
    cell to its column, which piped output (a log, a diff, grep) is better without."""

    def __init__(self, out: TextIO):
        self.out = out
        self.pending = ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        if lines:
            self.out.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if getattr(self.out, "closed", False):  # at exit (IOBase's __del__ flushes): gone
            return
        self.out.write(self.pending)
        self.pending = ""
        self.out.flush()


def console() -> Console:
    """The console commands print to: a terminal's as it is; piped output trimmed.
    No ``:name:`` emoji codes (the course's texts use none; a student's text
    that holds one prints as written), so rich's table of them is never imported."""
    plain = Console(highlight=False, emoji=False)
    if plain.is_terminal or plain.is_jupyter:
        return plain
    return Console(highlight=False, emoji=False, file=TrimmedLines(sys.stdout))


def make_app(
    home: str | None, db: str | None, early: Early | None = None, debug: bool = False,
    root: Path = CODE, sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
    caching: bool = True,
) -> App:  # fmt: skip
    try:
        course = registry.load()
    except registry.RegistryError as exc:
        raise click.ClickException(str(exc)) from None
    return App(workspace(home, db, root, caching), console(), course, early, debug, root, sandbox)


PAGER = "less -RFXS"
"""The pager when $PAGER is unset: colours kept (-R), no pager for a short text (-F),
the text left on the screen afterwards (-X), long code lines scrolled sideways (-S)."""


def page(console: Console, *body: RenderableType, footer: RenderableType | None = None) -> None:
    """Print ``body`` (lines whole: code runs past the edge) and ``footer`` (soft-wrapped:
    a path or command on it copies whole); on a terminal, through $PAGER when the text
    is longer than the screen (``course show``, ``solution``, ``list``, ``status``)."""

    def print_all() -> None:
        console.print(*body, crop=False)
        if footer is not None:
            console.print(footer, soft_wrap=True)

    if not console.is_terminal:
        print_all()
        return
    with console.capture() as captured:
        print_all()
    text = captured.get()
    if text.count("\n") < console.height:
        console.file.write(text)
        return
    try:
        subprocess.run(
            shlex.split(os.environ.get("PAGER") or PAGER), input=text, text=True, check=False
        )
    except (OSError, ValueError):  # no such pager: the text as it is
        console.file.write(text)


def references(root: Path = CODE) -> list[str]:
    """Where this installation of the course keeps its reference solutions, readable by
    any code that runs as this user: the ``solutions`` folders (a checkout's, a wheel's
    ``course/solutions``; ``root``'s, :func:`grader.repo.root`) and a checkout's git
    history. Empty for an installation built without them (``course autograder`` builds one)."""
    from grader.repo import shipped

    folders = dict.fromkeys(
        (shipped(root).solutions, CODE / "solutions", CODE / "course" / "solutions")
    )
    found = [str(f) for f in folders if f.is_dir() and any(f.glob("l[0-9]*.py"))]
    if (CODE / ".git").exists():
        found.append(str(CODE / ".git"))
    return found


def unsandboxed(why: str, found: list[str]) -> str:
    """Why a class's code is not run where no sandbox can be made and the references
    can be read (:func:`references`), and what to do instead."""
    return (
        f"no sandbox here ({why}), and this installation holds the reference solutions "
        f"({', '.join(found)}): a submission's code, run with your rights, could read and "
        "hand back one; nothing graded. Grade where the sandbox can be made (Linux with user "
        "namespaces), or from an installation without the references: `course autograder "
        "OUT.zip` writes a wheel built without them (pip install it into a fresh "
        "virtual environment, outside any checkout)"
    )
