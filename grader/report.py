"""Rich renderables for grading results (the only grader module that imports rich).

``LessonReport(result, card)`` renders a summary table and, for every
exercise that did not pass, a panel with the failing example, the command
that re-runs it, each check's verdict and evidence, and a hint.

Evidence is drawn by its type, never by the name of the check that produced
it: ``RENDERERS`` maps each :mod:`grader.evidence` type to how it is drawn.
A new kind of picture adds its dataclass there and one entry here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader import evidence as ev
from grader.results import CheckResult, ExerciseResult, LessonResult, Status
from grader.schedule_chart import ChartView
from grader.spec import FULL

STYLE = {
    Status.PASSED: ("✔ passed", "green"),
    Status.FAILED: ("✘ failed", "red"),
    Status.ERROR: ("✘ error", "red"),
    Status.TIMEOUT: ("⏱ timeout", "red"),
    Status.FAULT: ("⚠ grader fault", "magenta"),
    Status.NOT_STARTED: ("· not started", "yellow"),
}


def titled(table: Table) -> Group:
    """``table`` with its title above it and its caption below, wrapped at the width
    there is: rich wraps both to the table's own width, so a long title over a few
    narrow columns breaks at 50 characters on a terminal of 120."""
    title, caption = table.title, table.caption
    table.title = table.caption = None
    parts: list[RenderableType] = []
    if title is not None:
        parts.append(Text(title, style="table.title") if isinstance(title, str) else title)
    parts.append(table)
    if caption is not None:
        parts.append(Text(caption, style="table.caption") if isinstance(caption, str) else caption)
    return Group(*parts)


def status_text(status: Status | str) -> Text:
    label, style = STYLE.get(Status(status), (str(status), "white"))
    return Text(label, style=style)


def _bytes(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,} B"


# ------------------------------------------------------------ the lesson


class LessonReport:
    """Everything a student needs after ``course grade N``: ``card`` is the
    registry's scoring of ``result`` (points, bonus, title, verdict), a
    ``course.scoring.Scorecard`` (the grader never builds one, nor imports course)."""

    def __init__(
        self,
        result: LessonResult,
        card: Any,
        rerun: Callable[[ExerciseResult], str] | None = None,
        full_grade: Callable[[int], str] | None = None,
        ask_hint: Callable[[int], str] | None = None,
    ):
        self.result = result
        self.card = card
        self.rerun = rerun
        self.full_grade = full_grade
        """How a grade of the full example set is asked for, where the report is read:
        :func:`full_grade_command` on a terminal, a call in a notebook."""
        self.ask_hint = ask_hint
        """How the next hint of a lesson is asked for, where the report is read:
        :func:`hint_command` on a terminal, a call in a notebook."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        r, card = self.result, self.card
        title = Text.assemble(
            (f"Lesson {r.lesson}", "bold"), (f" · {card.title}" if card.title else "", "bold"),
        )  # fmt: skip
        yield titled(_lesson_table(r, card, title, options.max_width))
        yield Footer(
            f"graded {r.source} on {r.devices or 'the devices'}",
            f"seed {r.seed}",
            *([f"sandbox: {r.sandbox}"] if r.sandbox else []),
        )
        yield from _not_counted(r, self.full_grade or full_grade_command)
        yield from lesson_wide(r.exercises)
        for e in r.exercises:
            if e.passed:
                yield from draw_all(e.explanation, e)
        fresh = [e for e in r.exercises if e.status == Status.NOT_STARTED]
        if fresh:
            yield NotStartedPanel(fresh, (self.ask_hint or hint_command)(r.lesson))
        shared = shared_error(r.exercises)
        if shared:
            yield SharedErrorPanel(shared)
        for e in r.exercises:
            if not e.passed and e.status != Status.NOT_STARTED and e not in shared:
                yield ExercisePanel(e, self.rerun(e) if self.rerun else None)
        yield Text(*score_line(r, card))


