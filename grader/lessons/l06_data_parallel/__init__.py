"""Lesson 6, Data parallelism and gradient accumulation: its grading spec (``spec.py``) and what only it uses."""
