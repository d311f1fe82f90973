"""course/progress.py: the SQLite store of attempts, results and hints."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from course.progress import SCHEMA_VERSION, ExerciseState, Progress, ProgressError
from course.registry import Exercise
from course.scoring import ExerciseScore
from grader.results import CheckResult, ExerciseResult, Status


def result(
    exercise: str = "ring_all_gather",
    status: Status = Status.PASSED,
    lesson: int = 2,
    checks: int = 2,
    example: str | None = None,
) -> ExerciseResult:
    passed = status == Status.PASSED
    return ExerciseResult(
        lesson=lesson,
        exercise=exercise,
        status=status,
        checks=[
            CheckResult(f"check{i}", passed, f"message {i}", duration=0.01 * i)
            for i in range(checks)
        ],
        examples_run=3,
        example=example,
        duration=0.5,
    )


def scored(er: ExerciseResult, points: int = 2) -> tuple[ExerciseResult, ExerciseScore]:
    """``er`` with its score by the registry's rule, as ``Progress.record`` takes them."""
    return er, Exercise(er.exercise, points, "").scored(er.status)


def test_new_file_gets_schema(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "progress.db"
    with Progress(path) as p:
        assert p.states() == {}
        assert p.attempts() == []
    assert path.exists()
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "attempts", "results", "checks", "hints"} <= tables
    version = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    # opening again keeps the file as it is
    with Progress(path) as p:
        assert p.states() == {}


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "progress.db"
    with Progress(path) as p:
        a = p.start_attempt("workspace/exercises", counted=True, command="course grade 2")
        failed = result(status=Status.FAILED, checks=3, example="n=4 rows=8")
        p.record(a, *scored(failed))
        p.finish_attempt(a)
        [(aid, started, finished, source, counted, command, state)] = p.attempts()
        assert aid == a
        assert source == "workspace/exercises"
        assert counted == 1
        assert command == "course grade 2"
        assert state == "done"
        assert finished >= started > 0

    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT attempt_id, lesson, exercise, status, score, possible, duration, example FROM results"
    ).fetchall()
    assert rows == [(a, 2, "ring_all_gather", "failed", 0, 2, 0.5, "n=4 rows=8")]
    checks = db.execute("SELECT name, passed, message FROM checks ORDER BY rowid").fetchall()
    assert checks == [
        ("check0", 0, "message 0"),
        ("check1", 0, "message 1"),
        ("check2", 0, "message 2"),
    ]
    db.close()


def test_interrupted_attempt_state(tmp_path: Path) -> None:
    with Progress(tmp_path / "p.db") as p:
        a = p.start_attempt("ws", True, "course watch")
        assert p.attempts()[0][-1] == "running"
        assert p.attempts()[0][2] is None
        p.finish_attempt(a, "interrupted")
        assert p.attempts()[0][-1] == "interrupted"
        assert p.attempts()[0][2] is not None


def test_states_latest_counted_result_and_ever_passed(tmp_path: Path) -> None:
    with Progress(tmp_path / "p.db") as p:
        a1 = p.start_attempt("ws", True, "course grade 2")
        p.record(a1, *scored(result("ring_all_gather", Status.FAILED)))
        p.record(a1, *scored(result("ring_reduce_scatter", Status.NOT_STARTED)))
        p.finish_attempt(a1)
        a2 = p.start_attempt("ws", True, "course grade 2")
        p.record(a2, *scored(result("ring_all_gather", Status.PASSED)))
        p.record(a2, *scored(result("ring_reduce_scatter", Status.ERROR)))
        p.finish_attempt(a2)
        a3 = p.start_attempt("ws", True, "course grade 2")
        p.record(a3, *scored(result("ring_all_gather", Status.TIMEOUT)))
        p.record(a3, *scored(result("shard_shape", Status.PASSED, lesson=1), points=1))
        p.finish_attempt(a3)

        states = p.states()
    assert set(states) == {(2, "ring_all_gather"), (2, "ring_reduce_scatter"), (1, "shard_shape")}
    ag = states[(2, "ring_all_gather")]
    assert isinstance(ag, ExerciseState)
    assert ag.status == "timeout"  # the latest, even though it passed before
    assert ag.ever_passed is True
    assert ag.attempts == 3
    rs = states[(2, "ring_reduce_scatter")]
    assert rs.status == "error"
    assert rs.ever_passed is False
    assert rs.attempts == 2
    ss = states[(1, "shard_shape")]
    assert (ss.status, ss.ever_passed, ss.attempts) == ("passed", True, 1)
    assert ag.last >= rs.last > 0