class Footer:
    """The line under the grade table, its parts joined by " · ": where they do not fit
    the width, the line breaks between two parts, never inside one ("sandbox:" above,
    "on" below), and the next line begins with the "·", so the lines read joined as the
    one line does; a part wider than the terminal wraps on its own lines."""

    def __init__(self, *parts: str, style: str = "dim"):
        self.parts = parts
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines: list[str] = []
        for part in self.parts:
            if lines and cell_len(lines[-1]) + 3 + cell_len(part) <= options.max_width:
                lines[-1] += " · " + part
            else:
                lines.append(("· " if lines else "") + part)
        for line in lines:
            yield Text(line, style=self.style)


def score_line(r: LessonResult, card: Any) -> tuple[str, str]:
    """The last line of a lesson's report and its style. The exit status follows the
    required exercises (README, ``course grade --help``): a bonus that did not pass
    leaves it 0, so the line names that bonus and what became of it instead of
    saying "all passed"."""
    missed = [
        f"bonus {e.exercise} {_status_word(e.status)}"
        for e in r.exercises
        if card.exercises[e.exercise].bonus and not e.passed
    ]
    required = [n for n, s in card.exercises.items() if not s.bonus]
    ok = card.passed if required else not missed and bool(card.exercises)
    verdict = "all passed" if ok else "not yet"
    if ok and missed:
        verdict = "every required exercise passed; " + ", ".join(missed)
    elif missed:
        verdict = ("not yet; " if required else "") + ", ".join(missed)
    if not card.counted:
        verdict = "not counted (a narrowed run)"
    style = ("bold yellow" if missed else "bold green") if ok else "bold"
    extra = f" + {card.bonus_score} bonus" if card.bonus_score else ""
    return f"Score {card.score}/{card.possible}{extra} — {verdict}", style


def _status_word(status: Status | str) -> str:
    """ "failed", "not started", "timeout" …: the status's label without its mark."""
    label = STYLE.get(Status(status), (f"? {status}", ""))[0]
    return label.split(" ", 1)[1]


LAYOUTS = ((5, " "), (4, " "), (4, "\n"), (3, "\n"))
"""The grade table's layouts, widest first: columns kept (exercise, status, points,
examples, time), and what comes before a narrowed run's "not counted"."""


def _lesson_table(r: LessonResult, card: Any, title: Text, width: int) -> Table:
    """One row per exercise, in the first of :data:`LAYOUTS` that fits ``width``: names
    stay whole (" (bonus)" may go to a line of its own) and no cell is cut or broken
    inside a word. At 60 columns beside lesson 5's 30-character name the time goes
    first; a narrowed run's "not counted" then takes a line of its own, then the
    count of examples goes."""
    headers = ("exercise", "status", "points", "examples", "time")
    names = max((len(e.exercise) for e in r.exercises), default=0)

    def rows(sep: str) -> list[tuple[Any, ...]]:
        out = []
        for e in r.exercises:
            s = card.exercises[e.exercise]
            shown = status_text(e.status)
            if e.narrowed:
                shown.append(f"{sep}· not counted", style="yellow")
            out.append((e.exercise + (" (bonus)" if s.bonus else ""), shown,
                        f"{s.score}/{s.points}", str(e.examples_run), f"{e.duration:.1f} s"))  # fmt: skip
        return out

    for keep, sep in LAYOUTS:  # the last one is used when none fits
        cells = rows(sep)
        widths = [max(len(h), *(cell_len(line) for row in cells for line in str(row[i]).split("\n")))
                  for i, h in enumerate(headers[:keep])]  # fmt: skip
        widths[0] = max(len(headers[0]), names)
        if sum(widths) + 2 * keep <= width:  # two cells a column: the gaps and the edges
            break
    table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", expand=False,
                  pad_edge=False, collapse_padding=True)  # fmt: skip
    table.add_column("exercise", min_width=names)
    for h in headers[1:keep]:
        table.add_column(h, justify="left" if h == "status" else "right", no_wrap=True)
    for row in cells:
        table.add_row(*row[:keep])
    return table


def full_grade_command(lesson: int) -> str:
    """How a terminal grades lesson ``lesson`` on the full example set."""
    return (
        f"course grade {lesson} on {FULL.n_devices} devices, without --example or --max-examples,"
    )


