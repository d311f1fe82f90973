"""The course from a notebook: ``from course import notebook as course``.

``course.init()`` picks the workspace for this kernel (a clone's ``workspace/``, the
``course init`` folder it runs in, else ``~/scaling-course``; ``init(DIR)`` or
``home=DIR`` on any call makes DIR one) and defines the ``%%exercise N`` cell magic,
which writes a cell into the lesson's exercise file. Then ``show(N)``, ``grade(N)``,
``hint(N)``, ``status()`` and ``solution(N)`` answer as the commands do, each as a
display: text/plain without escape codes, and HTML in colours made for the notebook's
light or dark theme (:mod:`course.palette`). A mistake (no lesson 99, no workspace) is
a :class:`CourseError`, which IPython shows in one line.

Grading still runs in a worker process, so a kernel that has already
imported jax (with whatever devices it has) does not matter. ``grade``
shows which example runs while it grades, then the report in its place
(``r = grade(1)`` shows it too), and returns a :class:`Grading` (truthy when
everything passed) that displays the report again in a later cell, not twice
in the same one; ``grade(2, as_json=True)`` returns the data of
``course grade --json``. The HTML is a fragment in the notebook's own colours:
no page, no background.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course import scoring
from course.commands.grade import INTERRUPTED, as_command, rerun_command
from course.scoring import Scorecard, Verdict
from grader.results import ExerciseResult, LessonResult

if TYPE_CHECKING:
    from rich.console import Console

    from course.commands.common import App

REPORT_WIDTH = 100
"""Columns the report is laid out for in a notebook (cells have no terminal width)."""
DEFAULT_HOME = "~/scaling-course"
"""The workspace :func:`init` makes where no rule finds one (an installed course, Colab)."""
NO_WORKSPACE = (
    "no workspace yet: run course.notebook.init() to make one in "
    + DEFAULT_HOME
    + " (or init('DIR') for another folder), or pass home='DIR'"
)


class CourseError(Exception):
    """A mistake in a call (no such lesson, a bad option) or a missing workspace.
    IPython shows it in one line, without a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"CourseError: {self}"]


@dataclass
class Session:
    """What this kernel chose: the workspace of every call that names none."""

    home: Path | None = None


_session = Session()


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """The commands' own errors (click's, a missing lesson) as one :class:`CourseError`."""
    import click

    try:
        yield
    except click.BadParameter as exc:  # without click's "Invalid value for LESSON:"
        raise CourseError(exc.message) from None
    except click.ClickException as exc:
        raise CourseError(exc.format_message()) from None
    except KeyError as exc:  # the registry's "there is no lesson N"
        raise CourseError(str(exc.args[0]) if exc.args else str(exc)) from None


def _root() -> Path:
    """The course's checkout (``COURSE_ROOT``, read here: a notebook's call is the edge)."""
    from grader.repo import root

    return root(os.environ.get("COURSE_ROOT"))


def _make_workspace(home: Path) -> list[Path]:
    """Make ``home`` a workspace as ``course init`` does (its marker, every stub it lacks);
    return the exercise files copied."""
    from course import registry
    from course.paths import MARKER, Workspace, inside_installed_package

    repo = _root()
    if inside_installed_package(home, repo):
        raise CourseError(f"{home} is inside the installed course; choose a folder of your own")
    try:
        home.mkdir(parents=True, exist_ok=True)
        marker = home / MARKER
        if not marker.exists():
            marker.write_text(
                "A scaling-course workspace: `course` run in here (or below) uses it.\n"
            )
        modules = [lesson.module for lesson in registry.load().lessons]
        return Workspace(home, home / "progress.db").ensure(modules, repo)
    except OSError as exc:
        raise CourseError(f"cannot make the workspace {home}: {exc.strerror or exc}") from None


def _app(home: str | Path | None, *, need_workspace: bool = True, ensure: bool = True) -> App:
    """The commands' state for one call: the workspace ``home`` (made if new), else the
    kernel's (:func:`init`), else the one the command line would find."""
    from course.commands.common import make_app

    if home is not None:
        chosen: Path | None = Path(home).expanduser().resolve()
        copied = _make_workspace(chosen)
        if copied:
            _say(
                f"Set up your workspace: {len(copied)} exercise file(s) copied to {chosen / 'exercises'}"
            )
    else:
        chosen = _session.home
    with _one_line():
        from course.paths import cache_switch

        # a notebook's call: the edge
        debug = os.environ.get("COURSE_DEBUG") == "1"
        caching = cache_switch(os.environ.get("COURSE_COMPILE_CACHE"))
        given = str(chosen) if chosen else os.environ.get("COURSE_HOME")
        db = os.environ.get("COURSE_DB")
        app = make_app(given, db, debug=debug, root=_root(), caching=caching)
    if need_workspace and app.workspace is None:
        raise CourseError(NO_WORKSPACE)
    if need_workspace and ensure:
        _ensure(app)
    return app


