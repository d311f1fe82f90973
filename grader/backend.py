"""Where the student's code runs while one lesson is graded: the backend interface.

The engine (:mod:`grader.engine`) is handed a :data:`BackendFactory` by
whoever starts it and never chooses one itself. It asks the backend for the
student's module once (:meth:`Backend.load`), then for one
:class:`~grader.runtime.Runtime` per example. Two kinds exist:

- :class:`Here` (below): the student's module imported and run in this process
  (the tests, ``course dev``, benchmarks);
- :class:`grader.sandbox.isolation.Isolated`: the student's module in a process
  of its own, in the OS sandbox, its programs replayed here.

Lesson 13's clusters of student's processes are the backend's too
(:class:`Clusters`, handed to it by whoever makes it: the sandbox starts them);
a backend made without one cannot run that lesson, and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from grader.faults import GraderFault
from grader.runtime import Runtime
from grader.spec import LESSONS, Example, ExerciseSpec, load_spec


class Clusters(Protocol):
    """A lesson's clusters of student's processes (lesson 13): what a runtime's
    :meth:`~grader.runtime.Runtime.cluster` reaches. The sandbox's
    :class:`grader.sandbox.cluster.ClusterPool` is the one implementation."""

    def form(self, spec: ExerciseSpec, example: Example) -> None:
        """Start (or keep) the clusters ``spec`` declares for ``example``, before
        the example's own time starts."""

    def get(self, processes: int, local: int, ahead: tuple[tuple[int, int], ...] = ()) -> Any:
        """The cluster of ``processes`` processes with ``local`` devices each."""

    def close(self) -> None:
        """Grading of the lesson is over."""


ClustersFactory = Callable[[Path, str, str], Clusters]
"""``(directory, module, lessons) → Clusters`` for one lesson."""


class Backend:
    """Where the student's code runs while one lesson is graded (see the module
    docstring). Whoever starts the engine chooses (``grade_lesson``'s ``backend``)."""

    sandbox = "off: the student's code runs in the grading process"
    """``on`` where the student's code runs in the OS sandbox, else ``off: <why>``."""

    ahead = False
    """Whether the engine may prepare an exercise's next example in a thread while
    one runs: only where the student's code runs in a process of its own, which
    answers one question at a time."""

    def prepare(self) -> None:
        """Whatever must be ready before the student's module is imported and is
        not the student's time (a process started, jax imported there)."""

    def load(self) -> Any:
        """The student's module, or a stand-in holding its functions; raises
        :class:`~grader.faults.LoadError`."""
        raise NotImplementedError

    def runtime(
        self, exercise: str, example: Example, following: Example | None, simulated: bool = False
    ) -> Runtime:
        """The runtime for ``example`` of ``exercise``; ``following`` comes after it;
        ``simulated``: the lesson is graded on the simulated CPU devices
        (:attr:`grader.config.GradeConfig.simulated`)."""
        raise NotImplementedError

    def close(self) -> None:
        """Grading of the lesson is over."""


BackendFactory = Callable[[Path, str], Backend]
"""``(directory, module) → Backend`` for one lesson."""


class Here(Backend):
    """The student's module imported and run in this process (tests, ``course dev``),
    on data from ``salt``. ``clusters``: how lesson 13's clusters are made (real
    processes even here: :func:`grader.sandbox.backends.here` hands the sandbox's)."""

    def __init__(
        self, directory: Path, module: str, salt: int = 0, *,
        clusters: ClustersFactory | None = None, lessons: str = LESSONS,
        memory_limit: Callable[[Any], int | None] | None = None,
    ) -> None:  # fmt: skip
        self.directory, self.module, self.salt = Path(directory), module, salt
        self.memory_limit = memory_limit
        """What a handed-back program may need, by mesh (the sandbox's limit)."""
        self.lessons = lessons
        self._make_clusters = clusters
        self.clusters: Clusters | None = None
        """Made on first need."""
        self.loaded: Any = None

    def load(self) -> Any:
        from grader.loader import load_module

        self.loaded = load_module(self.directory, self.module)
        return self.loaded

    def runtime(
        self, exercise: str, example: Example, following: Example | None, simulated: bool = False
    ) -> Runtime:
        from grader.runtime import InProcess

        loaded = self.loaded
        rt = InProcess(example, self.salt, functions=lambda name: _callable(loaded, name))
        rt.memory_limit = self.memory_limit
        spec = load_spec(self.module, self.lessons).exercise(exercise)
        if spec.cluster is not None:
            if self._make_clusters is None:
                raise GraderFault(f"{exercise} runs on a cluster, and this backend has none")
            if self.clusters is None:
                self.clusters = self._make_clusters(self.directory, self.module, self.lessons)
            self.clusters.form(spec, example)
        rt.clusters = self.clusters
        return rt

    def close(self) -> None:
        if self.clusters is not None:
            self.clusters.close()


def _callable(module: Any, name: str) -> Callable[..., Any] | None:
    fn = getattr(module, name, None)
    return fn if callable(fn) else None
