"""The grading engine: examples, checks, results and reports.

Importing this package is cheap: nothing here imports jax until a lesson is
actually graded (``grader.measure.devices.configure`` must run first).
"""
