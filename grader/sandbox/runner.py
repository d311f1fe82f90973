"""Grade in a worker process, with a time limit per example.

The public entry point is :func:`grade`. It runs ``python -m grader.sandbox.worker``
(:mod:`grader.sandbox.protocol` says what they exchange). The worker interrupts
Python-level hangs itself; a compiled loop that never ends is caught here:
when no event arrives within the limit plus a grace period, the worker is
killed, the exercise is marked as timed out, and a fresh worker grades the
exercises that remain.

Whatever the student's code does, :func:`grade` returns within its
deadlines and leaves no process behind: the worker runs in a process group
of its own that is killed whole when its session ends (threads, forked
children, an ``atexit`` handler that never returns); its stdout and stderr
are drained while it runs (a bounded amount of stdout is relayed to our
stderr, the tail of stderr is kept for error messages); a line on the
events channel that is not an event is ignored with a warning, and so is
any event the request did not ask for.

This module does not import jax.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from grader.results import ExerciseResult, LessonResult, Status
from grader.sandbox import launch
from grader.sandbox.channel import Channel
from grader.sandbox.lifeline import undumpable
from grader.sandbox.protocol import (
    BadEvent,
    Event,
    ExampleStarted,
    ExerciseGraded,
    GraderFailed,
    ImportStarted,
    LessonFinished,
    LessonJob,
    LessonStarted,
    Rejected,
    Request,
    Served,
    decode_event,
    unfinished,
    verify,
)

if TYPE_CHECKING:
    from grader.sandbox.spares import Early

GRACE = 5.0
"""Seconds past the per-example limit before a worker stuck in compiled code is killed."""
STARTUP = 120.0
"""Seconds a worker may take to import jax and reach its first example."""
EXIT_WAIT = 5.0
"""Seconds a worker may take to exit once it has closed its events channel."""
STDERR_TAIL = 4000
"""Bytes of the worker's stderr kept to explain an error or a crash."""
STDOUT_RELAY = 64 * 1024
"""Bytes of the student's printed output relayed per worker; the rest is counted, not shown."""
EVENT_LINE = 8 * 1024 * 1024
"""Longest events line accepted; a longer one is dropped as garbage."""
SHOWN_LINES = 8
"""Lines of the student's stderr shown with an error."""

FORGED = (
    "Something other than the grader wrote results on the grader's events channel while "
    "your code ran; its results are not trusted. Grade code that does not."
)

Listener = Callable[[Event], None]


class RequestRejected(Exception):
    """The worker refused the request as asked (a usage error); ``str()`` says why."""


class GraderCrashed(Exception):
    """The grader's own code failed outside any exercise; ``str()`` has the details."""


