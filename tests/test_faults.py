"""Fault injection: what a careless or hostile student's code (and a typo, and
a damaged file) does to ``course grade`` (issue 9).

Every probe runs the real ``course`` command on a workspace whose lesson 2
is the reference solution plus the probe's code, under a hard time limit, and
then asserts that no process of that run is left: each run has its own
COURSE_HOME, which every process it starts (worker, forked children)
inherits in its environment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course.progress import Progress, ProgressError
from course.scoring import ExerciseScore
from grader.results import ExerciseResult, Status
from grader.sandbox import jail
from grader.sandbox.protocol import LessonJob, Request
from grader.sandbox.runner import GraderCrashed, grade
from tests.sandboxed import SANDBOX

ROOT = Path(__file__).resolve().parent.parent
ONE = ("2.ring_all_gather", "--max-examples", "0")
"""The cheapest grading run that imports the student's module and runs their code."""
HANG = """
from jax import lax as _lax

def ring_reduce_scatter(x, axis_name):
    print("hanging now", flush=True)
    n = _lax.axis_size(axis_name)
    return _lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] * 1, s[1] + 1), (0, x[: x.shape[0] // n]))[1]
"""
"""A compiled loop that never ends, announced on stdout (relayed to our stderr)."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def workspace(home: Path, code: str = "") -> Path:
    """Lesson 2 solved, with ``code`` appended to the module; the other lessons' stubs."""
    ex = home / "exercises"
    ex.mkdir(parents=True, exist_ok=True)
    for stub in (ROOT / "exercises").glob("l[0-9]*.py"):
        (ex / stub.name).write_text(stub.read_text())
    text = (ROOT / "solutions" / "l02_collectives.py").read_text()
    (ex / "l02_collectives.py").write_text(text + "\n" + code)
    return home


def env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "COURSE_HOME": str(home), "COURSE_PLATFORM": "cpu", **extra}


def course(
    home: Path, *args: str, timeout: float = 120, **extra: str
) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [sys.executable, "-m", "course.cli", *args], cwd=ROOT, env=env(home, **extra),
        capture_output=True, timeout=timeout,
    )  # fmt: skip
    assert not leftovers(home)
    return r


def leftovers(home: Path, wait: float = 30.0) -> list[int]:
    """Processes still running with this COURSE_HOME (after up to ``wait`` s to exit)."""
    marker = f"COURSE_HOME={home}\0".encode()
    end = time.monotonic() + wait
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    environ = (entry / "environ").read_bytes()
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if marker in environ and state != "Z":
                    found.append(int(entry.name))
        if not found or time.monotonic() > end:
            return found
        time.sleep(0.2)


def states(home: Path) -> dict[tuple[int, str], str]:
    if not (home / "progress.db").exists():
        return {}
    with Progress(home / "progress.db") as p:
        return {k: s.status for k, s in p.states().items()}


def hanging(proc: subprocess.Popen, home: Path) -> None:
    """Until the student's HANG has announced itself on the relayed output and
    ring_all_gather's pass is recorded: the student's process traces the next
    exercise's first example while the exercise before ends (it is asked for it
    ahead), so the announcement can come before that exercise's verdict."""
    assert proc.stderr is not None
    for line in proc.stderr:  # the student's print is relayed to our stderr
        if b"hanging now" in line:
            break
    deadline = time.monotonic() + 120
    while states(home).get((2, "ring_all_gather")) != "passed" and time.monotonic() < deadline:
        assert proc.poll() is None, "the grade ended before the hang"
        time.sleep(0.05)


def attempts(home: Path) -> list[str]:
    if not (home / "progress.db").exists():
        return []
    with Progress(home / "progress.db") as p:
        return [row[-1] for row in p.attempts()]


def as_json(r: subprocess.CompletedProcess) -> dict:
    return json.loads(r.stdout)


