"""Lesson 10, Context parallelism: ring attention: its grading spec (``spec.py``) and what only it uses."""