def grade(
    request: Request,
    on_event: Listener | None = None,
    *,
    grace: float = GRACE,
    worker: Worker | None = None,
    early: Early | None = None,
    debug: bool = False,
) -> list[LessonResult]:
    """Grade every lesson of ``request`` in worker processes; one result per lesson.

    Events (:data:`grader.sandbox.protocol.Event`) reach ``on_event`` as they happen:
    ``LessonStarted``, ``ImportStarted``, ``ExampleStarted``, ``ExerciseGraded``
    (also for an exercise that timed out or crashed its worker) and
    ``LessonFinished``. Results come back in the request's order of lessons
    and exercises, with statuses and evidence only: titles, points and bonus
    flags are the caller's (the course registry scores results). A stuck
    worker is killed ``grace`` seconds after the per-example limit.

    Raises :class:`RequestRejected` when the worker refuses the request
    (before any exercise is graded) and :class:`GraderCrashed` when the
    grader's own code fails outside an exercise. On KeyboardInterrupt (or any
    exception, e.g. raised by a signal handler) the worker group is stopped
    and the exception re-raised. Safe to call from any process and thread
    that may start subprocesses; it never imports jax.

    ``worker``: a :class:`Worker` kept between calls (``course watch``, the
    notebook): its process grades when it can, and is kept for the next call
    when nothing went wrong (else a fresh one grades, and is kept).

    ``early``: the one-off worker ``course grade`` started as it started
    (:func:`grader.sandbox.spares.early`): the first worker, if it can grade
    ``request``.

    ``debug``: the worker's stderr is shown as it comes (``COURSE_DEBUG=1``, read
    by the command that grades).
    """
    emit = on_event or (lambda e: None)
    undumpable()  # the events key lives here too
    graded: dict[int, list[ExerciseResult]] = {job.lesson: [] for job in request.lessons}
    described = {job.lesson: "" for job in request.lessons}
    sandboxed = {job.lesson: "" for job in request.lessons}
    took = {job.lesson: 0.0 for job in request.lessons}
    todo = {job.lesson: list(job.exercises) for job in request.lessons}
    started = time.perf_counter()

    def handle(event: Event) -> None:
        if isinstance(event, LessonStarted):
            described[event.lesson] = event.devices
            sandboxed[event.lesson] = event.sandbox
        elif isinstance(event, ExerciseGraded):
            graded[event.lesson].append(event.result)
            todo[event.lesson].remove(event.result.exercise)
        elif isinstance(event, LessonFinished):
            took[event.lesson] += event.duration
        emit(event)

    while any(todo.values()):
        jobs = tuple(
            replace(job, exercises=tuple(todo[job.lesson]))
            for job in request.lessons
            if todo[job.lesson]
        )
        WorkerSession(replace(request, lessons=jobs), grace, worker, early, debug).run(handle)
        early = None  # taken, or stopped: a fresh worker grades what is left
    return [
        LessonResult(
            job.lesson,
            request.directory,
            tuple(sorted(graded[job.lesson], key=lambda e, job=job: _position(job, e))),
            described[job.lesson],
            request.seed,
            took[job.lesson] or time.perf_counter() - started,
            sandboxed[job.lesson],
        )  # fmt: skip
        for job in request.lessons
    ]


def _position(job: LessonJob, er: ExerciseResult) -> int:
    return job.exercises.index(er.exercise) if er.exercise in job.exercises else 0


