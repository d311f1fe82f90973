"""The OS sandbox of the student's process (issue 19): what code in a graded
module can see and do, from inside, with real processes; and grading with the
sandbox off."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

import pytest

from grader.config import Sandbox
from grader.repo import CODE
from grader.results import Status
from grader.sandbox import backends, jail
from grader.sandbox.spares import Ahead
from tests import reports
from tests.sandboxed import SANDBOX, needs_sandbox
from tests.test_cli import course

TRY = """
def _try(what):
    try:
        what()
        return "ok"
    except OSError as exc:
        return _errno.errorcode.get(exc.errno, type(exc).__name__)
"""
"""What a probe does (``what``, a call) and how it ended: ``ok`` or the errno's name."""

PROBE = (
    """
import errno as _errno, json as _json, os as _os, pathlib as _pathlib, socket as _socket
_here = _pathlib.Path(__file__).parent
_seen = {"pid": _os.getpid(), "ppid": _os.getppid(),
         "procs": sorted(int(p) for p in _os.listdir("/proc") if p.isdigit())}
"""
    + TRY
    + """
for _name, _pid in (("worker", WORKER), ("its_parent", PARENT)):
    _seen["kill_" + _name] = _try(lambda: _os.kill(_pid, 0))
    _seen["read_" + _name] = _try(lambda: open(f"/proc/{_pid}/cmdline").read())
_seen["fds"] = {}
for _fd in _os.listdir("/proc/self/fd"):
    try:
        _seen["fds"][_fd] = _os.readlink(f"/proc/self/fd/{_fd}")
    except OSError:
        pass  # the listing's own, closed since
_seen["connect"] = _try(lambda: _socket.create_connection(("127.0.0.1", PORT), timeout=10).close())
_seen["writes"] = {t: _try(lambda: open(t, "w").write("escaped")) for t in TARGETS}
_seen["own_back"] = _try(lambda: open(TARGETS[-1]).read())
"""
    + reports.emit("_seen")
)


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """One graded lesson-1 module that looks around at import, then passes."""
    base = tmp_path_factory.mktemp("probe")
    exercise = base / "exercises"
    exercise.mkdir()
    token = secrets.token_hex(6)
    targets = {
        "exercise_parent": base / f"escape-{token}",
        "repo_grader": CODE / "grader" / f"escape-{token}",
        "home": Path.home() / f"escape-{token}",
        "tmp": Path("/tmp") / f"escape-{token}",
        "own": exercise / f"own-{token}",
    }
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    # A process up the worker's chain. Where the test process was orphaned (started under
    # nohup, its parent gone), its parent is pid 1, which inside the probe's namespace is
    # the probe itself: a process of the test's own stands in for it then.
    stand_in = subprocess.Popen(["sleep", "600"]) if os.getppid() == 1 else None
    source = (CODE / "solutions" / "l01_meshes.py").read_text()
    probe = (
        PROBE.replace("WORKER", str(os.getpid()))
        .replace("PARENT", str(stand_in.pid if stand_in else os.getppid()))
        .replace("PORT", str(listener.getsockname()[1]))
        .replace("TARGETS", repr([str(t) for t in targets.values()]))
    )
    (exercise / "l01_meshes.py").write_text(probe + source)
    try:
        with reports.relayed() as relayed:
            result = backends.grade_lesson(1, "l01_meshes", exercise, only=["shard_shape"],
                                         timeout=120, isolate=True)  # fmt: skip
        try:
            listener.accept()
            reached = True
        except BlockingIOError:
            reached = False
        escaped = {name: t.exists() for name, t in targets.items()}
        seen = reports.read(relayed.getvalue())
    finally:
        listener.close()
        if stand_in is not None:
            stand_in.kill()
            stand_in.wait()
        for name, t in targets.items():
            if name != "own" and t.exists():
                t.unlink()
    return result, seen, reached, escaped