def _not_counted(r: LessonResult, full_grade: Callable[[int], str]) -> list[RenderableType]:
    """Say plainly which exercises ran fewer examples than a grade needs, and why."""
    narrowed = [e for e in r.exercises if e.narrowed]
    if not narrowed:
        return []
    reasons = dict.fromkeys(e.narrowed for e in narrowed)
    lines = Text.assemble(
        ("Not counted: ", "bold yellow"),
        f"{', '.join(e.exercise for e in narrowed)} ran fewer examples than a grade needs — ",
        "; ".join(r for r in reasons if r),
        ". This run is shown, but it is not recorded as passed and unlocks no solution; "
        f"{full_grade(r.lesson)} runs the full set.",
    )
    return [lines]


def shared_error(exercises: list[ExerciseResult]) -> list[ExerciseResult]:
    """Exercises that ended with one and the same error before any example ran: the
    module itself would not load (missing file, syntax error). Shown once."""
    errs = [
        e for e in exercises
        if e.status == Status.ERROR and e.error and e.example is None and not e.checks
    ]  # fmt: skip
    return errs if len(errs) > 1 and len({e.error for e in errs}) == 1 else []


class SharedErrorPanel:
    """One error that stopped several exercises at once, drawn once."""

    def __init__(self, results: list[ExerciseResult]):
        self.results = results

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = ", ".join(e.exercise for e in self.results)
        parts: list = [
            Text(f"{names}: none could run, for one reason —"),
            Panel(Text(self.results[0].error or ""), title="error", title_align="left",
                  border_style="red", box=box.ROUNDED),
        ]  # fmt: skip
        hint = self.results[0].hint
        if hint:
            parts.append(Text.assemble(("hint  ", "bold yellow"), hint))
        yield Panel(Group(*parts), title=f"✘ lesson {self.results[0].lesson}'s exercise file — error", title_align="left",
                    border_style="red")  # fmt: skip


def hint_command(lesson: int) -> str:
    """How a terminal asks for lesson ``lesson``'s next hint."""
    return f"course hint {lesson}"


class NotStartedPanel:
    """Exercises whose stub is untouched: one panel, naming how to ask for a hint
    (``ask``: ``course hint N``, or a notebook's call), never printing one — hints are
    a ladder climbed on request, and a first hint shown unasked spoils the exercise."""

    def __init__(self, results: list[ExerciseResult], ask: str | None = None):
        self.results = results
        self.ask = ask or hint_command(results[0].lesson)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = ", ".join(e.exercise for e in self.results)
        parts: list = [
            Text(f"{names}: still raising NotImplementedError — replace the TODOs with your code."),
            Text.assemble(
                ("stuck?  ", "bold yellow"),
                (self.ask, "bold"),
                " gives this lesson's hints one at a time, the idea first and the API later.",
            ),  # fmt: skip
        ]
        yield Panel(Group(*parts), title="· not started", title_align="left", border_style="yellow")


class ExercisePanel:
    """One exercise that did not pass, with its evidence."""

    def __init__(self, result: ExerciseResult, rerun: str | None = None):
        self.result = result
        self.rerun = rerun

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        e = self.result
        parts: list = []
        if e.example:
            facts = Table.grid(padding=(0, 2))
            facts.add_column(style="bold")
            facts.add_column()
            facts.add_row("example", e.example)
            if e.about:
                facts.add_row("for", e.about)
            parts.append(facts)
        if e.checks:
            parts.append(CheckTable(e.checks))
            failed = [item for c in e.checks if not c.passed for item in c.evidence]
            parts.extend(draw_all(failed, e))
        if e.error:
            parts.append(
                Panel(
                    Text(e.error),
                    title="error",
                    title_align="left",
                    border_style="red",
                    box=box.ROUNDED,
                )
            )
        parts.extend(draw_all(e.explanation, e))
        if e.hint:
            parts.append(Text.assemble(("hint  ", "bold yellow"), e.hint))
        label, style = STYLE.get(e.status, (str(e.status), "white"))
        mark, word = label.split(" ", 1)
        yield Panel(
            Group(*parts),
            title=f"{mark} {e.exercise} — {word}",
            title_align="left",
            border_style=style,
        )
        if self.rerun:
            yield RerunLine(self.rerun)


class RerunLine:
    """The command that re-runs the failing example, under its panel and on one line:
    inside a panel it would wrap between borders and copy with "│" in it. Printed with
    ``crop=False`` (as ``course grade`` does), a long one runs past the edge whole."""

    def __init__(self, command: str):
        self.command = command

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text("re-run this example:", style="bold")
        yield Text("  " + self.command, style="cyan", no_wrap=True, overflow="ignore")


