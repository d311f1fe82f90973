"""The warm loop (issue 22 §1): one grading worker kept between grades.

Each grade still runs the student's code in a fresh student's process, with an
events key and a data salt of its own; a hang costs only that grade; the
student's process holds none of the worker's channels.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import replace

import pytest

from grader.results import Status
from grader.sandbox import backends, jail
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import Worker, grade
from tests import reports
from tests.sandboxed import SANDBOX

L01 = LessonJob(1, "l01_meshes", ("shard_shape", "place"))

SPY = """
import builtins as _b, json as _j, os as _o
from pathlib import Path as _P

def _fds():
    out = {}
    for fd in _o.listdir("/proc/self/fd"):
        try:
            out[fd] = _o.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return out

_import = {"reused": hasattr(_b, "_course_seen"), "fds": _fds()}
_b._course_seen = True
""" + reports.emit("_import")


def _submission(root, tmp_path, extra: str = "") -> str:
    text = (root / "solutions" / "l01_meshes.py").read_text()
    (tmp_path / "l01_meshes.py").write_text(text + "\n" + SPY + extra)
    return str(tmp_path)


def _imports(relayed: reports.Kept) -> list[dict]:
    """What each import of the spy reported (on its stdout: its folder is read-only)."""
    return [r for r in relayed.reports() if "reused" in r]


def _pipe(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


sandboxed = pytest.mark.skipif(not jail.on(SANDBOX), reason=f"sandbox {jail.state(SANDBOX)}")


@sandboxed
def test_two_grades_reuse_the_worker_each_in_a_fresh_students_process(root, tmp_path):
    request = Request((L01,), _submission(root, tmp_path), timeout=60.0, max_examples=2)
    with reports.relayed() as relayed, Worker() as worker:
        (first,) = grade(request, worker=worker)
        pid = worker.pid
        held = {_pipe(worker.live.events), _pipe(worker.live.proc.stdin.fileno())}
        (second,) = grade(request, worker=worker)
        assert worker.pid == pid is not None and worker.started == 1
        assert all(e.passed for r in (first, second) for e in r.exercises)
    imports = _imports(relayed)
    assert len(imports) == 2 and not any(i["reused"] for i in imports)  # a fresh process each
    # the student's process holds neither the events channel nor the request pipe (the key)
    for i in imports:
        assert held.isdisjoint(i["fds"].values()), (held, i["fds"])
    assert worker.pid is None  # closed


@sandboxed
def test_a_hang_costs_that_grade_only_and_the_next_is_right(root, tmp_path):
    solution = (root / "solutions" / "l02_collectives.py").read_text()
    hang = """
def ring_reduce_scatter(x, axis_name):  # a compiled loop that never ends: the worker is killed
    n = lax.axis_size(axis_name)
    c = x.shape[0] // n
    return lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] * 1, s[1] + 1), (0, x[:c]))[1]
"""
    module = tmp_path / "l02_collectives.py"
    module.write_text(solution + hang)
    job = LessonJob(2, "l02_collectives", ("ring_reduce_scatter", "ring_all_gather"))
    request = Request((job,), str(tmp_path), timeout=10.0, max_examples=0)  # room at load
    with Worker() as worker:
        (stuck,) = grade(request, grace=1.0, worker=worker)
        scatter, gather = stuck.exercises
        assert scatter.status == Status.TIMEOUT and "stopped it" in scatter.error
        assert gather.status == Status.PASSED  # a fresh worker graded the rest, and is kept
        assert worker.started == 2 and worker.pid is not None, f"not kept: {worker.unkept}"
        kept = worker.pid
        module.write_text(solution)  # the student fixes it and saves
        (fixed,) = grade(replace(request, timeout=60.0), worker=worker)
        assert all(e.passed for e in fixed.exercises), [e.error for e in fixed.exercises]
        assert (worker.started, worker.pid) == (2, kept), f"not kept: {worker.unkept}"


def test_a_process_on_its_way_out_does_not_cost_the_kept_worker_but_one_that_stays_does():
    """After a grade, a process the worker started that is found outside it (our
    child: adopted) counts only if it is still there after the grace: one that its
    parent had just killed ends on its own meanwhile (seen under load, when the
    worker was then replaced for nothing); one that stays is killed and counts."""
    import subprocess
    import sys

    from grader.sandbox import runner

    marker = "0123abcd"
    env = {**os.environ, runner.MARK: marker}
    leaving = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"], env=env)
    assert not runner.outlived(marker, grace=30.0)
    assert leaving.wait(timeout=5) == 0  # it ended by itself, not killed
    staying = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        start = time.monotonic()
        assert runner.outlived(marker, grace=0.5)
        assert time.monotonic() - start < 20
        assert staying.poll() is not None, "the process that stayed was not stopped"
    finally:
        if staying.poll() is None:
            staying.kill()


def test_each_request_to_a_serving_worker_gets_a_fresh_salt(monkeypatch):
    """What the worker's loop calls per request (``worker.grade`` with the state it
    keeps) draws the data salt anew each time; the backends get it, nothing else."""
    from grader import engine
    from grader.results import LessonResult
    from grader.sandbox import isolation, spares, worker

    salts: list[int] = []

    class Recording:
        def __init__(self, directory, module, *, salt, spares=None, programs=None, ahead=True):
            salts.append(salt)

    def fake_grade_lesson(lesson, module, directory, *, backend, **kwargs):
        backend(directory, module)
        return LessonResult(lesson, str(directory), (), "", 0, 0.0, "on")

    monkeypatch.setattr(isolation, "Isolated", Recording)
    monkeypatch.setattr(engine, "grade_lesson", fake_grade_lesson)
    monkeypatch.setattr(spares.Spares, "prestart", lambda self, *a, **k: None)
    for name in ("COURSE_DEVICES", "COURSE_PLATFORM", "XLA_FLAGS"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.setenv("COURSE_PLATFORM", "cpu")
    state = worker.Warm()
    request = Request((L01,), "/nowhere", timeout=5.0)
    for _ in range(3):
        worker.grade(request, lambda event: None, state)
    assert len(salts) == 3 and len(set(salts)) == 3 and all(s & 1 for s in salts)


def _workers_of(pid: int) -> set[int]:
    """The grading workers ``pid`` started (its children running grader.sandbox.worker)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and b"grader.sandbox.worker" in argv:
            found.add(int(entry))
    return found


