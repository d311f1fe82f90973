"""Lesson 8, Tensor and sequence parallelism: its grading spec (``spec.py``) and what only it uses."""
