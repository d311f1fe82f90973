"""Grading in a worker process: time limits, crashes, events."""

from __future__ import annotations

from grader.results import ExerciseResult, Status
from grader.sandbox.protocol import (
    ExampleStarted,
    ExerciseGraded,
    LessonFinished,
    LessonJob,
    LessonStarted,
    Request,
    decode_event,
    encode_event,
)
from grader.sandbox.runner import grade

L02 = LessonJob(2, "l02_collectives", ("ring_all_gather", "ring_reduce_scatter", "ring_all_reduce"))


def _variant(root, tmp_path, code: str):
    text = (root / "solutions" / "l02_collectives.py").read_text()
    (tmp_path / "l02_collectives.py").write_text(text + "\n" + code)
    return str(tmp_path)


def test_hangs_time_out_and_the_rest_is_still_graded(root, tmp_path):
    code = """
_ag, _rs = ring_all_gather, ring_reduce_scatter

def ring_all_gather(x, axis_name):
    while True:  # a Python loop that never ends: interrupted inside the worker
        pass

def ring_reduce_scatter(x, axis_name):
    # a compiled loop that never ends: only killing the worker stops it
    n = lax.axis_size(axis_name)
    c = x.shape[0] // n
    return lax.while_loop(lambda s: s[0] < 1, lambda s: (s[0] * 1, s[1] + 1), (0, x[:c]))[1]

def ring_all_reduce(x, axis_name):
    return _ag(_rs(x, axis_name), axis_name)
"""
    events = []
    # 10 s an example: ring_all_reduce's compiles must fit it on a loaded host too
    request = Request((L02,), _variant(root, tmp_path, code), timeout=10.0, max_examples=0)
    (result,) = grade(request, events.append, grace=1.0)
    status = {e.exercise: e.status for e in result.exercises}
    assert status == {
        "ring_all_gather": Status.TIMEOUT,
        "ring_reduce_scatter": Status.TIMEOUT,
        "ring_all_reduce": Status.PASSED,
    }
    stuck = result.exercises[1]
    assert "stopped it" in stuck.error and stuck.example  # killed: the example is still named
    assert sum(isinstance(e, ExerciseGraded) for e in events) == 3
    assert result.devices.startswith("8 CPU")


def test_code_that_ends_its_process_is_an_error_and_grading_goes_on(root, tmp_path):
    code = """
import os

def ring_all_gather(x, axis_name):
    os._exit(3)
"""
    request = Request((L02,), _variant(root, tmp_path, code), timeout=30.0, max_examples=0)
    (result,) = grade(request)
    gather, scatter, reduce = result.exercises
    assert gather.status == Status.ERROR and "exited with code 3" in gather.error
    assert scatter.status == Status.PASSED  # a fresh student's process graded the rest
    assert (
        reduce.status == Status.ERROR and "exited with code 3" in reduce.error
    )  # it calls ring_all_gather


def test_results_come_back_in_request_order(root):
    """Points are the course's (see test_cli); the grader returns results in order."""
    job = LessonJob(2, "l02_collectives", L02.exercises[::-1])
    (result,) = grade(Request((job,), str(root / "solutions"), max_examples=0, timeout=60.0))
    assert tuple(e.exercise for e in result.exercises) == job.exercises
    assert all(e.passed for e in result.exercises)


def test_fewer_devices_limit_the_meshes(root):
    lesson = LessonJob(1, "l01_meshes", ("shard_shape", "place"))
    (result,) = grade(
        Request((lesson,), str(root / "solutions"), devices=3, timeout=60.0, max_examples=10)
    )
    assert all(e.passed for e in result.exercises) and result.devices.startswith("3 CPU")


def test_the_protocol_round_trips():
    request = Request((L02,), "/x", seed=3, example="n=3", max_examples=0, devices=4)
    assert Request.decode(request.encode()) == request
    result = ExerciseResult(2, "ring_all_gather", Status.FAILED, example="n=3", hint="h")
    for event in (
        LessonStarted(2, "8 CPU devices"),
        ExampleStarted(2, "ring_all_gather", 0, "n=3"),
        ExerciseGraded(2, result),
        LessonFinished(2, 1.5),
    ):
        assert decode_event(encode_event(event)) == event


def test_a_module_that_raises_keyboard_interrupt_as_it_is_imported_is_the_students_error(
    root, tmp_path
):
    """No terminal's Ctrl-C reaches the student's process (the worker has a session
    of its own): a KeyboardInterrupt there is the student's code's, not the grader's."""
    code = "import os as _os, signal as _signal\n_os.kill(_os.getpid(), _signal.SIGINT)\n"
    request = Request((L02,), _variant(root, tmp_path, code), timeout=30.0, max_examples=0)
    (result,) = grade(request)
    assert {e.status for e in result.exercises} == {Status.ERROR}
    error = result.exercises[0].error
    assert "importing l02_collectives.py failed" in error and "KeyboardInterrupt" in error