@sandboxed
def test_course_watch_grades_two_saves_with_one_worker(root, tmp_path):
    import subprocess
    import sys
    import threading
    import time

    from tests.test_cli import _done_attempts, _wait_for, course

    def _attempts(db) -> int:
        try:
            return _done_attempts(db)
        except sqlite3.OperationalError:  # not made yet
            return 0

    home = tmp_path / "home"
    course(home, "status")  # sets up the workspace
    target = home / "exercises" / "l01_meshes.py"
    solution = (root / "solutions" / "l01_meshes.py").read_text()
    env = {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "watch", "1"], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
    seen: list[set[int]] = []
    try:
        for attempt, text in enumerate([None, solution, solution + "\n# saved again\n"]):
            if text is not None:
                staged = target.with_suffix(".tmp")
                staged.write_text(text)
                os.replace(staged, target)  # one save, as editors do it
            _wait_for(lambda n=attempt: _attempts(home / "progress.db") >= n + 1)
            _wait_for(lambda n=attempt: sum("Score" in line for line in lines) >= n + 1)
            seen.append(_workers_of(proc.pid))
            time.sleep(0.5)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=30)
    out = "".join(lines)
    assert proc.returncode == 0
    assert len(seen[0]) == 1 and seen[0] == seen[1] == seen[2], seen  # one worker, kept
    assert "l01_meshes.py changed: _axes, shard_shape, device_slices +2 more" in out
    assert "l01_meshes.py changed: outside any function (lines" in out  # the comment at the end
    assert not _workers_of(proc.pid)  # gone with the watch


def test_what_changed_names_the_functions_and_lines():
    import time

    from course.commands.watch import _what_changed

    before = b"import jax\n\ndef a(x):\n    return x\n\n\ndef b(x):\n    return x\n"
    after = b"import jax\n\ndef a(x):\n    return x\n\n\ndef b(x):\n    return 2 * x\n"
    when = time.struct_time((2026, 1, 2, 12, 3, 41, 0, 2, 0))
    assert _what_changed("m.py", before, after, when) == "12:03:41  m.py changed: b (line 8)"
    both = after.replace(b"def a(x):\n    return x", b"def a(x):\n    y = x\n    return y")
    assert _what_changed("m.py", before, both, when) == (
        "12:03:41  m.py changed: a, b (lines 4–5, 9)"
    )
    assert _what_changed("m.py", before, before, when) == "12:03:41  m.py saved (no line changed)"
    assert "is gone" in _what_changed("m.py", before, None, when)


def test_without_the_sandbox_a_worker_is_replaced_after_each_grade_before_the_next(
    root, tmp_path, monkeypatch
):
    """Sandbox off: the student's process could signal the worker, so the worker
    that graded is never kept; a fresh one is started as the grade ends (before
    any more of the student's code runs) and grades the next save."""
    monkeypatch.setenv(jail.SWITCH, "off")  # the worker decides, from its environment
    request = Request((L01,), _submission(root, tmp_path), timeout=60.0, max_examples=0)
    with Worker() as worker:
        (first,) = grade(request, worker=worker)
        assert first.sandbox.startswith("off") and all(e.passed for e in first.exercises)
        assert worker.started == 2 and worker.pid is not None  # the replacement, started ahead
        ahead = worker.pid
        (second,) = grade(request, worker=worker)
        assert all(e.passed for e in second.exercises)
        assert worker.started == 3 and worker.pid not in (None, ahead)  # it graded, was replaced