class WorkerSession:
    """One worker process grading ``request``: its deadline, the exercise and
    example running now, the exercises it has yet to grade, and what it wrote.

    :meth:`run` passes the worker's events on until it exits. When it exits
    or is stopped with exercises left, the one running (else the next) gets
    an unfinished result; the caller starts a fresh session for the rest.
    Events the request did not ask for (an exercise graded twice or never
    asked, an unknown lesson) are dropped with a warning.
    """

    def __init__(self, request: Request, grace: float = GRACE, warm: Worker | None = None,
                 early: Early | None = None, debug: bool = False):  # fmt: skip
        self.request = replace(request, key=secrets.token_hex(16))
        self.marker = secrets.token_hex(8)
        """Marks every process this grade starts (see _stop_strays); no part of the key."""
        self.warm = warm
        self.early = early
        self.debug = debug
        """The worker's stderr is shown as it comes."""
        self.served = False
        """The (serving) worker said it is done with the request."""
        self.sandboxes: set[str] = set()
        """What the lessons graded said of the sandbox (``on``, ``off: why``)."""
        self.received = 0
        """Events accepted so far: the place the next one must be signed for."""
        self.forged: str | None = None
        """Why this worker's results are not trusted, once a forged event arrived."""
        self.grace = grace
        self.remaining = [(job.lesson, name) for job in request.lessons for name in job.exercises]
        """(lesson, exercise) not graded yet, in order."""
        self.current: tuple[int, str] | None = None
        self.importing: int | None = None
        """The lesson whose module is being imported now."""
        self.example: str | None = None
        """The example running now, in ``--example`` form."""
        self.deadline = time.monotonic() + STARTUP
        self.stderr_tail = b""
        self.stderr_since = 0
        """Bytes of stderr written since the running example started (for its error)."""
        self.relayed = 0
        self.withheld = 0
        self.warned = 0

    def run(self, emit: Listener) -> None:
        if self.warm is not None:
            live = self.warm.take(self.request) or self.warm.launch(self.request, self.marker)
        else:
            live = _take_early(self.request, self.early) or _launch(
                self.request, self.marker, serve=False
            )
        self.marker = live.marker
        proc, read_fd = live.proc, live.events
        try:
            Channel(proc.stdin).send_line(self.request.encode().encode() + b"\n")
            if self.warm is None:
                proc.stdin.close()  # a one-off worker: end-of-file ends its request
        except OSError:  # it died at once; its exit code tells the rest
            pass
        sel = selectors.DefaultSelector()
        sel.register(read_fd, selectors.EVENT_READ, "events")
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        kept = False
        try:
            finished = self._follow(sel, read_fd, proc, emit)
            if self.warm is not None and self._reusable(live):
                kept = self.warm.keep(live, self.request, reuse=self.sandboxes == {"on"})
                return
            code = launch.stop(proc)
            if not self.remaining:
                return
            if not finished:
                self._give_up(emit, Status.TIMEOUT, f"no result after {self.request.timeout:g} s; "
                              "the grader stopped it")  # fmt: skip
            else:  # the worker died mid-way
                self._give_up(emit, Status.ERROR, f"the grading process stopped (exit code "
                              f"{code}) while running this exercise")  # fmt: skip
        finally:
            sel.close()
            if not kept:
                live.close()
            self._report_withheld()

    def _reusable(self, live: Live) -> bool:
        """May this worker grade again? Only when it said it was done, nothing on
        its channel was odd, and no process this grade started outlived it (see
        :class:`Worker` for what the student's process shares with it)."""
        why = (
            "it did not say it was done" if not self.served
            else "exercises were left" if self.remaining
            else f"a forged event ({self.forged})" if self.forged
            else "it wrote unexpected events" if self.warned
            else "it had exited" if live.proc.poll() is not None
            else "a process it started outlived the grade"
            if outlived(self.marker, keep=live.proc.pid) else None
        )  # fmt: skip
        if self.warm is not None:
            self.warm.unkept = why
        return why is None

    def _follow(self, sel: selectors.BaseSelector, read_fd: int, proc: subprocess.Popen,
                emit: Listener) -> bool:  # fmt: skip
        """Pass events on until the worker is done (True) or a deadline passes (False).

        Done: it closed the events channel and exited, or exited (a child it
        forked may hold the channel open), or every exercise is graded and
        it does not exit on its own (a thread or an ``atexit`` that never ends).
        """
        events = Channel(limit=EVENT_LINE)
        exit_by: float | None = None
        while True:
            now = time.monotonic()
            if exit_by is None and not self.remaining:
                exit_by = now + EXIT_WAIT
            if self.served or (exit_by is not None and now >= exit_by):
                return True
            if now >= self.deadline:
                return False
            wait = min(self.deadline, exit_by or self.deadline) - now
            for key, _ in sel.select(timeout=min(wait, 0.5 if exit_by is None else 0.05)):
                chunk = os.read(key.fd, 65536)
                if key.data == "stdout":
                    self._relay(chunk)
                elif key.data == "stderr":
                    self._keep_stderr(chunk)
                elif chunk:
                    lines, cut = events.feed(chunk)
                    self._events(lines, emit)
                    if cut:
                        self._warn(f"ignored an events line longer than {EVENT_LINE} bytes")
                if not chunk:
                    sel.unregister(key.fileobj)
                    if key.data == "events" and exit_by is None:
                        exit_by = time.monotonic() + EXIT_WAIT
            if self.served:
                _drain(sel, self)
                return True
            if proc.poll() is not None and not _readable(sel):
                return True

    def _events(self, lines: list[bytes], emit: Listener) -> None:
        """Pass on the events of ``lines`` (signed, whole lines), up to :class:`Served`."""
        for signed in lines:
            line = verify(self.request.key, self.received, signed)
            if line is None:
                self._unsigned(signed)
                continue
            self.received += 1
            try:
                event = decode_event(line)
            except BadEvent as exc:  # signed by the grader, yet not an event: a bug here
                self._warn(f"ignored a line on the events channel that is not an event ({exc})")
                continue
            if isinstance(event, Served):
                self.served = True
                return  # nothing follows it
            if self._expected(event):
                emit(self._note(event))

    def _unsigned(self, line: bytes) -> None:
        """A line the grader did not sign: garbage is ignored; an event (with or
        without a made-up signature) is a forgery, and this worker untrusted."""
        for candidate in (line, line.partition(b" ")[2]):
            with contextlib.suppress(BadEvent):
                decode_event(candidate)
                self._warn("ignored an event the grader did not sign; this worker's results "
                           "are marked as not trusted")  # fmt: skip
                self.forged = FORGED
                return
        self._warn("ignored a line on the events channel that is not an event")

    def _expected(self, event: Event) -> bool:
        """Is ``event`` one this session can take (else warn and drop it)?"""
        lessons = {job.lesson for job in self.request.lessons}
        if isinstance(event, Rejected):
            raise RequestRejected(event.message)
        if isinstance(event, GraderFailed):
            raise GraderCrashed(event.message)
        if event.lesson not in lessons:
            why = f"lesson {event.lesson} was not asked for"
        elif isinstance(event, ExerciseGraded) and (
            (event.lesson, event.result.exercise) not in self.remaining
        ):
            why = f"{event.lesson}.{event.result.exercise} was not asked for, or already graded"
        else:
            return True
        self._warn(f"ignored an event from the grading process: {why}")
        return False

    def _relay(self, chunk: bytes) -> None:
        """The student's prints reach our stderr, up to STDOUT_RELAY bytes per worker."""
        room = max(0, STDOUT_RELAY - self.relayed)
        if room:
            _write_stderr(chunk[:room])
        self.relayed += min(room, len(chunk))
        self.withheld += max(0, len(chunk) - room)

    def _report_withheld(self) -> None:
        if self.withheld:
            _write_stderr(
                f"\n[… {self.withheld} more bytes of output from your code not shown]\n".encode()
            )

    def _keep_stderr(self, chunk: bytes) -> None:
        self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        self.stderr_since += len(chunk)
        if chunk and self.debug:
            _write_stderr(chunk)

    def _tail(self, recent: bool = True) -> str:
        """The last lines of stderr: all kept, or only those since the running example started."""
        if recent and not self.stderr_since:
            return ""
        data = self.stderr_tail[-self.stderr_since :] if recent else self.stderr_tail
        return "\n".join(data.decode(errors="replace").strip().splitlines()[-SHOWN_LINES:])

    def _warn(self, message: str) -> None:
        if self.warned < 5:  # a flood of garbage is one problem, not a flood of warnings
            _write_stderr(f"warning: {message}\n".encode())
        self.warned += 1

    def _note(self, event: Event) -> Event:
        """Move the deadline and the bookkeeping on with the worker's progress; the
        event as passed on (a result made anew where this session knows more)."""
        limit = self.request.timeout + self.grace
        if isinstance(event, LessonStarted):
            self.sandboxes.add(event.sandbox)
        elif isinstance(event, ImportStarted):
            self.importing = event.lesson
            self.deadline = time.monotonic() + limit
        elif isinstance(event, ExampleStarted):
            self.current, self.example = (event.lesson, event.exercise), event.example
            self.importing = None
            self.stderr_since = 0
            self.deadline = time.monotonic() + limit
        elif isinstance(event, ExerciseGraded):
            done = (event.lesson, event.result.exercise)
            self.remaining.remove(done)
            er = event.result
            if self.forged:
                er = replace(er, status=Status.ERROR, error=self.forged, checks=(), explanation=())
            if er.status in (Status.ERROR, Status.TIMEOUT) and (said := self._tail()):
                er = replace(
                    er,
                    error=f"{er.error or ''}\n\nThe last lines your code wrote to stderr:\n{said}",
                )
            if er is not event.result:
                event = replace(event, result=er)
            self.current, self.example, self.importing = None, None, None
            self.stderr_since = 0
            self.deadline = time.monotonic() + STARTUP
        return event

    def _give_up(self, emit: Listener, status: Status, why: str) -> None:
        """Blame the exercise running (or, stuck before any example, the next one;
        stuck importing a module, every exercise of its lesson)."""
        if self.current:
            blamed = [self.current]
        elif self.importing is not None:
            blamed = [r for r in self.remaining if r[0] == self.importing]
            why = f"importing the module did not finish: {why}"
        else:
            blamed = self.remaining[:1]
        for lesson, exercise in blamed:
            result = unfinished(lesson, exercise, status, why, example=self.example)
            emit(self._note(ExerciseGraded(lesson, result)))