class CheckTable:
    def __init__(self, checks: list[CheckResult]):
        self.checks = checks

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.SIMPLE, show_header=False, pad_edge=False)
        table.add_column(width=2)
        table.add_column(style="bold")
        table.add_column()
        for c in self.checks:
            mark = Text("✔", style="green") if c.passed else Text("✘", style="red")
            table.add_row(mark, c.name, c.message)
        yield table


# ------------------------------------------------------------ evidence, by type


@dataclass(frozen=True)
class Renderer:
    """How one evidence type is drawn: ``each`` item in its exercise's panel (or
    under the summary when the exercise passed), or all items of the lesson
    ``together`` as one picture under the summary."""

    each: Callable[[Any, ExerciseResult | None], list[RenderableType]] | None = None
    together: Callable[[list[tuple[ExerciseResult, Any]]], list[RenderableType]] | None = None
    once: bool = False
    """Several checks hand over the same measurement: draw only the first per exercise."""


def draw(item: ev.Evidence, exercise: ExerciseResult | None = None) -> list[RenderableType]:
    """One evidence item, drawn by the renderer of its type (``exercise`` names it)."""
    each = RENDERERS[type(item)].each
    if each is None:
        raise TypeError(f"{type(item).__name__} is drawn for the whole lesson: see lesson_wide")
    return each(item, exercise)


def draw_all(items: list[ev.Evidence], exercise: ExerciseResult) -> list[RenderableType]:
    """The items drawn one by one, in order; lesson-wide ones are left to :func:`lesson_wide`."""
    out: list[RenderableType] = []
    drawn: set[type] = set()
    for item in items:
        renderer = RENDERERS[type(item)]
        if renderer.each is None or (renderer.once and type(item) in drawn):
            continue
        drawn.add(type(item))
        out.extend(renderer.each(item, exercise))
    return out


def lesson_wide(exercises: list[ExerciseResult]) -> list[RenderableType]:
    """Pictures drawn once per lesson from every exercise's explanation."""
    out: list[RenderableType] = []
    for kind, renderer in RENDERERS.items():
        items = [(e, x) for e in exercises for x in e.explanation if type(x) is kind]
        if renderer.together and items:
            out.extend(renderer.together(items))
    return out


def _device_map(d: ev.DeviceMap, exercise: ExerciseResult | None) -> list[RenderableType]:
    stats = Facts([("max abs error", f"{d.max_abs_err:.4g}"), ("max rel error", f"{d.max_rel_err:.4g}"),
                   ("tolerance", f"atol {d.atol:.2g}, rtol {d.rtol:.2g}")])  # fmt: skip
    out: list[RenderableType] = [DeviceGrid(d), stats]
    first = d.first_mismatch
    if first is not None and first.expected_shard is not None:
        where = "device " + ",".join(map(str, first.coord))
        out.append(
            SideBySide(
                f"{where}: its whole shard",
                "expected",
                _grid(first.expected_shard),
                "yours",
                _grid(first.actual_shard),
            )  # fmt: skip
        )
    if d.where:
        out.append(Text.assemble(("where  ", "bold"), d.where))
    hint = (exercise.hint or "").lower() if exercise is not None else ""
    for said in d.measured or []:
        if said.lower() not in hint:  # a relation the hint says whole is said once, there
            out.append(Text.assemble(("measured  ", "bold"), said))
    return out


