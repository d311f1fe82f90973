"""How a student's process is started (:func:`spawn`): ``python -m
grader.sandbox.student`` on two pipes, in the OS sandbox where one can be made
(:mod:`grader.sandbox.jail`), with the environment and the hidden folders every
student's process gets (a fork server's and a cluster's launcher's too:
:func:`start_jailed`, :func:`environment`, :func:`hidden_folders`), and how one
is stopped (:func:`close`) and asked why its sandbox could not be made
(:func:`setup_failure`). Which process is started when, and kept for whom, is
:mod:`grader.sandbox.spares`' (everything started ahead of need), above this
module; nothing here keeps a process.

The standard library only, with the sandbox: a grading worker starts its
student's process as soon as it has read its request, before it imports
numpy, jax or the engine (:mod:`grader.sandbox.isolation`, which talks to that
process, needs them), so that the two import at the same time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Any

from grader.config import Sandbox
from grader.repo import CODE
from grader.sandbox import jail


def hidden_folders(hidden: list[str] | tuple[str, ...] = ()) -> list[str]:
    """``hidden`` (a :class:`grader.sandbox.spares.Spares`' folders: a classroom's
    submissions and results, the workspace with the progress file, the compile
    cache), and every
    copy of the references this course knows of (``solutions/``, the grader's
    side ``grader/expected/``, the checkout's git repository and its other
    worktrees: :mod:`grader.sandbox.references`):
    what a student's process must not see (those of a course elsewhere,
    ``COURSE_ROOT``, are in ``hidden``: :class:`grader.sandbox.worker.Warm`)."""
    from grader.repo import shipped
    from grader.sandbox import references

    return [*hidden, str(shipped().solutions), *references.folders(CODE)]


Started = tuple[subprocess.Popen, Any, int]
"""A student's process as started: the process, the file its questions are
written to, the descriptor its answers are read from (the two sides of a
:class:`grader.sandbox.channel.Channel`)."""


def close(spare: tuple[subprocess.Popen, Any, int]) -> None:
    proc, out, fd = spare
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(OSError):
        out.close()
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    setup_failure(proc)  # its status pipe closed


def environment() -> tuple[dict[str, str], list[str]]:
    """The environment a student's process starts with (an allow-list: no secret
    of the caller's), and the paths it must read (Python, the course's code): a
    lone one's, the fork server's and a cluster's launcher's
    (:meth:`grader.sandbox.cluster.Cluster.start`)."""
    from grader.measure.devices import CPU_ONLY

    env = jail.environment(dict(os.environ))
    env["PYTHONPATH"] = str(CODE) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(CPU_ONLY)  # only the worker opens an accelerator (grader.measure.devices)
    readable = [str(CODE), *jail.python_paths(), *env["PYTHONPATH"].split(os.pathsep)]
    return env, readable


def start_jailed(
    module: str,
    args: list[str],
    directory: str,
    hidden: list[str] | tuple,
    pass_fds: tuple[int, ...],
    sandbox: Sandbox,
) -> subprocess.Popen:
    """``python -m module args…`` as the student's processes run, in the OS sandbox
    where one can be made (:mod:`grader.sandbox.jail`): it may write only to its
    scratch (``/tmp``, ``/dev/shm``), reads ``directory``, the submission's own
    folder, read-only, and sees nothing of :func:`hidden_folders` (with ``hidden``)
    but that folder; it holds ``pass_fds``. ``sandbox``: its settings (the worker's).
    The sandbox says whether it was made on a pipe of its own (:func:`setup_failure`)."""
    status_r, status_w = os.pipe() if jail.on(sandbox) else (None, None)
    env, readable = environment()
    try:
        proc = subprocess.Popen(
            jail.wrap(
                [sys.executable, "-m", module, *args],
                sandbox=sandbox,
                readable=readable,
                writable=[directory] if directory else [],
                hidden=hidden_folders(hidden),
                status=status_w,
            ),
            stdin=subprocess.DEVNULL,
            pass_fds=(*pass_fds, *([status_w] if status_w is not None else [])),
            env=env,
        )
    except BaseException:
        if status_r is not None:
            os.close(status_r)
        raise
    finally:
        if status_w is not None:
            os.close(status_w)
    proc.sandbox_status = status_r  # type: ignore[attr-defined]
    return proc


def spawn(
    directory: str = "", prepare: str = "", ahead: bool = False, hidden: list[str] | tuple = (),
    sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
) -> tuple[subprocess.Popen, Any, int]:  # fmt: skip
    """The student's process (:func:`start_jailed`). ``prepare``: the lesson whose
    spec (the grader's code) it imports before it says it is ready; ``ahead``:
    it also traces a first program then (nothing waits for it yet)."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    args = ["--fds", str(to_child_r), str(from_child_w)]
    args += ["--prepare", prepare] if prepare else []
    args += ["--ahead"] if ahead else []
    try:
        proc = start_jailed("grader.sandbox.student", args, directory, hidden,
                            (to_child_r, from_child_w), sandbox)  # fmt: skip
    finally:
        os.close(to_child_r)
        os.close(from_child_w)
    return proc, os.fdopen(to_child_w, "wb"), from_child_r


def setup_failure(proc: subprocess.Popen) -> str | None:
    """Why the sandbox of ``proc`` (ended) could not be made, as the sandbox
    said on its status pipe; None when it was made, or there is none. The
    pipe is closed (asked again: None). A process forked by a fork server
    (:class:`grader.sandbox.forks.Forked`) says it itself."""
    said = getattr(proc, "setup_failure", None)
    if callable(said):
        return said()
    fd = getattr(proc, "sandbox_status", None)
    proc.sandbox_status = None  # type: ignore[attr-defined]
    return jail.setup_failure(fd) if fd is not None else None