class Live:
    """A worker process and the read end of its events channel."""

    def __init__(self, proc: subprocess.Popen, events: int, marker: str, fits: tuple):
        self.proc, self.events, self.marker, self.fits = proc, events, marker, fits
        """``fits``: what it was started for (:func:`_fits`)."""
        self.closed = False

    def close(self) -> None:
        """Stop the worker's group and whatever it started; close our ends (once:
        a descriptor number closed twice may be another worker's by then)."""
        if self.closed:
            return
        self.closed = True
        launch.stop(self.proc)
        _stop_strays(self.marker)
        launch.close_ends(self.proc, self.events)


def _fits(request: Request) -> tuple:
    """What a worker is started with and cannot change afterwards: its devices,
    its compilation cache, the environment it inherited."""
    return (request.devices, request.platform, request.cache_dir, launch.environment())


def _launch(request: Request, marker: str, *, serve: bool) -> Live:
    """Start a worker for requests like ``request`` (``serve``: one that stays)."""
    config = None
    if serve:
        first = request.lessons[0].module if request.lessons else ""
        config = {
            "devices": request.devices, "platform": request.platform,
            "cache_dir": request.cache_dir, "directory": request.directory, "module": first,
            "hidden": list(request.hidden),
        }  # fmt: skip
    _adopt_orphans()
    proc, read_fd = launch.spawn(marker, config)
    return Live(proc, read_fd, marker, _fits(request))


