"""Lesson 2, Collectives from first principles: its grading spec (``spec.py``) and what only it uses."""
