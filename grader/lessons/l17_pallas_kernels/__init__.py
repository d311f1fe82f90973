"""Lesson 17, Kernels in Pallas: DMAs, semaphores and the grid: its grading spec (``spec.py``) and what only it uses."""
