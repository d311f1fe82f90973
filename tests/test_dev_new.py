"""``course dev new N slug`` writes a lesson's skeletons; ``course dev check`` then names
what is left to write, and nothing once it is written."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from course import registry
from course.cli import cli
from course.commands.dev import MARKER, public_functions, static_problems

NEW = ["grader/lessons/l40_tuning/__init__.py", "grader/lessons/l40_tuning/spec.py",
       "exercises/l40_tuning.py", "solutions/l40_tuning.py",
       "course/lessons/40_tuning.md", "tests/mistakes/l40.py"]  # fmt: skip


@pytest.fixture
def tree(root: Path, tmp_path: Path) -> Path:
    """A copy of the repository's folders a lesson lives in, its registry and README."""
    for folder in ("exercises", "solutions", "grader/lessons", "course/lessons", "tests/mistakes"):
        shutil.copytree(root / folder, tmp_path / folder)
    for f in ("course/course.toml", "README.md", "pyproject.toml"):
        shutil.copy(root / f, tmp_path / f)
    for package in ("grader", "tests"):  # so that ruff sees them as the project's own
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


def dev(tree: Path, *args: str):
    return CliRunner().invoke(cli, ["dev", *args, "--root", str(tree)])


def listing(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*") if p.is_file()}


def problems(tree: Path) -> list[str]:
    return static_problems(registry.load.__wrapped__(tree / "course" / "course.toml"), tree)


def new_lesson(tree: Path) -> None:
    r = dev(tree, "new", "40", "tuning", "--title", "Tuning at scale",
            "--exercise", "adamw_step", "--exercise", "zero1_step", "--after", "7")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert all(path in r.output for path in NEW)


def test_new_writes_every_skeleton_and_the_registry_entry_in_place(tree):
    new_lesson(tree)
    assert all((tree / path).is_file() for path in NEW)
    course = registry.load.__wrapped__(tree / "course" / "course.toml")
    numbers = [lesson.number for lesson in course.lessons]
    assert numbers[numbers.index(7) + 1] == 40  # after lesson 7: the file's order
    lesson = course.lesson(40)
    assert (lesson.title, [e.name for e in lesson.exercises]) == (
        "Tuning at scale", ["adamw_step", "zero1_step"])  # fmt: skip
    stub, solution = (public_functions(tree / d / "l40_tuning.py") for d in ("exercises", "solutions"))  # fmt: skip
    assert stub == solution and list(stub) == ["adamw_step", "zero1_step"]
    text = (tree / "exercises" / "l40_tuning.py").read_text()
    assert "# TODO" in text and text.count("raise NotImplementedError") == 2
    # the text is titled as every lesson's is, and the files pass the project's ruff
    assert (tree / NEW[4]).read_text().startswith("# Lesson 40 — Tuning at scale\n")
    ruff = Path(sys.executable).with_name("ruff")
    for args in (["check"], ["format", "--check"]):
        r = subprocess.run([str(ruff), *args, *NEW], cwd=tree, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def test_check_names_what_the_new_lesson_still_lacks(tree):
    new_lesson(tree)
    found = problems(tree)
    for name in ("adamw_step", "zero1_step"):
        assert f"lesson 40: {name} has no hint in course.toml (its own `hints` under its [[lessons.exercises]] entry)" in found  # fmt: skip
    assert any(p.startswith("lesson 40: the catalogue of mistakes is empty (tests/mistakes/l40.py)") for p in found)  # fmt: skip
    for path in NEW[1:]:  # __init__.py holds no marker
        assert f"lesson 40: {path} still holds the skeleton's {MARKER}" in found
    assert f"lesson 40: course.toml's summary, adamw_step's summary, zero1_step's summary still hold {MARKER}" in found  # fmt: skip
    assert any(p.startswith("README.md's lesson table lists lessons [1, 2, 3, 4, 5, 17, 6, 7, 15") for p in found)  # fmt: skip
    assert all(p.startswith("lesson 40") or p.startswith("README.md") for p in found), found
    assert len(found) == 2 + 1 + 5 + 1 + 1
    # the whole command says the same and fails
    r = dev(tree, "check", "--static")
    assert r.exit_code == 1 and "zero1_step has no hint" in " ".join(r.output.split())


def test_once_written_the_check_has_nothing_to_say(tree):
    """The skeletons agree with each other (names, signatures, docstrings, the spec's
    exercises): filling in what the markers ask for is all a clean check needs."""
    new_lesson(tree)
    for path in NEW:
        f = tree / path
        f.write_text(f.read_text().replace(MARKER, "Written"))
    toml = tree / "course" / "course.toml"
    toml.write_text(toml.read_text().replace(MARKER, "Written").replace("hints = []", 'hints = ["A hint."]'))  # fmt: skip
    catalogue = tree / "tests" / "mistakes" / "l40.py"
    entries = "".join(
        f'    Mistake(id="l40-{n}", module=L40, exercise="{n}", status="failed", check="values",'
        f' says=("x",), patch=(("a", "b"),)),\n'
        for n in ("adamw_step", "zero1_step")
    )
    catalogue.write_text(re.sub(r"    # Mistake\(.*?\n]", entries + "]", catalogue.read_text(), flags=re.S))  # fmt: skip
    readme = tree / "README.md"
    readme.write_text(readme.read_text().replace("\n| 15 |", "\n| 40 | Tuning | x |\n| 15 |", 1))  # fmt: skip
    assert problems(tree) == []


def test_new_refuses_a_taken_number_slug_or_file_and_writes_nothing(tree):
    before = listing(tree)
    for args, said in [
        (["7", "anything"], "lesson 7 exists already (fsdp)"),
        (["41", "fsdp"], "the slug 'fsdp' is lesson 7's already"),
        (["41", "Bad-Slug"], "the slug must be lower-case letters"),
        (["41", "later", "--exercise", "class"], "'class' cannot be an exercise"),
        (["41", "later", "--after", "99"], "there is no lesson 99"),
    ]:
        r = dev(tree, "new", *args)
        assert r.exit_code == 2 and said in r.output, r.output
    (tree / "tests" / "mistakes" / "l41.py").write_text("MISTAKES = []\n")  # a file in the way
    before = listing(tree)
    r = dev(tree, "new", "41", "later")
    assert r.exit_code == 2 and "nothing written: tests/mistakes/l41.py exists already" in r.output
    assert listing(tree) == before
    # and the default: one exercise, the entry last
    assert dev(tree, "new", "42", "last").exit_code == 0
    last = registry.load.__wrapped__(tree / "course" / "course.toml").lessons[-1]
    assert (last.number, [e.name for e in last.exercises]) == (42, ["first_exercise"])


def test_a_new_lessons_file_that_does_not_parse_or_load_is_named(tree):
    new_lesson(tree)
    spec = tree / "grader" / "lessons" / "l40_tuning" / "spec.py"
    text = spec.read_text()
    spec.write_text(text.replace("SPEC = LessonSpec(", "SPEC = LessonSpec(("))
    assert "lesson 40: grader/lessons/l40_tuning/spec.py does not parse: line 39: '(' was never closed" in problems(tree)  # fmt: skip
    spec.write_text(text.replace("from grader.spec import", "from grader.no_such import"))
    assert any(
        p.startswith("lesson 40: the grading spec does not load: ModuleNotFoundError")
        for p in problems(tree)
    )
