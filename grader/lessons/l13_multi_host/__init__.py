"""Lesson 13, many hosts: its grading spec and what only it uses.

``on_process``  the tasks every process of the grader's cluster runs
                (the backend's cluster; the spec declares each exercise's) on the
                student's functions;
``spec``        ``SPEC``, and the checks that read what the processes answered
                and what the worker measured of the exported programs.
"""
