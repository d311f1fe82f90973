"""Everything the sandbox starts before it is asked, and how long each lives.

A grade waits on process starts more than on anything else (a fresh Python
that imports jax takes about a second of CPU on two cores), so whatever can be
started before it is needed is; this module holds each such object, what
starts it, who takes it and what ends it. It sits above the modules that make
them (:mod:`grader.sandbox.launch`: a worker; :mod:`grader.sandbox.processes`:
a student's process; :mod:`grader.sandbox.forks`: the fork server;
:mod:`grader.sandbox.cluster`: lesson 13's clusters) and imports them when it
starts one: ``course`` starts its worker before it imports anything else, and
the worker its student's process before it imports jax, so importing this
module costs the standard library's ``os`` and ``typing`` only. Below it,
nothing knows of it but through :class:`Ahead`, the interface a lesson's
backend (:class:`grader.sandbox.isolation.Isolated`) is handed; the engine
knows of none of it.

**The early worker** (:func:`early`, :class:`Early`; ``course``'s process).
Started as ``course grade`` starts, before the command's own imports
(``COURSE_EARLY_WORKER=0``: never), so that its own start (a third of a second)
overlaps the command's imports. The command keeps it (``course.cli``, for its
:class:`course.commands.common.App`: no module keeps it, it is passed like any
other configuration) and its first one-off grade takes it
(:func:`grader.sandbox.runner.grade`, :meth:`Early.take`) where the environment
is still the one it was started with; that grade stops it when done. Otherwise
it is stopped unused (:meth:`Early.drop`), as it is at exit if nothing took it.
It has read nothing until then, and runs nothing of the student's: it waits for
its request on stdin like any one-off worker.

**A student's process started ahead** (:meth:`Spares.prestart`; the worker's,
like everything below). A one-off worker starts one as soon as it has read its
request, for the first lesson (before it imports jax), and each next lesson's
as the one before is taken; a serving worker also after each grade, for the
next (jax and the lesson's spec imported, the student's module not yet:
``load=False``; asked to import it when that grade begins). Taken by the lesson
that grades the module (:meth:`Ahead.ready`, from
:meth:`grader.sandbox.isolation.StudentProcess.spawn`), and closed with that
lesson's grading. Not taken: closed at the request's end (those asked to load:
``close(loaded_only=True)``), when a folder is newly hidden (:meth:`Spares.hide`:
it may see it) and when the worker ends (:meth:`Spares.close`).

**Helpers** (:meth:`Spares.prestart` with ``load=False``). More student's
processes, started with each one a serving worker starts ahead, from its second
grade of a lesson that exports programs on (:attr:`Spares.helpers`,
``COURSE_HELPERS``). Taken by the lesson's session (:meth:`Ahead.take_helpers`,
each asked to import the module then: :class:`grader.sandbox.isolation.Session`),
closed with the lesson's grading; not taken, as a process started ahead.

**The fork server** (:meth:`Spares.fork_from`). Started for a grade of two
lessons or more, on Linux (:func:`grader.sandbox.forks.wanted`;
``COURSE_FORK_SERVER=0``: never); every student's process of that grade is
forked from it (:meth:`Spares.start`). Stopped at the grade's end
(:meth:`Spares.stop_forks`, :func:`grader.sandbox.worker.grade`) or with
:meth:`Spares.close`; every process forked from it ends with it.

**Clusters started ahead** (lesson 13; :meth:`Spares.clusters_ahead`). Started
by a serving worker after a grade of the lesson: the shapes that grade started
(:meth:`Ahead.clustered`), with the grader's own twins. Taken by the next
grade's backend (:meth:`Ahead.clusters`), which closes them with the lesson's
grading (:meth:`grader.sandbox.cluster.ClusterPool.close`); not taken, closed by
:meth:`Spares.close`.

Two more things are done ahead of need, by the objects whose work they are:

- **examples drawn ahead**: a serving worker's thread that draws the next
  grade's examples while it waits (:meth:`grader.sandbox.worker.Warm.draw_ahead`,
  into the draws every grade of the worker shares), joined before the next grade
  begins (:meth:`~grader.sandbox.worker.Warm.drawn_ahead`);
- **examples prepared ahead**: each example of an exercise after the first,
  prepared in a thread while the one before runs
  (:class:`grader.sandbox.prepared.PreparedAhead`, the backend's answer to the
  engine; ``COURSE_AHEAD=0``: none), run in its turn, and abandoned with its
  exercise (what it asked is moot then: :meth:`grader.sandbox.isolation.Session.end`).

A kept worker (``course watch``, the notebook: :class:`grader.sandbox.runner.Worker`)
is kept after a grade, not started ahead; it lives with its session.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.sandbox import launch

if TYPE_CHECKING:
    import subprocess

    from grader.config import Sandbox
    from grader.sandbox.processes import Started

EARLY = "COURSE_EARLY_WORKER"
"""``0``: ``course grade`` starts its worker once the request is ready (to measure
what starting it early saves)."""


# ------------------------------------------------------------------ course's side: the early worker


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
        proc, events = launch.spawn(marker)
    except OSError:  # the grade starts one itself, and says why if it cannot
        return None
    found = Early(proc, events, marker, launch.environment())
    atexit.register(found.drop)
    return found


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
        if self.proc.poll() is None and self.environ == launch.environment():
            self.taken = True
            return self
        self.drop()
        return None

    def drop(self) -> None:
        """Stop it, unless a grade took it (at exit, or when it cannot grade)."""
        if not self.taken and not self.dropped:
            self.dropped = True
            launch.stop(self.proc)
            launch.close_ends(self.proc, self.events)


# ------------------------------------------------------------------ the worker's side


class Ready(NamedTuple):
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

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        if sandbox is None:
            from grader.config import Sandbox

            sandbox = Sandbox()
        self.sandbox = sandbox
        """The OS sandbox's settings, for every process and cluster it starts (the
        worker's :attr:`grader.sandbox.worker.Options.sandbox`; by default the
        sandbox is on where it can be made)."""

    def start(self, directory: str, prepare: str = "", ahead: bool = False) -> Started:
        """A student's process for ``directory``, started now
        (:func:`grader.sandbox.processes.spawn`)."""
        from grader.sandbox import processes

        return processes.spawn(directory, prepare=prepare, ahead=ahead, hidden=self.hidden,
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

        return ClusterPool(_resolved(directory), module, hidden=self.hidden,
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

    def __init__(self, helpers: int = 0, sandbox: Sandbox | None = None) -> None:
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

        directory = _folder(directory)
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
        """A student's process for ``directory`` (as
        :func:`grader.sandbox.processes.spawn` starts one), forked where the fork
        server serves that directory and is alive."""
        forks = self.forks
        if forks is not None and forks.directory == _folder(directory):
            forked = forks.fork(prepare, ahead)
            if forked is not None:
                return forked
        from grader.sandbox import processes

        return processes.spawn(directory, prepare=prepare, ahead=ahead, hidden=self.hidden,
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
        key = (_resolved(directory), module)
        if not keys or key in self._pools:
            return
        from grader.sandbox.cluster import ClusterPool

        pool = self._pools[key] = ClusterPool(key[0], module, hidden=self.hidden,
                                              sandbox=self.sandbox)  # fmt: skip
        pool.start_ahead(keys)

    def take_clusters(self, directory: str, module: str) -> Any:
        """The cluster pool started ahead for this lesson, if any (its clusters
        that died meanwhile are started again when asked for)."""
        return self._pools.pop((_resolved(directory), module), None)

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
        key = (_folder(directory), module)
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
            _close(idle)
            idle = None
        spare = idle or self.start(key[0], prepare=module)
        if _asked_to_load(spare, key[0], module):  # else the lesson starts a process of its own
            self._ready[key] = spare

    def take(self, directory: str, module: str) -> tuple[subprocess.Popen, Any, int] | None:
        """The process started ahead for this lesson, if it is still alive; the
        next lesson's process starts now."""
        spare = self._ready.pop((_folder(directory), module), None)
        if self.upcoming:  # another lesson follows: its process starts while this one grades
            self.prestart(*self.upcoming.pop(0))
        if spare is not None and spare[0].poll() is not None:
            _close(spare)
            return None  # it ended meanwhile: the lesson starts one of its own
        return spare

    def helping(self, directory: str | None = None) -> int:
        """Helpers started ahead and not taken yet (for ``directory``, else for any)."""
        if directory is not None:
            return len(self._helping.get(_folder(directory), []))
        return sum(len(h) for h in self._helping.values())

    def take_helpers(self, directory: str, module: str) -> list[Started]:
        """The helpers started ahead for ``directory`` that are still alive, each
        asked now to import ``module`` (question 1); none are started here."""
        taken = []
        for spare in self._helping.pop(_folder(directory), []):
            if spare[0].poll() is not None:
                _close(spare)  # it ended meanwhile
            elif _asked_to_load(spare, directory, module):
                taken.append(spare)
        return taken

    def close(self, loaded_only: bool = False) -> None:
        """Stop the processes started ahead (``loaded_only``: those asked to load),
        and the fork server (every process it forked ends with it)."""
        idle = [] if loaded_only else [*self._idle.values(), *sum(self._helping.values(), [])]
        for spare in [*self._ready.values(), *idle]:
            _close(spare)
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
    question = {"op": "load", "directory": _folder(directory), "module": module, "seq": 1}
    try:
        from grader.sandbox.channel import Channel

        Channel(spare[1]).send(question)
    except OSError:
        _close(spare)
        return False
    return True


def _close(spare: Started) -> None:
    """Stop a process started ahead (:func:`grader.sandbox.processes.close`)."""
    from grader.sandbox import processes

    processes.close(spare)


def _folder(directory: str) -> str:
    """``directory`` as a key of what was started for it (``str(Path(directory))``)."""
    from pathlib import Path

    return str(Path(directory))


def _resolved(directory: str) -> str:
    """``directory`` resolved (a cluster pool's folder)."""
    from pathlib import Path

    return str(Path(directory).resolve())
