"""Lesson 9, Pipeline parallelism: schedules and execution: its grading spec (``spec.py``) and what only it uses."""
