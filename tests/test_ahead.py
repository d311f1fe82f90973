"""The next example prepared while one runs (issue 22 §2, ``grader.sandbox.prepared``):
with the student's code in a process of its own, an exercise's next example is
received, checked and compiled in a thread while the one before it runs. Nothing
a student sees may change: the same verdict, the same example named, the same
number of examples run, a hang charged to the example that hung."""

from __future__ import annotations

import os
import threading
import time

import pytest

from grader import engine
from grader.backend import Here
from grader.engine import examples_for
from grader.results import Status
from grader.sandbox import backends, isolation, worker
from grader.sandbox.isolation import StudentProcess, StudentProcessDied
from grader.spec import format_example

SALT = 0x5EC12E7


def _second_example_differs(body: str) -> str:
    """A ring_all_gather that is the solution's on the first example's number of
    columns and does ``body`` (indented code, ``x`` in scope) on any other."""
    return (
        "\n_first_cols = []\n"
        "_solved = ring_all_gather\n"
        "def ring_all_gather(x, axis_name):\n"
        "    if not _first_cols:\n"
        "        _first_cols.append(x.shape[-1])\n"
        "    if x.shape[-1] != _first_cols[0]:\n"
        f"{body}"
        "    return _solved(x, axis_name)\n"
    )


def _grade(root, tmp_path, monkeypatch, ahead: bool, code: str, timeout: float = 60):
    source = (root / "solutions" / "l02_collectives.py").read_text()
    (tmp_path / "l02_collectives.py").write_text(source + code)
    result = backends.grade_lesson(
        2, "l02_collectives", tmp_path, only=["ring_all_gather"], timeout=timeout,
        backend=backends.isolated(SALT, ahead=ahead),
    )  # fmt: skip
    return result.exercises[0]


def _examples(name: str):
    spec = engine.load_spec("l02_collectives").exercise(name)
    return examples_for(spec, engine.context(), 0)


def _first_with_another_shape() -> int:
    """Index of the first example with other columns than example 0's (not the
    first: a later example, prepared ahead)."""
    examples = _examples("ring_all_gather")
    k = next(i for i, ex in enumerate(examples) if ex["cols"] != examples[0]["cols"])
    assert k >= 1
    return k


@pytest.mark.parametrize("ahead", [False, True], ids=["one after another", "ahead"])
def test_a_wrong_later_example_is_named_the_same_with_or_without_preparing_ahead(
    root, tmp_path, monkeypatch, ahead
):
    wrong = _grade(root, tmp_path, monkeypatch, ahead,
                   _second_example_differs("        return _solved(x, axis_name) * 2\n"))  # fmt: skip
    k = _first_with_another_shape()
    assert wrong.status == Status.FAILED
    assert wrong.example == format_example(_examples("ring_all_gather")[k])
    assert wrong.examples_run == k + 1
    assert any(c.name == "values" and not c.passed for c in wrong.checks)


@pytest.mark.parametrize("ahead", [False, True], ids=["one after another", "ahead"])
def test_a_hang_while_tracing_a_later_example_is_charged_to_that_example(
    root, tmp_path, monkeypatch, ahead
):
    """The student's process traces the next example while this one compiles here:
    a hang there is the next example's, whether or not it was prepared ahead."""
    hung = _grade(root, tmp_path, monkeypatch, ahead,
                  _second_example_differs("        while True:\n            pass\n"), timeout=10)  # fmt: skip
    k = _first_with_another_shape()
    assert hung.status == Status.TIMEOUT, (hung.status, hung.error)
    assert hung.example == format_example(_examples("ring_all_gather")[k])
    assert "did not finish" in hung.error


def test_preparing_ahead_is_on_in_the_worker_and_off_in_process(monkeypatch):
    assert Here.ahead is False
    assert worker.Options.from_environment().ahead is True
    monkeypatch.setenv(worker.AHEAD, "0")  # read by the worker's main, passed to its backend
    assert worker.Options.from_environment().ahead is False
    assert worker.Options.from_environment({worker.AHEAD: "0"}).ahead is False
    assert isolation.Isolated("/nowhere", "l02_collectives", salt=1, ahead=False).ahead is False


# ------------------------------------------------------------------ two threads, one process


class _Alive:
    """Stands for the student's process: alive until killed."""

    def __init__(self) -> None:
        self.killed = False

    def poll(self):
        return -9 if self.killed else None

    def send_signal(self, sig):
        self.killed = True

    def wait(self, timeout=None):
        return -9


def _process() -> tuple[StudentProcess, int]:
    """A StudentProcess whose answers are what the test writes on the returned fd."""
    p = StudentProcess("/nowhere", "l02_collectives")
    read, write = os.pipe()
    p.adopt((_Alive(), os.fdopen(os.dup(write), "wb"), read), pending=(1, 2), loaded=True)
    return p, write


