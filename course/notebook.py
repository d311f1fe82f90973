"""Grade from a notebook cell: ``from course.notebook import grade; grade(2)``.

Grading still runs in a worker process, so a kernel that has already
imported jax (with whatever devices it has) does not matter. ``grade``
shows which example runs while it grades, and returns a :class:`Grading`
that the notebook displays as the report (and that is truthy when everything
passed); ``grade(2, as_json=True)`` returns the data of ``course grade --json``.
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


@dataclass
class Grading:
    """One grading from a notebook; displays itself as the report."""

    verdict: Verdict
    """The results and what each lesson's results are worth (the registry's pass rule)."""
    exit_code: int
    """What ``course grade`` would exit with: 0 all passed, 1 not, 130 interrupted."""
    command: str
    """The ``course grade`` command that repeats this grading in a terminal."""
    rerun: Callable[[ExerciseResult], str] = rerun_command
    """The command that re-runs one failed example (printed in its panel)."""

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
        return Group(*scoring.terminal(self.verdict, self.rerun))

    def _render(self, html: bool) -> str:
        from rich.console import Console

        console = Console(
            record=True, width=REPORT_WIDTH, file=io.StringIO(), force_jupyter=False,
            force_terminal=html, color_system="truecolor" if html else None,
        )  # fmt: skip
        console.print(self, crop=False)  # re-run lines whole
        return console.export_html(inline_styles=True) if html else console.export_text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self._render(html=False), "text/html": self._render(html=True)}

    def __repr__(self) -> str:
        verdict = {0: "all passed", INTERRUPTED: "interrupted"}.get(
            self.exit_code, "not all passed"
        )
        return f"<Grading {self.command!r}: {verdict}>"


def grade(target: str | int | None = None, *, as_json: bool = False, **options: Any) -> Any:
    """Grade like ``course grade TARGET`` and return a :class:`Grading`
    (or, with ``as_json=True``, the data ``course grade --json`` prints).

    Options are those of the command: ``all_lessons``, ``solutions``, ``path``,
    ``seed``, ``example``, ``timeout``, ``devices``, ``cpu``, ``max_examples``.
    """
    from course.commands.common import make_app
    from course.commands.grade import grade as run

    target = None if target is None else str(target)
    collected: list[Verdict] = []
    line = _notebook_line()
    code = run(
        make_app(None, None), target, progress_line=line, deliver=collected.append,
        worker=_worker(), **options,
    )  # fmt: skip
    if line is not None:
        line("graded")
    grading = Grading(
        collected[0] if collected else Verdict((), ()), code, as_command(target, **options),
        partial(rerun_command, solutions=bool(options.get("solutions")), path=options.get("path")),
    )  # fmt: skip
    return grading.to_json() if as_json else grading


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


def _notebook_line() -> Callable[[str], None] | None:
    """A line the notebook updates in place with the example being graded; None
    outside IPython (the command's own spinner shows progress on a terminal)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    handle = display({"text/plain": "starting the grader …"}, raw=True, display_id=True)
    return lambda text: handle.update({"text/plain": text}, raw=True)
