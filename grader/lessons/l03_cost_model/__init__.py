"""Lesson 3, Communication versus computation: its grading spec (``spec.py``) and what only it uses."""