def test_two_threads_each_get_their_own_answer_in_any_order():
    p, write = _process()
    got: dict[int, dict] = {}

    def ask(seq: int) -> None:
        got[seq] = p.receive(seq)

    threads = [threading.Thread(target=ask, args=(s,)) for s in (2, 1)]
    for t in threads:
        t.start()
    time.sleep(0.2)  # both waiting: one reads, the other waits for its turn
    os.write(write, b'{"seq": 2, "ok": true, "n": 20}\n')
    time.sleep(0.1)
    os.write(write, b'{"seq": 1, "ok": true, "n": 10}\n')
    for t in threads:
        t.join(timeout=10)
    assert got == {1: {"seq": 1, "ok": True, "n": 10}, 2: {"seq": 2, "ok": True, "n": 20}}
    os.close(write)


def test_a_stop_from_one_thread_ends_the_other_threads_wait():
    p, write = _process()
    raised: list[BaseException] = []

    def ask() -> None:
        try:
            p.receive(2)
        except BaseException as exc:  # noqa: BLE001
            raised.append(exc)

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(0.2)
    p.stop()
    t.join(timeout=10)
    assert not t.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], StudentProcessDied)
    os.close(write)


def test_only_the_grading_thread_starts_the_students_process():
    """A process started from another thread dies with that thread (the sandbox's
    parent-death signal follows the thread): a thread preparing an example that
    finds no process running is refused, and the engine runs that example itself."""
    from grader.sandbox.isolation import NotStartedHere

    p = StudentProcess("/nowhere", "l02_collectives")
    raised: list[BaseException] = []

    def start() -> None:
        try:
            p.spawn()
        except BaseException as exc:  # noqa: BLE001
            raised.append(exc)

    t = threading.Thread(target=start)
    t.start()
    t.join(timeout=10)
    assert len(raised) == 1 and isinstance(raised[0], NotStartedHere)
    p.close()
    with pytest.raises(StudentProcessDied, match="over"):
        p.spawn()  # closed: not started again, from any thread


def test_a_moot_answer_is_waited_for_and_dropped_and_the_process_kept():
    """Asked ahead for an exercise that ended first: its answer is read and dropped
    before the next exercise asks, and the process, which answered, stays."""
    p, write = _process()
    os.write(write, b'{"seq": 2, "ok": true}\n')
    p.settle(2, limit=10)
    assert p.proc is not None and not p.proc.killed
    os.write(write, b'{"seq": 1, "ok": true}\n')  # the other answer is still awaited, and taken
    assert p.receive(1) == {"seq": 1, "ok": True}
    os.close(write)


def test_a_process_that_ends_on_a_moot_question_is_stopped_before_the_next_exercise():
    """Its end is not charged to the next exercise: that one finds no process and
    starts a fresh one (a crash while tracing an example asked ahead)."""
    p, write = _process()
    alive = p.proc
    os.close(write)  # it ends without answering
    p.settle(2, limit=10)
    assert p.proc is None and alive.killed


def test_a_process_that_does_not_answer_a_moot_question_in_time_is_stopped():
    p, write = _process()
    alive = p.proc
    start = time.monotonic()
    p.settle(2, limit=0.5)
    assert p.proc is None and alive.killed
    assert 0.4 < time.monotonic() - start < 8  # waited its limit, not the select's second
    os.close(write)


# ------------------------------------------------------------------ the sandbox's examples


class _Runtime:
    """Stands for a replaying runtime: what :class:`PreparedAhead` reads of one."""

    def __init__(self, example: int) -> None:
        self.example, self.turn = example, None
        self.answered = threading.Event()
        self.interrupted = False

    def interrupt(self) -> None:
        self.interrupted = True


class _Spec:
    """A spec whose run builds its inputs, then calls the student's function."""

    name, cluster = "probe", None

    def __init__(self) -> None:
        self.log: list[tuple[str, int]] = []

    def run(self, rt, fn, ex):
        self.log.append(("inputs", ex))
        fn(ex)
        self.log.append(("ran", ex))
        return ("trial", ex)


def _counted(calls: list[int], fails: int | None = None) -> type:
    """The engine's function for an example (one made per example): each call
    recorded in ``calls``; raises on example ``fails``."""

    class Counted:
        count = 0

        def __call__(self, ex):
            self.count += 1
            calls.append(ex)
            if ex == fails:
                raise ValueError("the student's function failed")

    return Counted


def _wait_for(cond, limit: float = 30.0) -> bool:
    end = time.monotonic() + limit
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


