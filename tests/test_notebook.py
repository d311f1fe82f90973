"""course.notebook: grading from a cell returns a result that displays itself."""

from __future__ import annotations

import pytest

from course import notebook
from course.progress import Progress
from tests.mistakes import MISTAKES


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COURSE_PLATFORM", "cpu")
    return tmp_path / "home"


def test_grade_returns_a_result_that_renders_itself(home, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(notebook, "_notebook_line", lambda: lines.append)
    g = notebook.grade(1, solutions=True)
    assert isinstance(g, notebook.Grading) and g and g.exit_code == 0
    assert g.command == "course grade 1 --solutions"
    bundle = g._repr_mimebundle_()
    assert "Score 5/5" in bundle["text/plain"]
    assert "<html" in bundle["text/html"].lower() and "Score 5/5" in bundle["text/html"]
    # progress while grading: one line per example, then a last one
    assert any(line.startswith("grading 1.shard_shape — example 1") for line in lines), lines
    assert lines[-1] == "graded"


def test_as_json_returns_the_data_and_a_failure_is_falsy(root, home, tmp_path):
    wrong = next(m for m in MISTAKES if m.id == "wrong-ring-direction")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "l02_collectives.py").write_text(
        wrong.source((root / "solutions" / "l02_collectives.py").read_text())
    )
    data = notebook.grade("2.ring_all_gather", path=str(sub), max_examples=0, as_json=True)
    assert data["version"] == 1
    (lesson,) = data["lessons"]
    assert lesson["lesson"] == 2 and not lesson["passed"]
    assert lesson["exercises"][0]["status"] == "failed"
    g = notebook.grade("2.ring_all_gather", path=str(sub), max_examples=0)
    assert not g and g.exit_code == 1
    assert f"--path {sub}" in g._repr_mimebundle_()["text/plain"]  # the re-run command
    assert not (home / "progress.db").exists()  # someone else's code: not recorded as yours


def test_attempt_records_a_command_a_person_can_run(home):
    notebook.grade(1, max_examples=0)
    with Progress(home / "progress.db") as p:
        ((attempt, *_rest, command, _state),) = p.attempts()
        assert command == "course grade 1 --max-examples 0"
        assert set(p.versions(attempt)) >= {"python", "jax", "jaxlib", "hypothesis"}
