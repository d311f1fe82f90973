"""Helpers (issue 22 §1): a serving worker starts a second student's process with
the one it starts ahead, and both trace and export the examples asked for ahead,
so a re-grade's tracing runs on two cores. Nothing a student sees may change:
the same verdict, the same example named (the first that fails, whichever process
traced it and whenever a process failed a later one), a hang or a crash charged
to the example that hung or crashed."""

from __future__ import annotations

import time

import pytest

from grader import engine
from grader.engine import examples_for
from grader.results import Status
from grader.sandbox import backends, isolation, processes
from grader.sandbox.isolation import Session, StudentProcess
from grader.sandbox.spares import Spares
from grader.spec import format_example

SALT = 0x5EC12E7
MODULE = "l02_collectives"


def _examples(name: str):
    return examples_for(engine.load_spec(MODULE).exercise(name), engine.context(), 0)


def _other_cols() -> tuple[int, int]:
    """(k, cols): the first example of ring_all_gather with other columns than
    example 0's, and its columns (a later example: asked for ahead)."""
    examples = _examples("ring_all_gather")
    k = next(i for i, ex in enumerate(examples) if ex["cols"] != examples[0]["cols"])
    assert k >= 1
    return k, examples[0]["cols"]


def _wrong_unless(cols: int, body: str) -> str:
    """ring_all_gather, the solution's on ``cols`` columns; ``body`` on any other
    (on every such example, in whichever process traces it)."""
    return (
        "\n_solved = ring_all_gather\n"
        "def ring_all_gather(x, axis_name):\n"
        f"    if x.shape[-1] != {cols}:\n"
        f"{body}"
        "    return _solved(x, axis_name)\n"
    )


@pytest.fixture
def spares(tmp_path):
    """Spares as a serving worker keeps them between two grades of lesson 2:
    the first process and one helper started ahead (jax imported)."""
    s = Spares(helpers=1)
    s.exporting.add(MODULE)
    s.prestart(str(tmp_path), MODULE, load=False)
    assert s.helping(str(tmp_path)) == 1
    yield s
    s.close()


def _grade(root, tmp_path, spares, code: str = "", only=("ring_all_gather",), timeout=60.0):
    source = (root / "solutions" / f"{MODULE}.py").read_text()
    (tmp_path / f"{MODULE}.py").write_text(source + code)  # saved: the grade begins
    spares.prestart(str(tmp_path), MODULE)  # the first process imports the module
    result = backends.grade_lesson(
        2, MODULE, tmp_path, only=list(only), timeout=timeout,
        backend=lambda directory, module: isolation.Isolated(
            directory, module, salt=SALT, spares=spares
        ),
    )  # fmt: skip
    return result


def _helper_usable_at_once(init):
    """``Session.__init__`` that returns once its helpers have imported the student's module:
    the helper can be asked from the lesson's first example asked ahead on, so it is asked
    at least once whatever the load. How many it exports is timing (which process has fewer
    questions open when one is asked): 2 of 18 on a host loaded by CI's two test workers,
    where this test asked for at least 3 and failed."""

    def init_then_wait(self, *args, **kwargs):
        init(self, *args, **kwargs)
        deadline = time.monotonic() + 120
        while len(self.usable) < len(self.helpers) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.usable) == len(self.helpers) == 1, "the helper did not import the module"

    return init_then_wait


def test_the_helper_exports_examples_and_the_lesson_still_passes(root, tmp_path, spares,
                                                                 monkeypatch):  # fmt: skip
    asked: list[bool] = []
    export = StudentProcess.export

    def spy(self, *args, **kwargs):
        asked.append(self.helper)
        return export(self, *args, **kwargs)

    monkeypatch.setattr(StudentProcess, "export", spy)
    monkeypatch.setattr(Session, "__init__", _helper_usable_at_once(Session.__init__))
    result = _grade(
        root, tmp_path, spares, only=[s.name for s in engine.load_spec(MODULE).exercises]
    )
    assert all(e.status == Status.PASSED for e in result.exercises), [
        (e.exercise, e.status, e.error) for e in result.exercises
    ]
    assert True in asked and False in asked, asked  # both traced examples
    assert spares.helping() == 0  # the helper was taken by the lesson (and closed with it)