def _ensure(app: App) -> None:
    """Copy missing stubs now, saying so before anything else the call shows (the
    command's own notice goes to stderr, where a notebook shows it after the report)."""
    try:
        copied = app.ws.ensure([lesson.module for lesson in app.course.lessons], app.root)
    except OSError as exc:
        _say(
            f"Could not set up your workspace ({exc.strerror or exc}); missing exercise files were not copied."
        )
        return
    if copied:
        _say(f"Set up your workspace: {len(copied)} exercise file(s) copied to {app.ws.exercises}")


def _say(line: str) -> None:
    """One line of plain text in the running cell (printed outside IPython)."""
    cell = _cell()
    if cell is None:
        print(line)
    else:
        cell.display({"text/plain": line})


def _recording() -> Console:
    """A console whose output :mod:`course.palette` turns into the cell's text and HTML."""
    from rich.console import Console

    return Console(
        file=io.StringIO(), width=REPORT_WIDTH, color_system="standard", force_terminal=False,
        force_jupyter=False, force_interactive=False, highlight=False, emoji=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Page:
    """Text a call shows: plain, and HTML or Markdown for the notebook."""

    plain: str
    html: str | None = None
    markdown: str | None = None

    @classmethod
    def from_ansi(cls, ansi: str) -> Page:
        from course import palette

        return cls(palette.to_plain(ansi), html=palette.to_html(ansi))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        bundle = {"text/plain": self.plain}
        if self.html is not None:
            bundle["text/html"] = self.html
        if self.markdown is not None:
            bundle["text/markdown"] = self.markdown
        return bundle

    def __repr__(self) -> str:
        return self.plain

    def __str__(self) -> str:
        return self.plain


def _captured(app: App, run: Callable[[App], Any], words: dict[str, str] | None = None) -> Page:
    """What a command prints, as a :class:`Page` (``words``: its terminal wording → the
    notebook's)."""
    console = _recording()
    app.console = console
    with _one_line():
        run(app)
    ansi = console.file.getvalue()
    for said, meant in (words or {}).items():
        ansi = ansi.replace(said, meant)
    return Page.from_ansi(ansi)


def _number(lesson: int | str | None) -> int | None:
    if lesson is None:
        return None
    text = str(lesson)
    if not re.fullmatch(r"[0-9]{1,6}", text):
        raise CourseError(f"{lesson!r}: give a lesson number, e.g. 2")
    return int(text)


def init(home: str | Path | None = None) -> Page:
    """Choose this kernel's workspace and define the ``%%exercise N`` cell magic.

    ``home``: the folder (made a workspace like ``course init`` does; on Colab a folder
    on your mounted Drive keeps your work between sessions). Without it: the workspace
    ``course`` would use here (a clone's ``workspace/``, the ``course init`` folder you
    are in, ``COURSE_HOME``), else ``~/scaling-course``.
    """
    from course.paths import workspace

    if home is None:
        _session.home = None
        found = workspace(os.environ.get("COURSE_HOME"), repo=_root())  # the edge
        chosen = found.home if found is not None else Path(DEFAULT_HOME).expanduser().resolve()
    else:
        chosen = Path(home).expanduser().resolve()
    copied = _make_workspace(chosen)
    _session.home = chosen
    _register_magic()
    note = f" ({len(copied)} exercise file(s) copied)" if copied else ""
    return Page(
        f"Workspace: {chosen}{note}\nYour code goes in {chosen / 'exercises'}; "
        "an %%exercise N cell writes the lesson's file there."
    )


def show(lesson: int | None = None, *, home: str | Path | None = None) -> Page:
    """Lesson ``lesson``'s text (default: the current lesson), with its figures."""
    from course import figure_links
    from course.commands.show import _chosen
    from grader.repo import shipped

    app = _app(home, ensure=False)
    with _one_line():
        chosen = _chosen(app, _number(lesson))
    _ensure(app)
    text = (shipped(app.root).lessons / chosen.text_name).read_text()
    exercises = "\n".join(
        f"- `{e.name}` ({e.points} pt{', bonus' if e.bonus else ''}): {e.summary}"
        for e in chosen.exercises
    )
    footer = (
        f"\n\n## Lesson {chosen.number} exercises\n\n{exercises}\n\nWrite your code in an "
        f"`%%exercise {chosen.number}` cell (or in `{app.ws.exercise_file(chosen.module)}`), "
        f"then grade it: `course.grade({chosen.number})`.\n"
    )
    return Page(
        figure_links.plain(text + footer),
        markdown=figure_links.inline(text, shipped(app.root).lessons) + footer,
    )


def hint(lesson: int | None = None, *, home: str | Path | None = None) -> Page:
    """The next hint for ``lesson`` (default: the current one); run again for the next."""
    from course.commands.show import hint as run

    app = _app(home, ensure=False)
    n = _number(lesson)
    with _one_line():
        shown = app.lesson(n).number if n is not None else _chosen_number(app)
    _ensure(app)
    again = {f"course hint {shown}": f"hint({shown})"}
    return _captured(app, lambda a: run(a, n), again)


def _chosen_number(app: App) -> int:
    from course.commands.grade import current_lesson

    return current_lesson(app).number


def status(*, home: str | Path | None = None) -> Page:
    """Your progress and what to do next."""
    from course.commands.status import status as run

    return _captured(_app(home), run)


def solution(
    lesson: int | None = None, *, force: bool = False, home: str | Path | None = None
) -> Page:
    """The reference solution of ``lesson``, once every exercise of it has passed
    (``force=True`` to look anyway): whole, as Python."""
    from course.commands.show import _chosen
    from grader.repo import shipped
    from grader.results import Status

    app = _app(home, ensure=False)
    with _one_line():
        chosen = _chosen(app, _number(lesson))
    states = app.states()
    ever = {
        e.name: Status.PASSED
        for e in chosen.exercises
        if (s := states.get((chosen.number, e.name))) and s.ever_passed
    }
    if not chosen.scorecard(ever).passed and not force:
        return Page(
            f"Lesson {chosen.number}'s solution unlocks once every exercise of it has passed "
            f"(grade({chosen.number})). To look anyway: solution({chosen.number}, force=True)"
        )
    found = shipped(app.root).solutions / f"{chosen.module}.py"
    if not found.is_file():  # as `course solution` says it
        raise CourseError(
            f"this installation of the course holds no reference solutions ({found} is absent: "
            "it was built without them, e.g. for an autograder)"
        )
    source = found.read_text()
    return Page(source, markdown=f"```python\n{source}```\n")


def save(lesson: int, code: str, *, home: str | Path | None = None) -> Page:
    """Write ``code`` as lesson ``lesson``'s exercise file (what an ``%%exercise N`` cell does).

    Your own edits are never lost: a file changed since this kernel last wrote it (in an
    editor, say) is kept as ``lNN_….py.N.bak`` before it is replaced, and an untouched
    stub never replaces a file that holds more than the stub."""
    from course.commands.show import next_backup
    from course.notebooks import notebook_words
    from grader.repo import shipped

    app = _app(home, ensure=False)
    with _one_line():
        chosen = app.lesson(_number(lesson))
    _ensure(app)
    target = app.ws.exercise_file(chosen.module)
    shipped_stub = (shipped(app.root).stubs / f"{chosen.module}.py").read_text()
    # the stub as shipped, and as a notebook's cell holds it (its commands as calls)
    stubs = {shipped_stub.strip(), notebook_words(shipped_stub).strip()}
    code = code if code.endswith("\n") else code + "\n"
    current = target.read_text() if target.exists() else None
    if current == code:
        _written[target] = code
        return Page(f"{target} already holds this cell: unchanged")
    theirs = (
        current is not None and current.strip() not in stubs and _written.get(target) != current
    )
    """The file holds code this kernel did not write (an editor's, an earlier session's)."""
    if theirs and code.strip() in stubs:
        return Page(
            f"{target} already holds your code, not the stub: kept. To work on it here, paste "
            f"it into this cell; to start over from the stub: course reset {chosen.number}."
        )
    backup = None
    if theirs:
        backup = next_backup(target)
        backup.write_text(current)
    target.write_text(code)
    _written[target] = code
    kept = f" (what it held is kept in {backup.name})" if backup else ""
    return Page(f"Wrote {target}{kept}")


_written: dict[Path, str] = {}
"""The text this kernel last wrote to each exercise file: a file that still holds it
was changed by nothing else, and is replaced without a backup."""


def _exercise_magic(line: str, cell: str) -> Page:
    """``%%exercise N``: the cell is lesson N's exercise file."""
    parts = line.split()
    if len(parts) != 1:
        raise CourseError("%%exercise takes a lesson number: %%exercise 2")
    return save(_number(parts[0]), cell)  # type: ignore[arg-type]


def _register_magic() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.register_magic_function(_exercise_magic, "cell", "exercise")


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext course.notebook``: the ``%%exercise`` magic without :func:`init`."""
    shell.register_magic_function(_exercise_magic, "cell", "exercise")


@dataclass
class Grading:
    """One grading from a notebook; displays itself as the report."""

    verdict: Verdict
    """The results and what each lesson's results are worth (the registry's pass rule)."""
    exit_code: int
    """What ``course grade`` would exit with: 0 every required exercise passed (a
    failed bonus leaves it 0), 1 not, 130 interrupted."""
    command: str
    """The ``course grade`` command that repeats this grading in a terminal."""
    rerun: Callable[[ExerciseResult], str] = rerun_command
    """The call that re-runs one failed example (printed under its panel): from
    :func:`grade`, the notebook's own (:func:`rerun_call`)."""
    next_step: Any = None
    """Where to go after a lesson passed (a rich ``Text``), as ``course grade`` says it."""
    shown_in: Any = None
    """The notebook cell (execution count) ``grade`` already showed the report in."""
    full_grade: Callable[[int], str] | None = None
    """How a grade of the full example set is asked for (None: the terminal's words)."""
    ask_hint: Callable[[int], str] | None = None
    """How a lesson's next hint is asked for (None: the terminal's words)."""

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    @property
    def results(self) -> tuple[LessonResult, ...]:
        return self.verdict.results

    @property
    def cards(self) -> tuple[Scorecard, ...]:
        return self.verdict.cards

    def to_json(self) -> dict[str, Any]:
        """The data ``course grade --json`` prints."""
        return self.verdict.to_json()

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        if self.exit_code == INTERRUPTED:
            return Text("Interrupted. Results recorded so far are kept.", style="yellow")
        step = [self.next_step] if self.next_step is not None else []
        return Group(
            *scoring.terminal(self.verdict, self.rerun, self.full_grade, self.ask_hint), *step
        )

    def _render(self) -> Page:
        console = _recording()
        console.print(self, crop=False)  # re-run lines whole
        return Page.from_ansi(console.file.getvalue())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self._render()._repr_mimebundle_()

    def _ipython_display_(self) -> None:
        """IPython's display (a cell's last expression, ``display(r)``): the report, unless
        ``grade`` already showed it in this same cell (``grade(1)`` as the last line)."""
        cell = _cell()
        if cell is None:
            return
        if self.shown_in is not None and self.shown_in == cell.count():
            return
        cell.display(self._repr_mimebundle_())

    def __repr__(self) -> str:
        verdict = {0: "all passed", INTERRUPTED: "interrupted"}.get(
            self.exit_code, "not all passed"
        )
        return f"<Grading {self.command!r}: {verdict}>"


