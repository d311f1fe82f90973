"""Lesson 14, planning a training run at scale: its grading spec and what only it uses.

``records``  the Model, Hardware and Plan dataclasses the student's functions take
             (and the presets): the exercise imports them, so they cross between
             the grading process and the student's as themselves (``grader.sandbox.wire``);
``cost``     the reference cost model, written here (lesson 3's ring model re-stated);
``suspects`` what each known mistake gives on an example, for the diagnoses;
``explain``  the report's pictures: memory bars, plans side by side, plans ranked;
``spec``     ``SPEC``.
"""
