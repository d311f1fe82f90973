"""The student's app: CLI, lesson registry, progress and lesson texts.

Nothing in this package imports jax except through the grading worker, so
``course status``, ``list`` and ``hint`` start instantly.
"""
