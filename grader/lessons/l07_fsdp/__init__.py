"""Lesson 7, Fully sharded data parallel (ZeRO-3): its grading spec (``spec.py``) and what only it uses."""
