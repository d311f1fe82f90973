"""A fork server for the student's processes of one grade of several lessons
(``course grade --all``, a classroom's submission): jax imported once, each
lesson's process forked from it.

A fresh student's process spends about 0.9 CPU-seconds before it can answer
(Python, numpy, jax, hypothesis, the engine); forked from a process that has
imported them, about 0.17 (its devices, the lesson's spec, the module). A grade
of 14 lessons starts 14 of them on two cores, so most of that time was the
grade's.

**What runs where.** :class:`ForkServer` (the worker's side) starts
``python -m grader.sandbox.forks`` in one OS sandbox (:mod:`grader.sandbox.jail`),
made as a lone student's process's is, for the submission's folder: the server
is PID 1 there. It imports what every student's process needs, and never the
student's code; then, asked on its control channel (a ``SOCK_SEQPACKET`` pair:
one question a message, the new process's two pipes passed with it), forks a
child that runs :func:`grader.sandbox.student.main` on those pipes, as a process
started afresh would: its own session, no other descriptor, dumpable again,
killed when the server ends.

**What a lesson's process may do to another's.** They share the sandbox, so a
lesson's code can see the server and the process of the lesson started ahead,
and signal that one. Both run the same student's code from the same folder,
which each may write: nothing one does to the other is beyond what the student
can write in the other's file. The server does not answer to them: PID 1 of a
namespace gets no signal it has no handler for from inside it, and it is not
dumpable (not traced, its memory not read). The grade's other submissions, the
worker and ``course`` stay out of reach as before: a fork server serves one
submission, in a sandbox of its own.

**What a lesson's process leaves behind ends with it.** When one ends (or is
killed: :meth:`Forked.kill`) the server kills its process group, and kills
every process that became its own child since (the server is the sandbox's init
and a subreaper: orphans come to it) and that is not a lesson's process.

The worker trusts nothing the server says beyond a process's exit status (used
for the message when one dies). Started only for a grade of two lessons or more,
on Linux (the student's processes run jax on the CPU only: no accelerator's
runtime is started in a forked process); ``COURSE_FORK_SERVER=0`` turns it
off. A server that ends, or cannot be made, is not used again: the lessons
after it start their processes afresh (:func:`grader.sandbox.processes.spawn`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any

from grader.sandbox.lifeline import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
    prctl,
)

if TYPE_CHECKING:
    from grader.config import Sandbox

SWITCH = "COURSE_FORK_SERVER"
"""``0``: every student's process is started afresh."""
MESSAGE = 64 * 1024
"""Longest control message (questions and reports are a line of JSON)."""
SWEEP = 0.25
"""Seconds between two sweeps of the server for ended and orphaned processes."""


def wanted(lessons: int, allowed: bool = True) -> bool:
    """Whether a grade of ``lessons`` lessons forks its student's processes;
    ``allowed``: the worker's switch (``COURSE_FORK_SERVER``, read at its edge:
    :class:`grader.sandbox.worker.Options`). Every student's process runs jax on
    the CPU only (:data:`grader.measure.devices.CPU_ONLY`), whatever the host has:
    no accelerator's runtime is ever started in a forked process."""
    return lessons >= 2 and allowed and sys.platform.startswith("linux")


# ------------------------------------------------------------------ the worker's side


