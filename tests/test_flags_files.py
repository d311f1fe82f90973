"""Issue 19, flags and files: absurd options are one-line usage errors; a full disk
and a read-only workspace get clear messages and leave the progress file intact.

Each probe runs the real ``course`` command as a subprocess, under a time limit.
A read-only workspace and a full disk are made for real, in a private mount
namespace (``unshare -m``: a read-only bind mount, a tiny tmpfs); where that
cannot be done (no root, no namespaces) those tests are skipped.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import course

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 120  # seconds: every probe here stops long before grading anything


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.mark.parametrize(
    "args, env, says",
    [
        (("--devices", "100000"), {}, "--devices 100000: this host simulates 1 to 64 devices"),
        (("--devices", "0"), {}, "--devices 0: this host simulates 1 to 64"),
        ((), {"COURSE_DEVICES": "99999999"}, "COURSE_DEVICES=99999999: this host simulates 1 to 64"),
        (("--max-examples", "1000000000"), {}, "'--max-examples': 1000000000 is not in the range 0<=x<=100"),
        (("--timeout", "1e-9"), {}, "'--timeout': 1e-09 is not in the range 0.1<=x<=86400.0"),
        (("--timeout", "1e300"), {}, "'--timeout': 1e+300 is not in the range"),
        (("--timeout", "90000"), {}, "'--timeout': 90000.0 is not in the range"),
        (("--example", ""), {}, "'--example': is empty"),
        (("--example", "  "), {}, "'--example': is empty"),
    ],
)  # fmt: skip
def test_an_absurd_option_is_a_one_line_usage_error(home, monkeypatch, args, env, says):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    r = course(home, "grade", "2.ring_all_gather", *args, timeout=LIMIT)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]  # one line
    assert r.stderr.startswith("Error: ") and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not home.exists()  # nothing graded or recorded


@pytest.mark.parametrize("command", ["classroom", "watch"])
def test_the_other_grading_commands_refuse_the_same_values(home, tmp_path, command):
    args = (
        ("classroom", str(tmp_path), "--out", str(tmp_path / "out"))
        if command == "classroom"
        else ("watch", "2")
    )
    r = course(home, *args, "--devices", "65", "--timeout", "1", timeout=LIMIT)  # fmt: skip
    assert r.returncode == 2 and "--devices 65: this host simulates 1 to 64" in r.stderr
    assert not (tmp_path / "out").exists()


def test_boundary_values_are_accepted(home):
    """64 devices, a tenth of a second, a day, 100 examples: past the option checks
    (the run then stops at the unknown exercise, a usage error of its own)."""
    for args in (("--devices", "64"), ("--timeout", "0.1"), ("--timeout", "86400"),
                 ("--max-examples", "100")):  # fmt: skip
        r = course(home, "grade", "2.no_such_exercise", *args, timeout=LIMIT)
        assert "not in the range" not in r.stderr and "simulates" not in r.stderr, r.stderr
        assert "no_such_exercise" in r.stderr


# ------------------------------------------------------------- real mounts


def _in_namespace(script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", "COURSE_PLATFORM": "cpu", "PYTHONPATH": str(ROOT)}
    return subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=LIMIT)  # fmt: skip


def _mounts_work(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    r = _in_namespace(f"mount -t tmpfs -o size=64k tmpfs {probe} && touch {probe}/x")
    return r.returncode == 0


@pytest.fixture
def mounts(tmp_path: Path) -> None:
    if not _mounts_work(tmp_path):
        pytest.skip("needs unshare -m and mount (root, or a user namespace)")


def _course(home: Path, *args: str) -> str:
    return shlex.join([sys.executable, "-m", "course.cli", "--home", str(home), *args])


def _workspace(home: Path) -> None:
    r = course(home, "init", str(home), timeout=LIMIT)
    assert r.returncode == 0, r.stderr
    r = course(home, "hint", "1", timeout=LIMIT)  # the progress file, with one hint counted
    assert r.returncode == 0 and "hint 1 of" in r.stdout, r.stdout + r.stderr


def _hints(db: Path) -> list[tuple]:
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT * FROM hints").fetchall()


def test_a_read_only_workspace_still_answers_and_reset_says_why_not(home, mounts):
    _workspace(home)
    stub = home / "exercises" / "l01_meshes.py"
    stub.write_text(stub.read_text() + "\n# my work\n")
    before = (stub.read_bytes(), _hints(home / "progress.db"))
    ro = f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
    for args, says in [
        (("status",), "Your progress"),
        (("list",), "shard_shape"),
        (("status", "--json"), '"lessons"'),
        (("show", "1"), "Write your code in"),
        (("hint", "1"), "hint 2 of"),  # the next one, shown though it cannot be counted
    ]:
        r = _in_namespace(ro + _course(home, *args))
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        assert says in r.stdout and "Traceback" not in r.stderr, (args, r.stdout + r.stderr)
    assert "Not counted" in r.stdout and "read-only" in r.stdout
    r = _in_namespace(ro + _course(home, "reset", "1", "--yes"))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "cannot reset lesson 1" in r.stderr and "Read-only file system" in r.stderr
    assert (stub.read_bytes(), _hints(home / "progress.db")) == before  # nothing changed
    assert not list(stub.parent.glob("*.bak"))


def _full_disk(home: Path, then: str) -> subprocess.CompletedProcess:
    """``then`` on a 4 MiB tmpfs at ``home`` that holds the workspace and is then
    filled to the last block."""
    saved = home.with_name("saved")
    shutil.copytree(home, saved)
    script = (
        f"mount -t tmpfs -o size=4m tmpfs {home} && cp -a {saved}/. {home}/ && "
        f"(dd if=/dev/zero of={home}/filler bs=4k 2>/dev/null; true) && "
        f"{then}; rc=$?; cp {home}/progress.db* {saved}/ 2>/dev/null; "
        f"ls -a {home}; exit $rc"
    )
    r = _in_namespace(script)
    for f in home.glob("progress.db*"):  # what was left on the full disk, for the caller
        f.unlink()
    for f in saved.glob("progress.db*"):
        shutil.copy(f, home / f.name)
    shutil.rmtree(saved)
    return r


def test_a_full_disk_is_said_and_leaves_the_progress_file_intact(home, mounts):
    _workspace(home)
    before = _hints(home / "progress.db")
    r = _full_disk(home, _course(home, "hint", "1"))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "is full: nothing was recorded" in r.stderr and "damaged" not in r.stderr
    assert _hints(home / "progress.db") == before  # the file reads, as it was
    r = course(home, "hint", "1", timeout=LIMIT)  # and, with room again, is written
    assert r.returncode == 0 and "hint 2 of" in r.stdout, r.stdout + r.stderr


def test_a_full_disk_leaves_no_empty_progress_file(home, mounts):
    _workspace(home)
    (home / "progress.db").unlink()
    r = _full_disk(home, _course(home, "hint", "1"))
    assert r.returncode == 1 and "is full: nothing was recorded" in r.stderr, r.stderr
    assert "progress.db" not in r.stdout  # `ls` of the full disk: no 0-byte file left
    r = course(home, "status", timeout=LIMIT)
    assert r.returncode == 0 and "not written by this course" not in r.stderr, r.stderr


def test_an_empty_progress_file_reads_as_no_progress(home):
    """A 0-byte file (left by an older version on a full disk) is no progress, not a foreign file."""
    r = course(home, "init", str(home), timeout=LIMIT)
    (home / "progress.db").write_bytes(b"")
    for args in (("status",), ("list",), ("status", "--json")):
        r = course(home, *args, timeout=LIMIT)
        assert r.returncode == 0 and "not written by this course" not in r.stderr, r.stderr
