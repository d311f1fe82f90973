"""Lesson 11, Mixture of experts: its grading spec (``spec.py``) and what only it uses."""
