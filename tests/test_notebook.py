"""course.notebook: grading from a cell returns a result that displays itself."""

from __future__ import annotations

import pytest

from course import notebook
from course.commands.common import UsageProblem
from course.progress import Progress
from tests.mistakes import MISTAKES


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COURSE_PLATFORM", "cpu")
    return tmp_path / "home"


class Screen:
    """A notebook's display, as IPython's ``display(..., raw=True, display_id=True)``
    and its handle's ``update`` draw it: what the cell shows, in order."""

    def __init__(self):
        self.outputs: list[dict] = []  # one per display; an update replaces it in place
        self.updates: list[dict] = []  # every bundle shown, in order

    def display(self, bundle, raw=False, display_id=False):
        assert raw
        self.outputs.append(bundle)
        self.updates.append(bundle)
        index = len(self.outputs) - 1
        screen = self

        class Handle:
            def update(self, bundle, raw=False):
                assert raw
                screen.outputs[index] = bundle
                screen.updates.append(bundle)

        return Handle() if display_id else None


@pytest.fixture
def screen(monkeypatch):
    """A notebook cell (execution count 7) whose output the test reads."""
    s = Screen()
    s.count = 7
    monkeypatch.setattr(notebook, "_cell", lambda: notebook.Cell(s.display, lambda: s.count))
    return s


def test_grade_shows_the_report_in_its_cell_and_not_twice(home, screen):
    g = notebook.grade(1, solutions=True)
    assert isinstance(g, notebook.Grading) and g and g.exit_code == 0
    assert g.command == "course grade 1 --solutions"
    # progress while grading: one line per example, updated in place …
    lines = [u["text/plain"] for u in screen.updates[:-1]]
    assert lines[0] == "starting the grader …"
    assert any(line.startswith("grading 1.shard_shape — example 1") for line in lines), lines
    # … then the report in its place, so that `r = grade(1)` shows it too
    (shown,) = screen.outputs
    assert shown == screen.updates[-1] and "Score 5/5" in shown["text/plain"]
    assert "Score 5/5" in shown["text/html"]
    # grade(1) as the cell's last line: IPython displays the result; not a second time
    g._ipython_display_()
    assert len(screen.outputs) == 1
    screen.count = 8  # `r` in a later cell shows it again
    g._ipython_display_()
    assert len(screen.outputs) == 2 and "Score 5/5" in screen.outputs[1]["text/plain"]
    # the HTML is a fragment: a dark theme is not painted white
    html = g._repr_mimebundle_()["text/html"]
    assert html.startswith("<pre") and html.rstrip().endswith("</pre>")
    for page in ("<html", "<body", "<head", "<style", "background"):
        assert page not in html.lower(), page
    assert "Score 5/5" in html and "color: #" in html  # its own colours, inline


def test_a_wrong_target_raises_before_anything_is_shown(home, screen):
    with pytest.raises(UsageProblem, match="no lesson 99"):
        notebook.grade(99)
    assert screen.outputs == []


def test_an_error_while_starting_clears_the_progress_line(home, screen):
    with pytest.raises(UsageProblem, match="--timeout"):
        notebook.grade(1, timeout=-1)
    assert screen.updates[0]["text/plain"] == "starting the grader …"
    assert screen.outputs == [{"text/plain": ""}]


def test_a_passed_lesson_points_to_the_next_one(home, screen, root):
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / "l01_meshes.py").write_text((root / "solutions" / "l01_meshes.py").read_text())
    g = notebook.grade(1)
    assert (
        g
        and "Next: lesson 2 · Collectives from first principles"
        in (screen.outputs[0]["text/plain"])
    )


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