def grade(
    target: str | int | None = None,
    *,
    as_json: bool = False,
    home: str | Path | None = None,
    **options: Any,
) -> Any:
    """Grade like ``course grade TARGET``, show the report, and return a :class:`Grading`
    (or, with ``as_json=True``, the data ``course grade --json`` prints).

    Options are those of the command: ``all_lessons``, ``solutions``, ``path``,
    ``seed``, ``example``, ``timeout``, ``devices``, ``cpu``, ``max_examples``.
    """
    from course.commands.grade import grade as run
    from course.commands.grade import next_lesson, parse_target

    target = None if target is None else str(target)
    options = _options(options)
    own_code = not options.get("solutions") and not options.get("path")
    app = _app(home, need_workspace=own_code, ensure=False)
    with _one_line():  # a wrong target: one line, nothing shown
        parse_target(app, target, bool(options.get("all_lessons")))
    if own_code:
        _ensure(app)  # "Set up your workspace …" before the report, not after it
    collected: list[Verdict] = []
    cell = _cell()
    line = None if cell is None else cell.line
    if line is not None:
        line("starting the grader …")
    try:
        with _one_line():
            code = run(
                app, target, progress_line=line, deliver=collected.append, worker=_worker(),
                **options,
            )  # fmt: skip
    except BaseException:
        if cell is not None:
            cell.clear()  # no "grading …" left on screen above the error
        raise
    verdict = collected[0] if collected else Verdict((), ())
    grading = Grading(
        verdict, code, as_command(target, **options),
        partial(rerun_call, solutions=bool(options.get("solutions")), path=options.get("path")),
        next_step=None if options.get("solutions") else next_lesson(app.course, verdict, call),
        full_grade=full_grade_call,
        ask_hint=hint_call,
    )  # fmt: skip
    if as_json:
        if cell is not None:
            cell.line("graded")
        return grading.to_json()
    if cell is not None:
        cell.show(grading._repr_mimebundle_())  # the report where the progress line was
        grading.shown_in = cell.count()
    return grading


