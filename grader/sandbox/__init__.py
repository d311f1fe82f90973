"""The process machinery: who runs the student's code, where, and how answers travel.

Three processes take part in a grade (see the README's teachers' section):

- ``course`` calls :mod:`grader.sandbox.runner`, which starts the grading worker,
  reads its signed events and keeps the deadlines;
- the worker (:mod:`grader.sandbox.worker`) runs :mod:`grader.engine` with the
  replaying runtime (:mod:`grader.sandbox.isolation`): it draws the examples,
  builds the real inputs, compiles and measures what it is handed, checks;
- the student's process (:mod:`grader.sandbox.student`) imports the student's
  module, traces on decoy data with the exporting runtime, and answers. On
  Linux it runs in an OS sandbox (:mod:`grader.sandbox.jail`): namespaces of
  its own, a read-only file system but for its scratch, rlimits.

Lesson 13 adds a fourth kind: a cluster of P student's processes joined by
``jax.distributed`` (:mod:`grader.sandbox.cluster`), all in one sandbox with
its loopback up, each answering the student's process's questions in cluster mode.

The sandbox sits above the core (:mod:`grader.engine` and everything it uses),
and runs it: :mod:`grader.sandbox.backends` makes the backends the engine is
handed. What both the worker and the student's process share sits below both:
the core's loader, faults and events (:mod:`grader.loader`, :mod:`grader.faults`,
:mod:`grader.events`), and here the wire codec (:mod:`grader.sandbox.wire`), the
events' codec (:mod:`grader.sandbox.protocol`), the one class every line-framed
conversation between these processes is framed with (:mod:`grader.sandbox.channel`)
and :mod:`grader.sandbox.lifeline`. Whatever is started ahead of need (the early
worker, processes that import jax early, helpers, the fork server, lesson 13's
clusters) lives in one module, :mod:`grader.sandbox.spares`, with what starts
each, who takes it and what ends it; it sits above the modules that make them,
and a lesson's backend is handed it through one interface,
:class:`grader.sandbox.spares.Ahead`. The work the worker does ahead of an
example's turn (the next example received and compiled while one runs) is the
sandbox's too (:mod:`grader.sandbox.prepared`, behind the backend's
:class:`~grader.backend.Examples`): the engine is single-threaded. No module of
the sandbox takes part in an import circle (``tests/test_sandbox_imports.py``).
The student's process imports nothing of the worker, the runner or the isolation layer.
"""
