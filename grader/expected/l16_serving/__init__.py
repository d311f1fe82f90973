"""Lesson 16's grader side: the serving cost model, its known mistakes, speculative
sampling's reference (hidden from the student's process: :mod:`grader.expected`)."""
