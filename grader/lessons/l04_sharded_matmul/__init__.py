"""Lesson 4, The four cases of a sharded matmul: its grading spec (``spec.py``) and what only it uses."""
