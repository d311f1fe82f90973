"""Lesson 14's grading spec lives in :mod:`grader.lessons.l14_planning.spec` (issue 17's layout)."""

from grader.lessons.l14_planning.spec import SPEC  # noqa: F401