def test_uncounted_attempts_do_not_change_states(tmp_path: Path) -> None:
    with Progress(tmp_path / "p.db") as p:
        mine = p.start_attempt("ws", True, "course grade 2")
        p.record(mine, *scored(result("ring_all_gather", Status.FAILED)))
        p.finish_attempt(mine)
        before = p.states()

        sol = p.start_attempt("solutions", False, "course grade 2 --solutions")
        p.record(sol, *scored(result("ring_all_gather", Status.PASSED)))
        p.record(sol, *scored(result("ring_all_reduce", Status.PASSED)))
        p.finish_attempt(sol)

        after = p.states()
        assert after == before
        st = after[(2, "ring_all_gather")]
        assert (st.status, st.ever_passed, st.attempts) == ("failed", False, 1)
        assert (2, "ring_all_reduce") not in after
        assert [row[4] for row in p.attempts()] == [1, 0]


def test_next_hint_cycles_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with Progress(path) as p:
        assert [p.next_hint(2, 3) for _ in range(4)] == [0, 1, 2, 0]
        assert p.next_hint(1, 5) == 0  # lessons count separately
    with Progress(path) as p:
        assert p.next_hint(2, 3) == 1  # the 5th: four were shown before
        assert p.next_hint(1, 5) == 1
        assert p.next_hint(7, 0) == 0  # a lesson without hints
        assert p.next_hint(2, 3) == 2  # and the 6th


def _assert_damaged(path: Path) -> None:
    with pytest.raises(ProgressError) as info:
        Progress(path)
    msg = str(info.value)
    assert "damaged" in msg
    assert f"mv {path} {path}.broken" in msg


def test_random_bytes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    path.write_bytes(random.Random(0).randbytes(8192))
    _assert_damaged(path)


