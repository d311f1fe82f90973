"""Lesson 9's grader side (hidden from the student's process: :mod:`grader.expected`).

``schedules``  the simulator that reads and judges a schedule, and the reference
               GPipe, 1F1B and zero-bubble schedules (answers to three exercises).
"""
