"""The schedule chart of lesson 9's report (rich): ticks across, stages down.

The student's schedule is drawn above the expected one on the same tick
axis, F/B/W cells coloured, micro-batch numbers in the cells; the first
violation is marked (reverse red) with the op it waits for (reverse yellow).
A chart wider than the console shows the window of ticks around the mark.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from grader.evidence import ScheduleChart

STYLE = {"F": "green", "B": "cyan", "W": "magenta", "?": "bold red"}
MARK, WAITS = "bold white on red", "black on yellow"
IDLE = "·"
LABEL = 12
"""Columns before the first tick: ``expected  7``."""


class ChartView:
    """A :class:`grader.evidence.ScheduleChart`, drawn."""

    def __init__(self, chart: ScheduleChart):
        self.chart = chart

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        c = self.chart
        grids = c.yours + (c.expected or [])
        ticks = max((len(row) for row in grids), default=0)
        width = max((len(cell) for row in grids for cell in row), default=1)
        step = max(width, 2) + 1
        first, last = _window(ticks, (options.max_width - LABEL) // step, c.mark)
        shown = f" (ticks {first}–{last - 1} of {ticks})" if (first, last) != (0, ticks) else ""
        if c.expected is None:
            yield Text(f"{c.title}{shown}", style="bold")
            yield _axis(first, last, step)
            yield from _rows("given", c.yours, first, last, step, c.mark, c.waits_for)
        else:
            yield Text(f"{c.title}: yours above, expected below{shown}", style="bold")
            yield _axis(first, last, step)
            yield from _rows("yours", c.yours, first, last, step, c.mark, c.waits_for)
            yield from _rows("expected", c.expected, first, last, step, None, None)
        yield _legend(c)  # the violation itself is the failing check's message, above


def _legend(c: ScheduleChart) -> Text:
    parts: list = [("F", STYLE["F"]), " forward  ", ("B", STYLE["B"]), " backward  "]
    if any("W" in cell for row in c.yours + (c.expected or []) for cell in row):
        parts += [("W", STYLE["W"]), " weight gradient  "]
    parts += [(IDLE, "dim"), " idle"]
    if c.mark:
        parts += ["  ", ("▮", "red"), " first violation"]
    if c.waits_for:
        parts += ["  ", ("▮", "yellow"), " what it waits for"]
    return Text.assemble(*parts)


def _window(ticks: int, fits: int, mark: list[int] | None) -> tuple[int, int]:
    """[first, last) ticks to draw: all if they fit, else a window around the mark."""
    fits = max(fits, 1)
    if ticks <= fits:
        return 0, ticks
    centre = mark[0] if mark else 0
    first = min(max(centre - fits // 2, 0), ticks - fits)
    return first, first + fits


def _axis(first: int, last: int, step: int) -> Text:
    text = Text("tick".ljust(LABEL), style="dim")
    for t in range(first, last):
        text.append(str(t).rjust(step), style="dim")
    return text


def _rows(
    label: str,
    grid: list[list[str]],
    first: int,
    last: int,
    step: int,
    mark: list[int] | None,
    waits: list[int] | None,
) -> RenderResult:
    for s, row in enumerate(grid):
        text = Text((label if s == 0 else "").ljust(LABEL - 3), style="bold")
        text.append(str(s).rjust(2) + " ")
        for t in range(first, min(last, len(row))):  # past its end a schedule has no ticks
            cell = row[t]
            style = STYLE.get(cell[:1], "") if cell else "dim"
            if mark == [t, s]:
                style = MARK
            elif waits == [t, s]:
                style = WAITS
            text.append(" " * (step - max(len(cell), 1)))
            text.append(cell or IDLE, style=style)
        yield text