def _take_early(request: Request, early: Early | None) -> Live | None:
    """The one-off worker ``course grade`` started as it started
    (:func:`grader.sandbox.spares.early`), if it can grade ``request``."""
    found = early.take() if early is not None else None
    if found is None:
        return None
    _adopt_orphans()  # before it starts anything
    return Live(found.proc, found.events, found.marker, _fits(request))


class Worker:
    """A grading worker kept between grades (``course watch``, the notebook), so
    that a re-grade finds jax imported, the devices up, the compilation cache
    open and a fresh student's process started ahead.

    Each grade still gets its own events key and its own data salt (drawn in the
    worker per request), and runs the student's code in a student's process of
    its own. That process shares nothing with the worker but the two pipes
    between them: it is started afresh (exec) without the worker's other
    descriptors, and the worker is not dumpable (its memory and descriptors are
    closed to it under ``/proc``); with the OS sandbox on it also cannot see,
    signal or trace the worker (a PID namespace of its own) and dies with
    whatever it started. A worker is therefore kept only after a grade that
    ended cleanly (it said it was done; no forged or odd line on its channel;
    no process of the grade outlived it) with the sandbox on. Otherwise it is
    stopped: after a hang or a crash the next grade starts a fresh one; after a
    clean grade without the sandbox, a fresh one is started at once, before
    any more of the student's code runs, so the next grade still finds one ready.
    """

    def __init__(self) -> None:
        self._live: Live | None = None
        self.started = 0
        """Worker processes started for this object so far."""
        self.unkept: str | None = None
        """Why the last grade's worker was not kept (None: it was, or none ran)."""
        self.next_seed: int | None = None
        """The fresh seed the next recorded grade draws from, told to the kept worker
        with the grade before (``Request.next_seed``), which draws its examples while
        it waits; None: a fresh one is drawn then."""

    @property
    def pid(self) -> int | None:
        """The kept worker's process id (None when none is kept)."""
        return self._live.proc.pid if self._live is not None else None

    @property
    def live(self) -> Live | None:
        """The kept worker: its process and events channel (None when none is kept)."""
        return self._live

    def take(self, request: Request) -> Live | None:
        """The kept worker, if it is alive and can grade ``request``; else None
        (and any kept one is stopped)."""
        live, self._live = self._live, None
        if live is not None and live.proc.poll() is None and live.fits == _fits(request):
            return live
        if live is not None:
            live.close()
        return None

    def launch(self, request: Request, marker: str) -> Live:
        """A fresh serving worker for requests like ``request``."""
        self.started += 1
        return _launch(request, marker, serve=True)

    def keep(self, live: Live, request: Request, *, reuse: bool) -> bool:
        """After a clean grade of ``request``: keep ``live`` (``reuse``) or replace
        it with a fresh one started now; whether ``live`` was kept."""
        if reuse:
            self._live = live
            return True
        live.close()
        self._live = self.launch(request, secrets.token_hex(8))
        return False

    def close(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drain(sel: selectors.BaseSelector, session: WorkerSession) -> None:
    """Take in what the worker's stdout and stderr hold now (a serving worker
    stays: what its grade printed belongs to that grade)."""
    for _ in range(64):
        ready = [k for k, _ in sel.select(timeout=0) if k.data != "events"]
        if not ready:
            return
        for key in ready:
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
            elif key.data == "stdout":
                session._relay(chunk)
            else:
                session._keep_stderr(chunk)


def _readable(sel: selectors.BaseSelector) -> bool:
    return bool(sel.get_map()) and bool(sel.select(timeout=0))


def _write_stderr(data: bytes) -> None:
    try:
        sys.stderr.buffer.write(data)
        sys.stderr.flush()
    except (AttributeError, ValueError, OSError):  # a replaced or closed stderr (tests, notebooks)
        with contextlib.suppress(Exception):
            sys.stderr.write(data.decode(errors="replace"))


MARK = launch.MARK
"""Environment variable naming the session a worker (and whatever it starts) belongs to."""


def _adopt_orphans() -> None:
    """Become the parent of orphans among our descendants (Linux), so that a
    process the student's code started and detached with ``setsid()`` (out of
    the worker's group) is still ours to stop. Elsewhere: a no-op."""
    from grader.sandbox.lifeline import PR_SET_CHILD_SUBREAPER, prctl

    prctl(PR_SET_CHILD_SUBREAPER, 1)


DYING = 5.0
"""Seconds a process of a worker's may take to end on its own once found
outside it (:func:`outlived`): a JAX process its parent has just killed may still
be ending when looked at; one that stays is killed after it, as before."""


def outlived(session: str, keep: int | None = None, grace: float = DYING) -> bool:
    """Whether a process ``session``'s worker started outlived its grade: one
    that is our child now (adopted: its parent ended) and still there after
    ``grace`` seconds; those are killed. One its parent had just killed when we
    looked ends within the grace on its own, and does not count (it was seen,
    adopted on its way out, under load)."""
    marker = f"{MARK}={session}\0".encode()
    deadline = time.monotonic() + grace
    while any(pid != keep and marker in _environ(pid) for pid in _children()):
        if time.monotonic() >= deadline:
            return _stop_strays(session, keep)
        time.sleep(0.02)
    return False


def _stop_strays(session: str, keep: int | None = None) -> bool:
    """Kill and reap our children started by ``session``'s worker that outlived it
    (but for ``keep``, a worker kept for the next grade); whether there were any."""
    marker = f"{MARK}={session}\0".encode()
    found = False
    for _ in range(10):  # a stray's own children are adopted once it dies: repeat
        strays = [pid for pid in _children() if pid != keep and marker in _environ(pid)]
        if not strays:
            return found
        found = True
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
    return found


def _children() -> list[int]:
    me, found = os.getpid(), []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with (
                    contextlib.suppress(OSError, IndexError, ValueError),
                    open(f"/proc/{entry.name}/stat") as f,
                ):
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        found.append(int(entry.name))
    return found


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""
