"""Lesson 16, Serving: sharded inference: its grading spec (``spec.py``) and what only it uses."""
