"""What the commands print at 60, 80 and 120 columns, and when piped."""

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
from course.figure_links import names

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = [60, 80, 120]


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
def test_list_keeps_every_status_whole(tmp_path, width):
    out = course(tmp_path, width, "list")
    rows = [line.split() for line in out.splitlines()]
    names = [e.name for lesson in registry.load().lessons for e in lesson.exercises]
    shown = [row for row in rows if row[:1] and row[0] in names]
    assert [row[0] for row in shown] == names
    assert all(row[2:5] == ["·", "not", "started"] for row in shown), shown


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
def test_status_keeps_each_lessons_figures_on_its_first_line(tmp_path, width):
    out = course(tmp_path, width, "status")
    rows = [line.split() for line in out.splitlines()]
    for lesson in registry.load().lessons:
        (row,) = [r for r in rows if r[:1] == [str(lesson.number)]]
        assert row[-3:] == [f"0/{len(lesson.required)}", f"0/{lesson.points}", "never"], row
        assert lesson.title.startswith(" ".join(row[1:-3])), row  # the title wraps, in order


@pytest.mark.parametrize("width", WIDTHS)
def test_show_keeps_code_and_diagrams_whole(tmp_path, width):
    out = course(tmp_path, width, "show", "2")
    text = (ROOT / "course" / "lessons" / "02_collectives.md").read_text()
    lesson = registry.load().lesson(2)
    path = str(tmp_path / "exercises" / "l02_collectives.py")
    code = _code_lines(text)
    figures = [str((ROOT / "course" / "lessons" / "figures" / n).resolve()) for n in names(text)]
    assert figures  # the lesson has a figure, and its path is printed whole
    dots = text.count("…") + sum(e.summary.count("…") for e in lesson.exercises)
    assert_clean(out, width, whole=(path, *figures, *(line.strip() for line in code)), dots=dots)
    assert any(len(line) > width for line in code) or width > 80  # lines wider than 80 …
    shown = {line.strip() for line in out.splitlines()}
    assert all(line.strip() in shown for line in code)  # … and each line is printed whole
    assert str(tmp_path / "exercises" / "l02_collectives.py") in shown
    assert all(f in shown for f in figures)  # however long the checkout's path


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
    assert "  " + command in lines  # whole, on a line of its own: the one line that may be wider
    assert [line for line in lines if len(line) > width] == (
        ["  " + command] if len(command) + 2 > width else []
    )
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


# ------------------------------------------------------------------ course grade


@pytest.fixture(scope="module")
def gradings(tmp_path_factory):
    """One passing grading (lesson 5: long names, a bonus) and one failing (lesson 2
    calling all_gather, so the communication table shows), each graded once."""
    from course import notebook
    from tests.mistakes import MISTAKES

    tmp = tmp_path_factory.mktemp("widths")
    wrong = next(m for m in MISTAKES if m.id == "calls-all-gather")
    (tmp / "sub").mkdir()
    (tmp / "sub" / "l02_collectives.py").write_text(
        wrong.source((ROOT / "solutions" / "l02_collectives.py").read_text())
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_HOME", str(tmp / "home"))
        mp.setattr(notebook, "_cell", lambda: None)
        passed = notebook.grade(5, solutions=True)
        failed = notebook.grade(2, path=str(tmp / "sub"))
    assert passed and not failed
    return {"pass": passed, "fail": failed}


def render_grading(grading, width: int) -> str:
    """What ``course grade`` prints, piped, on a terminal ``width`` columns wide."""
    from course import scoring

    out = io.StringIO()
    console = Console(file=TrimmedLines(out), width=width, color_system=None)
    for report in scoring.terminal(grading.verdict, grading.rerun):
        console.print(report, crop=False)
    console.file.flush()
    return out.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("outcome", ["pass", "fail"])
def test_grade_table_keeps_names_statuses_and_headers_whole(gradings, outcome, width):
    grading = gradings[outcome]
    out = render_grading(grading, width)
    reruns = [
        grading.rerun(e).strip() for r in grading.results for e in r.exercises if not e.passed
    ]
    assert_clean(out, width, whole=tuple(reruns))
    rows = [line.split() for line in out.splitlines()]
    header = next(row for row in rows if row[:1] == ["exercise"])
    assert header[:4] == ["exercise", "status", "points", "examples"], header
    # lesson 5's 30-character name leaves no room for the time at 60 columns: it goes first
    assert header[4:] == ([] if (outcome, width) == ("pass", 60) else ["time"])
    ((result,), (card,)) = grading.results, grading.cards
    for e in result.exercises:
        (row,) = [r for r in rows if r[:1] == [e.exercise]]  # the name once, whole
        row = [cell for cell in row if cell != "(bonus)"]  # beside the name, or below it
        mark, word = {"passed": ("✔", "passed"), "failed": ("✘", "failed")}[e.status]
        s = card.exercises[e.exercise]
        assert row[1:5] == [mark, word, f"{s.score}/{s.points}", str(e.examples_run)], row


@pytest.mark.parametrize("width", [80, 120])
def test_a_table_title_wraps_at_the_terminal_not_at_its_table(gradings, width):
    out = render_grading(gradings["fail"], width)
    title = "communication measured in the compiled program (per device)"
    assert any(line.strip("│ ") == title for line in out.splitlines()), out


@pytest.mark.parametrize("width", WIDTHS)
def test_a_narrowed_runs_not_counted_stays_whole_beside_the_longest_name(width):
    """Lesson 5's 30-character name and "✔ passed · not counted": at 60 columns the
    time goes, "not counted" takes a line of its own, then the count of examples goes."""
    from course import scoring
    from grader.report import LessonReport
    from grader.results import ExerciseResult, LessonResult, Status

    lesson = registry.load().lesson(5)
    result = LessonResult(5, "/x", exercises=tuple(
        ExerciseResult(5, e.name, Status.PASSED, examples_run=4, duration=0.4,
                       narrowed="2 devices here")
        for e in lesson.exercises
    ))  # fmt: skip
    verdict = scoring.verdict([lesson], [result])
    out = io.StringIO()
    console = Console(file=TrimmedLines(out), width=width, color_system=None)
    console.print(LessonReport(verdict.results[0], verdict.cards[0]), crop=False)
    console.file.flush()
    assert_clean(out.getvalue(), width)
    lines = out.getvalue().splitlines()
    rows = [[cell for cell in line.split() if cell != "(bonus)"] for line in lines]
    for e in lesson.exercises:
        (i,) = [n for n, row in enumerate(rows) if row[:3] == [e.name, "✔", "passed"]]
        assert "· not counted" in lines[i] or "· not counted" in lines[i + 1]


def test_trimmed_output_whose_stream_closed_first_flushes_quietly():
    """IOBase's __del__ flushes at exit, after the stream under it may be closed (a
    test runner's capture): that flush must not raise."""
    under = io.StringIO()
    out = TrimmedLines(under)
    out.write("a line   \nhalf")
    assert under.getvalue() == "a line\n"
    under.close()
    out.flush()  # raised ValueError: I/O operation on closed file
