"""What the commands print at 80 and 60 columns, and when piped."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from course import registry
from course.commands.common import TrimmedLines
from course.commands.show import LessonText, page

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = [80, 60]


def course(home: Path, width: int, *args: str) -> str:
    env = {**os.environ, "COURSE_HOME": str(home), "COLUMNS": str(width), "COURSE_PLATFORM": "cpu"}
    r = subprocess.run([sys.executable, "-m", "course.cli", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    return r.stdout


def assert_clean(out: str, width: int, whole: tuple[str, ...] = (), dots: int = 0) -> None:
    """Nothing cut to "…" (the text has ``dots`` of its own), no trailing padding,
    no line past the width but those printed ``whole`` (a path, a line of code)."""
    assert out.count("…") == dots
    lines = out.splitlines()
    assert [n for n, line in enumerate(lines) if line != line.rstrip()] == []
    assert [line for line in lines if len(line) > width and line.strip() not in whole] == []


@pytest.mark.parametrize("width", WIDTHS)
def test_list_keeps_numbers_and_exercise_names(tmp_path, width):
    out = course(tmp_path, width, "list")
    assert_clean(out, width)
    lines = out.splitlines()
    for lesson in registry.load().lessons:
        assert any(line.split()[:1] == [str(lesson.number)] for line in lines), lesson.number
        for ex in lesson.exercises:
            assert any(line.split()[:1] == [ex.name] for line in lines), ex.name


@pytest.mark.parametrize("width", WIDTHS)
def test_status_keeps_paths_and_commands_whole(tmp_path, width):
    out = course(tmp_path, width, "status")
    path = str(tmp_path / "exercises" / "l01_meshes.py")
    assert_clean(out, width, whole=(path,))
    lines = [line.strip() for line in out.splitlines()]
    assert str(tmp_path / "exercises" / "l01_meshes.py") in lines
    for command in ("course show 1", "course grade 1", "course hint 1"):
        assert any(line.endswith(command) for line in lines), command


@pytest.mark.parametrize("width", WIDTHS)
def test_show_keeps_code_and_diagrams_whole(tmp_path, width):
    out = course(tmp_path, width, "show", "2")
    text = (ROOT / "course" / "lessons" / "02_collectives.md").read_text()
    lesson = registry.load().lesson(2)
    path = str(tmp_path / "exercises" / "l02_collectives.py")
    code = _code_lines(text)
    dots = text.count("…") + sum(e.summary.count("…") for e in lesson.exercises)
    assert_clean(out, width, whole=(path, *(line.strip() for line in code)), dots=dots)
    code = [line for line in code if len(line) > width]
    assert code  # the lesson has lines wider than the terminal …
    shown = {line.strip() for line in out.splitlines()}
    assert all(line.strip() in shown for line in code)  # … and each is printed whole
    assert str(tmp_path / "exercises" / "l02_collectives.py") in shown


def _code_lines(markdown: str) -> list[str]:
    out, inside = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside and line.strip():
            out.append(line)
    return out


def test_show_pages_a_long_lesson_on_a_terminal(tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"tee {paged}")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=60, height=20)
    page(console, LessonText("# Title\n\n" + "line\n\n" * 40), "footer")
    assert "footer" in paged.read_text() and paged.read_text().count("line") == 40
    screen.truncate(0)
    paged.unlink()
    page(console, LessonText("# Short"), "footer")  # fits the screen: no pager
    assert not paged.exists() and "footer" in screen.getvalue()


def test_piped_lines_lose_their_padding():
    out = io.StringIO()
    w = TrimmedLines(out)
    w.write("a   \nb")
    w.write("  \n")
    assert out.getvalue() == "a\nb\n"


# ------------------------------------------------------------------ the failure panel


def failing(cols: int) -> tuple:
    """A ring_all_gather whose device 0 holds a wrong (8 × cols) shard, as the values check reports it."""
    from grader import evidence as ev
    from grader.results import CheckResult, ExerciseResult, Status

    expected = [[float(r * cols + c) for c in range(cols)] for r in range(8)]
    yours = [[v + (1 if r == 1 else 0) for v in row] for r, row in enumerate(expected)]
    check = CheckResult(
        "values", False, "4 of 4 devices hold wrong values (first at global index (1, 0))",
        evidence=[ev.DeviceMap(
            mesh_shape=[4], axis_names=["x"],
            devices=[ev.DeviceShard([i], False, 1.0) for i in range(4)],
            max_abs_err=1.0, max_rel_err=0.5, atol=1.6e-5, rtol=1e-5,
            first_mismatch=ev.Mismatch([0], [1, 0], 4.0, 5.0, expected, yours),
        )],
    )  # fmt: skip
    example = f"n=4 rows=32 cols={cols} dtype=float32 seed=1"
    er = ExerciseResult(2, "ring_all_gather", Status.FAILED, checks=[check], examples_run=3,
                        example=example, hint="The blocks are mirrored.")  # fmt: skip
    command = (
        f"course grade 2.ring_all_gather --example '{example}' --path /some/where/students/alice"
    )
    return er, command


def render_panel(er, command: str, width: int) -> str:
    from grader.report import ExercisePanel

    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(ExercisePanel(er, command), crop=False)  # as course grade prints it
    return console.file.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("cols", [2, 16])
def test_failure_panel_fits_and_its_rerun_command_copies_whole(width, cols):
    er, command = failing(cols)
    out = render_panel(er, command, width)
    lines = out.splitlines()
    assert [line for line in lines if len(line) > width] == ["  " + command]  # the one exception
    assert "…" not in out
    for label in ("max abs error", "max rel error", "tolerance"):
        assert any(label in line for line in lines), label  # labels never broken in two
    grid_rows = [line.strip("│ ").split() for line in lines]
    if cols == 2:  # small shards: every number of both grids, no row wrapped
        assert ["0", "1"] in [row[:2] for row in grid_rows]
        assert ["2", "3", "3", "4"] in grid_rows  # expected | yours: row 1 is off by one
    else:  # too wide for the panel: the first columns, and a note saying so
        assert any("of 16 columns" in line for line in lines) == (width < 80)
        assert any(row[:3] == ["16", "17", "18"] for row in grid_rows)
