"""Grade in a worker process, with a time limit per example.

The worker (``grader.worker``) interrupts Python-level hangs itself; a
compiled loop that never ends is caught here: when no event arrives within
the limit plus a grace period, the worker is killed, the exercise is marked
as timed out, and a fresh worker grades the exercises that remain.

This module does not import jax.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.results import ExerciseResult, LessonResult, Status

GRACE = 5.0
"""Seconds past the per-example limit before the worker is killed."""
STARTUP = 120.0
"""Seconds a worker may take to import jax and reach its first example."""


@dataclass
class LessonRequest:
    lesson: int
    module: str
    exercises: list[str]
    only: list[str] | None = None


@dataclass
class Request:
    lessons: list[LessonRequest]
    directory: str
    seed: int = 0
    example: str | None = None
    max_examples: int | None = None
    timeout: float = 60.0
    devices: int | None = None
    platform: str | None = None
    grace: float = GRACE
    """Seconds past ``timeout`` before a worker stuck in compiled code is killed."""
    cache_dir: str | None = None
    """Where the worker keeps compiled programs between runs (None: no cache)."""


Listener = Callable[[dict], None]


def grade(request: Request, on_event: Listener | None = None) -> list[LessonResult]:
    """Grade every lesson of ``request``; results arrive through ``on_event`` too."""
    emit = on_event or (lambda e: None)
    results = {
        lr.lesson: LessonResult(lr.lesson, str(request.directory), seed=request.seed)
        for lr in request.lessons
    }
    todo = {lr.lesson: list(lr.only or lr.exercises) for lr in request.lessons}
    started = time.perf_counter()
    while any(todo.values()):
        pending = [
            {**asdict(lr), "only": todo[lr.lesson]} for lr in request.lessons if todo[lr.lesson]
        ]
        _run_worker(request, pending, results, todo, emit)
    for result in results.values():
        result.exercises.sort(key=lambda e: _order(request, e))
        if not result.duration:
            result.duration = time.perf_counter() - started
    return [results[lr.lesson] for lr in request.lessons]


def _order(request: Request, er: ExerciseResult) -> int:
    for lr in request.lessons:
        if lr.lesson == er.lesson and er.exercise in lr.exercises:
            return lr.exercises.index(er.exercise)
    return 0


def _run_worker(
    request: Request,
    pending: list[dict],
    results: dict[int, LessonResult],
    todo: dict[int, list[str]],
    emit: Listener,
) -> None:
    payload = {**asdict(request), "lessons": pending}
    read_fd, write_fd = os.pipe()
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader.worker", json.dumps(payload), "--events-fd", str(write_fd)],
        pass_fds=(write_fd,),
        stdin=subprocess.DEVNULL,
        stdout=sys.stderr,  # the student's prints show, but never mix with --json output
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # Ctrl-C reaches the parent, which stops the worker itself
    )
    os.close(write_fd)
    current: tuple[int, str] | None = None
    current_example: str | None = None
    deadline = time.monotonic() + STARTUP
    buffer = b""
    sel = selectors.DefaultSelector()
    sel.register(read_fd, selectors.EVENT_READ)
    stderr_tail = b""
    sel.register(proc.stderr, selectors.EVENT_READ)
    try:
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                _stop(proc)
                if current is None:  # stuck before any example: blame the first pending one
                    current = (pending[0]["lesson"], pending[0]["only"][0])
                _give_up(current, Status.TIMEOUT, current_example, results, todo, emit,
                         f"no result after {request.timeout:g} s; the grader stopped it")  # fmt: skip
                return
            events = sel.select(timeout=min(wait, 1.0))
            closed = False
            for key, _ in events:
                if key.fileobj is proc.stderr:
                    chunk = os.read(proc.stderr.fileno(), 65536)
                    stderr_tail = (stderr_tail + chunk)[-4000:]
                    if chunk and _verbose():
                        sys.stderr.buffer.write(chunk)
                    if not chunk:
                        sel.unregister(proc.stderr)
                    continue
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    closed = True
                    break
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    event = json.loads(line)
                    kind = event["type"]
                    if kind == "lesson_start":
                        results[event["lesson"]].devices = event["devices"]
                    elif kind == "example":
                        current = (event["lesson"], event["exercise"])
                        current_example = event["example"]
                        deadline = time.monotonic() + request.timeout + request.grace
                    elif kind == "exercise":
                        er = ExerciseResult.from_dict(event["result"])
                        _record(er, results, todo)
                        current, current_example = None, None
                        deadline = time.monotonic() + STARTUP
                    elif kind == "lesson_end":
                        results[event["lesson"]].duration += event["duration"]
                    emit(event)
            if closed:
                break
        code = proc.wait()
        if any(todo.get(p["lesson"]) for p in pending):  # the worker died mid-way
            if current is None:
                lesson = next(p["lesson"] for p in pending if todo.get(p["lesson"]))
                current = (lesson, todo[lesson][0])
            tail = stderr_tail.decode(errors="replace").strip().splitlines()[-8:]
            _give_up(current, Status.ERROR, current_example, results, todo, emit,
                     f"the grading process stopped (exit code {code}) while running this "
                     "exercise:\n" + "\n".join(tail))  # fmt: skip
    except BaseException:
        _stop(proc)
        raise
    finally:
        sel.close()
        os.close(read_fd)
        if proc.stderr:
            proc.stderr.close()
        if proc.poll() is None:
            _stop(proc)


def _verbose() -> bool:
    return os.environ.get("COURSE_DEBUG") == "1"


def _record(
    er: ExerciseResult, results: dict[int, LessonResult], todo: dict[int, list[str]]
) -> None:
    results[er.lesson].exercises.append(er)
    if er.exercise in todo.get(er.lesson, []):
        todo[er.lesson].remove(er.exercise)


def _give_up(
    current: tuple[int, str], status: Status, example: str | None,
    results: dict[int, LessonResult], todo: dict[int, list[str]], emit: Listener, why: str,
) -> None:  # fmt: skip
    lesson, exercise = current
    hint = (
        "Look for a loop that never ends: a while_loop whose condition stays true, or a "
        "Python loop over a value that never changes."
        if status == Status.TIMEOUT
        else None
    )
    er = ExerciseResult(lesson, exercise, status, example=example, error=why, hint=hint)
    _record(er, results, todo)
    emit({"type": "exercise", "lesson": lesson, "result": er.to_dict()})


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
