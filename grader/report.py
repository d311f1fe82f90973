"""Rich renderables for grading results (the only grader module that imports rich).

``LessonReport(result)`` renders a summary table and, for every exercise
that did not pass, a panel with the failing example, the command that
re-runs it, each check's verdict and evidence, and a hint.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from grader.results import CheckResult, ExerciseResult, LessonResult, Status

STYLE = {
    Status.PASSED: ("✔ passed", "green"),
    Status.FAILED: ("✘ failed", "red"),
    Status.ERROR: ("✘ error", "red"),
    Status.TIMEOUT: ("⏱ timeout", "red"),
    Status.NOT_STARTED: ("· not started", "yellow"),
}


def status_text(status: Status | str) -> Text:
    label, style = STYLE.get(Status(status), (str(status), "white"))
    return Text(label, style=style)


def _bytes(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,} B"


class LessonReport:
    """Everything a student needs after ``course grade N``."""

    def __init__(self, result: LessonResult, rerun: Callable[[ExerciseResult], str] | None = None):
        self.result = result
        self.rerun = rerun

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        r = self.result
        title = Text.assemble(
            (f"Lesson {r.lesson}", "bold"), (f" · {r.title}" if r.title else "", "bold"),
        )  # fmt: skip
        table = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", expand=False)
        table.add_column("exercise", no_wrap=True)
        table.add_column("status")
        table.add_column("points", justify="right")
        table.add_column("examples", justify="right")
        table.add_column("time", justify="right")
        for e in r.exercises:
            table.add_row(e.exercise + (" (bonus)" if e.bonus else ""), status_text(e.status),
                          f"{e.score}/{e.points}",
                          str(e.examples_run), f"{e.duration:.1f} s")  # fmt: skip
        yield table
        yield Text(
            f"graded {r.source} on {r.devices or 'the devices'} · seed {r.seed}", style="dim"
        )
        compared = [e for e in r.exercises if "comparison" in e.explanation]
        if compared:
            yield ComparisonTable(compared)
        for e in r.exercises:
            if e.passed and "timeline" in e.explanation:
                yield Timeline(e.exercise, e.explanation["timeline"])
        fresh = [e for e in r.exercises if e.status == Status.NOT_STARTED]
        if fresh:
            yield NotStartedPanel(fresh)
        for e in r.exercises:
            if not e.passed and e.status != Status.NOT_STARTED:
                yield ExercisePanel(e, self.rerun(e) if self.rerun else None)
        verdict = "all passed" if r.passed else "not yet"
        style = "bold green" if r.passed else "bold"
        extra = f" + {r.bonus_score} bonus" if r.bonus_score else ""
        yield Text(f"Score {r.score}/{r.possible}{extra} — {verdict}", style=style)


class NotStartedPanel:
    """Exercises whose stub is untouched: one panel, with the lesson's first hint."""

    def __init__(self, results: list[ExerciseResult]):
        self.results = results

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        names = ", ".join(e.exercise for e in self.results)
        parts: list = [
            Text(f"{names}: still raising NotImplementedError — replace the TODOs with your code.")
        ]
        hint = next((e.hint for e in self.results if e.hint), None)
        if hint:
            parts.append(Text.assemble(("hint  ", "bold yellow"), hint))
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
            if self.rerun:
                facts.add_row("re-run", Text(self.rerun, style="cyan"))
            parts.append(facts)
        if e.checks:
            parts.append(CheckTable(e.checks))
            comms_shown = False
            for c in e.checks:
                if not c.passed:
                    parts.extend(Evidence(c, comms_table=not comms_shown).renderables())
                    comms_shown = comms_shown or "table" in c.details
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
        if "timeline" in e.explanation:
            parts.append(Timeline(e.exercise, e.explanation["timeline"]))
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


class Evidence:
    """The details of one failed check, drawn."""

    def __init__(self, check: CheckResult, comms_table: bool = True):
        self.check = check
        self.comms_table = comms_table

    def renderables(self) -> list:
        d = self.check.details
        out: list = []
        if "devices" in d and d.get("mesh_shape"):
            out.append(DeviceMap(d["devices"], d["mesh_shape"], d.get("axis_names") or []))
            stats = Table.grid(padding=(0, 2))
            stats.add_row("max abs error", f"{d['max_abs_err']:.4g}", "max rel error", f"{d['max_rel_err']:.4g}",
                          "tolerance", f"atol {d['atol']:.2g}, rtol {d['rtol']:.2g}")  # fmt: skip
            out.append(stats)
            first = d.get("first_mismatch") or {}
            if "expected_shard" in first:
                where = "device " + ",".join(map(str, first["coord"]))
                t = Table(box=box.SIMPLE, title=f"{where}: its whole shard", title_justify="left")
                t.add_column("expected")
                t.add_column("yours")
                t.add_row(
                    _grid(first["expected_shard"]), Text(_grid(first["actual_shard"]), style="red")
                )
                out.append(t)
        if self.check.name == "sharding" and "expected" in d:
            t = Table(box=box.SIMPLE, title="sharding", title_justify="left")
            t.add_column("expected")
            t.add_column("actual")
            t.add_row(str(d["expected"]), Text(str(d["actual"]), style="red"))
            out.append(t)
        if "table" in d or (self.check.name == "collectives" and "actual" in d):
            out.append(CommsTable(self.check, show_table=self.comms_table))
        if "memory" in d and d.get("memory"):
            m = d["memory"]
            t = Table(box=box.SIMPLE, title="memory per device", title_justify="left")
            for col in ("arguments", "outputs", "temporaries", "bound on temporaries"):
                t.add_column(col, justify="right")
            t.add_row(_bytes(m.get("argument")), _bytes(m.get("output")),
                      Text(_bytes(m.get("temp")), style="red"), _bytes(d.get("bound")))  # fmt: skip
            out.append(t)
        if "rows" in d:  # a table of what differs, e.g. per device: expected, yours
            t = Table(box=box.SIMPLE)
            for i, col in enumerate(d.get("columns") or []):
                t.add_column(col, style="red" if i == len(d["columns"]) - 1 else None)
            for row in d["rows"]:
                t.add_row(*map(str, row))
            out.append(t)
        return out