@needs_sandbox
def test_the_probe_was_graded_in_the_sandbox_and_passed(probed):
    result, *_ = probed
    assert result.sandbox == "on"
    assert result.exercises[0].status == Status.PASSED, result.exercises[0].error


@needs_sandbox
def test_it_sees_only_its_own_processes_and_cannot_signal_the_worker(probed):
    _, seen, *_ = probed
    assert seen["pid"] == 1 and seen["ppid"] == 0  # the first process of a namespace of its own
    assert seen["procs"] == [1]
    assert seen["kill_worker"] == seen["kill_its_parent"] == "ESRCH"
    assert seen["read_worker"] == seen["read_its_parent"] == "ENOENT"


@needs_sandbox
def test_it_inherits_no_descriptor_but_its_two_channels(probed):
    """Issue 19.2: nothing of the worker's (its stdin with the request, the events
    pipe) is open in the student's process: stdin is /dev/null, stdout and stderr
    are relayed, and the only others are the two pipes of its questions."""
    _, seen, *_ = probed
    fds = {int(f): target for f, target in seen["fds"].items()}
    assert fds.pop(0) == "/dev/null"
    fds.pop(1), fds.pop(2)
    assert len(fds) == 2 and all(t.startswith("pipe:") for t in fds.values()), fds


@needs_sandbox
def test_it_has_no_network(probed):
    _, seen, reached, _ = probed
    assert seen["connect"] == "ENETUNREACH"
    assert not reached


@needs_sandbox
def test_it_writes_only_to_its_scratch_and_its_own_folder(probed):
    _, seen, _, escaped = probed
    writes = dict(zip(["exercise_parent", "repo_grader", "home", "tmp", "own"],
                      seen["writes"].values(), strict=True))  # fmt: skip
    assert writes["repo_grader"] == writes["home"] == "EROFS"
    assert writes["own"] == "EROFS" and seen["own_back"] == "ENOENT"  # its folder is read-only
    assert writes["tmp"] == writes["exercise_parent"] == "ok"  # in its private /tmp ...
    assert escaped == {
        "exercise_parent": False,
        "repo_grader": False,
        "home": False,
        "tmp": False,
        "own": False,
    }  # fmt: skip ... which is not the real one


DETACH = """
import pathlib as _pathlib, subprocess as _sp, sys as _sys, time as _time
_here = _pathlib.Path("/tmp")  # its scratch: its folder is read-only in the sandbox
_code = "import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text('up'); time.sleep(600)"
for _how in ("TOKEN-child", "TOKEN-detached"):
    _sp.Popen([_sys.executable, "-c", _code, str(_here / _how), "TOKEN"],
              start_new_session=_how == "detached", stdin=_sp.DEVNULL, stdout=_sp.DEVNULL,
              stderr=_sp.DEVNULL)
_until = _time.monotonic() + 60
while not ((_here / "TOKEN-child").exists() and (_here / "TOKEN-detached").exists()):
    if _time.monotonic() > _until:
        raise RuntimeError("the processes did not start")
    _time.sleep(0.05)
"""


def _running(token: str) -> list[int]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and token.encode() in (p / "cmdline").read_bytes():
                found.append(int(p.name))
        except OSError:
            continue
    return found


@needs_sandbox
def test_what_it_starts_detached_or_not_ends_with_the_grading(tmp_path):
    token = f"sandbox-stray-{secrets.token_hex(6)}"
    source = (CODE / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(DETACH.replace("TOKEN", token) + source)
    try:
        result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape"],
                                     timeout=120, isolate=True)  # fmt: skip
        # passed: both wrote their file (the module waits for it), in the sandbox's /tmp
        assert result.exercises[0].status == Status.PASSED, result.exercises[0].error
        until = time.monotonic() + 30
        while _running(token) and time.monotonic() < until:
            time.sleep(0.1)
        assert _running(token) == []
    finally:
        for pid in _running(token):
            os.kill(pid, 9)