def test_the_next_example_is_prepared_while_one_runs_and_calls_the_student_in_its_turn():
    """The engine asks for one example at a time (start, then run); the sandbox's
    examples build the next example's inputs once the one before it ran (here:
    its ``answered``), and call the student's function for it only in its turn.
    An example prepared after the last one that ran is abandoned: never called."""
    from grader.sandbox.prepared import PreparedAhead

    spec = _Spec()
    calls: list[int] = []
    Counted = _counted(calls)
    made: list[_Runtime] = []

    def runtime(ex, following):
        made.append(_Runtime(ex))
        return made[-1]

    runs = PreparedAhead(spec, [0, 1, 2], Counted, runtime)
    runs.start(0)
    assert runs.run(0) == ("trial", 0)
    assert _wait_for(lambda: ("inputs", 1) in spec.log), spec.log  # prepared, not asked for yet
    assert calls == [0]  # example 1's function waits for its turn
    called = runs.start(1)
    assert called.count == 0
    assert runs.run(1) == ("trial", 1)
    assert calls == [0, 1] and called.count == 1
    assert _wait_for(lambda: ("inputs", 2) in spec.log)
    thread = runs.pending[2].thread
    runs.close()  # example 1 was the last to run (say it failed): example 2 is not wanted
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert calls == [0, 1] and ("ran", 2) not in spec.log


def test_the_next_exercises_first_example_is_prepared_while_the_last_one_runs():
    """Told which exercise comes next (``followed_by``), the sandbox's examples
    prepare that exercise's first example while their own last one runs: its inputs
    once that one answered, the student's function only in its turn. Kept when the
    last example ran; where it did not (it raised: the process may have been
    stopped), abandoned, and the next exercise's first made afresh in its turn.
    Each exercise's end is told to the backend once, as it closes."""
    from grader.sandbox.prepared import PreparedAhead

    calls: list[int] = []
    Counted = _counted(calls, fails=5)

    def runtime(ex, following):
        return _Runtime(ex)

    def exercises(first: list[int], ended: list[str]) -> tuple[PreparedAhead, PreparedAhead]:
        a = PreparedAhead(_Spec(), first, Counted, runtime, ended=lambda: ended.append("a"))
        b = PreparedAhead(_Spec(), [10, 11], Counted, runtime, ended=lambda: ended.append("b"))
        a.followed_by(b)
        return a, b

    ended: list[str] = []
    a, b = exercises([0, 1], ended)
    a.start(0)
    assert a.run(0) == ("trial", 0)
    assert not b.pending  # not while the exercise has an example to prepare
    a.start(1)
    assert 0 in b.pending and ("inputs", 10) not in b.spec.log  # after its last answered
    assert a.run(1) == ("trial", 1)
    assert _wait_for(lambda: ("inputs", 10) in b.spec.log)
    assert calls == [0, 1]  # its function waits for its turn
    a.close()
    assert ended == ["a"] and 0 in b.pending  # the last one ran: kept
    called = b.start(0)
    assert b.run(0) == ("trial", 10) and calls == [0, 1, 10] and called.count == 1
    b.close()
    assert ended == ["a", "b"]

    calls.clear()
    a, b = exercises([4, 5], ended)
    a.start(0)
    a.run(0)
    a.start(1)
    with pytest.raises(ValueError):
        a.run(1)
    thread = b.pending[0].thread
    a.close()
    thread.join(timeout=30)
    assert not thread.is_alive() and not b.pending  # abandoned: never called
    assert ("ran", 10) not in b.spec.log
    b.start(0)  # made afresh in its turn
    assert b.run(0) == ("trial", 10) and calls == [4, 5, 10]
    b.close()


def test_the_sandbox_prepares_ahead_only_where_it_may():
    """Off with ``ahead=False`` (the worker's ``COURSE_AHEAD=0``) and for an exercise
    on a cluster; the in-process backend never prepares ahead."""
    from grader.backend import Examples
    from grader.sandbox.prepared import PreparedAhead

    spec = engine.load_spec("l02_collectives").exercise("ring_all_gather")
    on = isolation.Isolated("/nowhere", "l02_collectives", salt=1)
    off = isolation.Isolated("/nowhere", "l02_collectives", salt=1, ahead=False)
    assert isinstance(on.examples(spec, [], object, runtime=None), PreparedAhead)
    assert type(off.examples(spec, [], object, runtime=None)) is Examples
    clustered = engine.load_spec("l13_multi_host").exercises[0]
    assert clustered.cluster is not None
    assert type(on.examples(clustered, [], object, runtime=None)) is Examples
    here = Here("/nowhere", "l02_collectives")
    assert type(here.examples(spec, [], object, runtime=None)) is Examples
    for backend in (on, off):
        backend.close()