def test_a_wrong_later_example_is_named_though_a_helper_traced_it(root, tmp_path, spares):
    k, cols = _other_cols()
    (wrong,) = _grade(root, tmp_path, spares,
                      _wrong_unless(cols, "        return _solved(x, axis_name) * 2\n")).exercises  # fmt: skip
    assert wrong.status == Status.FAILED
    assert wrong.example == format_example(_examples("ring_all_gather")[k])
    assert wrong.examples_run == k + 1
    assert any(c.name == "values" and not c.passed for c in wrong.checks)


def test_a_hang_in_either_process_is_charged_to_the_example_that_hung(root, tmp_path, spares):
    """…and the next exercise is not charged for it: every process the lesson asked
    ahead is stopped (another may be stuck on an example asked ahead too)."""
    k, cols = _other_cols()
    hung, after = _grade(root, tmp_path, spares,
                         _wrong_unless(cols, "        while True:\n            pass\n"),
                         only=("ring_all_gather", "ring_reduce_scatter"), timeout=10).exercises  # fmt: skip
    assert hung.status == Status.TIMEOUT, (hung.status, hung.error)
    assert hung.example == format_example(_examples("ring_all_gather")[k])
    assert "did not finish" in hung.error
    assert after.status == Status.PASSED, after.error


def test_a_crash_in_either_process_is_charged_to_the_example_that_crashed(root, tmp_path, spares):
    k, cols = _other_cols()
    crash = "        import os\n        os._exit(3)\n"
    result = _grade(root, tmp_path, spares, _wrong_unless(cols, crash),
                    only=("ring_all_gather", "ring_reduce_scatter"))  # fmt: skip
    crashed, after = result.exercises
    assert crashed.status == Status.ERROR, (crashed.status, crashed.error)
    assert crashed.example == format_example(_examples("ring_all_gather")[k])
    assert "exited with code 3" in crashed.error
    assert after.status == Status.PASSED, after.error  # the next exercise: the first process


def test_helpers_start_only_for_a_lesson_whose_grade_exported_programs(monkeypatch):
    started: list[str] = []

    class _Proc:
        def poll(self):
            return None

    def fake_spawn(directory="", prepare="", ahead=False, hidden=(), sandbox=None):
        started.append(prepare)
        return (_Proc(), None, -1)

    monkeypatch.setattr(processes, "spawn", fake_spawn)
    s = Spares(helpers=1)
    s.prestart("/nowhere", "l01_meshes", load=False)
    assert started == ["l01_meshes"]  # the first process only: lesson 1 exported nothing
    s.exporting.add("l02_collectives")
    s.prestart("/elsewhere", "l02_collectives", load=False)
    assert started == ["l01_meshes", "l02_collectives", "l02_collectives"]
    assert Spares().helpers == 0  # a worker that grades once starts none


class _Asked:
    """Stands for a student's process: counts the questions it was asked."""

    def __init__(self, helper: bool, waiting: int):
        self.helper, self.waiting, self.proc, self.closed = helper, waiting, self, False
        self.questions: list[str] = []

    def export(self, exercise, example, simulated):
        self.questions.append(example["n"])
        self.waiting += 1
        return len(self.questions)


def test_examples_asked_ahead_go_to_the_process_with_fewest_questions_waiting():
    session = Session.__new__(Session)
    first, helper = _Asked(False, waiting=1), _Asked(True, waiting=0)  # example 0 on the first
    session.process, session.usable, session.helpers = first, [helper], [helper]
    session.simulated, session.ahead = False, {}
    key = isolation.example_key
    session.after = {("e", key({"n": 1})): {"n": 2}}
    session.ask_ahead("e", {"n": 1})
    assert helper.questions == [1] and first.questions == [2]  # both cores busy
    assert set(session.ahead) == {("e", key({"n": 1})), ("e", key({"n": 2}))}
    session.ask_ahead("e", {"n": 1})  # asked already: asked again of nobody
    assert helper.questions == [1] and first.questions == [2]
    session.usable = []
    session.ahead.clear()
    session.ask_ahead("e", {"n": 1})  # no helper: the following example only, of the first process
    assert first.questions == [2, 1] and helper.questions == [1]
