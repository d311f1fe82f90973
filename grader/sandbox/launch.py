"""Start a grading worker (``python -m grader.sandbox.worker``); the standard
library only, so that ``course grade`` can start its worker before it imports
anything else (:func:`early`); what only a start needs (``subprocess``,
:mod:`grader.repo`) is imported by it, as every ``course`` command imports this.

A worker's own start (Python, then the grader's modules, before it reads its
request) takes about a third of a second; the ``course`` command's own imports
take about as long. Started as the command starts, the worker has them behind
it when the request comes: :mod:`grader.sandbox.runner` takes the early worker
for the command's first one-off grade (:func:`take_early`), where the
environment is still the one it was started with; otherwise it is stopped, as it
is at exit if nothing took it. It has read nothing until then, and runs nothing
of the student's: it waits for its request on stdin like any one-off worker.
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
    """A one-off worker started before its request was known."""

    def __init__(self, proc: subprocess.Popen, events: int, marker: str, environ: tuple):
        self.proc, self.events, self.marker, self.environ = proc, events, marker, environ


_early: list[Early] = []


def environment() -> tuple:
    """What a worker inherits, and what it cannot change once started."""
    return tuple(sorted(os.environ.items()))


def early(argv: list[str]) -> None:
    """``course grade …`` (not its ``--help``): start its one-off worker now."""
    words = argv[1:]
    if not words or words[0] != "grade" or {"-h", "--help"} & set(words):
        return
    if _early or os.environ.get(EARLY, "1") == "0":
        return
    import secrets

    marker = secrets.token_hex(8)
    try:
        proc, events = spawn(marker)
    except OSError:  # the grade starts one itself, and says why if it cannot
        return
    _early.append(Early(proc, events, marker, environment()))
    atexit.register(drop)


def take_early() -> Early | None:
    """The worker :func:`early` started, if it is alive and the environment is
    the one it was started with; else None (and it is stopped)."""
    if not _early:
        return None
    found = _early.pop()
    if found.proc.poll() is None and found.environ == environment():
        return found
    _stop(found)
    return None


def drop() -> None:
    """Stop the early worker nothing took (at exit)."""
    while _early:
        _stop(_early.pop())


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


def _stop(found: Early) -> None:
    stop(found.proc)
    close_ends(found.proc, found.events)