def test_what_an_exercise_over_did_not_take_is_answered_before_the_next_example_asks():
    """An exercise's questions not taken (an example asked ahead after one that
    failed, the end of a run) are waited for when the next example is made, never
    at the exercise's end: after the last exercise, nobody waits (the process is
    closed), and a hang there cannot hold the grade. What the next exercise asked
    already (its first example, prepared while this one's last ran) is not moot."""
    from grader.sandbox.isolation import Session, example_key

    class Process:
        def __init__(self) -> None:
            self._cv = threading.Condition()
            self.proc = object()
            self.settled: list[int] = []

        def settle(self, seq: int) -> None:
            self.settled.append(seq)

    p = Process()
    session = Session.__new__(Session)
    session.process, session.simulated, session.moot = p, False, []
    session.ahead = {("a", example_key({"n": 2})): (p, p.proc, 7),
                     ("b", example_key({"n": 1})): (p, p.proc, 9)}  # fmt: skip
    session.runs = {"a": [(p, p.proc, 5)], "b": [(p, p.proc, 8)]}
    session.after = {("a", example_key({"n": 1})): {"n": 2}}
    session.end("a")
    assert p.settled == [] and sorted(seq for _, seq in session.moot) == [5, 7]
    assert set(session.ahead) == {("b", example_key({"n": 1}))} and not session.after
    assert session.runs == {"b": [(p, p.proc, 8)]}
    session.learn("b", {"n": 2}, None, simulated=True)
    assert sorted(p.settled) == [5, 7] and session.moot == [] and session.simulated


@pytest.mark.parametrize("ahead", [False, True], ids=["one after another", "ahead"])
def test_a_hang_in_an_exercises_last_example_leaves_the_next_exercise_its_own_verdict(
    root, tmp_path, monkeypatch, ahead
):
    """The next exercise's first example is prepared while this one's last runs, on
    the same student's process: that process is stopped for the hang, and the next
    exercise is graded on a fresh one, as one after another."""
    source = (root / "solutions" / "l02_collectives.py").read_text()
    examples = _examples("ring_all_gather")
    last = examples[-1]
    blocks = [((ex["rows"], ex["cols"]), ex["dtype"]) for ex in examples]  # each device's block
    assert blocks.count(blocks[-1]) == 1  # only the last example's blocks are these
    (tmp_path / "l02_collectives.py").write_text(source + (
        "\n_solved_gather = ring_all_gather\n"
        "def ring_all_gather(x, axis_name):\n"
        f"    while (tuple(x.shape), str(x.dtype)) == {blocks[-1]!r}:\n"
        "        pass\n"
        "    return _solved_gather(x, axis_name)\n"
    ))  # fmt: skip
    from grader.sandbox.prepared import PreparedAhead

    abandoned: list[str] = []  # the next exercise's first, prepared, then dropped
    drop = PreparedAhead.abandon_first

    def abandon_first(self: PreparedAhead) -> None:
        if 0 in self.pending:
            abandoned.append(self.spec.name)
        drop(self)

    monkeypatch.setattr(PreparedAhead, "abandon_first", abandon_first)
    result = backends.grade_lesson(
        2, "l02_collectives", tmp_path, only=["ring_all_gather", "ring_reduce_scatter"],
        timeout=10, backend=backends.isolated(SALT, ahead=ahead),
    )  # fmt: skip
    assert abandoned == (["ring_reduce_scatter"] if ahead else [])
    hung, after = result.exercises
    assert hung.status == Status.TIMEOUT, (hung.status, hung.error)
    assert hung.example == format_example(last) and hung.examples_run == len(examples)
    assert after.status == Status.PASSED, (after.status, after.error)


def test_each_exercise_after_the_first_starts_on_its_first_example_prepared(root, monkeypatch):
    """In a real grade, every exercise's first example but the lesson's first was
    prepared while the exercise before ran its last: the same verdicts."""
    from grader.sandbox.prepared import PreparedAhead

    found: list[tuple[str, bool]] = []
    start = PreparedAhead.start

    def spy(self: PreparedAhead, index: int):
        if index == 0:
            found.append((self.spec.name, 0 in self.pending))
        return start(self, index)

    monkeypatch.setattr(PreparedAhead, "start", spy)
    result = backends.grade_lesson(
        2, "l02_collectives", root / "solutions", backend=backends.isolated(SALT, ahead=True)
    )
    assert [e.status for e in result.exercises] == [Status.PASSED] * 3
    assert found == [("ring_all_gather", False), ("ring_reduce_scatter", True),
                     ("ring_all_reduce", True)]  # fmt: skip
