"""Where the student's code runs while one lesson is graded: the backend interface.

The engine (:mod:`grader.engine`) is handed a :data:`BackendFactory` by
whoever starts it and never chooses one itself. It asks the backend for the
student's module once (:meth:`Backend.load`), then, per exercise, for its
:class:`Examples`: each example's :class:`~grader.runtime.Runtime`, and its run.
The engine is single-threaded: it hands the backend the exercise's examples in
order, and whatever is done ahead of an example's turn (the sandbox prepares
the next example while one runs) is the backend's. Two kinds exist:

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
    """Whether its :meth:`examples` prepares an exercise's next example while one
    runs (the sandbox's, where the student's code runs in a process of its own)."""

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

    def examples(
        self, spec: ExerciseSpec, examples: list[Example], fn: Callable[[], Callable[..., Any]],
        runtime: RuntimeFor,
    ) -> Examples:  # fmt: skip
        """How ``spec``'s ``examples`` run, in order (:class:`Examples`): here one
        after another, nothing prepared ahead (nor the next exercise's first)."""
        return Examples(spec, examples, fn, runtime)

    def close(self) -> None:
        """Grading of the lesson is over."""


RuntimeFor = Callable[[Example, Example | None], Runtime]
"""``(example, the one after it) → its runtime``: the engine's, with the lesson's
compiler options and devices set."""


class Examples:
    """An exercise's examples as a backend runs them, in order. For each, the
    engine calls :meth:`start` (its runtime made: the machine's time, bounded by
    the engine's restart limit), then :meth:`run` (the example's own time), then
    checks the trial; :meth:`close` once the exercise is over. This one runs each
    example in its turn; a backend may hand one that prepares the next example
    while one runs (the sandbox's), with the same runs, questions, verdicts and
    events. ``fn()``: the student's function for one example (the engine counts
    its calls); ``runtime``: each example's runtime."""

    def __init__(
        self, spec: ExerciseSpec, examples: list[Example], fn: Callable[[], Callable[..., Any]],
        runtime: RuntimeFor, ended: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        self.spec, self.examples, self.fn, self.runtime = spec, examples, fn, runtime
        self.ended = ended
        """Called once the exercise is over (the backend's: what it asked ahead for
        the exercise and did not take is moot then)."""
        self.now: tuple[Runtime, Callable[..., Any]] | None = None
        """The started example's runtime and function."""

    def followed_by(self, nxt: Examples) -> None:
        """``nxt``: the next exercise's examples, graded after this exercise whatever
        its verdict (the engine says so before this one's first example starts). A
        backend may prepare ``nxt``'s first example while this one's last runs; this
        one prepares nothing."""

    def following(self, index: int) -> Example | None:
        """The example after example ``index`` (None after the last)."""
        return self.examples[index + 1] if index + 1 < len(self.examples) else None

    def start(self, index: int) -> Callable[..., Any]:
        """Make example ``index``'s runtime; the function (from ``fn()``) its run calls."""
        called = self.fn()
        self.now = (self.runtime(self.examples[index], self.following(index)), called)
        return called

    def run(self, index: int) -> Any:
        """Example ``index``'s trial: the spec's ``run`` on the runtime :meth:`start` made."""
        assert self.now is not None
        rt, called = self.now
        return self.spec.run(rt, called, self.examples[index])

    def close(self) -> None:
        """The exercise is over (passed, failed or stopped): nothing more of it runs."""
        if self.ended is not None:
            self.ended()


ExamplesFor = Callable[
    [ExerciseSpec, list[Example], Callable[[], Callable[..., Any]], RuntimeFor], Examples
]
"""``(spec, examples, fn, runtime) → Examples``: a backend's :meth:`Backend.examples`."""


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
