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
