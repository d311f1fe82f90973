"""Lesson 14's grader side (hidden from the student's process: :mod:`grader.expected`).

``cost``     the reference cost model (lesson 3's ring model re-stated);
``suspects`` what each known mistake gives on an example, for the diagnoses;
``explain``  the report's pictures: memory bars, plans side by side, plans ranked.
"""
