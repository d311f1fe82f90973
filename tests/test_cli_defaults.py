"""The ``course`` command's defaults: no arguments, --version, the current lesson."""

from __future__ import annotations

import json

import pytest

from course import versions
from tests.test_cli import course


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def test_no_arguments_shows_status_then_help(home):
    r = course(home)
    assert r.returncode == 0, r.stderr
    assert "Your progress" in r.stdout and "Next: 1." in r.stdout
    assert r.stdout.index("Your progress") < r.stdout.index("Usage: course")
    assert "Commands:" in r.stdout


def test_version_names_what_grades(home):
    r = course(home, "--version")
    assert r.returncode == 0
    v = versions.versions()
    assert r.stdout.strip() == versions.describe()
    assert f"jax {v['jax']}" in r.stdout and f"hypothesis {v['hypothesis']}" in r.stdout
    assert not home.exists()  # answering --version touches no workspace


def test_hint_show_and_solution_default_to_the_current_lesson(home):
    assert "Lesson 1 · hint 1 of" in course(home, "hint").stdout
    assert "Lesson 1 exercises" in course(home, "show").stdout
    locked = course(home, "solution")
    assert locked.returncode == 1 and "course solution 1 --force" in locked.stderr
    assert "def shard_shape" in course(home, "solution", "--force").stdout


def test_one_device_is_one_device(home):
    r = course(home, "grade", "1.shard_shape", "--devices", "1", "--solutions", "--json")
    assert r.returncode == 1, r.stderr  # graded, but fewer devices than a grade needs: not counted
    assert json.loads(r.stdout)["lessons"][0]["devices"] == "1 CPU device (the CPU only, as asked)"


def test_grading_other_code_leaves_your_progress_alone(root, home):
    r = course(home, "grade", "1", "--path", str(root / "solutions"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (home / "progress.db").exists()
    r = course(home, "grade", "1", "--solutions")
    assert r.returncode == 0
    assert not (home / "progress.db").exists()


def test_status_and_list_json_follow_the_progress_schema(root, home):
    import jsonschema

    schema = json.loads((root / "docs" / "progress-json.schema.json").read_text())
    before = course(home, "list", "--json")
    assert before.returncode == 0
    jsonschema.validate(json.loads(before.stdout), schema)
    (home / "exercises").mkdir(parents=True)
    (home / "exercises" / "l01_meshes.py").write_text(
        (root / "solutions" / "l01_meshes.py").read_text()
    )
    assert course(home, "grade", "1").returncode == 0
    for command in ("status", "list"):
        r = course(home, command, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        jsonschema.validate(doc, schema)
        first = doc["lessons"][0]
        assert first["passed"] and first["score"] == first["possible"] == 5
        assert doc["score"] == 5 and doc["next"]["lesson"] == 2
        assert doc["workspace"] == str(home)
        assert all(e["attempts"] == 1 and e["ever_passed"] for e in first["exercises"])