@needs_sandbox
def test_an_allocation_over_the_memory_limit_fails_at_once_and_says_so(tmp_path):
    (tmp_path / "l01_meshes.py").write_text(
        "import numpy as np\n\nACTIVATIONS = np.ones((3 * 2**30,), np.uint8)\n"
    )
    started = time.monotonic()
    spares = Ahead(Sandbox(memory="1G"))  # as the worker's Options hand it down
    result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape"], timeout=120,
                                 backend=backends.isolated(spares=spares))  # fmt: skip
    er = result.exercises[0]
    assert er.status == Status.ERROR
    assert "MemoryError" in er.error and "3.00 GiB" in er.error, er.error
    assert "sandbox lets the process your code runs in allocate at most 1.0 GiB" in er.error
    assert time.monotonic() - started < 100  # refused, not swapped


def test_the_memory_limit_is_read_in_plain_words():
    given = Sandbox.from_environment({jail.MEMORY_VARIABLE: "512M", "OTHER": "x"})
    assert given == Sandbox(memory="512M")
    assert jail.memory_limit(given.memory) == 512 * jail.MiB
    assert jail.memory_limit("") == jail.MEMORY  # unset: the default
    with pytest.raises(ValueError, match="say how much memory"):
        jail.memory_limit("lots")
    assert jail.state(Sandbox(memory="lots")).startswith("off: ")  # said, not a crash


@pytest.fixture
def sandbox_off(monkeypatch):
    monkeypatch.setenv(jail.SWITCH, "off")


def test_with_the_sandbox_off_grading_still_works_and_says_so(tmp_path, sandbox_off):
    (tmp_path / "l01_meshes.py").write_text((CODE / "solutions" / "l01_meshes.py").read_text())
    off = Sandbox.from_environment(os.environ)  # the fixture's COURSE_SANDBOX=off
    result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape"], timeout=120,
                                 backend=backends.isolated(spares=Ahead(off)))  # fmt: skip
    assert result.exercises[0].status == Status.PASSED
    assert result.sandbox == f"off: turned off ({jail.SWITCH}=off)"
    r = course(tmp_path / "home", "grade", "1.shard_shape", "--solutions", "--json")
    assert r.returncode == 0, r.stderr
    (lesson,) = json.loads(r.stdout)["lessons"]
    assert lesson["sandbox"].startswith("off: ")
    r = course(tmp_path / "home", "grade", "1.shard_shape", "--solutions")
    assert r.returncode == 0, r.stderr
    assert "sandbox: off" in " ".join(r.stdout.split())


def test_in_process_grading_says_the_sandbox_is_off(root):
    result = backends.grade_lesson(1, "l01_meshes", root / "solutions", only=["shard_shape"])
    assert result.sandbox.startswith("off: ") and "grading process" in result.sandbox


def _one_submission(tmp_path: Path) -> Path:
    sub = tmp_path / "subs" / "alice"
    sub.mkdir(parents=True)
    (sub / "l01_meshes.py").write_text((CODE / "solutions" / "l01_meshes.py").read_text())
    return tmp_path / "subs"


def test_classroom_require_sandbox_refuses_without_one(tmp_path, sandbox_off):
    subs = _one_submission(tmp_path)
    r = course(tmp_path / "home", "classroom", str(subs), "--out", str(tmp_path / "out"),
               "--lesson", "1", "--require-sandbox", timeout=60)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert "--require-sandbox" in r.stderr and f"{jail.SWITCH}=off" in r.stderr
    assert not (tmp_path / "out" / "summary.csv").exists()  # nothing graded


@needs_sandbox
def test_classroom_require_sandbox_grades_in_one(tmp_path):
    subs = _one_submission(tmp_path)
    r = course(tmp_path / "home", "classroom", str(subs), "--out", str(tmp_path / "out"),
               "--lesson", "1", "--require-sandbox")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sandbox: on" in r.stdout
    _says_in_every_output(tmp_path / "out", "on")
    results = json.loads((tmp_path / "out" / "alice" / "results.json").read_text())
    assert results["score"] == results["max_score"]