def call(command: str, lesson: int | None = None) -> str:
    """A command as a notebook calls it: ``course.show(8)``, ``course.status()`` (the
    notebooks import this module as ``course``)."""
    return f"course.{command}({'' if lesson is None else lesson})"


def full_grade_call(lesson: int) -> str:
    """How a notebook grades lesson ``lesson`` on the full example set."""
    from grader.spec import FULL

    return f"course.grade({lesson}) on {FULL.n_devices} devices, without example= or max_examples=,"


def hint_call(lesson: int) -> str:
    """How a notebook asks for lesson ``lesson``'s next hint."""
    return f"course.hint({lesson})"


def rerun_call(er: ExerciseResult, solutions: bool = False, path: str | None = None) -> str:
    """The call that re-runs, from a notebook, the example ``er`` failed on:
    ``course.grade('1.place', example='mesh=2 …')`` (what :func:`rerun_command` is to a
    terminal)."""
    args = [repr(f"{er.lesson}.{er.exercise}")]
    if er.example:
        args.append(f"example={er.example!r}")
    if solutions:
        args.append("solutions=True")
    elif path:
        args.append(f"path={str(path)!r}")
    return f"course.grade({', '.join(args)})"


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """``grade``'s options checked as ``course grade`` checks them (its own option types,
    ranges and callbacks: 1-64 devices, a time limit above 0, …), each mistake one line
    before anything runs: an option the command does not have, or a value it refuses."""
    import click

    from course.cli import grade as command

    params = {
        p.name: p for p in command.params if isinstance(p, click.Option) and p.name != "as_json"
    }
    ctx = click.Context(command)
    checked: dict[str, Any] = {}
    for key, value in options.items():
        param = params.get(key)
        if param is None:
            raise CourseError(f"grade() has no option {key!r} (options: {', '.join(params)})")
        try:
            checked[key] = None if value is None else param.process_value(ctx, value)
        except click.ClickException as exc:  # "--devices 999: this host …" → its reason
            said = exc.format_message() if isinstance(exc, click.BadParameter) else exc.message
            reason = said.split(": ", 1)[1] if said.startswith(("--", "Invalid")) else said
            raise CourseError(f"{key}={value!r}: {reason}") from None
    return checked