def test_a_regrade_of_unchanged_code_reads_each_compiled_program_once(root, tmp_path, monkeypatch):
    """A serving worker's programs store (:class:`grader.sandbox.isolation.Programs`)
    keeps what the compiled HLO and the memory analysis said, by the inputs the
    program was lowered for: a re-grade of the same code reads none again and says
    the same; changed code is read anew, and its mistake is still named."""
    from grader.measure import hlo
    from grader.sandbox import isolation

    read: list[int] = []
    summarize = hlo.summarize

    def counting(*args, **kwargs):
        read.append(1)
        return summarize(*args, **kwargs)

    monkeypatch.setattr(hlo, "summarize", counting)
    programs = isolation.Programs()
    source = (root / "solutions" / "l02_collectives.py").read_text()
    module = tmp_path / "l02_collectives.py"

    def graded():
        read.clear()
        (er,) = backends.grade_lesson(
            2, "l02_collectives", tmp_path, only=["ring_all_gather"], timeout=60,
            backend=lambda d, m: isolation.Isolated(d, m, salt=7, programs=programs),
        ).exercises  # fmt: skip
        return er, len(read)

    module.write_text(source)
    first, reads_first = graded()
    again, reads_again = graded()
    assert first.passed and again.passed
    assert reads_first == first.examples_run and reads_again == 0
    assert [c.message for c in again.checks] == [c.message for c in first.checks]
    module.write_text(source + "\ndef ring_all_gather(x, axis_name):\n"
                      "    return lax.all_gather(x, axis_name, tiled=True)\n")  # fmt: skip
    wrong, reads_wrong = graded()
    assert reads_wrong >= 1  # another program: read anew
    assert wrong.status == Status.FAILED
    assert any(c.name == "collectives" and not c.passed and "all-gather" in c.message
               for c in wrong.checks), [(c.name, c.message) for c in wrong.checks]  # fmt: skip


AGE = """
import json as _j2, os as _o2, time as _t2

def _started(pid) -> float:
    \"\"\"When process ``pid`` started (seconds since the epoch), from the kernel's clock.\"\"\"
    ticks = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
    uptime = float(open("/proc/uptime").read().split()[0])
    return _t2.time() - (uptime - ticks / _o2.sysconf("SC_CLK_TCK"))

# a cluster's processes are forked by its launcher (their parent, started with them):
# when that started; a lone student's process is its sandbox's first process
_who = _o2.getppid() if _o2.getppid() > 0 else "self"
_row = _j2.dumps({"started": _started(_who), "imported": _t2.time(), "lone": _who == "self"})
print(f"AGE {_row}", flush=True)  # on its output: its folder is read-only to it
"""


def _ages(err: str) -> list[str]:
    return [line.removeprefix("AGE ") for line in err.splitlines() if line.startswith("AGE {")]


@sandboxed
def test_a_serving_worker_starts_the_clusters_of_lesson_13_ahead_and_each_grade_gets_fresh_ones(
    root, tmp_path, capfd
):
    """Its second grade imports the module in clusters started before that grade
    began (between the two), each process fresh (started once, imported once).
    Each process's line is told to its grade by when it imported the module (during
    that grade), never by when it was read: the clusters' lines reach the worker's
    stderr through threads, and under load one of the first grade's came after the
    second grade had begun (CI: this test failed there once, passed alone)."""
    text = (root / "solutions" / "l13_multi_host.py").read_text()
    (tmp_path / "l13_multi_host.py").write_text(text + "\n" + AGE)
    job = LessonJob(13, "l13_multi_host", ("global_batch",))
    request = Request((job,), str(tmp_path), timeout=120.0, max_examples=0)
    err = ""
    with reports.relayed() as relayed, Worker() as worker:
        began = time.time()
        (first,) = grade(request, worker=worker)
        time.sleep(3.0)  # the processes ahead are spawned before the first grade returns,
        again = time.time()  # but begin a moment later under bwrap: room for a loaded host
        (second,) = grade(request, worker=worker)
        deadline = time.monotonic() + 60
        while True:  # every process's line, the lone ones' (relayed) and the clusters'
            err += capfd.readouterr().err
            rows = [json.loads(x) for x in _ages(relayed.getvalue()) + _ages(err)]
            first_rows = [r for r in rows if r["imported"] < again]
            second_rows = [r for r in rows if r["imported"] >= again]
            if len(second_rows) >= len(first_rows) > 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert all(e.passed for r in (first, second) for e in r.exercises), (first, second)
    said = rows
    assert any(r["lone"] for r in first_rows) and any(not r["lone"] for r in first_rows), said
    assert first_rows and len(second_rows) == len(first_rows)
    assert all(r["started"] >= began for r in first_rows)
    # the second grade's processes (its lone student's process and its clusters') were
    # all started before it began, and after the first grade was done with its own
    assert all(r["started"] < again for r in second_rows), (again, second_rows)
    assert all(r["started"] > max(f["imported"] for f in first_rows) for r in second_rows)
