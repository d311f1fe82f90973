"""The student's processes a grade starts ahead of need, behind one interface
(:class:`Ahead`: a lesson's backend asks it for a ready channel to a student's
process, for the helpers, for lesson 13's clusters; :class:`Spares` hands over
what it started ahead, forked from a fork server where it has one), and how one
is started (:func:`spawn`): in the OS sandbox where one can be made
(:mod:`grader.sandbox.jail`). Nothing else of the sandbox starts a student's
process ahead, and nothing below it (the engine, the runtimes) knows of any.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.config import Sandbox
from grader.repo import CODE
from grader.sandbox import jail
from grader.sandbox.channel import Channel


def hidden_folders(hidden: list[str] | tuple[str, ...] = ()) -> list[str]:
    """``hidden`` (a :class:`Spares`' folders: a classroom's submissions and
    results, the workspace with the progress file, the compile cache), and every
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
written to, the descriptor its answers are read from (a :class:`Channel`'s sides)."""


@dataclass(frozen=True)
class Ready:
    """A student's process handed over to the lesson that grades ``module``."""

    started: Started
    asked: bool
    """It was asked to import the module when it was started (question 1 is
    pending); else the lesson asks."""


class Ahead:
    """What a lesson's backend asks for whatever is started ahead of need: the
    one interface to every such mechanism of the sandbox. This one starts
    everything when it is asked for (nothing ahead); :class:`Spares` hands over
    what it started ahead."""

    hidden: list[str] | tuple[str, ...] = ()
    """Folders the student's processes must not see, beyond the course's ``solutions/``."""

    def __init__(self, sandbox: Sandbox = Sandbox()) -> None:  # noqa: B008 — frozen
        self.sandbox = sandbox
        """The OS sandbox's settings, for every process and cluster it starts (the
        worker's :attr:`grader.sandbox.worker.Options.sandbox`; by default the
        sandbox is on where it can be made)."""

    def start(self, directory: str, prepare: str = "", ahead: bool = False) -> Started:
        """A student's process for ``directory``, started now (:func:`spawn`)."""
        return spawn(directory, prepare=prepare, ahead=ahead, hidden=self.hidden,
                     sandbox=self.sandbox)  # fmt: skip

    def ready(self, directory: str, module: str) -> Ready:
        """A student's process for the lesson that grades ``module`` from ``directory``."""
        return Ready(self.start(directory, prepare=module), asked=False)

    def take_helpers(self, directory: str, module: str) -> list[Started]:
        """More student's processes for the same lesson, each asked to import
        ``module`` already (question 1): none here."""
        return []

    def exported(self, module: str) -> None:
        """The lesson ``module`` asked for exported programs (its next grades may
        use helpers)."""

    def clusters(self, directory: str, module: str) -> Any:
        """Lesson 13's cluster pool for this lesson (:mod:`grader.sandbox.cluster`)."""
        from grader.sandbox.cluster import ClusterPool

        return ClusterPool(str(Path(directory).resolve()), module, hidden=self.hidden,
                           sandbox=self.sandbox)  # fmt: skip

    def clustered(self, module: str, keys: tuple[tuple[int, int], ...]) -> None:
        """The (P, D) of the clusters the lesson ``module`` started (for its next grade)."""


class Spares(Ahead):
    """Student's processes started ahead of need, by (directory, module): each
    imports jax, then the module, while the grader works on something else. The
    worker owns one for its whole request (a serving worker, for all of them); a
    backend without one starts its process when the lesson begins.

    A process started ahead of a grade not yet asked for (``load=False``: a
    serving worker between two saves) imports jax and the lesson's spec only;
    it is asked to import the student's module when that grade begins."""

    def __init__(self, helpers: int = 0, sandbox: Sandbox = Sandbox()) -> None:  # noqa: B008
        super().__init__(sandbox)
        self.hidden: list[str] = []
        """Folders its processes must not see, beyond the course's ``solutions/``
        (:meth:`hide`)."""
        self._ready: dict[tuple[str, str], tuple[subprocess.Popen, Any, int]] = {}
        self._idle: dict[str, tuple[subprocess.Popen, Any, int]] = {}
        """Started ahead, not asked to load anything yet: by directory."""
        self.helpers = helpers
        """Helpers started with each process started ahead without loading
        (``load=False``): more student's processes for the same grade, which
        trace and export examples at the same time as the first one
        (:meth:`grader.sandbox.isolation.Session.export`); a serving worker's, where cores are free."""
        self._helping: dict[str, list[tuple[subprocess.Popen, Any, int]]] = {}
        """Helpers started ahead, not asked to load anything yet: by directory."""
        self.exporting: set[str] = set()
        """The lessons (modules) whose grades here asked for exported programs:
        only theirs get helpers (a lesson of plain Python calls has no use for one)."""
        self.upcoming: list[tuple[str, str]] = []
        """(directory, module) of the lessons after the current one, in order."""
        self._clustered: dict[str, tuple[tuple[int, int], ...]] = {}
        """The (P, D) of the clusters each lesson's last grade here started
        (:mod:`grader.sandbox.cluster`, lesson 13), by module."""
        self._pools: dict[tuple[str, str], Any] = {}
        """Cluster pools started ahead (:meth:`clusters_ahead`), by (directory, module)."""
        self.forks: Any = None
        """The fork server its processes are forked from, where one was started
        (:meth:`fork_from`): for one directory and these hidden folders."""

    def fork_from(self, directory: str) -> None:
        """Fork the student's processes for ``directory`` from a fork server
        (:mod:`grader.sandbox.forks`) from now on, until :meth:`close`; where
        none can be started, they are started afresh as before."""
        from grader.sandbox.forks import ForkServer

        directory = str(Path(directory))
        if self.forks is not None and self.forks.directory == directory and self.forks.alive:
            return
        self.stop_forks()
        with contextlib.suppress(OSError):
            self.forks = ForkServer(directory, self.hidden, self.sandbox)

    def stop_forks(self) -> None:
        """Stop the fork server (every process it forked ends with it)."""
        forks, self.forks = self.forks, None
        if forks is not None:
            forks.close()

    def start(self, directory: str, prepare: str = "", ahead: bool = False) -> Started:
        """A student's process for ``directory`` (:func:`spawn`'s), forked where
        the fork server serves that directory and is alive."""
        forks = self.forks
        if forks is not None and forks.directory == str(Path(directory)):
            forked = forks.fork(prepare, ahead)
            if forked is not None:
                return forked
        return spawn(directory, prepare=prepare, ahead=ahead, hidden=self.hidden,
                     sandbox=self.sandbox)  # fmt: skip

    def ready(self, directory: str, module: str) -> Ready:
        """The process started ahead for this lesson (:meth:`take`), else one
        started now (forked, where a fork server serves the folder)."""
        spare = self.take(directory, module)
        if spare is not None:
            return Ready(spare, asked=True)
        return Ready(self.start(directory, prepare=module), asked=False)

    def exported(self, module: str) -> None:
        self.exporting.add(module)

    def clusters(self, directory: str, module: str) -> Any:
        """The cluster pool started ahead for this lesson (:meth:`take_clusters`),
        else a new one."""
        return self.take_clusters(directory, module) or super().clusters(directory, module)

    def clustered(self, module: str, keys: tuple[tuple[int, int], ...]) -> None:
        self._clustered[module] = keys

    def clusters_ahead(self, directory: str, module: str) -> None:
        """Start, for the next grade of ``module``, the clusters its last grade here
        started: fresh processes that import jax and join, the student's module
        not yet (it is imported when that grade begins, as it is saved then)."""
        keys = self._clustered.get(module)
        key = (str(Path(directory).resolve()), module)
        if not keys or key in self._pools:
            return
        from grader.sandbox.cluster import ClusterPool

        pool = self._pools[key] = ClusterPool(key[0], module, hidden=self.hidden,
                                              sandbox=self.sandbox)  # fmt: skip
        pool.start_ahead(keys)

    def take_clusters(self, directory: str, module: str) -> Any:
        """The cluster pool started ahead for this lesson, if any (its clusters
        that died meanwhile are started again when asked for)."""
        return self._pools.pop((str(Path(directory).resolve()), module), None)

    def hide(self, *folders: str | None) -> None:
        """Hide ``folders`` from every student's process started from now on (where
        the sandbox is on; its own folder stays visible, even inside one of them).
        Where one was not hidden before, the processes started ahead are closed
        (they may see it)."""
        new = [str(f) for f in folders if f and str(f) not in self.hidden]
        self.hidden.extend(dict.fromkeys(new))
        if new:
            self.close()

    def prestart(
        self,
        directory: str,
        module: str,
        then: list[tuple[str, str]] | None = None,
        *,
        load: bool = True,
    ) -> None:
        """Start a student's process now, asked to import ``module`` from ``directory``
        (question 1), for the lesson that grades it to take; ``then``: the lessons
        after it, each started when the one before is taken. ``load=False``: start
        it without asking (the module is imported by a later ``prestart``)."""
        if then is not None:
            self.upcoming[:] = then
        key = (str(Path(directory)), module)
        if key in self._ready:
            return
        if not load:
            if key[0] not in self._idle:
                self._idle[key[0]] = self.start(key[0], prepare=module, ahead=True)
            helping = self._helping.setdefault(key[0], [])
            while len(helping) < self.helpers * (module in self.exporting):
                helping.append(self.start(key[0], prepare=module, ahead=True))
            return
        idle = self._idle.pop(key[0], None)
        if idle is not None and idle[0].poll() is not None:
            close(idle)
            idle = None
        spare = idle or self.start(key[0], prepare=module)
        if _asked_to_load(spare, key[0], module):  # else the lesson starts a process of its own
            self._ready[key] = spare

    def take(self, directory: str, module: str) -> tuple[subprocess.Popen, Any, int] | None:
        """The process started ahead for this lesson, if it is still alive; the
        next lesson's process starts now."""
        spare = self._ready.pop((str(Path(directory)), module), None)
        if self.upcoming:  # another lesson follows: its process starts while this one grades
            self.prestart(*self.upcoming.pop(0))
        if spare is not None and spare[0].poll() is not None:
            close(spare)
            return None  # it ended meanwhile: the lesson starts one of its own
        return spare

    def helping(self, directory: str | None = None) -> int:
        """Helpers started ahead and not taken yet (for ``directory``, else for any)."""
        if directory is not None:
            return len(self._helping.get(str(Path(directory)), []))
        return sum(len(h) for h in self._helping.values())

    def take_helpers(self, directory: str, module: str) -> list[Started]:
        """The helpers started ahead for ``directory`` that are still alive, each
        asked now to import ``module`` (question 1); none are started here."""
        taken = []
        for spare in self._helping.pop(str(Path(directory)), []):
            if spare[0].poll() is not None:
                close(spare)  # it ended meanwhile
            elif _asked_to_load(spare, directory, module):
                taken.append(spare)
        return taken

    def close(self, loaded_only: bool = False) -> None:
        """Stop the processes started ahead (``loaded_only``: those asked to load),
        and the fork server (every process it forked ends with it)."""
        idle = [] if loaded_only else [*self._idle.values(), *sum(self._helping.values(), [])]
        for spare in [*self._ready.values(), *idle]:
            close(spare)
        self._ready.clear()
        self.stop_forks()
        for pool in self._pools.values():  # started ahead for a grade that did not come
            pool.close()
        self._pools.clear()
        if not loaded_only:
            self._idle.clear()
            self._helping.clear()


def _asked_to_load(spare: tuple[subprocess.Popen, Any, int], directory: str, module: str) -> bool:
    """Ask ``spare`` to import ``module`` from ``directory`` (question 1); False
    (and it is closed) when it cannot be asked: it has ended."""
    question = {"op": "load", "directory": str(Path(directory)), "module": module, "seq": 1}
    try:
        Channel(spare[1]).send(question)
    except OSError:
        close(spare)
        return False
    return True


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
