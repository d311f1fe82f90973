"""The grades the tests share (tests/grades.py) are kept under what was graded."""

from __future__ import annotations

import pytest

from grader.results import Status
from tests import grades
from tests.mistakes import MISTAKES


def test_a_kept_grade_is_of_the_text_graded_not_of_the_folder(root, tmp_path):
    """A grade is shared only where the same text is graded the same way: a mistake
    written over the solution in the same folder is graded again (a cache keyed by the
    folder would hand back the solution's pass), the same text elsewhere is not."""
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    solution = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "l01_meshes.py").write_text(solution)
    first = grades.grade(1, "l01_meshes", tmp_path / "a", only=[wrong.exercise])
    assert first.exercises[0].status == Status.PASSED
    (tmp_path / "a" / "l01_meshes.py").write_text(wrong.source(solution))
    again = grades.grade(1, "l01_meshes", tmp_path / "a", only=[wrong.exercise])
    assert again.exercises[0].status == Status.FAILED, "the kept pass was handed back"
    (tmp_path / "b" / "l01_meshes.py").write_text(solution)
    assert grades.grade(1, "l01_meshes", tmp_path / "b", only=[wrong.exercise]) is first
    other_seed = grades.grade(1, "l01_meshes", tmp_path / "b", only=[wrong.exercise], seed=1)
    assert other_seed is not first and other_seed.seed == 1


def test_a_mistakes_grade_is_made_once_and_where_the_run_grades_it():
    wrong = next(m for m in MISTAKES if m.id == "floor-division-hides-indivisible")
    kept = grades.mistake(wrong)
    assert grades.mistake(wrong) is kept and kept.exercises[0].status == Status.FAILED
    assert grades.mistake_mode(wrong) == ("isolated" if wrong in grades.SAMPLE else "here")
    assert all(grades.mistake_mode(m) == "isolated" for m in grades.SAMPLE)
    exercises = {(m.module, m.exercise) for m in MISTAKES}
    assert {(m.module, m.exercise) for m in grades.SAMPLE} == exercises


def test_an_unknown_mode_is_refused(root):
    with pytest.raises(ValueError, match="mode 'sandbox': one of here, isolated"):
        grades.grade(1, "l01_meshes", root / "solutions", mode="sandbox")