def test_truncated_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with Progress(path) as p:
        a = p.start_attempt("ws", True, "course grade 2")
        for i in range(200):
            p.record(a, *scored(result(f"ex{i}", checks=5)))
    # the last close checkpoints the WAL into the main file
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    size = path.stat().st_size
    assert size > 4 * 4096
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    _assert_damaged(path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    Progress(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(ProgressError) as info:
        Progress(path)
    msg = str(info.value)
    assert "newer" in msg
    assert "99" in msg
    # the refused file is left as it was
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("99",)
    db.close()


SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
CREATE TABLE attempts (id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL,
    source TEXT NOT NULL, counted INTEGER NOT NULL, command TEXT NOT NULL, state TEXT NOT NULL);
CREATE TABLE results (id INTEGER PRIMARY KEY, attempt_id INTEGER NOT NULL REFERENCES attempts(id),
    recorded REAL NOT NULL, lesson INTEGER NOT NULL, exercise TEXT NOT NULL, status TEXT NOT NULL,
    score INTEGER NOT NULL, possible INTEGER NOT NULL, duration REAL NOT NULL, example TEXT);
CREATE TABLE checks (result_id INTEGER NOT NULL REFERENCES results(id), name TEXT NOT NULL,
    passed INTEGER NOT NULL, message TEXT NOT NULL, duration REAL NOT NULL);
CREATE TABLE hints (lesson INTEGER PRIMARY KEY, shown INTEGER NOT NULL);
INSERT INTO attempts VALUES (1, 1.0, 2.0, 'ws', 1, 'course grade 2', 'done');
INSERT INTO results VALUES (1, 1, 1.5, 2, 'ring_all_gather', 'passed', 2, 2, 0.1, NULL);
"""


def test_schema_1_file_is_migrated_and_keeps_its_results(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_1)
    db.close()
    with Progress(path) as p:
        assert p.states()[(2, "ring_all_gather")].status == "passed"
        assert p.versions(1) is None  # graded before versions were recorded
        a = p.start_attempt(
            "ws", True, "course grade 2", {"jax": "0.12.0", "hypothesis": "6.170.17"}
        )
        assert p.versions(a) == {"jax": "0.12.0", "hypothesis": "6.170.17"}
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    db.close()


def test_two_connections_writing_alternately(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with Progress(path) as grade, Progress(path) as watch:
        ga = grade.start_attempt("ws", True, "course grade 2")
        wa = watch.start_attempt("ws", True, "course watch")
        for i in range(5):
            grade.record(ga, *scored(result(f"g{i}", Status.PASSED)))
            watch.record(wa, *scored(result(f"w{i}", Status.FAILED)))
        grade.finish_attempt(ga)
        watch.finish_attempt(wa, "interrupted")
        for p in (grade, watch):
            states = p.states()
            assert len(states) == 10
            assert all(states[(2, f"g{i}")].status == "passed" for i in range(5))
            assert all(states[(2, f"w{i}")].status == "failed" for i in range(5))
            assert [row[-1] for row in p.attempts()] == ["done", "interrupted"]
    with Progress(path) as p:
        assert len(p.states()) == 10


WRITER = textwrap.dedent(
    """
    import sys
    from course.progress import Progress
    from course.scoring import ExerciseScore
    from grader.results import CheckResult, ExerciseResult, Status

    p = Progress(sys.argv[1])
    a = p.start_attempt("ws", True, "writer")
    i = 0
    while True:
        n = i % 5 + 1  # the number of checks, also kept in `example`
        p.record(a, ExerciseResult(
            lesson=1, exercise=f"ex{i}", status=Status.FAILED,
            checks=[CheckResult(f"c{j}", False, "m" * 200) for j in range(n)],
            example=str(n),
        ), ExerciseScore(1, False, False, 0))
        i += 1
    """
)


def test_kill_mid_write_leaves_no_torn_result(tmp_path: Path, root: Path) -> None:
    path = tmp_path / "p.db"
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env)
    try:
        deadline = time.monotonic() + 20
        written = 0
        while written < 300:
            assert proc.poll() is None, "the writer died on its own"
            assert time.monotonic() < deadline, "the writer wrote too little"
            time.sleep(0.02)
            if path.exists():
                try:
                    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
                    written = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                    db.close()
                except sqlite3.OperationalError:
                    written = 0  # schema not yet created
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    with Progress(path) as p:
        assert p.db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = p.db.execute(
            "SELECT r.id, r.example, COUNT(c.result_id) FROM results r "
            "LEFT JOIN checks c ON c.result_id = r.id GROUP BY r.id"
        ).fetchall()
        assert len(rows) >= 300
        torn = [(rid, want, got) for rid, want, got in rows if int(want) != got]
        assert torn == []
        orphans = p.db.execute(
            "SELECT COUNT(*) FROM checks WHERE result_id NOT IN (SELECT id FROM results)"
        ).fetchone()[0]
        assert orphans == 0
        assert p.attempts()[0][-1] == "running"  # never finished: killed
        # still writable after the kill
        a = p.start_attempt("ws", True, "after")
        p.record(a, *scored(result("after", Status.PASSED)))
        assert p.states()[(2, "after")].status == "passed"


def passed_with(check: CheckResult, exercise: str = "ring_all_gather", lesson: int = 2):
    return scored(ExerciseResult(lesson, exercise, Status.PASSED, checks=[check]))


def test_measurements_are_read_from_typed_evidence_never_from_messages(tmp_path: Path) -> None:
    from grader.evidence import BytesExpectation

    with Progress(tmp_path / "p.db") as p:
        mine = p.start_attempt("ws", True, "course grade")
        # a message that mentions bytes, but no figure: not a measurement
        p.record(mine, *passed_with(CheckResult("bytes", True, "1,024 bytes sent per device")))
        # a figure whose message never says "bytes": a measurement
        sent = CheckResult("steps", True, "3 × collective-permute", evidence=[
            BytesExpectation(expected=768, actual=768)])  # fmt: skip
        p.record(mine, *passed_with(sent, "ring_reduce_scatter", lesson=3))
        # a figure of a failed check, or of an exercise that failed: not shown
        off = CheckResult("bytes", False, "too many", evidence=[BytesExpectation(8, 16)])
        p.record(mine, *scored(ExerciseResult(4, "a", Status.FAILED, checks=[off])))
        p.record(mine, *scored(ExerciseResult(5, "b", Status.FAILED, checks=[sent])))
        # someone else's code (--solutions): not the student's figure
        other = p.start_attempt("solutions", False, "course grade --solutions")
        p.record(other, *passed_with(sent, lesson=6))
        assert p.measurements() == {3: "ring_reduce_scatter: 768 bytes per device sent"}
        kept = p.db.execute(
            "SELECT check_name, passed, kind, measured, expected FROM figures ORDER BY rowid"
        ).fetchall()
        assert kept == [("steps", 1, "bytes", 768, 768), ("bytes", 0, "bytes", 16, 8),
                        ("steps", 1, "bytes", 768, 768), ("steps", 1, "bytes", 768, 768)]  # fmt: skip


SCHEMA_2 = (
    SCHEMA_1.replace("'schema_version', '1'", "'schema_version', '2'")
    .replace("state TEXT NOT NULL);", "state TEXT NOT NULL, versions TEXT);")
    .replace("'course grade 2', 'done');", "'course grade 2', 'done', NULL);")
    + "INSERT INTO checks VALUES (1, 'bytes', 1, '1,536 bytes sent per device = the optimum', 0.1);"
)


def test_schema_2_file_is_migrated_to_typed_figures(tmp_path: Path) -> None:
    from grader.evidence import BytesExpectation

    path = tmp_path / "p.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_2)
    db.close()
    with Progress(path, read_only=True) as p:  # a reader leaves it as it is, and still reads it
        assert p.states()[(2, "ring_all_gather")].status == "passed"
        assert p.measurements() == {}
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    db.close()
    with Progress(path) as p:
        assert p.states()[(2, "ring_all_gather")].status == "passed"
        assert p.measurements() == {}  # the old message is not read as a figure
        a = p.start_attempt("ws", True, "course grade 2")
        sent = CheckResult("bytes", True, "m", evidence=[BytesExpectation(1536, 1536)])
        p.record(a, *passed_with(sent))
        assert p.measurements() == {2: "ring_all_gather: 1,536 bytes per device sent"}
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    assert db.execute("SELECT COUNT(*) FROM checks").fetchone() == (2,)  # the old one kept
    db.close()
