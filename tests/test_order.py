"""The course's order where a learner sees a list (issue 48.1): lesson 17 comes after
lesson 5, lesson 15 after lesson 7. Numbers are kept (they name the files, ``course grade N`` and the progress
recorded); every list is in the registry's order and says why the numbers jump, the
notebooks' index lists them so, and each notebook ends with the lesson after it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from course import notebooks, registry
from course.cli import cli
from course.registry import Course, Lesson

NOTE = (
    "Listed in the course's order: lesson 17 comes after lesson 5; lesson 15 comes after lesson 7"
)


def _course(*numbers: int) -> Course:
    return Course(tuple(Lesson(n, f"s{n}", f"T{n}", "", (), ()) for n in numbers))


@pytest.mark.parametrize(
    ("numbers", "moved"),
    [
        ((1, 2, 3, 7, 15, 8, 9, 14, 16), [(15, 7)]),
        ((1, 2, 3), []),
        ((1, 2, 3, 4, 17, 5, 6, 7), [(17, 4)]),  # a new lesson placed mid-course
        ((9, 1, 2, 3), [(9, None)]),
        ((1, 2, 5, 3, 4, 9, 6, 7), [(5, 2), (9, 4)]),
    ],
)
def test_the_lessons_out_of_number_order_are_named_with_the_one_before(numbers, moved):
    got = _course(*numbers).out_of_order()
    assert [(x.number, before.number if before else None) for x, before in got] == moved


def test_the_courses_own_order_is_explained_once():
    course = registry.load()
    assert [x.number for x, _ in course.out_of_order()] == [17, 15]
    assert course.order_note().startswith(NOTE)
    assert "a lesson added later takes a new number" in course.order_note()
    assert _course(1, 2, 3).order_note() is None


@pytest.mark.parametrize("command", ["list", "status"])
def test_list_and_status_show_the_courses_order_and_say_why(tmp_path, command):
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "home"), command], terminal_width=100)
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert NOTE in said
    rows = [line.split()[0] for line in r.output.splitlines() if line[:3].strip().isdigit()]
    assert rows == [str(x.number) for x in registry.load().lessons]  # 1 … 5, 17, 6, 7, 15, 8 …


def test_the_notebooks_index_and_next_cells_follow_the_courses_order(root: Path):
    course = registry.load()
    listed = (root / "notebooks" / notebooks.INDEX).read_text()
    assert listed == notebooks.index(course)
    at = [listed.index(f"| {x.number} | {x.title} |") for x in course.lessons]
    assert at == sorted(at) and NOTE in listed
    for lesson in course.lessons:
        nb = nbformat.read(notebooks.path(root, lesson), as_version=4)
        last = nb.cells[-1].source
        following = course.after(lesson.number)
        if following is None:
            assert "the course's last lesson" in last
        else:
            assert f"Next in the course: lesson {following.number}, {following.title}" in last
    seven = nbformat.read(root / "notebooks" / "07_fsdp.ipynb", as_version=4).cells[-1].source
    assert "lesson 15, The optimizer at scale" in seven and "(15_optimizer.ipynb)" in seven


def test_a_stale_index_is_named_by_dev_check(root: Path, tmp_path: Path):
    import shutil

    tree = tmp_path / "tree"
    for folder in ("exercises", "course/lessons", "notebooks"):
        shutil.copytree(root / folder, tree / folder)
    course = registry.load()
    assert not [p for p in notebooks.problems(course, tree) if "index" in p]
    (tree / "notebooks" / notebooks.INDEX).write_text("# old\n")
    assert any(
        p.startswith("notebooks/README.md, the notebooks' index, is missing or out of sync")
        for p in notebooks.problems(course, tree)
    )
