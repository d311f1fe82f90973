"""Start a grading worker (``python -m grader.sandbox.worker``); the standard
library only, so that ``course grade`` can start its worker before it imports
anything else (:func:`early`); what only a start needs (``subprocess``,
:mod:`grader.repo`) is imported by it, as every ``course`` command imports this.

A worker's own start (Python, then the grader's modules, before it reads its
request) takes about a third of a second; the ``course`` command's own imports
take about as long. Started as the command starts, the worker has them behind
it when the request comes: :func:`early` hands it to the command (``course.cli``
keeps it for the command's :class:`course.commands.common.App`), whose first
one-off grade gives it to :func:`grader.sandbox.runner.grade` (:meth:`Early.take`),
where the environment is still the one it was started with; otherwise it is
stopped, as it is at exit if nothing took it. It has read nothing until then, and
runs nothing of the student's: it waits for its request on stdin like any one-off
worker. No module keeps it: it is passed, like any other configuration.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

MARK = "COURSE_GRADING_SESSION"
"""Names the grade in the environment of every process its worker starts
(:func:`grader.sandbox.runner._stop_strays` finds them by it)."""
EARLY = "COURSE_EARLY_WORKER"
"""``0``: ``course grade`` starts its worker once the request is ready (to measure
what starting it early saves)."""


def spawn(marker: str, serve: dict[str, Any] | None = None) -> tuple[subprocess.Popen, int]:
    """A worker process (``serve``: one that stays, with that configuration) and
    the read end of its events channel."""
    import subprocess  # here: every ``course`` command imports this module, few start a worker

    from grader.repo import CODE

    read_fd, write_fd = os.pipe()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(CODE) + os.pathsep + env.get("PYTHONPATH", "")
    env[MARK] = marker  # inherited by all it starts
    argv = [sys.executable, "-m", "grader.sandbox.worker", "--events-fd", str(write_fd)]
    if serve is not None:
        import json

        argv += ["--serve", json.dumps(serve)]
    try:
        proc = subprocess.Popen(
            argv,
            pass_fds=(write_fd,),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,  # relayed, bounded, to our stderr: never mixes with --json
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own group: Ctrl-C reaches us, we stop the group whole
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return proc, read_fd


class Early:
    """A one-off worker started before its request was known (:func:`early`)."""

    def __init__(self, proc: subprocess.Popen, events: int, marker: str, environ: tuple):
        self.proc, self.events, self.marker, self.environ = proc, events, marker, environ
        self.taken = False
        """Handed to a grade (:meth:`take`): that grade stops it."""
        self.dropped = False

    def take(self) -> Early | None:
        """This worker, for a grade, if it is alive and the environment is the one
        it was started with (once only); else None (and it is stopped)."""
        if self.taken or self.dropped:
            return None
        if self.proc.poll() is None and self.environ == environment():
            self.taken = True
            return self
        self.drop()
        return None

    def drop(self) -> None:
        """Stop it, unless a grade took it (at exit, or when it cannot grade)."""
        if not self.taken and not self.dropped:
            self.dropped = True
            stop(self.proc)
            close_ends(self.proc, self.events)


def environment() -> tuple:
    """What a worker inherits, and what it cannot change once started."""
    return tuple(sorted(os.environ.items()))


def early(argv: list[str]) -> Early | None:
    """``course grade …`` (not its ``--help``): start its one-off worker now, and
    hand it back (stopped at exit unless a grade takes it); None for any other
    command, with ``COURSE_EARLY_WORKER=0``, or when it could not start."""
    words = argv[1:]
    if not words or words[0] != "grade" or {"-h", "--help"} & set(words):
        return None
    if os.environ.get(EARLY, "1") == "0":  # read here: the command line's edge
        return None
    import secrets

    marker = secrets.token_hex(8)
    try:
        proc, events = spawn(marker)
    except OSError:  # the grade starts one itself, and says why if it cannot
        return None
    found = Early(proc, events, marker, environment())
    atexit.register(found.drop)
    return found


def stop(proc: subprocess.Popen) -> int:
    """Kill the worker's whole process group (its threads, children and
    grandchildren too), even when the worker itself has exited; its exit code."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    return proc.wait()


def close_ends(proc: subprocess.Popen, events: int) -> None:
    """Close our ends of a worker's pipes and of its events channel."""
    with contextlib.suppress(OSError):
        os.close(events)
    for f in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError, ValueError):
            if f is not None:
                f.close()
