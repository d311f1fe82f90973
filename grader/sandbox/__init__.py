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

What both sides share sits below both: the wire codec (:mod:`grader.sandbox.wire`),
the loader (:mod:`grader.loader`), the events protocol
(:mod:`grader.sandbox.protocol`) and :mod:`grader.sandbox.lifeline`. The student's
process imports nothing of the worker, the runner or the isolation layer.
"""
