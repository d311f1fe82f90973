"""Lesson 12, The parallel transformer training step: its grading spec (``spec.py``) and what only it uses."""
