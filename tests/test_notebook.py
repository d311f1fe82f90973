"""course.notebook: grading from a cell returns a result that displays itself."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course import notebook, palette, registry
from course.progress import Progress
from grader.results import ExerciseResult, LessonResult, Status
from tests.mistakes import MISTAKES

LESSONS = len(registry.load().lessons)
"""Exercise files a new workspace gets: one per lesson."""


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
    # the HTML is a fragment: a dark theme is not painted white; its one stylesheet
    # touches only the fragment (tests/test_palette.py: every colour's contrast)
    html = g._repr_mimebundle_()["text/html"]
    assert html.startswith("<style>") and html.rstrip().endswith("</pre>")
    for page in ("<html", "<body", "<head", "background"):
        assert page not in html.lower(), page
    scoped = tuple(f" .sc-{name}" for name in palette.PALETTE)
    assert all(r.endswith(scoped) for r in re.findall(r"([^{}>]+)\{", html.split("</style>")[0]))
    assert "Score 5/5" in html and 'class="sc-green" style="color:#' in html
    assert "\x1b" not in g._repr_mimebundle_()["text/plain"]


def test_a_wrong_target_raises_before_anything_is_shown(home, screen):
    with pytest.raises(notebook.CourseError, match="no lesson 99"):
        notebook.grade(99)
    assert screen.outputs == []


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"devices": 999}, "devices=999: this host simulates 1 to 64 devices"),
        ({"devices": 0}, "devices=0: this host simulates 1 to 64 devices"),
        ({"timeout": -1}, "timeout=-1: -1.0 is not in the range 0.1<=x<=86400.0"),
        ({"max_examples": 101}, "max_examples=101: 101 is not in the range 0<=x<=100"),
        ({"seed": -3}, "seed=-3: -3 is not in the range x>=0"),
        ({"bogus": 1}, "grade() has no option 'bogus' (options: all_lessons, solutions, path"),
    ],
)
def test_grade_checks_its_options_as_the_command_does(home, screen, options, said):
    """``course grade --devices 999`` is a usage error; from a cell it was passed on, and
    999 simulated devices crashed the student's process (each exercise an "error" blamed on
    the student's code). Each option is checked by the command's own rules, in one line,
    before anything is shown or started."""
    with pytest.raises(notebook.CourseError) as raised:
        notebook.grade(1, **options)
    assert str(raised.value).startswith(said), str(raised.value)
    assert screen.outputs == []  # not even "starting the grader …"


def test_an_error_while_starting_clears_the_progress_line(home, screen):
    with pytest.raises(notebook.CourseError, match="--example needs one exercise"):
        notebook.grade(1, example="mesh=2 shape=4 spec=x")
    setup, starting, *_ = (u["text/plain"] for u in screen.updates)
    assert setup.startswith(
        f"Set up your workspace: {LESSONS} exercise file(s)"
    )  # first, as it happens
    assert starting == "starting the grader …"
    assert screen.outputs[1:] == [{"text/plain": ""}]


def test_a_passed_lesson_points_to_the_next_one(home, screen, root):
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / "l01_meshes.py").write_text((root / "solutions" / "l01_meshes.py").read_text())
    g = notebook.grade(1)
    assert (
        g
        and "Next: lesson 2 · Collectives from first principles"
        in (screen.outputs[-1]["text/plain"])
    )
    assert "read it: course.show(2)" in screen.outputs[-1]["text/plain"]  # issue 49.5


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
    shown = " ".join(g._repr_mimebundle_()["text/plain"].split())
    # issue 49.5: the re-run line and the narrowed run's note are the notebook's calls
    assert "course.grade('2.ring_all_gather', example=" in shown and f"path={str(sub)!r})" in shown
    assert (
        "course.grade(2) on 8 devices, without example= or max_examples=, runs the full set"
        in shown
    )
    assert "course grade" not in shown and "--path" not in shown and "--example" not in shown
    assert not (home / "progress.db").exists()  # someone else's code: not recorded as yours


def test_attempt_records_a_command_a_person_can_run(home):
    notebook.grade(1, max_examples=0)
    with Progress(home / "progress.db") as p:
        ((attempt, *_rest, command, _state),) = p.attempts()
        assert command == "course grade 1 --max-examples 0"
        assert set(p.versions(attempt)) >= {"python", "jax", "jaxlib", "hypothesis"}


def test_errors_are_one_line_in_a_real_ipython_shell(home, capsys):
    """IPython shows a CourseError as its one line, not a 20-line traceback."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        for call, said in (
            ("show(99)", "there is no lesson 99 (lessons: 1, 2"),
            ("hint('two')", "'two': give a lesson number, e.g. 2"),
            ("grade(99)", "there is no lesson 99"),
            ("grade('1.nope')", "lesson 1 has no exercise 'nope'"),
        ):
            shell.run_cell(f"from course import notebook\nnotebook.{call}")
            out = capsys.readouterr()
            lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
            assert lines == [f"CourseError: {lines[0].split(': ', 1)[1]}"], lines
            assert said in lines[0], lines
    finally:
        InteractiveShell.clear_instance()


