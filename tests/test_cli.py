"""The ``course`` command end to end, against small fixture workspaces."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from course import registry
from tests.mistakes import MISTAKES
from tests.test_results import SCHEMA


def course(
    home: Path, *args: str, input: str | None = None, timeout: float = 240
) -> subprocess.CompletedProcess:
    env = {**os.environ, "COURSE_HOME": str(home), "COLUMNS": "100", "COURSE_PLATFORM": "cpu"}
    return subprocess.run(
        [sys.executable, "-m", "course.cli", *args],
        cwd=Path(__file__).resolve().parent.parent,
        env=env, input=input, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def fixture_course(root, home) -> Path:
    """Lesson 1 solved, lesson 2 with a ring that runs the wrong way."""
    ex = home / "exercises"
    ex.mkdir(parents=True)
    (ex / "l01_meshes.py").write_text((root / "solutions" / "l01_meshes.py").read_text())
    wrong = next(m for m in MISTAKES if m.id == "wrong-ring-direction")
    (ex / "l02_collectives.py").write_text(
        wrong.source((root / "solutions" / "l02_collectives.py").read_text())
    )
    return home


def test_fresh_workspace_is_set_up_and_not_started(home):
    r = course(home, "grade", "1")
    assert r.returncode == 1
    assert "not started" in r.stdout and "hint" in r.stdout
    assert (home / "exercises" / "l02_collectives.py").exists()  # every stub copied once
    assert "Traceback" not in r.stdout + r.stderr


def test_passing_lesson_exits_0_failing_exits_1_with_diagnosis(fixture_course):
    ok = course(fixture_course, "grade", "1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Score 5/5" in ok.stdout and "all passed" in ok.stdout
    assert "Next: lesson 2 · Collectives from first principles — read it: course show 2" in (
        ok.stdout
    )
    bad = course(fixture_course, "grade", "2")
    assert bad.returncode == 1 and "Next:" not in bad.stdout
    assert "mirrored" in bad.stdout  # the diagnosis
    assert "course grade 2.ring_all_gather --example 'n=4" in bad.stdout  # the exact re-run
    assert "0 ✘" in bad.stdout  # the device map


def test_rerun_command_reproduces_the_failure(fixture_course):
    """The same example and the same wrong devices; the numbers differ, since every
    run draws its data from a salt of its own that the student's code never sees."""
    bad = course(fixture_course, "grade", "2.ring_all_gather", "--json")
    (lesson,) = json.loads(bad.stdout)["lessons"]
    (ex,) = lesson["exercises"]
    again = course(
        fixture_course, "grade", "2.ring_all_gather", "--example", ex["example"], "--json"
    )
    (ex2,) = json.loads(again.stdout)["lessons"][0]["exercises"]
    assert again.returncode == 1 and ex2["examples_run"] == 1 and ex2["example"] == ex["example"]
    (device_map,) = ex["checks"][0]["evidence"]
    assert device_map["type"] == "device_map" and device_map["first_mismatch"]
    (again_map,) = ex2["checks"][0]["evidence"]
    assert again_map["first_mismatch"]
    # Each run draws its own data, so a device can be right by coincidence in one run
    # (the mirrored ring at N = 4 swaps blocks i−1 and i+1: equal blocks hide it, about
    # 1 run in 300); that both runs are right on every device the other got wrong, never.
    wrong = [
        {i for i, d in enumerate(m["devices"]) if not d["ok"]} for m in (device_map, again_map)
    ]
    assert wrong[0] & wrong[1], wrong


def test_json_output_and_status_after_grading(fixture_course):
    r = course(fixture_course, "grade", "--all", "--json")
    assert r.returncode == 1
    document = json.loads(r.stdout)
    jsonschema.validate(document, SCHEMA)  # the documented schema (docs/grade-json.md)
    data = document["lessons"]
    assert [d["lesson"] for d in data] == [lesson.number for lesson in registry.load().lessons]
    assert all(e["status"] == "not started" for d in data[2:] for e in d["exercises"])
    assert data[0]["passed"] and data[0]["score"] == 5 and not data[1]["passed"]
    status = course(fixture_course, "status")
    assert status.returncode == 0
    assert (
        "4/4" in status.stdout
        and "5/5" in status.stdout
        and "Fix: 2.ring_all_gather" in status.stdout
    )
    listing = course(fixture_course, "list")
    assert "✔ passed" in listing.stdout and "✘ failed" in listing.stdout


def test_solutions_flag_grades_the_references_without_counting_them(home):
    r = course(home, "grade", "2", "--solutions")  # the full set: a narrowed run never passes
    assert r.returncode == 0 and "Score 5/5" in r.stdout
    total = sum(lesson.points for lesson in registry.load().lessons)
    assert f"0/{total} points" in course(home, "status").stdout
    cached = sorted((home / ".cache" / "jax").iterdir())
    assert cached  # compiled programs kept for the next run
    again = course(home, "grade", "2", "--solutions", "--json")
    assert json.loads(again.stdout)["lessons"][0][
        "passed"
    ]  # programs read back from the cache grade the same
    assert sorted((home / ".cache" / "jax").iterdir()) == cached  # nothing new had to be compiled


