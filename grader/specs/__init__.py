"""One grading spec per lesson: ``lNN_slug.py`` defines ``SPEC``."""
