"""The worker ``course grade`` starts as it starts (issue 22 §2,
:func:`grader.sandbox.launch.early`): taken by the command's first one-off grade
when the environment is unchanged, stopped otherwise and at exit, never started
for another command or for ``--help``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.results import Status
from grader.sandbox import spares as launch
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import grade

L01 = LessonJob(1, "l01_meshes", ("shard_shape",))


@pytest.fixture
def started():
    """The early workers a test starts, stopped after it (as at exit) unless taken."""
    earlies: list[launch.Early] = []
    yield earlies
    for found in earlies:
        found.drop()


@pytest.mark.parametrize(
    "argv",
    [
        ["course", "status"],
        ["course"],
        ["course", "grade", "--help"],
        ["course", "grade", "2", "-h"],
        ["course", "watch", "2"],
    ],  # fmt: skip
)
def test_no_worker_is_started_early_but_for_a_grade(argv):
    assert launch.early(argv) is None


def test_a_grade_takes_the_worker_started_early(root, started):
    found = launch.early(["course", "grade", "1"])
    started.append(found)
    assert found is not None and found.proc.poll() is None  # waiting for its request
    request = Request((L01,), str(root / "solutions"), timeout=60.0, max_examples=2)
    (result,) = grade(request, early=found)
    assert [e.status for e in result.exercises] == [Status.PASSED]
    assert found.taken and found.proc.poll() is not None  # it graded, and is gone
    assert found.take() is None  # once only


def test_a_changed_environment_stops_the_early_worker_and_starts_another(root, monkeypatch,
                                                                         started):  # fmt: skip
    found = launch.early(["course", "grade", "1"])
    started.append(found)
    monkeypatch.setenv("COURSE_TEST_CHANGED", "1")  # a worker cannot take on a new environment
    assert found.take() is None
    assert found.proc.wait(timeout=10) != 0  # stopped
    again = launch.early(["course", "grade", "1"])
    started.append(again)
    (result,) = grade(Request((L01,), str(root / "solutions"), timeout=60.0, max_examples=2),
                      early=again)  # fmt: skip
    assert [e.status for e in result.exercises] == [Status.PASSED]
    assert again.taken


def test_an_early_worker_nothing_took_is_stopped_at_exit(root):
    """``course grade 99`` (a usage error) exits without grading: its early worker
    is gone with it."""
    code = (
        "import sys; from grader.sandbox import spares as launch;"
        "print(launch.early(['course', 'grade', '99']).proc.pid, flush=True)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
    pid = int(done.stdout.split()[0])
    assert done.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped at exit, not left behind


def test_course_grade_with_its_early_worker_passes_and_leaves_none(root, tmp_path):
    env = {**os.environ, "COURSE_HOME": str(tmp_path), "COURSE_PLATFORM": "cpu"}
    done = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", "1.shard_shape", "--solutions"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shard_shape" in done.stdout
