"""Grade in a worker process, with a time limit per example.

The public entry point is :func:`grade`. It runs ``python -m grader.worker``
(:mod:`grader.protocol` says what they exchange). The worker interrupts
Python-level hangs itself; a compiled loop that never ends is caught here:
when no event arrives within the limit plus a grace period, the worker is
killed, the exercise is marked as timed out, and a fresh worker grades the
exercises that remain.

This module does not import jax.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from grader.protocol import (
    Event,
    ExampleStarted,
    ExerciseGraded,
    LessonFinished,
    LessonJob,
    LessonStarted,
    Request,
    decode_event,
    unfinished,
)
from grader.repo import CODE
from grader.results import ExerciseResult, LessonResult, Status

GRACE = 5.0
"""Seconds past the per-example limit before a worker stuck in compiled code is killed."""
STARTUP = 120.0
"""Seconds a worker may take to import jax and reach its first example."""
STDERR_TAIL = 4000
"""Bytes of the worker's stderr kept to explain a crash."""

Listener = Callable[[Event], None]


def grade(
    request: Request, on_event: Listener | None = None, *, grace: float = GRACE
) -> list[LessonResult]:
    """Grade every lesson of ``request`` in worker processes; one result per lesson.

    Events (:data:`grader.protocol.Event`) reach ``on_event`` as they happen:
    ``LessonStarted``, ``ExampleStarted``, ``ExerciseGraded`` (also for an
    exercise that timed out or crashed its worker) and ``LessonFinished``.
    Results come back in the request's order of lessons and exercises, with
    statuses and evidence only: titles, points and bonus flags are the
    caller's (the course registry scores results). A stuck worker is killed ``grace`` seconds after the
    per-example limit. On KeyboardInterrupt the worker is stopped and the
    interrupt re-raised. Safe to call from any process and thread that may
    start subprocesses; it never imports jax.
    """
    emit = on_event or (lambda e: None)
    results = {
        job.lesson: LessonResult(job.lesson, request.directory, seed=request.seed)
        for job in request.lessons
    }
    todo = {job.lesson: list(job.exercises) for job in request.lessons}
    started = time.perf_counter()

    def handle(event: Event) -> None:
        result = results[event.lesson]
        if isinstance(event, LessonStarted):
            result.devices = event.devices
        elif isinstance(event, ExerciseGraded):
            result.exercises.append(event.result)
            if event.result.exercise in todo[event.lesson]:
                todo[event.lesson].remove(event.result.exercise)
        elif isinstance(event, LessonFinished):
            result.duration += event.duration
        emit(event)

    while any(todo.values()):
        jobs = tuple(
            replace(job, exercises=tuple(todo[job.lesson]))
            for job in request.lessons
            if todo[job.lesson]
        )
        WorkerSession(replace(request, lessons=jobs), grace).run(handle)
    for job in request.lessons:
        result = results[job.lesson]
        result.exercises.sort(key=lambda e: _position(job, e))
        if not result.duration:
            result.duration = time.perf_counter() - started
    return [results[job.lesson] for job in request.lessons]


def _position(job: LessonJob, er: ExerciseResult) -> int:
    return job.exercises.index(er.exercise) if er.exercise in job.exercises else 0


class WorkerSession:
    """One worker process grading ``request``: its deadline, the exercise and
    example running now, the exercises it has yet to grade, and the tail of
    its stderr.

    :meth:`run` passes the worker's events on until it exits. When it exits
    or is stopped with exercises left, the one running (else the next) gets
    an unfinished result; the caller starts a fresh session for the rest.
    """

    def __init__(self, request: Request, grace: float = GRACE):
        self.request = request
        self.grace = grace
        self.remaining = [(job.lesson, name) for job in request.lessons for name in job.exercises]
        """(lesson, exercise) not graded yet, in order."""
        self.current: tuple[int, str] | None = None
        self.example: str | None = None
        """The example running now, in ``--example`` form."""
        self.deadline = time.monotonic() + STARTUP
        self.stderr_tail = b""

    def run(self, emit: Listener) -> None:
        read_fd, write_fd = os.pipe()
        proc = self._start(write_fd)
        os.close(write_fd)
        sel = selectors.DefaultSelector()
        sel.register(read_fd, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        try:
            if not self._follow(sel, read_fd, proc, emit):
                _stop(proc)
                self._give_up(emit, Status.TIMEOUT, f"no result after {self.request.timeout:g} s; "
                              "the grader stopped it")  # fmt: skip
                return
            code = proc.wait()
            if self.remaining:  # the worker died mid-way
                tail = self.stderr_tail.decode(errors="replace").strip().splitlines()[-8:]
                self._give_up(emit, Status.ERROR, f"the grading process stopped (exit code "
                              f"{code}) while running this exercise:\n" + "\n".join(tail))  # fmt: skip
        finally:
            sel.close()
            os.close(read_fd)
            proc.stderr.close()
            _stop(proc)

    def _start(self, events_fd: int) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(CODE) + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader.worker", "--events-fd", str(events_fd)],
            pass_fds=(events_fd,),
            stdin=subprocess.PIPE,
            stdout=sys.stderr,  # the student's prints show, but never mix with --json output
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # Ctrl-C reaches the parent, which stops the worker itself
        )
        proc.stdin.write(self.request.encode().encode())
        proc.stdin.close()  # the student's code reading stdin gets end-of-file
        return proc

    def _follow(self, sel: selectors.BaseSelector, read_fd: int, proc: subprocess.Popen,
                emit: Listener) -> bool:  # fmt: skip
        """Pass events on until the worker closes its end (True) or a deadline passes (False)."""
        buffer = b""
        while True:
            wait = self.deadline - time.monotonic()
            if wait <= 0:
                return False
            for key, _ in sel.select(timeout=min(wait, 1.0)):
                if key.fileobj is proc.stderr:
                    self._read_stderr(sel, proc)
                    continue
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    return True
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    event = decode_event(line)
                    self._note(event)
                    emit(event)

    def _read_stderr(self, sel: selectors.BaseSelector, proc: subprocess.Popen) -> None:
        chunk = os.read(proc.stderr.fileno(), 65536)
        self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        if chunk and os.environ.get("COURSE_DEBUG") == "1":
            sys.stderr.buffer.write(chunk)
        if not chunk:
            sel.unregister(proc.stderr)

    def _note(self, event: Event) -> None:
        """Move the deadline and the bookkeeping on with the worker's progress."""
        if isinstance(event, ExampleStarted):
            self.current, self.example = (event.lesson, event.exercise), event.example
            self.deadline = time.monotonic() + self.request.timeout + self.grace
        elif isinstance(event, ExerciseGraded):
            done = (event.lesson, event.result.exercise)
            if done in self.remaining:
                self.remaining.remove(done)
            self.current, self.example = None, None
            self.deadline = time.monotonic() + STARTUP

    def _give_up(self, emit: Listener, status: Status, why: str) -> None:
        """Blame the exercise running (or, stuck before any example, the next one)."""
        lesson, exercise = self.current or self.remaining[0]
        result = unfinished(lesson, exercise, status, why, example=self.example)
        self._note(ExerciseGraded(lesson, result))
        emit(ExerciseGraded(lesson, result))


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()
