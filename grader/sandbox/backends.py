"""The backends the sandbox hands the engine, and grading with them.

The engine (:mod:`grader.engine`) is handed its backend; this module makes
them, with what only the sandbox has: the student's process
(:class:`grader.sandbox.isolation.Isolated`) and lesson 13's clusters
(:class:`grader.sandbox.cluster.ClusterPool`) for the in-process backend too.
:func:`grade_lesson` is the engine's, with the backend chosen here: what the
tests, benchmarks and ``course dev`` call.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from grader import engine
from grader.backend import BackendFactory, Clusters, Here
from grader.results import LessonResult
from grader.spec import LESSONS


def clusters(directory: Path, module: str, lessons: str = LESSONS) -> Clusters:
    """Lesson 13's clusters for a lesson graded in this process."""
    from grader.sandbox.spares import Ahead

    return Ahead().clusters(str(directory), module)


def here(salt: int = 0, lessons: str = LESSONS) -> BackendFactory:
    """Backends that run the student's code in this process, on data from
    ``salt`` (0: the seed's own data), with clusters of real processes."""
    from grader.sandbox.isolation import replay_limit

    return lambda directory, module: Here(
        directory, module, salt, clusters=clusters, lessons=lessons, memory_limit=replay_limit
    )


def isolated(salt: int | None = None, lessons: str = LESSONS, **options: Any) -> BackendFactory:
    """Backends that run the student's code in a process of its own, with the
    data drawn from ``salt`` (a fresh secret one when None). ``options``: the
    :class:`~grader.sandbox.isolation.Isolated` backend's (``spares``, ``programs``)."""
    from grader.sandbox.isolation import Isolated

    salt = secrets.randbits(62) | 1 if salt is None else salt
    return lambda directory, module: Isolated(
        directory, module, salt=salt, lessons=lessons, **options
    )


def grade_lesson(
    lesson: int, module: str, directory: Path, *, isolate: bool = False,
    backend: BackendFactory | None = None, lessons: str = LESSONS, **options: Any,
) -> LessonResult:  # fmt: skip
    """:func:`grader.engine.grade_lesson` with a backend of the sandbox's: ``backend``
    if given, else with ``isolate`` the student's process on a fresh secret salt, else
    this process (with lesson 13's clusters)."""
    chosen = backend or (isolated(lessons=lessons) if isolate else here(lessons=lessons))
    return engine.grade_lesson(
        lesson, module, directory, backend=chosen, lessons=lessons, **options
    )
