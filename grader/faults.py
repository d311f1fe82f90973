"""What can go wrong while a grade runs, by whose doing: the fault types.

Below the engine and the sandbox both: the engine turns each into a verdict
(:mod:`grader.engine`), and whichever backend runs the student's code raises
them (in this process, or the sandbox's, :mod:`grader.sandbox.isolation`).

- the grader's own failure: :class:`GraderFault` (reported as a grader bug), or a
  host's limit (:class:`HostLimit`: one sentence);
- the student's, however it shows: :class:`StudentReturnError` (a return of the
  wrong kind), :class:`LoadError` (the module will not import),
  :class:`ExampleTimeout` (past its time), :class:`HostCall` (a program that calls
  out of the devices), and, where the code runs in a process of its own,
  :class:`StudentProcessDied` and :class:`StudentFault` (that process, which runs
  the student's module, ended or said it failed; :class:`SpecFaultThere`: said that
  the grader's own code failed there);
- the engine's own bookkeeping: :class:`Abandoned`, :class:`NotStartedHere`.
"""

from __future__ import annotations


class GraderFault(Exception):
    """The grader's own code failed while running an example: reported as a
    grader bug, never as the student's error."""


HOST_LIMIT = "This host cannot grade this exercise: "
"""How every :class:`HostLimit` verdict begins (``course`` counts them apart from bugs)."""


class HostLimit(GraderFault):
    """This host cannot give what the grade needs (loopback networking for a
    cluster, say): said in one sentence, never as a bug to report, and never
    recorded as the student's attempt. ``str()`` begins with :data:`HOST_LIMIT`."""

    def __init__(self, why: str):
        super().__init__(HOST_LIMIT + why)


class StudentReturnError(Exception):
    """The student's function returned something of the wrong kind; the message says what."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class ExampleTimeout(Exception):
    """Raised inside the student's code (or its module's import) when it runs past its limit."""


class LoadError(Exception):
    """The module could not be imported; ``str()`` is the student-facing message."""


class HostCall(Exception):
    """A handed-back program that calls out of the devices."""


class NotGradable(HostCall):
    """A handed-back program the worker cannot read, lower, compile or run on this
    platform (a dtype the course does not grade, another platform, an operation XLA
    refuses here): the student's program, so the student's error (a failed check
    that says why, as for a host call), never a grader fault."""


class StudentProcessDied(Exception):
    """The student's process ended while it was working on a question."""


class NotStartedHere(StudentProcessDied):
    """An example prepared in a thread found the student's process not running:
    the engine runs that example again in its own thread, which may start it."""


class StudentFault(Exception):
    """The student's process says it could not do what it was asked (a failure it
    reports as its own side's, or a spec that failed there before the student's code
    ran). That process runs the student's module, which can make it say anything:
    the engine reports this as the student's error, never as the grader's (a
    grader fault is an exception raised in the grading process itself)."""


class SpecFaultThere(StudentFault):
    """The student's process says the grader's own code raised a :class:`GraderFault`
    there (a spec's ``run`` that reached what is hidden from that process, say). Still
    the student's error (that process also runs the student's module, which can raise
    anything), but said as what it reports: the grader's code failed there, and the
    student is told when it is the grader's bug to report."""


class Abandoned(Exception):
    """An example prepared ahead is not wanted (the one before it failed)."""
