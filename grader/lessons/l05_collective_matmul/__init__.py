"""Lesson 5, Collective matmul: overlap communication with compute: its grading spec (``spec.py``) and what only it uses."""