def status_of(r: subprocess.CompletedProcess, exercise: str) -> ExerciseResult:
    (lesson,) = as_json(r)["lessons"]
    d = next(e for e in lesson["exercises"] if e["exercise"] == exercise)
    own = {f.name for f in dataclasses.fields(ExerciseResult)}  # the rest is the registry's score
    return ExerciseResult.from_dict({k: v for k, v in d.items() if k in own})


# ------------------------------------------------- always returns, leaves nothing


@pytest.mark.parametrize(
    "code",
    [
        "import threading, time\nthreading.Thread(target=time.sleep, args=(10000,)).start()",
        "import atexit, sys\natexit.register(lambda: sys.stderr.write('x' * 2_000_000))",
        "import atexit, time\natexit.register(time.sleep, 10000)",
    ],
    ids=["non-daemon-thread", "atexit-floods-stderr", "atexit-hangs"],
)
def test_what_the_module_leaves_running_does_not_keep_grading_waiting(home, code):
    workspace(home, code)
    t = time.monotonic()
    r = course(home, "grade", *ONE, "--json")
    assert status_of(r, "ring_all_gather").status == Status.PASSED, r.stderr[-2000:]
    assert time.monotonic() - t < 300  # not the 10,000 s it leaves behind


def test_fork_in_an_exercise_leaves_no_orphans_and_closes_the_attempt(home):
    workspace(home, """
import os as _os, time as _time
_ag = ring_all_gather

def ring_all_gather(x, axis_name):
    for _ in range(3):
        if _os.fork() == 0:
            _time.sleep(10000)  # a child that lingers (killed with the worker's group)
    return _ag(x, axis_name)
""")  # fmt: skip
    t = time.monotonic()
    r = course(home, "grade", *ONE, "--json")
    assert time.monotonic() - t < 300  # not the children's 10,000 s
    assert status_of(r, "ring_all_gather").status == Status.PASSED, r.stderr[-2000:]
    assert b"Traceback" not in r.stderr
    assert attempts(home) == ["done"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_stops_the_worker_keeps_results_and_closes_the_attempt(home, signum):
    workspace(home, HANG)
    proc = subprocess.Popen([sys.executable, "-m", "course.cli", "grade", "2"],  # a full run counts
                            cwd=ROOT, env=env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        hanging(proc, home)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err[-2000:]
    assert b"Interrupted" in err and b"Traceback" not in err
    assert not leftovers(home)
    assert states(home) == {(2, "ring_all_gather"): "passed"}
    assert attempts(home) == ["interrupted"]


@pytest.mark.parametrize(
    "code",
    [
        "while True:\n    pass",
        "import jax, jax.numpy as jnp\nfrom jax import lax\n"  # a loop XLA cannot fold away
        "jax.jit(lambda x: lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] * 1, c[1] + 1),"
        " (0, x)))(jnp.zeros(3))",
    ],
    ids=["python", "compiled"],
)
def test_a_module_that_hangs_at_import_honours_the_timeout(home, code):
    workspace(home, code)
    t = time.monotonic()
    r = course(home, "grade", "2", "--timeout", "3", "--json")
    took = time.monotonic() - t
    assert r.returncode == 1
    (lesson,) = as_json(r)["lessons"]
    assert [e["status"] for e in lesson["exercises"]] == ["timeout"] * 3  # one import, one verdict
    assert "importing" in lesson["exercises"][0]["error"]
    assert took < 180  # jax's start-up, the 3 s limit, the 5 s grace: not 3 × 120 s


def test_a_flood_of_output_is_relayed_bounded(home):
    workspace(home, "import sys\nsys.stdout.write('x' * 50_000_000)\nsys.stdout.flush()")
    r = course(home, "grade", *ONE, "--json")
    assert status_of(r, "ring_all_gather").status == Status.PASSED
    assert len(r.stderr) < 200_000
    assert b"more bytes of output from your code not shown" in r.stderr


def test_an_error_shows_the_tail_of_what_the_code_wrote_to_stderr(home):
    workspace(home, """
import sys as _sys

def ring_all_gather(x, axis_name):
    print("the shard has shape", x.shape, "clue-42", file=_sys.stderr)
    raise RuntimeError("gave up")
""")  # fmt: skip
    er = status_of(course(home, "grade", *ONE, "--json"), "ring_all_gather")
    assert er.status == Status.ERROR
    assert "gave up" in er.error and "clue-42" in er.error


def test_with_json_stdout_holds_only_json_whatever_the_code_writes(home):
    workspace(home, """
import os as _os
print("a print of mine")
try:
    with open(f"/proc/{_os.getppid()}/fd/1", "w") as _f:  # the worker's stdout
        _f.write("written to my parent's stdout\\n")
except OSError:  # in the sandbox its parent is out of sight
    pass
_os.write(1, b"raw fd 1\\n")
""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json")
    assert status_of(r, "ring_all_gather").status == Status.PASSED
    assert b"a print of mine" in r.stderr
    assert (b"my parent's stdout" in r.stderr) == (not jail.on(SANDBOX))


def test_with_json_ctrl_c_still_prints_json(home):
    workspace(home, HANG)
    proc = subprocess.Popen(
        [sys.executable, "-m", "course.cli", "grade", "2", "--json"],  # a full run: recorded
        cwd=ROOT, env=env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        hanging(proc, home)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # it failed this way once in CI: show where it waits
        proc.send_signal(signal.SIGUSR1)  # course's faulthandler: every thread's stack
        time.sleep(2)
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"not ended 30 s after Ctrl-C; its threads:\n{err.decode()[-6000:]}")
    finally:
        proc.kill()
    assert proc.returncode == 130
    doc = json.loads(out)
    assert doc["interrupted"] is True
    assert [e["exercise"] for e in doc["lessons"][0]["exercises"]] == ["ring_all_gather"]
    assert not leftovers(home)


def test_garbage_on_the_events_channel_is_ignored_with_a_warning(home, tmp_path):
    """The student's code cannot reach the events channel (it runs in a process
    that does not hold it); anything else in the worker that writes there is
    ignored: a sitecustomize stands in for such a library here."""
    workspace(home)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("""
import os as _os, sys as _sys
if "--events-fd" in _sys.argv:
    _fd = int(_sys.argv[_sys.argv.index("--events-fd") + 1])
    _os.write(_fd, b"garbage\\n{\\"type\\": \\"nope\\"}\\n{\\"type\\": \\"lesson_start\\"}\\n[1, 2]\\n")
""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json", PYTHONPATH=str(site))
    assert status_of(r, "ring_all_gather").status == Status.PASSED
    assert b"warning: ignored a line on the events channel" in r.stderr
    assert b"Traceback" not in r.stderr


# ------------------------------------------------- usage errors are not the student's


@pytest.fixture
def passed_home(home) -> Path:
    """A workspace whose lesson 2 exercise passed before (recorded as the course does)."""
    workspace(home)
    with Progress(home / "progress.db") as p:
        a = p.start_attempt(str(home / "exercises"), True, "course grade 2")
        p.record(
            a, ExerciseResult(2, "ring_all_gather", Status.PASSED), ExerciseScore(2, False, True, 2)
        )
        p.finish_attempt(a)
    return home


@pytest.mark.parametrize(
    "args, extra",
    [
        (ONE, {"COURSE_PLATFORM": "tpu"}),
        (ONE, {"COURSE_DEVICES": "many"}),
        (("2.ring_all_gather", "--example", "n=3"), {}),
        (("2.ring_all_gather", "--example", "n=4 rows=8 cols=2 dtype=int4 seed=0"), {}),
        (("2.ring_all_gather", "--example", "n=4 rows=8x2 cols=2 dtype=float32 seed=0"), {}),
        (("2.ring_all_gather", "--example", "n=9 rows=9 cols=2 dtype=float32 seed=0"), {}),
        (("2.ring_all_gather", "--example", "n"), {}),
        ((*ONE, "--timeout", "nan"), {}),
        ((*ONE, "--timeout", "-1"), {}),
        ((*ONE, "--timeout", "inf"), {}),
        ((*ONE, "--timeout", "0"), {}),
        (("²",), {}),
        (("2.nothing",), {}),
        (("99",), {}),
    ],
    ids=[
        "platform",
        "devices",
        "missing-keys",
        "dtype",
        "kind",
        "mesh",
        "no-value",
        "nan",
        "negative",
        "inf",
        "zero",
        "superscript",
        "no-exercise",
        "no-lesson",
    ],  # fmt: skip
)
def test_usage_errors_exit_2_with_one_line_and_record_nothing(passed_home, args, extra):
    before = (states(passed_home), attempts(passed_home))
    r = course(passed_home, "grade", *args, **extra)
    assert r.returncode == 2, r.stdout[-1000:] + r.stderr[-2000:]
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(b"Error: ") and not r.stdout
    assert (states(passed_home), attempts(passed_home)) == before


def test_a_grader_fault_is_reported_and_never_recorded(passed_home, monkeypatch, capsys):
    """The grader's failure on an exercise (here: a check that raises) is shown
    as a grader fault with what to report, exit 3, and the passed status stays."""
    from course.commands.common import make_app
    from course.commands.grade import GRADER_FAULT
    from course.commands.grade import grade as course_grade
    from grader.sandbox.protocol import ExerciseGraded

    def faulty(request, on_event, **options):  # options: worker= (course watch, notebook)
        er = ExerciseResult(2, "ring_all_gather", Status.FAULT, error="internal grader error: boom")
        on_event(ExerciseGraded(2, er))
        from grader.results import LessonResult

        return [LessonResult(2, request.directory, exercises=[er])]

    monkeypatch.setattr("grader.sandbox.runner.grade", faulty)
    app = make_app(str(passed_home), None)
    assert course_grade(app, "2.ring_all_gather") == GRADER_FAULT
    assert "fault in the grader" in capsys.readouterr().err
    assert states(passed_home) == {(2, "ring_all_gather"): "passed"}
    assert attempts(passed_home) == ["done"]  # no attempt was started for it


def test_a_hosts_limit_is_said_as_such_never_as_a_bug_to_report(passed_home, monkeypatch, capsys):
    """A host that cannot give what an exercise needs (lesson 13's loopback TCP) is
    one sentence per exercise, not "a fault in the grader … please report it";
    exit 1 (not passed), and nothing is recorded."""
    from course.commands.common import make_app
    from course.commands.grade import grade as course_grade
    from grader.faults import HostLimit
    from grader.sandbox.protocol import ExerciseGraded

    said = str(HostLimit("it runs a cluster of processes that join over loopback TCP."))

    def limited(request, on_event, **options):
        er = ExerciseResult(2, "ring_all_gather", Status.FAULT, error=said)
        on_event(ExerciseGraded(2, er))
        from grader.results import LessonResult

        return [LessonResult(2, request.directory, exercises=[er])]

    monkeypatch.setattr("grader.sandbox.runner.grade", limited)
    app = make_app(str(passed_home), None)
    assert course_grade(app, "2.ring_all_gather") == 1
    err = capsys.readouterr().err
    assert "cannot be graded on this host" in err and "fault in the grader" not in err
    assert states(passed_home) == {(2, "ring_all_gather"): "passed"}


def test_a_grader_crash_outside_any_exercise_is_raised_not_blamed_on_the_student(tmp_path):
    job = LessonJob(2, "l99_no_such_spec", ("ring_all_gather",))
    with pytest.raises(GraderCrashed, match="please report"):
        grade(Request((job,), str(ROOT / "solutions"), max_examples=0, timeout=30))


# ------------------------------------------------- damaged and read-only progress files


def test_a_read_only_progress_file_is_reported_as_read_only(tmp_path, monkeypatch):
    db = tmp_path / "progress.db"
    Progress(db).close()
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != db)  # tests run as root
    with pytest.raises(ProgressError, match="is read-only") as exc:
        Progress(db)
    assert "damaged" not in str(exc.value)


def test_a_read_only_progress_file_can_still_be_read(tmp_path, monkeypatch):
    db = tmp_path / "progress.db"
    with Progress(db) as p:
        a = p.start_attempt(str(tmp_path), True, "course grade 2")
        p.record(
            a, ExerciseResult(2, "ring_all_gather", Status.PASSED), ExerciseScore(2, False, True, 2)
        )
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with Progress(db, read_only=True) as p:
        assert p.states()[(2, "ring_all_gather")].status == "passed"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            p.start_attempt(str(tmp_path), True, "course grade 2")


def test_a_read_only_workspace_is_reported_by_status(home):
    workspace(home)
    Progress(home / "progress.db").close()
    os.chmod(home, 0o555)
    try:
        r = course(home, "status")
    finally:
        os.chmod(home, 0o755)
    if os.geteuid() == 0:
        assert r.returncode == 0  # root writes anyway; the unit test above covers the message
    else:
        assert r.returncode == 1 and b"read-only" in r.stderr and b"damaged" not in r.stderr


@pytest.mark.parametrize(
    "damage, says",
    [
        ("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'", "unknown schema version"),
        ("DROP TABLE results", "lacks the table(s) results"),
    ],
)
def test_a_damaged_progress_file_gets_a_clear_message(home, damage, says):
    workspace(home)
    Progress(home / "progress.db").close()
    with sqlite3.connect(home / "progress.db") as conn:
        conn.execute("DROP INDEX IF EXISTS results_by_exercise") if "DROP TABLE" in damage else None
        conn.execute(damage)
    r = course(home, "status")
    assert r.returncode == 1
    assert says.encode() in r.stderr and b"mv " in r.stderr and b"Traceback" not in r.stderr


# ------------------------------------------------- forging a grade

WRONG = "\ndef ring_all_gather(x, axis_name):\n    return x  # wrong: no gather at all\n"


@pytest.mark.parametrize(
    "code",
    [
        """
import grader.checks as _checks
from grader.results import CheckResult as _CR

for _name in dir(_checks):
    _cls = getattr(_checks, _name)
    if isinstance(_cls, type) and "__call__" in vars(_cls):
        _cls.__call__ = lambda self, trial: _CR(self.name, True, "fine")
""",
        """
import grader.engine as _engine
from grader.results import ExerciseResult as _ER, Status as _S

_engine.grade_exercise = lambda lesson, spec, fn, ctx, **kw: _ER(lesson, spec.name, _S.PASSED)
""",
    ],
    ids=["patch-checks", "patch-engine"],
)
def test_code_that_patches_the_grader_cannot_pass(home, code):
    """The student's module is imported in a process of its own: what it patches
    there is not what grades it."""
    workspace(home, code + WRONG)
    r = course(home, "grade", *ONE, "--json")
    er = status_of(r, "ring_all_gather")
    assert r.returncode == 1 and er.status == Status.FAILED
    assert "returned shape" in er.checks[0].message
    assert states(home)[(2, "ring_all_gather")] == "failed"


def test_writing_forged_lines_on_every_channel_cannot_pass(home):
    """The events channel to ``course`` is not open in the student's process; what
    the code writes on the one it has is not taken as the grader's answer."""
    forged = {
        "type": "exercise",
        "lesson": 2,
        "result": ExerciseResult(2, "ring_all_gather", Status.PASSED).to_dict(),
    }
    workspace(home, f"""
import json as _json, os as _os
for _fd in range(3, 64):
    for _line in ({forged!r}, {{"ok": True, "functions": ["ring_all_gather"], "seq": 1}}):
        try:
            _os.write(_fd, (_json.dumps(_line) + "\\n").encode())
        except OSError:
            pass
{WRONG}""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json")
    er = status_of(r, "ring_all_gather")
    assert r.returncode == 1 and er.status == Status.ERROR
    assert "not the grader's answer" in er.error
    assert states(home)[(2, "ring_all_gather")] == "error"


def test_reading_the_graders_data_off_the_stack_does_not_pass(home):
    """The student's process traces the program on decoy data; the grader runs it
    on data drawn from a salt it keeps to itself."""
    workspace(home, """
import inspect as _inspect
import jax.numpy as _jnp
import numpy as _np
from jax import lax as _lax

def ring_all_gather(x, axis_name):
    frame = next(f.frame for f in _inspect.stack() if "placed" in f.frame.f_locals)
    full, n = _np.asarray(frame.f_locals["x"]), frame.f_locals["n"]
    y = x
    for _ in range(n - 1):  # the sends the checks count; their data is thrown away
        y = _lax.ppermute(y, axis_name, [(i, (i + 1) % n) for i in range(n)])
    return _jnp.asarray(full, x.dtype) + 0 * y[:1].sum()
""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json")
    er = status_of(r, "ring_all_gather")
    assert er.status == Status.FAILED
    assert [c.name for c in er.checks if not c.passed] == ["values"]


def test_a_host_callback_is_refused(home):
    """``jax.pure_callback`` does not export: a program cannot reach back into
    the student's process while the grader runs it."""
    workspace(home, """
import jax as _jax
import numpy as _np
from jax import lax as _lax

def ring_all_gather(x, axis_name):
    n = _lax.axis_size(axis_name)
    out = _jax.ShapeDtypeStruct((x.shape[0] * n, x.shape[1]), x.dtype)
    return _jax.pure_callback(lambda b: _np.concatenate([b] * n), out, x)
""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json")
    er = status_of(r, "ring_all_gather")
    assert r.returncode == 1 and er.status == Status.FAILED
    assert "calls back into Python on the host" in er.checks[0].message


def test_code_that_ends_its_own_process_is_an_error_and_grading_goes_on(home):
    workspace(home, """
import os as _os

def ring_all_gather(x, axis_name):
    _os._exit(7)
""")  # fmt: skip
    r = course(home, "grade", "2", "--max-examples", "0", "--json")
    er = status_of(r, "ring_all_gather")
    assert er.status == Status.ERROR and "exited with code 7" in er.error
    assert status_of(r, "ring_reduce_scatter").status == Status.PASSED  # a fresh process took over


def test_writing_the_progress_file_during_grading_is_flagged(home):
    workspace(home, """
import os as _os, sqlite3 as _sqlite3, time as _time
_db = _sqlite3.connect(_os.path.join(_os.path.dirname(__file__), "..", "progress.db"))
_a = _db.execute("INSERT INTO attempts (started, source, counted, command, state) "
                 "VALUES (?, 'x', 1, 'course grade 2', 'done')", (_time.time(),)).lastrowid
_db.execute("INSERT INTO results (attempt_id, recorded, lesson, exercise, status, score, possible, "
            "duration) VALUES (?, ?, 2, 'ring_reduce_scatter', 'passed', 2, 2, 0)", (_a, _time.time()))
_db.commit()
""")  # fmt: skip
    (home / "progress.db").parent.mkdir(parents=True, exist_ok=True)
    Progress(home / "progress.db").close()
    r = course(home, "grade", *ONE, "--json")
    if not jail.on(SANDBOX):
        assert b"was written by another process while grading ran" in r.stderr
        return
    # in the sandbox the file is read-only, or (a home under /tmp) out of sight
    er = status_of(r, "ring_all_gather")
    assert er.status == Status.ERROR, er.error
    assert "readonly database" in er.error or "no such table: attempts" in er.error, er.error
    with sqlite3.connect(home / "progress.db") as db:
        assert db.execute("SELECT count(*) FROM attempts WHERE source = 'x'").fetchone() == (0,)


def test_a_child_detached_with_setsid_is_stopped_too(home):
    workspace(home, """
import os as _os, time as _time
if _os.fork() == 0:
    _os.setsid()  # out of the worker's process group
    if _os.fork() == 0:
        _time.sleep(10000)
    _os._exit(0)
""")  # fmt: skip
    r = course(home, "grade", *ONE, "--json")  # asserts no process is left
    assert status_of(r, "ring_all_gather").status == Status.PASSED