@pytest.mark.parametrize(
    "args,message",
    [
        (["grade", "99"], "no lesson 99"),
        (["grade", "1.nope"], "no exercise 'nope'"),
        (["grade", "one"], "expected N or N.exercise"),
        (["grade", "1", "--example", "n=1"], "needs one exercise"),
        (["grade", "1", "--all"], "not both"),
        (["show", "99"], "no lesson 99"),
        (["frobnicate"], "No such command"),
    ],
)
def test_usage_errors_exit_2(home, args, message):
    r = course(home, *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_hints_come_one_after_another(home):
    first = course(home, "hint", "2").stdout
    second = course(home, "hint", "2").stdout
    assert "hint 1 of 6" in first and "hint 2 of 6" in second and "perm = " in first


def test_show_renders_the_lesson_text(home):
    r = course(home, "show", "2")
    assert r.returncode == 0 and "ring" in r.stdout.lower() and "ring_all_gather" in r.stdout


def test_reset_asks_first_and_keeps_a_backup(root, fixture_course):
    target = fixture_course / "exercises" / "l01_meshes.py"
    r = course(fixture_course, "reset", "1", input="n\n")
    assert r.returncode == 1 and "Nothing changed" in r.stdout
    assert "NotImplementedError" not in target.read_text()
    r = course(fixture_course, "reset", "1", "--yes")
    assert r.returncode == 0
    assert target.read_text() == (root / "exercises" / "l01_meshes.py").read_text()
    first = target.with_name("l01_meshes.py.1.bak")
    assert "def place" in first.read_text() and str(first) in "".join(r.stdout.split())


def test_reset_never_overwrites_an_earlier_backup(root, fixture_course):
    target = fixture_course / "exercises" / "l01_meshes.py"
    stub = (root / "exercises" / "l01_meshes.py").read_text()
    target.write_text(stub + "\n# attempt one\n")
    asked = course(fixture_course, "reset", "1", input="n\n")
    assert "l01_meshes.py.1.bak" in asked.stdout and "will be kept" in asked.stdout
    assert course(fixture_course, "reset", "1", "--yes").returncode == 0
    target.write_text(stub + "\n# attempt two\n")
    second = course(fixture_course, "reset", "1", "--yes")
    assert second.returncode == 0 and "l01_meshes.py.2.bak" in "".join(second.stdout.split())
    assert "attempt one" in target.with_name("l01_meshes.py.1.bak").read_text()
    assert "attempt two" in target.with_name("l01_meshes.py.2.bak").read_text()
    # resetting an untouched stub keeps nothing: there is nothing of the student's to keep
    assert "previous version" not in course(fixture_course, "reset", "1", "--yes").stdout
    assert not target.with_name("l01_meshes.py.3.bak").exists()


def test_solution_unlocks_after_passing(fixture_course):
    locked = course(fixture_course, "solution", "1")
    assert locked.returncode == 1 and "--force" in locked.stderr and not locked.stdout
    assert course(fixture_course, "solution", "1", "--force").returncode == 0
    course(fixture_course, "grade", "1")
    shown = course(fixture_course, "solution", "1")
    assert shown.returncode == 0 and "def device_slices" in shown.stdout


def test_a_narrowed_run_is_shown_but_never_counted(fixture_course):
    """Lesson 2's ring runs the wrong way: right on 1 and 2 devices, wrong from 3 on."""
    two = course(fixture_course, "grade", "2", "--devices", "2", "--json")
    (lesson,) = json.loads(two.stdout)["lessons"]
    ring = lesson["exercises"][0]
    assert ring["status"] == "passed" and not ring["counted"] and ring["score"] == 0
    assert "2 devices here" in ring["narrowed"] and "e.g. n=4" in ring["narrowed"]
    assert two.returncode == 1 and not lesson["passed"]
    one = "n=2 rows=2 cols=3 dtype=float32 seed=5"
    shown = course(fixture_course, "grade", "2.ring_all_gather", "--example", one)
    assert shown.returncode == 0, shown.stdout  # the example passes: said, never counted
    assert "not counted" in shown.stdout and "unlocks no solution" in shown.stdout
    assert "Fixed: 2.ring_all_gather now passes this example" in shown.stdout
    locked = course(fixture_course, "solution", "2")
    assert locked.returncode == 1 and "--force" in locked.stderr
    assert "2.ring_all_gather" not in course(fixture_course, "status").stdout.split("Fix:")[0]
    with sqlite3.connect(fixture_course / "progress.db") as db:
        counted = db.execute(
            "SELECT COUNT(*) FROM results JOIN attempts a ON a.id = attempt_id WHERE a.counted"
        ).fetchone()[0]
    assert counted == 0  # passes kept under attempts that do not count, never the student's


def test_quick_commands_do_not_import_jax(home):
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from course.cli import cli\n"
        "for args in (['status'], ['list'], ['hint', '1']):\n"
        "    r = CliRunner().invoke(cli, args)\n"
        "    assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))\n"
    )
    env = {**os.environ, "COURSE_HOME": str(home)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=Path(__file__).resolve().parent.parent, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_status_imports_neither_the_report_nor_the_grading_protocol(home):
    """course status's start is most of its time (the goal: 0.2 s): it loads what it shows."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from course.cli import cli\n"
        "r = CliRunner().invoke(cli, ['status'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('grader', 'hmac')))))\n"
    )
    env = {**os.environ, "COURSE_HOME": str(home)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=Path(__file__).resolve().parent.parent, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    assert "grader.results" in loaded  # the statuses it shows
    assert not loaded & {"grader.report", "grader.spec", "grader.sandbox.protocol", "hmac"}


def test_the_command_lines_default_timeout_is_the_graders():
    from course import limits
    from grader.sandbox import protocol

    assert limits.DEFAULT_TIMEOUT == protocol.DEFAULT_TIMEOUT


def test_damaged_progress_file_gets_a_way_forward(home):
    home.mkdir(parents=True)
    (home / "progress.db").write_bytes(b"this is not a database" * 100)
    r = course(home, "status")
    assert r.returncode == 1 and "damaged" in r.stderr and "mv " in r.stderr


def _wait_for(predicate, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def _results(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT exercise, status FROM results").fetchall()
    except sqlite3.OperationalError:
        return []


def _done_attempts(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM attempts WHERE state = 'done'").fetchone()[0]


def test_ctrl_c_during_grading_keeps_recorded_progress(root, home):
    ex = home / "exercises"
    ex.mkdir(parents=True)
    slow = "import time\ndef ring_reduce_scatter(x, axis_name):\n    time.sleep(120)\n"
    (ex / "l02_collectives.py").write_text(
        (root / "solutions" / "l02_collectives.py").read_text() + slow
    )
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu"}
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "grade", "2"], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    _wait_for(lambda: len(_results(home / "progress.db")) >= 1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "Interrupted" in err and "Traceback" not in err
    assert _results(home / "progress.db") == [("ring_all_gather", "passed")]
    with sqlite3.connect(home / "progress.db") as conn:
        assert conn.execute("SELECT state FROM attempts").fetchall() == [("interrupted",)]
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_watch_regrades_on_save_and_stops_cleanly(root, home):
    course(home, "status")  # sets up the workspace
    target = home / "exercises" / "l01_meshes.py"
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "watch", "1"], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    lines: list[str] = []
    errors: list[str] = []
    readers = [
        threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True),
        threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    try:
        _wait_for(lambda: len(_results(home / "progress.db")) >= 4)
        assert {s for _, s in _results(home / "progress.db")} == {"not started"}
        time.sleep(1.0)
        staged = target.with_suffix(".tmp")
        staged.write_text((root / "solutions" / "l01_meshes.py").read_text())
        os.replace(staged, target)  # one save, as editors do it
        _wait_for(lambda: _done_attempts(home / "progress.db") >= 2)
        # the attempt is recorded before its report is drawn: wait for the report too
        _wait_for(lambda: any("Score 5/5" in line for line in lines))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        for reader in readers:
            reader.join(timeout=30)
    out = "".join(lines)
    assert proc.returncode == 0, "".join(errors)
    assert "changed" in out and "Stopped watching" in out and "Score 5/5" in out


def test_dev_check_passes_on_the_course(home):
    """Its file checks on the whole course, its grading on lesson 1's solutions and stubs
    (``--lessons 1``). Every lesson's are graded once a leg by ``test_engine`` (the
    solutions in the student's process, the stubs) and by CI's own ``course dev check``
    after the tests: graded here too, they cost two minutes a leg (issue 44 §3)."""
    r = course(home, "dev", "check", "--lessons", "1", timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    assert "solutions pass, stubs not started (lessons 1 graded)" in out
    assert "1.place" in out and "2.ring_all_gather" not in out  # lesson 1's rows only
    bad = course(home, "dev", "check", "--static", "--lessons", "1,99", timeout=900)
    assert bad.returncode == 2 and "--lessons: no lesson 99" in bad.stdout + bad.stderr


def test_a_failed_bonus_is_named_and_leaves_the_exit_status_0(root, home):
    """The exit-status rule (README, ``course grade --help``): every required exercise
    passed → 0, and the summary names the bonus that failed; graded on its own, the
    bonus's own result sets the status."""
    ex = home / "exercises"
    ex.mkdir(parents=True)
    wrong = next(m for m in MISTAKES if m.id == "pp-zero-bubble-w-right-after-b")
    (ex / "l09_pipeline.py").write_text(
        wrong.source((root / "solutions" / "l09_pipeline.py").read_text())
    )
    lesson = course(home, "grade", "9")
    assert lesson.returncode == 0, lesson.stdout + lesson.stderr
    assert "every required exercise passed; bonus zero_bubble_schedule failed" in lesson.stdout
    assert "all passed" not in lesson.stdout
    alone = course(home, "grade", "9.zero_bubble_schedule")
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert "bonus zero_bubble_schedule failed" in alone.stdout
    helped = course(home, "grade", "--help")
    assert "a bonus that fails" in " ".join(helped.stdout.split())
