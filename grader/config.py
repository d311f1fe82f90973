"""What a grade depends on besides its request's words, in one frozen object.

Whoever starts the engine (the worker, from its request; a test or ``course dev``,
by default) builds a :class:`GradeConfig` and hands it down: the engine, the
runtimes and the draws read it, and no module keeps any of it in a global.
Environment variables are read at the command line's edge only (``course``'s
commands, the notebook's calls, the worker's and the student's process's
``main``), and what crosses a process boundary travels in the request or the
question, or in the environment a parent builds for its child before it imports
jax (``XLA_FLAGS``: :func:`grader.measure.devices.configure`). The sandbox's
switch and memory too: a :class:`Sandbox` read at the edge (the worker's ``main``,
into :attr:`grader.sandbox.worker.Options.sandbox`; ``course``'s commands, for what
they report before a worker exists) and handed to whatever makes a sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # grader.spec is not imported by course's quick commands (App.sandbox's Sandbox)
    from grader.spec import Draws


@dataclass(frozen=True)
class Sandbox:
    """The OS sandbox's settings (:mod:`grader.sandbox.jail`), as given: read at
    the edge (:meth:`from_environment`) and handed down to each place that makes
    one (:func:`grader.sandbox.jail.state`, :func:`grader.sandbox.jail.wrap`)."""

    switch: str = ""
    """``COURSE_SANDBOX``: ``off`` (or ``0``, ``no``, ``false``) runs the student's
    process without a sandbox; "": one where it can be made."""
    memory: str = ""
    """``COURSE_SANDBOX_MEMORY`` (``2G``, ``512M``): what the student's process may
    allocate; "": the default (:data:`grader.sandbox.jail.MEMORY`)."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Sandbox:
        """The settings ``environ`` (the caller's environment, at its edge) gives."""
        return cls(environ.get("COURSE_SANDBOX", ""), environ.get("COURSE_SANDBOX_MEMORY", ""))


def _no_draws() -> Draws:
    """A grade's draws where none are kept (imported here, when a grade is configured)."""
    from grader.spec import Draws

    return Draws()


@dataclass(frozen=True)
class GradeConfig:
    """One grade's configuration (see the module docstring)."""

    draws: Draws = field(default_factory=_no_draws)
    """Where drawn examples are kept (a serving worker shares one between grades)."""
    simulated: bool = False
    """Meshes are built from the simulated CPU devices, the accelerators ignored:
    set by the worker for every lesson when asked (``--cpu``, ``COURSE_PLATFORM=cpu``:
    :meth:`grader.sandbox.worker.Warm.configure`), by the engine for a lesson whose
    examples need more accelerators than the host has
    (:func:`grader.engine.grade_lesson`), and sent to the student's process with
    each question."""
