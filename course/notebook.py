"""Grade from a notebook cell: ``from course.notebook import grade; grade(2)``.

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

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from course import scoring
from course.commands.grade import INTERRUPTED, as_command, rerun_command
from course.scoring import Scorecard, Verdict
from grader.results import ExerciseResult, LessonResult

REPORT_WIDTH = 100
"""Columns the report is laid out for in a notebook (cells have no terminal width)."""
HTML_FRAGMENT = (
    "<pre style=\"font-family:Menlo,'DejaVu Sans Mono',consolas,'Courier New',monospace;"
    'line-height:1.25;white-space:pre;margin:0"><code style="font-family:inherit">{code}</code></pre>'
)
"""The report as an HTML fragment: no document, no ``body`` colours or page background,
so text without a colour of its own takes the notebook theme's (dark or light)."""


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
    """The command that re-runs one failed example (printed in its panel)."""
    next_step: Any = None
    """Where to go after a lesson passed (a rich ``Text``), as ``course grade`` says it."""
    shown_in: Any = None
    """The notebook cell (execution count) ``grade`` already showed the report in."""

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
        return Group(*scoring.terminal(self.verdict, self.rerun), *step)

    def _render(self, html: bool) -> str:
        from rich.console import Console

        console = Console(
            record=True, width=REPORT_WIDTH, file=io.StringIO(), force_jupyter=False, emoji=False,
            force_terminal=html, color_system="truecolor" if html else None,
        )  # fmt: skip
        console.print(self, crop=False)  # re-run lines whole
        if not html:
            return console.export_text()
        return console.export_html(inline_styles=True, code_format=HTML_FRAGMENT)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self._render(html=False), "text/html": self._render(html=True)}

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


def grade(target: str | int | None = None, *, as_json: bool = False, **options: Any) -> Any:
    """Grade like ``course grade TARGET``, show the report, and return a :class:`Grading`
    (or, with ``as_json=True``, the data ``course grade --json`` prints).

    Options are those of the command: ``all_lessons``, ``solutions``, ``path``,
    ``seed``, ``example``, ``timeout``, ``devices``, ``cpu``, ``max_examples``.
    """
    from course.commands.common import make_app
    from course.commands.grade import grade as run
    from course.commands.grade import next_lesson, parse_target

    target = None if target is None else str(target)
    app = make_app(None, None)
    parse_target(app, target, bool(options.get("all_lessons")))  # a wrong target: nothing shown
    collected: list[Verdict] = []
    cell = _cell()
    line = None if cell is None else cell.line
    if line is not None:
        line("starting the grader …")
    try:
        code = run(
            app, target, progress_line=line, deliver=collected.append, worker=_worker(), **options
        )
    except BaseException:
        if cell is not None:
            cell.clear()  # no "grading …" left on screen above the error
        raise
    verdict = collected[0] if collected else Verdict((), ())
    grading = Grading(
        verdict, code, as_command(target, **options),
        partial(rerun_command, solutions=bool(options.get("solutions")), path=options.get("path")),
        next_step=None if options.get("solutions") else next_lesson(app.course, verdict),
    )  # fmt: skip
    if as_json:
        if cell is not None:
            cell.line("graded")
        return grading.to_json()
    if cell is not None:
        cell.show(grading._repr_mimebundle_())  # the report where the progress line was
        grading.shown_in = cell.count()
    return grading


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