@pytest.fixture
def no_workspace(tmp_path, monkeypatch):
    """An installed course (a wheel, Colab): no rule finds a workspace."""
    monkeypatch.delenv("COURSE_HOME", raising=False)
    monkeypatch.setenv("COURSE_PLATFORM", "cpu")
    monkeypatch.setattr("course.commands.common.workspace", lambda home, db, repo, caching: (
        None if home is None else __import__("course.paths").paths.workspace(home, db, repo, caching)
    ))  # fmt: skip
    monkeypatch.setattr(notebook, "_session", notebook.Session())
    return tmp_path


def test_without_a_workspace_grade_says_how_to_make_one(no_workspace, screen):
    for call in (lambda: notebook.grade(1), notebook.status, lambda: notebook.hint(1)):
        with pytest.raises(
            notebook.CourseError, match=r"no workspace yet: run course\.notebook\.init\(\)"
        ):
            call()
    assert screen.outputs == []


def test_home_makes_the_workspace_and_says_so_before_the_report(no_workspace, screen):
    home = no_workspace / "drive" / "scaling-course"
    g = notebook.grade(1, home=home, max_examples=0)
    assert (home / ".course-workspace").is_file() and (
        home / "exercises" / "l01_meshes.py"
    ).is_file()
    first, *rest = screen.outputs
    assert first["text/plain"].startswith(
        f"Set up your workspace: {LESSONS} exercise file(s) copied to"
    )
    assert "not started" in rest[-1]["text/plain"] and not g
    assert "course.hint(1)" in rest[-1]["text/plain"]  # the panel names the notebook's call
    assert "course hint 1" not in rest[-1]["text/plain"]
    assert all("\x1b" not in o["text/plain"] for o in screen.outputs)
    with Progress(home / "progress.db") as p:  # recorded in that workspace
        assert len(p.attempts()) == 1


def test_init_chooses_the_kernels_workspace(no_workspace, screen):
    home = no_workspace / "ws"
    page = notebook.init(home)
    assert f"Workspace: {home.resolve()} ({LESSONS} exercise file(s) copied)" in page.plain
    assert re.search(r"Lesson 1 · hint 1 of \d+", notebook.hint(1).plain)  # no home= needed
    assert "Your progress" in notebook.status().plain


def test_show_inlines_the_figures_and_plain_text_names_them(home):
    page = notebook.show(1)
    bundle = page._repr_mimebundle_()
    assert "![which device holds which block" in bundle["text/markdown"]
    assert "(data:image/svg+xml;base64," in bundle["text/markdown"]
    assert "(figure: which device holds which block" in bundle["text/plain"]
    assert "![" not in bundle["text/plain"] and "grade(1)" in bundle["text/plain"]


def test_hints_advance_and_speak_of_the_notebook(home):
    first, second = notebook.hint(2).plain, notebook.hint(2).plain
    assert re.search(r"Lesson 2 · hint 1 of \d+", first), first
    assert re.search(r"Lesson 2 · hint 2 of \d+", second), second
    assert "Run hint(2) again for the next one." in first and "course hint" not in first
    assert "\x1b" not in first
    html = notebook.hint(2)._repr_mimebundle_()["text/html"]
    assert 'class="sc-yellow"' in html  # the panel's border, in the themed colour


def test_solution_is_locked_then_whole_python(home):
    assert "unlocks once every exercise of it has passed" in notebook.solution(1).plain
    source = notebook.solution(1, force=True).plain
    ast.parse(source)
    assert source == (Path(__file__).parent.parent / "solutions" / "l01_meshes.py").read_text()


