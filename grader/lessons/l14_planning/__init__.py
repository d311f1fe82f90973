"""Lesson 14, planning a training run at scale: its grading spec and what only it uses.

``records``  the Model, Hardware and Plan dataclasses the student's functions take
             (and the presets): the exercise imports them, so they cross between
             the grading process and the student's as themselves (``grader.sandbox.wire``);
``spec``     ``SPEC``: the student's side (draws, calls, arguments), which the
             student's process imports too.

The grader's side — the reference cost model, the known mistakes' values and the
report's pictures — is :mod:`grader.expected.l14_planning`, hidden from the
student's process; the spec reaches it through :func:`grader.later.expected`.
"""
