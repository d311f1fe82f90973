"""The fork server of a grade of several lessons (:mod:`grader.sandbox.forks`):
each lesson's process is forked from one that imported jax, in one sandbox for
the submission; what a lesson's code sees and can do there, with real processes."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import pytest

from grader.repo import CODE
from grader.results import Status
from grader.sandbox import forks, jail, worker
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import grade
from tests import reports
from tests.sandboxed import SANDBOX, needs_sandbox
from tests.test_sandbox import DETACH, TRY, _running

needs_forks = pytest.mark.skipif(not forks.wanted(2), reason="no fork server here")

L01 = LessonJob(1, "l01_meshes", ("shard_shape",))
L03 = LessonJob(3, "l03_cost_model", ("matmul_flops",))

LOOK = (
    """
import errno as _errno, json as _json, os as _os, pathlib as _pathlib, signal as _signal
"""
    + TRY
    + """
_seen = {"pid": _os.getpid(), "ppid": _os.getppid(),
         "procs": sorted(int(p) for p in _os.listdir("/proc") if p.isdigit()), "fds": {}}
for _fd in _os.listdir("/proc/self/fd"):
    try:
        _seen["fds"][_fd] = _os.readlink(f"/proc/self/fd/{_fd}")
    except OSError:
        pass
_seen["read_server_memory"] = _try(lambda: open(f"/proc/{_os.getppid()}/mem", "rb").read(1))
_seen["read_server_environ"] = _try(lambda: open(f"/proc/{_os.getppid()}/environ").read())
for _sig in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGKILL):  # at the fork server, if any
    if _os.getpid() != 1:
        _try(lambda: _os.kill(_os.getppid(), _sig))
"""
    + reports.emit("_seen")
)


def _submission(tmp_path: Path, first: str = "") -> str:
    for module in ("l01_meshes", "l03_cost_model"):
        source = (CODE / "solutions" / f"{module}.py").read_text()
        (tmp_path / f"{module}.py").write_text((first if module == "l01_meshes" else "") + source)
    return str(tmp_path)


def test_it_serves_grades_of_several_lessons(monkeypatch):
    linux = os.uname().sysname.startswith("Linux")
    assert forks.wanted(2) == forks.wanted(14) == linux
    assert not forks.wanted(1)  # one lesson: one process, nothing to share
    assert not forks.wanted(14, allowed=False)
    monkeypatch.setenv(forks.SWITCH, "0")  # read by the worker's main, as its Options
    assert not forks.wanted(14, worker.Options.from_environment().fork_server)


@needs_sandbox
@needs_forks
def test_a_lessons_process_is_forked_sees_only_its_sandbox_and_cannot_touch_the_server(tmp_path):
    directory = _submission(tmp_path, LOOK)
    with reports.relayed() as relayed:
        first, then = grade(Request((L01, L03), directory, timeout=120.0, max_examples=2))
    assert first.exercises[0].status == Status.PASSED, first.exercises[0].error
    assert then.exercises[0].status == Status.PASSED, then.exercises[0].error  # the server lived on
    seen = reports.read(relayed.getvalue())
    assert seen["ppid"] == 1 and seen["pid"] != 1  # the fork server is the sandbox's init
    assert seen["procs"][0] == 1 and seen["pid"] in seen["procs"]
    assert len(seen["procs"]) <= 3  # the server, this one and the next lesson's: no worker
    assert seen["read_server_memory"] == seen["read_server_environ"] == "EACCES"
    fds = {int(f): target for f, target in seen["fds"].items()}
    assert fds.pop(0) == "/dev/null"
    fds.pop(1), fds.pop(2)
    assert len(fds) == 2 and all(t.startswith("pipe:") for t in fds.values()), fds


@needs_sandbox
def test_without_the_fork_server_each_lesson_is_started_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv(forks.SWITCH, "0")
    directory = _submission(tmp_path, LOOK)
    with reports.relayed() as relayed:
        first, _ = grade(Request((L01, L03), directory, timeout=120.0, max_examples=2))
    assert first.exercises[0].status == Status.PASSED, first.exercises[0].error
    seen = reports.read(relayed.getvalue())
    assert seen["pid"] == 1 and seen["procs"] == [1]


@needs_forks
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_what_a_lesson_starts_detached_or_not_ends_with_it(tmp_path, monkeypatch, sandbox):
    """Looked at as the first lesson ends, while the grade goes on (the fork server
    is still up). With the sandbox off nothing but the server ends them."""
    from grader.sandbox.protocol import LessonFinished

    if sandbox == "off":
        monkeypatch.setenv(jail.SWITCH, "off")
    elif not jail.on(SANDBOX):
        pytest.skip(f"no sandbox here: {jail.state(SANDBOX)}")
    token = f"forked-stray-{secrets.token_hex(6)}"
    directory = _submission(tmp_path, DETACH.replace("TOKEN", token))
    left: list[list[int]] = []

    def on_event(event) -> None:
        if isinstance(event, LessonFinished) and event.lesson == 1:
            until = time.monotonic() + 20
            while _running(token) and time.monotonic() < until:
                time.sleep(0.05)
            left.append(_running(token))

    try:
        first, then = grade(Request((L01, L03), directory, timeout=120.0, max_examples=2), on_event)
        assert first.exercises[0].status == Status.PASSED, first.exercises[0].error
        assert then.exercises[0].status == Status.PASSED, then.exercises[0].error
        if sandbox == "off":  # on: they wrote in the sandbox's /tmp (the module waits for it)
            assert all((Path("/tmp") / f"{token}-{how}").exists() for how in ("child", "detached"))
        assert left == [[]]
    finally:
        for pid in _running(token):
            os.kill(pid, 9)
        for how in ("child", "detached"):
            (Path("/tmp") / f"{token}-{how}").unlink(missing_ok=True)


@needs_forks
def test_a_forked_process_that_exits_is_the_students_error_and_the_next_lesson_is_graded(tmp_path):
    ends = "import os as _os\n\ndef shard_shape(*args):\n    _os._exit(3)\n"
    directory = _submission(tmp_path)
    with open(tmp_path / "l01_meshes.py", "a") as f:
        f.write("\n" + ends)
    first, then = grade(Request((L01, L03), directory, timeout=120.0, max_examples=2))
    (exercise,) = first.exercises
    assert exercise.status == Status.ERROR and "exited with code 3" in exercise.error
    assert then.exercises[0].status == Status.PASSED, then.exercises[0].error


@needs_forks
def test_a_server_that_ends_leaves_the_lessons_after_it_to_fresh_processes(tmp_path, monkeypatch):
    """The worker's side: a fork server gone is never used again, and its forked
    process says why it never ran the student's code."""
    from grader.sandbox.processes import setup_failure
    from grader.sandbox.spares import Spares

    spares = Spares()
    spares.fork_from(str(tmp_path))
    server = spares.forks
    assert server is not None and server.alive
    proc, out, fd = spares.start(str(tmp_path))
    assert isinstance(proc, forks.Forked)
    assert json.loads(os.read(fd, 4096).split(b"\n")[0])["ready"]  # question 0: jax imported
    server.proc.kill()
    assert proc.wait(timeout=30) == -9 and "fork server" in (setup_failure(proc) or "")
    until = time.monotonic() + 30
    while server.alive and time.monotonic() < until:
        time.sleep(0.05)
    assert not server.alive
    fresh, out2, fd2 = spares.start(str(tmp_path))
    assert not isinstance(fresh, forks.Forked)  # started afresh
    for f, d in ((out, fd), (out2, fd2)):
        f.close()
        os.close(d)
    fresh.kill()
    fresh.wait(timeout=30)
    spares.close()