class Facts:
    """Labelled values: on one line when they fit, else one per line (never a label
    broken in two)."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        one_line = sum(len(k) + len(v) + 4 for k, v in self.pairs)
        t = Table.grid(padding=(0, 2))
        if one_line <= options.max_width:
            t.add_row(*(x for pair in self.pairs for x in pair))
        else:
            t.add_column(style="dim", no_wrap=True)
            t.add_column()
            for k, v in self.pairs:
                t.add_row(k, v)
        yield t


class SideBySide:
    """Two grids of numbers (expected, yours), side by side when both fit, else one
    above the other; rows are never wrapped. A grid wider than the space shows its
    first columns and says how many (the JSON output has all)."""

    def __init__(self, title: str, left: str, left_grid: str, right: str, right_grid: str):
        self.title = title
        self.grids = [(left, left_grid, ""), (right, right_grid, "red")]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(len(line) for _, g, _ in self.grids for line in g.splitlines() or [""])
        if 2 * width + 4 <= options.max_width:
            t = Table(box=box.SIMPLE, title=self.title, title_justify="left")
            for name, _, _ in self.grids:
                t.add_column(name, no_wrap=True)
            t.add_row(*(Text(g, style=style) for _, g, style in self.grids))
            yield titled(t)
            return
        yield Text(self.title)
        for name, grid, style in self.grids:
            yield Text(name, style="bold")
            yield Text(_fit(grid, options.max_width - 2), style=style, no_wrap=True)


def _fit(grid: str, width: int) -> str:
    """The grid's rows cut to whole numbers within ``width``, with a note when cut."""
    rows = grid.splitlines()
    if all(len(r) <= width for r in rows):
        return "\n".join("  " + r for r in rows)
    cells = [r.split() for r in rows]
    cell = max(len(c) for row in cells for c in row) + 1
    total = max(len(row) for row in cells)
    keep = min(total, max(1, (width - 2) // cell))
    shown = "\n".join("  " + "".join(f"{c:>{cell}}" for c in row[:keep]) for row in cells)
    return (
        shown
        if keep == total
        else shown + f"\n  (the first {keep} of {total} columns; --json has all)"
    )


def _sharding(d: ev.Sharding, exercise: ExerciseResult | None) -> list[RenderableType]:
    t = Table(box=box.SIMPLE, title="sharding", title_justify="left")
    t.add_column("expected")
    t.add_column("actual")
    t.add_row(d.expected, Text(d.actual, style="red"))
    return [titled(t)]


def _communication(d: ev.Communication, exercise: ExerciseResult | None) -> list[RenderableType]:
    # one space each side of a divider: "collective-permute" and four columns fit 60
    t = Table(box=box.SIMPLE, title="communication measured in the compiled program (per device)",
              title_justify="left", pad_edge=False, collapse_padding=True)  # fmt: skip
    t.add_column("collective", no_wrap=True)
    t.add_column("ops in HLO", justify="right")
    t.add_column("executions", justify="right")
    t.add_column("bytes sent", justify="right")
    for row in d.rows:
        style = "red" if d.allowed is not None and row.kind not in d.allowed else ""
        count = "unknown" if row.count is None else str(row.count)
        t.add_row(Text(row.kind, style=style), str(row.ops), count, _bytes(row.bytes))
    if not d.rows:
        t.add_row("(none)", "", "", "")
    out: list[RenderableType] = [titled(t)]
    if d.allowed is not None:
        out.append(Text("allowed: " + (", ".join(d.allowed) or "none"), style="dim"))
    return out


def _count(d: ev.CountExpectation, exercise: ExerciseResult | None) -> list[RenderableType]:
    return [Text(f"expected {d.expected} × {d.kind}, measured {d.actual}", style="dim")]


def _bytes_sent(d: ev.BytesExpectation, exercise: ExerciseResult | None) -> list[RenderableType]:
    text = f"expected {_bytes(d.expected)} per device, measured {_bytes(d.actual)}"
    if d.itemsize == 2:
        text += " (bfloat16 counted at 2 bytes per element; XLA:CPU widens it to f32 in transit)"
    return [Text(text, style="dim")]


def _memory(d: ev.Memory, exercise: ExerciseResult | None) -> list[RenderableType]:
    t = Table(box=box.SIMPLE, title="memory per device", title_justify="left")
    for col in ("arguments", "outputs", "temporaries", "bound on temporaries"):
        t.add_column(col, justify="right")
    t.add_row(_bytes(d.argument), _bytes(d.output), Text(_bytes(d.temp), style="red"),
              _bytes(d.bound))  # fmt: skip
    return [titled(t)]


BAR_WIDTH = 24
"""Cells of the longest bar in a memory chart: with labels and sizes it fits 60 columns."""
EIGHTHS = " ▏▎▍▌▋▊▉"


def _memory_bars(d: ev.MemoryBars, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Bars on one scale: the device's memory, then the sizes it is measured against."""
    sizes = [b.bytes for b in (*d.bars, *d.marks) if b.bytes] + [d.bound or 0]
    top = max(sizes, default=0) or 1
    t = Table.grid(padding=(0, 1))
    t.add_column()
    t.add_column(width=BAR_WIDTH)
    t.add_column(justify="right")
    for b in d.bars:
        over = d.bound is not None and b.label == "temporaries" and (b.bytes or 0) > d.bound
        t.add_row(b.label, Text(_bar(b.bytes, top), style="red" if over else "cyan"),
                  _bytes(b.bytes))  # fmt: skip
    bound = [ev.Bar("temp bound", d.bound)] if d.bound is not None else []
    for b in (*d.marks, *bound):
        t.add_row(Text(b.label, style="dim"), Text(_bar(b.bytes, top), style="dim"),
                  Text(_bytes(b.bytes), style="dim"))  # fmt: skip
    title = Text(f"memory per device · {d.example}", style="bold")
    return [title, t, *([Text(d.note, style="dim")] if d.note else [])]


def _bar(n: int | None, top: int) -> str:
    """A horizontal bar of ``n / top`` of :data:`BAR_WIDTH` cells, in eighths of a cell."""
    eighths = round(8 * BAR_WIDTH * (n or 0) / top)
    full, part = divmod(eighths, 8)
    return "█" * full + (EIGHTHS[part] if part else "")


def _table(d: ev.Table, exercise: ExerciseResult | None) -> list[RenderableType]:
    t = Table(box=box.SIMPLE)
    for i, col in enumerate(d.columns):
        t.add_column(col, style="red" if i == len(d.columns) - 1 else None)
    for row in d.rows:
        t.add_row(*map(str, row))
    return [t]


def _kind_bytes(d: ev.KindBytes, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Predicted against measured bytes per collective kind, with the reference's."""
    t = Table(box=box.SIMPLE, title=f"bytes per device, one step · {d.example}",
              title_justify="left")  # fmt: skip
    for col in ("kind", "predicted", "measured", "reference"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for r in d.rows:
        off = (
            r.predicted is not None
            and r.measured is not None
            and (abs(r.predicted - r.measured) > 0.1 * max(r.measured, 1))
        )
        t.add_row(r.kind, Text(_bytes(r.predicted), style="red" if off else ""),
                  _bytes(r.measured), Text(_bytes(r.reference), style="dim"))  # fmt: skip
    return [titled(t)]


def _note(d: ev.Note, exercise: ExerciseResult | None) -> list[RenderableType]:
    return [Text(d.text, style="dim")]


def _replica_groups(d: ev.ReplicaGroups, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Each collective in one line; on a 2-D mesh also the mesh, every device labelled by
    its group (a, b, …), so a group that crosses a row shows at a glance."""
    name = exercise.exercise if exercise else ""
    out: list[RenderableType] = [Text(f"{name}: collectives and their groups, {d.example}")]
    for row in d.rows:
        n_groups = max(row.group_of, default=0) + 1
        out.append(Text(
            f"  {row.kind} of {row.carries}, {_bytes(row.bytes)} sent per device, "
            f"{n_groups} group(s) spanning {', '.join(row.axes) or 'no axis'}", style="dim",
        ))  # fmt: skip
        if len(d.mesh_shape) == 2:
            out.append(_group_grid(d, row))
    if not d.rows:
        out.append(Text("  no collectives", style="dim"))
    return out


def _group_grid(d: ev.ReplicaGroups, row: ev.GroupedCollective) -> Table:
    rows_axis, cols = d.mesh_shape
    t = Table(box=box.SQUARE, padding=(0, 1))
    t.add_column(f"{d.axis_names[0]} ↓  {d.axis_names[1]} →")
    for c in range(cols):
        t.add_column(str(c), justify="center")
    for r in range(rows_axis):
        t.add_row(str(r), *(_group_label(g) for g in row.group_of[r * cols : (r + 1) * cols]))
    return t


def _group_label(index: int) -> Text:
    colours = ("cyan", "magenta", "yellow", "green", "blue", "red")
    return Text(chr(ord("a") + index % 26), style=colours[index % len(colours)])


def _timeline(d: ev.Timeline, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Ring steps: per step and device, the block held and where it goes next."""
    name = exercise.exercise if exercise else ""
    t = Table(
        box=box.SIMPLE_HEAD,
        title=f"{name}: the ring schedule your permutes imply, {d.example}",
        title_justify="left",
    )
    t.add_column("step", justify="right")
    for i in range(d.n):
        t.add_column(f"device {i}")
    for row in d.rows:
        t.add_row(*map(str, row))
    return [titled(t), Text(d.note, style="dim")] if d.note else [titled(t)]


RING_MARKS = {
    "whole": ("■", "green", "whole block"),
    "diagonal": ("◩", "yellow", "diagonal (the causal triangle)"),
    "masked": ("·", "red", "fully masked (computed for nothing)"),
    "first key chunk": ("▌", "cyan", "every query × the first key chunk"),
    "second query chunk": ("▄", "cyan", "the second query chunk × every key"),
}
"""How each use of a K/V block is drawn (see :data:`grader.evidence.RING_USE`)."""


def _ring_steps(d: ev.RingSteps, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Ring attention: the K/V block each device holds at each step, how much of it is
    used, and the useful work per device (the causal imbalance, or zigzag's balance)."""
    title = f"K/V blocks held, {d.example}"
    t = Table(box=box.SIMPLE_HEAD, title=f"{exercise.exercise}: {title}" if exercise else title,
              title_justify="left")  # fmt: skip
    t.add_column("step", justify="right")
    for i in range(d.n):
        t.add_column(f"dev {i}")
    for s, (held, use) in enumerate(zip(d.held, d.use)):
        marks = [RING_MARKS[u] for u in use]
        t.add_row(str(s), *(Text(f"KV{j} {m}", style=c) for j, (m, c, _) in zip(held, marks)))
    t.add_row("work", *(f"{w:g}" for w in d.work()), style="bold")
    used = {u for row in d.use for u in row}
    legend = ", ".join(f"{m} {what}" for u, (m, _, what) in RING_MARKS.items() if u in used)
    notes = [f"KVj: the K/V block that started on device j; {legend}; work: blocks' worth of "
             "useful scores per device.", d.note]  # fmt: skip
    return [titled(t), Text(" ".join(n for n in notes if n), style="dim")]


def _comparison(items: list[tuple[ExerciseResult, ev.XlaComparison]]) -> list[RenderableType]:
    """Bytes per device: the student's program, the optimum, and XLA's own partitioner."""
    t = Table(
        box=box.SIMPLE_HEAD,
        title="bytes sent per device: yours, the best possible, and XLA's own partitioner",
        pad_edge=False,
        caption="XLA: jax.jit of the unsharded a @ b with the same in/out shardings · "
        "AG all-gather, AR all-reduce, RS reduce-scatter",
        title_justify="left",
    )
    for col, just in (("exercise", "left"), ("mesh: I×J×K", "left"), ("yours", "right"),
                      ("best", "right"), ("XLA", "right"), ("", "left")):  # fmt: skip
        t.add_column(col, justify=just, no_wrap=True)
    for e, c in items:
        style = "green" if c.yours == c.optimum else "red"
        t.add_row(
            e.exercise,
            f"{c.mesh}: {c.shapes}",
            Text(_kb(c.yours, c.yours_kinds), style=style),
            _kb(c.optimum, None),
            _kb(c.xla, c.xla_kinds),
            _versus(c.yours, c.xla) if e.passed else Text("fails", style="red"),
        )
    return [titled(t)]


def _schedule_chart(d: ev.ScheduleChart, exercise: ExerciseResult | None) -> list[RenderableType]:
    return [ChartView(d)]


def _expert_load(d: ev.ExpertLoad, exercise: ExerciseResult | None) -> list[RenderableType]:
    """Per expert: kept tokens as a bar, dropped ones after it in red."""
    name = f"{exercise.exercise}: " if exercise else ""
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("expert", "routed", "kept", "dropped"):
        t.add_column(col, justify="right")
    t.add_column("")
    scale = min(1.0, EXPERT_BAR / max(max(d.routed, default=0), 1))
    for e, (routed, kept) in enumerate(zip(d.routed, d.kept)):
        bar = Text("█" * round(kept * scale), style="green")
        bar.append("█" * round((routed - kept) * scale), style="red")
        dropped = Text(str(routed - kept), style="red" if routed > kept else "")
        t.add_row(str(e), str(routed), str(kept), dropped, bar)
    slots = f"C = {d.capacity} slot(s) per expert"
    where = f" on each of {d.groups} devices" if d.groups > 1 else ""
    return [
        Text(f"{name}tokens per expert, as the reference routes them", style="bold"),
        t,
        Text(f"{slots}{where}: an expert keeps at most {d.groups * d.capacity}", style="dim"),
        Text(f"example {d.example}", style="dim"),
    ]


EXPERT_BAR = 24
"""Columns of the longest bar in the expert-load table."""


RENDERERS: dict[type, Renderer] = {
    ev.DeviceMap: Renderer(_device_map),
    ev.Sharding: Renderer(_sharding),
    ev.Communication: Renderer(_communication, once=True),
    ev.CountExpectation: Renderer(_count),
    ev.BytesExpectation: Renderer(_bytes_sent),
    ev.Memory: Renderer(_memory),
    ev.MemoryBars: Renderer(_memory_bars),
    ev.Table: Renderer(_table),
    ev.Note: Renderer(_note),
    ev.Timeline: Renderer(_timeline),
    ev.ReplicaGroups: Renderer(_replica_groups, once=True),
    ev.KindBytes: Renderer(_kind_bytes),
    ev.RingSteps: Renderer(_ring_steps),
    ev.XlaComparison: Renderer(together=_comparison),
    ev.ScheduleChart: Renderer(_schedule_chart, once=True),
    ev.ExpertLoad: Renderer(_expert_load),
}
"""Evidence type → how it is drawn: the one place a new picture is registered."""


class DeviceGrid:
    """The mesh drawn as a grid: ✔ for a device whose shard is right, ✘ for one that is wrong."""

    def __init__(self, device_map: ev.DeviceMap):
        self.devices = {tuple(d.coord): d.ok for d in device_map.devices}
        self.shape = device_map.mesh_shape
        self.names = device_map.axis_names

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows_axis = self.shape[0] if len(self.shape) > 1 else 1
        cols = self.shape[-1]
        caption = "devices (" + " × ".join(f"{n}={s}" for n, s in zip(self.names, self.shape)) + ")"
        t = Table(
            box=box.SQUARE, show_header=False, title=caption, title_justify="left", padding=(0, 1)
        )
        for _ in range(cols):
            t.add_column(justify="center")
        inner = self.shape[1:-1] if len(self.shape) > 2 else []
        blocks = list(itertools.product(*(range(s) for s in inner)))
        for block in blocks:
            for r in range(rows_axis):
                cells = []
                for c in range(cols):
                    coord = (c,) if len(self.shape) == 1 else (r, *block, c)
                    ok = self.devices.get(coord)
                    label = ("," if max(self.shape) > 9 else "").join(map(str, coord))
                    cells.append(
                        Text(f"{label} ✔", style="green")
                        if ok
                        else Text(f"{label} ✘", style="bold red")
                    )
                t.add_row(*cells)
        yield titled(t)


def _grid(values) -> str:
    """A small nested list as aligned rows of numbers."""
    import numpy as np

    a = np.asarray(values)
    if a.ndim <= 1:
        return " ".join(f"{v:g}" for v in np.atleast_1d(a))
    rows = a.reshape(a.shape[0], -1)
    return "\n".join(" ".join(f"{v:>5g}" for v in row) for row in rows)


SHORT = {"all-gather": "AG", "all-reduce": "AR", "reduce-scatter": "RS",
         "all-to-all": "A2A", "collective-permute": "CP"}  # fmt: skip


def _kb(n: int | None, kinds: list[str] | None) -> str:
    if n is None:
        return "unknown"
    return f"{n:,} B" + (f" {'+'.join(SHORT.get(k, k) for k in kinds)}" if kinds else "")


def _versus(yours: int | None, xla: int | None) -> Text:
    if yours is None or xla is None:
        return Text("—")
    if yours == xla:
        return Text("= XLA", style="green")
    if yours < xla:
        return Text(f"{xla / yours:.2g}× less" if yours else "none", style="bold green")
    return Text(f"{yours / xla:.2g}× more" if xla else "XLA sends none", style="red")