class Forked:
    """A student's process forked by a :class:`ForkServer`, with the part of
    :class:`subprocess.Popen` the grader uses (``poll``, ``wait``, ``kill``,
    ``send_signal``, ``returncode``)."""

    def __init__(self, server: ForkServer, ident: int) -> None:
        self.server, self.ident = server, ident
        self.returncode: int | None = None
        self.why: str | None = None
        """Why it never ran the student's code, where the server said (or ended)."""
        self._ended = threading.Event()

    def _end(self, code: int, why: str | None = None) -> None:
        if self.returncode is None:
            self.returncode, self.why = code, why
            self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked process {self.ident}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Any signal asked is a kill: the grader sends no other."""
        self.server.kill(self.ident)

    def kill(self) -> None:
        self.server.kill(self.ident)

    def setup_failure(self) -> str | None:
        """Like :func:`grader.sandbox.processes.setup_failure`: why it never ran."""
        return self.why


class ForkServer:
    """The worker's side: one server, for one submission's folder and one set
    of hidden folders (see the module docstring)."""

    def __init__(self, directory: str, hidden: list[str], sandbox: Sandbox) -> None:
        from grader.sandbox import processes

        self.directory = directory
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = processes.start_jailed(
                "grader.sandbox.forks", ["--control", str(theirs.fileno())], directory, hidden,
                (theirs.fileno(),), sandbox,
            )  # fmt: skip
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._sock = ours
        self._lock = threading.Lock()
        self._children: dict[int, Forked] = {}
        self._next = 0
        self.ended = False
        self.why_ended: str | None = None
        threading.Thread(target=self._read, name="fork server", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self.ended and self.proc.poll() is None

    def fork(self, prepare: str = "", ahead: bool = False) -> tuple[Forked, Any, int] | None:
        """A student's process (as :func:`grader.sandbox.processes.spawn` gives one),
        forked; None where the server has ended (start one afresh)."""
        if not self.alive:
            return None
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        with self._lock:
            self._next += 1
            child = Forked(self, self._next)
            self._children[child.ident] = child
            question = {"op": "fork", "id": child.ident, "prepare": prepare, "ahead": bool(ahead)}
            try:
                socket.send_fds(self._sock, [json.dumps(question).encode()], [to_r, from_w])
                sent = True
            except OSError:
                sent = False
                del self._children[child.ident]
            finally:
                os.close(to_r)
                os.close(from_w)
        if not sent:
            os.close(to_w)
            os.close(from_r)
            return None
        return child, os.fdopen(to_w, "wb"), from_r

    def kill(self, ident: int) -> None:
        with self._lock:
            child = self._children.get(ident)
            if child is None or child.returncode is not None:
                return
            try:
                self._sock.send(json.dumps({"op": "kill", "id": ident}).encode())
            except OSError:  # the server has ended: its sandbox, and every process in it, too
                child._end(-signal.SIGKILL)

    def close(self) -> None:
        """Stop the server; every process it forked ends with it."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self._ended_all(
            "the fork server it was to be forked from was stopped"
        )  # its reader closes the channel

    def _read(self) -> None:
        """Its reports: ``ready``, then each child's end (``exit``, ``code``) or a
        fork that failed (``failed``, ``why``). Anything else ends the channel."""
        try:
            while True:
                message = self._sock.recv(MESSAGE)
                if not message:
                    break
                report = json.loads(message)
                if "exit" in report:
                    with self._lock:
                        child = self._children.pop(int(report["exit"]), None)
                    if child is not None:
                        child._end(int(report["code"]), report.get("why"))
        except (OSError, ValueError, TypeError, KeyError):
            pass
        with contextlib.suppress(OSError):
            self._sock.close()
        why = None
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
            from grader.sandbox import processes

            why = processes.setup_failure(self.proc)
        self._ended_all(why or "the fork server it was to be forked from ended")

    def _ended_all(self, why: str) -> None:
        with self._lock:
            self.ended = True
            self.why_ended = self.why_ended or why
            children, self._children = list(self._children.values()), {}
        for child in children:  # the sandbox ended with its init: so did they
            child._end(-signal.SIGKILL, self.why_ended)


# ------------------------------------------------------------------ the server (a script)


