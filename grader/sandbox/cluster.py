"""A cluster of student's processes: P processes joined by ``jax.distributed`` (lesson 13).

Multi-controller JAX runs one process per host; every process runs the same
program on its own devices. The grader reproduces that on one machine: P
processes (the student's process of :mod:`grader.sandbox.student`, in cluster
mode), each with D simulated CPU devices, joined by
``jax.distributed.initialize`` on a loopback port **before** the student's
module is imported (CPU collectives: gloo). Each process then answers the same
questions as a lone student's process, and one more, ``task``: run a
process-side function of the lesson's (one its spec declares,
:attr:`grader.spec.ExerciseSpec.tasks`) on the student's function.
:meth:`Cluster.run` is what a spec reaches (``rt.cluster(P, D).run(...)``):
plain values back, decoded, or the student's error raised; the questions, the
wire codec and the answers' forms stay here.

Where they run. All P processes are children of one small launcher, this
module run as a script (``python -m grader.sandbox.cluster``), which is the
command the OS sandbox (:mod:`grader.sandbox.jail`) wraps: one jail for the
whole cluster, one network namespace with its loopback brought up, so the
processes reach each other and a port can never collide with another grade's.
The launcher is PID 1 there: when it dies, the kernel kills every process of
the cluster. The clusters a grade starts at once (:class:`ClusterPool`: the
lesson's three) share one launcher, one jail, a port each, and the launcher's
import of jax (a bare JAX start's CPU time saved per cluster); stopping one
closes its control pipe and the launcher kills that cluster's processes only.
With the sandbox off, the launcher picks a free port (``bind(("127.0.0.1", 0))``) and its children die with it (``PR_SET_PDEATHSIG``
on Linux, and :func:`grader.sandbox.lifeline.watch_parent` everywhere); a
cluster that fails to form is started once more, on another port.

The worker's side (:class:`Cluster`) holds one channel per process, asks every
process the same question and gathers the P answers within a time limit. A
process that dies, hangs or never joins ends the whole cluster — every process
killed — with a message that names the process and what it was doing
("joining the cluster", "importing your module", "running global_batch"), and
what was measured of the others (which returned, which were still inside).
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
import time
from pathlib import Path
from typing import Any

from grader.config import Sandbox
from grader.faults import ExampleTimeout, HostLimit, StudentFault, StudentProcessDied
from grader.sandbox import jail
from grader.sandbox.channel import LINE_LIMIT, Channel

JOIN_LIMIT = 120.0
"""Seconds a cluster may take to start and join (the machine's time: a busy
two-core machine imports jax in P processes at once)."""
ASK_LIMIT = 60.0
"""Seconds one question may take when the grade gives no limit of its own."""
RAISED_GRACE = 3.0
"""Seconds the others may take to answer once one process says the student's code
raised: longer, and they are waiting for it in a collective (the cluster is
stopped; the error is reported)."""
ANSWER_LIMIT = LINE_LIMIT
"""Longest answer line read from one process (a :class:`Channel`'s limit)."""


# ------------------------------------------------------------------ the launcher (a script)


def _die_with_parent() -> None:
    """Linux: this process is killed when the one that started it ends."""
    from grader.sandbox.lifeline import PR_SET_PDEATHSIG, prctl

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    """A port nothing listens on now, on the loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback_refused() -> str | None:
    """Why this host refuses the loopback TCP a cluster's processes join over
    (some container runtimes refuse internet sockets outright); None where it
    does not. Asked before a cluster is started, so that a grade there says so
    in one sentence rather than with the launcher's traceback."""
    try:
        free_port()
    except OSError as exc:
        return (
            "it runs a cluster of processes that join over loopback TCP (127.0.0.1), and "
            f"this host refuses it ({exc.strerror or exc}); grade it where loopback "
            "networking works (a laptop, a VM, Colab)."
        )
    return None


def launch(argv: list[str]) -> None:
    """``python -m grader.sandbox.cluster --cluster D CONTROL R0 W0 R1 W1 … [--cluster …]``:
    for each ``--cluster``, one student's process per fd pair, with D devices each,
    joined on a free loopback port of its own; wait for them; end when they have
    all ended. CONTROL is a pipe's read end (or -1): when the worker closes its
    other end, that cluster's processes are killed (:meth:`Cluster.stop`; the
    others go on). ``--absent I`` (tests only): leave process I of the first
    cluster unstarted, its channel open (a process that never joins)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m grader.sandbox.cluster")
    parser.add_argument("--cluster", type=int, nargs="+", action="append", required=True,
                        metavar="D CONTROL FD")  # fmt: skip
    parser.add_argument("--absent", type=int, nargs="*", default=[])
    parser.add_argument("--apart", metavar="FOLDER", default=None,
                        help="in the sandbox: each process apart (jail.apart), FOLDER read-only")  # fmt: skip
    parser.add_argument(
        "--ahead",
        action="store_true",
        help="started ahead of its grade: each process warms up once joined",
    )
    args = parser.parse_args(argv)
    groups = [(g[0], g[1], list(zip(g[2::2], g[3::2]))) for g in args.cluster]
    if any(len(g) < 4 or len(g) % 2 for g in args.cluster):
        parser.error("--cluster D CONTROL R0 W0 …: a device count, a control fd, fd pairs")
    _die_with_parent()
    if args.apart is not None:  # in the sandbox: no process of the cluster may trace this one
        from grader.sandbox.jail import PR_SET_DUMPABLE, _libc

        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    from grader.sandbox.lifeline import watch_parent

    kids: list[list[tuple[int, int, int]]] = [[] for _ in groups]

    def end(signum: int, frame: Any) -> None:
        for pid, _, _ in (kid for group in kids for kid in group):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        os._exit(1)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, end)
    # jax imported once, here, and every process forked from this one: each then
    # configures its own devices and joins (no backend is up before the fork)
    import jax  # noqa: F401

    import grader.sandbox.student  # noqa: F401

    ours = [fd for _, control, pairs in groups for fd in (control, *(f for p in pairs for f in p))]
    sockets = []  # held until every cluster has its port: no two get the same
    for _ in groups:
        sockets.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        sockets[-1].bind(("127.0.0.1", 0))
    ports = [int(s.getsockname()[1]) for s in sockets]
    for s in sockets:
        s.close()

    def start(k: int, index: int) -> None:
        devices, _, pairs = groups[k]
        if k == 0 and index in args.absent:
            return
        r, w = pairs[index]
        address = f"127.0.0.1:{ports[k]}"
        others = [fd for group in kids for kid in group for fd in kid[1:]]
        kids[k].append(_fork(index, r, w, address, len(pairs), devices, [*ours, *others],
                             ahead=args.ahead, apart=args.apart))  # fmt: skip

    # every process 0 first (their services start at once), then each cluster's
    # others once its service listens; forked from one line: a program's text
    # holds the source locations of the stack it was traced from, the fork's too
    order = [(k, 0) for k in range(len(groups))]
    order += [(k, i) for k, (_, _, pairs) in enumerate(groups) for i in range(1, len(pairs))]
    for k, index in order:
        if index == 1 and kids[k]:  # its process 0, the only one yet
            _wait_for_listener(ports[k], kids[k][0][0])
        start(k, index)
    for k, (_, _, pairs) in enumerate(groups):  # an absent one's stays open: it never joins
        for index, pair in enumerate(pairs):
            for fd in pair if not (k == 0 and index in args.absent) else ():
                with contextlib.suppress(OSError):
                    os.close(fd)
    # threads only now: none may be running at a fork
    for group in kids:
        for _, out_r, err_r in group:
            for fd, to in ((out_r, sys.stdout), (err_r, sys.stderr)):
                threading.Thread(target=_forward, args=(os.fdopen(fd, "rb"), to), daemon=True).start()  # fmt: skip
    for (_, control, _), group in zip(groups, kids):
        if control >= 0:
            threading.Thread(target=_kill_when_closed, args=(control, [k[0] for k in group]),
                             daemon=True).start()  # fmt: skip
    watch_parent()
    for pid, _, _ in (kid for group in kids for kid in group):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    time.sleep(0.1)  # the last lines forwarded
    os._exit(0)


def _fork(index: int, r: int, w: int, address: str, processes: int, devices: int,
          close: list[int], ahead: bool = False, apart: str | None = None) -> tuple[int, int, int]:  # fmt: skip
    """Fork process ``index`` of a cluster on channel (r, w): (pid, its stdout's
    and its stderr's read ends). The child keeps only its channel and output;
    ``ahead``: it warms up once joined (:func:`grader.sandbox.student.warm_up_cluster`);
    ``apart`` (in the sandbox): it is set apart from the others, the folder
    ``apart`` read-only (:func:`grader.sandbox.jail.apart`): no folder, memory or
    IPC shared, so what one sends another crosses the network the grader measures."""
    import grader.sandbox.student as student

    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only its own channel and output stay open
        try:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            _die_with_parent()
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            keep = {0, 1, 2, r, w}
            for fd in (*close, out_r, out_w, err_r, err_w):
                if fd >= 0 and fd not in keep:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
            sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
            if apart is not None:
                from grader.sandbox import jail

                problem = jail.apart([apart])
                if problem:
                    print(f"sandbox: process {index} shares /tmp with the others ({problem})",
                          file=sys.stderr, flush=True)  # fmt: skip
            student.main(["--fds", str(r), str(w), "--cluster", address, str(processes),
                          str(index), str(devices), *(["--ahead"] if ahead else [])])  # fmt: skip
        finally:
            os._exit(1)
    os.close(out_w)
    os.close(err_w)
    return pid, out_r, err_r


def _kill_when_closed(control: int, pids: list[int]) -> None:
    """Kill ``pids`` (one cluster's processes) once the worker has closed the
    other end of ``control``."""
    with contextlib.suppress(OSError):
        while os.read(control, 64):
            pass
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


LISTEN_WAIT = 30.0
"""Seconds the launcher waits for process 0's coordination service to listen
before it starts the others anyway (they then retry to connect, as jax does)."""


def _wait_for_listener(port: int, pid: int) -> None:
    """Until something listens on the loopback ``port`` (process 0's coordination
    service, which ``jax.distributed.initialize`` starts first), or process
    ``pid`` has ended, or :data:`LISTEN_WAIT` has passed. A process that tries to
    connect before the service listens retries a second later (gRPC's backoff):
    measured, that was most of a cluster's join (0.6 s joined at once, 1.5–2.3 s
    with the retries, on two cores)."""
    deadline = time.monotonic() + LISTEN_WAIT
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                return  # it ended (the grader sees it end); reaped here, its status unneeded
        time.sleep(0.005)


NOISE = (b"[Gloo]", b"preemption_sync_manager", b"coordination_service", b"Additional GRPC",
         b":UNKNOWN:Error received from peer", b"client.h:", b"JAX distributed service",
         b"peer ranks")  # fmt: skip
"""What jax's distributed runtime and gloo print about themselves (peers connected,
a peer gone when the cluster is stopped): not the student's output."""


def _forward(stream: Any, to: Any) -> None:
    """A process's output to the launcher's, without the runtime's own chatter."""
    out = to.buffer
    for line in iter(stream.readline, b""):
        if not any(n in line for n in NOISE):
            with contextlib.suppress(OSError):
                out.write(line)
                out.flush()


# ------------------------------------------------------------------ the worker's side


def _fast_compile_flags() -> list[str]:
    """XLA flags that make the student's programs compile faster in the cluster's
    processes: :data:`grader.spec.FAST_COMPILE`, as far as this XLA has them. They
    change only the speed of the CPU code and the last bits of some floating-point
    results, which every process of a cluster computes alike; what the checks read
    of a program (its HLO, its memory) the worker compiles itself. The lesson's
    re-grade on two cores: its clusters answer in 1.7 s instead of 2.45."""
    from grader.runtime import known_options
    from grader.spec import FAST_COMPILE

    options = known_options(FAST_COMPILE) or {}
    return [f"--{k}={str(v).lower()}" for k, v in options.items()]


def ClusterDied(message: str) -> Exception:  # noqa: N802 (raised like a class)
    """A process of the cluster ended; the whole cluster is stopped. The engine
    reports it as the student's process stopping."""
    return StudentProcessDied(message)


class ClusterHung(ExampleTimeout):
    """Not every process answered within the limit; the whole cluster is stopped.
    ``str()`` says which processes returned and which were still inside; ``hint``
    a cause, only where the measurement shows one."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


DEADLOCK_HINT = (
    "Every process must run the same collectives in the same order. A process that "
    "waits in a collective another process never reaches waits for ever: look for "
    "code that depends on jax.process_index() (a branch, a loop count, a shape)."
)


class Cluster:
    """P student's processes with D CPU devices each, joined into one mesh of
    P·D devices (see the module docstring)."""

    def __init__(
        self, directory: str, module: str, processes: int, local: int, *,
        absent: tuple[int, ...] = (), hidden: list[str] | tuple[str, ...] = (),
        sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
    ) -> None:  # fmt: skip
        if not (processes >= 2 and local >= 1):
            raise ValueError(f"a cluster needs ≥ 2 processes and ≥ 1 device each, not {processes}×{local}")  # fmt: skip
        self.directory, self.module = str(Path(directory)), module
        self.processes, self.local = processes, local
        self.absent = tuple(absent)
        self.hidden = list(hidden)
        """Folders hidden beyond the course's ``solutions/`` (the worker's)."""
        self.sandbox = sandbox
        """The OS sandbox's settings (the worker's)."""
        self.join_limit = JOIN_LIMIT
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.joined_in: float | None = None
        """Seconds from start until every process had joined (measured)."""
        self.loaded = False
        self.load_error: str | None = None
        self.functions: set[str] = set()
        self.answer_limit = ANSWER_LIMIT
        """Longest answer line taken from one process (its channel's limit)."""
        self._channels: list[Channel] = []
        """Process i's conversation with the worker: questions out, answers in."""
        self._seq = 0
        self._loading: int | None = None
        """The question number of the import asked for and not yet gathered
        (:meth:`start_load`)."""
        self._joined = False
        self._tries = 0
        self._control: int | None = None
        """Started with others by one launcher: the pipe whose closing kills this
        cluster's processes there (:func:`start_together`)."""
        self._shared: _Launcher | None = None
        self._meter: Any = None
        """The reader of its network namespace's counters (:class:`grader.sandbox.traffic.Reader`),
        shared by the clusters of one launcher: made on the first measurement."""
        self.tasks: frozenset[Any] = frozenset()
        """The process-side functions the exercise's spec declares (:meth:`run`)."""
        self.traffic: dict[str, int] | None = None
        """What the last :meth:`run` sent between the processes, measured by the
        kernel (:mod:`grader.sandbox.traffic`): ``crossing`` (payload bytes between
        two different processes, all of them together), ``within``, ``unaccounted``,
        ``connections``; None where it cannot be measured (the sandbox off: no
        network namespace of the cluster's own)."""
        self.measured = False
        """Whether the cluster runs in a network namespace of its own (set when started)."""
        self._twins: Twins | None = None
        """Where the grader's own clusters come from (:meth:`measure_alone`): its
        pool's, or one of its own (``_twins_own``: stopped with it)."""
        self._twins_own = False
        self._twin_keys: tuple[tuple[int, int], ...] = ()
        """The shapes of the grader's own clusters to start with this one's (its pool's)."""
        self._twin_of = False
        """This is a twin: its processes import an empty module, never the student's."""

    # -------------------------------------------------------------- life

    def start(self) -> None:
        """Start the processes (not waiting for them: :meth:`join` does)."""
        if self.proc is None:
            start_together([self])

    def join(self) -> None:
        """Wait until every process has joined the cluster (its "ready" line,
        question 0). A cluster that cannot form is started once more (another
        port, when the sandbox is off); then the failure is raised."""
        if self._joined:
            return
        from grader import phases

        with (
            _machine_time(),
            phases.phase("wait: a cluster starts and joins" + (" (twin)" if self._twin_of else "")),
        ):
            self._join()

    def _join(self) -> None:
        self.start()
        try:
            self._gather(0, "joining the cluster", self.join_limit)
        except Exception:  # a cluster that cannot form: once more, on another port
            self._tries += 1
            if self._tries > 1 or self.absent:
                raise
            self.start()
            self._gather(0, "joining the cluster", self.join_limit)
        self._joined = True
        self.joined_in = time.perf_counter() - self.started_at

    def start_load(self) -> None:
        """Join, then ask every process to import the student's module, not waiting
        for the answers (:meth:`load` gathers them, when the cluster is first asked
        something: its errors are reported there, as if asked then)."""
        if self.loaded or self._loading is not None:
            return
        self.join()
        question = {"op": "load", "directory": self.directory, "module": self.module}
        self._loading = self._send([question] * self.processes, "importing your module")

    def load(self, limit: float | None = None) -> None:
        """Join, then import the student's module in every process."""
        if self.loaded:
            return
        self.start_load()
        seq, self._loading = self._loading, None
        assert seq is not None
        answers = self._answers(seq, "importing your module", limit, loading=True)
        self.loaded = True
        errors = [a.get("load_error") for a in answers if a.get("load_error")]
        self.load_error = str(errors[0]) if errors else None
        self.functions = set(answers[0].get("functions") or [])

    def stop(self) -> None:
        """Kill every process of the cluster and wait for its launcher (one of its
        own; a launcher it shares is told to kill them, and ends with the last)."""
        proc, self.proc = self.proc, None
        channels, self._channels = self._channels, []
        for channel in channels:
            channel.close()
        self._joined = self.loaded = False
        self._loading = None
        control, self._control = self._control, None
        if control is not None:
            with contextlib.suppress(OSError):
                os.close(control)  # the launcher kills this cluster's processes
        twins, self._twins = self._twins, None
        if twins is not None and self._twins_own:
            twins.close()
        shared, self._shared = self._shared, None
        meter, self._meter = self._meter, None
        if shared is not None:
            shared.release()  # ended with the last of its clusters (its reader too)
        else:
            if meter is not None:
                meter.close()
            if proc is not None:
                _end(proc)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -------------------------------------------------------------- measuring

    def _pids(self) -> dict[int, int]:
        """pid → process index of this cluster's processes and their children: a
        process holds the read end of the channel the worker writes its questions
        on (its pipe's inode)."""
        if self.proc is None:
            return {}
        ours = {os.fstat(c.out.fileno()).st_ino: i for i, c in enumerate(self._channels) if c.out}
        out = {}
        for pid in _descendants(self.proc.pid):
            with contextlib.suppress(OSError):
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    with contextlib.suppress(OSError):
                        link = os.readlink(f"/proc/{pid}/fd/{fd}")
                        if link.startswith("pipe:[") and int(link[6:-1]) in ours:
                            out[pid] = ours[int(link[6:-1])]
                            break
        return out

    def _counters(self) -> Any:
        """The network namespace's counters now (None: not measured here)."""
        from grader.sandbox import traffic

        self.traffic = None
        if not self.measured or self.proc is None:
            return None
        try:
            if self._meter is None:
                return traffic.snapshot(self.proc.pid)
            return self._meter.snapshot()
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            from grader.faults import GraderFault

            raise GraderFault(f"the cluster's traffic could not be measured: {exc}") from None

    def _measured(self, before: Any) -> dict[str, int] | None:
        from grader.sandbox import traffic

        if before is None or self.proc is None:
            return None
        after = self._counters()
        holder = traffic.holders(self._pids())
        return traffic.crossing(before, after, holder).to_dict()

    def measure_alone(self, task: Any, payloads: list[Any]) -> list[int] | None:
        """What each of ``payloads`` moves between processes when ``task`` runs it
        in the grader's own cluster of the same P×D: processes started in a sandbox
        of their own (their own network namespace: no student's process can reach
        them or add to their counters) that never import the student's module (an
        module of the grader's stands for it). Each payload is run twice and the second run
        measured (connections and compiled programs made by the first: the same
        state as a student's call measured after a first one). Payload bytes
        crossing between processes, each; None where nothing can be measured (the
        sandbox off)."""
        if not self.measured:
            return None
        if self._twins is None:
            self._twins, self._twins_own = Twins(self.module, self.hidden, self.sandbox), True
        twin = self._twins.get(self.processes, self.local, self._twin_keys)
        twin.tasks = frozenset([task])
        out = []
        for payload in payloads:
            twin.run("twin", task, payload)
            twin.run("twin", task, payload, measure=True)
            traffic = twin.traffic
            if traffic is None:
                return None
            out.append(int(traffic["crossing"]))
        return out

    # -------------------------------------------------------------- questions

    def ask(
        self, question: dict | list[dict], doing: str, limit: float | None = None
    ) -> list[dict]:
        """Ask every process (the same question, or the i-th of a list to process
        i) and gather the P answers within ``limit`` seconds (:data:`ASK_LIMIT`
        by default). ``doing`` says what the processes were doing, for messages.
        Once one process answers that the student's code raised, the others get
        :data:`RAISED_GRACE`; those still inside then answer ``{"still_inside": True}``
        and the cluster is stopped."""
        self.load(limit)
        questions = question if isinstance(question, list) else [question] * self.processes
        return self._answers(self._send(questions, doing), doing, limit)

    def run(
        self, exercise: str, task: Any, payloads: list[Any] | Any, *, measure: bool = False
    ) -> list[Any]:
        """Run the process-side function ``task`` (one the exercise's spec declares:
        :attr:`grader.spec.ExerciseSpec.tasks`) on the student's ``exercise`` in
        every process, with the same payload or the i-th of a list in process i:
        each process's result as plain values, or the student's exception raised
        here (from whichever process raised first; it says which). ``measure``:
        what the call sent between the processes is measured (:attr:`traffic`)."""
        from grader.faults import GraderFault, StudentReturnError
        from grader.sandbox import wire

        if task not in self.tasks:
            raise GraderFault(f"{getattr(task, '__qualname__', task)!r} is not a task the spec declares")  # fmt: skip
        self.load()
        if self.load_error:
            raise (GraderFault if self._twin_of else StudentReturnError)(self.load_error)
        if exercise not in self.functions and not self._twin_of:
            raise StudentReturnError(f"your module defines no function {exercise}() in the cluster's processes")  # fmt: skip
        name = f"{task.__module__}:{task.__qualname__}"

        def question(p: Any) -> dict:
            return {"op": "task", "exercise": exercise, "task": name, "payload": wire.encode(p)}

        asked = (
            [question(p) for p in payloads] if isinstance(payloads, list) else question(payloads)
        )
        before = self._counters() if measure else None
        self.traffic = None
        answers = self.ask(asked, f"running {exercise}")
        self.traffic = self._measured(before)
        inside = [i for i, a in enumerate(answers) if a.get("still_inside")]
        for i, answer in enumerate(answers):  # the student's error first, from whichever process
            if "raised" in answer:
                try:
                    wire.raise_from(answer)
                except (NotImplementedError, StudentReturnError):
                    raise
                except Exception as exc:
                    if hasattr(exc, "student_text"):
                        also = (f"; process{'es' if len(inside) > 1 else ''} {', '.join(map(str, inside))} "
                                "still inside, waiting for it" if inside else "")  # fmt: skip
                        exc.student_text = f"(in process {i}{also})\n{exc.student_text}"  # type: ignore[attr-defined]
                    raise
        out = []
        for i, answer in enumerate(answers):
            if "ok" not in answer:
                raise StudentProcessDied(
                    f"process {i} answered with something that is not an answer"
                )
            try:
                out.append(wire.decode(answer["result"]))
            except wire.WireError as exc:
                raise StudentProcessDied(f"process {i} sent back a value the grader cannot take ({exc})") from None  # fmt: skip
        return out

    def _send(self, questions: list[dict], doing: str) -> int:
        """Write the i-th question to process i; the questions' number."""
        self._seq += 1
        for i, (channel, q) in enumerate(zip(self._channels, questions)):
            try:
                channel.send({**q, "seq": self._seq})
            except OSError:
                self.stop()
                raise ClusterDied(f"process {i} had ended before {doing}") from None
        return self._seq

    def _answers(self, seq: int, doing: str, limit: float | None, loading: bool = False) -> list[dict]:  # fmt: skip
        """The P answers to question ``seq``, within ``limit`` seconds."""
        from grader import phases

        with phases.phase(
            ("wait: a cluster imports the module" if loading else "wait: a cluster answers")
            + (" (twin)" if self._twin_of else "")
        ):
            answers = self._gather(seq, doing, limit or ASK_LIMIT)
        for i, a in enumerate(answers):
            if "fault" in a:
                self.stop()
                raise StudentFault(f"process {i}: {a['fault']}")
        return answers

    def _gather(self, seq: int, doing: str, limit: float) -> list[dict]:
        start = time.perf_counter()
        answers: dict[int, dict] = {}
        # the waiting loop runs in a frame of its own: Python 3.13 can skip the handlers
        # of the frame whose `while` loop a signal's exception (the grade's alarm)
        # interrupts (CPython issues 130279 and 108214); a caller's handlers hold
        try:
            return self._wait_for(seq, doing, limit, start, answers)
        except ClusterHung:
            raise
        except ExampleTimeout:  # the grade's own limit, from its alarm
            raise ClusterHung(*self._hung(doing, answers, time.perf_counter() - start)) from None
        except BaseException:  # an interrupt: nothing is left running
            self.stop()
            raise

    def _wait_for(
        self, seq: int, doing: str, limit: float, start: float, answers: dict[int, dict]
    ) -> list[dict]:
        """The P answers to question ``seq``, gathered into ``answers`` as they come."""
        waiting = set(range(self.processes))
        raised_at: float | None = None
        """When a process answered that the student's code raised."""
        while waiting:
            left = limit - (time.perf_counter() - start)
            if raised_at is not None:
                left = min(left, RAISED_GRACE - (time.perf_counter() - raised_at))
                if left <= 0:  # the others wait for it in a collective: stop them all
                    self.stop()
                    return [answers.get(i, {"still_inside": True}) for i in range(self.processes)]  # fmt: skip
            if left <= 0:
                raise ClusterHung(*self._hung(doing, answers, time.perf_counter() - start))
            fds = {self._channels[i].fd: i for i in waiting}
            ready, _, _ = select.select(list(fds), [], [], min(left, 1.0))
            for i, line in ((fds[fd], line) for fd in ready for line in self._lines(fds[fd], doing, answers)):  # fmt: skip
                try:
                    answer = json.loads(line)
                except (ValueError, RecursionError):
                    answer = None
                if not isinstance(answer, dict) or answer.get("seq") != seq:
                    self.stop()
                    raise ClusterDied(
                        f"process {i} wrote on the grader's channel something that is "
                        f"not the grader's answer while {doing}"
                    )
                answers[i] = answer
                waiting.discard(i)
                if "raised" in answer and raised_at is None:
                    raised_at = time.perf_counter()
        return [answers[i] for i in range(self.processes)]

    def _lines(self, i: int, doing: str, answers: dict[int, dict]) -> list[bytes]:
        """The whole lines process ``i``'s channel has now (one read; none yet: [])."""
        channel = self._channels[i]
        assert channel.fd is not None
        chunk = os.read(channel.fd, 1 << 20)
        if not chunk:
            others = self._others(i, answers)
            self.stop()
            raise ClusterDied(f"process {i} ended while {doing}{others}; the whole cluster was stopped")  # fmt: skip
        lines, cut = channel.feed(chunk)
        if cut:
            self.stop()
            raise ClusterDied(f"process {i} sent an answer larger than the grader takes")
        return lines

    def _others(self, i: int, answers: dict[int, dict]) -> str:
        done = sorted(answers)
        return f" (process{'es' if len(done) > 1 else ''} {_names(done)} had answered)" if done else ""  # fmt: skip

    def _hung(self, doing: str, answers: dict[int, dict], waited: float) -> tuple[str, str | None]:
        """What was measured when the limit passed, and a hint when it shows a cause."""
        done = sorted(answers)
        inside = [i for i in range(self.processes) if i not in answers]
        self.stop()
        if doing == "joining the cluster":
            return (f"the cluster did not form: process{'es' if len(inside) > 1 else ''} "
                    f"{_names(inside)} still joining after {waited:.0f} s", None)  # fmt: skip
        if done:
            return (
                f"process{'es' if len(done) > 1 else ''} {_names(done)} returned from {doing.removeprefix('running ')}; "
                f"process{'es' if len(inside) > 1 else ''} {_names(inside)} still inside after "
                f"{waited:.1f} s: a collective not every process reached",
                DEADLOCK_HINT,
            )  # fmt: skip
        return (f"no process returned from {doing.removeprefix('running ')} within {waited:.1f} s "
                f"(all {self.processes} still inside)", None)  # fmt: skip


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now, from each process's parent in ``/proc/*/stat``
    (readable for processes that are not dumpable too)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{entry}/stat", "rb") as f:  # fmt: skip
                parent[int(entry)] = int(f.read().rpartition(b")")[2].split()[1])
    children: dict[int, list[int]] = {}
    for child, ppid in parent.items():
        children.setdefault(ppid, []).append(child)
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def _names(indices: list[int]) -> str:
    if len(indices) <= 1:
        return "".join(map(str, indices))
    return ", ".join(map(str, indices[:-1])) + f" and {indices[-1]}"


@contextlib.contextmanager
def _machine_time() -> Any:
    """Hold the grade's alarm (:func:`grader.engine.time_limit`) while the cluster
    forms: starting processes and joining them is the machine's time, bounded by
    :data:`JOIN_LIMIT`, never an example's. The alarm resumes with what was left."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)


def _end(proc: subprocess.Popen) -> None:
    """Kill a launcher and everything below it; wait for it."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher and, sandbox off, its children
        with contextlib.suppress(OSError):
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


class _Launcher:
    """One launcher serving several clusters: ended when the last is stopped, with
    the reader of its network namespace's counters (``reader``, when one was made)."""

    def __init__(self, proc: subprocess.Popen, users: int) -> None:
        self.proc, self.users = proc, users
        self.reader: Any = None

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0:
            if self.reader is not None:
                self.reader.close()
            _end(self.proc)


def _measures_alone(spec: Any) -> bool:
    """Whether the lesson of exercise ``spec`` runs a task in the grader's own
    clusters (``measures_alone``) in any exercise: its tasks' module (the lesson's
    process-side functions, :attr:`grader.spec.ExerciseSpec.tasks`) declares one.
    Lesson 13's first exercise forms its clusters; its step measures alone later."""
    modules = {getattr(t, "__module__", None) for t in getattr(spec, "tasks", ())}
    return any(
        getattr(f, "measures_alone", False) is True
        for m in modules if m in sys.modules
        for f in vars(sys.modules[m]).values()
    )  # fmt: skip


def start_together(clusters: list[Cluster], ahead: bool = False) -> None:
    """Start these clusters (of one submission: the same folder, module and hidden
    folders) under one launcher, in one OS sandbox: jax is imported there once for
    all of them (each launcher imports it: about a bare JAX start's CPU time). One
    cluster, or one with ``absent`` processes (tests), gets a launcher of its own.
    ``ahead``: started ahead of the grade that will use them (no one waits for
    them now), each process warms up once joined (``--ahead``)."""
    from grader.sandbox import jail
    from grader.sandbox.processes import environment, hidden_folders

    if not clusters:
        return
    first = clusters[0]
    if len(clusters) > 1 and any(c.absent for c in clusters):
        for c in clusters:
            start_together([c], ahead)
        return
    shared = len(clusters) > 1
    sandboxed = jail.on(first.sandbox)
    theirs: list[int] = []
    ours: list[tuple[list[tuple[int, int]], int | None]] = []
    command = [sys.executable, "-m", "grader.sandbox.cluster"]
    try:
        for c in clusters:
            control_r, control_w = os.pipe() if shared else (-1, None)
            if shared:
                theirs.append(control_r)
            pipes, fds = [], []
            ours.append((pipes, control_w))  # filled as made: closed if a later step fails
            for _ in range(c.processes):
                to_r, to_w = os.pipe()
                from_r, from_w = os.pipe()
                theirs += [to_r, from_w]
                fds += [to_r, from_w]
                pipes.append((to_w, from_r))
            command += ["--cluster", str(c.local), str(control_r), *map(str, fds)]
        if first.absent:
            command += ["--absent", *map(str, first.absent)]
        if ahead:
            command.append("--ahead")
        if sandboxed:
            command += ["--apart", first.directory]
        env, readable = environment()  # a student's process's (the CPU only), but for its devices
        env["XLA_FLAGS"] = " ".join(
            [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
            + _fast_compile_flags()
        )
        proc = subprocess.Popen(
            jail.wrap(
                command,
                sandbox=first.sandbox,
                readable=readable,
                writable=[first.directory] if first.directory else [],
                hidden=hidden_folders(first.hidden),  # as for every student's process
                loopback=True,
            ),
            stdin=subprocess.DEVNULL, pass_fds=tuple(theirs), env=env,
            start_new_session=True,
        )  # fmt: skip
    except BaseException:
        for pipes, control_w in ours:
            for fd in [*(f for p in pipes for f in p), *([control_w] if control_w is not None else [])]:  # fmt: skip
                with contextlib.suppress(OSError):
                    os.close(fd)
        raise
    finally:
        for fd in theirs:
            with contextlib.suppress(OSError):
                os.close(fd)
    launcher = _Launcher(proc, len(clusters)) if shared else None
    reader = None
    if sandboxed:  # one network namespace: one reader of its counters for all the clusters
        from grader.sandbox import traffic

        reader = traffic.Reader(proc.pid)
        if launcher is not None:
            launcher.reader = reader
    now = time.perf_counter()
    for c, (pipes, control_w) in zip(clusters, ours):
        c.proc, c._shared, c._control, c._meter = proc, launcher, control_w, reader
        c._channels = [Channel(os.fdopen(w, "wb"), r, c.answer_limit) for w, r in pipes]
        c._seq = 0
        c._joined, c.loaded, c._loading = False, False, None
        c.started_at = now
        c.measured = sandboxed  # a network namespace of the cluster's own: its counters


class Twins:
    """The grader's own clusters (:meth:`Cluster.measure_alone`), one per shape,
    started together under one launcher, in one sandbox of their own; their
    processes import a module of the grader's (a function ``twin`` that does
    nothing), never the student's."""

    def __init__(
        self, module: str, hidden: list[str] | tuple[str, ...] = (),
        sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
    ) -> None:  # fmt: skip
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="course-twin-")
        Path(self.folder, f"{module}.py").write_text(
            '"""The grader\'s own cluster: no student\'s code."""\n\n\ndef twin(*args, **kwargs):\n    return None\n'
        )
        self.pool = ClusterPool(self.folder, module, hidden, sandbox)
        self.pool.twins = True

    def get(self, processes: int, local: int, also: tuple[tuple[int, int], ...]) -> Cluster:
        """The (P, D) cluster; the ``also`` shapes started with it, when it starts."""
        ahead = tuple(k for k in also if tuple(k) != (processes, local))
        return self.pool.get(processes, local, ahead=ahead)

    def close(self) -> None:
        import shutil

        self.pool.close()
        shutil.rmtree(self.folder, ignore_errors=True)


class ClusterPool:
    """The clusters of one lesson's grade, by (P, D): each started once, on first
    need (or ahead), reused across its exercises and examples, stopped at the end."""

    def __init__(
        self, directory: str, module: str, hidden: list[str] | tuple[str, ...] = (),
        sandbox: Sandbox = Sandbox(),  # noqa: B008 — frozen
    ) -> None:  # fmt: skip
        self.directory, self.module, self.hidden = str(directory), module, list(hidden)
        self.sandbox = sandbox
        """The OS sandbox's settings (the worker's), for every cluster it starts."""
        self._clusters: dict[tuple[int, int], Cluster] = {}
        self._twins: Twins | None = None
        """The grader's own clusters, for what its clusters measure (made on first need)."""
        self.twins = False
        """The grader's own clusters' pool (:class:`Twins`): no student's code."""

    def get(self, processes: int, local: int, ahead: tuple[tuple[int, int], ...] = ()) -> Cluster:
        """The (P, D) cluster, its module imported; ``ahead``: clusters to start now
        without waiting, for examples to come."""
        return self._start(((processes, local), *ahead))[0]

    def form(self, spec: Any, example: dict) -> None:
        """Form (start and join) the clusters exercise ``spec`` says ``example``
        runs on (:attr:`grader.spec.ExerciseSpec.cluster`), before its time starts."""
        if spec.cluster is None:
            return
        needed = tuple(spec.cluster(example))
        if needed:
            self.get(*needed[0], ahead=needed[1:])
            for key in needed:
                self._clusters[(int(key[0]), int(key[1]))].tasks = frozenset(
                    getattr(spec, "tasks", ())
                )
            if _measures_alone(spec):  # theirs start now: their launcher imports jax beside ours
                self._twins_ahead()  # not warmed: that is CPU the grade's own work needs now
            for key in needed:  # all of them now, while no example's deadline runs
                self._clusters[(int(key[0]), int(key[1]))].join()
            for key in needed:  # their imports run at once, each gathered at its first question
                self._clusters[(int(key[0]), int(key[1]))].start_load()

    def _start(self, keys: tuple[tuple[int, int], ...], ahead: bool = False) -> list[Cluster]:
        """These clusters, those not running started now, together (one launcher;
        ``ahead``: see :func:`start_together`)."""
        if refused := loopback_refused():
            raise HostLimit(refused)
        fresh = []
        for key in keys:
            key = (int(key[0]), int(key[1]))
            cluster = self._clusters.get(key)
            if cluster is None or (cluster.proc is not None and not cluster.alive):
                if cluster is not None:
                    cluster.stop()
                cluster = self._clusters[key] = Cluster(
                    self.directory, self.module, *key, hidden=self.hidden, sandbox=self.sandbox
                )
                cluster._twin_of = self.twins
            if cluster.proc is None and cluster not in fresh:
                fresh.append(cluster)
        for cluster in self._clusters.values() if not self.twins else ():
            if self._twins is None:  # theirs: every shape this pool runs, started at once
                self._twins = Twins(self.module, self.hidden, self.sandbox)
            cluster._twins, cluster._twins_own = self._twins, False
            cluster._twin_keys = tuple(self._clusters)
        start_together(fresh, ahead)
        return [self._clusters[(int(p), int(d))] for p, d in keys]

    def _twins_ahead(self, warm: bool = False) -> None:
        """Start the grader's own clusters of every shape this pool runs now, not
        waiting for them (a task of the lesson measures programs alone:
        ``measures_alone``): their start overlaps the student's clusters' work.
        ``warm``: each of their processes warms up once joined (``--ahead``)."""
        if self._twins is None or not jail.on(self.sandbox) or not self._clusters:
            return
        keys = tuple(self._clusters)
        self._twins.pool._start(keys, ahead=warm)

    def keys(self) -> tuple[tuple[int, int], ...]:
        """The (P, D) of the clusters it started."""
        return tuple(self._clusters)

    def start_ahead(self, keys: tuple[tuple[int, int], ...]) -> None:
        """Start these clusters now, not waiting for them (a serving worker, for
        its next grade of the lesson: :meth:`grader.sandbox.spares.Spares.clusters_ahead`);
        their processes warm up once joined, while the student pauses. The
        grader's own clusters of the same shapes start with them (in their own
        sandbox, as always): every grade of the lesson measures programs alone."""
        if loopback_refused():
            return  # the grade says why, when it asks for them
        self._start(keys, ahead=True)
        self._twins_ahead(warm=True)

    def close(self) -> None:
        for cluster in self._clusters.values():
            cluster.stop()
        self._clusters.clear()
        twins, self._twins = self._twins, None
        if twins is not None:
            twins.close()


if __name__ == "__main__":
    launch(sys.argv[1:])
