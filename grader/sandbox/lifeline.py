"""What the worker and the student's process both need about their parent,
below both: neither imports the other for it."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36


def prctl(option: int, value: int) -> None:
    """Linux's ``prctl(option, value)`` for this process; elsewhere, or where it
    fails, a no-op (each caller's guarantee is then the sandbox's, or none)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def undumpable() -> None:
    """Linux: no process of the same user may read this one's memory
    (``/proc/<pid>/mem``), open its descriptors through ``/proc/<pid>/fd`` or
    attach a debugger to it (``prctl(PR_SET_DUMPABLE, 0)``). A process the
    student's code runs in is started afresh (exec) and stays dumpable; root keeps
    its rights over every process. Elsewhere: a no-op."""
    prctl(PR_SET_DUMPABLE, 0)


def watch_parent() -> None:
    """Leave when the parent process is gone (``course`` killed with SIGKILL,
    say), instead of grading on for no one."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()