class DeviceMap:
    """The mesh drawn as a grid: ✔ for a device whose shard is right, ✘ for one that is wrong."""

    def __init__(self, devices: list[dict], mesh_shape: list[int], axis_names: list[str]):
        self.devices = {tuple(d["coord"]): d["ok"] for d in devices}
        self.shape = mesh_shape
        self.names = axis_names

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
        yield t


def _grid(values) -> str:
    """A small nested list as aligned rows of numbers."""
    import numpy as np

    a = np.asarray(values)
    if a.ndim <= 1:
        return " ".join(f"{v:g}" for v in np.atleast_1d(a))
    rows = a.reshape(a.shape[0], -1)
    return "\n".join(" ".join(f"{v:>5g}" for v in row) for row in rows)


class CommsTable:
    """Collectives measured from the compiled program, against the expectation."""

    def __init__(self, check: CheckResult, show_table: bool = True):
        self.check = check
        self.show_table = show_table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        d = self.check.details
        if self.show_table:
            yield from self._table(d)
        yield from self._expectation(d)

    def _table(self, d: dict) -> RenderResult:
        rows = d.get("table") or d.get("actual") or []
        t = Table(box=box.SIMPLE, title="communication measured in the compiled program (per device)",
                  title_justify="left")  # fmt: skip
        t.add_column("collective")
        t.add_column("ops in HLO", justify="right")
        t.add_column("executions", justify="right")
        t.add_column("bytes sent", justify="right")
        allowed = set(d.get("allowed", []))
        for row in rows:
            style = "red" if allowed and row["kind"] not in allowed else ""
            count = "unknown" if row["count"] is None else str(row["count"])
            t.add_row(Text(row["kind"], style=style), str(row["ops"]), count, _bytes(row["bytes"]))
        if not rows:
            t.add_row("(none)", "", "", "")
        yield t

    def _expectation(self, d: dict) -> RenderResult:
        expect = []
        if self.check.name == "steps":
            expect.append(f"expected {d['expected']} × {d['kind']}, measured {d['actual']}")
        elif self.check.name == "bytes":
            expect.append(
                f"expected {_bytes(d['expected'])} per device, measured {_bytes(d['actual'])}"
            )
            if d.get("itemsize") == 2:
                expect.append(
                    "(bfloat16 counted at 2 bytes per element; XLA:CPU widens it to f32 in transit)"
                )
        elif self.check.name == "collectives":
            expect.append("allowed: " + (", ".join(d.get("allowed", [])) or "none"))
        if expect:
            yield Text(" ".join(expect), style="dim")


class ComparisonTable:
    """Bytes per device: the student's program, the optimum, and XLA's own partitioner."""

    def __init__(self, results: list[ExerciseResult]):
        self.results = results

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
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
        for e in self.results:
            c = e.explanation["comparison"]
            yours, best, xla = c.get("yours"), c.get("optimum"), c.get("xla")
            style = "green" if yours == best else "red"
            t.add_row(
                e.exercise,
                f"{c.get('mesh', '')}: {c.get('shapes', '')}",
                Text(_kb(yours, c.get("yours_kinds")), style=style),
                _kb(best, None),
                _kb(xla, c.get("xla_kinds")),
                _versus(yours, xla) if e.passed else Text("fails", style="red"),
            )
        yield t


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


class Timeline:
    """Ring steps of a collective matmul: per step and device, the block held
    (multiplied) and where it goes next.

    ``data``: ``{"n", "example", "rows": [[step, cell per device…]], "note"}``.
    """

    def __init__(self, exercise: str, data: dict):
        self.exercise = exercise
        self.data = data

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        d = self.data
        t = Table(
            box=box.SIMPLE_HEAD,
            title=f"{self.exercise}: step timeline of your program, {d.get('example', '')}",
            title_justify="left",
        )
        t.add_column("step", justify="right")
        for i in range(d["n"]):
            t.add_column(f"device {i}")
        for row in d["rows"]:
            t.add_row(*map(str, row))
        yield t
        if d.get("note"):
            yield Text(d["note"], style="dim")
