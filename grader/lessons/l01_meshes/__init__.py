"""Lesson 1, Devices, meshes and sharded arrays: its grading spec (``spec.py``) and what only it uses."""