def test_solution_from_an_installation_without_references_is_one_line(home, monkeypatch):
    """The autograder's wheel ships no solutions: a sentence, not a FileNotFoundError."""
    from grader import repo

    real = repo.shipped()
    monkeypatch.setattr(repo, "shipped", lambda root=repo.CODE: repo.Shipped(
        real.stubs, home / "no-solutions", real.lessons, False))  # fmt: skip
    with pytest.raises(notebook.CourseError, match="holds no reference solutions"):
        notebook.solution(1, force=True)


def test_an_exercise_cell_never_loses_code_written_elsewhere(home):
    stub = (Path(__file__).parent.parent / "exercises" / "l01_meshes.py").read_text()
    target = home / "exercises" / "l01_meshes.py"
    notebook.init(home)
    assert "already holds this cell" in notebook.save(1, stub).plain
    target.write_text(stub + "# mine, from my editor\n")
    kept = notebook.save(1, stub)  # the untouched stub cell, run again: the file stays
    assert "already holds your code, not the stub: kept" in kept.plain
    assert target.read_text().endswith("# mine, from my editor\n")
    # the notebook's own cell holds the stub with its commands as calls: a stub all the same
    from course.notebooks import notebook_words

    assert notebook_words(stub) != stub
    assert (
        "already holds your code, not the stub: kept"
        in notebook.save(1, notebook_words(stub)).plain
    )
    assert target.read_text().endswith("# mine, from my editor\n")
    notebook.save(1, stub + "# from the cell\n")  # edited cell: written, the file backed up
    assert target.read_text().endswith("# from the cell\n")
    assert (
        (home / "exercises" / "l01_meshes.py.1.bak")
        .read_text()
        .endswith("# mine, from my editor\n")
    )
    notebook.save(1, stub + "# from the cell, again\n")  # this kernel's own text: no new backup
    assert not (home / "exercises" / "l01_meshes.py.2.bak").exists()


def test_the_exercise_magic_writes_the_file(home):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell(f"from course import notebook\nnotebook.init({str(home)!r})")
        result = shell.run_cell("%%exercise 2\nX = 1\n")
        assert result.success and "Wrote" in repr(result.result)
        assert (home / "exercises" / "l02_collectives.py").read_text() == "X = 1\n"
    finally:
        InteractiveShell.clear_instance()


def test_python_m_course_is_the_command(tmp_path, root):
    env = {**os.environ, "COURSE_HOME": str(tmp_path), "COLUMNS": "100"}
    run = [sys.executable, "-m", "course"]
    ok = subprocess.run([*run, "hint", "1"], cwd=root, env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and re.search(r"hint 1 of \d+", ok.stdout), ok.stderr
    bad = subprocess.run([*run, "show", "99"], cwd=root, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr


def test_the_notebooks_calls_say_what_the_terminals_commands_say():
    """Issue 49.5: in a notebook the re-run line, "read it" and the full grade are calls of
    ``course`` (the notebooks' name for this module), with the terminal's arguments."""
    from course.commands.grade import next_lesson, rerun_command, terminal_command
    from course.scoring import Verdict

    er = ExerciseResult(1, "place", Status.FAILED, example="mesh=2 shape=4 spec='x'")
    assert (
        rerun_command(er) == "course grade 1.place --example 'mesh=2 shape=4 spec='\"'\"'x'\"'\"''"
    )
    assert notebook.rerun_call(er) == "course.grade('1.place', example=\"mesh=2 shape=4 spec='x'\")"
    assert notebook.rerun_call(er, solutions=True).endswith(", solutions=True)")
    assert notebook.rerun_call(er, path="/a b").endswith(", path='/a b')")
    assert (
        notebook.call("show", 8) == "course.show(8)"
        and notebook.call("status") == "course.status()"
    )
    assert terminal_command("show", 8) == "course show 8"
    assert notebook.full_grade_call(3).startswith("course.grade(3) on 8 devices")
    course = registry.load()
    passed = course.lesson(7).score_result(
        LessonResult(
            7, "x", [ExerciseResult(7, e.name, Status.PASSED) for e in course.lesson(7).exercises]
        )
    )
    step = next_lesson(course, Verdict((), (passed,)), notebook.call)
    assert step is not None and step.plain.endswith("read it: course.show(15)")
