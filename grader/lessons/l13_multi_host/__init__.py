"""Lesson 13, many hosts: its grading spec and what only it uses.

``on_process``  the tasks every process of the grader's cluster runs
                (:mod:`grader.sandbox.cluster`) on the student's functions;
``spec``        ``SPEC``, and the checks that read what the processes answered
                and what the worker measured of the exported programs.
"""