def _says_in_every_output(out: Path, sandbox: str) -> None:
    """``results.json``, ``summary.csv`` and ``junit.xml`` all say ``sandbox``."""
    import csv
    import xml.etree.ElementTree as ET

    results = json.loads((out / "alice" / "results.json").read_text())
    assert f"sandbox: {sandbox} · seed " in results["output"]  # the class's fresh seed after it
    with open(out / "summary.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["sandbox"] == sandbox
    props = ET.parse(out / "alice" / "junit.xml").getroot().iter("property")
    assert [(p.get("name"), p.get("value")) for p in props] == [("sandbox", sandbox)]


def test_classroom_without_the_sandbox_refuses_where_the_references_are(tmp_path, sandbox_off):
    """In a checkout (its solutions/ and .git readable) with no sandbox, a class is not
    graded: a submission could read a reference and hand it back. What a reference-free
    installation writes without the sandbox is held by tests/test_autograder.py."""
    subs = _one_submission(tmp_path)
    r = course(tmp_path / "home", "classroom", str(subs), "--out", str(tmp_path / "out"),
               "--lesson", "1")  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert f"no sandbox here (off: turned off ({jail.SWITCH}=off))" in said
    assert "holds the reference solutions" in said and "course autograder" in said
    assert not (tmp_path / "out" / "alice").exists()


@needs_sandbox
def test_the_probe_says_why_not_where_the_sandbox_cannot_be_made():
    """Where the kernel refuses a user namespace (here: inside one whose
    ``user.max_user_namespaces`` is 0), the sandbox is off, with the reason."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no util-linux unshare here")
    check = "from grader.config import Sandbox; from grader.sandbox import jail; print(jail.state(Sandbox()))"
    script = f"echo 0 > /proc/sys/user/max_user_namespaces && exec {sys.executable} -c '{check}'"
    r = subprocess.run(["unshare", "--user", "--map-root-user", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60, cwd=CODE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "off: no user namespaces here (unshare): No space left on device"


def test_a_program_the_sandbox_cannot_run_is_named(tmp_path):
    """An executable the sandbox cannot run (here: none there; a Python reached through
    a link into a folder it hides looks the same) is named in what the sandbox says:
    ``execvp``'s own message names no file."""
    import subprocess

    if not jail.on(Sandbox()):
        pytest.skip(f"no sandbox here: {jail.state(Sandbox())}")
    missing = str(tmp_path / "no-such-python")
    status_r, status_w = os.pipe()
    command = jail.wrap([missing, "-c", "pass"], sandbox=Sandbox(), readable=[str(tmp_path)],
                        writable=[], status=status_w)  # fmt: skip
    try:
        done = subprocess.run(command, pass_fds=(status_w,), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    finally:
        os.close(status_w)
    said = jail.setup_failure(status_r)
    assert done.returncode != 0
    assert said == f"could not run {missing} in the sandbox: No such file or directory", said


@pytest.fixture
def outside_tmp():
    """A folder outside ``/tmp`` (the sandbox covers ``/tmp`` with a private one,
    so only a folder elsewhere shows what it hides besides): in the home folder."""
    import shutil
    import tempfile

    try:
        folder = Path(tempfile.mkdtemp(prefix=".course-sandbox-test-", dir=Path.home()))
    except OSError as exc:
        pytest.skip(f"no folder outside /tmp to write in: {exc}")
    if str(folder.resolve()).startswith("/tmp/"):
        shutil.rmtree(folder)
        pytest.skip("the home folder is under /tmp")
    try:
        yield folder.resolve()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


LOOK = """
import errno as _errno, importlib.util as _util, json as _json, os as _os, pathlib as _pathlib
_here = _pathlib.Path(__file__).parent

def _what(do):
    try:
        got = do()
        return sorted(got) if isinstance(got, list) else "ok"
    except OSError as exc:
        return _errno.errorcode.get(exc.errno, type(exc).__name__)

def _load(path):
    spec = _util.spec_from_file_location("_theirs", path)
    module = _util.module_from_spec(spec)
    spec.loader.exec_module(module)

_seen = {
    "home": _what(lambda: _os.listdir(HOME)),
    "progress": _what(lambda: open(HOME + "/progress.db", "rb").read()),
    "cache": _what(lambda: _os.listdir(HOME + "/.cache/jax")),
    "plant": _what(lambda: open(HOME + "/.cache/jax/planted", "w").write("x")),
    "solutions": _what(lambda: _os.listdir(SOLUTIONS)),
    "solution": _what(lambda: open(SOLUTIONS + "/l01_meshes.py").read()),
    "import_solution": _what(lambda: _load(SOLUTIONS + "/l01_meshes.py")),
    "grader": _what(lambda: open(GRADER + "/engine.py").read()),
}
""" + reports.emit("_seen")


@needs_sandbox
def test_the_workspace_progress_cache_and_solutions_are_hidden(outside_tmp):
    """Issue 19 §2, §3: ``course grade`` in a workspace outside /tmp; the graded
    module looks at the workspace (progress file, compile cache) and at the
    course's solutions: it sees none of them, only its own folder, while what it
    needs (the grader's code) stays readable and grading passes."""
    home = outside_tmp / "home"
    (home / "exercises").mkdir(parents=True)
    solution = (CODE / "solutions" / "l01_meshes.py").read_text()
    r = course(home, "grade", "1.shard_shape")  # the workspace and its progress made
    assert (home / "progress.db").is_file(), r.stdout + r.stderr
    (home / ".cache" / "jax").mkdir(parents=True, exist_ok=True)  # as once something compiled
    (home / ".cache" / "jax" / "an-entry").write_bytes(b"compiled")
    probe = (
        LOOK.replace("HOME", repr(str(home)))
        .replace("SOLUTIONS", repr(str(CODE / "solutions")))
        .replace("GRADER", repr(str(CODE / "grader")))
    )
    (home / "exercises" / "l01_meshes.py").write_text(probe + solution)
    r = course(home, "grade", "1.shard_shape", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    (lesson,) = json.loads(r.stdout)["lessons"]
    assert lesson["sandbox"] == "on"
    assert [e["status"] for e in lesson["exercises"]] == ["passed"]
    seen = reports.read(r.stderr)
    assert seen["home"] == ["exercises"]  # its own folder, bound back into an empty one
    assert seen["progress"] == seen["cache"] == "ENOENT"
    assert seen["plant"] in ("ENOENT", "EROFS")
    assert seen["solutions"] == [] and seen["solution"] == seen["import_solution"] == "ENOENT"
    assert seen["grader"] == "ok"
    assert not (home / ".cache" / "jax" / "planted").exists()
    assert len(list((CODE / "solutions").glob("l0*.py"))) > 1  # they are there, outside


@needs_sandbox
def test_a_sandbox_that_cannot_be_made_is_the_graders_fault_not_the_students(tmp_path, monkeypatch):
    """Issue 19 §4: a sandbox that fails to set up (here: a scratch size the
    kernel refuses, once the probe said "on") is said by the sandbox itself on a
    pipe of its own: a grader fault naming why, never the student's error."""
    assert jail.state(SANDBOX) == "on"
    monkeypatch.setattr(jail, "SCRATCH", "lots")
    (tmp_path / "l01_meshes.py").write_text((CODE / "solutions" / "l01_meshes.py").read_text())
    started = time.monotonic()
    result = backends.grade_lesson(1, "l01_meshes", tmp_path, only=["shard_shape", "place"],
                                 timeout=120, isolate=True)  # fmt: skip
    assert time.monotonic() - started < 100
    for er in result.exercises:
        assert er.status == Status.FAULT, er
        assert er.error.startswith(
            "internal grader error: the sandbox for the process that runs your code could not "
            "be made: cannot mount tmpfs on /tmp: Invalid argument"
        ), er.error
        assert "not your code's fault" in er.error
