"""Start a grading worker (``python -m grader.sandbox.worker``) and stop one; the
standard library only, so that ``course grade`` can start its worker before it
imports anything else (:func:`grader.sandbox.spares.early`, the early worker:
when it is started, who takes it and what ends it are
:mod:`grader.sandbox.spares`'); what only a start needs (``subprocess``,
:mod:`grader.repo`) is imported by it, as every ``course`` command imports this.

A worker's own start (Python, then the grader's modules, before it reads its
request) takes about a third of a second; the ``course`` command's own imports
take about as long.
"""

from __future__ import annotations

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


def environment() -> tuple:
    """What a worker inherits, and what it cannot change once started."""
    return tuple(sorted(os.environ.items()))


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