_kept: list[Any] = []
"""The grading worker this kernel keeps between grades (see :func:`_worker`)."""


def _worker() -> Any:
    """One grading worker for the kernel's life: a re-grade finds jax imported,
    the devices up and a student's process started ahead (each grade still runs
    the student's code in a fresh one; a worker is kept only after a clean
    grade, see :class:`grader.sandbox.runner.Worker`). It ends with the kernel."""
    if not _kept:
        import atexit

        from grader.sandbox.runner import Worker

        _kept.append(Worker())
        atexit.register(_kept[0].close)
    return _kept[0]


class Cell:
    """The output of the notebook cell running: one display updated in place (the
    progress line, then the report), and the cell's execution count."""

    def __init__(self, display: Callable[..., Any], count: Callable[[], Any]):
        self._display = display
        self.count = count
        self.handle: Any = None

    def display(self, bundle: dict[str, str]) -> None:
        self._display(bundle, raw=True)

    def show(self, bundle: dict[str, str]) -> None:
        if self.handle is None:
            self.handle = self._display(bundle, raw=True, display_id=True)
        else:
            self.handle.update(bundle, raw=True)

    def line(self, text: str) -> None:
        self.show({"text/plain": text})

    def clear(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)


def _cell() -> Cell | None:
    """The running notebook cell; None outside IPython (the command's own spinner
    shows progress on a terminal)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    return Cell(display, lambda: shell.execution_count)