def main(argv: list[str]) -> None:
    """``python -m grader.sandbox.forks --control FD``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.forks")
    parser.add_argument("--control", type=int, required=True)
    args = parser.parse_args(argv)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # with the sandbox off: it ends with the worker
    prctl(PR_SET_DUMPABLE, 0)  # no process of the sandbox traces it or reads its memory
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # what a lesson's process leaves comes to it
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # PID 1 takes only what it
        signal.signal(sig, signal.SIG_IGN)  # handles: from inside, none ends it
    warnings.filterwarnings("ignore", ".*multi-threaded.*fork", DeprecationWarning)
    control = socket.socket(fileno=args.control)
    os.set_inheritable(control.fileno(), False)
    with contextlib.suppress(Exception):  # what every student's process imports
        import hypothesis.strategies  # noqa: F401
        import jax  # noqa: F401

        import grader.engine  # noqa: F401
        import grader.sandbox.student  # noqa: F401
    _serve(control)


def _serve(control: socket.socket) -> None:
    children: dict[int, int] = {}
    """pid → the worker's id of a lesson's process."""
    wake_r, wake_w = os.pipe()  # a child's end wakes the loop at once (SIGCHLD)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    while True:
        ready, _, _ = select.select([control, wake_r], [], [], SWEEP)
        if wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
        if control in ready:
            try:
                message, fds, _, _ = socket.recv_fds(control, MESSAGE, 2)
            except OSError:
                message, fds = b"", []
            if not message:  # the worker is gone
                for pid in children:
                    _kill_group(pid)
                os._exit(0)
            _answer(message, fds, children, control, (wake_r, wake_w))
        _sweep(children, control)


def _answer(message: bytes, fds: list[int], children: dict[int, int],
            control: socket.socket, own: tuple[int, int]) -> None:  # fmt: skip
    question: dict = {}
    try:
        question = json.loads(message)
        if question.get("op") == "fork" and len(fds) == 2:
            children[_fork(question, fds, control, own)] = int(question["id"])
        elif question.get("op") == "kill":
            for pid, ident in children.items():
                if ident == int(question["id"]):
                    _kill_group(pid)
    except Exception as exc:  # noqa: BLE001 — said, and the server goes on
        if question.get("op") == "fork":
            _report(control, {"exit": question.get("id"), "code": 1,
                              "why": f"the fork server could not start it: {exc}"})  # fmt: skip
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _fork(question: dict, fds: list[int], control: socket.socket, own: tuple[int, int]) -> int:
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            _child(question, fds, control, own, server)
        finally:
            os._exit(1)
    return pid


def _child(question: dict, fds: list[int], control: socket.socket, own: tuple[int, int],
           server: int) -> None:  # fmt: skip
    """A lesson's process, as one started afresh: its own session, dumpable,
    killed when the server ends, holding only stdin, stdout, stderr and its two pipes."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    control.close()
    for fd in own:
        os.close(fd)
    os.setsid()
    prctl(PR_SET_CHILD_SUBREAPER, 0)
    prctl(PR_SET_DUMPABLE, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server:
        os._exit(1)  # the server ended before the line above
    keep = sorted({0, 1, 2, *fds})
    for low, high in zip(keep, [*keep[1:], 1 << 16]):
        os.closerange(low + 1, high)
    import grader.sandbox.student as student

    argv = ["--fds", str(fds[0]), str(fds[1])]
    argv += ["--prepare", str(question["prepare"])] if question.get("prepare") else []
    argv += ["--ahead"] if question.get("ahead") else []
    student.main(argv)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


def _sweep(children: dict[int, int], control: socket.socket) -> None:
    """Report the lessons' processes that ended (their groups killed); kill the
    orphans that came to the server."""
    ended = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        ident = children.pop(pid, None)
        if ident is not None:
            _kill_group(pid)
            _report(control, {"exit": ident, "code": os.waitstatus_to_exitcode(status)})
        ended = True
    if ended or children:
        for pid in _own_children():
            if pid not in children:
                _kill_group(pid)


def _own_children() -> list[int]:
    """This process's children, orphans adopted included (Linux's ``children``
    file of each of its threads), each checked to be a process whose parent is
    this one: gVisor's ``children`` files also list the threads of a child (a
    lesson's process running jax has dozens), and a thread's id killed is its
    whole process."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
    return [pid for pid in dict.fromkeys(found) if _is_child_process(pid)]


def _is_child_process(pid: int) -> bool:
    """``pid`` names a process (not one of a process's threads) whose parent is this one."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return False
    return fields.get("Tgid", "").strip() == str(pid) and fields.get("PPid", "").strip() == str(
        os.getpid()
    )


def _report(control: socket.socket, report: dict) -> None:
    with contextlib.suppress(OSError):
        control.send(json.dumps(report).encode())


if __name__ == "__main__":
    main(sys.argv[1:])
